#!/usr/bin/env python3
"""coldstart example target: minimal HTTP server (Python, stdlib http.server).

Used to measure interpreter + stdlib cold start with HTTP readiness.
Identical behaviour to the Node/Go/Java/Rust examples:
  * port: `--port N` (first args) > env PORT > 8080; PORT=0 picks a free port
  * env COLDSTART_EXAMPLE_DELAY_MS: sleep this long BEFORE binding (fake init)
  * binds 127.0.0.1 only, then prints exactly `listening on 127.0.0.1:PORT`
  * GET / and GET /health -> 200 "ok\n"; other GET paths -> 404; other methods -> 405
  * SIGTERM -> exit 0 promptly
"""
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


def fail(msg):
    print(f"server.py: {msg}", file=sys.stderr, flush=True)
    sys.exit(2)


def env_ms(name):
    raw = os.environ.get(name, "")
    if raw == "":
        return 0
    try:
        value = int(raw)
        if value < 0:
            raise ValueError
        return value
    except ValueError:
        fail(f"{name} must be a non-negative integer, got {raw!r}")


def parse_port():
    if len(sys.argv) >= 3 and sys.argv[1] == "--port":
        raw = sys.argv[2]
    else:
        raw = os.environ.get("PORT", "8080")
    try:
        port = int(raw)
        if not 0 <= port <= 65535:
            raise ValueError
        return port
    except ValueError:
        fail(f"invalid port {raw!r}")


class Handler(BaseHTTPRequestHandler):
    def _reply(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path in ("/", "/health"):
            self._reply(200, "ok\n")
        else:
            self._reply(404, "not found\n")

    def _not_allowed(self):
        self._reply(405, "method not allowed\n")

    do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass


def main():
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    port = parse_port()
    delay = env_ms("COLDSTART_EXAMPLE_DELAY_MS")
    if delay:
        time.sleep(delay / 1000)
    try:
        server = HTTPServer(("127.0.0.1", port), Handler)
    except OSError as e:
        fail(f"bind 127.0.0.1:{port}: {e.strerror}")
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
