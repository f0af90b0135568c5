//! Statistics for cold-start samples. Pure functions over `&[f64]`; no knowledge
//! of processes, units or output. Cold-start times are skewed, so everything here
//! leads with the median and distribution-free intervals.
//!
//! API CONTRACT (other modules rely on these names; all structs derive
//! `Debug, Clone, PartialEq, serde::Serialize` and have `pub` fields):
//!
//! ```text
//! pub fn quantile(sorted: &[f64], q: f64) -> f64                  // Hyndman-Fan type 7 (numpy default); NaN if empty
//! pub fn median_ci(sorted: &[f64], confidence: f64) -> Option<(f64, f64)>
//!     // order-statistic (binomial) CI, None when n too small for the confidence (n <= 5 at 95%)
//! pub struct Summary { n: usize, min, max, mean, sd, p50: f64, p50_ci: Option<(f64, f64)>, p90, p99: f64,
//!                      p90_reliable: bool, p99_reliable: bool, outliers: usize,
//!                      outliers_low: usize, outliers_high: usize }
//! pub fn summarize(xs: &[f64]) -> Option<Summary>                 // None for empty input; xs in any order
//! pub struct MannWhitney { u: f64, z: f64, p_value: f64 }         // two-sided; u is R's W for (a, b)
//! pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney>
//! pub struct Shift { estimate: f64, ci: Option<(f64, f64)> }      // candidate - baseline
//! pub fn hodges_lehmann(baseline: &[f64], candidate: &[f64], confidence: f64) -> Option<Shift>
//! pub struct Ratio { estimate: f64, ci: (f64, f64) }              // median(candidate)/median(baseline)
//! pub fn bootstrap_median_ratio(baseline: &[f64], candidate: &[f64], resamples: usize,
//!                               confidence: f64, seed: u64) -> Option<Ratio>
//! pub enum Verdict { Faster, Slower, Same }  // serde: "faster"/"slower"/"same"; Display: "faster"/"slower"/"~"
//! pub struct Comparison { ratio: Option<Ratio>, shift: Option<Shift>,
//!                         mann_whitney: Option<MannWhitney>, verdict: Verdict }
//! pub fn compare(baseline: &[f64], candidate: &[f64]) -> Comparison
//! ```
//!
//! Inputs are assumed NaN-free; nothing here panics on empty input.
//!
//! Files: `summary` (quantile, median CI, summary, outliers), `mann_whitney`,
//! `hodges_lehmann`, `bootstrap`, and `normal` (private erfc / normal quantile).

use std::fmt;

use serde::Serialize;

mod bootstrap;
mod hodges_lehmann;
mod mann_whitney;
mod normal;
mod summary;

pub use bootstrap::{bootstrap_median_ratio, Ratio};
pub use hodges_lehmann::{hodges_lehmann, Shift};
pub use mann_whitney::{mann_whitney, MannWhitney};
// Part of the API contract even while the binary does not call every item.
#[allow(unused_imports)]
pub use summary::{median_ci, quantile, summarize, Summary};

/// Confidence level used by [`compare`].
pub const COMPARE_CONFIDENCE: f64 = 0.95;
/// Bootstrap resamples used by [`compare`].
pub const COMPARE_RESAMPLES: usize = 2000;
/// Fixed bootstrap seed used by [`compare`], so output is reproducible.
pub const COMPARE_SEED: u64 = 0x636f_6c64_7374_6172; // "coldstar"

/// Direction of a significant change of candidate relative to baseline
/// (for times: `Slower` means the candidate takes longer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Faster,
    Slower,
    /// No significant difference; displayed as "~".
    Same,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Same => "~",
        })
    }
}

/// Candidate versus baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// median(candidate) / median(baseline), 95% percentile bootstrap CI.
    pub ratio: Option<Ratio>,
    /// Hodges–Lehmann shift candidate - baseline, 95% Moses CI.
    pub shift: Option<Shift>,
    /// Mann–Whitney test of candidate against baseline (u is for candidate).
    pub mann_whitney: Option<MannWhitney>,
    pub verdict: Verdict,
}

