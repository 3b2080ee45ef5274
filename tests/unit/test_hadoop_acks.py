"""client.ack from the DFSClient's DataStreamer DEBUG lines (real Hadoop 3.4.2 lines of a
dn-crash-middle-in-pipeline run): the packet's end in the block from `sending packet`,
its ack once every node replied SUCCESS; a heartbeat or an ERROR reply is no ack."""

from harness.systems.hadoop.logmap import map_lines

T_SEND = ("2026-11-24 04:13:38,014 DEBUG [DataStreamer for file /data/f1 block "
          "BP-2032413756-127.0.0.1-1795493603168:blk_1073741825_1001] DataStreamer/DataStreamer: "
          "blk_1073741825_1001 sending packet seqno: {n} offsetInBlock: {o} lastPacketInBlock: "
          "false lastByteOffsetInBlock: {e}")
T_ACK = ("2026-11-24 04:13:38,182 DEBUG [ResponseProcessor for block "
         "BP-2032413756-127.0.0.1-1795493603168:blk_1073741825_1001] "
         "DataStreamer/DataStreamer$ResponseProcessor: DFSClient seqno: {n} reply: SUCCESS "
         "reply: {r} reply: SUCCESS downstreamAckTimeNanos: 5354158 flag: 0 flag: 0 flag: 0")


def test_acks_from_debug_lines():
    lines = [T_SEND.format(n=0, o=0, e=64512), T_SEND.format(n=1, o=64512, e=129024),
             T_ACK.format(n=0, r="SUCCESS"), T_ACK.format(n=-1, r="SUCCESS"),
             T_ACK.format(n=1, r="ERROR")]
    acks = [e for e in map_lines(lines, "client") if e["event"] == "client.ack"]
    assert [(e["path"], e["block"], e["seqno"], e["acked"]) for e in acks] == \
        [("/data/f1", 1073741825, 0, 64512)]
