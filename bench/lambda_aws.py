#!/usr/bin/env python3
"""`coldstart lambda --aws` against `coldstart lambda serve` on this machine: the
driver's own overhead per run, and an A/B experiment with a known injected delay.

One `lambda serve` (the tests' shell + curl custom runtime) and one experiment of
two variants of the same function, interleaved: `a`, and `b` whose configuration
sets INIT_SLEEP (the bootstrap sleeps that long in its init). Prints:
- the driver's overhead per run with --parallel 1: the time from one invoke's
  answer to the next invoke's start (update, wait, publish, the store's write),
  median over the runs, from the runs' own instants (t0 and round trip);
- the verdict and shift of b vs a, against the injected delay.

Usage: bench/lambda_aws.py [--runs 25] [--delay 0.010] [--port 9409]
Needs: cargo build --release.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CS = os.path.join(ROOT, "target", "release", "coldstart")
BOOT = os.path.join(ROOT, "tests", "fixtures", "lambda-serve", "bootstrap")


def wait_listening(url, proc):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit("lambda serve ended before listening")
        try:
            urllib.request.urlopen(url + "/2015-03-31/functions/hello/configuration", timeout=2)
            return
        except OSError:
            time.sleep(0.05)
    sys.exit("lambda serve did not listen within 60 s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--delay", type=float, default=0.010, help="seconds injected into b's init")
    ap.add_argument("--port", type=int, default=9409, help="loopback port for lambda serve")
    a = ap.parse_args()
    if not os.access(CS, os.X_OK):
        sys.exit("build first: cargo build --release")
    url = f"http://127.0.0.1:{a.port}"
    with tempfile.TemporaryDirectory() as d:
        serve = subprocess.Popen([CS, "lambda", "serve", "--port", str(a.port), "--name", "hello",
                                  "--runtime", BOOT], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_listening(url, serve)
            out = os.path.join(d, "r.json")
            env = dict(os.environ, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                       AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
            env.pop("AWS_PROFILE", None)
            subprocess.run([CS, "lambda", "--aws", "-q", "--endpoint-url", url, "--region", "us-east-1",
                            "--runs", str(a.runs), "--warmup", "1", "--store", os.path.join(d, "s.db"),
                            "--export-json", out,
                            "--name", "a", "--function", "hello",
                            "--name", "b", "--function", "hello", "--env", f"INIT_SLEEP={a.delay}"],
                           check=True, env=env, stdout=subprocess.DEVNULL)
            with open(out) as f:
                doc = json.load(f)
        finally:
            serve.terminate()
            serve.wait()
    runs = sorted((s for s in doc["samples"] if s["outcome"]["kind"] == "ready"), key=lambda s: s["t0_mono_ns"])
    gaps = []
    for prev, nxt in zip(runs, runs[1:]):
        answered = prev["t0_mono_ns"] + prev["metrics"]["round_trip_ms"] * 1e6
        gaps.append((nxt["t0_mono_ns"] - answered) / 1e6)
    trips = [s["metrics"]["round_trip_ms"] for s in runs]
    print(f"runs: {len(runs)} cold starts (warmups included), --parallel 1")
    print(f"driver overhead per run (answer → next invoke): median {statistics.median(gaps):.1f} ms "
          f"[p10 {statistics.quantiles(gaps, n=10)[0]:.1f}, p90 {statistics.quantiles(gaps, n=10)[-1]:.1f}]")
    print(f"invoke round trip: median {statistics.median(trips):.1f} ms")
    vs = doc["variants"][1]["stats"]["vs_baseline"]
    shift = vs["shift"]
    print(f"b vs a (b's init + {a.delay * 1e3:.1f} ms injected): verdict {vs['verdict']}, "
          f"shift {shift['estimate']:.2f} ms [{shift['ci'][0]:.2f}, {shift['ci'][1]:.2f}]")


if __name__ == "__main__":
    main()
