/* spawn_loop -- harness-floor reference for coldstart.
 * Usage: spawn_loop N PROGRAM [ARGS...]
 * Runs PROGRAM (a path; no $PATH lookup) N times with posix_spawn + waitpid.
 * Each run is timed with CLOCK_MONOTONIC taken immediately before posix_spawn
 * and immediately after waitpid returns; prints one line per run: elapsed ns.
 * The child's stdout/stderr go to /dev/null (stdin is inherited).
 * A child that fails (non-zero exit or signal) is reported on stderr and makes
 * spawn_loop exit 1 at the end; its time is still printed. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s N PROGRAM [ARGS...]\n", argv[0]);
        return 2;
    }
    char *end;
    long n = strtol(argv[1], &end, 10);
    if (*end != '\0' || n < 1) {
        fprintf(stderr, "spawn_loop: N must be a positive integer, got '%s'\n", argv[1]);
        return 2;
    }

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);

    int failed = 0;
    for (long i = 0; i < n; i++) {
        pid_t pid;
        int status;
        long long t0 = monotonic_ns();
        int err = posix_spawn(&pid, argv[2], &fa, NULL, &argv[2], environ);
        if (err != 0) {
            fprintf(stderr, "spawn_loop: posix_spawn %s: %s\n", argv[2], strerror(err));
            return 1;
        }
        while (waitpid(pid, &status, 0) < 0) {
            if (errno != EINTR) { perror("waitpid"); return 1; }
        }
        long long t1 = monotonic_ns();
        printf("%lld\n", t1 - t0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "spawn_loop: run %ld: child status 0x%x\n", i, status);
            failed = 1;
        }
    }
    posix_spawn_file_actions_destroy(&fa);
    return failed;
}
