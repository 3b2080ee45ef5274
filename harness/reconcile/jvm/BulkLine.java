package hdfschaos;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * The fast path of the verifier's loader (harness/reconcile/load.py): parses one event
 * line if, and only if, it is a plain bulk event (client.write, client.ack) whose keys
 * are all among the narrow fields, each once, with a value of the field's JSON type, in
 * strict JSON (ASCII, no escapes). Such a line is returned as the narrow fields and
 * dense = true; any other line, however valid, gives dense = false and the loader parses
 * it in full with Spark's JSON reader, so this class decides only which lines take the
 * fast path, never what a line means.
 *
 * Field order of the result: ts, node, role, seq, event, path, block, offset, len, crc,
 * seqno, acked, dense (load.py builds the matching struct type).
 */
public final class BulkLine implements UDF1<String, Row> {
    private static final long serialVersionUID = 1L;

    private static final String[] KEYS = {
        "ts", "node", "role", "seq", "event", "path", "block", "offset", "len", "crc",
        "seqno", "acked"};
    // 0: double, 1: string, 2: long
    private static final int[] KINDS = {0, 1, 1, 2, 1, 1, 2, 2, 2, 2, 2, 2};
    private static final int TS = 0, NODE = 1, EVENT = 4;
    private static final Row NOT_DENSE;
    // The key that a length and a first character can be (one look-up instead of a
    // comparison with every key, which took 6% of the load's CPU at 10 million events
    // in a JFR profile). No two keys share both; the class refuses to load if they do.
    private static final int MAX_KEY = 8;
    private static final int[] BY_LEN_FIRST = new int[MAX_KEY * 128];
    // Each key's characters, 7 bits each, in a long: a key is read in the one pass that
    // finds its closing quote and checked with one comparison (String.regionMatches
    // took 3.7% of the samples of the load at 10 million events, JFR)
    private static final long[] CODES = new long[KEYS.length];

    static {
        java.util.Arrays.fill(BY_LEN_FIRST, -1);
        for (int k = 0; k < KEYS.length; k++) {
            int slot = KEYS[k].length() * 128 + KEYS[k].charAt(0);
            if (BY_LEN_FIRST[slot] != -1) {
                throw new IllegalStateException("keys " + KEYS[BY_LEN_FIRST[slot]] + " and "
                                                + KEYS[k] + " share a length and first letter");
            }
            BY_LEN_FIRST[slot] = k;
            for (char c : KEYS[k].toCharArray()) {
                CODES[k] = CODES[k] << 7 | c;
            }
        }
        Object[] v = new Object[KEYS.length + 1];
        v[KEYS.length] = Boolean.FALSE;
        NOT_DENSE = RowFactory.create(v);
    }

    /** The number of narrow fields, and so of the values `parse` fills in. */
    static final int FIELDS = KEYS.length;

    @Override
    public Row call(String s) {
        Object[] v = new Object[FIELDS + 1];
        if (!parse(s, v)) {
            return NOT_DENSE;
        }
        v[FIELDS] = Boolean.TRUE;
        return RowFactory.create(v);
    }

    /** True when `s` is a dense line: then v[0..FIELDS) hold its narrow fields in the
     * result's order (null where the line lacks the key). DenseFold parses with it too. */
    static boolean parse(String s, Object[] v) {
        if (s == null) {
            return false;
        }
        int n = s.length();
        int i = skipWs(s, 0);
        if (i >= n || s.charAt(i) != '{') {
            return false;
        }
        i = skipWs(s, i + 1);
        if (i < n && s.charAt(i) == '}') {
            return false;                     // {}: no envelope
        }
        int seen = 0;
        while (true) {
            if (i >= n || s.charAt(i) != '"') {
                return false;
            }
            // the key: up to its closing quote, at most MAX_KEY - 1 characters
            int end = i + 1;
            long code = 0;
            while (end < n && end - i < MAX_KEY) {
                char c = s.charAt(end);
                if (c == '"' || c >= 128) {
                    break;
                }
                code = code << 7 | c;
                end++;
            }
            if (end >= n || s.charAt(end) != '"' || end == i + 1) {
                return false;             // too long, not ASCII, unterminated, or ""
            }
            int k = BY_LEN_FIRST[(end - i - 1) * 128 + s.charAt(i + 1)];
            if (k < 0 || CODES[k] != code || (seen & (1 << k)) != 0) {
                return false;             // an unknown or repeated key (or an escape in it)
            }
            seen |= 1 << k;
            i = skipWs(s, end + 1);
            if (i >= n || s.charAt(i) != ':') {
                return false;
            }
            i = skipWs(s, i + 1);
            if (i >= n) {
                return false;
            }
            int vEnd;
            switch (KINDS[k]) {
                case 1:
                    if (s.charAt(i) != '"') {
                        return false;
                    }
                    vEnd = stringEnd(s, i + 1);
                    if (vEnd < 0) {
                        return false;
                    }
                    v[k] = s.substring(i + 1, vEnd);
                    vEnd++;
                    break;
                case 2:
                    vEnd = numberEnd(s, i, true);
                    if (vEnd < 0) {
                        return false;     // not an integer
                    }
                    try {
                        v[k] = Long.parseLong(s, i, vEnd, 10);
                    } catch (NumberFormatException e) {
                        return false;     // beyond a long
                    }
                    break;
                default:
                    vEnd = numberEnd(s, i, false);
                    if (vEnd < 0) {
                        return false;
                    }
                    double d;
                    if (numberEnd(s, i, true) == vEnd) {
                        // an integer: Spark's reader converts its long value (-0 is 0.0)
                        if (vEnd - i > 18) {
                            return false;
                        }
                        d = (double) Long.parseLong(s, i, vEnd, 10);
                    } else {
                        d = plainDecimal(s, i, vEnd);
                        if (Double.isNaN(d)) {
                            d = Double.parseDouble(s.substring(i, vEnd));
                        }
                    }
                    if (Double.isInfinite(d)) {
                        return false;
                    }
                    v[k] = d;
            }
            i = skipWs(s, vEnd);
            if (i >= n) {
                return false;
            }
            char c = s.charAt(i);
            if (c == ',') {
                i = skipWs(s, i + 1);
            } else if (c == '}') {
                if (skipWs(s, i + 1) != n) {
                    return false;         // something after the object
                }
                break;
            } else {
                return false;
            }
        }
        Object event = v[EVENT];
        return v[TS] != null && v[NODE] != null
                && ("client.write".equals(event) || "client.ack".equals(event));
    }

