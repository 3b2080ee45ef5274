package hdfschaos;

import java.util.Arrays;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

import scala.collection.Seq;

/**
 * The D2 layout of one file (harness/reconcile/checks/data.py, content_layout): given
 * every range written to it (client.write; a create or truncate is a range of length 0
 * at its offset) and the length read back, which bytes the writers' ranges say the file
 * holds. It computes in one pass over the file's ranges what the DataFrame form computes
 * with two window sorts over every write of every file:
 *
 * <ul>
 * <li>In time order (ts, then eid), a range starting at offset o discards everything
 *     earlier at or beyond o; each range is cut at the least offset of the later ranges
 *     and at the length read back (eff_end); a range left empty is dropped.</li>
 * <li>The kept ranges, in offset order, give gap_at (the least end of a kept range that
 *     the next one does not start at; 0 when the first does not start at 0), covered (the
 *     greatest eff_end), partial (1 when a range was cut mid-way) and the ranges' lengths
 *     and CRCs in file order, for the CRC combination.</li>
 * </ul>
 *
 * Nulls behave as in Spark SQL: a range with no offset is dropped, one with no length
 * keeps a null "partial", and a file with no range kept gives a null result (the left
 * join of the DataFrame form). ts and eid are never null: the loader keeps only events
 * with the envelope, and gives each its eid. Input: array of struct(ts double, eid long,
 * offset long, len long, crc long) and the length read back; result field order:
 * gap_at, covered, partial, crc (jvm/__init__.py builds the matching type), where crc is the
 * CRC-32 of the kept ranges laid end to end in file order, combined from their CRCs here
 * (Crc32Combine) so that no list of them leaves the JVM; null when one of them lacks a
 * length or CRC.
 */
public final class FileLayout implements UDF2<Seq<Row>, Long, Row> {
    private static final long serialVersionUID = 1L;
    private static final long BIG = 1L << 62;

    @Override
    public Row call(Seq<Row> ranges, Long readLen) {
        if (ranges == null) {
            return null;
        }
        int n = ranges.length();
        double[] ts = new double[n];
        long[] eid = new long[n];
        Long[] offset = new Long[n];
        Long[] len = new Long[n];
        Long[] crc = new Long[n];
        Integer[] byTime = new Integer[n];
        for (int i = 0; i < n; i++) {
            Row r = ranges.apply(i);
            ts[i] = r.getDouble(0);
            eid[i] = r.getLong(1);
            offset[i] = r.isNullAt(2) ? null : r.getLong(2);
            len[i] = r.isNullAt(3) ? null : r.getLong(3);
            crc[i] = r.isNullAt(4) ? null : r.getLong(4);
            byTime[i] = i;
        }
        // latest first: ts, then eid, both descending (Spark's order: -0.0 equals 0.0,
        // NaN is greater than any number)
        Arrays.sort(byTime, (a, b) -> {
            int c = compareDoubles(ts[b], ts[a]);
            return c != 0 ? c : Long.compare(eid[b], eid[a]);
        });
        long[] effEnd = new long[n];
        Boolean[] partial = new Boolean[n];
        boolean[] kept = new boolean[n];
        Long laterMin = null;
        int nKept = 0;
        for (int k = 0; k < n; k++) {
            int i = byTime[k];
            Long end = (offset[i] == null || len[i] == null) ? null : offset[i] + len[i];
            // least() of Spark SQL: the least non-null value
            long e = laterMin == null ? BIG : laterMin;
            if (end != null && end < e) {
                e = end;
            }
            if (readLen != null && readLen < e) {
                e = readLen;
            }
            if (offset[i] != null && e > offset[i]) {
                kept[i] = true;
                effEnd[i] = e;
                partial[i] = end == null ? null : e < end;
                nKept++;
            }
            if (offset[i] != null && (laterMin == null || offset[i] < laterMin)) {
                laterMin = offset[i];
            }
        }
        if (nKept == 0) {
            return null;
        }
        Integer[] byOffset = new Integer[nKept];
        for (int i = 0, j = 0; i < n; i++) {
            if (kept[i]) {
                byOffset[j++] = i;
            }
        }
        Arrays.sort(byOffset, (a, b) -> {
            int c = Long.compare(offset[a], offset[b]);
            if (c == 0) {
                c = compareDoubles(ts[a], ts[b]);
            }
            return c != 0 ? c : Long.compare(eid[a], eid[b]);
        });
        Long gapAt = null;
        long covered = Long.MIN_VALUE;
        Integer part = null;
        long prevEnd = 0;
        // the kept ranges' CRCs combined in file order; null once a length or CRC is missing
        Long fileCrc = 0L;
        Crc32Combine shift = null;
        for (int i : byOffset) {
            if (offset[i] != prevEnd && (gapAt == null || prevEnd < gapAt)) {
                gapAt = prevEnd;
            }
            covered = Math.max(covered, effEnd[i]);
            if (partial[i] != null) {
                int p = partial[i] ? 1 : 0;
                part = part == null ? p : Math.max(part, p);
            }
            if (fileCrc != null) {
                if (len[i] == null || crc[i] == null) {
                    fileCrc = null;
                } else if (len[i] > 0) {     // an empty range adds nothing
                    if (shift == null || shift.length != len[i]) {
                        shift = Crc32Combine.forLength(len[i]);
                    }
                    fileCrc = shift.append(fileCrc, crc[i]);
                }
            }
            prevEnd = effEnd[i];
        }
        return RowFactory.create(gapAt, covered, part, fileCrc);
    }

