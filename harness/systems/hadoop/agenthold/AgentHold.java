package hdfschaos;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.jboss.byteman.rule.Rule;
import org.jboss.byteman.rule.helper.Helper;

/**
 * Exact injection inside a Hadoop JVM (harness/systems/hadoop/agent.py): the Byteman
 * helper of the rules whose events an exact trigger holds. {@code emit} writes the rule's
 * agent line as the plain rules do; then, when the hold spec (the JSON file that
 * MINIHDFS_HOLD names, hdfs_contract/hold.py) has a hold of this JVM's node that this
 * rule can feed and that is not done, it sends {"node", "seq", "agent": line} to the
 * harness's socket and blocks the calling thread only until {"seq", "release": true,
 * "done": [ids]} comes (a reader thread hands the answers out by seq). No answer within
 * the spec's timeout: a hold_timeout line, and the thread goes on. The harness
 * unreachable or gone: holding stops and every waiting thread goes on.
 */
public class AgentHold extends Helper {
    static final String KEY = "hdfs-chaos";
    static final String OUT = "hdfs-chaos.agent.out";
    static final String ENV = "MINIHDFS_HOLD";

    /** The channel of this JVM, or null (no spec, or no hold of this node): one check. */
    static final Channel CHANNEL = Channel.fromEnv();

    public AgentHold(Rule rule) {
        super(rule);
    }

    /** Writes `line` to the agent file; holds the thread when `rule` feeds a live hold. */
    public boolean emit(String rule, String line) {
        traceOpen(KEY, System.getProperty(OUT));
        Channel c = CHANNEL;
        if (c == null || !c.wants(rule)) {
            traceln(KEY, line);
            return true;
        }
        Waiter w;
        // the line and its announcement in one step: the harness counts the
        // announcements (nth) in the order the lines are in the file
        synchronized (c) {
            traceln(KEY, line);
            w = c.announce(line);
        }
        if (w != null && !c.await(w)) {
            traceln(KEY, "hold_timeout\t" + java.time.Instant.now() + "\t"
                    + Thread.currentThread().getId() + "\t" + Thread.currentThread().getName()
                    + "\t" + rule + "\t" + w.seq + "\t" + c.timeoutSeconds);
        }
        return true;
    }

    static final class Waiter {
        final long seq;
        final CountDownLatch latch = new CountDownLatch(1);

        Waiter(long seq) {
            this.seq = seq;
        }
    }

    static final class Channel {
        final String node;
        final String socketPath;
        final double timeoutSeconds;
        final Map<String, Set<String>> rulesOfHold = new LinkedHashMap<>();   // hold id -> rules
        final Set<String> done = new HashSet<>();
        final Map<Long, Waiter> waiting = new HashMap<>();
        final AtomicLong seq = new AtomicLong();
        volatile boolean disabled;
        SocketChannel sock;

        Channel(String node, String socketPath, double timeoutSeconds) {
            this.node = node;
            this.socketPath = socketPath;
            this.timeoutSeconds = timeoutSeconds;
        }

        static Channel fromEnv() {
            String path = System.getenv(ENV);
            if (path == null || path.isEmpty()) {
                path = System.getProperty("hdfs-chaos.hold");
            }
            if (path == null || path.isEmpty()) {
                return null;
            }
            try {
                String text = new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.UTF_8);
                return fromSpec(System.getProperty("hdfs-chaos-node"), text);
            } catch (IOException | RuntimeException e) {
                return null;    // no readable spec: nothing is held
            }
        }

        @SuppressWarnings("unchecked")
        static Channel fromSpec(String node, String text) {
            Map<String, Object> spec = (Map<String, Object>) new Json(text).value();
            Object timeout = spec.get("timeout");
            Channel c = new Channel(node, (String) spec.get("socket"),
                                    timeout instanceof Number ? ((Number) timeout).doubleValue() : 10.0);
            Object holds = spec.get("holds");
            if (holds instanceof List) {
                for (Object o : (List<Object>) holds) {
                    Map<String, Object> h = (Map<String, Object>) o;
                    Object hn = h.get("node");
                    Object rules = h.get("rules");
                    if ((hn != null && !hn.equals(node)) || !(rules instanceof List)) {
                        continue;
                    }
                    Set<String> names = new HashSet<>();
                    for (Object r : (List<Object>) rules) {
                        names.add(String.valueOf(r));
                    }
                    c.rulesOfHold.put(String.valueOf(h.get("id")), names);
                }
            }
            return c.rulesOfHold.isEmpty() || c.socketPath == null ? null : c;
        }

        synchronized boolean wants(String rule) {
            if (disabled) {
                return false;
            }
            for (Map.Entry<String, Set<String>> e : rulesOfHold.entrySet()) {
                if (!done.contains(e.getKey()) && e.getValue().contains(rule)) {
                    return true;
                }
            }
            return false;
        }

        /** (synchronized on this) Sends `line`; the waiter, or null when nobody will answer. */
        Waiter announce(String line) {
            long s = seq.incrementAndGet();
            String message = "{\"node\":" + Json.quote(node) + ",\"seq\":" + s + ",\"agent\":"
                    + Json.quote(line) + "}\n";
            try {
                connect();
                Waiter w = new Waiter(s);
                waiting.put(s, w);
                // the channel's own write: Channels' streams would share one lock with the
                // reader blocked in its read
                ByteBuffer bb = ByteBuffer.wrap(message.getBytes(StandardCharsets.UTF_8));
                while (bb.hasRemaining()) {
                    sock.write(bb);
                }
                return w;
            } catch (IOException e) {
                waiting.remove(s);
                giveUp();
                return null;
            }
        }