    private static int skipWs(String s, int i) {
        int n = s.length();
        while (i < n) {
            char c = s.charAt(i);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                break;
            }
            i++;
        }
        return i;
    }

    /** The index of the closing quote of a plain string starting at `i`, or -1 for an
     * escape, a control character, a non-ASCII character or no closing quote. */
    private static int stringEnd(String s, int i) {
        int n = s.length();
        while (i < n) {
            char c = s.charAt(i);
            if (c == '"') {
                return i;
            }
            if (c == '\\' || c < 0x20 || c > 0x7e) {
                return -1;
            }
            i++;
        }
        return -1;
    }

    /** The end of a JSON number at `i` (strict grammar), or -1; `integer` refuses a
     * fraction or exponent. */
    private static int numberEnd(String s, int i, boolean integer) {
        int n = s.length();
        if (i < n && s.charAt(i) == '-') {
            i++;
        }
        if (i >= n) {
            return -1;
        }
        char c = s.charAt(i);
        if (c == '0') {
            i++;
        } else if (c >= '1' && c <= '9') {
            i = digitsEnd(s, i);
        } else {
            return -1;
        }
        if (i < n && s.charAt(i) == '.') {
            if (integer) {
                return -1;
            }
            int start = i + 1;
            i = digitsEnd(s, start);
            if (i == start) {
                return -1;
            }
        }
        if (i < n && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            if (integer) {
                return -1;
            }
            i++;
            if (i < n && (s.charAt(i) == '+' || s.charAt(i) == '-')) {
                i++;
            }
            int start = i;
            i = digitsEnd(s, start);
            if (i == start) {
                return -1;
            }
        }
        return i;
    }

    private static final double[] POW10 = {
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

    /** The value of the JSON number [from, to) when it is a plain decimal whose digits,
     * read as an integer m, are at most 2^53 with at most 22 after the point: then m and
     * 10^f are both exact doubles, and m / 10^f is the one correctly rounded division,
     * the very double Double.parseDouble gives (Clinger's fast path). NaN otherwise (an
     * exponent, more digits): the caller parses those. Every ts is such a decimal, and
     * parseDouble took 7% of the load's CPU at 10 million events (JFR). */
    private static double plainDecimal(String s, int from, int to) {
        int i = from;
        boolean negative = s.charAt(i) == '-';
        if (negative) {
            i++;
        }
        long m = 0;
        int fraction = -1;
        for (; i < to; i++) {
            char c = s.charAt(i);
            if (c == '.') {
                fraction = 0;
                continue;
            }
            if (c < '0' || c > '9' || m > (1L << 53) / 10) {
                return Double.NaN;
            }
            m = m * 10 + (c - '0');
            if (fraction >= 0) {
                fraction++;
            }
        }
        if (m > 1L << 53 || fraction < 0 || fraction >= POW10.length) {
            return Double.NaN;
        }
        double d = m / POW10[fraction];
        return negative ? -d : d;
    }

    /** The index after the run of ASCII digits that starts at `i` (`i` itself if none). */
    private static int digitsEnd(String s, int i) {
        int n = s.length();
        while (i < n && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
            i++;
        }
        return i;
    }
}
