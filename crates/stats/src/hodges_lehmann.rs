//! Hodges–Lehmann shift estimate with the Moses distribution-free CI.
//!
//! The m·n pairwise differences are never materialised: order statistics are
//! selected exactly by bisection over the bit patterns of f64 values, counting
//! differences <= t with an O(m + n) two-pointer sweep over the sorted samples
//! (at most 64 sweeps per order statistic). This is exact for any m·n, with no
//! subsampling, in O((m + n) log(m + n)) time and O(m + n) memory.

use serde::Serialize;

use super::mann_whitney::{null_counts, null_sigma, rank_sum, use_exact};
use super::normal;

/// Location shift of `candidate` relative to `baseline` (candidate - baseline).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shift {
    /// Median of all pairwise differences candidate_j - baseline_i.
    pub estimate: f64,
    /// Moses CI; `None` when the samples are too small for the confidence.
    pub ci: Option<(f64, f64)>,
}

/// Hodges–Lehmann estimate of candidate - baseline with a Moses CI.
///
/// With D_(1) <= ... <= D_(mn) the sorted differences, the CI is
/// (D_(k), D_(mn+1-k)) for the largest k with P(U <= k - 1) <= (1 - conf) / 2
/// under the Mann–Whitney null, so coverage is >= `confidence`. The null
/// distribution is exact under the same rule as [`super::mann_whitney`]
/// (both sizes < 50, no ties; this reproduces R's
/// `wilcox.test(candidate, baseline, conf.int = TRUE)`); otherwise
/// k = floor(mn/2 - z sigma + 1/2) with tie-corrected sigma (normal
/// approximation with continuity correction). `ci` is `None` when k < 1
/// (e.g. 3 vs 3 at 95%) or `confidence` is outside (0, 1).
///
/// Returns `None` if either sample is empty.
pub fn hodges_lehmann(baseline: &[f64], candidate: &[f64], confidence: f64) -> Option<Shift> {
    let (m, n) = (baseline.len(), candidate.len());
    if m == 0 || n == 0 {
        return None;
    }
    let mut base = baseline.to_vec();
    let mut cand = candidate.to_vec();
    base.sort_by(f64::total_cmp);
    cand.sort_by(f64::total_cmp);
    let diffs = PairwiseDiffs {
        base: &base,
        cand: &cand,
    };
    let total = (m as u64) * (n as u64);
    let estimate = if total % 2 == 1 {
        diffs.kth(total.div_ceil(2))
    } else {
        0.5 * (diffs.kth(total / 2) + diffs.kth(total / 2 + 1))
    };
    let ci = moses_rank(baseline, candidate, confidence).map(|k| (diffs.kth(k), diffs.kth(total + 1 - k)));
    Some(Shift {
        estimate: estimate + 0.0, // normalise -0.0
        ci,
    })
}

/// The 1-based rank k of the Moses CI lower bound, or `None` if k < 1.
fn moses_rank(baseline: &[f64], candidate: &[f64], confidence: f64) -> Option<u64> {
    let tie_term = rank_sum(candidate, baseline).tie_term;
    moses_rank_for(baseline.len(), candidate.len(), tie_term, confidence)
}

/// The Moses interval's half-width in standard errors of the shift, for sizes m
/// and n without ties: its ranks span (m n + 1 − 2k) / 2 of U's null spread.
/// Wider than z₁₋α/₂ where the exact interval is conservative (2.00 at 10 vs 10).
pub(crate) fn moses_z(m: usize, n: usize, confidence: f64) -> Option<f64> {
    let k = moses_rank_for(m, n, 0.0, confidence)?;
    let half = (m as f64 * n as f64 + 1.0 - 2.0 * k as f64) / 2.0;
    Some(half / null_sigma(m, n, 0.0))
}

fn moses_rank_for(m: usize, n: usize, tie_term: f64, confidence: f64) -> Option<u64> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let total = (m as u64) * (n as u64);
    let alpha = 1.0 - confidence;
    let k = if use_exact(m, n, tie_term) {
        exact_rank(m, n, alpha)
    } else {
        let z = normal::quantile(1.0 - alpha / 2.0);
        let sigma = null_sigma(m, n, tie_term);
        let k = (total as f64 / 2.0 - z * sigma + 0.5).floor();
        if k < 1.0 {
            0
        } else {
            k as u64
        }
    };
    (k >= 1 && k <= total + 1 - k).then_some(k)
}

