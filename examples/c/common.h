/* Small helpers shared by the coldstart C example targets. */
#ifndef COLDSTART_EXAMPLE_COMMON_H
#define COLDSTART_EXAMPLE_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* COLDSTART_EXAMPLE_DELAY_MS as milliseconds; `dflt` when unset/empty, exit 2 if invalid. */
static inline long env_delay_ms(long dflt) {
    const char *raw = getenv("COLDSTART_EXAMPLE_DELAY_MS");
    if (raw == NULL || *raw == '\0') return dflt;
    char *end;
    errno = 0;
    long ms = strtol(raw, &end, 10);
    if (errno != 0 || *end != '\0' || ms < 0) {
        fprintf(stderr, "COLDSTART_EXAMPLE_DELAY_MS must be a non-negative integer, got '%s'\n", raw);
        exit(2);
    }
    return ms;
}

/* Sleep `ms` milliseconds, resuming after signal interruptions. */
static inline void sleep_ms(long ms) {
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

static inline long long monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
