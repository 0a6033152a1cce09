package floe;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * `Engine serve`: one JVM runs many Engine and Reader command lines, so that
 * tests pay for one JVM start instead of one per operation.  Each command
 * opens its own catalog and loads the table afresh, exactly as a separate
 * process would.
 *
 * Requests on stdin, one JSON object a line:
 *   {"id": N, "main": "engine"|"reader", "args": [...], "props": {...}, "hold": false}
 *   {"release": N}            let held request N commit
 * Replies on stdout, one JSON object a line, in completion order:
 *   {"id": N, "status": S, "stdout": "...", "stderr": "..."}   (S: the command's exit status)
 *   {"id": N, "held": true}   request N planned and wrote its files and waits for its release
 * Requests run concurrently (a held one does not stop the others).  The
 * server ends when stdin closes.
 */
final class Server {
    private Server() {}

    static void serve() throws Exception {
        PrintStream replies = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
            StandardCharsets.UTF_8);
        System.setOut(System.err);                 // nothing else may write to the reply stream
        Map<Long, CountDownLatch> releases = new ConcurrentHashMap<>();
        ExecutorService pool = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "engine-request");
            t.setDaemon(true);
            return t;
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) continue;
            JsonNode req = Values.parse(line);
            if (req.has("release")) {
                CountDownLatch l = releases.computeIfAbsent(req.get("release").asLong(), k -> new CountDownLatch(1));
                l.countDown();
                continue;
            }
            long id = req.get("id").asLong();
            String main = req.path("main").asText("engine");
            String[] args = new String[req.get("args").size()];
            for (int i = 0; i < args.length; i++) {
                JsonNode a = req.get("args").get(i);
                args[i] = a.isTextual() ? a.textValue() : a.toString();
            }
            Map<String, String> props = new HashMap<>();
            JsonNode p = req.get("props");
            if (p != null && p.isObject()) {
                for (Iterator<Map.Entry<String, JsonNode>> it = p.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    props.put(e.getKey(), e.getValue().asText());
                }
            }
            Engine.Hold hold = Engine.NO_HOLD;
            if (req.path("hold").asBoolean(false)) {
                hold = () -> {
                    CountDownLatch l = releases.computeIfAbsent(id, k -> new CountDownLatch(1));
                    reply(replies, Map.of("id", id, "held", true));
                    if (!l.await(600, TimeUnit.SECONDS)) throw new IllegalStateException("never released");
                    releases.remove(id);
                };
            }
            Engine.Hold h = hold;
            pool.submit(() -> {
                StringBuilder out = new StringBuilder();
                StringBuilder err = new StringBuilder();
                int status;
                try {
                    status = main.equals("reader") ? Reader.run(args, props, out, err)
                        : Engine.run(args, props, h, out, err);
                } catch (Throwable e) {
                    java.io.StringWriter w = new java.io.StringWriter();
                    e.printStackTrace(new java.io.PrintWriter(w));
                    err.append(w);
                    status = 1;
                }
                Map<String, Object> r = new LinkedHashMap<>();
                r.put("id", id);
                r.put("status", status);
                r.put("stdout", out.toString());
                r.put("stderr", err.toString());
                reply(replies, r);
            });
        }
        pool.shutdown();
        pool.awaitTermination(600, TimeUnit.SECONDS);
    }

    private static void reply(PrintStream replies, Map<String, Object> r) {
        String text;
        try {
            text = Values.JSON.writeValueAsString(r);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        synchronized (replies) {
            replies.println(text);
            replies.flush();
        }
    }
}
