#!/usr/bin/env python3
"""What each runtime adapter's switch costs: adapted ÷ untraced median ready time.

Usage (from the repository root, after `cargo build --release` and `examples/build.sh`):

    bench/adapter_overhead.py [--runs 20]

For each reference target, `coldstart explain` interleaves untraced, traced and
adapted runs; this prints the adapter it picked, both medians, the ratio, and the
section's headline. Ratios only: the machine is shared and noisy.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CS = os.path.join(ROOT, "target", "release", "coldstart")
EX = os.path.join(ROOT, "target", "examples")
# The real interpreter behind `python3` (on PATH it may be a shim, e.g. pyenv's).
PY = subprocess.run(["python3", "-c", "import sys; print(sys.executable)"], capture_output=True,
                    text=True, check=True).stdout.strip()
PORT = "18932"
URL = f"http://127.0.0.1:{PORT}/health"

TARGETS = [
    ("exit", [PY, "-c", "import json, email.parser, http.client"]),
    (URL, ["node", os.path.join(ROOT, "examples", "node", "server.js"), "--port", PORT]),
    ("exit", ["java", "-cp", os.path.join(EX, "java"), "Hello"]),
    (URL, ["java", "-cp", os.path.join(EX, "java"), "Server", "--port", PORT]),
    (URL, [os.path.join(EX, "go-server"), "--port", PORT]),
    (URL, [os.path.join(EX, "rust-server"), "--port", PORT]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--coldstart", default=CS)
    args = ap.parse_args()
    print(f"{'adapter':>8}  {'untraced':>9}  {'adapted':>9}  {'ratio':>6}  command")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "e.json")
        for ready, cmd in TARGETS:
            argv = [args.coldstart, "explain", "-q", "--runs", str(args.runs), "--ready", ready,
                    "--export-json", out, "--"] + cmd
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
            with open(out) as f:
                d = json.load(f)
            name = ",".join(d["adapters"]) or "none"
            u, a = d["untraced_ms"]["p50"], d["adapted_ms"]["p50"]
            print(f"{name:>8}  {u:>7.2f}ms  {a:>7.2f}ms  {d['adapter_overhead']:>5.3f}×  {' '.join(os.path.basename(c) if c.startswith('/') else c for c in cmd)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
