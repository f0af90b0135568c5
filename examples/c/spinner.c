/* coldstart example target: spinner -- a known init cost spent computing.
 * Busy-waits COLDSTART_EXAMPLE_DELAY_MS milliseconds of wall time (default 0)
 * on the CPU, making no syscall (clock_gettime is the vDSO), then exits 0:
 * the on-CPU twin of sleeper.c, whose delay is spent off CPU. */
#include "common.h"

int main(void) {
    long long end = monotonic_ns() + env_delay_ms(0) * 1000000LL;
    volatile unsigned long spins = 0;
    while (monotonic_ns() < end) spins++;
    return 0;
}
