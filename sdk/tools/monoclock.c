/* monoclock: print CLOCK_MONOTONIC in nanoseconds (the clock of coldstart and of
 * every checkpoint SDK). SDK tests bracket a checkpoint between two runs of it to
 * check that the language's clock is this one. */
#include <stdio.h>
#include <time.h>

int main(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 1;
    printf("%llu\n", (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec);
    return 0;
}