        /** Whether the answer came (or the channel closed) within the timeout. */
        boolean await(Waiter w) {
            try {
                if (w.latch.await((long) (timeoutSeconds * 1000), TimeUnit.MILLISECONDS)) {
                    return true;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return true;    // interrupted: the thread goes on, as after a release
            }
            synchronized (this) {
                waiting.remove(w.seq);
            }
            return w.latch.getCount() == 0;
        }

        private void connect() throws IOException {
            if (sock != null) {
                return;
            }
            SocketChannel s = SocketChannel.open(StandardProtocolFamily.UNIX);
            s.connect(UnixDomainSocketAddress.of(socketPath));
            sock = s;
            Thread reader = new Thread(() -> readAnswers(s), "hdfs-chaos-hold-reader");
            reader.setDaemon(true);
            reader.start();
        }

        @SuppressWarnings("unchecked")
        private void readAnswers(SocketChannel s) {
            ByteArrayOutputStream line = new ByteArrayOutputStream();
            ByteBuffer bb = ByteBuffer.allocate(8192);
            byte[] buf = bb.array();
            try {
                int n;
                while ((n = s.read(bb)) > 0) {
                    bb.clear();
                    for (int i = 0; i < n; i++) {
                        if (buf[i] != '\n') {
                            line.write(buf[i]);
                            continue;
                        }
                        String text = new String(line.toByteArray(), StandardCharsets.UTF_8);
                        line.reset();
                        Map<String, Object> answer;
                        try {
                            answer = (Map<String, Object>) new Json(text).value();
                        } catch (RuntimeException e) {
                            continue;
                        }
                        Waiter w;
                        synchronized (this) {
                            Object d = answer.get("done");
                            if (d instanceof List) {
                                for (Object id : (List<Object>) d) {
                                    done.add(String.valueOf(id));
                                }
                            }
                            Object sq = answer.get("seq");
                            w = sq instanceof Number ? waiting.remove(((Number) sq).longValue()) : null;
                        }
                        if (w != null) {
                            w.latch.countDown();
                        }
                    }
                }
            } catch (IOException e) {
                // the channel closed under us: as at its end
            }
            synchronized (this) {
                if (sock == s) {
                    giveUp();
                }
            }
        }

        /** (synchronized on this) Stop holding: close the channel, let every waiter go. */
        private void giveUp() {
            disabled = true;
            if (sock != null) {
                try {
                    sock.close();
                } catch (IOException e) {
                    // closing anyway
                }
                sock = null;
            }
            for (Waiter w : waiting.values()) {
                w.latch.countDown();
            }
            waiting.clear();
        }
    }

    /** The JSON the hold spec and the answers use: objects, arrays, strings, numbers, literals. */
    static final class Json {
        private final String s;
        private int i;

        Json(String s) {
            this.s = s;
        }

        Object value() {
            ws();
            if (i >= s.length()) {
                throw new IllegalArgumentException("json: unexpected end");
            }
            char c = s.charAt(i);
            if (c == '{') {
                Map<String, Object> m = new LinkedHashMap<>();
                i++;
                ws();
                if (peek('}')) {
                    i++;
                    return m;
                }
                while (true) {
                    ws();
                    String k = string();
                    ws();
                    expect(':');
                    m.put(k, value());
                    ws();
                    if (peek(',')) {
                        i++;
                        continue;
                    }
                    expect('}');
                    return m;
                }
            }
            if (c == '[') {
                List<Object> l = new ArrayList<>();
                i++;
                ws();
                if (peek(']')) {
                    i++;
                    return l;
                }
                while (true) {
                    l.add(value());
                    ws();
                    if (peek(',')) {
                        i++;
                        continue;
                    }
                    expect(']');
                    return l;
                }
            }
            if (c == '"') {
                return string();
            }
            if (s.startsWith("true", i)) {
                i += 4;
                return Boolean.TRUE;
            }
            if (s.startsWith("false", i)) {
                i += 5;
                return Boolean.FALSE;
            }
            if (s.startsWith("null", i)) {
                i += 4;
                return null;
            }
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            if (start == i) {
                throw new IllegalArgumentException("json: unexpected " + c);
            }
            return Double.valueOf(s.substring(start, i));
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': b.append('\n'); break;
                    case 't': b.append('\t'); break;
                    case 'r': b.append('\r'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                    default: b.append(e);
                }
            }
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        private boolean peek(char c) {
            return i < s.length() && s.charAt(i) == c;
        }

        private void expect(char c) {
            if (!peek(c)) {
                throw new IllegalArgumentException("json: expected " + c + " at " + i);
            }
            i++;
        }

        static String quote(String v) {
            if (v == null) {
                return "null";
            }
            StringBuilder b = new StringBuilder("\"");
            for (int k = 0; k < v.length(); k++) {
                char c = v.charAt(k);
                if (c == '"' || c == '\\') {
                    b.append('\\').append(c);
                } else if (c < 0x20) {
                    b.append(String.format("\\u%04x", (int) c));
                } else {
                    b.append(c);
                }
            }
            return b.append('"').toString();
        }
    }
}
