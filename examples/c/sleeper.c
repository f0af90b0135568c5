/* coldstart example target: sleeper -- a known, injected init delay.
 * Sleeps COLDSTART_EXAMPLE_DELAY_MS milliseconds (default 0) with nanosleep,
 * then exits 0. With exit readiness, measured time ~= delay + spawn floor,
 * which lets the harness check its own accuracy. */
#include "common.h"

int main(void) {
    sleep_ms(env_delay_ms(0));
    return 0;
}
