/* coldstart example target: lagprobe -- measures the harness's probe lag.
 * Usage: lagprobe PORT OUTFILE
 * Sleeps COLDSTART_EXAMPLE_DELAY_MS (default 20) ms, binds 127.0.0.1:PORT, and
 * appends two CLOCK_MONOTONIC instants (ns) to OUTFILE:
 *   listen <ns>  taken immediately before listen()     (true ready, HTTP/TCP probes)
 *   log <ns>     taken immediately before write("ready\n") to stdout (true ready, log probe)
 * and, for the first connection it serves (appended after answering it, so the
 * answer is not delayed by the file write):
 *   serve <ns>   right before the first accept() call (its own work after listen is done)
 *   accept <ns>  when accept() returned
 *   arrive <ns>  when the kernel received the request's first segment
 *                (SO_TIMESTAMPNS, moved from CLOCK_REALTIME to CLOCK_MONOTONIC;
 *                absent for a connection that sent nothing, e.g. a tcp probe)
 *   respond <ns> taken immediately before writing the HTTP response
 * so an http probe's lag splits into the target's part (listen -> respond) and
 * the probe's (respond -> detected).
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
    /* Inherited by accepted sockets: the request's arrival instant, taken by the
     * kernel, tells a late client from a target that was late to run. */
    setsockopt(srv, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
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
    long long t_serve = monotonic_ns();
    for (int served = 0;; served++) {
        int c = accept(srv, NULL, NULL);
        if (c < 0) continue;
        long long t_accept = monotonic_ns();
        /* A probe that saw the answer may stop us at once: keep SIGTERM until
         * the first connection's instants are on disk. */
        if (served == 0) sigprocmask(SIG_BLOCK, &term, NULL);
        char buf[2048];
        char ctl[CMSG_SPACE(sizeof(struct timespec))];
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof buf };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                              .msg_controllen = sizeof ctl };
        ssize_t got = recvmsg(c, &msg, 0);   /* one read: requests are tiny */
        long long t_arrive = 0;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); got > 0 && cm; cm = CMSG_NXTHDR(&msg, cm)) {
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
                struct timespec at, rt, mt;
                memcpy(&at, CMSG_DATA(cm), sizeof at);
                clock_gettime(CLOCK_REALTIME, &rt);
                clock_gettime(CLOCK_MONOTONIC, &mt);
                long long ago = ((long long)rt.tv_sec - at.tv_sec) * 1000000000LL + (rt.tv_nsec - at.tv_nsec);
                t_arrive = (long long)mt.tv_sec * 1000000000LL + mt.tv_nsec - ago;
            }
        }
        long long t_respond = monotonic_ns();
        ssize_t w = write(c, resp, sizeof resp - 1);
        (void)w;
        close(c);
        if (served == 0) {
            append_line(outfile, "serve", t_serve);
            append_line(outfile, "accept", t_accept);
            if (t_arrive) append_line(outfile, "arrive", t_arrive);
            append_line(outfile, "respond", t_respond);
            sigprocmask(SIG_UNBLOCK, &term, NULL);
        }
    }
}
