#!/usr/bin/env python3
"""A/A and known-shift harness: does coldstart ever give a confident wrong answer?

Usage: bench/aa.py [--experiments 100] [--runs 20] [--base-us 2000]
       (from the repository root, after `cargo build --release`)

Target: examples/c/sleeper sleeping COLDSTART_EXAMPLE_DELAY_US microseconds; every
variant sleeps (the baseline too), so all pay the same wake-up overshoot and two
variants differ by exactly the difference of their delays. Each experiment is one
real `coldstart bench`.

Reports, in one run:
  1. false verdicts of A/A experiments, per design: interleaved bench, sequential
     bench (--order sequential), cross-invocation `compare` of two stored
     experiments, and the cross-invocation gate (--max-regression 5%);
  2. coverage of an injected 1 ms and 10 ms shift by the printed 95 % CI;
  3. the power statement's accuracy: the median detectable shift stated by the A/A
     experiments, injected, must be called `slower` in >= 80 % of experiments.
Interleaving within a round, the designs run back to back per experiment index,
so machine drift hits all of them alike.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CS = os.path.join(ROOT, "target", "release", "coldstart")
SLEEPER = os.path.join(ROOT, "target", "examples", "sleeper")


def bench(runs, delays, extra=(), store=None):
    """One `coldstart bench` with a variant per delay (us); returns the JSON export."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        where = ["--store", store] if store else ["--no-store"]
        args = [CS, "bench", "-q", "--runs", str(runs), "--export-json", out] + where + list(extra)
        for i, us in enumerate(delays):
            args += ["--name", f"v{i}", "--env", f"COLDSTART_EXAMPLE_DELAY_US={us}", "--", SLEEPER]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def ready_ms(doc, variant):
    return [x["ready_ns"] / 1e6 for x in doc["samples"]
            if x["variant"] == variant and not x["warmup"] and x["outcome"]["kind"] == "ready"]


def hodges_lehmann(a, b):
    """Median of all pairwise differences b - a (fine for a few thousand per side)."""
    d = sorted(y - x for x in a for y in b)
    m = len(d)
    return d[m // 2] if m % 2 else (d[m // 2 - 1] + d[m // 2]) / 2


def vs(doc):
    return doc["variants"][1]["stats"]["vs_baseline"]


def compare_json(store, a, b):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "c.json")
        subprocess.run([CS, "compare", "--store", store, a, b, "--export-json", out], check=True,
                       stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)["pairs"][0]["variants"][1]["vs_baseline"]


