/*
 * Tests for the C checkpoint SDK against sdk/vectors/checkpoint.json.
 * Run with `make -C sdk/c test`; the last line is "N passed, M failed".
 */
#define _GNU_SOURCE
#include "../coldstart_checkpoint.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int passed, failed, skipped;
static size_t max_name;

static void result(const char *group, const char *id, const char *err) {
    if (err) {
        failed++;
        printf("FAIL %s/%s: %s\n", group, id, err);
    } else {
        passed++;
        printf("ok   %s/%s\n", group, id);
    }
}

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) exit(2);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Concatenate name/expect segments: strings (text, or hex when HEX) and {"repeat", "times"}. */
static char *segments(const jval *arr, int hex, size_t *out_len) {
    size_t len = 0, cap = 64;
    char *buf = malloc(cap);
    for (size_t k = 0; k < arr->len; k++) {
        const jval *seg = &arr->items[k];
        const jval *s = seg;
        size_t times = 1;
        if (seg->type == J_OBJ) {
            s = json_get(seg, "repeat");
            times = (size_t)json_get(seg, "times")->num;
        }
        char piece[256];
        size_t plen = 0;
        if (hex) {
            for (size_t h = 0; h + 1 < s->len; h += 2) {
                unsigned v;
                sscanf(s->str + h, "%2x", &v);
                piece[plen++] = (char)v;
            }
        } else {
            if (s->len > sizeof piece) exit(2);
            memcpy(piece, s->str, s->len);
            plen = s->len;
        }
        while (times--) {
            if (len + plen + 1 > cap) buf = realloc(buf, cap = (len + plen + 1) * 2);
            memcpy(buf + len, piece, plen);
            len += plen;
        }
    }
    buf[len] = '\0';
    *out_len = len;
    return buf;
}

/* A packet-mode pipe: each read returns exactly what one write(2) wrote. Read end non-blocking. */
static void packet_pipe(int p[2]) {
    if (pipe2(p, O_DIRECT) != 0) {
        perror("pipe2");
        exit(2);
    }
    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
}

static void use_fd_env(const char *value) {
    if (value) setenv("COLDSTART_FD", value, 1);
    else unsetenv("COLDSTART_FD");
    coldstart_checkpoint_reset_for_tests();
}

static void use_fd(int fd) {
    char v[16];
    snprintf(v, sizeof v, "%d", fd);
    use_fd_env(v);
}

/* Check that the next packet on R is exactly one line with name EXPECT and a
 * timestamp in [T0, T1], and that nothing follows. Returns NULL or an error. */
static const char *expect_line(int r, const char *expect, size_t elen, uint64_t t0, uint64_t t1) {
    static char err[256];
    char buf[8192];
    ssize_t n = read(r, buf, sizeof buf);
    if (n <= 0) return "no line written";
    if (n < 7 || memcmp(buf, "cs1 ", 4) != 0) return "line does not start with 'cs1 '";
    size_t i = 4;
    uint64_t ts = 0;
    size_t digits = 0;
    while (i < (size_t)n && buf[i] >= '0' && buf[i] <= '9') {
        ts = ts * 10 + (uint64_t)(buf[i++] - '0');
        digits++;
    }
    if (digits == 0 || digits > 20 || (digits > 1 && buf[4] == '0')) return "bad timestamp";
    if (buf[i++] != ' ') return "no space after timestamp";
    if ((size_t)n - i != elen + 1 || memcmp(buf + i, expect, elen) != 0 || buf[n - 1] != '\n') {
        snprintf(err, sizeof err, "name mismatch: got %zd bytes after timestamp, want %zu", (ssize_t)((size_t)n - i),
                 elen + 1);
        return err;
    }
    if (ts < t0 || ts > t1) {
        snprintf(err, sizeof err, "timestamp %llu outside CLOCK_MONOTONIC [%llu, %llu]", (unsigned long long)ts,
                 (unsigned long long)t0, (unsigned long long)t1);
        return err;
    }
    if (read(r, buf, sizeof buf) > 0) return "more than one write";
    return NULL;
}

static const char *expect_nothing(int r) {
    char buf[8192];
    ssize_t n = read(r, buf, sizeof buf);
    return n > 0 ? "unexpected write" : NULL;
}

static int has_cap(const jval *c, const char *const *caps) {
    const jval *req = json_get(c, "requires");
    if (!req) return 1;
    for (size_t k = 0; k < req->len; k++) {
        int ok = 0;
        for (const char *const *cap = caps; *cap; cap++) ok |= strcmp(req->items[k].str, *cap) == 0;
        if (!ok) return 0;
    }
    return 1;
}

