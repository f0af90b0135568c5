//! Mann–Whitney U (Wilcoxon rank-sum) test, two-sided.
//!
//! Matches R's `wilcox.test(a, b)` defaults: the exact null distribution when
//! both samples have fewer than 50 values and there are no ties, otherwise the
//! normal approximation with tie-corrected variance and continuity correction.

use serde::Serialize;

use super::normal;

/// Both samples must be smaller than this (and tie-free) for the exact
/// distribution; this is R's `wilcox.test` rule, so p-values are comparable.
/// The counts fit in `i128` (C(98, 49) ~ 2.5e28).
pub(crate) const EXACT_LIMIT: usize = 50;

/// Result of a two-sided Mann–Whitney U test of `a` against `b`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U for the first sample: #{(i, j): a_i > b_j} + 0.5 #{a_i == b_j}
    /// (R's `W`). Ranges over [0, n_a n_b]; n_a n_b / 2 under the null.
    pub u: f64,
    /// Normal statistic (U - n_a n_b / 2 - 0.5 sign) / sigma with tie-corrected
    /// sigma. Reported even when `p_value` comes from the exact distribution;
    /// positive when `a` tends to be larger.
    pub z: f64,
    /// Two-sided p-value (exact or normal approximation, see module docs).
    pub p_value: f64,
}

/// Rank-sum facts about two samples, shared with the Hodges–Lehmann CI.
pub(crate) struct RankSum {
    /// U for the first sample.
    pub u: f64,
    /// sum over tie groups of (t^3 - t); 0 means no ties.
    pub tie_term: f64,
}

/// Midrank the pooled sample and return U for `a` and the tie term.
pub(crate) fn rank_sum(a: &[f64], b: &[f64]) -> RankSum {
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|p, q| p.0.total_cmp(&q.0));
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < pooled.len() {
        // `==` (not total_cmp) so that -0.0 and 0.0 tie.
        let mut j = i + 1;
        while j < pooled.len() && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        let t = (j - i) as f64;
        let midrank = (i + 1 + j) as f64 / 2.0; // mean of 1-based ranks i+1..=j
        let in_a = pooled[i..j].iter().filter(|p| p.1).count() as f64;
        rank_sum_a += midrank * in_a;
        tie_term += t * t * t - t;
        i = j;
    }
    let m = a.len() as f64;
    RankSum {
        u: rank_sum_a - m * (m + 1.0) / 2.0,
        tie_term,
    }
}

/// Whether the exact null distribution applies (R's rule).
pub(crate) fn use_exact(m: usize, n: usize, tie_term: f64) -> bool {
    m < EXACT_LIMIT && n < EXACT_LIMIT && tie_term == 0.0
}

/// Null standard deviation of U with the tie correction
/// sigma^2 = m n / 12 * ((N + 1) - sum(t^3 - t) / (N (N - 1))).
pub(crate) fn null_sigma(m: usize, n: usize, tie_term: f64) -> f64 {
    let (mf, nf) = (m as f64, n as f64);
    let big_n = mf + nf;
    let correction = if big_n > 1.0 {
        tie_term / (big_n * (big_n - 1.0))
    } else {
        0.0
    };
    (mf * nf / 12.0 * ((big_n + 1.0) - correction)).max(0.0).sqrt()
}

/// Exact null distribution of U for sizes m, n without ties: `counts[u]` is the
/// number of the C(m+n, m) equally likely rank arrangements giving U = u.
///
/// This is the counting recurrence f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u)
/// solved in closed form: the generating function is the Gaussian binomial
/// coefficient prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), built one factor at a
/// time on truncated power series with exact integer arithmetic.
pub(crate) fn null_counts(m: usize, n: usize) -> Vec<i128> {
    let len = m * n + 1;
    let mut c = vec![0i128; len];
    c[0] = 1;
    for i in 1..=m {
        let up = n + i;
        // multiply by (1 - q^up)
        for u in (up..len).rev() {
            c[u] -= c[u - up];
        }
        // divide by (1 - q^i): c'[u] = c[u] + c'[u - i]
        for u in i..len {
            c[u] += c[u - i];
        }
    }
    c
}

