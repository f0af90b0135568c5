//! Candidate versus baseline: one method for the verdict and the printed interval
//! (the Hodges–Lehmann shift with its Moses CI, also shown relative to the baseline
//! median), a practical noise threshold, a power statement, and no significance
//! claim where the experiment's design cannot support one.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::hodges_lehmann::{hodges_lehmann, Shift};
use super::mann_whitney::{mann_whitney, MannWhitney};
use super::normal;
use super::ratio::ratio;
use super::summary::median_sorted;

/// Confidence level of every comparison interval.
pub const COMPARE_CONFIDENCE: f64 = 0.95;
/// Power the detectable-shift statement is made at.
pub const POWER: f64 = 0.80;
/// Default practical-significance threshold (criterion's default): ±1 %.
pub const DEFAULT_NOISE: f64 = 0.01;

/// How the two samples were collected. Only runs interleaved in one invocation
/// share every slow drift (load, thermal state, page cache), so only they support
/// a significance claim from run-to-run variation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Design {
    /// One invocation, rounds in shuffled order: a verdict with CI.
    #[default]
    Interleaved,
    /// One invocation, all runs of one variant then the next.
    Sequential,
    /// Two separate invocations (stored experiments compared afterwards).
    Separate,
}

impl Design {
    pub fn supports_verdict(self) -> bool {
        self == Design::Interleaved
    }

    /// Why a design gives no verdict, and what would give one.
    pub fn why_no_verdict(self) -> &'static str {
        match self {
            Design::Interleaved => "",
            Design::Sequential => {
                "no verdict: the runs were sequential (--order sequential), so drift during the \
                 experiment cannot be told from a difference; rerun with the default shuffled \
                 (interleaved) order"
            }
            Design::Separate => {
                "no verdict: the two sides come from separate invocations, whose run-to-run spread \
                 says nothing of the drift between invocations; measure both in one interleaved \
                 `coldstart bench --name A -- … --name B -- …`"
            }
        }
    }
}

/// Direction of a difference of candidate relative to baseline (for times:
/// `Slower` means the candidate takes longer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    /// No significant difference; displayed as "~".
    Same,
    /// Significant, but the interval is not wholly beyond the noise threshold.
    WithinNoise,
    /// The data or the design cannot support a verdict (see `Comparison::reason`).
    None,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Same => "~",
            Verdict::WithinNoise => "~ (within noise threshold)",
            Verdict::None => "no verdict",
        })
    }
}

/// The shift relative to the baseline median (0.05 = 5 % slower).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relative {
    pub estimate: f64,
    /// The Moses CI of the shift over the baseline median: the interval the verdict uses.
    pub ci: Option<(f64, f64)>,
}

/// The smallest shift this experiment would have called `faster`/`slower` with
/// probability [`POWER`] (noise threshold included).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detectable {
    /// In the samples' unit (ms).
    pub shift: f64,
    /// Relative to the baseline median.
    pub relative: f64,
    /// A smaller goal (relative) and the runs per variant it would take; None when the
    /// goal is not above the noise threshold.
    pub goal: Option<(f64, usize)>,
}

/// Candidate versus baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub design: Design,
    /// The practical-significance threshold used (fraction of the baseline median).
    pub noise: f64,
    /// median(candidate) / median(baseline), the observed medians (a point estimate:
    /// the interval is `relative`'s, which is what the verdict is decided on).
    pub ratio: Option<f64>,
    /// Hodges–Lehmann shift candidate − baseline; Moses CI (interleaved only).
    pub shift: Option<Shift>,
    pub relative: Option<Relative>,
    /// Mann–Whitney test of candidate against baseline (interleaved only).
    pub mann_whitney: Option<MannWhitney>,
    pub verdict: Verdict,
    /// Why the verdict is `None` or `WithinNoise`.
    pub reason: Option<String>,
    pub detectable: Option<Detectable>,
}

#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    pub design: Design,
    /// Fraction of the baseline median, e.g. 0.01.
    pub noise: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            design: Design::Interleaved,
            noise: DEFAULT_NOISE,
        }
    }
}

