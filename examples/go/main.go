// coldstart example target: minimal HTTP server (Go, net/http, no deps).
//
// Used to measure a compiled, GC'd runtime's cold start with HTTP readiness.
// Identical behaviour to the Python/Node/Java/Rust examples:
//   - port: `--port N` (first args) > env PORT > 8080; PORT=0 picks a free port
//   - env COLDSTART_EXAMPLE_DELAY_MS: sleep this long BEFORE binding (fake init)
//   - binds 127.0.0.1 only, then prints exactly `listening on 127.0.0.1:PORT`
//   - GET / and GET /health -> 200 "ok\n"; other GET paths -> 404; other methods -> 405
//   - SIGTERM -> exit 0 promptly
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "go-server: "+format+"\n", args...)
	os.Exit(2)
}

func parsePort() int {
	raw := os.Getenv("PORT")
	if raw == "" {
		raw = "8080"
	}
	if len(os.Args) >= 3 && os.Args[1] == "--port" {
		raw = os.Args[2]
	}
	port, err := strconv.ParseUint(raw, 10, 16)
	if err != nil {
		fail("invalid port %q", raw)
	}
	return int(port)
}

func delayMs() int {
	raw := os.Getenv("COLDSTART_EXAMPLE_DELAY_MS")
	if raw == "" {
		return 0
	}
	ms, err := strconv.ParseUint(raw, 10, 31)
	if err != nil {
		fail("COLDSTART_EXAMPLE_DELAY_MS must be a non-negative integer, got %q", raw)
	}
	return int(ms)
}

func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Connection", "close")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func handler(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method != http.MethodGet:
		reply(w, http.StatusMethodNotAllowed, "method not allowed\n")
	case r.URL.Path == "/" || r.URL.Path == "/health":
		reply(w, http.StatusOK, "ok\n")
	default:
		reply(w, http.StatusNotFound, "not found\n")
	}
}

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		<-sigs
		os.Exit(0)
	}()

	port := parsePort()
	if ms := delayMs(); ms > 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		fail("%v", err)
	}
	// os.Stdout is unbuffered in Go: the line is written with one write(2).
	fmt.Printf("listening on 127.0.0.1:%d\n", ln.Addr().(*net.TCPAddr).Port)
	if err := http.Serve(ln, http.HandlerFunc(handler)); err != nil {
		fail("%v", err)
	}
}
