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
//! pub struct Ratio { estimate: f64, ci: Option<(f64, f64)> }      // candidate ÷ baseline
//! pub fn ratio(baseline: &[f64], candidate: &[f64], confidence: f64) -> Option<Ratio> // HL + Moses on logs
//! pub enum Design { Interleaved, Sequential, Separate }       // how the two samples were collected
//! pub enum Verdict { Faster, Slower, Same, WithinNoise, None }  // Display: faster/slower/~/~ (within noise threshold)/no verdict
//! pub struct Comparison { design, noise, ratio, shift, relative, mann_whitney, verdict, reason, detectable }
//! pub fn compare(baseline: &[f64], candidate: &[f64], opts: CompareOptions) -> Comparison
//! pub fn fisher_greater(cand_failed, cand_runs, base_failed, base_runs: u64) -> f64 // one-sided exact p
//! pub struct Block<'a> { baseline: &'a [f64], candidate: &'a [f64] }  // one machine's runs of both
//! pub struct BlockedComparison { design, noise, blocks: Vec<Comparison>, relative: Option<Pooled>,
//!                                shift: Option<Pooled>, van_elteren, heterogeneity, verdict, reason }
//! pub fn compare_blocked(blocks: &[Block], opts: CompareOptions) -> BlockedComparison // machines as blocks
//! pub fn van_elteren(blocks: &[Block]) -> Option<VanElteren>     // stratified Wilcoxon–Mann–Whitney
//! ```
//!
//! Inputs are assumed NaN-free; nothing here panics on empty input.
//!
//! Files: `summary` (quantile, median CI, summary, outliers), `mann_whitney`,
//! `hodges_lehmann`, `ratio` (the same on log times), `compare` (verdicts, noise threshold,
//! power), `blocked` (the comparison over machines: van Elteren, random-effects pooling,
//! heterogeneity), `normal` (private erfc / normal quantile) and `special` (private exact t
//! quantile and χ² tail).

// The re-exports are the API contract: not every item is called by the binary yet.
#![allow(unused_imports)]

mod blocked;
mod compare;
mod fisher;
mod hodges_lehmann;
mod mann_whitney;
mod normal;
mod ratio;
mod special;
mod summary;

