//! Fisher's exact test on a 2×2 table of failure counts, one-sided: is the candidate's
//! failure rate above the baseline's? Exact (hypergeometric), so it is honest at the
//! small counts a benchmark has (1 of 20 vs 0 of 20 is no evidence; 7 of 20 vs 0 of 20 is).

/// ln(n!) by summation: the counts here are run counts (at most a few thousand).
fn ln_factorial(n: u64) -> f64 {
    (2..=n).map(|k| (k as f64).ln()).sum()
}

fn ln_choose(n: u64, k: u64) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

/// One-sided p-value that the candidate fails more often than the baseline:
/// P(X ≥ `cand_failed`) where X is the candidate's failures under the hypergeometric
/// law with both sides' totals fixed (R: `fisher.test(matrix(c(cf, cn - cf, bf, bn - bf), 2),
/// alternative = "greater")$p.value`). 1 when either side has no runs or when the
/// counts are impossible (failed > runs).
pub fn fisher_greater(cand_failed: u64, cand_runs: u64, base_failed: u64, base_runs: u64) -> f64 {
    if cand_runs == 0 || base_runs == 0 || cand_failed > cand_runs || base_failed > base_runs {
        return 1.0;
    }
    let n = cand_runs + base_runs;
    let failed = cand_failed + base_failed;
    let hi = failed.min(cand_runs);
    let denom = ln_choose(n, failed);
    let p: f64 = (cand_failed..=hi)
        // X = x needs failed - x ≤ base_runs.
        .filter(|&x| failed - x <= base_runs)
        .map(|x| (ln_choose(cand_runs, x) + ln_choose(base_runs, failed - x) - denom).exp())
        .sum();
    p.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_exact_combinatorics() {
        // The oracle is exact combinatorics (Python's math.comb): all 7 failures on the
        // candidate's side is the only table as extreme, C(20,7) / C(40,7) = 0.004158004.
        assert!((fisher_greater(7, 20, 0, 20) - 0.004158004).abs() < 1e-9);
        // Fisher's tea-tasting table (3 of 4 vs 1 of 4): (C(4,3)C(4,1) + C(4,4)C(4,0)) / C(8,4) = 17/70.
        assert!((fisher_greater(3, 4, 1, 4) - 0.2428571).abs() < 1e-7);
        // 1 of 20 vs 0 of 20: p = 0.5, no evidence.
        assert!((fisher_greater(1, 20, 0, 20) - 0.5).abs() < 1e-12);
        // No failures, or fewer than the baseline: no evidence at all.
        assert!((fisher_greater(0, 20, 0, 20) - 1.0).abs() < 1e-12);
        assert!(fisher_greater(0, 20, 5, 20) > 0.99);
        assert_eq!(fisher_greater(1, 0, 0, 20), 1.0);
        // Large counts stay finite.
        let p = fisher_greater(300, 2000, 200, 2000);
        assert!(p > 0.0 && p < 1e-4, "{p}");
    }
}
