/*
 * coldstart checkpoint SDK for C. See coldstart_checkpoint.h and
 * sdk/vectors/README.md for the protocol.
 *
 * Cost when COLDSTART_FD is unset or unusable: the first call reads the
 * environment once (getenv, no allocation) and caches "disabled"; every later
 * call is one atomic load and one compare. No call ever allocates: the line is
 * built in a stack buffer.
 */
#define _GNU_SOURCE
#include "coldstart_checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
    CS_UNINIT = -2,   /* COLDSTART_FD not read yet */
    CS_DISABLED = -1, /* unset, invalid, not writable, or no longer the same file */
    CS_INITIALIZING = -3,
};

static int cs_state = CS_UNINIT; /* accessed atomically; >= 0 is the fd */
static dev_t cs_dev;             /* identity of the fd at first use */
static ino_t cs_ino;

/* Strict decimal: 1..10 ASCII digits, value <= INT32_MAX. */
static int cs_parse_fd(const char *s) {
    if (s == NULL || *s == '\0') return -1;
    long long v = 0;
    int digits = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (*s - '0');
        if (v > 2147483647LL) return -1;
        digits++;
    }
    return digits > 0 ? (int)v : -1;
}

static int cs_init(void) {
    int expected = CS_UNINIT;
    if (!__atomic_compare_exchange_n(&cs_state, &expected, CS_INITIALIZING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        /* Another thread is initialising (a few syscalls): wait for its result. */
        while ((expected = __atomic_load_n(&cs_state, __ATOMIC_ACQUIRE)) == CS_INITIALIZING) sched_yield();
        return expected;
    }
    int result = CS_DISABLED;
    int fd = cs_parse_fd(getenv("COLDSTART_FD"));
    if (fd >= 0) {
        int fl = fcntl(fd, F_GETFL);
        struct stat st;
        if (fl != -1 && ((fl & O_ACCMODE) == O_WRONLY || (fl & O_ACCMODE) == O_RDWR) && fstat(fd, &st) == 0) {
            cs_dev = st.st_dev;
            cs_ino = st.st_ino;
            result = fd;
        }
    }
    __atomic_store_n(&cs_state, result, __ATOMIC_RELEASE);
    return result;
}

/* Append the UTF-8 encoding of U+FFFD if it fits. */
static size_t cs_put_fffd(char *dst, size_t at, size_t cap) {
    if (at + 3 > cap) return (size_t)-1;
    dst[at] = (char)0xEF;
    dst[at + 1] = (char)0xBF;
    dst[at + 2] = (char)0xBD;
    return at + 3;
}

/*
 * Copy NAME into DST (at most CAP bytes) following the protocol's name rules:
 * '\n' and '\r' become ' '; ill-formed UTF-8 becomes U+FFFD, one per maximal
 * subpart (the Unicode "best practice", as Python's errors="replace" and
 * Rust's from_utf8_lossy); a character that does not fit ends the name.
 */
static size_t cs_copy_name(char *dst, size_t cap, const unsigned char *s, size_t len) {
    size_t out = 0, i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            if (out + 1 > cap) break;
            dst[out++] = (c == '\n' || c == '\r') ? ' ' : (char)c;
            i++;
            continue;
        }
        size_t need;
        unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (c >= 0xC2 && c <= 0xDF) need = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            need = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            need = 0; /* 0x80..0xC1, 0xF5..0xFF: never a lead byte */
        }
        size_t got = 1; /* bytes of a well-formed prefix, lead included */
        if (need) {
            while (got < need && i + got < len) {
                unsigned char b = s[i + got];
                unsigned char l = got == 1 ? lo : 0x80, h = got == 1 ? hi : 0xBF;
                if (b < l || b > h) break;
                got++;
            }
        }
        if (need && got == need) {
            if (out + need > cap) break;
            memcpy(dst + out, s + i, need);
            out += need;
        } else {
            size_t next = cs_put_fffd(dst, out, cap);
            if (next == (size_t)-1) break;
            out = next;
        }
        i += got;
    }
    return out;
}

static size_t cs_put_u64(char *dst, uint64_t v) {
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t k = 0; k < n; k++) dst[k] = tmp[n - 1 - k];
    return n;
}

/* write(2) on a pipe without letting SIGPIPE reach the process. */
static void cs_write_pipe(int fd, const char *buf, size_t n) {
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    if (pthread_sigmask(SIG_BLOCK, &pipe_set, &old) != 0) return;
    int was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    ssize_t r;
    do r = write(fd, buf, n);
    while (r < 0 && errno == EINTR);
    if (r < 0 && errno == EPIPE && !was_pending) {
        /* Consume the SIGPIPE that this write raised, so unblocking does not deliver it. */
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void coldstart_checkpoint_n(const char *name, size_t len) {
    int fd = __atomic_load_n(&cs_state, __ATOMIC_ACQUIRE);
    if (fd == CS_DISABLED) return; /* the no-op path */
    int saved_errno = errno;
    if (fd < 0 && (fd = cs_init()) < 0) goto out;

    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) goto out;
    uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;

    char line[4 + 20 + 1 + COLDSTART_MAX_NAME_BYTES + 1];
    size_t n = 0;
    memcpy(line, "cs1 ", 4);
    n = 4;
    n += cs_put_u64(line + n, ns);
    line[n++] = ' ';
    if (name == NULL) len = 0;
    n += cs_copy_name(line + n, COLDSTART_MAX_NAME_BYTES, (const unsigned char *)name, len);
    line[n++] = '\n';

    /* The fd must still be the file it was at first use: an app may have closed
     * it and reused the number, and its data must never receive our line. */
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_dev != cs_dev || st.st_ino != cs_ino) {
        __atomic_store_n(&cs_state, CS_DISABLED, __ATOMIC_RELEASE);
        goto out;
    }
    if (S_ISSOCK(st.st_mode)) {
        ssize_t r;
        do r = send(fd, line, n, MSG_NOSIGNAL);
        while (r < 0 && errno == EINTR);
    } else if (S_ISFIFO(st.st_mode)) {
        cs_write_pipe(fd, line, n);
    } else {
        ssize_t r;
        do r = write(fd, line, n);
        while (r < 0 && errno == EINTR);
    }
out:
    errno = saved_errno;
}

void coldstart_checkpoint(const char *name) {
    coldstart_checkpoint_n(name, name ? strlen(name) : 0);
}

void coldstart_checkpoint_reset_for_tests(void) {
    __atomic_store_n(&cs_state, CS_UNINIT, __ATOMIC_RELEASE);
}
