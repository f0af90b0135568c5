#!/usr/bin/env python3
"""--target-ci's stopping rule on a busy machine's skewed times (issue 26, item 12).

Simulates `--target-ci 5% --min-runs 10 --max-runs 200` on one variant whose times
are those of a short sleep on a loaded machine: 60 % within ~0.5 ms of 100 ms, 40 %
delayed 5–80 ms. The median's CI is the order-statistic one coldstart uses
(crates/stats median_ci). For the old rule (half-width ≤ target) and the new one
(both ends within the target of the median) it prints how many experiments stopped
on an interval whose far end was beyond the target, and the mean runs taken.
Deterministic (seeded). Usage: python3 bench/target_ci_stop.py [trials]
"""
import math
import random
import sys


def rank(n, conf=0.95):
    a = (1 - conf) / 2
    k = 0
    for j in range((n + 1) // 2):
        if sum(math.comb(n, i) for i in range(j + 1)) / 2**n > a:
            break
        k = j + 1
    return k


RANKS = {n: rank(n) for n in range(1, 201)}


def one(rng, rule, target=0.05):
    xs = []
    for n in range(1, 201):
        xs.append(100 + (rng.expovariate(2.0) if rng.random() < 0.6 else rng.uniform(5, 80)))
        if n < 10:
            continue
        s = sorted(xs)
        k = RANKS[n]
        lo, hi = s[k - 1], s[n - k]
        m = (s[(n - 1) // 2] + s[n // 2]) / 2
        half = (hi - lo) / 2 if rule == "old" else max(m - lo, hi - m)
        if half <= target * m:
            return n, max(m - lo, hi - m) > target * m
    return 200, False


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    for rule in ("old", "new"):
        rng = random.Random(1)
        runs, lopsided = 0, 0
        for _ in range(trials):
            n, wide = one(rng, rule)
            runs += n
            lopsided += wide
        print(f"{rule}: {lopsided} of {trials} stopped with the far end beyond 5 %; mean runs {runs / trials:.1f}")


if __name__ == "__main__":
    main()
