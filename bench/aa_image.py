#!/usr/bin/env python3
"""A/A of one container image: how often does coldstart call two identical images
`faster` or `slower`? Contract: no verdict in >= 95 % of tries.

Usage: bench/aa_image.py [--tries 20] [--runs 10] [--image IMG] [--binary PATH]
       (from the repository root, after `cargo build --release`; the engine's
       configuration from the environment, e.g. the test fixtures' store:
       D=target/debug/test-fixtures/containers CONTAINERS_CONF=$D/containers.conf
       CONTAINERS_STORAGE_CONF=$D/storage.conf CONTAINERS_REGISTRIES_CONF=$D/registries.conf)

Each try is one real `coldstart bench -q --no-store --runs R --name a --image IMG
--name b --image IMG` (readiness: the container's exit; runs interleaved, the
default). A false verdict is `faster` or `slower`; `same`, `within_noise` and
`none` (no verdict) are not. Prints the verdicts per kind, the false-verdict rate
with its exact (Clopper-Pearson) and Wilson 95 % intervals, the per-try shift
estimates (median near 0 expected), the image's id before and after every try
(a concurrent rebuild retagging the image would make it no longer an A/A), and
the containers left behind (`podman ps -a`; 0 expected).
"""
import argparse
import collections
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CS = os.path.join(ROOT, "target", "release", "coldstart")
SLEEPER = "localhost/coldstart-test/sleeper:a"
FALSE = ("faster", "slower")


def one_try(binary, image, runs):
    """One A/A `coldstart bench`; returns the JSON export."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        args = [binary, "bench", "-q", "--no-store", "--runs", str(runs), "--export-json", out,
                "--name", "a", "--image", image, "--name", "b", "--image", image]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def image_id(image):
    r = subprocess.run(["podman", "image", "inspect", "--format", "{{.Id}}", image],
                       capture_output=True, text=True)
    return r.stdout.strip()[:12] if r.returncode == 0 else "?"


def binom_cdf(k, n, p):
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k + 1))


def clopper_pearson(k, n, alpha=0.05):
    """Exact 95 % interval for k successes in n, by bisection on the binomial CDF."""
    def solve(f):  # f increasing in p on [0, 1]; root of f(p) = 0
        lo, hi = 0.0, 1.0
        for _ in range(100):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        return (lo + hi) / 2
    lower = 0.0 if k == 0 else solve(lambda p: (1 - binom_cdf(k - 1, n, p)) - alpha / 2)
    upper = 1.0 if k == n else solve(lambda p: alpha / 2 - binom_cdf(k, n, p))
    return lower, upper


def wilson(k, n, z=1.959963984540054):
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tries", type=int, default=20, help="A/A experiments (default 20)")
    ap.add_argument("--runs", type=int, default=10, help="runs per variant per try (default 10)")
    ap.add_argument("--image", default=SLEEPER, help=f"image of both variants (default {SLEEPER})")
    ap.add_argument("--binary", default=CS, help="coldstart binary (default target/release/coldstart)")
    a = ap.parse_args()
    if not os.path.exists(a.binary):
        sys.exit(f"no {a.binary}: build first (cargo build --release) or pass --binary")

    with open("/proc/loadavg") as f:
        load_before = f.read().split()[:3]
    verdicts = collections.Counter()
    shifts, rels, p50s, busy, ids, lines = [], [], [], 0, set(), []
    for i in range(a.tries):
        before = image_id(a.image)
        doc = one_try(a.binary, a.image, a.runs)
        after = image_id(a.image)
        ids.update((before, after))
        vs = doc["variants"][1]["stats"]["vs_baseline"]
        v = vs["verdict"]
        verdicts[v] += 1
        est = vs["shift"]["estimate"]
        shifts.append(est)
        rels.append(vs["relative"]["estimate"])
        p50s.append(doc["variants"][0]["stats"]["ready_ms"]["p50"])
        load = doc.get("load") or {}
        busy += bool(load.get("busy"))
        ci = vs["shift"]["ci"]
        ci_s = f"[{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else "[none]"
        lines.append(f"  try {i + 1:3d}: {v:13s} shift {est:+7.1f} ms {ci_s:18s} p = "
                     f"{vs['mann_whitney']['p_value']:.3f}   a p50 {p50s[-1]:6.1f} ms"
                     f"   load1 {load.get('load1_before', '?')}{' BUSY' if load.get('busy') else ''}"
                     f"   image {before}{'' if before == after else ' -> ' + after}")
        print(f"\r  try {i + 1}/{a.tries}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    with open("/proc/loadavg") as f:
        load_after = f.read().split()[:3]

    n = a.tries
    k = sum(verdicts[v] for v in FALSE)
    cp, wi = clopper_pearson(k, n), wilson(k, n)
    print(f"## A/A of one image: {a.image}, {n} tries x {a.runs} runs per variant (readiness: exit)")
    print("\n".join(lines))
    print("  verdicts: " + ", ".join(f"{v} {c}" for v, c in sorted(verdicts.items())))
    print(f"  false verdicts (faster/slower): {k}/{n} = {100 * k / n:.1f} %   "
          f"95 % CI exact [{100 * cp[0]:.1f} %, {100 * cp[1]:.1f} %], Wilson [{100 * wi[0]:.1f} %, "
          f"{100 * wi[1]:.1f} %]   (contract <= 5 %)")
    print(f"  shift estimate per try (b - a): median {statistics.median(shifts):+.2f} ms "
          f"({100 * statistics.median(rels):+.2f} %), min {min(shifts):+.1f}, max {max(shifts):+.1f} ms;"
          f" median |shift| {statistics.median(abs(s) for s in shifts):.1f} ms")
    print(f"  baseline p50 per try: median {statistics.median(p50s):.1f} ms, min {min(p50s):.1f}, "
          f"max {max(p50s):.1f} ms")
    print(f"  tries coldstart flagged busy: {busy}/{n}")
    print(f"  image ids seen: {', '.join(sorted(ids))}"
          f"{'' if len(ids) == 1 else '  (CHANGED during the run: not a clean A/A)'}")
    print(f"  load average before {' '.join(load_before)}, after {' '.join(load_after)}")
    ps = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True)
    names = [x for x in ps.stdout.split() if x]
    print(f"  containers left (podman ps -a): {len(names)}"
          + (f": {' '.join(names)}" if names else ""))


if __name__ == "__main__":
    main()
