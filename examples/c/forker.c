/* coldstart example target: forker -- a server-ish process tree.
 * Forks 3 worker processes (which sleep forever), then starts 2 pthreads in
 * the parent, then writes `ready` to stdout and sleeps until SIGTERM (exit 0).
 * The workers are deliberately NOT reaped or signalled by the parent: the
 * harness must count them (4 processes, 3 threads in the parent) and kill
 * the whole tree itself.
 * Env COLDSTART_EXAMPLE_DELAY_MS (default 0): init delay before forking. */
#include "common.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#define WORKERS 3
#define THREADS 2

static void on_sigterm(int sig) { (void)sig; _exit(0); }

static void *idle_thread(void *arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

int main(void) {
    signal(SIGTERM, on_sigterm);   /* inherited by the workers: they exit 0 on SIGTERM too */
    sleep_ms(env_delay_ms(0));

    for (int i = 0; i < WORKERS; i++) {
        pid_t pid = fork();
        if (pid < 0) { perror("fork"); return 1; }
        if (pid == 0) { for (;;) pause(); }   /* worker */
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_t t;
        int err = pthread_create(&t, NULL, idle_thread, NULL);
        if (err != 0) { fprintf(stderr, "pthread_create failed: %d\n", err); return 1; }
        pthread_detach(t);
    }

    if (write(STDOUT_FILENO, "ready\n", 6) != 6) { /* ignore: stdout may be closed */ }
    for (;;) pause();
}