def gate_status(store, a, b, limit):
    r = subprocess.run([CS, "gate", "--store", store, "--baseline", a, "--candidate", b,
                        "--max-regression", limit, "--across-invocations"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return r.returncode


def rate(xs):
    return f"{sum(xs)}/{len(xs)} = {100 * sum(xs) / max(len(xs), 1):.1f} %"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiments", type=int, default=100, help="experiments per design (default 100)")
    ap.add_argument("--runs", type=int, default=20, help="runs per variant per experiment (default 20)")
    ap.add_argument("--base-us", type=int, default=2000, help="sleep of the baseline, us (default 2000)")
    a = ap.parse_args()
    if not os.path.exists(CS):
        sys.exit("build first: cargo build --release")
    subprocess.run(["bash", os.path.join(ROOT, "examples", "build.sh"), os.path.dirname(SLEEPER)], check=True,
                   stdout=subprocess.DEVNULL)
    n, runs, base = a.experiments, a.runs, a.base_us
    verdict = {"interleaved": [], "sequential": [], "separate": []}
    within_noise = []
    gate_false_fail = []
    drift = []
    stated = []
    with tempfile.TemporaryDirectory() as d:
        store = os.path.join(d, "s.db")
        for i in range(n):
            c = vs(bench(runs, [base, base]))
            verdict["interleaved"].append(c["verdict"] in ("faster", "slower"))
            within_noise.append(c["verdict"] == "within_noise")
            if c.get("detectable"):
                stated.append(c["detectable"]["relative"])
            c = vs(bench(runs, [base, base], ["--order", "sequential"]))
            verdict["sequential"].append(c["verdict"] in ("faster", "slower"))
            bench(runs, [base], store=store)
            bench(runs, [base], store=store)
            c = compare_json(store, "latest~1", "latest")
            verdict["separate"].append(c["verdict"] in ("faster", "slower"))
            drift.append(abs(c["relative"]["estimate"]))
            gate_false_fail.append(gate_status(store, "latest~1", "latest", "5%") == 1)
            print(f"\r  A/A {i + 1}/{n}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)

    cover = {}
    for shift_us in (1000, 10000):
        hits, hits_pooled, detected, cis, pooled = [], [], [], [], ([], [])
        for i in range(n):
            doc = bench(runs, [base, base + shift_us])
            c = vs(doc)
            cis.append(tuple(c["shift"]["ci"]))
            detected.append(c["verdict"] == "slower")
            for v in (0, 1):
                pooled[v].extend(ready_ms(doc, v))
            print(f"\r  shift {shift_us} us {i + 1}/{n}", end="", file=sys.stderr, flush=True)
        # Two truths: the injected delay, and the programs' real shift on this machine
        # (a longer sleep can wake from a deeper idle state), estimated by the
        # Hodges-Lehmann shift of all experiments' runs pooled (n x runs per side).
        truth = hodges_lehmann(pooled[0], pooled[1])
        hits = [lo <= shift_us / 1e3 <= hi for lo, hi in cis]
        hits_pooled = [lo <= truth <= hi for lo, hi in cis]
        cover[shift_us] = (hits, hits_pooled, truth, detected)
    print(file=sys.stderr)

    # The power statement: inject the median stated detectable shift.
    median_stated = statistics.median(stated)
    # The baseline median is about the delay plus the spawn floor; take it from one run.
    floor_doc = bench(runs, [base])
    base_ms = floor_doc["variants"][0]["stats"]["ready_ms"]["p50"]
    inject_us = round(median_stated * base_ms * 1e3)
    power_hits = []
    for i in range(n):
        c = vs(bench(runs, [base, base + inject_us]))
        power_hits.append(c["verdict"] == "slower")
        print(f"\r  power {i + 1}/{n}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)

    print(f"\n## A/A: {n} experiments per design, {runs} runs per variant, sleeper sleeping {base} us")
    print(f"  false verdicts (faster/slower), interleaved bench        {rate(verdict['interleaved'])}   (goal <= 5 %)")
    print(f"    significant but within the noise threshold (~, no verdict) {rate(within_noise)}")
    print(f"  false verdicts, sequential bench (no verdict by design)   {rate(verdict['sequential'])}")
    print(f"  false verdicts, compare of two invocations (no verdict)   {rate(verdict['separate'])}")
    print(f"  false gate failures, two invocations, --max-regression 5% --across-invocations "
          f"{rate(gate_false_fail)}")
    drift.sort()
    print(f"  |shift estimate| between two invocations of the same program: p50 {100 * drift[len(drift) // 2]:.1f} %,"
          f" p90 {100 * drift[int(len(drift) * 0.9)]:.1f} %, max {100 * drift[-1]:.1f} %")
    print("\n## Injected shift: the printed 95 % CI of the shift covers the truth")
    for shift_us, (hits, hits_pooled, truth, detected) in cover.items():
        print(f"  +{shift_us / 1e3:g} ms injected: covered {rate(hits)}; called slower {rate(detected)}")
        print(f"      pooled shift of all {n * runs} runs per side {truth:.4f} ms: covered {rate(hits_pooled)}"
              f" (goal >= 95 %)")
    print("\n## Power statement")
    print(f"  median stated detectable shift {100 * median_stated:.2f} % of {base_ms:.3f} ms = {inject_us} us")
    print(f"  injected {inject_us} us: called slower in {rate(power_hits)} (goal >= 80 %)")


if __name__ == "__main__":
    main()
