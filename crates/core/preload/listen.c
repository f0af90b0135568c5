/* coldstart listen shim: loaded with LD_PRELOAD by `coldstart bench --ready listen`.
 * When listen(2) succeeds, writes one checkpoint line "cs1 <monotonic_ns> @listen\n"
 * to the fd named by COLDSTART_FD (the same protocol as the SDKs), so the run is
 * ready at the instant the socket started accepting, with no polling.
 * The instant is taken right after the real listen returns: from then on the
 * kernel completes connections. Errors are swallowed; errno is preserved. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int (*listen_fn)(int, int);

static int checkpoint_fd(void) {
    const char *s = getenv("COLDSTART_FD");
    if (s == NULL || *s == '\0') return -1;
    char *end;
    long fd = strtol(s, &end, 10);
    if (*end != '\0' || fd < 0 || fd > 1 << 30) return -1;
    return (int)fd;
}

int listen(int sockfd, int backlog) {
    static listen_fn real;
    if (real == NULL) real = (listen_fn)dlsym(RTLD_NEXT, "listen");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    int r = real(sockfd, backlog);
    if (r != 0) return r;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int saved = errno;
    int fd = checkpoint_fd();
    if (fd >= 0) {
        char line[64];
        int n = snprintf(line, sizeof line, "cs1 %llu @listen\n",
                         (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec);
        /* A reader that went away must not kill the app with SIGPIPE. */
        sigset_t pipe_set, old;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        ssize_t w = write(fd, line, (size_t)n);
        (void)w;
        struct timespec zero = {0, 0};
        if (sigtimedwait(&pipe_set, NULL, &zero) < 0) { /* no SIGPIPE was raised */ }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    errno = saved;
    return r;
}
