/* coldstart example target: noop -- the harness floor.
 * Does nothing and exits 0. Built static (-static -O2) so there is no dynamic
 * loader work: what you measure is the harness's own spawn/wait overhead. */
int main(void) { return 0; }