/// Two-sided Mann–Whitney U test; `None` if either sample is empty.
///
/// p-value: exact when both samples have < 50 values and there are no ties
/// (p = min(1, 2 min(P(U <= u), P(U >= u)))); otherwise normal approximation
/// with tie correction and continuity correction, as R's `wilcox.test`.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return None;
    }
    let rs = rank_sum(a, b);
    let mean = (m * n) as f64 / 2.0;
    let sigma = null_sigma(m, n, rs.tie_term);
    let d = rs.u - mean;
    let continuity = if d > 0.0 {
        0.5
    } else if d < 0.0 {
        -0.5
    } else {
        0.0
    };
    let z = if sigma > 0.0 {
        (d - continuity) / sigma
    } else {
        0.0
    };
    let p_value = if use_exact(m, n, rs.tie_term) {
        exact_two_sided(m, n, rs.u)
    } else if sigma > 0.0 {
        normal::two_sided_p(z)
    } else {
        1.0 // every value tied: no evidence either way
    };
    Some(MannWhitney { u: rs.u, z, p_value })
}

fn exact_two_sided(m: usize, n: usize, u: f64) -> f64 {
    let counts = null_counts(m, n);
    let total: i128 = counts.iter().sum();
    // Without ties U is an integer in [0, m n].
    let u = u.round().clamp(0.0, (m * n) as f64) as usize;
    let lower: i128 = counts[..=u].iter().sum();
    let upper: i128 = counts[u..].iter().sum();
    (2.0 * lower.min(upper) as f64 / total as f64).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mw(a: &[f64], b: &[f64]) -> MannWhitney {
        mann_whitney(a, b).unwrap_or_else(|| panic!("non-empty"))
    }

    #[test]
    fn empty_is_none() {
        assert_eq!(mann_whitney(&[], &[1.0]), None);
        assert_eq!(mann_whitney(&[1.0], &[]), None);
    }

    #[test]
    fn null_counts_are_a_distribution() {
        // Counts sum to C(m+n, m) and are symmetric; m=n=3 gives the textbook
        // 1 1 2 3 3 3 3 2 1 1 (C(6,3) = 20).
        assert_eq!(null_counts(3, 3), vec![1, 1, 2, 3, 3, 3, 3, 2, 1, 1]);
        let c = null_counts(49, 49);
        let total: i128 = c.iter().sum();
        assert_eq!(total, 25_477_612_258_980_856_902_730_428_600); // C(98, 49)
        assert!(c.iter().zip(c.iter().rev()).all(|(x, y)| x == y));
        assert_eq!(null_counts(4, 7), null_counts(7, 4));
    }

    #[test]
    fn wikipedia_tortoise_and_hare() {
        // Wikipedia, "Mann–Whitney U test", Illustration of calculation methods:
        // finishing order T H H H H H T T T T T H; the tortoises beat 11
        // (tortoise, hare) pairs (U_T = 11) and the hares 25 (U_H = 25).
        // Our U counts a_i > b_j on finishing *position*, i.e. pairs a loses.
        let tortoise = [1.0, 7.0, 8.0, 9.0, 10.0, 11.0];
        let hare = [2.0, 3.0, 4.0, 5.0, 6.0, 12.0];
        let t = mw(&tortoise, &hare);
        let h = mw(&hare, &tortoise);
        assert_eq!(t.u, 25.0); // = U_H: hares beating tortoises
        assert_eq!(h.u, 11.0); // = U_T
                               // Exact two-sided p = 2 P(U <= 11) = 2 * 143 / 924 = 13/42 (not
                               // significant, as Wikipedia notes; its critical value at 5% is 5).
        assert!((t.p_value - 13.0 / 42.0).abs() < 1e-15);
        assert!((h.p_value - 13.0 / 42.0).abs() < 1e-15);
        assert!(t.z > 0.0 && h.z < 0.0);
    }

    #[test]
    fn complete_separation_matches_r() {
        // R: wilcox.test(1:5, 6:10) -> W = 0, p-value = 0.007937 (= 2/252).
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        let r = mw(&a, &b);
        assert_eq!(r.u, 0.0);
        assert!((r.p_value - 2.0 / 252.0).abs() < 1e-15);
        let r = mw(&b, &a);
        assert_eq!(r.u, 25.0);
        assert!((r.p_value - 2.0 / 252.0).abs() < 1e-15);
    }

    #[test]
    fn r_documentation_example_exact() {
        // R ?wilcox.test example (Hollander & Wolfe 1973, p. 69, permeability
        // constants): wilcox.test(x, y, alternative = "g") gives
        // W = 35, p-value = 0.1272 (exact: P(U >= 35) = 382/3003).
        // Two-sided exact p is twice that: 764/3003 = 0.2544.
        let x = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46];
        let y = [1.15, 0.88, 0.90, 0.74, 1.21];
        let r = mw(&x, &y);
        assert_eq!(r.u, 35.0);
        assert!((r.p_value - 764.0 / 3003.0).abs() < 1e-15);
        assert!((r.p_value / 2.0 - 0.1272).abs() < 5e-5);
        // Same page, exact = FALSE, correct = FALSE: one-sided p = 0.1103, i.e.
        // z = (35 - 25) / sqrt(50 * 16 / 12) = 1.2247. With the continuity
        // correction our z is (35 - 25 - 0.5) / 8.1650 = 1.16351.
        assert!((r.z - 9.5 / (50.0f64 * 16.0 / 12.0).sqrt()).abs() < 1e-12);
        assert!((normal::upper_tail(10.0 / (50.0f64 * 16.0 / 12.0).sqrt()) - 0.1103).abs() < 5e-5);
    }

    #[test]
    fn r_airquality_ties_normal_approximation() {
        // R ?wilcox.test example: wilcox.test(Ozone ~ Month, data = airquality,
        // subset = Month %in% c(5, 8)) -> W = 127.5, p-value = 0.0001208
        // ("with continuity correction"; ties force the normal approximation).
        // Ozone for May and August (NAs removed) from R's airquality data set.
        let may = [
            41., 36., 12., 18., 28., 23., 19., 8., 7., 16., 11., 14., 18., 14., 34., 6., 30., 11., 1., 11.,
            4., 32., 23., 45., 115., 37.,
        ];
        let aug = [
            39., 9., 16., 78., 35., 66., 122., 89., 110., 44., 28., 65., 22., 59., 23., 31., 44., 21., 9.,
            45., 168., 73., 76., 118., 84., 85.,
        ];
        let r = mw(&may, &aug);
        assert_eq!(r.u, 127.5);
        assert!((r.p_value - 0.0001208).abs() < 5e-8, "p = {}", r.p_value);
        // Hand computation: z = (127.5 - 338 + 0.5) / sigma, sigma^2 =
        // 676/12 * (53 - sum(t^3 - t) / (52 * 51)) = -3.84448.
        assert!((r.z + 3.84448).abs() < 1e-5, "z = {}", r.z);
    }

    #[test]
    fn large_sample_normal_hand_computed() {
        // a = 1..=60, b = 40.5, 41.5, ..., 99.5 (60 each, no ties, so n >= 50
        // forces the normal approximation). a_i > b_j iff j-index <= i - 1, so
        // U = sum_{i=41}^{60} (i - 40) = 210. mean = 1800,
        // sigma = sqrt(3600 * 121 / 12) = 190.5256, z = (210 - 1800 + 0.5) /
        // 190.5256 = -8.342711, p = 2 Phi(-8.342711) = 7.2606e-17.
        let a: Vec<f64> = (1..=60).map(f64::from).collect();
        let b: Vec<f64> = (40..100).map(|k| f64::from(k) + 0.5).collect();
        let r = mw(&a, &b);
        assert_eq!(r.u, 210.0);
        assert!((r.z + 8.342711389790093).abs() < 1e-9);
        assert!(((r.p_value - 7.260621781124359e-17) / 7.260621781124359e-17).abs() < 1e-6);
    }

    #[test]
    fn all_tied_is_p_one() {
        let r = mw(&[3.0; 60], &[3.0; 60]);
        assert_eq!((r.u, r.z, r.p_value), (1800.0, 0.0, 1.0));
    }
}
