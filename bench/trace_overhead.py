#!/usr/bin/env python3
"""The tracer's overhead next to strace's, on one command with exit readiness.

Usage (from the repository root, after `cargo build --release`):

    bench/trace_overhead.py [--rounds 3] [--runs 20] [--ready PROBE] [--coldstart PATH ...] [-- COMMAND ...]
    bench/trace_overhead.py --all      # the issue's four targets: python, Node server, JVM hello, Go server

Default command: the real Python 3.11 interpreter with `-c pass` (not the pyenv
shim on PATH, which adds its own bash startup). Each round runs, back to back:

* `coldstart bench` with three shuffled variants: the plain command, `strace -f`
  and `strace -f --seccomp-bpf` with the syscalls our filter stops on;
* `coldstart explain` (untraced and traced runs interleaved) once per
  `--coldstart` binary given (default target/release/coldstart), so an old and a
  new build can be compared in the same conditions.

Ratios are medians over medians (traced ÷ untraced, strace ÷ plain) within a
round; the machine is shared and noisy, so compare ratios, not absolute times.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CS = os.path.join(ROOT, "target", "release", "coldstart")
# The real interpreter behind `python3` (on PATH it may be a shim, e.g. pyenv's).
PY = subprocess.run(["python3", "-c", "import sys; print(sys.executable)"], capture_output=True,
                    text=True, check=True).stdout.strip()
# What our seccomp filter stops on (strace can only filter by name).
TRACED = "execve,execveat,open,openat,openat2,connect,bind,listen,accept,accept4,clone,clone3,fork,vfork"


def bench(cs, cmd, runs, out, ready):
    variants = [
        ("plain", cmd),
        ("strace", ["strace", "-f", "-o", "/dev/null"] + cmd),
        ("strace-seccomp", ["strace", "-f", "--seccomp-bpf", "-e", "trace=" + TRACED, "-o", "/dev/null"] + cmd),
    ]
    argv = [cs, "bench", "--no-store", "-q", "--runs", str(runs), "--ready", ready, "--export-json", out]
    for name, c in variants:
        argv += ["--name", name, "--"] + c
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        data = json.load(f)
    return {v["name"]: v["stats"]["ready_ms"]["p50"] for v in data["variants"]}


def explain(cs, cmd, runs, out, ready):
    # Only untraced vs traced matters here: no adapted runs' switches or receiver.
    argv = [cs, "explain", "-q", "--runs", str(runs), "--ready", ready, "--adapter", "none", "--no-otlp",
            "--export-json", out]
    # Builds whose explain is stored in history: keep these runs out of it.
    help_text = subprocess.run([cs, "explain", "--help"], capture_output=True, text=True).stdout
    if "--no-store" in help_text:
        argv.append("--no-store")
    subprocess.run(argv + ["--"] + cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        data = json.load(f)
    u, t = data["untraced_ms"]["p50"], data["traced_ms"]["p50"]
    # Median over median for every build (newer builds report the Hodges–Lehmann
    # ratio as `overhead`; the same figure for all keeps builds comparable).
    return u, t, t / u


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--coldstart", action="append", help="coldstart binary (repeatable)")
    ap.add_argument("--ready", default="exit", help="readiness probe, as for coldstart (default exit)")
    ap.add_argument("--all", action="store_true", help="the four reference targets, one after another")
    ap.add_argument("command", nargs="*")
    args = ap.parse_args()
    builds = args.coldstart or [CS]
    if args.all:
        ex = os.path.join(ROOT, "target", "examples")
        port = "18931"
        url = f"http://127.0.0.1:{port}/health"
        targets = [
            ("exit", [PY, "-c", "pass"]),
            (url, ["node", os.path.join(ROOT, "examples", "node", "server.js"), "--port", port]),
            ("exit", ["java", "-cp", os.path.join(ex, "java"), "Hello"]),
            (url, [os.path.join(ex, "go-server"), "--port", port]),
        ]
    else:
        targets = [(args.ready, args.command or [PY, "-c", "pass"])]
    for ready, cmd in targets:
        run_target(args, builds, cmd, ready)
        print()


def run_target(args, builds, cmd, ready):
    print(f"command: {' '.join(cmd)}   (ready = {ready}; {args.rounds} rounds × {args.runs} runs)")
    header = f"{'round':>5}  {'plain ms':>9}  {'strace':>7}  {'strace-bpf':>10}"
    for i, _ in enumerate(builds):
        header += f"  {'ours#' + str(i) if len(builds) > 1 else 'ours':>7} ({'untr/tr ms':>13})"
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        for r in range(args.rounds):
            b = bench(builds[0], cmd, args.runs, out, ready)
            line = f"{r + 1:>5}  {b['plain']:>9.2f}  {b['strace'] / b['plain']:>6.3f}×  {b['strace-seccomp'] / b['plain']:>9.3f}×"
            for cs in builds:
                u, t, o = explain(cs, cmd, args.runs, out, ready)
                line += f"  {o:>6.3f}× ({u:>6.2f}/{t:>6.2f})"
            print(line, flush=True)
    if len(builds) > 1:
        for i, cs in enumerate(builds):
            print(f"ours#{i}: {cs}")


if __name__ == "__main__":
    sys.exit(main())