static void test_names(const jval *vectors) {
    static const char *const caps[] = {"bytes", "nul", NULL};
    const jval *names = json_get(vectors, "names");
    for (size_t k = 0; k < names->len; k++) {
        const jval *c = &names->items[k];
        const char *id = json_get(c, "id")->str;
        if (!has_cap(c, caps)) {
            skipped++;
            continue;
        }
        size_t nlen, elen;
        const jval *hex = json_get(c, "name_hex");
        char *name = hex ? segments(hex, 1, &nlen) : segments(json_get(c, "name"), 0, &nlen);
        char *expect = segments(json_get(c, "expect"), 0, &elen);
        int p[2];
        packet_pipe(p);
        use_fd(p[1]);
        uint64_t t0 = mono_ns();
        if (memchr(name, '\0', nlen)) coldstart_checkpoint_n(name, nlen);
        else coldstart_checkpoint(name);
        uint64_t t1 = mono_ns();
        result("names", id, expect_line(p[0], expect, elen, t0, t1));
        close(p[0]);
        close(p[1]);
        free(name);
        free(expect);
    }
}

static char *expand(const char *tmpl, int fd, int closed_fd, int read_fd) {
    static char out[256];
    size_t o = 0;
    for (const char *s = tmpl; *s && o < sizeof out - 16;) {
        int v = -1;
        size_t skip = 0;
        if (strncmp(s, "{fd}", 4) == 0) v = fd, skip = 4;
        else if (strncmp(s, "{closed_fd}", 11) == 0) v = closed_fd, skip = 11;
        else if (strncmp(s, "{read_fd}", 9) == 0) v = read_fd, skip = 9;
        if (skip) {
            o += (size_t)snprintf(out + o, sizeof out - o, "%d", v);
            s += skip;
        } else {
            out[o++] = *s++;
        }
    }
    out[o] = '\0';
    return out;
}

static void test_env(const jval *vectors) {
    const jval *env = json_get(vectors, "env");
    for (size_t k = 0; k < env->len; k++) {
        const jval *c = &env->items[k];
        const char *id = json_get(c, "id")->str;
        const jval *value = json_get(c, "value");
        int want_line = strcmp(json_get(c, "expect")->str, "line") == 0;
        int p[2];
        packet_pipe(p);
        int closed_fd = open("/dev/null", O_RDONLY);
        close(closed_fd);
        use_fd_env(value->type == J_NULL ? NULL : expand(value->str, p[1], closed_fd, p[0]));
        errno = 4242;
        uint64_t t0 = mono_ns();
        coldstart_checkpoint("env-case");
        uint64_t t1 = mono_ns();
        const char *err = errno != 4242 ? "errno changed" : NULL;
        if (!err) err = want_line ? expect_line(p[0], "env-case", 8, t0, t1) : expect_nothing(p[0]);
        result("env", id, err);
        close(p[0]);
        close(p[1]);
    }
}

static const char *reader_gone_child(void) {
    signal(SIGPIPE, SIG_DFL);
    int p[2];
    if (pipe(p) != 0) return "pipe";
    close(p[0]);
    use_fd(p[1]);
    errno = 0;
    coldstart_checkpoint("into-a-broken-pipe");
    if (errno != 0) return "errno changed";
    int s[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0) return "socketpair";
    close(s[0]);
    use_fd(s[1]);
    coldstart_checkpoint("into-a-broken-socket");
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE)) return "SIGPIPE left pending";
    return NULL;
}

static void test_lifecycle(const jval *vectors) {
    const jval *cases = json_get(vectors, "lifecycle");
    for (size_t k = 0; k < cases->len; k++) {
        const char *id = json_get(&cases->items[k], "id")->str;
        const char *err = NULL;
        int p[2], q[2];
        uint64_t t0, t1;
        if (strcmp(id, "closed-after-first-use") == 0) {
            packet_pipe(p);
            use_fd(p[1]);
            t0 = mono_ns();
            coldstart_checkpoint("first");
            t1 = mono_ns();
            err = expect_line(p[0], "first", 5, t0, t1);
            close(p[1]);
            errno = 77;
            coldstart_checkpoint("after-close");
            if (!err && errno != 77) err = "errno changed";
            close(p[0]);
        } else if (strcmp(id, "fd-number-reused") == 0) {
            packet_pipe(p);
            use_fd(p[1]);
            t0 = mono_ns();
            coldstart_checkpoint("first");
            t1 = mono_ns();
            err = expect_line(p[0], "first", 5, t0, t1);
            packet_pipe(q);
            dup2(q[1], p[1]); /* the number p[1] now names another pipe */
            coldstart_checkpoint("must-not-arrive");
            if (!err) err = expect_nothing(q[0]);
            close(p[0]);
            close(p[1]);
            close(q[0]);
            close(q[1]);
        } else if (strcmp(id, "reader-gone") == 0) {
            fflush(stdout);
            pid_t pid = fork();
            if (pid == 0) {
                const char *e = reader_gone_child();
                if (e) fprintf(stderr, "reader-gone child: %s\n", e);
                _exit(e ? 1 : 0);
            }
            int status;
            waitpid(pid, &status, 0);
            if (WIFSIGNALED(status)) err = "killed by a signal";
            else if (WEXITSTATUS(status) != 0) err = "child reported an error";
        } else if (strcmp(id, "env-read-once") == 0) {
            packet_pipe(p);
            use_fd(p[1]);
            coldstart_checkpoint("first");
            err = expect_line(p[0], "first", 5, 0, UINT64_MAX);
            unsetenv("COLDSTART_FD");
            t0 = mono_ns();
            coldstart_checkpoint("after-unset");
            t1 = mono_ns();
            if (!err) err = expect_line(p[0], "after-unset", 11, t0, t1);
            setenv("COLDSTART_FD", "junk", 1);
            t0 = mono_ns();
            coldstart_checkpoint("after-change");
            t1 = mono_ns();
            if (!err) err = expect_line(p[0], "after-change", 12, t0, t1);
            close(p[0]);
            close(p[1]);
        } else {
            err = "lifecycle case not implemented by the C tests";
        }
        result("lifecycle", id, err);
    }
}

