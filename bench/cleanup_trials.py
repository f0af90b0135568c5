#!/usr/bin/env python3
"""Nothing left behind, counted: stop a running `coldstart bench` N times per way
(SIGKILL, SIGQUIT, a second SIGINT once the first's cleanup has begun, SIGTERM) and
count the target processes that survive it.

Usage: bench/cleanup_trials.py [--trials 100] [--binary PATH] [--ways LIST] [--env K=V ...]
(from the repository root, after `cargo build --release` and examples/build.sh)

The target is `sh -c 'daemon && exec forker'`: a double-forked, setsid'd daemon
plus a server with 3 worker processes (5 processes), never ready. Processes are
found by a marker in their environment. A trial's survivors are counted once
coldstart has exited and the marked processes stopped changing for up to 10 s
(the watchdog acts after coldstart's death); survivors are then killed so the
next trial starts clean.
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EX = os.path.join(ROOT, "target", "examples")


def marked(marker):
    want = marker.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if want in env and state not in ("Z", "X"):
            found.append(int(name))
    return found


def wait_until(limit, pred):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.005)
    return pred()


def trial(binary, how, n, extra_env):
    marker = f"COLDSTART_TRIAL_MARKER={how}-{os.getpid()}-{n}"
    with tempfile.TemporaryDirectory() as d:
        cmd = [binary, "bench", "--no-store", "-q", "-r", "5", "--timeout", "60",
               "--env", marker, "--ready", f"file:{d}/never", "--",
               "sh", "-c", f"{EX}/daemon && exec {EX}/forker"]
        env = dict(os.environ, **extra_env)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        if not wait_until(30, lambda: len(marked(marker)) >= 5):
            p.kill()
            p.wait()
            raise SystemExit(f"{how} trial {n}: target never started")
        if how == "SIGINT x2":
            # The second one once the first's cleanup is under way (processes
            # dying), not back to back: two pending SIGINTs would merge into one.
            p.send_signal(signal.SIGINT)
            wait_until(10, lambda: p.poll() is not None or len(marked(marker)) < 5)
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        else:
            p.send_signal(getattr(signal, how))
        p.wait()
        wait_until(10, lambda: not marked(marker))
        left = marked(marker)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(left), p.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "coldstart"))
    ap.add_argument("--ways", default="SIGKILL,SIGQUIT,SIGINT x2,SIGTERM",
                    help="comma-separated subset of: SIGKILL,SIGQUIT,SIGINT x2,SIGTERM")
    ap.add_argument("--env", action="append", default=[], help="K=V for coldstart (e.g. COLDSTART_CGROUP=none)")
    a = ap.parse_args()
    extra = dict(kv.split("=", 1) for kv in a.env)
    print(f"{a.binary}  {' '.join(a.env)}  {a.trials} trials each")
    print(f"{'stopped by':<12} {'trials with survivors':>22} {'survivors':>10}  exit codes")
    for how in a.ways.split(","):
        bad = total = 0
        codes = {}
        for n in range(a.trials):
            left, code = trial(a.binary, how, n, extra)
            bad += left > 0
            total += left
            codes[code] = codes.get(code, 0) + 1
        print(f"{how:<12} {bad:>16} / {a.trials:<3} {total:>10}  {codes}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
