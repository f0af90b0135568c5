#!/usr/bin/env python3
"""What placing a run in limiting cgroups costs: `coldstart bench --ready exit` of the
static no-op with and without limits (default `--cpus 2`, a quota the no-op never
reaches, so only the placement differs), blocks alternating so drift hits both.

Two figures per block:
  ready     the median spawn -> exit (the placement's kernel wait is taken out of
            time zero, so this should not move)
  per run   the whole `coldstart bench` wall time / runs: what a run costs the user,
            with the cgroups' mkdir, control-file writes, placement and rmdir

Usage: bench/limits_cost.py [BINARY] [--limits '--cpus 2'] [--blocks 6] [--runs 200]
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOOP = os.path.join(ROOT, "target", "examples", "noop")


def block(binary, runs, limits):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        start = time.monotonic()
        subprocess.run([binary, "bench", "-q", "--no-store", "-w", "0", "--runs", str(runs), "--export-json", out,
                        *limits, "--", NOOP], check=True, stdout=subprocess.DEVNULL)
        wall = time.monotonic() - start
        with open(out) as f:
            doc = json.load(f)
    ready = statistics.median(s["ready_ns"] / 1e3 for s in doc["samples"]
                              if not s["warmup"] and s["outcome"]["kind"] == "ready")
    return ready, wall / runs * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", nargs="?", default=os.path.join(ROOT, "target", "release", "coldstart"))
    ap.add_argument("--limits", default="--cpus 2")
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    limits = shlex.split(a.limits)
    plain, limited = [], []
    for i in range(a.blocks):
        pair = [([], plain), (limits, limited)] if i % 2 == 0 else [(limits, limited), ([], plain)]
        for lim, into in pair:
            into.append(block(a.binary, a.runs, lim))
    print(f"## Placing runs in limiting cgroups ({a.limits}), static no-op, {a.blocks} alternating blocks x {a.runs} runs")
    for name, k in (("ready (in the window)", 0), ("wall per run", 1)):
        p = statistics.median(x[k] for x in plain)
        l = statistics.median(x[k] for x in limited)
        ratios = sorted(y[k] / x[k] for x, y in zip(plain, limited))
        print(f"  {name:22} plain {p:8.1f} us   limited {l:8.1f} us   limited/plain {l / p:.3f}"
              f"   (+{l - p:.1f} us; per-block ratios {ratios[0]:.3f}-{ratios[-1]:.3f})")


if __name__ == "__main__":
    main()
