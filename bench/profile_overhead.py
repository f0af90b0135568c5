#!/usr/bin/env python3
"""What V8's perf switches cost the profiled arm: profiled ÷ untraced per setting.

Usage (from the repository root, after `cargo build` and `examples/build.sh`):

    bench/profile_overhead.py [--reps 6] [--runs 5] [--coldstart target/debug/coldstart]

Each setting is one `coldstart explain --profile` of the Node example server
with COLDSTART_PROFILE_NODE_OPTIONS replacing the profiled arm's V8 switches.
Every repetition runs each setting once, in a shuffled order, so all settings
share the machine's load; within an explain the untraced and profiled runs are
interleaved. A setting's ratio is the median of its profiled ready times over
the median of its own untraced ones, pooled over the repetitions, with a 95 %
bootstrap interval; the same for CPU time of the tree up to ready. "JS named"
is the share of the profile's samples with a JS function named from V8's perf
map on the stack (a `JS:` frame): what the setting buys.
"""
import argparse
import csv
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CS = os.path.join(ROOT, "target", "debug", "coldstart")
SERVER = os.path.join(ROOT, "examples", "node", "server.js")
PORT = "18933"
URL = f"http://127.0.0.1:{PORT}/health"

SETTINGS = [
    ("none (counter only)", ""),
    # Any V8 flag that is not at its default changes V8's flag hash, and Node's
    # built-in code cache is then rejected: this one names nothing, so its
    # row is that cost alone.
    ("flag hash only", "--stack-trace-limit=11"),
    ("basic + ifns (old)", "--perf-basic-prof --interpreted-frames-native-stack"),
    ("only-functions + ifns", "--perf-basic-prof-only-functions --interpreted-frames-native-stack"),
    ("only-functions", "--perf-basic-prof-only-functions"),
    ("basic", "--perf-basic-prof"),
    ("perf-prof (jitdump) + ifns", "--perf-prof --interpreted-frames-native-stack"),
]


def bootstrap_ratio(num, den, rng, n=2000):
    """95 % percentile interval of median(num) ÷ median(den)."""
    rs = []
    for _ in range(n):
        a = [rng.choice(num) for _ in num]
        b = [rng.choice(den) for _ in den]
        rs.append(statistics.median(a) / statistics.median(b))
    rs.sort()
    return rs[int(0.025 * n)], rs[int(0.975 * n) - 1]


def js_share(folded):
    hit = total = 0
    with open(folded) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            n = int(count)
            total += n
            if any(fr.startswith("JS:") for fr in stack.split(";")):
                hit += n
    return hit, total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--coldstart", default=CS)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    data = {name: {"untraced": [], "profiled": [], "cpu_u": [], "cpu_p": [], "js": [0, 0]}
            for name, _ in SETTINGS}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            order = list(SETTINGS)
            rng.shuffle(order)
            for name, opts in order:
                # A directory of its own: --perf-prof writes jit-PID.dump (and
                # --perf-basic-prof an isolate log) into the working directory.
                cwd = tempfile.mkdtemp(dir=tmp)
                db, csv_path, folded = (os.path.join(tmp, n) for n in ("s.db", "r.csv", "f.txt"))
                env = dict(os.environ, COLDSTART_PROFILE_NODE_OPTIONS=opts)
                argv = [args.coldstart, "explain", "-q", "--store", db, "--profile",
                        "--runs", str(args.runs), "--warmup", "1", "--adapter", "none",
                        "--no-otlp", "--ready", URL, "--export-folded", folded, "--",
                        "node", SERVER, "--port", PORT]
                subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env, cwd=cwd)
                subprocess.run([args.coldstart, "show", "--store", db, "latest", "--export-csv",
                                csv_path], check=True, stdout=subprocess.DEVNULL)
                d = data[name]
                with open(csv_path) as f:
                    for row in csv.DictReader(f):
                        if row["warmup"] == "true" or row["outcome"] != "ready":
                            continue
                        if row["variant"] == "untraced":
                            d["untraced"].append(int(row["ready_ns"]) / 1e6)
                            d["cpu_u"].append(int(row["cpu_total_us"]) / 1e3)
                        elif row["variant"] == "profiled":
                            d["profiled"].append(int(row["ready_ns"]) / 1e6)
                            d["cpu_p"].append(int(row["cpu_total_us"]) / 1e3)
                # One store per explain: the traces would pile up.
                os.remove(db)
                hit, total = js_share(folded)
                d["js"][0] += hit
                d["js"][1] += total
                shutil.rmtree(cwd)
            print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr, flush=True)
    print(f"| V8 switches (NODE_OPTIONS of the profiled arm) | runs | untraced p50 | profiled p50 "
          f"| profiled ÷ untraced (95 % CI) | CPU profiled ÷ untraced (95 % CI) | JS named |")
    print("|---|---|---|---|---|---|---|")
    for name, opts in SETTINGS:
        d = data[name]
        u, p = d["untraced"], d["profiled"]
        r = statistics.median(p) / statistics.median(u)
        lo, hi = bootstrap_ratio(p, u, rng)
        c = statistics.median(d["cpu_p"]) / statistics.median(d["cpu_u"])
        clo, chi = bootstrap_ratio(d["cpu_p"], d["cpu_u"], rng)
        hit, total = d["js"]
        label = f"{name}: `{opts}`" if opts else name
        print(f"| {label} | {len(p)} | {statistics.median(u):.1f} ms | {statistics.median(p):.1f} ms "
              f"| ×{r:.3f} (×{lo:.3f}–×{hi:.3f}) | ×{c:.3f} (×{clo:.3f}–×{chi:.3f}) "
              f"| {100 * hit / max(total, 1):.0f} % of {total} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
