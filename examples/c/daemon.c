/* coldstart example target: daemon -- classic double-forking daemon.
 * The launched process exits 0 at once; a grandchild, detached in its own
 * session with stdio on /dev/null, sleeps forever. Used to check that the
 * harness notices and cleans up processes left behind.
 * Env COLDSTART_EXAMPLE_DAEMON_READY_FILE (optional): once running, the
 * grandchild creates this file (atomically, via rename) containing its pid.
 * The grandchild puts stdio on /dev/null and closes every other inherited fd,
 * so it holds none of the launcher's pipes: only process tracking finds it. */
#define _GNU_SOURCE               /* close_range */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_ready_file(const char *path) {
    char tmp[PATH_MAX + 32], pid[32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return;
    if (write(fd, pid, (size_t)n) != n) { close(fd); unlink(tmp); return; }
    close(fd);
    if (rename(tmp, path) != 0) unlink(tmp);
}

int main(void) {
    /* Resolve the ready file to an absolute path before chdir("/"). */
    char ready[PATH_MAX] = "";
    const char *env = getenv("COLDSTART_EXAMPLE_DAEMON_READY_FILE");
    if (env != NULL && *env != '\0') {
        char cwd[PATH_MAX] = "";
        if (env[0] != '/' && getcwd(cwd, sizeof cwd) == NULL) { perror("getcwd"); return 1; }
        int n = snprintf(ready, sizeof ready, "%s%s%s", cwd, cwd[0] ? "/" : "", env);
        if (n < 0 || (size_t)n >= sizeof ready) {
            fprintf(stderr, "daemon: COLDSTART_EXAMPLE_DAEMON_READY_FILE path too long\n");
            return 1;
        }
    }

    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 1; }
    if (pid > 0) _exit(0);                 /* original process: done at once */

    if (setsid() < 0) _exit(1);            /* first child: new session, no tty */
    pid = fork();
    if (pid < 0) _exit(1);
    if (pid > 0) _exit(0);                 /* first child exits; grandchild is orphaned */

    /* grandchild: the daemon proper */
    umask(022);
    if (chdir("/") != 0) _exit(1);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDOUT_FILENO);
        dup2(devnull, STDERR_FILENO);
    }
    close_range(3, ~0U, 0);                /* drop inherited fds (e.g. the launcher's pipes) */
    if (ready[0] != '\0') write_ready_file(ready);
    for (;;) pause();
}