    private static int compareDoubles(double x, double y) {
        return x == y ? 0 : Double.compare(x, y);
    }

    /**
     * CRC-32 of A followed by B from crc(A), crc(B) and the length of B, for one length of
     * B (zlib's crc32_combine, as harness/reconcile/crc.py): crc(A) times x^(8 len(B)) mod
     * P, xor crc(B), over GF(2) in zlib's reflected bit order. The product by a fixed
     * x^(8n) is linear, so it is four look-ups in tables of the images of each byte.
     */
    static final class Crc32Combine {
        private static final int POLY = 0xEDB88320;
        private static final int[] X2N = new int[64];
        private static final java.util.concurrent.ConcurrentHashMap<Long, Crc32Combine> CACHE =
                new java.util.concurrent.ConcurrentHashMap<>();

        static {
            int p = 1 << 30;    // x^1
            X2N[0] = p;
            for (int n = 1; n < 64; n++) {
                p = multModP(p, p);
                X2N[n] = p;
            }
        }

        final long length;
        private final int[] table = new int[4 * 256];

        private Crc32Combine(long length) {
            this.length = length;
            int op = x8nModP(length);
            int[] images = new int[32];
            for (int i = 0; i < 32; i++) {
                images[i] = multModP(op, 1 << i);
            }
            for (int k = 0; k < 4; k++) {
                for (int b = 0; b < 256; b++) {
                    int v = 0;
                    for (int i = 0; i < 8; i++) {
                        if (((b >>> i) & 1) != 0) {
                            v ^= images[8 * k + i];
                        }
                    }
                    table[k * 256 + b] = v;
                }
            }
        }

        /** The tables for `length` (a writer uses few lengths: they are kept). */
        static Crc32Combine forLength(long length) {
            Crc32Combine c = CACHE.get(length);
            if (c == null) {
                if (CACHE.size() > 4096) {
                    CACHE.clear();
                }
                c = new Crc32Combine(length);
                CACHE.put(length, c);
            }
            return c;
        }

        /** crc(A + B) from crcA and crcB, B being `length` bytes long. */
        long append(long crcA, long crcB) {
            int c = (int) crcA;
            int shifted = table[c & 0xFF] ^ table[256 + ((c >>> 8) & 0xFF)]
                    ^ table[512 + ((c >>> 16) & 0xFF)] ^ table[768 + (c >>> 24)];
            return (shifted ^ (int) crcB) & 0xFFFFFFFFL;
        }

        /** a(x) b(x) mod P(x), reflected: bit 31 is x^0. */
        static int multModP(int a, int b) {
            int m = 1 << 31;
            int p = 0;
            while (true) {
                if ((a & m) != 0) {
                    p ^= b;
                    if ((a & (m - 1)) == 0) {
                        break;
                    }
                }
                m >>>= 1;
                b = (b & 1) != 0 ? (b >>> 1) ^ POLY : b >>> 1;
            }
            return p;
        }

        /** x^(8n) mod P. */
        static int x8nModP(long n) {
            int p = 1 << 31;    // x^0
            int k = 3;
            while (n != 0) {
                if ((n & 1) != 0) {
                    p = multModP(X2N[k & 63], p);
                }
                n >>>= 1;
                k++;
            }
            return p;
        }
    }
}
