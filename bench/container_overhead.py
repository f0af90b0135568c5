#!/usr/bin/env python3
"""Harness overhead per container run: `coldstart bench --image IMG` (readiness
exit) against `hyperfine -N 'podman run --rm IMG'` on the same image, blocks
alternating in ABBA order (coldstart, hyperfine, hyperfine, coldstart, ...) so
drift hits both; prints the ratio of medians coldstart / hyperfine.

Usage: bench/container_overhead.py COLDSTART_BINARY [--blocks 6] [--runs 20]
           [--image localhost/coldstart-test/sleeper:a] [--store DIR]

The engine's configuration: if CONTAINERS_STORAGE_CONF is not set, the three
CONTAINERS_{CONF,STORAGE_CONF,REGISTRIES_CONF} variables are pointed at --store
(default: the integration tests' fixture store, target/debug/test-fixtures/containers,
where `cargo test --test integration containers` builds the sleeper image). Both
tools see the same environment. Nothing is removed from the store.

What the two arms time (an asymmetry, not hidden):
- coldstart: spawn of `podman run --name coldstart-PID-N --label ... IMG` until the
  attached client exits (readiness `exit`). The container is removed afterwards
  (`podman rm -f`), outside the timed window.
- hyperfine: `podman run --rm IMG`, spawn to the client's exit. With `--rm` podman
  removes the container inside the timed run: after the entrypoint exits, before
  the client returns. A hyperfine arm without `--rm` is not possible here without
  leaving a container behind per run (or reusing a name, which fails).
So hyperfine's figure includes the container's removal and coldstart's does not;
coldstart's command line carries `--name` and `--label` instead. A ratio <= 1.00 is
therefore what "no extra harness overhead" looks like, but it is not a pure
harness-vs-harness figure: the gap below 1.00 is (at most) what `--rm`'s in-run
removal costs minus whatever coldstart adds.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORE = os.path.join(ROOT, "target", "debug", "test-fixtures", "containers")


def coldstart_block(binary, image, runs, pids):
    """Median ready time (ms) of one coldstart bench, and its engine marks (ms)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        p = subprocess.Popen([binary, "bench", "-q", "--no-store", "--runs", str(runs), "--warmup", "1",
                              "--export-json", out, "--image", image], stdout=subprocess.DEVNULL)
        pids.append(p.pid)  # its containers are named coldstart-PID-N
        if p.wait() != 0:
            raise SystemExit(f"coldstart exited {p.returncode}")
        with open(out) as f:
            doc = json.load(f)
    ok = [s for s in doc["samples"] if not s["warmup"] and s["outcome"]["kind"] == "ready"]
    if len(ok) != runs:
        raise SystemExit(f"coldstart: {len(ok)} of {runs} runs ready")
    marks = {}
    for s in ok:
        for m in s.get("marks") or []:
            marks.setdefault(m["name"], []).append(m["t_ns"] / 1e6)
    return statistics.median(s["ready_ns"] / 1e6 for s in ok), marks


def hyperfine_block(podman, image, runs):
    """Median time (ms) of one `hyperfine -N` of `podman run --rm IMAGE`."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "h.json")
        subprocess.run(["hyperfine", "-N", "--style", "none", "--runs", str(runs), "--warmup", "1",
                        "--export-json", out, f"{podman} run --rm {image}"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            times = json.load(f)["results"][0]["times"]
    if len(times) != runs:
        raise SystemExit(f"hyperfine: {len(times)} of {runs} times")
    return statistics.median(times) * 1e3


def containers(podman, *filters):
    args = [podman, "ps", "-a", "-q"] + [f"--filter={f}" for f in filters]
    return len(subprocess.run(args, check=True, capture_output=True, text=True).stdout.split())


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("coldstart")
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--image", default="localhost/coldstart-test/sleeper:a")
    ap.add_argument("--store", default=STORE, help="directory with containers.conf, storage.conf, registries.conf")
    a = ap.parse_args()
    if "CONTAINERS_STORAGE_CONF" not in os.environ:
        os.environ["CONTAINERS_CONF"] = os.path.join(a.store, "containers.conf")
        os.environ["CONTAINERS_STORAGE_CONF"] = os.path.join(a.store, "storage.conf")
        os.environ["CONTAINERS_REGISTRIES_CONF"] = os.path.join(a.store, "registries.conf")
    podman = shutil.which("podman") or "/usr/bin/podman"
    if subprocess.run([podman, "image", "exists", a.image]).returncode != 0:
        raise SystemExit(f"{a.image} is not in the store ({os.environ['CONTAINERS_STORAGE_CONF']}); "
                         "`cargo test --test integration containers` builds it")
    before = containers(podman)
    load_start = loadavg()

    cs, hf, marks, pids = [], [], {}, []
    peak = float(load_start.split()[0])
    for i in range(a.blocks):
        peak = max(peak, float(loadavg().split()[0]))
        # ABBA: coldstart first in blocks 0, 3, 4, 7, ...; hyperfine first in 1, 2, 5, 6, ...
        order = ("cs", "hf") if i % 4 in (0, 3) else ("hf", "cs")
        for arm in order:
            if arm == "cs":
                med, m = coldstart_block(a.coldstart, a.image, a.runs, pids)
                cs.append(med)
                for k, v in m.items():
                    marks.setdefault(k, []).append(statistics.median(v))
            else:
                hf.append(hyperfine_block(podman, a.image, a.runs))

    load_end = loadavg()
    after = containers(podman)
    ours = sum(containers(podman, f"name=^coldstart-{pid}-") for pid in pids)
    ratios = sorted(c / h for c, h in zip(cs, hf))
    q = lambda p: ratios[min(len(ratios) - 1, int(p * len(ratios)))]
    print(f"## Container runs, {a.image}, readiness exit: {a.blocks} ABBA blocks x {a.runs} runs per arm")
    print(f"  load average (1, 5, 15 min) at start {load_start}, at end {load_end};"
          f" 1-min peak at block starts {peak:.2f}")
    print("  blocks (ms):   " + "  ".join(f"cs {c:.1f} / hf {h:.1f}" for c, h in zip(cs, hf)))
    print(f"  coldstart bench --image        p50 of block medians {statistics.median(cs):8.1f} ms")
    print(f"  hyperfine -N 'podman run --rm' p50 of block medians {statistics.median(hf):8.1f} ms"
          f"   coldstart/hyperfine {statistics.median(cs) / statistics.median(hf):.3f}")
    print(f"  per-block coldstart/hyperfine ratios: median {statistics.median(ratios):.3f}, p10 {q(0.1):.3f},"
          f" p90 {q(0.9):.3f} (n = {len(ratios)})")
    for k in sorted(marks):
        print(f"  coldstart's mark {k}: p50 of block medians {statistics.median(marks[k]):.1f} ms")
    print("  asymmetry: hyperfine's runs include `--rm` (podman removes the container before the client")
    print("  returns); coldstart removes its container after the timed window. Below 1.00 is partly that.")
    print(f"  containers left by this benchmark's coldstart runs: {ours}; in the store: {before} before,"
          f" {after} after (the store may be shared, e.g. with a running `cargo test`)")


if __name__ == "__main__":
    main()