/// The exact Moses rank for sizes m, n (no ties) at level alpha. Memoised per
/// thread: the null distribution costs O(m²n) and a report or a simulation asks
/// for the same few sizes over and over.
fn exact_rank(m: usize, n: usize, alpha: f64) -> u64 {
    thread_local! {
        static RANKS: std::cell::RefCell<std::collections::HashMap<(usize, usize, u64), u64>> =
            std::cell::RefCell::default();
    }
    let key = (m, n, alpha.to_bits());
    if let Some(k) = RANKS.with(|r| r.borrow().get(&key).copied()) {
        return k;
    }
    let counts = null_counts(m, n);
    let all: i128 = counts.iter().sum();
    // Slack lets coverage == confidence through despite decimal rounding.
    let limit = alpha / 2.0 * all as f64 * (1.0 + 1e-9);
    let mut cum: i128 = 0;
    let mut k = 0u64;
    for (u, &c) in counts.iter().enumerate() {
        cum += c;
        if cum as f64 > limit {
            break;
        }
        k = u as u64 + 1; // P(U <= k - 1) = cum <= alpha / 2
    }
    RANKS.with(|r| r.borrow_mut().insert(key, k));
    k
}

/// The multiset {cand_j - base_i} of two ascending-sorted samples.
struct PairwiseDiffs<'a> {
    base: &'a [f64],
    cand: &'a [f64],
}

impl PairwiseDiffs<'_> {
    /// Number of differences <= t. Rounding is monotone, so the computed
    /// cand_j - base_i is non-increasing in i and non-decreasing in j, which
    /// makes the two-pointer sweep exact for the f64 differences.
    fn count_le(&self, t: f64) -> u64 {
        let m = self.base.len();
        let mut p = 0; // first index i with cand_j - base_i <= t
        let mut count = 0u64;
        for &c in self.cand {
            while p < m && c - self.base[p] > t {
                p += 1;
            }
            count += (m - p) as u64;
        }
        count
    }

    /// The k-th smallest difference (1-based, 1 <= k <= m n): the smallest f64
    /// t with count_le(t) >= k, found by bisection over the total order of f64
    /// bit patterns between the smallest and largest difference.
    fn kth(&self, k: u64) -> f64 {
        let (Some(&b_lo), Some(&b_hi), Some(&c_lo), Some(&c_hi)) = (
            self.base.first(),
            self.base.last(),
            self.cand.first(),
            self.cand.last(),
        ) else {
            return f64::NAN;
        };
        let mut lo = order_key(c_lo - b_hi);
        let mut hi = order_key(c_hi - b_lo);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.count_le(from_order_key(mid)) >= k {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        from_order_key(lo) + 0.0
    }
}

/// Map an f64 to a u64 whose unsigned order is `f64::total_cmp` order.
fn order_key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

