#!/usr/bin/env python3
"""Harness floor of two coldstart builds side by side: `bench --ready exit` of the
static no-op, blocks alternating old/new so drift hits both; prints the ratio.

Usage: bench/floor_ab.py OLD_BINARY NEW_BINARY [--blocks 6] [--runs 200]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOOP = os.path.join(ROOT, "target", "examples", "noop")


def block(binary, runs):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        subprocess.run([binary, "bench", "-q", "--no-store", "--runs", str(runs), "--export-json", out, "--", NOOP],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            doc = json.load(f)
    return statistics.median(s["ready_ns"] / 1e3 for s in doc["samples"]
                             if not s["warmup"] and s["outcome"]["kind"] == "ready")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    old, new = [], []
    for i in range(a.blocks):
        pair = [(a.old, old), (a.new, new)] if i % 2 == 0 else [(a.new, new), (a.old, old)]
        for binary, into in pair:
            into.append(block(binary, a.runs))
    ratios = sorted(n / o for n, o in zip(new, old))
    print(f"## Harness floor, static no-op, {a.blocks} alternating blocks x {a.runs} runs")
    print(f"  old p50 of block medians {statistics.median(old):8.1f} us")
    print(f"  new p50 of block medians {statistics.median(new):8.1f} us   new/old {statistics.median(new) / statistics.median(old):.3f}")
    q = lambda p: ratios[min(len(ratios) - 1, int(p * len(ratios)))]
    print(f"  per-block new/old ratios: median {statistics.median(ratios):.3f}, p10 {q(0.1):.3f}, p90 {q(0.9):.3f}"
          f" (n = {len(ratios)})")


if __name__ == "__main__":
    main()