/// Compare candidate with baseline at 95%.
///
/// Verdict: `Slower` if the Mann–Whitney p < 0.05 and the Hodges–Lehmann CI
/// lies entirely above 0; `Faster` if p < 0.05 and the CI lies entirely below
/// 0; otherwise `Same` (also when the CI is unavailable). With fewer than two
/// values in either sample, everything is `None` and the verdict `Same`.
/// The bootstrap uses [`COMPARE_RESAMPLES`] resamples and the fixed
/// [`COMPARE_SEED`], so the result is deterministic.
pub fn compare(baseline: &[f64], candidate: &[f64]) -> Comparison {
    if baseline.len() < 2 || candidate.len() < 2 {
        return Comparison {
            ratio: None,
            shift: None,
            mann_whitney: None,
            verdict: Verdict::Same,
        };
    }
    let alpha = 1.0 - COMPARE_CONFIDENCE;
    let mw = mann_whitney(candidate, baseline);
    let shift = hodges_lehmann(baseline, candidate, COMPARE_CONFIDENCE);
    let ratio = bootstrap_median_ratio(
        baseline,
        candidate,
        COMPARE_RESAMPLES,
        COMPARE_CONFIDENCE,
        COMPARE_SEED,
    );
    let significant = mw.as_ref().is_some_and(|m| m.p_value < alpha);
    let ci = shift.as_ref().and_then(|s| s.ci);
    let verdict = match ci {
        Some((lo, _)) if significant && lo > 0.0 => Verdict::Slower,
        Some((_, hi)) if significant && hi < 0.0 => Verdict::Faster,
        _ => Verdict::Same,
    };
    Comparison {
        ratio,
        shift,
        mann_whitney: mw,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Deterministic N(mean, sd) sample via Box–Muller.
    fn normal_sample(n: usize, mean: f64, sd: f64, seed: u64) -> Vec<f64> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let u1: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]
                let u2: f64 = rng.gen();
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                mean + sd * z
            })
            .collect()
    }

    #[test]
    fn identical_samples_are_same() {
        let a = normal_sample(30, 100.0, 5.0, 1);
        let c = compare(&a, &a);
        assert_eq!(c.verdict, Verdict::Same);
        let mw = c.mann_whitney.unwrap_or_else(|| panic!("mw"));
        assert_eq!(mw.u, 450.0);
        assert_eq!(mw.p_value, 1.0);
        assert_eq!(c.shift.map(|s| s.estimate), Some(0.0));
        assert_eq!(c.ratio.map(|r| r.estimate), Some(1.0));
    }

    #[test]
    fn clear_shift_is_detected_both_ways() {
        let fast = normal_sample(30, 100.0, 5.0, 11);
        let slow = normal_sample(30, 150.0, 5.0, 12);
        let c = compare(&fast, &slow);
        assert_eq!(c.verdict, Verdict::Slower);
        let s = c.shift.as_ref().unwrap_or_else(|| panic!("shift"));
        assert!((s.estimate - 50.0).abs() < 6.0, "{s:?}");
        let r = c.ratio.as_ref().unwrap_or_else(|| panic!("ratio"));
        assert!(r.ci.0 > 1.3 && r.ci.1 < 1.7, "{r:?}");
        // Complete separation, 30 vs 30, no ties: U = 900 and the exact
        // two-sided p = 2 / C(60, 30) = 2 / 118264581564861424.
        let mw = c.mann_whitney.as_ref().unwrap_or_else(|| panic!("mw"));
        assert_eq!(mw.u, 900.0);
        assert!((mw.p_value / (2.0 / 118_264_581_564_861_424.0) - 1.0).abs() < 1e-12);

        let back = compare(&slow, &fast);
        assert_eq!(back.verdict, Verdict::Faster);
        assert!(back.shift.is_some_and(|s| s.ci.is_some_and(|(_, hi)| hi < 0.0)));
    }

    #[test]
    fn overlapping_samples_are_same() {
        let a = normal_sample(30, 100.0, 5.0, 21);
        let b = normal_sample(30, 100.0, 5.0, 22);
        assert_eq!(compare(&a, &b).verdict, Verdict::Same);
    }

    #[test]
    fn too_few_values() {
        let c = compare(&[1.0], &[2.0, 3.0]);
        assert_eq!(
            c,
            Comparison {
                ratio: None,
                shift: None,
                mann_whitney: None,
                verdict: Verdict::Same
            }
        );
        assert_eq!(compare(&[], &[]).verdict, Verdict::Same);
    }

    #[test]
    fn deterministic() {
        let a = normal_sample(20, 100.0, 5.0, 31);
        let b = normal_sample(25, 103.0, 5.0, 32);
        assert_eq!(compare(&a, &b), compare(&a, &b));
    }

    #[test]
    fn verdict_display_and_serde() {
        assert_eq!(Verdict::Faster.to_string(), "faster");
        assert_eq!(Verdict::Slower.to_string(), "slower");
        assert_eq!(Verdict::Same.to_string(), "~");
        let json = |v: Verdict| serde_json::to_string(&v).unwrap_or_default();
        assert_eq!(json(Verdict::Faster), "\"faster\"");
        assert_eq!(json(Verdict::Slower), "\"slower\"");
        assert_eq!(json(Verdict::Same), "\"same\"");
    }
}
