/*
 * The hdfs-chaos workload client for Apache Hadoop: the same ops, gating, content and
 * client contract events as the mini-HDFS workload client (minihdfs/workload.py and
 * minihdfs/client.py), written through Hadoop's own DistributedFileSystem.
 *
 *   java -cp CONF:CLASSES:JARS/* HdfsChaosClient --node c1 --ops OPS.json --events OUT.jsonl
 *        [--gate-dir DIR] [--seed N] --fs hdfs://nn.hdfs:PORT
 *
 * OPS.json is the list harness/runner.py _workload_ops writes for one client. Each event
 * is one JSON line written with one write() on a file opened for append, so a SIGKILL
 * (crash_client) loses nothing already logged. The bytes written at (path, offset) are
 * hdfs_contract.content.Content(seed): Python's random.Random(f"{seed}:{path}:{page}")
 * .randbytes(65536), reproduced here (MT19937 seeded the way CPython seeds from a str).
 */

import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.zip.CRC32;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.ipc.RemoteException;

public class HdfsChaosClient {

    // -- Content: hdfs_contract.content.Content, byte for byte ------------------------

    static final int PAGE = 64 * 1024;
    static final String CONTENT_NAME = "workload";
    // with the agent in this JVM (harness/systems/hadoop/agent.py rule stream_abort), a
    // stream the lease renewer gave up was reported at DFSOutputStream.abort already
    static final boolean AGENT = System.getProperty("hdfs-chaos.agent.out") != null;
    static final String ABORTED = "Lease timeout of ";

    /** CPython's _random.Random (MT19937): init_by_array and genrand_uint32. */
    static final class MersenneTwister {
        private final int[] mt = new int[624];
        private int mti;

        MersenneTwister(int[] key) {
            initGenrand(19650218);
            int i = 1, j = 0;
            for (int k = Math.max(624, key.length); k > 0; k--) {
                long prev = mt[i - 1] & 0xffffffffL;
                long v = ((mt[i] & 0xffffffffL) ^ (((prev ^ (prev >>> 30)) * 1664525L) & 0xffffffffL))
                        + (key[j] & 0xffffffffL) + j;
                mt[i] = (int) v;
                i++; j++;
                if (i >= 624) { mt[0] = mt[623]; i = 1; }
                if (j >= key.length) j = 0;
            }
            for (int k = 623; k > 0; k--) {
                long prev = mt[i - 1] & 0xffffffffL;
                long v = ((mt[i] & 0xffffffffL) ^ (((prev ^ (prev >>> 30)) * 1566083941L) & 0xffffffffL))
                        - i;
                mt[i] = (int) v;
                i++;
                if (i >= 624) { mt[0] = mt[623]; i = 1; }
            }
            mt[0] = 0x80000000;
        }

        private void initGenrand(int s) {
            mt[0] = s;
            for (mti = 1; mti < 624; mti++) {
                long prev = mt[mti - 1] & 0xffffffffL;
                mt[mti] = (int) (1812433253L * (prev ^ (prev >>> 30)) + mti);
            }
        }

        int next() {
            int y;
            if (mti >= 624) {
                int kk;
                for (kk = 0; kk < 624 - 397; kk++) {
                    y = (mt[kk] & 0x80000000) | (mt[kk + 1] & 0x7fffffff);
                    mt[kk] = mt[kk + 397] ^ (y >>> 1) ^ ((y & 1) != 0 ? 0x9908b0df : 0);
                }
                for (; kk < 623; kk++) {
                    y = (mt[kk] & 0x80000000) | (mt[kk + 1] & 0x7fffffff);
                    mt[kk] = mt[kk + (397 - 624)] ^ (y >>> 1) ^ ((y & 1) != 0 ? 0x9908b0df : 0);
                }
                y = (mt[623] & 0x80000000) | (mt[0] & 0x7fffffff);
                mt[623] = mt[396] ^ (y >>> 1) ^ ((y & 1) != 0 ? 0x9908b0df : 0);
                mti = 0;
            }
            y = mt[mti++];
            y ^= (y >>> 11);
            y ^= (y << 7) & 0x9d2c5680;
            y ^= (y << 15) & 0xefc60000;
            y ^= (y >>> 18);
            return y;
        }
    }

