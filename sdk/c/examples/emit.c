/* emit PREFIX COUNT: checkpoints PREFIX:begin, PREFIX:0 .. PREFIX:COUNT-1, PREFIX:end
 * (used by sdk/test_all.sh; each name carries a non-ASCII tail to check encoding). */
#include "../coldstart_checkpoint.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: emit PREFIX COUNT\n");
        return 2;
    }
    char name[256];
    snprintf(name, sizeof name, "%s:begin", argv[1]);
    coldstart_checkpoint(name);
    for (int i = 0, n = atoi(argv[2]); i < n; i++) {
        snprintf(name, sizeof name, "%s:%d:caf\xc3\xa9", argv[1], i);
        coldstart_checkpoint(name);
    }
    snprintf(name, sizeof name, "%s:end", argv[1]);
    coldstart_checkpoint(name);
    return 0;
}
