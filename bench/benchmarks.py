#!/usr/bin/env python3
"""coldstart's own benchmarks: harness floor, probe lag, agreement with hyperfine.

Usage: bench/benchmarks.py [--quick]     (from the repository root, after
`cargo build --release`; needs hyperfine for the floor/agreement parts)

Everything is measured side by side in one run and reported as ratios: the
machine is shared and noisy, so absolute figures mean little on their own.
"""
import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EX = os.path.join(ROOT, "target", "examples")
# COLDSTART_BIN: another build to measure (e.g. an older one, for before/after ratios).
CS = os.environ.get("COLDSTART_BIN") or os.path.join(ROOT, "target", "release", "coldstart")


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def free_port():
    """A free loopback port in 20000-32000, below the kernel's ephemeral range
    (32768-60999), where the probe's own connects could take it."""
    for _ in range(1000):
        port = random.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    sys.exit("no free loopback port in 20000-32000")


def coldstart_json(args, store=False):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        where = ["--store", os.path.join(d, "s.db")] if store else ["--no-store"]
        subprocess.run([CS, "bench", "-q", "--export-json", out] + where + args, check=True,
                       stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def ready_us(doc, variant=0):
    return [s["ready_ns"] / 1e3 for s in doc["samples"]
            if s["variant"] == variant and not s["warmup"] and s["outcome"]["kind"] == "ready"]


def c_loop_us(runs, target):
    out = subprocess.run([os.path.join(EX, "spawn_loop"), str(runs), target], check=True,
                         capture_output=True, text=True).stdout
    return [int(x) / 1e3 for x in out.split()]


def hyperfine_us(runs, argv):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "h.json")
        subprocess.run(["hyperfine", "-N", "--warmup", "1", "--runs", str(runs), "--export-json", out,
                        " ".join(argv)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            return [t * 1e6 for t in json.load(f)["results"][0]["times"]]


def floor(blocks, runs):
    """Static no-op binary: coldstart --ready exit vs a C posix_spawn+waitpid loop vs hyperfine -N,
    interleaved in blocks so drift hits all three."""
    noop = os.path.join(EX, "noop")
    have_hf = shutil.which("hyperfine") is not None
    c, cs, cs_store, hf = [], [], [], []
    for _ in range(blocks):
        c += c_loop_us(runs, noop)
        cs += ready_us(coldstart_json(["--runs", str(runs), "--", noop]))
        cs_store += ready_us(coldstart_json(["--runs", str(runs), "--", noop], store=True))
        if have_hf:
            hf += hyperfine_us(runs, [noop])
    print(f"\n## Harness floor: static no-op, {blocks} interleaved blocks x {runs} runs each")
    print(f"  C posix_spawn+waitpid loop  p50 {median(c):8.1f} us")
    print(f"  coldstart --ready exit      p50 {median(cs):8.1f} us   ratio to C loop {median(cs) / median(c):.3f}  (goal <= 1.05; --no-store)")
    print(f"  same, storing every run     p50 {median(cs_store):8.1f} us   ratio to C loop {median(cs_store) / median(c):.3f}  (SQLite commit between runs)")
    if have_hf:
        print(f"  hyperfine -N                p50 {median(hf):8.1f} us   ratio to C loop {median(hf) / median(c):.3f}")
    else:
        print("  hyperfine not installed: skipped (apt-get install hyperfine)")


def agreement(blocks, runs):
    """Exit-mode median vs hyperfine's on a real interpreter start."""
    if shutil.which("hyperfine") is None:
        print("\n## Agreement with hyperfine: skipped (hyperfine not installed)")
        return
    py = subprocess.run(["python3", "-c", "import sys; print(sys.executable)"], capture_output=True,
                        text=True).stdout.strip()
    argv = [py, "-S", "-c", "pass"]
    cs, hf = [], []
    for _ in range(blocks):
        cs += ready_us(coldstart_json(["--runs", str(runs), "--"] + argv))
        hf += hyperfine_us(runs, argv)
    r = median(cs) / median(hf)
    print(f"\n## Agreement: {' '.join(argv)}, {blocks} interleaved blocks x {runs} runs")
    print(f"  coldstart p50 {median(cs) / 1e3:.2f} ms, hyperfine p50 {median(hf) / 1e3:.2f} ms, ratio {r:.3f}  (goal within 2%)")


def probe_lag(runs):
    """lagprobe records CLOCK_MONOTONIC right before listen() and before printing its ready line;
    coldstart's detected instant is t0_mono_ns + ready_ns on the same clock."""
    lagprobe = os.path.join(EX, "lagprobe")
    print(f"\n## Probe lag: detected - true ready instant, {runs} runs each (lagprobe, 20 ms init)")
    for kind in ["tcp", "http", "log", "listen"]:
        port = free_port()
        with tempfile.TemporaryDirectory() as d:
            marks = os.path.join(d, "marks.txt")
            ready = {"tcp": f"tcp:{port}", "http": f"http://127.0.0.1:{port}/", "log": "log:^ready$",
                     "listen": "listen"}[kind]
            doc = coldstart_json(["--runs", str(runs), "--warmup", "0", "--ready", ready, "--", lagprobe,
                                  str(port), marks])
            with open(marks) as f:
                lines = [l.split() for l in f]
        true_key = "log" if kind == "log" else "listen"
        truth = [int(ns) for tag, ns in lines if tag == true_key]
        samples = [s for s in doc["samples"] if s["outcome"]["kind"] == "ready"]
        lags = [(s["t0_mono_ns"] + s["ready_ns"] - t) / 1e3 for s, t in zip(samples, truth)]
        goal = 50 if kind in ("log", "listen") else 250
        print(f"  {kind:5} p50 {pct(lags, .5):7.1f} us   p90 {pct(lags, .9):7.1f} us   (n={len(lags)}, goal p50 <= {goal} us)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer runs (for a smoke check)")
    ap.add_argument("--only", choices=["floor", "lag", "agreement"], help="run one benchmark")
    a = ap.parse_args()
    if not os.path.exists(CS):
        sys.exit("build first: cargo build --release")
    subprocess.run(["bash", os.path.join(ROOT, "examples", "build.sh"), EX], check=True, stdout=subprocess.DEVNULL)
    blocks, runs = (2, 50) if a.quick else (5, 200)
    if a.only in (None, "floor"):
        floor(blocks, runs)
    if a.only in (None, "lag"):
        probe_lag(30 if a.quick else 100)
    if a.only in (None, "agreement"):
        agreement(blocks, 20 if a.quick else 60)


if __name__ == "__main__":
    main()