    /** random.seed(str), version 2: int.from_bytes(s + sha512(s), 'big') split into
     *  32-bit words, least significant first. */
    static int[] seedKey(String s) throws Exception {
        byte[] a = s.getBytes(StandardCharsets.UTF_8);
        byte[] h = MessageDigest.getInstance("SHA-512").digest(a);
        byte[] all = new byte[a.length + h.length];
        System.arraycopy(a, 0, all, 0, a.length);
        System.arraycopy(h, 0, all, a.length, h.length);
        BigInteger n = new BigInteger(1, all);
        int bits = n.bitLength();
        int words = bits == 0 ? 1 : (bits - 1) / 32 + 1;
        int[] key = new int[words];
        for (int i = 0; i < words; i++) key[i] = n.shiftRight(32 * i).intValue();
        return key;
    }

    static final class Content {
        final long seed;
        private String cachedPath;
        private long cachedIndex = -1;
        private byte[] cachedPage;

        Content(long seed) { this.seed = seed; }

        /** randbytes(PAGE) = getrandbits(PAGE*8).to_bytes(PAGE, 'little'): the 32-bit
         *  outputs in order, each little-endian. */
        byte[] page(String path, long index) throws Exception {
            if (index == cachedIndex && path.equals(cachedPath)) return cachedPage;
            MersenneTwister mt = new MersenneTwister(seedKey(seed + ":" + path + ":" + index));
            byte[] out = new byte[PAGE];
            for (int i = 0; i < PAGE; i += 4) {
                int r = mt.next();
                out[i] = (byte) r;
                out[i + 1] = (byte) (r >>> 8);
                out[i + 2] = (byte) (r >>> 16);
                out[i + 3] = (byte) (r >>> 24);
            }
            cachedPath = path; cachedIndex = index; cachedPage = out;
            return out;
        }

        byte[] get(String path, long offset, int n) throws Exception {
            byte[] out = new byte[n];
            int done = 0;
            while (done < n) {
                long index = offset / PAGE;
                int start = (int) (offset % PAGE);
                int k = Math.min(PAGE - start, n - done);
                System.arraycopy(page(path, index), start, out, done, k);
                done += k;
                offset += k;
            }
            return out;
        }
    }

    // -- the event log: hdfs_contract.events.EventLog ---------------------------------

    static final class EventLog {
        final String node, role;
        private long seq;
        private final FileOutputStream out;

        EventLog(String path, String node, String role) throws IOException {
            this.node = node;
            this.role = role;
            File f = new File(path).getAbsoluteFile();
            f.getParentFile().mkdirs();
            if (f.exists()) {   // a restarted process goes on with the next seq
                for (byte b : Files.readAllBytes(f.toPath())) if (b == '\n') seq++;
            }
            out = new FileOutputStream(f, true);
        }

