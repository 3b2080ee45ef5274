package hdfschaos;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The verifier's loader in one pass (harness/reconcile/load.py, through jvm.fold): reads
 * each log line once, parses it with BulkLine, and
 *
 * <ul>
 * <li>gives every line that is not dense back as it is (kind RARE: run_id, log, eid,
 *     raw), for the loader to parse in full with Spark's JSON reader;</li>
 * <li>folds each dense line (a plain client.write or client.ack) into the three
 *     summaries that are all the checks read of them, and gives those at the end of the
 *     partition: STATS per run_id, node, role, event (events, first_ts, last_ts,
 *     len_sum: load.RunSet.bulk_stats), ACKS per run_id, node, path, block of the acks
 *     (first_ts, last_ts, max_acked: checks/pipeline.bulk_ack_blocks) and WRITES per
 *     run_id, path of the writes (ranges: each write's ts, eid, offset, len, crc, as
 *     checks/data.bulk_write_ranges lists them).</li>
 * </ul>
 *
 * The loader merges the partitions' summaries with Spark (a key's lines may fall in two
 * partitions when a file is split). So the ten million dense lines of a large run are
 * never kept as rows or columns: with their columnar cache built and aggregated again,
 * the verification of 10 million events took 147 CPU-s; folded, 116
 * (benchmarks/bench_verifier.py, same hour).
 *
 * eid is what monotonically_increasing_id gives the same line in the same read (partition
 * index << 33, plus the line's index in its partition), so that the dense lines read
 * again one by one (load.RunSet.bulk, for the rare block whose acks span two streams, and
 * for tests) have the eids that the summaries hold. Aggregates follow Spark SQL: a null
 * key is a key, a null value is skipped (a sum or max of none is null), min and max keep
 * the first of equal values; a len_sum beyond a long is null.
 *
 * Input columns: run_id, log, value. Output: SCHEMA (load.py names the same fields).
 */
public final class DenseFold implements MapPartitionsFunction<Row, Row> {
    private static final long serialVersionUID = 1L;

    public static final int RARE = 0, STATS = 1, ACKS = 2, WRITES = 3;
    // BulkLine's field order
    private static final int TS = 0, NODE = 1, ROLE = 2, EVENT = 4, PATH = 5, BLOCK = 6,
        OFFSET = 7, LEN = 8, CRC = 9, ACKED = 11;

    public static final StructType RANGE = new StructType()
        .add("ts", DataTypes.DoubleType).add("eid", DataTypes.LongType)
        .add("offset", DataTypes.LongType).add("len", DataTypes.LongType)
        .add("crc", DataTypes.LongType);

    public static final StructType SCHEMA = new StructType()
        .add("kind", DataTypes.IntegerType, false)
        .add("run_id", DataTypes.StringType).add("log", DataTypes.StringType)
        .add("eid", DataTypes.LongType).add("raw", DataTypes.StringType)
        .add("node", DataTypes.StringType).add("role", DataTypes.StringType)
        .add("event", DataTypes.StringType).add("path", DataTypes.StringType)
        .add("block", DataTypes.LongType).add("events", DataTypes.LongType)
        .add("first_ts", DataTypes.DoubleType).add("last_ts", DataTypes.DoubleType)
        .add("len_sum", DataTypes.LongType).add("max_acked", DataTypes.LongType)
        .add("ranges", DataTypes.createArrayType(RANGE));

    /** `text` (run_id, log, value) folded: one row per rare line and per summary. */
    public static Dataset<Row> fold(Dataset<Row> text) {
        return text.mapPartitions(new DenseFold(), Encoders.row(SCHEMA));
    }

    private record StatsKey(String run, String node, String role, String event) { }

    private record AckKey(String run, String node, String path, Long block) { }

    private record FileKey(String run, String path) { }

    /** The least and greatest ts of a key's lines (the first of equal values kept). */
    private static class Span {
        long events;
        double first;
        double last;

        final void see(double ts) {
            if (events++ == 0) {
                first = ts;
                last = ts;
            } else {
                first = ts < first ? ts : first;
                last = ts > last ? ts : last;
            }
        }
    }

    private static final class Stats extends Span {
        long lenSum;
        boolean hasLen;
        boolean overflow;
    }

    private static final class Acks extends Span {
        long maxAcked;
        boolean hasAcked;
    }

    @Override
    public Iterator<Row> call(Iterator<Row> input) {
        return new Folder(input, (long) TaskContext.getPartitionId() << 33);
    }

    private static final class Folder implements Iterator<Row> {
        private final Iterator<Row> input;
        private final long base;
        private long index;
        private final Object[] v = new Object[BulkLine.FIELDS];
        private final Map<StatsKey, Stats> stats = new HashMap<>();
        private final Map<AckKey, Acks> acks = new HashMap<>();
        private final Map<FileKey, List<Row>> writes = new HashMap<>();
        private Iterator<Row> summaries;
        private Row next;

        Folder(Iterator<Row> input, long base) {
            this.input = input;
            this.base = base;
        }

        @Override
        public boolean hasNext() {
            if (next == null) {
                next = advance();
            }
            return next != null;
        }

        @Override
        public Row next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            Row r = next;
            next = null;
            return r;
        }

        private Row advance() {
            while (summaries == null && input.hasNext()) {
                Row line = input.next();
                long eid = base + index++;
                String run = line.getString(0);
                String value = line.getString(2);
                Arrays.fill(v, null);
                if (!BulkLine.parse(value, v)) {
                    return RowFactory.create(RARE, run, line.getString(1), eid, value, null,
                                             null, null, null, null, null, null, null, null,
                                             null, null);
                }
                fold(run, eid);
            }
            if (summaries == null) {
                summaries = summaries();
            }
            return summaries.hasNext() ? summaries.next() : null;
        }

        private void fold(String run, long eid) {
            double ts = (Double) v[TS];
            String event = (String) v[EVENT];
            Stats s = stats.computeIfAbsent(
                new StatsKey(run, (String) v[NODE], (String) v[ROLE], event), k -> new Stats());
            s.see(ts);
            Long len = (Long) v[LEN];
            if (len != null && !s.overflow) {
                if (s.hasLen) {
                    long sum = s.lenSum + len;
                    if (((s.lenSum ^ sum) & (len ^ sum)) < 0) {
                        s.overflow = true;
                    }
                    s.lenSum = sum;
                } else {
                    s.lenSum = len;
                    s.hasLen = true;
                }
            }
            if ("client.ack".equals(event)) {
                Acks a = acks.computeIfAbsent(
                    new AckKey(run, (String) v[NODE], (String) v[PATH], (Long) v[BLOCK]),
                    k -> new Acks());
                a.see(ts);
                Long acked = (Long) v[ACKED];
                if (acked != null && (!a.hasAcked || acked > a.maxAcked)) {
                    a.maxAcked = acked;
                    a.hasAcked = true;
                }
            } else {
                writes.computeIfAbsent(new FileKey(run, (String) v[PATH]), k -> new ArrayList<>())
                    .add(RowFactory.create(ts, eid, v[OFFSET], len, v[CRC]));
            }
        }

        private Iterator<Row> summaries() {
            List<Row> out = new ArrayList<>(stats.size() + acks.size() + writes.size());
            for (Map.Entry<StatsKey, Stats> e : stats.entrySet()) {
                StatsKey k = e.getKey();
                Stats s = e.getValue();
                Long lenSum = s.hasLen && !s.overflow ? s.lenSum : null;
                out.add(RowFactory.create(STATS, k.run(), null, null, null, k.node(), k.role(),
                                          k.event(), null, null, s.events, s.first, s.last,
                                          lenSum, null, null));
            }
            for (Map.Entry<AckKey, Acks> e : acks.entrySet()) {
                AckKey k = e.getKey();
                Acks a = e.getValue();
                out.add(RowFactory.create(ACKS, k.run(), null, null, null, k.node(), null,
                                          null, k.path(), k.block(), null, a.first, a.last,
                                          null, a.hasAcked ? a.maxAcked : null, null));
            }
            for (Map.Entry<FileKey, List<Row>> e : writes.entrySet()) {
                FileKey k = e.getKey();
                out.add(RowFactory.create(WRITES, k.run(), null, null, null, null, null, null,
                                          k.path(), null, null, null, null, null, null,
                                          e.getValue().toArray()));
            }
            stats.clear();
            acks.clear();
            writes.clear();
            return out.iterator();
        }
    }
}
