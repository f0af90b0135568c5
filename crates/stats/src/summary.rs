//! One-sample description: quantiles, a distribution-free CI for the median,
//! and Tukey-fence outlier flags.

use serde::{Deserialize, Serialize};

/// Descriptive statistics of one sample. Quantiles are Hyndman–Fan type 7.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Sample standard deviation (divisor n - 1); 0 when n = 1.
    pub sd: f64,
    pub p50: f64,
    /// 95% order-statistic CI for the median; `None` when n <= 5.
    pub p50_ci: Option<(f64, f64)>,
    pub p90: f64,
    pub p99: f64,
    /// `n >= 10`: see [`summarize`] for the rule.
    pub p90_reliable: bool,
    /// `n >= 100`: see [`summarize`] for the rule.
    pub p99_reliable: bool,
    /// `outliers_low + outliers_high`.
    pub outliers: usize,
    /// Values below Q1 - 1.5 IQR.
    pub outliers_low: usize,
    /// Values above Q3 + 1.5 IQR.
    pub outliers_high: usize,
}

/// Quantile of an ascending-sorted slice by Hyndman & Fan (1996) type 7, the
/// default of R's `quantile` and numpy's `percentile` ("linear"): with
/// h = (n - 1) q, interpolate linearly between x[floor h] and x[floor h + 1]
/// (0-based). `q` is clamped to [0, 1]. Returns NaN for an empty slice.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = (h.floor() as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let frac = h - lo as f64;
    sorted[lo] + frac * (sorted[hi] - sorted[lo])
}

/// Median of an ascending-sorted slice (NaN when empty).
pub(crate) fn median_sorted(sorted: &[f64]) -> f64 {
    quantile(sorted, 0.5)
}

/// Distribution-free confidence interval for the median from order statistics
/// of an ascending-sorted slice.
///
/// The interval (x_(k), x_(n+1-k)) (1-based) covers the population median with
/// probability P(k <= B <= n - k) = 1 - 2 P(B <= k - 1), B ~ Binomial(n, 1/2),
/// for any continuous distribution. We take the largest k whose coverage is
/// at least `confidence` (the narrowest such interval). The binomial CDF is
/// summed exactly in log space, so this is exact for any n (O(n) time).
///
/// Returns `None` when even (x_(1), x_(n)), coverage 1 - 2^(1-n), falls short
/// (n <= 5 at 95%), for an empty slice, or for `confidence` outside (0, 1).
pub fn median_ci(sorted: &[f64], confidence: f64) -> Option<(f64, f64)> {
    let n = sorted.len();
    if n == 0 || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let k = median_ci_rank(n, confidence)?;
    Some((sorted[k - 1], sorted[n - k]))
}

/// The 1-based rank k of [`median_ci`]'s lower bound (upper bound is n + 1 - k).
fn median_ci_rank(n: usize, confidence: f64) -> Option<usize> {
    // Need P(B <= k - 1) <= (1 - confidence) / 2; tiny slack so that exact
    // equality (coverage == confidence) is accepted despite decimal rounding.
    let ln_half_alpha = ((1.0 - confidence) / 2.0).ln() + 1e-9;
    let nf = n as f64;
    let mut ln_pmf = -nf * std::f64::consts::LN_2; // ln P(B = 0)
    let mut ln_cdf = ln_pmf; // ln P(B <= 0)
    let mut k = 0;
    let max_k = n.div_ceil(2);
    for j in 0..max_k {
        // Invariant: ln_cdf = ln P(B <= j).
        if ln_cdf > ln_half_alpha {
            break;
        }
        k = j + 1;
        let jf = j as f64;
        ln_pmf += ((nf - jf) / (jf + 1.0)).ln();
        ln_cdf += (ln_pmf - ln_cdf).exp().ln_1p();
    }
    (k >= 1).then_some(k)
}

