"""Explicit Spark schemas for the event envelope, the fields of spec/EVENTS.md and
`final_state.json`.

The event schema is the union of every field the catalogue names (spec/EVENTS.md plus
the additions in `hdfs_contract.catalogue`), each with the type the contract gives it. A field
the schema does not know is not lost: the loader keeps the whole line in `raw`, and
`extra_fields()` turns it into a map. A field whose JSON type disagrees with the schema
becomes null and marks the line malformed (the rest of the line is still used).
Fields whose type varies between events (`replicas`, `params`, `result`) are strings:
Spark's JSON reader keeps any JSON value as its text.
"""

from __future__ import annotations

from pyspark.sql import types as T

CORRUPT = "_corrupt"

ENVELOPE = [
    ("ts", T.DoubleType()),
    ("node", T.StringType()),
    ("role", T.StringType()),
    ("seq", T.LongType()),
    ("event", T.StringType()),
]

ANSWER = T.StructType([
    T.StructField("dn", T.StringType()),
    T.StructField("state", T.StringType()),
    T.StructField("len", T.LongType()),
    T.StructField("gs", T.LongType()),
])

# name -> type, for every field an event of the catalogue carries.
FIELDS = [
    # common fields (spec/EVENTS.md)
    ("path", T.StringType()), ("block", T.LongType()), ("gs", T.LongType()),
    ("len", T.LongType()), ("state", T.StringType()), ("holder", T.StringType()),
    ("recovery_id", T.LongType()), ("pipeline", T.ArrayType(T.StringType())),
    ("offset", T.LongType()), ("error", T.StringType()), ("reason", T.StringType()),
    # NameNode
    ("ok", T.BooleanType()), ("old_gs", T.LongType()), ("old_holder", T.StringType()),
    ("limit", T.StringType()), ("requester", T.StringType()), ("force", T.BooleanType()),
    ("result", T.StringType()), ("primary", T.StringType()), ("close", T.BooleanType()),
    ("op", T.StringType()), ("dn", T.StringType()), ("source", T.StringType()),
    ("target", T.StringType()), ("dst", T.StringType()), ("delete", T.BooleanType()),
    ("block_size", T.LongType()), ("rack", T.StringType()),
    ("excluded", T.ArrayType(T.StringType())),
    # DataNode
    ("replicas", T.StringType()), ("stage", T.StringType()), ("upstream", T.StringType()),
    ("downstream", T.StringType()), ("status", T.StringType()), ("peer", T.StringType()),
    ("answers", T.ArrayType(ANSWER)), ("rule", T.StringType()), ("new_len", T.LongType()),
    ("count", T.LongType()), ("restart", T.BooleanType()), ("full", T.BooleanType()), ("nn", T.StringType()),
    ("first_bad_link", T.StringType()),
    # client
    ("mode", T.StringType()), ("crc", T.LongType()), ("error_index", T.LongType()),
    ("bad_node", T.StringType()), ("restarting", T.StringType()),
    ("acked", T.LongType()), ("policy", T.StringType()),
    ("replication", T.LongType()), ("remaining", T.LongType()),
    ("hflushed", T.BooleanType()), ("decision", T.StringType()),
    ("new_node", T.StringType()), ("seqno", T.LongType()), ("op_id", T.StringType()),
    ("client", T.StringType()),
    # client.pipeline.replace of the Hadoop agent: P2 reads them (Hadoop adds no node to
    # a new block with nothing written)
    ("append", T.BooleanType()), ("last_acked_seqno", T.LongType()),
    # client, added by hdfs-chaos (docs/events.md, "Event fields")
    ("stream", T.LongType()), ("stream_crc", T.LongType()), ("content", T.StringType()),
    # harness
    ("scenario", T.StringType()), ("seed", T.LongType()), ("fault", T.StringType()),
    ("kind", T.StringType()), ("params", T.StringType()), ("waited", T.DoubleType()),
    ("event_ts", T.DoubleType()), ("lag", T.DoubleType()), ("reached", T.BooleanType()),
]

KNOWN_FIELDS = frozenset(name for name, _ in ENVELOPE + FIELDS)

# The high-volume events (one each per packet a client writes) and the fields they
# carry. Every line is first parsed with the narrow schema (the envelope and these
# fields), which costs a third of the full one; only the other lines are parsed in full.
BULK_EVENTS = ("client.write", "client.ack")
NARROW_FIELDS = ("path", "block", "offset", "len", "crc", "seqno", "acked", "stream",
                 "stream_crc")
NARROW_SCHEMA = T.StructType(
    [T.StructField(n, t) for n, t in ENVELOPE]
    + [T.StructField(n, t) for n, t in FIELDS if n in NARROW_FIELDS]
    + [T.StructField(CORRUPT, T.StringType())])

EVENT_SCHEMA = T.StructType(
    [T.StructField(n, t) for n, t in ENVELOPE + FIELDS]
    + [T.StructField(CORRUPT, T.StringType())])

FINAL_STATE_SCHEMA = T.StructType([
    T.StructField("files", T.ArrayType(T.StructType([
        T.StructField("path", T.StringType()),
        T.StructField("closed", T.BooleanType()),
        T.StructField("len", T.LongType()),
        T.StructField("replication", T.LongType()),
        T.StructField("blocks", T.ArrayType(T.StructType([
            T.StructField("block", T.LongType()),
            T.StructField("gs", T.LongType()),
            T.StructField("len", T.LongType()),
            T.StructField("state", T.StringType()),
            T.StructField("locations", T.ArrayType(T.StringType())),
        ]))),
    ]))),
    T.StructField("leases", T.ArrayType(T.StructType([
        T.StructField("holder", T.StringType()),
        T.StructField("paths", T.ArrayType(T.StringType())),
    ]))),
    T.StructField("datanodes", T.MapType(T.StringType(), T.ArrayType(T.StructType([
        T.StructField("block", T.LongType()),
        T.StructField("gs", T.LongType()),
        T.StructField("len", T.LongType()),
        T.StructField("state", T.StringType()),
        T.StructField("crc", T.LongType()),
    ])))),
    T.StructField("readback", T.MapType(T.StringType(), T.StructType([
        T.StructField("len", T.LongType()),
        T.StructField("crc", T.LongType()),
        T.StructField("error", T.StringType()),
    ]))),
    # each DataNode's space (Hadoop: its JMX; null for one that did not answer)
    T.StructField("datanode_space", T.MapType(T.StringType(), T.StructType([
        T.StructField("reserved_for_replicas", T.LongType()),
        T.StructField("free", T.LongType()),
        T.StructField("used", T.LongType()),
        T.StructField("reserved", T.LongType()),
    ]))),
    T.StructField(CORRUPT, T.StringType()),
])
