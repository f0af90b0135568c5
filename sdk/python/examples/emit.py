"""emit.py PREFIX COUNT: checkpoints PREFIX:begin, PREFIX:0:café .. PREFIX:COUNT-1:café,
PREFIX:end (used by sdk/test_all.sh)."""

import sys

from coldstart_checkpoint import checkpoint

prefix, count = sys.argv[1], int(sys.argv[2])
checkpoint(f"{prefix}:begin")
for i in range(count):
    checkpoint(f"{prefix}:{i}:café")
checkpoint(f"{prefix}:end")