pub use blocked::{
    compare_blocked, van_elteren, Block, BlockedComparison, Heterogeneity, Pooled, VanElteren,
};
pub use compare::{
    compare, percent, CompareOptions, Comparison, Design, Detectable, Relative, Verdict, COMPARE_CONFIDENCE,
    DEFAULT_NOISE, POWER,
};
pub use fisher::fisher_greater;
pub use hodges_lehmann::{hodges_lehmann, Shift};
pub use mann_whitney::{mann_whitney, MannWhitney};
pub use ratio::{ratio, Ratio};
pub use summary::{median_ci, quantile, summarize, Summary};

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

    fn cmp(a: &[f64], b: &[f64]) -> Comparison {
        compare(a, b, CompareOptions::default())
    }

    #[test]
    fn identical_samples_are_same() {
        let a = normal_sample(30, 100.0, 5.0, 1);
        let c = cmp(&a, &a);
        assert_eq!(c.verdict, Verdict::Same);
        let mw = c.mann_whitney.unwrap_or_else(|| panic!("mw"));
        assert_eq!(mw.u, 450.0);
        assert_eq!(mw.p_value, 1.0);
        assert_eq!(c.shift.map(|s| s.estimate), Some(0.0));
        assert_eq!(c.ratio, Some(1.0));
    }

    #[test]
    fn clear_shift_is_detected_both_ways() {
        let fast = normal_sample(30, 100.0, 5.0, 11);
        let slow = normal_sample(30, 150.0, 5.0, 12);
        let c = cmp(&fast, &slow);
        assert_eq!(c.verdict, Verdict::Slower);
        let s = c.shift.as_ref().unwrap_or_else(|| panic!("shift"));
        assert!((s.estimate - 50.0).abs() < 6.0, "{s:?}");
        let r = c
            .relative
            .as_ref()
            .and_then(|r| r.ci)
            .unwrap_or_else(|| panic!("relative"));
        assert!(r.0 > 0.3 && r.1 < 0.7, "{r:?}");
        // Complete separation, 30 vs 30, no ties: U = 900 and the exact
        // two-sided p = 2 / C(60, 30) = 2 / 118264581564861424.
        let mw = c.mann_whitney.as_ref().unwrap_or_else(|| panic!("mw"));
        assert_eq!(mw.u, 900.0);
        assert!((mw.p_value / (2.0 / 118_264_581_564_861_424.0) - 1.0).abs() < 1e-12);

        let back = cmp(&slow, &fast);
        assert_eq!(back.verdict, Verdict::Faster);
        assert!(back.shift.is_some_and(|s| s.ci.is_some_and(|(_, hi)| hi < 0.0)));
    }

    #[test]
    fn overlapping_samples_are_same() {
        let a = normal_sample(30, 100.0, 5.0, 21);
        let b = normal_sample(30, 100.0, 5.0, 22);
        assert_eq!(cmp(&a, &b).verdict, Verdict::Same);
    }

    #[test]
    fn too_few_or_no_values_give_no_verdict() {
        let c = cmp(&[1.0], &[2.0, 3.0]);
        assert_eq!(c.verdict, Verdict::None);
        assert!(c.shift.is_none() && c.mann_whitney.is_none());
        // A variant without a single successful run is not "~": there is nothing to compare.
        let none = cmp(&[1.0, 2.0, 3.0], &[]);
        assert_eq!(none.verdict, Verdict::None);
        assert!(
            none.reason.as_deref().unwrap_or("").contains("no successful run"),
            "{none:?}"
        );
        assert_eq!(cmp(&[], &[]).verdict, Verdict::None);
        // Three a side is too few for a 95 % Moses interval: no verdict, not "~".
        let three = cmp(&[1.0, 2.0, 3.0], &[11.0, 12.0, 13.0]);
        assert_eq!(three.verdict, Verdict::None, "{three:?}");
    }

    #[test]
    fn deterministic() {
        let a = normal_sample(20, 100.0, 5.0, 31);
        let b = normal_sample(25, 103.0, 5.0, 32);
        assert_eq!(cmp(&a, &b), cmp(&a, &b));
    }

    #[test]
    fn small_real_shift_is_within_the_noise_threshold() {
        // A 0.5 % shift with tiny spread: clearly real, practically nothing.
        let a = normal_sample(60, 100.0, 0.05, 41);
        let b = normal_sample(60, 100.5, 0.05, 42);
        let c = cmp(&a, &b);
        assert_eq!(c.verdict, Verdict::WithinNoise, "{c:?}");
        assert!(c.reason.is_some());
        // With a 0.1 % threshold the same data is "slower".
        let strict = compare(
            &a,
            &b,
            CompareOptions {
                noise: 0.001,
                ..Default::default()
            },
        );
        assert_eq!(strict.verdict, Verdict::Slower);
        // And a 2 % shift is beyond the default threshold.
        let big = normal_sample(60, 102.0, 0.05, 43);
        assert_eq!(cmp(&a, &big).verdict, Verdict::Slower);
    }

    #[test]
    fn verdict_agrees_with_the_printed_interval() {
        // Many near-threshold experiments: the printed relative CI and the verdict never
        // disagree on their face.
        for seed in 0..300u64 {
            let a = normal_sample(20, 100.0, 3.0, 1000 + seed);
            let b = normal_sample(20, 100.0 + (seed % 7) as f64 * 0.6, 3.0, 5000 + seed);
            let c = cmp(&a, &b);
            let (lo, hi) = c
                .relative
                .as_ref()
                .and_then(|r| r.ci)
                .unwrap_or_else(|| panic!("ci"));
            match c.verdict {
                Verdict::Slower => assert!(lo > c.noise, "{c:?}"),
                Verdict::Faster => assert!(hi < -c.noise, "{c:?}"),
                Verdict::WithinNoise => assert!((lo > 0.0 || hi < 0.0) && lo <= c.noise && hi >= -c.noise),
                Verdict::Same => assert!(lo <= 0.0 && hi >= 0.0, "{c:?}"),
                Verdict::None => panic!("no verdict with 20 a side"),
            }
        }
    }

    /// A candidate far faster with a wide spread: the relative interval is a
    /// ratio's, never below −100 % (the shift over the median gave "−93 %
    /// [−119 %, −73 %]"), while the ms interval stays the shift's.
    #[test]
    fn a_relative_interval_never_reaches_below_minus_100_percent() {
        let a: Vec<f64> = (0..20).map(|i| 5.0 + (i % 10) as f64 * 9.0).collect();
        let b: Vec<f64> = (0..20).map(|i| 1.0 + (i % 5) as f64 * 0.5).collect();
        let c = cmp(&a, &b);
        let (lo, hi) = c.relative.as_ref().and_then(|r| r.ci).expect("an interval");
        assert!(lo > -1.0 && hi < 0.0, "{c:?}");
        let (slo, _) = c.shift.as_ref().and_then(|s| s.ci).expect("a shift interval");
        // The old relative interval, the shift's lower end over the baseline
        // median, was below −100 % here: the data show the defect.
        let mut sorted = a.clone();
        sorted.sort_by(f64::total_cmp);
        let median = (sorted[9] + sorted[10]) / 2.0;
        assert!(slo / median < -1.0, "{slo} / {median}");
        assert_eq!(c.verdict, Verdict::Faster);
    }

    #[test]
    fn designs_without_interleaving_give_no_verdict() {
        let a = normal_sample(30, 100.0, 1.0, 51);
        let b = normal_sample(30, 150.0, 1.0, 52);
        for design in [Design::Sequential, Design::Separate] {
            let c = compare(
                &a,
                &b,
                CompareOptions {
                    design,
                    ..Default::default()
                },
            );
            assert_eq!(c.verdict, Verdict::None);
            assert!(c.mann_whitney.is_none() && c.detectable.is_none());
            // The estimate is still shown, without an interval.
            let s = c.shift.as_ref().unwrap_or_else(|| panic!("shift"));
            assert!((s.estimate - 50.0).abs() < 2.0 && s.ci.is_none());
            assert!(
                c.reason.as_deref().unwrap_or("").contains("interleaved"),
                "{:?}",
                c.reason
            );
        }
    }

    #[test]
    fn power_statement_is_calibrated() {
        // The stated detectable shift, injected into fresh samples of the same
        // distribution, is called "slower" in about POWER of experiments.
        let mut stated = Vec::new();
        for seed in 0..200u64 {
            let a = normal_sample(30, 100.0, 2.0, 7000 + seed);
            let b = normal_sample(30, 100.0, 2.0, 9000 + seed);
            let d = cmp(&a, &b).detectable.unwrap_or_else(|| panic!("detectable"));
            stated.push(d.relative);
        }
        stated.sort_by(f64::total_cmp);
        let delta = stated[stated.len() / 2] * 100.0;
        let detected = (0..400u64)
            .filter(|seed| {
                let a = normal_sample(30, 100.0, 2.0, 20_000 + seed);
                let b = normal_sample(30, 100.0 + delta, 2.0, 30_000 + seed);
                cmp(&a, &b).verdict == Verdict::Slower
            })
            .count() as f64
            / 400.0;
        assert!(
            (0.72..=0.90).contains(&detected),
            "stated {delta:.3} detected {detected}"
        );
    }

    #[test]
    fn power_goal_needs_more_runs() {
        let a = normal_sample(20, 100.0, 5.0, 61);
        let b = normal_sample(20, 100.0, 5.0, 62);
        let d = cmp(&a, &b).detectable.unwrap_or_else(|| panic!("detectable"));
        let (goal, runs) = d.goal.unwrap_or_else(|| panic!("goal"));
        assert!(goal < d.relative && goal > 0.01, "{d:?}");
        // The log half-width shrinks as √(2/n), so the runs grow about with the
        // square of (ln(1 + detectable) − ln(1 + noise)) / (ln(1 + goal) − ln(1 +
        // noise)); fewer, since a bigger experiment's interval is relatively
        // narrower (the exact small-sample interval is conservative) and its
        // half-width less noisy (crates/stats/tests/power.rs checks the power).
        let floor = 1.01f64.ln();
        let square = 20.0 * (((1.0 + d.relative).ln() - floor) / ((1.0 + goal).ln() - floor)).powi(2);
        assert!(
            (0.8 * square..=square).contains(&(runs as f64)),
            "{d:?} against {square}"
        );
    }

    #[test]
    fn verdict_display_and_serde() {
        assert_eq!(Verdict::Faster.to_string(), "faster");
        assert_eq!(Verdict::Slower.to_string(), "slower");
        assert_eq!(Verdict::Same.to_string(), "~");
        assert_eq!(Verdict::WithinNoise.to_string(), "~ (within noise threshold)");
        assert_eq!(Verdict::None.to_string(), "no verdict");
        let json = |v: Verdict| serde_json::to_string(&v).unwrap_or_default();
        assert_eq!(json(Verdict::Faster), "\"faster\"");
        assert_eq!(json(Verdict::Slower), "\"slower\"");
        assert_eq!(json(Verdict::Same), "\"same\"");
        assert_eq!(json(Verdict::WithinNoise), "\"within_noise\"");
        assert_eq!(json(Verdict::None), "\"none\"");
        assert_eq!(percent(0.01), "1 %");
        assert_eq!(percent(0.005), "0.5 %");
    }
}
