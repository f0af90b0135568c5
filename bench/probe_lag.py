#!/usr/bin/env python3
"""Probe lag side by side: builds x probes, interleaved in blocks.

Usage: bench/probe_lag.py [--blocks 6] [--runs 30] [--probes http,tcp,log]
                          [--coldstart BIN --coldstart BIN ...]

Each run starts examples/c/lagprobe (20 ms init), which records CLOCK_MONOTONIC
right before listen() and before printing its ready line, and for the first
connection it serves, when accept() returned and right before it wrote the
HTTP response. Lag is coldstart's detected instant (t0_mono_ns + ready_ns)
minus the true ready instant (listen for tcp/http, the line for log). For http
the lag is split into the target's part (listen -> respond: being scheduled,
accepting, reading the request) and the probe's (respond -> detected).

Blocks alternate builds and probes in a shuffled order so a busy machine hits
all of them alike; compare the ratios and the share of runs over 1 ms rather
than absolute figures.
"""
import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchmarks as b  # noqa: E402


def one_block(cs, kind, runs):
    port = b.free_port()
    lagprobe = os.path.join(b.EX, "lagprobe")
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        marks = os.path.join(d, "marks.txt")
        ready = {"tcp": f"tcp:{port}", "http": f"http://127.0.0.1:{port}/", "log": "log:^ready$"}[kind]
        saved, b.CS = b.CS, cs
        try:
            doc = b.coldstart_json(["--runs", str(runs), "--warmup", "0", "--order", "sequential",
                                    "--ready", ready, "--", lagprobe, str(port), marks])
        finally:
            b.CS = saved
        with open(marks) as f:
            lines = [l.split() for l in f]
    # One group of instants per run, in run order: each run starts with "listen".
    groups = []
    for tag, ns in lines:
        if tag == "listen":
            groups.append({})
        if groups:
            groups[-1][tag] = int(ns)
    samples = [s for s in doc["samples"] if not s["warmup"]]
    out = []
    for s, g in zip(samples, groups):
        if s["outcome"]["kind"] != "ready":
            continue
        detected = s["t0_mono_ns"] + s["ready_ns"]
        truth = g["log"] if kind == "log" else g["listen"]
        row = {"lag": (detected - truth) / 1e3}
        if kind == "http" and "respond" in g:
            row["target"] = (g["respond"] - g["listen"]) / 1e3
            row["serve"] = (g["serve"] - g["listen"]) / 1e3
            row["accept"] = (g["accept"] - g["serve"]) / 1e3
            row["read"] = (g["respond"] - g["accept"]) / 1e3
            if "arrive" in g:
                # The request reached the target's socket (kernel timestamp):
                # before it, the client is late; after it, the target is.
                row["client"] = (g["arrive"] - g["listen"]) / 1e3
                row["wake"] = (g["respond"] - g["arrive"]) / 1e3
            row["probe"] = (detected - g["respond"]) / 1e3
        out.append(row)
    return out


def summary(rows, key):
    xs = [r[key] for r in rows if key in r]
    if not xs:
        return "n=0"
    over = sum(x > 1000 for x in xs)
    return (f"p50 {b.pct(xs, .5):7.1f}  p90 {b.pct(xs, .9):7.1f}  max {max(xs):8.1f} us"
            f"  >1 ms {over:3}/{len(xs)} ({100 * over / len(xs):.1f} %)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--runs", type=int, default=30, help="runs per block")
    ap.add_argument("--probes", default="http,tcp,log")
    ap.add_argument("--coldstart", action="append", help="a build to measure (repeat for before/after)")
    a = ap.parse_args()
    builds = a.coldstart or [b.CS]
    kinds = a.probes.split(",")
    b.subprocess.run(["bash", os.path.join(b.ROOT, "examples", "build.sh"), b.EX], check=True,
                     stdout=b.subprocess.DEVNULL, stderr=b.subprocess.DEVNULL)
    rows = {(cs, k): [] for cs in builds for k in kinds}
    for _ in range(a.blocks):
        order = [(cs, k) for cs in builds for k in kinds]
        random.shuffle(order)
        for cs, k in order:
            rows[(cs, k)] += one_block(cs, k, a.runs)
    print(f"## Probe lag, {a.blocks} interleaved blocks x {a.runs} runs (lagprobe, 20 ms init)")
    for i, cs in enumerate(builds):
        print(f"\nbuild {i}: {cs}")
        for k in kinds:
            print(f"  {k:5} lag     {summary(rows[(cs, k)], 'lag')}")
            if k == "http":
                print(f"        target  {summary(rows[(cs, k)], 'target')}   (listen -> respond)")
                print(f"          of which {summary(rows[(cs, k)], 'serve')}   (listen -> accept called)")
                print(f"          of which {summary(rows[(cs, k)], 'accept')}   (accept called -> returned)")
                print(f"          of which {summary(rows[(cs, k)], 'read')}   (accept -> request read)")
                print(f"        request {summary(rows[(cs, k)], 'client')}   (listen -> request arrived, kernel stamp)")
                print(f"        target  {summary(rows[(cs, k)], 'wake')}   (request arrived -> respond)")
                print(f"        probe   {summary(rows[(cs, k)], 'probe')}   (respond -> detected)")
    if len(builds) > 1:
        print("\nratios of p50 / p90, build N / build 0:")
        for k in kinds:
            base = [r["lag"] for r in rows[(builds[0], k)]]
            for i, cs in enumerate(builds[1:], 1):
                xs = [r["lag"] for r in rows[(cs, k)]]
                print(f"  {k:5} build {i}: p50 {b.pct(xs, .5) / b.pct(base, .5):.3f}"
                      f"  p90 {b.pct(xs, .9) / b.pct(base, .9):.3f}")


if __name__ == "__main__":
    main()
