// coldstart example target: minimal HTTP server (Java 17, com.sun.net.httpserver).
//
// Used to measure JVM cold start with HTTP readiness. Single file, no deps:
//   javac -d target/examples/java examples/java/Server.java
//   java -cp target/examples/java Server [--port N]
// Identical behaviour to the Python/Node/Go/Rust examples:
//   * port: `--port N` (first args) > env PORT > 8080; PORT=0 picks a free port
//   * env COLDSTART_EXAMPLE_DELAY_MS: sleep this long BEFORE binding (fake init)
//   * binds 127.0.0.1 only, then prints exactly `listening on 127.0.0.1:PORT`
//   * GET / and GET /health -> 200 "ok\n"; other GET paths -> 404; other methods -> 405
//   * SIGTERM -> exit 0 promptly (a shutdown hook halts with status 0, not 143)

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

public final class Server {
    private static volatile HttpServer running;

    // halt(), not exit(): exit() would run the SIGTERM shutdown hook and turn
    // every error into status 0.
    private static void fail(String msg) {
        System.err.println("Server.java: " + msg);
        System.err.flush();
        Runtime.getRuntime().halt(2);
    }

    private static int parsePort(String[] args) {
        String raw = System.getenv().getOrDefault("PORT", "8080");
        if (args.length >= 2 && args[0].equals("--port")) {
            raw = args[1];
        }
        try {
            int port = Integer.parseInt(raw);
            if (port < 0 || port > 65535) throw new NumberFormatException();
            return port;
        } catch (NumberFormatException e) {
            fail("invalid port '" + raw + "'");
            return -1;
        }
    }

    private static long delayMs() {
        String raw = System.getenv().getOrDefault("COLDSTART_EXAMPLE_DELAY_MS", "");
        if (raw.isEmpty()) return 0;
        try {
            long ms = Long.parseLong(raw);
            if (ms < 0) throw new NumberFormatException();
            return ms;
        } catch (NumberFormatException e) {
            fail("COLDSTART_EXAMPLE_DELAY_MS must be a non-negative integer, got '" + raw + "'");
            return -1;
        }
    }

    private static void reply(HttpExchange ex, int status, String body) throws IOException {
        byte[] data = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "text/plain");
        ex.getResponseHeaders().set("Connection", "close");
        ex.sendResponseHeaders(status, data.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(data);
        }
    }

    private static void handle(HttpExchange ex) throws IOException {
        String path = ex.getRequestURI().getPath();
        if (!ex.getRequestMethod().equals("GET")) {
            reply(ex, 405, "method not allowed\n");
        } else if (path.equals("/") || path.equals("/health")) {
            reply(ex, 200, "ok\n");
        } else {
            reply(ex, 404, "not found\n");
        }
    }

    public static void main(String[] args) throws Exception {
        // Bind a plain AF_INET socket like the other servers (the JVM would
        // otherwise use an IPv4-mapped AF_INET6 socket, listed in /proc/net/tcp6).
        System.setProperty("java.net.preferIPv4Stack", "true");

        // The JVM turns SIGTERM into shutdown hooks + exit status 143; halting
        // from the hook makes it a clean, prompt exit 0 like the other servers.
        // Stopping the server first takes its dispatcher thread out of native
        // epoll_wait; otherwise HotSpot's VM exit waits ~300 ms for it.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            HttpServer s = running;
            if (s != null) s.stop(0);
            Runtime.getRuntime().halt(0);
        }));

        int port = parsePort(args);
        long delay = delayMs();
        if (delay > 0) Thread.sleep(delay);

        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
        } catch (IOException e) {
            fail("bind 127.0.0.1:" + port + ": " + e.getMessage());
            return;
        }
        server.createContext("/", Server::handle);
        server.start();
        running = server;
        System.out.println("listening on 127.0.0.1:" + server.getAddress().getPort());
        System.out.flush();
    }
}
