//! Candidate versus baseline: one method for the verdict and the printed interval
//! (the Hodges–Lehmann shift with its Moses CI, also shown relative to the baseline
//! median), a practical noise threshold, a power statement, and no significance
//! claim where the experiment's design cannot support one.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::hodges_lehmann::{hodges_lehmann, moses_z, Shift};
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
        (Some((lo, hi)), Some(_)) => {
            let (verdict, reason) = decide(lo, hi, opts.noise);
            out.verdict = verdict;
            out.reason = reason;
            // The power statement is made on the interval the verdict is decided on.
            let (log_lo, log_hi) = ((1.0 + lo).ln(), (1.0 + hi).ln());
            out.detectable = detectable(log_lo, log_hi, mb, opts.noise, b.len(), c.len());
        }
    }
    out
}

/// The verdict of a relative interval (lo, hi) against the noise threshold, and why
/// when it is `WithinNoise`: the one rule every comparison uses (`compare` and the
/// blocked comparison across machines).
pub(crate) fn decide(lo: f64, hi: f64, noise: f64) -> (Verdict, Option<String>) {
    if lo > noise {
        (Verdict::Slower, None)
    } else if hi < -noise {
        (Verdict::Faster, None)
    } else if lo > 0.0 || hi < 0.0 {
        let why = format!(
            "the difference is real but its interval reaches inside the ±{} noise threshold (--noise)",
            percent(noise)
        );
        (Verdict::WithinNoise, Some(why))
    } else {
        (Verdict::Same, None)
    }
}

fn relative(estimate: f64, ci: Option<(f64, f64)>, baseline_median: f64) -> Option<Relative> {
    (baseline_median != 0.0 && baseline_median.is_finite()).then(|| Relative {
        estimate: estimate / baseline_median,
        ci: ci.map(|(lo, hi)| (lo / baseline_median, hi / baseline_median)),
    })
}

/// The shift detected with probability POWER, on the scale the verdict uses:
/// `Slower` needs the log-ratio interval's lower end above ln(1 + noise).
///
/// A true log shift δ is called slower when δ̂ − h > ln(1 + noise), h the
/// interval's half-width. With h known, δ = ln(1 + noise) + h + z_POWER·se would
/// do. Two things make that optimistic (it achieved 62–76 % in simulation):
/// - h is w·se with w wider than z₁₋α/₂ in small samples: the exact Moses
///   interval is conservative (its ranks span [`moses_z`] standard errors) and,
///   being scale-free, it widens like a t interval on m + n − 2 degrees of
///   freedom. So se = h / w, and a planned experiment of other sizes gets its
///   own w.
/// - h is read off one noisy experiment (and the next one's h is noisy too), and
///   falling short costs more power than overshooting gains. With v the
///   coefficient of variation of h, the power of δ = ln(1 + noise) + c·h averaged
///   over that noise is Φ(w·(c − 1) / √(1 + w²·(v_this²·c² + v_next²))); [`factor`]
///   solves it for c. v² ≈ SPREAD_CV2 / n.
///
/// The check is crates/stats/tests/power.rs: the printed X, injected into new
/// experiments of recorded cold starts (a C noop, python), a normal and a
/// lognormal, is called slower in 80 ± 5 % of them; the same for the goal.
fn detectable(
    log_lo: f64,
    log_hi: f64,
    baseline_median: f64,
    noise: f64,
    nb: usize,
    nc: usize,
) -> Option<Detectable> {
    if baseline_median <= 0.0
        || !baseline_median.is_finite()
        || log_hi.is_nan()
        || log_lo.is_nan()
        || log_hi < log_lo
    {
        return None;
    }
    let half = (log_hi - log_lo) / 2.0;
    let floor = (1.0 + noise).ln();
    let za = normal::quantile(1.0 - (1.0 - COMPARE_CONFIDENCE) / 2.0);
    let zb = normal::quantile(POWER);
    let width = |m: usize, n: usize| interval_width(m, n, za);
    let harmonic = 2.0 / (1.0 / nb as f64 + 1.0 / nc as f64);
    let v2_this = SPREAD_CV2 / harmonic;
    let w = width(nb, nc);
    let se = half / w;
    let rel = (floor + factor(w, zb, v2_this, v2_this) * half).exp() - 1.0;
    let goal = goal_below(rel, noise).and_then(|g| {
        if se <= 0.0 {
            return None;
        }
        // n per side: se² ∝ 1/nb + 1/nc today, 2/n then; w and the factor depend
        // on n, so iterate to a fixed point (a few steps).
        let target = (1.0 + g).ln() - floor;
        let mut n = harmonic.ceil() as usize;
        for _ in 0..20 {
            let wn = width(n, n);
            let c = factor(wn, zb, v2_this, SPREAD_CV2 / n as f64);
            // target = c · wn · se · √(harmonic / n)
            let next = (harmonic * (c * wn * se / target).powi(2)).ceil();
            if !next.is_finite() || next >= 1e7 {
                return None;
            }
            let next = (next as usize).max(2);
            if next == n {
                break;
            }
            n = next;
        }
        Some((g, n))
    });
    Some(Detectable {
        shift: rel * baseline_median,
        relative: rel,
        goal,
    })
}

/// The Moses interval's half-width in standard errors at m and n runs (see
/// [`detectable`]): its rank span, widened like a t interval.
fn interval_width(m: usize, n: usize, za: f64) -> f64 {
    let ranks = moses_z(m, n, COMPARE_CONFIDENCE).unwrap_or(za);
    let df = (m + n).saturating_sub(2).max(1) as f64;
    ranks * normal::t_quantile(1.0 - (1.0 - COMPARE_CONFIDENCE) / 2.0, df) / za
}

/// n · CV² of a Moses half-width on the log scale at n runs per side: 0.35–0.41
/// measured for recorded python cold starts, a normal and a lognormal at
/// n = 10–40, 0.55–0.77 (n ≥ 20) for a C noop's outlier-prone times, whose power
/// still came out 78–80 % with this value (crates/stats/tests/power.rs prints both).
const SPREAD_CV2: f64 = 0.38;

/// c with Φ(w·(c − 1) / √(1 + w²·(v_this²·c² + v_next²))) = POWER: the multiple
/// of the half-width to add to the noise threshold (see [`detectable`]).
fn factor(w: f64, zb: f64, v2_this: f64, v2_next: f64) -> f64 {
    // w²(c − 1)² = z_b²(1 + w²(v_this²c² + v_next²)): a quadratic in c, larger root.
    let (w2, b2) = (w * w, zb * zb);
    let qa = w2 - b2 * w2 * v2_this;
    let qb = -2.0 * w2;
    let qc = w2 - b2 - b2 * w2 * v2_next;
    let disc = qb * qb - 4.0 * qa * qc;
    if qa <= 0.0 || disc < 0.0 {
        // Too noisy a half-width for any multiple to promise POWER: a generous cap.
        return 4.0 * (1.0 + zb / w);
    }
    (-qb + disc.sqrt()) / (2.0 * qa)
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
