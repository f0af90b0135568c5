/* coldstart example target: lagprobe -- measures the harness's probe lag.
 * Usage: lagprobe PORT OUTFILE
 * Sleeps COLDSTART_EXAMPLE_DELAY_MS (default 20) ms, binds 127.0.0.1:PORT, and
 * appends two CLOCK_MONOTONIC instants (ns) to OUTFILE:
 *   listen <ns>  taken immediately before listen()     (true ready, HTTP/TCP probes)
 *   log <ns>     taken immediately before write("ready\n") to stdout (true ready, log probe)
 * The harness compares its own "ready" timestamp against these to get probe lag.
 * Then serves minimal HTTP (200 "ok\n" to anything) until SIGTERM (exit 0). */
#include "common.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void on_sigterm(int sig) { (void)sig; _exit(0); }

static void append_line(const char *path, const char *tag, long long ns) {
    char line[64];
    int n = snprintf(line, sizeof line, "%s %lld\n", tag, ns);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0 || write(fd, line, (size_t)n) != n) { perror(path); exit(1); }
    close(fd);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PORT OUTFILE\n", argv[0]);
        return 2;
    }
    char *end;
    long port = strtol(argv[1], &end, 10);
    if (*end != '\0' || port < 1 || port > 65535) {
        fprintf(stderr, "lagprobe: invalid port '%s'\n", argv[1]);
        return 2;
    }
    const char *outfile = argv[2];
    signal(SIGTERM, on_sigterm);
    signal(SIGPIPE, SIG_IGN);
    /* The harness may stop us the instant it sees readiness: hold SIGTERM until
     * both instants are on disk, or the lag figure would lose runs. */
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, NULL);

    sleep_ms(env_delay_ms(20));

    int srv = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (srv < 0) { perror("socket"); return 1; }
    int one = 1;
    setsockopt(srv, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port) };
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(srv, (struct sockaddr *)&addr, sizeof addr) < 0) { perror("bind"); return 1; }

    long long t_listen = monotonic_ns();
    if (listen(srv, 128) < 0) { perror("listen"); return 1; }
    append_line(outfile, "listen", t_listen);

    long long t_log = monotonic_ns();
    if (write(STDOUT_FILENO, "ready\n", 6) != 6) { /* stdout closed: keep serving */ }
    append_line(outfile, "log", t_log);
    sigprocmask(SIG_UNBLOCK, &term, NULL);

    static const char resp[] =
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n";
    for (;;) {
        int c = accept(srv, NULL, NULL);
        if (c < 0) continue;
        char buf[2048];
        ssize_t got = read(c, buf, sizeof buf);   /* one read: requests are tiny */
        (void)got;
        ssize_t w = write(c, resp, sizeof resp - 1);
        (void)w;
        close(c);
    }
}
