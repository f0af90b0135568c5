/* coldstart example target: sleeper -- a known, injected init delay.
 * Sleeps COLDSTART_EXAMPLE_DELAY_MS milliseconds (default 0) with nanosleep,
 * then exits 0. With exit readiness, measured time ~= delay + spawn floor,
 * which lets the harness check its own accuracy.
 * COLDSTART_EXAMPLE_DELAY_US sleeps microseconds instead (bench/aa.py injects
 * shifts with it). Give both variants a non-zero sleep: then both pay the same
 * distribution of wake-up overshoot and differ by exactly the difference of their
 * delays (a busy-wait would not: on a loaded machine a longer spin is preempted
 * more often). */
#include "common.h"

int main(void) {
    const char *us = getenv("COLDSTART_EXAMPLE_DELAY_US");
    if (us != NULL && *us != '\0') {
        char *end;
        long v = strtol(us, &end, 10);
        if (*end != '\0' || v < 0) {
            fprintf(stderr, "COLDSTART_EXAMPLE_DELAY_US must be a non-negative integer, got '%s'\n", us);
            return 2;
        }
        struct timespec ts = { .tv_sec = v / 1000000, .tv_nsec = (v % 1000000) * 1000L };
        while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
        return 0;
    }
    sleep_ms(env_delay_ms(0));
    return 0;
}