/* ---- C-specific tests -------------------------------------------------- */

#define THREADS 4
#define PER_THREAD 250

static void *emit_thread(void *arg) {
    char name[64];
    for (int i = 0; i < PER_THREAD; i++) {
        snprintf(name, sizeof name, "t%ld-%d-padding-padding-padding-padding", (long)(intptr_t)arg, i);
        coldstart_checkpoint(name);
    }
    return NULL;
}

static void test_threads(void) {
    int p[2];
    if (pipe2(p, O_DIRECT) != 0) exit(2);
    use_fd(p[1]);
    coldstart_checkpoint("warm");
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, emit_thread, (void *)(intptr_t)t);
    const char *err = NULL;
    char buf[8192];
    int lines = 0;
    int wanted = THREADS * PER_THREAD + 1;
    while (lines < wanted) {
        ssize_t n = read(p[0], buf, sizeof buf);
        if (n <= 0) {
            err = "read failed";
            break;
        }
        if (memcmp(buf, "cs1 ", 4) != 0 || buf[n - 1] != '\n' || memchr(buf, '\n', (size_t)n - 1)) err = "torn line";
        lines++;
    }
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    result("c", "threads-one-write-per-line", err);
    close(p[0]);
    close(p[1]);
}

static void test_socket_and_file(void) {
    int s[2];
    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, s);
    use_fd(s[1]);
    uint64_t t0 = mono_ns();
    coldstart_checkpoint("via-socket");
    uint64_t t1 = mono_ns();
    fcntl(s[0], F_SETFL, O_NONBLOCK);
    result("c", "socket-fd", expect_line(s[0], "via-socket", 10, t0, t1));
    close(s[0]);
    close(s[1]);

    char path[] = "/tmp/cs-c-test-XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    use_fd(fd);
    t0 = mono_ns();
    coldstart_checkpoint("via-file");
    t1 = mono_ns();
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    int r = open(proc, O_RDONLY); /* a second description, reading from offset 0 */
    result("c", "regular-file-fd", expect_line(r, "via-file", 8, t0, t1));
    close(r);
    close(fd);

    int p[2];
    packet_pipe(p);
    use_fd(p[1]);
    coldstart_checkpoint(NULL);
    result("c", "null-name-is-empty", expect_line(p[0], "", 0, 0, UINT64_MAX));
    close(p[0]);
    close(p[1]);
}

static void test_noop_fast(void) {
    use_fd_env(NULL);
    coldstart_checkpoint("first-call-reads-env");
    uint64_t t0 = mono_ns();
    for (int i = 0; i < 10000000; i++) coldstart_checkpoint("noop");
    uint64_t per = (mono_ns() - t0) / 10000000;
    char msg[64];
    snprintf(msg, sizeof msg, "%llu ns per disabled call", (unsigned long long)per);
    result("c", "disabled-call-is-cheap", per < 50 ? NULL : msg);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "../vectors/checkpoint.json";
    jval vectors = json_parse(read_file(path));
    if (strcmp(json_get(&vectors, "protocol")->str, "cs1") != 0) return 2;
    max_name = (size_t)json_get(&vectors, "max_name_bytes")->num;
    if (max_name != COLDSTART_MAX_NAME_BYTES) {
        printf("FAIL max_name_bytes: vectors say %zu, header says %d\n", max_name, COLDSTART_MAX_NAME_BYTES);
        failed++;
    }
    test_names(&vectors);
    test_env(&vectors);
    test_lifecycle(&vectors);
    test_threads();
    test_socket_and_file();
    test_noop_fast();
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
