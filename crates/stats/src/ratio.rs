//! A ratio of two samples' locations (candidate ÷ baseline) with a
//! distribution-free CI: the Hodges–Lehmann shift and its Moses interval
//! computed on log(times), exponentiated.
//!
//! Why logs: a tracer or an adapter slows a start by a factor more than by a
//! fixed number of milliseconds, so the shift model fits best on the log
//! scale. exp is monotone, so the estimate is the median of all pairwise
//! ratios candidate_j / baseline_i and the interval keeps the Moses interval's
//! exact coverage (under the shift-on-log model) — the same rank statistics
//! the verdicts use, rather than a resampled (bootstrap) interval whose
//! coverage is only asymptotic and poor at the 5–20 runs explain takes.

use serde::{Deserialize, Serialize};

use super::hodges_lehmann::hodges_lehmann;

/// candidate ÷ baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// exp of the Hodges–Lehmann shift of the logs: the median pairwise ratio.
    pub estimate: f64,
    /// exp of the Moses CI of the logs; `None` when the samples are too small
    /// for the confidence (e.g. 3 vs 3 at 95 %).
    pub ci: Option<(f64, f64)>,
}

/// The ratio candidate ÷ baseline with its CI at `confidence`; `None` when a
/// sample is empty or holds a value that is not positive and finite (a log is
/// needed).
pub fn ratio(baseline: &[f64], candidate: &[f64], confidence: f64) -> Option<Ratio> {
    let logs = |xs: &[f64]| -> Option<Vec<f64>> {
        xs.iter()
            .map(|&x| (x > 0.0 && x.is_finite()).then(|| x.ln()))
            .collect()
    };
    let shift = hodges_lehmann(&logs(baseline)?, &logs(candidate)?, confidence)?;
    Some(Ratio {
        estimate: shift.estimate.exp(),
        ci: shift.ci.map(|(lo, hi)| (lo.exp(), hi.exp())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn empty_or_non_positive_is_none() {
        assert_eq!(ratio(&[], &[1.0], 0.95), None);
        assert_eq!(ratio(&[1.0], &[], 0.95), None);
        assert_eq!(ratio(&[1.0, 0.0], &[2.0], 0.95), None);
        assert_eq!(ratio(&[1.0], &[-2.0], 0.95), None);
        assert_eq!(ratio(&[1.0], &[f64::INFINITY], 0.95), None);
    }

    #[test]
    fn one_each_is_the_plain_ratio() {
        let r = ratio(&[4.0], &[5.0], 0.95).unwrap_or_else(|| panic!("ratio"));
        assert!(close(r.estimate, 1.25));
        assert_eq!(r.ci, None);
    }

    #[test]
    fn pure_scaling_is_recovered() {
        // candidate = 1.2 × baseline: log-differences are symmetric about
        // log 1.2, so the estimate is 1.2 and the interval holds it.
        let a = [12., 15., 11., 19., 14., 13., 17., 22., 16., 18.];
        let b: Vec<f64> = a.iter().map(|x| x * 1.2).collect();
        let r = ratio(&a, &b, 0.95).unwrap_or_else(|| panic!("ratio"));
        assert!(close(r.estimate, 1.2), "{r:?}");
        let (lo, hi) = r.ci.unwrap_or_else(|| panic!("ci"));
        assert!(lo < 1.2 && 1.2 < hi, "{r:?}");
        // And swapping the samples inverts everything.
        let back = ratio(&b, &a, 0.95).unwrap_or_else(|| panic!("ratio"));
        assert!(close(back.estimate, 1.0 / 1.2));
        let (blo, bhi) = back.ci.unwrap_or_else(|| panic!("ci"));
        assert!(close(blo, 1.0 / hi) && close(bhi, 1.0 / lo), "{back:?}");
    }

    #[test]
    fn r_documentation_example_on_logs() {
        // R's ?wilcox.test data (Hollander & Wolfe 1973, p. 69), as in the
        // hodges_lehmann test, on the log scale. R 4.2.2:
        //   x <- c(0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46)
        //   y <- c(1.15, 0.88, 0.90, 0.74, 1.21)
        //   w <- wilcox.test(log(x), log(y), conf.int = TRUE)
        //   exp(w$estimate)  # 1.31176713707837
        //   exp(w$conf.int)  # 0.859504132231405 1.959459459459459
        // Exact case, k = 9 (as there): the CI is (R_9, R_42) of the 50 sorted
        // ratios x_i / y_j = (1.04/1.21, 1.45/0.74), the estimate the geometric
        // mean of R_25 and R_26.
        let x = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46];
        let y = [1.15, 0.88, 0.90, 0.74, 1.21];
        let r = ratio(&y, &x, 0.95).unwrap_or_else(|| panic!("ratio"));
        assert!(close(r.estimate, 1.31176713707837), "{r:?}");
        let (lo, hi) = r.ci.unwrap_or_else(|| panic!("ci"));
        assert!(
            close(lo, 0.859504132231405) && close(hi, 1.959459459459459),
            "{r:?}"
        );
        assert!(close(lo, 1.04 / 1.21) && close(hi, 1.45 / 0.74));
    }

    #[test]
    fn r_tracer_overhead_like_example() {
        // An overhead of ~19 %, 8 runs a side. R 4.2.2:
        //   a <- c(101.2, 98.7, 103.4, 99.9, 100.8, 102.2, 97.6, 104.1)
        //   b <- c(118.3, 121.0, 116.4, 119.9, 123.5, 117.2, 120.6, 122.8)
        //   w <- wilcox.test(log(b), log(a), conf.int = TRUE)
        //   exp(w$estimate)  # 1.18752877970151
        //   exp(w$conf.int)  # 1.15850144092219 1.21825396825397
        let a = [101.2, 98.7, 103.4, 99.9, 100.8, 102.2, 97.6, 104.1];
        let b = [118.3, 121.0, 116.4, 119.9, 123.5, 117.2, 120.6, 122.8];
        let r = ratio(&a, &b, 0.95).unwrap_or_else(|| panic!("ratio"));
        assert!(close(r.estimate, 1.18752877970151), "{r:?}");
        let (lo, hi) = r.ci.unwrap_or_else(|| panic!("ci"));
        assert!(
            close(lo, 1.15850144092219) && close(hi, 1.21825396825397),
            "{r:?}"
        );
    }
}