fn from_order_key(key: u64) -> f64 {
    if key >> 63 == 1 {
        f64::from_bits(key & !(1 << 63))
    } else {
        f64::from_bits(!key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn hl(b: &[f64], c: &[f64], conf: f64) -> Shift {
        hodges_lehmann(b, c, conf).unwrap_or_else(|| panic!("non-empty"))
    }

    fn brute_sorted_diffs(b: &[f64], c: &[f64]) -> Vec<f64> {
        let mut d: Vec<f64> = c.iter().flat_map(|&y| b.iter().map(move |&x| y - x)).collect();
        d.sort_by(f64::total_cmp);
        d
    }

    #[test]
    fn empty_is_none() {
        assert_eq!(hodges_lehmann(&[], &[1.0], 0.95), None);
        assert_eq!(hodges_lehmann(&[1.0], &[], 0.95), None);
    }

    #[test]
    fn three_vs_three() {
        // Differences of [4,5,6] - [1,2,3]: {1,2,2,3,3,3,4,4,5}, median 3.
        // With m = n = 3, P(U = 0) = 1/20 = 0.05 > 0.025: no 95% CI (R warns
        // "requested conf.level not achievable" in this case).
        let s = hl(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.95);
        assert_eq!(s.estimate, 3.0);
        assert_eq!(s.ci, None);
        // At 90%, k = 1: (min, max) = (1, 5), coverage 1 - 2/20 = 0.90.
        assert_eq!(hl(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.90).ci, Some((1.0, 5.0)));
    }

    #[test]
    fn pure_shift_is_recovered() {
        // candidate = baseline + 10: {a_j - a_i} is symmetric about 0, so the
        // median difference is exactly 10.
        let a: Vec<f64> = [12., 15., 11., 19., 14., 13., 17., 22., 16., 18.].to_vec();
        let b: Vec<f64> = a.iter().map(|x| x + 10.0).collect();
        let s = hl(&a, &b, 0.95);
        assert_eq!(s.estimate, 10.0);
        let (lo, hi) = s.ci.unwrap_or_else(|| panic!("ci"));
        assert!(lo <= 10.0 && 10.0 <= hi);
        // m = n = 10 exact: k = 24, one more than the tabulated two-sided 5%
        // critical value U = 23 (standard Mann–Whitney tables), coverage
        // 1 - 2 * 999/46189 = 0.95674.
        let d = brute_sorted_diffs(&a, &b);
        assert_eq!(s.ci, Some((d[23], d[100 - 24])));
    }

    #[test]
    fn r_documentation_example_conf_int() {
        // Data of R's ?wilcox.test example (Hollander & Wolfe 1973, p. 69).
        // wilcox.test(x, y, conf.int = TRUE) computes, for the exact case,
        // diffs = sort(outer(x, y, "-")); qu = qwilcox(0.025, 10, 5) = 9;
        // CI = (diffs[9], diffs[50 - 9 + 1]); estimate = median(diffs).
        // By hand: P(U <= 8) = 20/1001 <= 0.025 < P(U <= 9), so k = 9, the
        // CI is (D_9, D_42) = (-0.15, 0.76), estimate 0.305 (R prints
        // "difference in location 0.305").
        let x = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46];
        let y = [1.15, 0.88, 0.90, 0.74, 1.21];
        let s = hl(&y, &x, 0.95);
        assert!((s.estimate - 0.305).abs() < 1e-12);
        let (lo, hi) = s.ci.unwrap_or_else(|| panic!("ci"));
        assert!((lo + 0.15).abs() < 1e-12 && (hi - 0.76).abs() < 1e-12);
    }

    #[test]
    fn published_critical_values() {
        // Standard two-sided 5% Mann–Whitney critical values (reject if
        // U <= U_crit): n1 = n2 = 4: 0; 5: 2; 6: 5; 10: 23; 20: 127. The Moses
        // rank is k = U_crit + 1.
        for (n, ucrit) in [(4usize, 0u64), (5, 2), (6, 5), (10, 23), (20, 127)] {
            let b: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let c: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();
            assert_eq!(moses_rank(&b, &c, 0.95), Some(ucrit + 1), "n = {n}");
        }
    }

    #[test]
    fn normal_approximation_rank() {
        // m = n = 60 (no ties): k = floor(1800 - 1.959964 * 190.5256 + 0.5) =
        // floor(1427.08) = 1427 -- which also equals the exact critical rank
        // (computed with exact integer counts in Python).
        let b: Vec<f64> = (0..60).map(f64::from).collect();
        let c: Vec<f64> = (0..60).map(|i| f64::from(i) + 0.5).collect();
        assert_eq!(moses_rank(&b, &c, 0.95), Some(1427));
    }

    #[test]
    fn selection_matches_brute_force() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for &(m, n) in &[(1usize, 1usize), (1, 7), (7, 3), (30, 45), (120, 80)] {
            // Rounded values create ties; negative values exercise sign handling.
            let b: Vec<f64> = (0..m).map(|_| (rng.gen_range(-50.0..50.0f64)).round()).collect();
            let c: Vec<f64> = (0..n).map(|_| rng.gen_range(-40.0..60.0f64) * 0.37).collect();
            let mut bs = b.clone();
            let mut cs = c.clone();
            bs.sort_by(f64::total_cmp);
            cs.sort_by(f64::total_cmp);
            let diffs = PairwiseDiffs { base: &bs, cand: &cs };
            let d = brute_sorted_diffs(&b, &c);
            for (i, &want) in d.iter().enumerate() {
                assert_eq!(diffs.kth(i as u64 + 1), want + 0.0, "m={m} n={n} k={}", i + 1);
            }
            let s = hl(&b, &c, 0.95);
            let mid = d.len() / 2;
            let want = if d.len() % 2 == 1 {
                d[mid]
            } else {
                0.5 * (d[mid - 1] + d[mid])
            };
            assert_eq!(s.estimate, want + 0.0);
        }
    }

    #[test]
    fn large_samples_do_not_materialise() {
        // 3000 x 3000 = 9 million differences; candidate = baseline + 5.
        let b: Vec<f64> = (0..3000).map(|i| f64::from(i) * 0.01).collect();
        let c: Vec<f64> = b.iter().map(|x| x + 5.0).collect();
        let s = hl(&b, &c, 0.95);
        assert!((s.estimate - 5.0).abs() < 1e-9);
        let (lo, hi) = s.ci.unwrap_or_else(|| panic!("ci"));
        assert!(lo < 5.0 && 5.0 < hi && hi - lo < 1.0);
    }

    #[test]
    fn order_key_roundtrip() {
        for x in [-1e300, -2.5, -0.0, 0.0, 1e-310, 3.25, f64::MAX] {
            assert_eq!(from_order_key(order_key(x)).to_bits(), x.to_bits());
        }
        assert!(order_key(-1.0) < order_key(-0.0));
        assert!(order_key(-0.0) < order_key(0.0));
        assert!(order_key(0.0) < order_key(1.0));
    }
}
