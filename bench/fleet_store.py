#!/usr/bin/env python3
"""The store's cost per run as fleet shards write one experiment at once.

W writer processes (crates/core/examples/fleet_store.rs), W = 1, 2, 4 … 64, each
a shard of one fresh fleet experiment: each opens the store and joins its shard
(`begin_shard`), and when all W have joined they are told to start together and
each stores WRITES runs (`add_sample`: one transaction, the shard's attempt
checked, the sample inserted, committed), PACE_MS apart, then closes its shard.

Per W: the median and p90 latency of one run's store write (pooled over all
writers), the total throughput (all writes / the span from the first write's start
to the last one's end), and the join and close times. Blocks repeat every W in a
shuffled order, so a busy machine hits them alike; read the ratios to W = 1,
not the absolute figures (the machine is shared, and its cores run the writers
and the database alike). `--pace-ms 0` writes back to back (the store's limit);
a real shard spends a cold start between two writes (`--pace-ms 50` or more).

Usage (from the repository root):
  cargo build --release -p coldstart-core --features postgres --example fleet_store
  bench/fleet_store.py [--store postgres://USER:PASS@HOST/DB] [--writers 1,2,4,8,16,32,64]
                       [--writes 40] [--pace-ms 0] [--blocks 2] [--sqlite]

The store defaults to COLDSTART_TEST_POSTGRES; a fresh database is made in that
server for the run (with psql) and dropped after. `--sqlite` measures a SQLite
file the same way, for comparison (one machine only: a file store has no fleet).
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "examples", "fleet_store")


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def trial(store, name, writers, writes, pace_ms):
    """W writers of experiment `name`, started together: their JSON reports."""
    procs = [subprocess.Popen([BIN, store, name, f"{k}/{writers}", str(writes), str(pace_ms)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for k in range(writers)]
    # Every writer has joined its shard before any writes: the writes overlap.
    for p in procs:
        line = p.stdout.readline().strip()
        if line != "joined":
            sys.exit(f"a writer did not join (said {line!r}; exit {p.wait()})")
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
        p.stdin.close()
    reports = []
    for p in procs:
        out = p.stdout.read()
        if p.wait() != 0:
            sys.exit(f"a writer failed (exit {p.returncode})")
        reports.append(json.loads(out))
    return reports


def fresh_postgres(admin):
    """A new database in the server `admin` names, and its DSN."""
    db = f"cs_fleet_store_{os.getpid()}"
    subprocess.run(["psql", admin, "-q", "-c", f"DROP DATABASE IF EXISTS {db}", "-c", f"CREATE DATABASE {db}"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    u = urllib.parse.urlsplit(admin)
    return db, urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + db, u.query, u.fragment))


def measure(label, store, writers, writes, pace_ms, blocks):
    per_w = {w: {"lat": [], "tput": [], "begin": [], "finish": []} for w in writers}
    for b in range(blocks):
        order = list(writers)
        random.shuffle(order)
        for w in order:
            t = time.monotonic()
            reports = trial(store, f"fleet-store-{os.getpid()}-{b}-{w}", w, writes, pace_ms)
            print(f"  {label}: block {b + 1}/{blocks}, W = {w}: {time.monotonic() - t:.1f} s", file=sys.stderr)
            r = per_w[w]
            for rep in reports:
                r["lat"].extend(rep["write_us"])
                r["begin"].append(rep["begin_ms"])
                r["finish"].append(rep["finish_ms"])
            span_s = (max(int(x["end_unix_ns"]) for x in reports)
                      - min(int(x["start_unix_ns"]) for x in reports)) / 1e9
            r["tput"].append(w * writes / span_s)
    base_lat = statistics.median(per_w[writers[0]]["lat"])
    base_tput = statistics.median(per_w[writers[0]]["tput"])
    print(f"\n## {label}: {blocks} blocks x W writers x {writes} writes each, pace {pace_ms} ms")
    print(f"  {'W':>3}  {'write p50':>10} {'p90':>9} {'p50/W1':>7}  {'writes/s':>9} {'/W1':>6}"
          f"  {'join p50':>9} {'p90':>8}  {'close p50':>9} {'p90':>8}")
    for w in writers:
        r = per_w[w]
        lat, tput = statistics.median(r["lat"]), statistics.median(r["tput"])
        print(f"  {w:>3}  {lat / 1e3:>7.2f} ms {pct(r['lat'], .9) / 1e3:>6.2f} ms {lat / base_lat:>7.2f}"
              f"  {tput:>9.0f} {tput / base_tput:>6.2f}"
              f"  {statistics.median(r['begin']):>6.1f} ms {pct(r['begin'], .9):>5.1f} ms"
              f"  {statistics.median(r['finish']):>6.1f} ms {pct(r['finish'], .9):>5.1f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", default=os.environ.get("COLDSTART_TEST_POSTGRES"),
                    help="a PostgreSQL server (a fresh database is made in it)")
    ap.add_argument("--writers", default="1,2,4,8,16,32,64")
    ap.add_argument("--writes", type=int, default=40, help="runs each writer stores")
    ap.add_argument("--pace-ms", type=int, default=0, help="between a writer's runs (0: back to back)")
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--sqlite", action="store_true", help="also measure a SQLite file store")
    a = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} is not built: cargo build --release -p coldstart-core --features postgres "
                 "--example fleet_store")
    writers = [int(w) for w in a.writers.split(",")]
    if a.store:
        db, dsn = fresh_postgres(a.store)
        try:
            measure("PostgreSQL", dsn, writers, a.writes, a.pace_ms, a.blocks)
        finally:
            subprocess.run(["psql", a.store, "-q", "-c", f"DROP DATABASE IF EXISTS {db}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        print("no PostgreSQL: pass --store or set COLDSTART_TEST_POSTGRES")
    if a.sqlite:
        with tempfile.TemporaryDirectory() as d:
            measure("SQLite (one file, one machine)", os.path.join(d, "store.db"), writers, a.writes,
                    a.pace_ms, a.blocks)


if __name__ == "__main__":
    main()
