//! The table the engineers wrote by hand: one row per candidate with its
//! measured effect against the baseline (the comparison's verdict, CI and
//! power), how to apply it, and a recommended set with its combined effect.
//! The same rows render for the terminal, Markdown and JSON.

use super::catalogue::Candidate;
use coldstart_core::analysis::VariantAnalysis;
use coldstart_core::stats::{Comparison, Verdict};
use serde::{Deserialize, Serialize};

/// How a candidate came out.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Status {
    /// Significantly faster beyond the noise threshold.
    Faster,
    /// Significantly slower beyond the noise threshold.
    Slower,
    /// Measured no gain worth having: the CI's faster end stays inside the noise
    /// threshold (relative lower end ≥ −noise), so the data rule out a real win.
    NoGain,
    /// Could not tell: the CI reaches a gain beyond the noise threshold and also
    /// none. `could_detect` is the power line's smallest detectable shift
    /// (relative), `goal` a smaller one and `runs_for_goal` the runs per variant
    /// that would detect it (None when the power line has none).
    Inconclusive {
        could_detect: Option<f64>,
        goal: Option<f64>,
        runs_for_goal: Option<usize>,
    },
    /// Faster or not, it moves work to the first request (or that got slower).
    Caution,
    /// No verdict (too few runs).
    NoVerdict,
    /// Set-up, the check run or a measured run failed: never fast.
    Broken { why: String },
    /// Not for this runtime version, or advice only.
    Unavailable { why: String },
    /// The command cannot take it (flags with a wrapper).
    NotApplicable { why: String },
    /// Ctrl-C came first.
    NotMeasured,
}

/// One candidate's row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub id: String,
    pub title: String,
    pub status: Status,
    /// The comparison's verdict on ready (faster, slower, ~, no verdict), when measured.
    pub ready_verdict: Option<String>,
    /// Median shift of ready, ms (candidate − baseline), with its 95 % CI.
    pub shift_ms: Option<f64>,
    pub shift_ci_ms: Option<(f64, f64)>,
    /// The same relative to the baseline median.
    pub relative: Option<f64>,
    pub relative_ci: Option<(f64, f64)>,
    /// The power line: the smallest shift this experiment could detect.
    pub detectable: Option<coldstart_core::stats::Detectable>,
    /// First request: median candidate − median baseline, ms (with --requests).
    pub first_request_delta_ms: Option<f64>,
    /// Peak RSS: median candidate − median baseline, MiB.
    pub peak_rss_delta_mb: Option<f64>,
    pub runs: usize,
    pub failed_runs: usize,
    /// How to apply it permanently, and what it needed.
    pub apply: String,
    pub what: String,
    pub why: String,
    pub risks: String,
    pub source: String,
}

impl Row {
    /// A row from the catalogue alone (not measured).
    pub fn unmeasured(c: &Candidate, status: Status) -> Row {
        Row {
            id: c.id.clone(),
            title: c.title.clone(),
            status,
            ready_verdict: None,
            shift_ms: None,
            shift_ci_ms: None,
            relative: None,
            relative_ci: None,
            detectable: None,
            first_request_delta_ms: None,
            peak_rss_delta_mb: None,
            runs: 0,
            failed_runs: 0,
            apply: c.apply.clone(),
            what: c.what.clone(),
            why: c.why.clone(),
            risks: c.risks.clone(),
            source: c.source.clone(),
        }
    }

    /// A measured row: the comparison against the baseline decides.
    pub fn measured(c: &Candidate, v: &VariantAnalysis, base: &VariantAnalysis) -> Row {
        let mut row = Row::unmeasured(c, Status::NoVerdict);
        row.runs = v.ok_runs;
        row.failed_runs = v.failed_runs;
        let delta = |a: Option<&coldstart_core::stats::Summary>,
                     b: Option<&coldstart_core::stats::Summary>| Some(a?.p50 - b?.p50);
        row.first_request_delta_ms = delta(v.first_request_ms.as_ref(), base.first_request_ms.as_ref());
        row.peak_rss_delta_mb = delta(v.peak_rss_mb.as_ref(), base.peak_rss_mb.as_ref());
        if let Some(cmp) = &v.vs_baseline {
            fill(&mut row, cmp);
            row.ready_verdict = Some(cmp.verdict.to_string());
        }
        row.status = if v.failed_runs > 0 {
            Status::Broken {
                why: format!(
                    "{} of {} measured runs failed",
                    v.failed_runs,
                    v.failed_runs + v.ok_runs
                ),
            }
        } else {
            let base_first = base.first_request_ms.as_ref().map(|s| s.p50);
            // A first request slower by more than 5 % of the baseline's (and 1 ms).
            let first_worse = match (row.first_request_delta_ms, base_first) {
                (Some(d), Some(b)) => d > (0.05 * b).max(1.0),
                _ => false,
            };
            classify(v.vs_baseline.as_ref(), c.shifts_work, first_worse)
        };
        row
    }
}

