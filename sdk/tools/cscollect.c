/*
 * cscollect -- COMMAND [ARGS...]
 *
 * A minimal checkpoint receiver for the SDK agreement test (sdk/test_all.sh).
 * Runs COMMAND with COLDSTART_FD=3 naming the write end of a packet-mode pipe
 * (pipe2 O_DIRECT: one read returns what one write(2) wrote, for writers that
 * inherit the descriptor). Reads CLOCK_MONOTONIC right before the fork and after
 * the pipe reached EOF (every writer, descendants included, closed it) and the
 * command exited.
 *
 * Checks: every read ends on a line boundary (a line written with more than
 * one write(2) shows up as a read ending mid-line); every line is
 * "cs1 <ns> <name>\n" with ns in [before, after].
 * Prints "before NS", then "NS NAME" per line, then "after NS" and a summary on
 * stderr. Exit status: 0 when all holds and COMMAND exited 0, else 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static char *lines;
static size_t lines_len, lines_cap;

int main(int argc, char **argv) {
    int a = 1;
    if (a < argc && strcmp(argv[a], "--") == 0) a++;
    if (a >= argc) {
        fprintf(stderr, "usage: cscollect -- COMMAND [ARGS...]\n");
        return 2;
    }
    int p[2];
    if (pipe2(p, O_DIRECT | O_CLOEXEC) != 0) {
        perror("cscollect: pipe2");
        return 2;
    }
    fflush(stdout);
    uint64_t before = mono_ns();
    pid_t pid = fork();
    if (pid == 0) {
        if (p[1] == 3) fcntl(3, F_SETFD, 0);
        else if (dup2(p[1], 3) != 3) _exit(127);
        setenv("COLDSTART_FD", "3", 1);
        execvp(argv[a], argv + a);
        perror("cscollect: exec");
        _exit(127);
    }
    close(p[1]);
    char buf[65536];
    size_t reads = 0, torn = 0, merged = 0;
    for (;;) {
        ssize_t n = read(p[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        reads++;
        if (buf[n - 1] != '\n') torn++;
        if (memchr(buf, '\n', (size_t)n - 1)) merged++;
        if (lines_len + (size_t)n > lines_cap) {
            lines_cap = (lines_len + (size_t)n) * 2;
            lines = realloc(lines, lines_cap);
        }
        memcpy(lines + lines_len, buf, (size_t)n);
        lines_len += (size_t)n;
    }
    int status;
    waitpid(pid, &status, 0);
    uint64_t after = mono_ns();

    int bad = 0;
    size_t count = 0;
    printf("before %llu\n", (unsigned long long)before);
    for (size_t i = 0; i < lines_len;) {
        char *nl = memchr(lines + i, '\n', lines_len - i);
        size_t end = nl ? (size_t)(nl - lines) : lines_len;
        char *l = lines + i;
        size_t len = end - i;
        size_t k = 4;
        uint64_t ts = 0;
        int ok = nl && len > 5 && memcmp(l, "cs1 ", 4) == 0 && l[4] >= '0' && l[4] <= '9' &&
                 !(l[4] == '0' && l[5] != ' ');
        while (ok && k < len && l[k] >= '0' && l[k] <= '9' && k < 24) ts = ts * 10 + (uint64_t)(l[k++] - '0');
        ok = ok && k < len && l[k] == ' ' && !memchr(l, '\r', len);
        if (!ok) {
            fprintf(stderr, "cscollect: malformed line: %.*s\n", (int)len, l);
            bad++;
        } else if (ts < before || ts > after) {
            fprintf(stderr, "cscollect: timestamp %llu outside [%llu, %llu]: %.*s\n", (unsigned long long)ts,
                    (unsigned long long)before, (unsigned long long)after, (int)len, l);
            bad++;
        } else {
            printf("%.*s\n", (int)(len - 4), l + 4);
        }
        count++;
        i = end + 1;
    }
    printf("after %llu\n", (unsigned long long)after);
    if (torn) {
        fprintf(stderr, "cscollect: %zu read(s) ended mid-line (a line written with more than one write)\n", torn);
        bad++;
    }
    int cmd_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!cmd_ok) fprintf(stderr, "cscollect: command failed (status %d)\n", status);
    fprintf(stderr, "cscollect: %zu lines in %zu reads (%zu reads held several lines), %s\n", count, reads, merged,
            bad || !cmd_ok ? "ERRORS" : "all valid");
    return bad || !cmd_ok ? 1 : 0;
}