/// Compare candidate with baseline (times, any order).
///
/// Interleaved design: the 95 % Moses CI of the ratio candidate ÷ baseline
/// (Hodges–Lehmann on log times, exponentiated), less 1, decides. Wholly above
/// +noise: `Slower`; wholly below −noise: `Faster`; excluding zero but not
/// beyond the threshold: `WithinNoise`; containing zero: `Same`. The printed
/// relative interval is that same interval, so the verdict and the interval
/// cannot disagree, and it never reaches below −100 %; the shift in ms keeps
/// its own Moses CI (R's `wilcox.test(conf.int = TRUE)`). The Mann–Whitney
/// p-value is reported alongside (both Moses intervals invert that rank test,
/// which logs do not change).
///
/// Other designs, or fewer than two values on a side: point estimates only and
/// verdict `None` with the reason.
pub fn compare(baseline: &[f64], candidate: &[f64], opts: CompareOptions) -> Comparison {
    let mut b = baseline.to_vec();
    let mut c = candidate.to_vec();
    b.sort_by(f64::total_cmp);
    c.sort_by(f64::total_cmp);
    let mut out = Comparison {
        design: opts.design,
        noise: opts.noise,
        ratio: None,
        shift: None,
        relative: None,
        mann_whitney: None,
        verdict: Verdict::None,
        reason: None,
        detectable: None,
    };
    if b.is_empty() || c.is_empty() {
        let side = if b.is_empty() {
            "the baseline"
        } else {
            "this variant"
        };
        out.reason = Some(format!("no verdict: {side} has no successful run"));
        return out;
    }
    let mb = median_sorted(&b);
    out.ratio = Some(median_sorted(&c) / mb).filter(|r| r.is_finite());
    if b.len() < 2 || c.len() < 2 {
        out.reason = Some("no verdict: fewer than 2 successful runs on a side".into());
        return out;
    }
    if !opts.design.supports_verdict() {
        // Point estimates only: a CI from within-invocation spread would claim too much.
        out.shift = hodges_lehmann(&b, &c, COMPARE_CONFIDENCE).map(|s| Shift {
            estimate: s.estimate,
            ci: None,
        });
        out.relative = out.shift.as_ref().and_then(|s| relative(s.estimate, None, mb));
        out.reason = Some(opts.design.why_no_verdict().into());
        return out;
    }
    out.mann_whitney = mann_whitney(&c, &b);
    out.shift = hodges_lehmann(&b, &c, COMPARE_CONFIDENCE);
    // The relative effect is the ratio's (Moses on logs, exponentiated), not the
    // shift over the baseline median: a duration cannot shrink by more than
    // 100 %, and that interval printed "−93 % [−119 %, −73 %]". The verdict is
    // decided on the same relative interval, so the two never disagree; the ms
    // interval is the shift's, as before.
    out.relative = match ratio(&b, &c, COMPARE_CONFIDENCE) {
        Some(r) => Some(Relative {
            estimate: r.estimate - 1.0,
            ci: r.ci.map(|(lo, hi)| (lo - 1.0, hi - 1.0)),
        }),
        // A value that is not positive (no log): the shift over the median.
        None => out.shift.as_ref().and_then(|s| relative(s.estimate, s.ci, mb)),
    };
    let shift_ci = out.shift.as_ref().and_then(|s| s.ci);
    match (out.relative.as_ref().and_then(|r| r.ci), shift_ci) {
        (None, _) | (_, None) => {
            out.reason = Some("no verdict: too few runs for a 95 % interval".into());
        }
        (Some((lo, hi)), Some((shift_lo, shift_hi))) => {
            let threshold = opts.noise;
            out.verdict = if lo > threshold {
                Verdict::Slower
            } else if hi < -threshold {
                Verdict::Faster
            } else if lo > 0.0 || hi < 0.0 {
                out.reason = Some(format!(
                    "the difference is real but its interval reaches inside the ±{} noise threshold (--noise)",
                    percent(opts.noise)
                ));
                Verdict::WithinNoise
            } else {
                Verdict::Same
            };
            out.detectable = detectable(shift_lo, shift_hi, mb, opts.noise, b.len(), c.len());
        }
    }
    out
}

fn relative(estimate: f64, ci: Option<(f64, f64)>, baseline_median: f64) -> Option<Relative> {
    (baseline_median != 0.0 && baseline_median.is_finite()).then(|| Relative {
        estimate: estimate / baseline_median,
        ci: ci.map(|(lo, hi)| (lo / baseline_median, hi / baseline_median)),
    })
}

/// The shift detected with probability POWER: the verdict needs the CI's near end
/// beyond the noise threshold, so δ − z₁₋α/₂·se ≥ threshold in POWER of
/// experiments, i.e. δ = threshold + (z₁₋α/₂ + z_POWER)·se, where se is read off
/// this experiment's own Moses CI (its half-width is z₁₋α/₂·se). se shrinks as
/// √(1/n₁ + 1/n₂), which gives the runs a smaller goal needs.
fn detectable(
    lo: f64,
    hi: f64,
    baseline_median: f64,
    noise: f64,
    nb: usize,
    nc: usize,
) -> Option<Detectable> {
    if baseline_median <= 0.0 || !baseline_median.is_finite() {
        return None;
    }
    let z_a = normal::quantile(1.0 - (1.0 - COMPARE_CONFIDENCE) / 2.0);
    let z_b = normal::quantile(POWER);
    let se = (hi - lo) / (2.0 * z_a);
    let threshold = noise * baseline_median;
    let shift = threshold + (z_a + z_b) * se;
    let rel = shift / baseline_median;
    let goal_rel = goal_below(rel, noise);
    let goal = goal_rel.and_then(|g| {
        let se_needed = (g - noise) * baseline_median / (z_a + z_b);
        if se_needed <= 0.0 || se <= 0.0 {
            return None;
        }
        // Balanced runs n per side: se² = K·(1/nb + 1/nc) today, K·2/n then.
        let n = (2.0 * (se / se_needed).powi(2) / (1.0 / nb as f64 + 1.0 / nc as f64)).ceil();
        (n.is_finite() && n < 1e7).then_some((g, n as usize))
    });
    Some(Detectable {
        shift,
        relative: rel,
        goal,
    })
}

/// A rounder, smaller goal worth quoting: half of what is detectable now, when that
/// is still above the noise threshold.
fn goal_below(rel: f64, noise: f64) -> Option<f64> {
    let half = rel / 2.0;
    if half <= noise * 1.05 {
        return None;
    }
    // One significant digit (0.0083 → 0.008), never below the threshold.
    let mag = 10f64.powf(half.log10().floor());
    let g = (half / mag).floor() * mag;
    (g > noise * 1.05).then_some(g).or(Some(half))
}

/// `0.01` → `1 %`, `0.005` → `0.5 %`, `0.9538` → `95 %`: two significant digits at most.
pub fn percent(x: f64) -> String {
    let p = x * 100.0;
    let digits = if p.abs() >= 10.0 {
        0
    } else if p.abs() >= 1.0 {
        1
    } else {
        2
    };
    let s = format!("{p:.digits$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s} %")
}