/// A measured candidate's status from its comparison with the baseline (on
/// ready): ✅ only for a significant gain beyond the noise threshold; ❌ only
/// when the data rule a worthwhile gain out (measured slower, or the CI's faster
/// end inside −noise); everything the CI leaves open is inconclusive, never ❌.
/// `shifts_work` (the catalogue says so) or a first request that got worse
/// while ready got faster makes it ⚠️ whatever ready says.
pub fn classify(cmp: Option<&Comparison>, shifts_work: bool, first_worse: bool) -> Status {
    let verdict = cmp.map_or(Verdict::None, |c| c.verdict);
    if shifts_work || (first_worse && verdict == Verdict::Faster) {
        return Status::Caution;
    }
    let Some(cmp) = cmp else {
        return Status::NoVerdict;
    };
    let ci = cmp.relative.as_ref().and_then(|r| r.ci);
    match (verdict, ci) {
        (Verdict::Faster, _) => Status::Faster,
        (Verdict::Slower, _) => Status::Slower,
        (Verdict::None, _) | (_, None) => Status::NoVerdict,
        // Same or WithinNoise: does the interval still hold a worthwhile gain?
        (Verdict::Same | Verdict::WithinNoise, Some((lo, _))) if lo >= -cmp.noise => Status::NoGain,
        (Verdict::Same | Verdict::WithinNoise, Some(_)) => {
            let d = cmp.detectable.as_ref();
            Status::Inconclusive {
                could_detect: d.map(|d| d.relative),
                goal: d.and_then(|d| d.goal).map(|g| g.0),
                runs_for_goal: d.and_then(|d| d.goal).map(|g| g.1),
            }
        }
    }
}

pub fn fill(row: &mut Row, cmp: &Comparison) {
    if let Some(s) = &cmp.shift {
        row.shift_ms = Some(s.estimate);
        row.shift_ci_ms = s.ci;
    }
    if let Some(r) = &cmp.relative {
        row.relative = Some(r.estimate);
        row.relative_ci = r.ci;
    }
    row.detectable = cmp.detectable.clone();
}

/// The recommended set: the significant winners that go together, measured as one variant.
#[derive(Debug, Clone, Serialize)]
pub struct Recommended {
    pub ids: Vec<String>,
    /// The baseline command with the set applied, as a shell line.
    pub command: String,
    /// Variables to set (KEY=VALUE), also in `command`'s environment.
    pub env: Vec<String>,
    /// Training runs to do once before (for archives and caches), as shell lines.
    pub train: Vec<String>,
    /// What to know before applying it (a measuring-only flag in the command, a
    /// platform flag that may take precedence).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
    /// The winners' combination when it was measured and did not help: why the set is
    /// smaller than the winners (the best single one is recommended instead).
    pub rejected: Option<Rejected>,
    /// Its own measured effect (a second, short experiment when it has more than one member).
    pub row: Option<Row>,
}

/// A set of winners that was measured (or broke) and is not recommended.
#[derive(Debug, Clone, Serialize)]
pub struct Rejected {
    pub ids: Vec<String>,
    /// Its effect against the baseline (or why it broke).
    pub row: Row,
    /// The set it grew from (without its last member), which is recommended
    /// instead; empty when nothing was (the best single winner then is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub smaller: Vec<String>,
    /// It against that smaller set, in the same experiment: not faster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<Row>,
}

/// The schema of tune's `--export-json` (docs/json-schema.md lists its changes):
/// `/3` gives a row's `detectable` as numbers (shift ms, relative, goal);
/// `/2` split the status `same` into `no_gain` and `inconclusive`; `/1` was unlabelled.
pub const SCHEMA: &str = "coldstart.tune/3";

/// `--export-json`: the schema id, then everything tune found.
pub fn json(t: &Tuned) -> serde_json::Result<Vec<u8>> {
    #[derive(Serialize)]
    struct Export<'a> {
        schema: &'static str,
        #[serde(flatten)]
        tuned: &'a Tuned,
    }
    serde_json::to_vec_pretty(&Export {
        schema: SCHEMA,
        tuned: t,
    })
}

/// Everything tune found.
#[derive(Debug, Clone, Serialize)]
pub struct Tuned {
    pub runtime: String,
    pub executable: String,
    pub version: Option<String>,
    /// What the command runs, when tune recognises it: `Spring Boot 3.5.7 fat jar
    /// app.jar`, `jar app.jar`, `exploded class path (2 directories, 3 jars)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    pub baseline: String,
    pub baseline_ready_ms: Option<f64>,
    /// The baseline's first request (median, ms), with --requests: to --request-url,
    /// else the readiness URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_first_request_ms: Option<f64>,
    pub noise: f64,
    pub rows: Vec<Row>,
    pub recommended: Option<Recommended>,
    /// Experiments as stored (ids), when stored.
    pub experiments: Vec<i64>,
    pub interrupted: bool,
    /// What a round of the experiment cost, to turn "run more" into a --budget (not exported).
    #[serde(skip)]
    pub pace: Option<Pace>,
}

/// Seconds one round (each variant once) took, the warmup rounds before the
/// measured ones, and the --budget they ran under.
#[derive(Debug, Clone, PartialEq)]
pub struct Pace {
    pub round_s: f64,
    pub warmup: usize,
    pub budget_s: f64,
    /// The command's option for the most runs per variant (`--max-runs`; `lambda
    /// --tune`'s `--runs`).
    pub runs_flag: &'static str,
}