        /** fields: name, value pairs, in the order the Python client writes them. */
        synchronized void emit(String event, Object... fields) {
            Instant now = Instant.now();
            double ts = now.getEpochSecond() + now.getNano() / 1e9;
            StringBuilder sb = new StringBuilder(160);
            sb.append("{\"ts\":").append(String.format(Locale.ROOT, "%.6f", ts));
            sb.append(",\"node\":"); json(sb, node);
            sb.append(",\"role\":"); json(sb, role);
            sb.append(",\"seq\":").append(seq);
            sb.append(",\"event\":"); json(sb, event);
            for (int i = 0; i + 1 < fields.length; i += 2) {
                sb.append(','); json(sb, fields[i]); sb.append(':'); json(sb, fields[i + 1]);
            }
            sb.append("}\n");
            try {
                out.write(sb.toString().getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new RuntimeException("cannot write the event log: " + e, e);
            }
            seq++;
        }

        static void json(StringBuilder sb, Object v) {
            if (v == null) { sb.append("null"); return; }
            if (v instanceof Boolean || v instanceof Integer || v instanceof Long) {
                sb.append(v); return;
            }
            String s = v.toString();
            sb.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"': sb.append("\\\""); break;
                    case '\\': sb.append("\\\\"); break;
                    case '\n': sb.append("\\n"); break;
                    case '\r': sb.append("\\r"); break;
                    case '\t': sb.append("\\t"); break;
                    default:
                        if (c < 0x20 || c > 0x7e) sb.append(String.format("\\u%04x", (int) c));
                        else sb.append(c);
                }
            }
            sb.append('"');
        }
    }

    // -- the workload: minihdfs.workload.run_workload ---------------------------------

    final DistributedFileSystem fs;
    final EventLog events;
    final Content content;
    final String holder;
    int streams = 0;
    final List<FSDataOutputStream> openStreams = new ArrayList<>();
    volatile boolean stop = false;

    HdfsChaosClient(DistributedFileSystem fs, EventLog events, long seed) {
        this.fs = fs;
        this.events = events;
        this.content = new Content(seed);
        this.holder = fs.getClient().getClientName();
    }

    /** The exception's name as the Python client gives it (type(e).__name__); a remote
     *  exception is named by the NameNode's class (LeaseExpiredException, ...). */
    static String errorName(Throwable e) {
        if (e instanceof RemoteException) {
            String c = ((RemoteException) e).getClassName();
            return c.substring(c.lastIndexOf('.') + 1);
        }
        return e.getClass().getSimpleName();
    }

    /** True if `e` was thrown in the DataStreamer's thread: ipc.Client fills a
     *  RemoteException's stack trace in the thread that made the call. */
    static boolean fromDataStreamer(Throwable e) {
        for (StackTraceElement f : e.getStackTrace()) {
            if (f.getClassName().startsWith("org.apache.hadoop.hdfs.DataStreamer")) return true;
        }
        return false;
    }

    static String reason(Throwable e) {
        String m = e.getMessage();
        return m == null ? e.toString() : m;
    }

    /** An output stream and the facts its events need. */
    final class Stream {
        final FSDataOutputStream out;
        final String path;
        final int number;
        final CRC32 crc = new CRC32();
        long offset;        // bytes handed to the stream (file offset)
        long flushed;       // the last offset hflush returned
        boolean failed;

        // throws: Hadoop 2.x FSDataOutputStream.getPos declares IOException (3.x does not)
        Stream(FSDataOutputStream out, String path, String mode) throws IOException {
            this.out = out;
            this.path = path;
            this.number = streams++;
            this.offset = out.getPos();
            this.flushed = offset;
            events.emit("client.stream.open", "path", path, "holder", holder, "mode", mode,
                        "stream", number, "offset", offset, "content", CONTENT_NAME);
        }

        void fail(Exception e) {
            if (!failed) {
                failed = true;
                if (!(AGENT && reason(e).startsWith(ABORTED))) {
                    events.emit("client.stream.error", "path", path, "error", errorName(e),
                                "reason", reason(e));
                }
            }
        }

        void write(byte[] data) throws IOException {
            CRC32 one = new CRC32();
            one.update(data);
            events.emit("client.write", "path", path, "offset", offset, "len", (long) data.length,
                        "crc", one.getValue(), "stream", number, "stream_crc", crc.getValue());
            crc.update(data);
            try {
                out.write(data);
            } catch (IOException e) {
                fail(e);
                throw e;
            }
            offset += data.length;
        }

        void hflush() throws IOException {
            long target = offset;
            try {
                out.hflush();
            } catch (IOException e) {
                fail(e);
                throw e;
            }
            flushed = target;
            events.emit("client.hflush", "path", path, "offset", target);
        }

        void close() throws IOException {
            try {
                out.close();
            } catch (IOException e) {
                // a failure of the DataStreamer surfaces only here when no write or hflush
                // came after it: the stream failed, as the mini-HDFS client says before its
                // close. A RemoteException is the NameNode's answer to close's own complete()
                // unless the DataStreamer got it (addBlock, getAdditionalDatanode,
                // updatePipeline): DFSOutputStream rethrows the streamer's stored exception
                if (!(e instanceof RemoteException) || fromDataStreamer(e)) {
                    fail(e);
                }
                // the bytes known acked by every pipeline node: the last hflush
                events.emit("client.close", "path", path, "len", flushed, "ok", false,
                            "error", errorName(e), "reason", reason(e));
                throw e;
            }
            events.emit("client.close", "path", path, "len", offset, "ok", true, "error", null);
        }
    }

    static long num(Map<String, Object> op, String key, long dflt) {
        Object v = op.get(key);
        return v instanceof Number ? ((Number) v).longValue() : dflt;
    }

    static double real(Map<String, Object> op, String key, double dflt) {
        Object v = op.get(key);
        return v instanceof Number ? ((Number) v).doubleValue() : dflt;
    }

    static boolean flag(Map<String, Object> op, String key, boolean dflt) {
        Object v = op.get(key);
        return v instanceof Boolean ? (Boolean) v : dflt;
    }

    long writeStream(Stream s, long start, long size, long hflushEvery) throws Exception {
        final long piece = 1 << 20;
        long written = 0;
        while (written < size) {
            long n = Math.min(piece, size - written);
            if (hflushEvery > 0) n = Math.min(n, hflushEvery - (written % hflushEvery));
            s.write(content.get(s.path, start + written, (int) n));
            written += n;
            if (hflushEvery > 0 && written % hflushEvery == 0) s.hflush();
        }
        return written;
    }

    long runOp(Map<String, Object> op) throws Exception {
        String kind = (String) op.get("op");
        String path = (String) op.get("path");
        Path p = new Path(path);
        switch (kind) {
            case "write":
            case "append": {
                Stream s;
                long start;
                if (kind.equals("write")) {
                    boolean overwrite = flag(op, "overwrite", false);
                    long rep = num(op, "replication", 0);
                    FSDataOutputStream out = rep > 0
                            ? fs.create(p, overwrite, 4096, (short) rep, fs.getDefaultBlockSize(p))
                            : fs.create(p, overwrite);
                    s = new Stream(out, path, "create");
                    start = 0;
                } else if (flag(op, "new_block", false)) {
                    // CreateFlag.NEW_BLOCK: the data goes into a new block, the partial
                    // last block stays as it is
                    s = new Stream(fs.append(p, EnumSet.of(CreateFlag.APPEND, CreateFlag.NEW_BLOCK),
                                             4096, null), path, "append");
                    start = s.offset;
                } else {
                    s = new Stream(fs.append(p), path, "append");
                    start = s.offset;
                }
                long n = writeStream(s, start, num(op, "size", 0), num(op, "hflush_every", 0));
                if (flag(op, "close", true)) s.close();
                else openStreams.add(s.out);
                return n;
            }
            case "read": {
                CRC32 crc = new CRC32();
                long len = 0;
                byte[] buf = new byte[1 << 16];
                try (FSDataInputStream in = fs.open(p)) {
                    int k;
                    while ((k = in.read(buf)) > 0) {
                        crc.update(buf, 0, k);
                        len += k;
                    }
                }
                events.emit("client.read", "path", path, "offset", 0L, "len", len,
                            "crc", crc.getValue());
                return len;
            }
            case "recover_lease": {
                long deadline = System.nanoTime() + (long) (real(op, "timeout", 60) * 1e9);
                while (true) {
                    boolean closed = fs.recoverLease(p);
                    events.emit("client.recover_lease", "path", path, "result", closed);
                    if (closed) return 0;
                    if (System.nanoTime() > deadline)
                        throw new TimeoutError("recoverLease(" + path + ") did not close the file in time");
                    Thread.sleep((long) (real(op, "retry_interval", 1.0) * 1000));
                }
            }
            case "truncate": {
                long newLen = num(op, "new_len", 0);
                if (!fs.truncate(p, newLen)) {
                    long deadline = System.nanoTime() + (long) (real(op, "timeout", 60) * 1e9);
                    while (!fs.isFileClosed(p)) {
                        if (System.nanoTime() > deadline)
                            throw new TimeoutError("truncate(" + path + ") did not finish in time");
                        Thread.sleep(200);
                    }
                }
                return newLen;
            }
            default:
                throw new ValueError("unknown workload op '" + kind + "'");
        }
    }

    /** Python's exception names, so op.end's `error` reads the same on both systems. */
    static final class TimeoutError extends Exception {
        TimeoutError(String m) { super(m); }
    }

    static final class ValueError extends Exception {
        ValueError(String m) { super(m); }
    }

    int run(List<Map<String, Object>> ops, String gateDir) throws InterruptedException {
        events.emit("client.start", "holder", holder);
        int failed = 0;
        for (Map<String, Object> op : ops) {
            String id = String.valueOf(op.get("id"));
            if (flag(op, "gated", false) && gateDir != null) {
                File gate = new File(gateDir, id);
                while (!gate.exists() && !stop) Thread.sleep(10);
            }
            if (stop) break;
            events.emit("client.op.start", "op_id", id, "op", op.get("op"), "path", op.get("path"));
            try {
                long n = runOp(op);
                events.emit("client.op.end", "op_id", id, "op", op.get("op"), "path", op.get("path"),
                            "ok", true, "error", null, "len", n);
            } catch (Exception e) {
                failed++;
                events.emit("client.op.end", "op_id", id, "op", op.get("op"), "path", op.get("path"),
                            "ok", false, "error", errorName(e), "reason", reason(e), "len", null);
            }
        }
        // keep the files open, and their lease renewed (DFSClient's LeaseRenewer), until
        // told to stop; then leave them open, as a crashed or stopped writer does
        while (!openStreams.isEmpty() && !stop) Thread.sleep(50);
        return failed > 0 ? 1 : 0;
    }

    static void usage(String why) {
        System.err.println("HdfsChaosClient: error: " + why);
        System.err.println("usage: HdfsChaosClient --node c1 --ops OPS.json --events OUT.jsonl "
                + "[--gate-dir DIR] [--seed N] --fs hdfs://HOST:PORT");
        System.exit(2);
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] argv) throws Exception {
        if (argv.length == 5 && argv[0].equals("--dump-content")) {
            // --dump-content SEED PATH OFFSET N: the workload's bytes on stdout (tests
            // compare them with hdfs_contract.content.Content)
            byte[] b = new Content(Long.parseLong(argv[1])).get(argv[2], Long.parseLong(argv[3]),
                                                               Integer.parseInt(argv[4]));
            System.out.write(b);
            System.out.flush();
            return;
        }
        Map<String, String> args = new LinkedHashMap<>();
        for (int i = 0; i < argv.length; i++) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) usage("bad argument " + argv[i]);
            args.put(argv[i].substring(2), argv[++i]);
        }
        for (String k : new String[]{"node", "ops", "events", "fs"})
            if (!args.containsKey(k)) usage("--" + k + " is required");
        List<Map<String, Object>> ops;
        try {
            ops = new ObjectMapper().readValue(new File(args.get("ops")), List.class);
        } catch (IOException e) {
            usage("cannot read the ops file " + args.get("ops") + ": " + e.getMessage());
            return;
        }
        EventLog events = new EventLog(args.get("events"), args.get("node"), "client");
        Configuration conf = new Configuration();
        // the JVM's exit must not close (and so complete) a file the workload keeps
        // open: FileSystem's shutdown hook would, the mini-HDFS client never does
        conf.setBoolean("fs.automatic.close", false);
        FileSystem generic = FileSystem.newInstance(java.net.URI.create(args.get("fs")), conf);
        if (!(generic instanceof DistributedFileSystem))
            usage("--fs " + args.get("fs") + " is not an hdfs:// file system");
        HdfsChaosClient client = new HdfsChaosClient((DistributedFileSystem) generic, events,
                Long.parseLong(args.getOrDefault("seed", "0")));
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {   // SIGTERM: stop, as Python's
            client.stop = true;
            try { main.join(5000); } catch (InterruptedException ignored) { }
        }));
        int rc = client.run(ops, args.get("gate-dir"));
        // halt: no shutdown hook or finalizer may complete a file left open
        Runtime.getRuntime().halt(rc);
    }
}
