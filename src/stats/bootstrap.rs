//! Percentile bootstrap for the ratio of medians.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::summary::{median_sorted, quantile};

/// median(candidate) / median(baseline) with a bootstrap CI.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratio {
    /// Ratio of the observed medians.
    pub estimate: f64,
    /// Percentile bootstrap interval.
    pub ci: (f64, f64),
}

/// Percentile bootstrap CI for median(candidate) / median(baseline).
///
/// Each of `resamples` rounds draws `baseline.len()` values from `baseline`
/// and `candidate.len()` from `candidate`, with replacement and independently,
/// and records median(candidate*) / median(baseline*). The CI is the type-7
/// (alpha/2, 1 - alpha/2) quantiles of those ratios, alpha = 1 - confidence.
/// Rounds whose ratio is not finite (resampled baseline median 0) are skipped.
/// Deterministic for a given `seed` (`StdRng::seed_from_u64`).
///
/// `None` for an empty sample, `resamples == 0`, `confidence` outside (0, 1),
/// an observed ratio that is not finite, or no finite bootstrap ratio.
pub fn bootstrap_median_ratio(
    baseline: &[f64],
    candidate: &[f64],
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> Option<Ratio> {
    if baseline.is_empty()
        || candidate.is_empty()
        || resamples == 0
        || !(confidence > 0.0 && confidence < 1.0)
    {
        return None;
    }
    let estimate = median(&mut baseline.to_vec()).and_then(|b| {
        let c = median(&mut candidate.to_vec())?;
        Some(c / b)
    })?;
    if !estimate.is_finite() {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut buf_b = vec![0.0; baseline.len()];
    let mut buf_c = vec![0.0; candidate.len()];
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        resample(&mut rng, baseline, &mut buf_b);
        resample(&mut rng, candidate, &mut buf_c);
        if let (Some(b), Some(c)) = (median(&mut buf_b), median(&mut buf_c)) {
            let r = c / b;
            if r.is_finite() {
                ratios.push(r);
            }
        }
    }
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let alpha = 1.0 - confidence;
    Some(Ratio {
        estimate,
        ci: (
            quantile(&ratios, alpha / 2.0),
            quantile(&ratios, 1.0 - alpha / 2.0),
        ),
    })
}

fn resample(rng: &mut StdRng, from: &[f64], into: &mut [f64]) {
    for slot in into.iter_mut() {
        *slot = from[rng.gen_range(0..from.len())];
    }
}

/// Median (type 7, i.e. mean of the middle two for even n) by selection;
/// reorders `xs`. `None` when empty.
fn median(xs: &mut [f64]) -> Option<f64> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    if n <= 16 {
        xs.sort_by(f64::total_cmp);
        return Some(median_sorted(xs));
    }
    let mid = n / 2;
    let (left, &mut upper, _) = xs.select_nth_unstable_by(mid, f64::total_cmp);
    if n % 2 == 1 {
        return Some(upper);
    }
    let lower = left.iter().copied().max_by(f64::total_cmp)?;
    Some(lower + 0.5 * (upper - lower))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n).map(|_| rng.gen_range(50.0..150.0)).collect()
    }

    #[test]
    fn median_by_selection_matches_sorting() {
        for n in [1, 2, 3, 16, 17, 18, 101, 200] {
            let x = sample(n, n as u64);
            let mut sorted = x.clone();
            sorted.sort_by(f64::total_cmp);
            let want = median_sorted(&sorted);
            let got = median(&mut x.clone()).unwrap_or(f64::NAN);
            assert!((got - want).abs() < 1e-12, "n = {n}");
        }
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn doubled_sample_ratio_is_two() {
        // b = 2 a exactly: the observed ratio is exactly 2 and every bootstrap
        // ratio is near 2; the CI must contain the true ratio 2.
        let a = sample(40, 1);
        let b: Vec<f64> = a.iter().map(|x| 2.0 * x).collect();
        let r = bootstrap_median_ratio(&a, &b, 2000, 0.95, 42).unwrap_or_else(|| panic!("some"));
        assert_eq!(r.estimate, 2.0);
        assert!(r.ci.0 <= 2.0 && 2.0 <= r.ci.1, "{:?}", r.ci);
        assert!(r.ci.0 > 1.5 && r.ci.1 < 2.5, "{:?}", r.ci);
    }

    #[test]
    fn deterministic_for_seed() {
        let a = sample(30, 3);
        let b = sample(25, 4);
        let r1 = bootstrap_median_ratio(&a, &b, 500, 0.95, 9);
        let r2 = bootstrap_median_ratio(&a, &b, 500, 0.95, 9);
        let r3 = bootstrap_median_ratio(&a, &b, 500, 0.95, 10);
        assert!(r1.is_some());
        assert_eq!(r1, r2);
        assert_ne!(r1, r3);
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(bootstrap_median_ratio(&[], &[1.0], 100, 0.95, 0), None);
        assert_eq!(bootstrap_median_ratio(&[1.0], &[], 100, 0.95, 0), None);
        assert_eq!(bootstrap_median_ratio(&[1.0], &[1.0], 0, 0.95, 0), None);
        assert_eq!(bootstrap_median_ratio(&[1.0], &[1.0], 10, 1.0, 0), None);
        assert_eq!(bootstrap_median_ratio(&[0.0], &[1.0], 10, 0.95, 0), None);
        let one = bootstrap_median_ratio(&[2.0], &[3.0], 10, 0.95, 0);
        assert_eq!(
            one,
            Some(Ratio {
                estimate: 1.5,
                ci: (1.5, 1.5)
            })
        );
    }
}