/// Describe a sample (any order; NaN-free). `None` for empty input.
///
/// * `sd` is the sample standard deviation (n - 1), 0 for n = 1.
/// * `p50_ci` is [`median_ci`] at 95%.
/// * Tail quantiles are only *observed* when the sample reaches far enough into
///   the tail: about 1/(1 - q) values are needed before the q-quantile stops
///   being an interpolation towards the maximum. Hence `p90_reliable = n >= 10`
///   and `p99_reliable = n >= 100`. The values are always reported; the flags
///   say whether to trust them.
/// * Outliers use Tukey's fences, Q1 - 1.5 IQR and Q3 + 1.5 IQR (type-7
///   quartiles). They are counted (flagged) only, never dropped.
pub fn summarize(xs: &[f64]) -> Option<Summary> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let nf = n as f64;
    let mean = sorted.iter().sum::<f64>() / nf;
    let sd = if n > 1 {
        let ss: f64 = sorted.iter().map(|x| (x - mean) * (x - mean)).sum();
        (ss / (nf - 1.0)).sqrt()
    } else {
        0.0
    };
    let q1 = quantile(&sorted, 0.25);
    let q3 = quantile(&sorted, 0.75);
    let iqr = q3 - q1;
    let low_fence = q1 - 1.5 * iqr;
    let high_fence = q3 + 1.5 * iqr;
    let outliers_low = sorted.iter().filter(|&&x| x < low_fence).count();
    let outliers_high = sorted.iter().filter(|&&x| x > high_fence).count();
    Some(Summary {
        n,
        min: sorted[0],
        max: sorted[n - 1],
        mean,
        sd,
        p50: median_sorted(&sorted),
        p50_ci: median_ci(&sorted, 0.95),
        p90: quantile(&sorted, 0.90),
        p99: quantile(&sorted, 0.99),
        p90_reliable: n >= 10,
        p99_reliable: n >= 100,
        outliers: outliers_low + outliers_high,
        outliers_low,
        outliers_high,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn quantile_type7_matches_numpy() {
        // numpy.percentile / numpy.quantile default ("linear" = H&F type 7),
        // computed by hand: h = (n-1) q.
        let x = [1.0, 2.0, 3.0, 4.0];
        assert!(close(quantile(&x, 0.9), 3.7)); // h = 2.7 -> 3 + 0.7 * 1
        assert!(close(quantile(&x, 0.5), 2.5)); // h = 1.5
        assert!(close(quantile(&x, 0.25), 1.75)); // h = 0.75
        assert!(close(quantile(&x, 0.0), 1.0));
        assert!(close(quantile(&x, 1.0), 4.0));
        // np.quantile([10, 20, 30, 40, 50], 0.99) = 49.6 (h = 3.96)
        let y = [10.0, 20.0, 30.0, 40.0, 50.0];
        assert!(close(quantile(&y, 0.99), 49.6));
        // np.quantile([7], q) = 7 for any q; numbers outside [0, 1] clamp.
        assert!(close(quantile(&[7.0], 0.3), 7.0));
        assert!(close(quantile(&x, 1.5), 4.0));
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn median_ci_matches_published_table() {
        // Published table of distribution-free CIs for the median (e.g. the
        // "Confidence Intervals for the Population Median" table, Table A.7 in
        // several textbooks, and Gardner & Altman, "Statistics with Confidence",
        // BMJ 1989): n=6 -> [x(1), x(6)] 96.9%; n=10 -> [x(2), x(9)] 97.9%;
        // n=15 -> [x(4), x(12)] 96.5%; n=17 -> [x(5), x(13)] 95.1%;
        // n=20 -> [x(6), x(15)] 95.9%; n=5 -> only [x(1), x(5)] at 93.8% (< 95%).
        // Coverage for n=10, k=2: 1 - 2 (1 + 10) / 1024 = 0.978515625.
        let seq = |n: usize| (1..=n).map(|i| i as f64).collect::<Vec<_>>();
        assert_eq!(median_ci(&seq(6), 0.95), Some((1.0, 6.0)));
        assert_eq!(median_ci(&seq(10), 0.95), Some((2.0, 9.0)));
        assert_eq!(median_ci(&seq(15), 0.95), Some((4.0, 12.0)));
        assert_eq!(median_ci(&seq(17), 0.95), Some((5.0, 13.0)));
        assert_eq!(median_ci(&seq(20), 0.95), Some((6.0, 15.0)));
        assert_eq!(median_ci(&seq(5), 0.95), None);
        assert_eq!(median_ci(&seq(1), 0.95), None);
        assert_eq!(median_ci(&[], 0.95), None);
        // Same table at the 93% level: n=5 [x(1), x(5)] 93.8%.
        assert_eq!(median_ci(&seq(5), 0.93), Some((1.0, 5.0)));
        // Values, not ranks, are returned.
        let x = [3.1, 4.7, 5.0, 5.2, 6.8, 7.0, 7.7, 8.1, 9.9, 12.5];
        assert_eq!(median_ci(&x, 0.95), Some((4.7, 9.9)));
    }

    #[test]
    fn median_ci_large_n_exact_binomial() {
        // Ranks computed with exact rational arithmetic (Python fractions,
        // summing math.comb(n, j) / 2^n): n=100 -> (40, 61), which is also the
        // published table value (Gardner & Altman, "Statistics with
        // Confidence"); n=1000 -> (469, 532); n=10000 -> (4902, 5099).
        for (n, k) in [(100, 40), (1000, 469), (10000, 4902)] {
            assert_eq!(median_ci_rank(n, 0.95), Some(k), "n = {n}");
        }
        // n = 100000 must not underflow or take long; normal approximation
        // gives k ~ n/2 - 1.96 sqrt(n)/2 = 49690.1.
        let k = median_ci_rank(100_000, 0.95).unwrap_or(0);
        assert!((49685..=49695).contains(&k), "k = {k}");
    }

    #[test]
    fn summarize_basic() {
        assert_eq!(summarize(&[]), None);
        let s = summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap_or_else(|| panic!("some"));
        assert_eq!(s.n, 4);
        assert_eq!((s.min, s.max), (1.0, 4.0));
        assert!(close(s.mean, 2.5));
        // sd of 1..4 with n-1: sqrt(5/3)
        assert!(close(s.sd, (5.0f64 / 3.0).sqrt()));
        assert!(close(s.p50, 2.5));
        assert!(close(s.p90, 3.7));
        assert!(close(s.p99, 3.97));
        assert_eq!(s.p50_ci, None);
        assert!(!s.p90_reliable && !s.p99_reliable);
        assert_eq!(s.outliers, 0);

        let one = summarize(&[5.0]).unwrap_or_else(|| panic!("some"));
        assert_eq!(one.sd, 0.0);
        assert_eq!((one.p50, one.p90, one.p99), (5.0, 5.0, 5.0));
    }

    #[test]
    fn summarize_outliers_tukey() {
        // 1..=10 plus 100 and -50: with n = 12, type-7 Q1 = 2.75 (h = 2.75),
        // Q3 = 8.25 (h = 8.25), IQR = 5.5, fences -5.5 and 16.5 -> one low
        // and one high outlier.
        let mut xs: Vec<f64> = (1..=10).map(f64::from).collect();
        xs.push(100.0);
        xs.push(-50.0);
        let s = summarize(&xs).unwrap_or_else(|| panic!("some"));
        assert_eq!((s.outliers_low, s.outliers_high, s.outliers), (1, 1, 2));
        assert_eq!(s.n, 12); // flagged, never dropped
        assert_eq!((s.min, s.max), (-50.0, 100.0));
        assert!(s.p90_reliable);
        assert!(!s.p99_reliable);
        assert!(summarize(&vec![1.0; 100]).is_some_and(|s| s.p99_reliable && s.outliers == 0));
    }
}
