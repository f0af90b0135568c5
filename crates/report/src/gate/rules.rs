//! The regression gate's decision: per target, pass / warn / fail against absolute
//! limits (SLO tables) and regressions relative to a baseline, with the reason for
//! every decision written out. Pure: no store, no output.

use coldstart_core::experiment::StopReason;
use coldstart_core::stats::{self, percent, Comparison, Design, Verdict};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Warn,
    Fail,
}

/// A slowdown limit: a share of the baseline median, or milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Regression {
    Relative(f64),
    Ms(f64),
}

impl Regression {
    /// `5%` → Relative(0.05); `300ms`, `0.3s` → Ms(300).
    pub fn parse(flag: &str, s: &str) -> anyhow::Result<Regression> {
        let t = s.trim();
        if t.ends_with('%') {
            return coldstart_core::bounds::parse_fraction(t)
                .map(Regression::Relative)
                .map_err(|e| anyhow::anyhow!("bad {flag}: {e}"));
        }
        parse_ms(t).map(Regression::Ms).ok_or_else(|| {
            anyhow::anyhow!("bad {flag} '{s}': write a percentage (5%) or a duration (300ms, 1.5s)")
        })
    }

    /// In ms, against a baseline median.
    pub fn ms(self, baseline_ms: f64) -> f64 {
        match self {
            Regression::Relative(f) => f * baseline_ms,
            Regression::Ms(ms) => ms,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Regression::Relative(f) => format!("+{}", percent(f)),
            Regression::Ms(ms) => format!("+{}", crate::format::ms(ms)),
        }
    }
}

/// `300ms`, `1.5s`, `2m` → ms. None when not a duration ≥ 0 (a bare number is refused:
/// ms or s would both be plausible).
pub fn parse_ms(s: &str) -> Option<f64> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60e3)
    } else {
        return None;
    };
    let v: f64 = num.trim().parse().ok()?;
    (v >= 0.0 && v.is_finite() && v * scale < 1e12).then_some(v * scale)
}

/// How many failed runs the candidate may have before its failures count against it:
/// `--max-failures 3` (runs) or `--max-failures 10%` (of its measured runs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum FailureAllowance {
    Runs(usize),
    Share(f64),
}

impl FailureAllowance {
    /// `3` → Runs(3); `10%` → Share(0.10).
    pub fn parse(s: &str) -> anyhow::Result<FailureAllowance> {
        let t = s.trim();
        if t.ends_with('%') {
            return coldstart_core::bounds::parse_fraction(t)
                .map(FailureAllowance::Share)
                .map_err(|e| anyhow::anyhow!("bad --max-failures: {e}"));
        }
        t.parse().map(FailureAllowance::Runs).map_err(|_| {
            anyhow::anyhow!(
                "bad --max-failures '{s}': write a number of runs (3) or a share of the runs (10%)"
            )
        })
    }

    pub fn allows(self, failed: usize, total: usize) -> bool {
        match self {
            FailureAllowance::Runs(n) => failed <= n,
            // A small tolerance: 35% of 20 runs allows 7, not 6.
            FailureAllowance::Share(f) => failed as f64 <= f * total as f64 + 1e-9,
        }
    }

    pub fn describe(self) -> String {
        match self {
            FailureAllowance::Runs(n) => n.to_string(),
            FailureAllowance::Share(f) => percent(f),
        }
    }
}

/// The significance level of the failure-rate test.
pub const FAILURE_ALPHA: f64 = 0.05;

/// "fails 7 of 20 runs (baseline 0 of 20: more, Fisher's exact test one-sided p = 0.0042)":
/// the candidate's failures against the baseline's, for bench's verdict line and the gate.
/// None when the candidate had no failed run.
pub fn failure_line(
    cand_failed: usize,
    cand_total: usize,
    base_failed: usize,
    base_total: usize,
) -> Option<String> {
    if cand_failed == 0 {
        return None;
    }
    let p = failure_p(cand_failed, cand_total, base_failed, base_total);
    let judged = if p < FAILURE_ALPHA {
        "significantly more"
    } else {
        "not significantly more"
    };
    Some(format!(
        "fails {cand_failed} of {cand_total} runs (baseline {base_failed} of {base_total}: {judged}, \
         Fisher's exact test one-sided p = {})",
        crate::format::p_value(p)
    ))
}

fn failure_p(cand_failed: usize, cand_total: usize, base_failed: usize, base_total: usize) -> f64 {
    stats::fisher_greater(
        cand_failed as u64,
        cand_total as u64,
        base_failed as u64,
        base_total as u64,
    )
}

/// What a target is held to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Limits {
    /// Fail when the candidate is slower than the baseline by more than this.
    pub max_regression: Option<Regression>,
    /// Warn when slower by more than this (below max_regression).
    pub warn: Option<Regression>,
    /// Fail when the candidate's median exceeds this many ms.
    pub max_ms: Option<f64>,
    /// Warn when an estimate comes within this share of a limit (0.05 = 5 %).
    pub margin: f64,
    /// Failed candidate runs accepted whatever the baseline's (None: none beyond the
    /// baseline's rate, see `row`).
    pub max_failures: Option<FailureAllowance>,
}

/// One side of a gate row: what was measured, and whether it can be trusted.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub experiment: i64,
    /// Ready times of the successful measured runs, ms.
    #[serde(skip)]
    pub ready_ms: Vec<f64>,
    pub runs: usize,
    pub failed_runs: usize,
    /// Why the experiment stopped; None: it never did ("incomplete").
    pub stopped: Option<StopReason>,
    /// A fleet experiment's ready times per shard (shard, ms), when its runs come
    /// from two or more shards; empty otherwise. Two sides from one fleet
    /// experiment are compared machine by machine (see [`row`]).
    #[serde(skip)]
    pub by_shard: Vec<(u32, Vec<f64>)>,
    /// A fleet experiment's shards when it has not stopped ("3 of 4 shards
    /// done, shard 3 never started"): why it is incomplete, rather than a
    /// killed coldstart.
    #[serde(skip)]
    pub shards: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GateRow {
    pub target: String,
    pub baseline_p50_ms: Option<f64>,
    pub candidate_p50_ms: Option<f64>,
    pub baseline_runs: usize,
    pub candidate_runs: usize,
    pub limits: Limits,
    pub comparison: Comparison,
    pub status: Status,
    /// Why the status is what it is, one sentence each.
    pub reasons: Vec<String>,
    /// The machines (shards) the comparison was pooled over, when the two sides
    /// are variants of one fleet experiment; None for a plain comparison.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pooled_over: Option<usize>,
}

fn summary(xs: &[f64]) -> Option<stats::Summary> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    stats::summarize(&v)
}

/// Decide one target. `design`: how the two sides were collected (one interleaved
/// experiment, or separate invocations), which decides what the CI may claim.
pub fn row(target: &str, base: &Side, cand: &Side, design: Design, noise: f64, limits: Limits) -> GateRow {
    let options = stats::CompareOptions { design, noise };
    let blocked = blocked(base, cand, options);
    let comparison = match &blocked {
        Some((b, _)) => b.overall(),
        None => stats::compare(&base.ready_ms, &cand.ready_ms, options),
    };
    let cand_summary = summary(&cand.ready_ms);
    let mb = summary(&base.ready_ms).map(|s| s.p50);
    let mc = cand_summary.as_ref().map(|s| s.p50);
    let mut f = Findings::default();
    for (side, s) in [("baseline", base), ("candidate", cand)] {
        check_side(side, s, &mut f.fails, &mut f.notes);
    }
    if let Some((b, shards)) = &blocked {
        f.notes.extend(pooled_notes(b, shards));
    }
    check_failures(base, cand, &limits, &mut f);
    check_max(&limits, cand_summary.as_ref(), &mut f.fails, &mut f.warns);
    if let Some(b) = mb {
        let shift = judged_shift(&comparison, blocked.is_some(), limits.max_regression, b);
        check_regression(
            &limits,
            b,
            &comparison,
            shift.as_ref(),
            design,
            (base.runs, cand.runs),
            &mut f,
        );
    }
    let status = if !f.fails.is_empty() {
        Status::Fail
    } else if !f.warns.is_empty() {
        Status::Warn
    } else {
        Status::Pass
    };
    let reasons = f.fails.into_iter().chain(f.warns).chain(f.notes).collect();
    GateRow {
        target: target.to_string(),
        baseline_p50_ms: mb,
        candidate_p50_ms: mc,
        baseline_runs: base.runs,
        candidate_runs: cand.runs,
        limits,
        comparison,
        status,
        reasons,
        pooled_over: blocked.map(|(b, _)| b.blocks.len()),
    }
}

/// Two sides measured on the same machines (variants of one fleet experiment,
/// so the design supports a verdict and both have runs from ≥ 2 shards): the
/// comparison blocked by shard, as bench's analysis makes it, with the shards in
/// block order. Machines differ by more than runs do, so pooling every run into
/// one comparison would read that spread as noise, or an unequal mix of shards
/// as a difference between the variants. None otherwise.
fn blocked(
    base: &Side,
    cand: &Side,
    options: stats::CompareOptions,
) -> Option<(stats::BlockedComparison, Vec<u32>)> {
    if !options.design.supports_verdict() || base.by_shard.len() < 2 || cand.by_shard.len() < 2 {
        return None;
    }
    let mut shards: Vec<u32> = base
        .by_shard
        .iter()
        .chain(&cand.by_shard)
        .map(|(k, _)| *k)
        .collect();
    shards.sort_unstable();
    shards.dedup();
    let times = |s: &Side, k: u32| -> Vec<f64> {
        s.by_shard
            .iter()
            .find(|(x, _)| *x == k)
            .map_or_else(Vec::new, |(_, t)| t.clone())
    };
    let times: Vec<(Vec<f64>, Vec<f64>)> = shards.iter().map(|&k| (times(base, k), times(cand, k))).collect();
    let blocks: Vec<stats::Block<'_>> = times
        .iter()
        .map(|(b, c)| stats::Block {
            baseline: b,
            candidate: c,
        })
        .collect();
    Some((stats::compare_blocked(&blocks, options), shards))
}

/// What a gate decided on a fleet experiment rests on: the interval pooled over
/// machines, the stratified test, and machines that disagree.
fn pooled_notes(b: &stats::BlockedComparison, shards: &[u32]) -> Vec<String> {
    let with_ci = b.relative.as_ref().map_or(0, |r| r.blocks);
    let mut notes = vec![format!(
        "decided on the 95% interval pooled over {} machines (shards {}; random effects, so it includes the \
         spread between machines{}){}",
        shards.len(),
        shards.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        if with_ci < shards.len() {
            format!("; {with_ci} of them had enough runs for an interval of their own")
        } else {
            String::new()
        },
        b.van_elteren
            .as_ref()
            .map(|v| format!("; van Elteren test p = {}", crate::format::p_value(v.p_value)))
            .unwrap_or_default()
    )];
    if let Some(h) = b.heterogeneity.as_ref().filter(|h| h.disagree) {
        let names = |ix: &[usize]| {
            ix.iter()
                .filter_map(|i| shards.get(*i))
                .map(|k| format!("shard {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        notes.push(format!(
            "machines disagree: the candidate is faster on {} and slower on {}; the pooled verdict averages over them",
            names(&h.faster),
            names(&h.slower)
        ));
    }
    notes
}

/// What a row's checks found; its reasons are these, worst first.
#[derive(Default)]
struct Findings {
    fails: Vec<String>,
    warns: Vec<String>,
    notes: Vec<String>,
}

/// A failure rate above the baseline's is a regression in its own right (a flaky
/// build must not pass on the speed of its surviving runs). "Above" is decided by
/// Fisher's exact test, one-sided, at 5 %: with run counts this small a plain
/// comparison of rates would fail 1 of 20 vs 0 of 20 (p = 0.5, no evidence) and a
/// rule of "any failure fails" would make the gate itself flaky. A failure that is
/// not significant still warns: it is seen, and more runs decide it.
/// --max-failures accepts up to N (or P %) failed runs whatever the test says.
fn check_failures(base: &Side, cand: &Side, limits: &Limits, f: &mut Findings) {
    let (cf, ct) = (cand.failed_runs, cand.runs + cand.failed_runs);
    let (bf, bt) = (base.failed_runs, base.runs + base.failed_runs);
    let Some(line) = failure_line(cf, ct, bf, bt) else {
        return;
    };
    let line = format!("the candidate {line}");
    match limits.max_failures {
        Some(a) if a.allows(cf, ct) => f
            .notes
            .push(format!("{line}; accepted by --max-failures {}", a.describe())),
        allowance => {
            let beyond = allowance
                .map(|a| format!(", beyond --max-failures {}", a.describe()))
                .unwrap_or_default();
            if failure_p(cf, ct, bf, bt) < FAILURE_ALPHA {
                f.fails.push(format!(
                    "{line}{beyond}: a failure rate above the baseline's fails the gate; fix the failures, \
                     or accept them with --max-failures {cf}"
                ));
            } else {
                f.warns.push(format!(
                    "{line}{beyond}: not evidence of a higher failure rate than the baseline's yet; \
                     rerun with more runs to decide, or accept them with --max-failures {cf}"
                ));
            }
        }
    }
}

/// The shift (ms) a --max-regression limit is held against: the comparison's,
/// except for a relative limit on a fleet experiment, where it is the pooled
/// relative effect and its interval times the baseline median `b`. Machines of
/// different speeds share a relative effect (+10 % is +10 ms on one, +20 ms on
/// another), so the shift in ms pooled over them is as wide as the machines are
/// apart, while a relative limit asks about the relative effect.
fn judged_shift(c: &Comparison, blocked: bool, limit: Option<Regression>, b: f64) -> Option<stats::Shift> {
    match (blocked, limit, &c.relative) {
        (true, Some(Regression::Relative(_)), Some(r)) => Some(stats::Shift {
            estimate: r.estimate * b,
            ci: r.ci.map(|(lo, hi)| (lo * b, hi * b)),
        }),
        _ => c.shift.clone(),
    }
}

/// --max-regression: the shift of ready against its limit (`b`: the baseline
/// median), decided on the 95 % CI in one interleaved experiment and on the
/// estimate across invocations. `runs`: (baseline, candidate).
fn check_regression(
    limits: &Limits,
    b: f64,
    comparison: &Comparison,
    shift: Option<&stats::Shift>,
    design: Design,
    runs: (usize, usize),
    f: &mut Findings,
) {
    let (Some(limit), Some(s)) = (limits.max_regression, shift) else {
        return;
    };
    let limit_ms = limit.ms(b);
    let shown = |x: f64| {
        format!(
            "{} ({})",
            crate::format::signed_ms(x),
            crate::format::signed_percent(x / b)
        )
    };
    let near = || {
        format!(
            "the shift {} is within {} of the {} limit",
            shown(s.estimate),
            percent(limits.margin),
            limit.describe()
        )
    };
    if !design.supports_verdict() {
        // Separate invocations: no interval can be given, so the estimate decides,
        // and the limit must be wider than the drift between invocations.
        f.notes.push(
            "separate invocations: decided on the shift estimate; no significance claim (the limit must exceed \
             run-to-run drift between invocations; measuring both in one interleaved bench gives a CI)"
                .into(),
        );
        if s.estimate > limit_ms {
            f.fails.push(format!(
                "slower by {}, beyond the {} limit",
                shown(s.estimate),
                limit.describe()
            ));
        } else if s.estimate > limit_ms * (1.0 - limits.margin) {
            f.warns.push(near());
        } else if let Some(w) = limits.warn.filter(|w| s.estimate > w.ms(b)) {
            f.warns.push(format!(
                "slower by {}, beyond the {} warning level",
                shown(s.estimate),
                w.describe()
            ));
        }
        return;
    }
    let Some((lo, hi)) = s.ci else {
        f.fails.push(format!(
            "too few runs for a 95% CI (baseline {}, candidate {})",
            runs.0, runs.1
        ));
        return;
    };
    let slower = comparison.verdict == Verdict::Slower;
    if slower && lo > limit_ms {
        f.fails.push(format!(
            "slower by {} with the whole 95% CI ({} to {}) beyond the {} limit",
            shown(s.estimate),
            shown(lo),
            shown(hi),
            limit.describe()
        ));
    } else if s.estimate > limit_ms {
        // Not a fail, and it must say so: the estimate is beyond the limit.
        f.warns.push(format!(
            "passed only because the evidence is not conclusive: the shift {} is beyond the {} limit, \
             but its 95% CI ({} to {}) reaches below it; rerun with more runs to decide",
            shown(s.estimate),
            limit.describe(),
            shown(lo),
            shown(hi)
        ));
    } else if hi > limit_ms && s.estimate > limit_ms * (1.0 - limits.margin) {
        f.warns.push(near());
    } else if let Some(w) = limits.warn {
        if slower && s.estimate > w.ms(b) {
            f.warns.push(format!(
                "slower by {}, beyond the {} warning level",
                shown(s.estimate),
                w.describe()
            ));
        }
    }
}

/// One side's completeness: incomplete, stopped at a failure or without a
/// successful run fails; a baseline's failed runs are a note.
fn check_side(side: &str, s: &Side, fails: &mut Vec<String>, notes: &mut Vec<String>) {
    match s.stopped {
        Some(reason) if reason.finished() => {}
        None => fails.push(match &s.shards {
            Some(shards) => format!(
                "the {side} (experiment {}) is incomplete: it is a fleet experiment with {shards}; run the \
                 missing shards (a retried shard replaces its own runs) and gate again",
                s.experiment
            ),
            None => format!(
                "the {side} (experiment {}) is incomplete: coldstart stopped before it finished (killed?); rerun it",
                s.experiment
            ),
        }),
        Some(StopReason::Failure) => fails.push(format!(
            "the {side} (experiment {}) stopped at a failed run; fix the failure or rerun with --keep-going",
            s.experiment
        )),
        Some(other) => fails.push(format!(
            "the {side} (experiment {}) did not complete ({other})",
            s.experiment
        )),
    }
    if s.runs == 0 {
        fails.push(format!(
            "the {side} (experiment {}) has no successful run",
            s.experiment
        ));
    } else if s.failed_runs > 0 && side == "baseline" {
        notes.push(format!("the {side} had {} failed run(s)", s.failed_runs));
    }
}

/// The candidate's median against --max (an SLO): beyond fails; near it, or
/// with a CI reaching beyond it, warns.
fn check_max(
    limits: &Limits,
    cand: Option<&stats::Summary>,
    fails: &mut Vec<String>,
    warns: &mut Vec<String>,
) {
    if let (Some(max), Some(m)) = (limits.max_ms, cand.map(|s| s.p50)) {
        use crate::format::ms;
        let ci = cand.and_then(|s| s.p50_ci);
        if m > max {
            let why = match ci {
                Some((lo, _)) if lo <= max => format!(
                    " (its 95% CI {}–{} reaches below the limit: the median is near it)",
                    ms(lo),
                    ms(ci.map_or(m, |c| c.1))
                ),
                _ => String::new(),
            };
            fails.push(format!("median {} exceeds --max {}{why}", ms(m), ms(max)));
        } else if m > max * (1.0 - limits.margin) {
            warns.push(format!(
                "median {} is within {} of --max {}",
                ms(m),
                percent(limits.margin),
                ms(max)
            ));
        } else if let Some((_, hi)) = ci.filter(|c| c.1 > max) {
            warns.push(format!(
                "median {} is under --max {}, but its 95% CI reaches {}",
                ms(m),
                ms(max),
                ms(hi)
            ));
        }
    }
}

/// Decide one target without a baseline: `--max` (and `--max-failures`) only.
/// Any failed run fails, unless --max-failures accepts it: there is no
/// baseline whose failure rate it could be compared with.
pub fn alone(target: &str, cand: &Side, limits: Limits) -> GateRow {
    let (mut fails, mut warns, mut notes) = (Vec::new(), Vec::new(), Vec::new());
    check_side("candidate", cand, &mut fails, &mut notes);
    let (cf, ct) = (cand.failed_runs, cand.runs + cand.failed_runs);
    if cf > 0 {
        let line = format!("the candidate fails {cf} of {ct} runs");
        match limits.max_failures {
            Some(a) if a.allows(cf, ct) => notes.push(format!("{line}; accepted by --max-failures {}", a.describe())),
            _ => fails.push(format!(
                "{line} (no baseline to compare failure rates with: any failure fails); fix the failures, or accept them with --max-failures {cf}"
            )),
        }
    }
    let cand_summary = summary(&cand.ready_ms);
    check_max(&limits, cand_summary.as_ref(), &mut fails, &mut warns);
    let mut comparison = stats::compare(
        &[],
        &cand.ready_ms,
        stats::CompareOptions {
            design: Design::Separate,
            noise: 0.0,
        },
    );
    comparison.reason = Some("no baseline: judged on --max alone".into());
    let status = if !fails.is_empty() {
        Status::Fail
    } else if !warns.is_empty() {
        Status::Warn
    } else {
        Status::Pass
    };
    GateRow {
        target: target.to_string(),
        baseline_p50_ms: None,
        candidate_p50_ms: cand_summary.map(|s| s.p50),
        baseline_runs: 0,
        candidate_runs: cand.runs,
        limits,
        comparison,
        status,
        reasons: fails.into_iter().chain(warns).chain(notes).collect(),
        pooled_over: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(base: f64, n: usize) -> Vec<f64> {
        // Deterministic spread of ±1 % around `base`.
        (0..n)
            .map(|i| base * (1.0 + ((i * 7919) % 21) as f64 / 1000.0 - 0.01))
            .collect()
    }

    fn side(id: i64, xs: Vec<f64>) -> Side {
        Side {
            experiment: id,
            runs: xs.len(),
            ready_ms: xs,
            failed_runs: 0,
            stopped: Some(StopReason::Completed),
            by_shard: Vec::new(),
            shards: None,
        }
    }

    fn rel(f: f64) -> Option<Regression> {
        Some(Regression::Relative(f))
    }

    fn limits(max_regression: Option<Regression>, warn: Option<Regression>) -> Limits {
        Limits {
            max_regression,
            warn,
            max_ms: None,
            margin: 0.05,
            max_failures: None,
        }
    }

    fn status(b: Vec<f64>, c: Vec<f64>, design: Design, l: Limits) -> GateRow {
        row("x", &side(1, b), &side(2, c), design, 0.01, l)
    }

    #[test]
    fn ten_percent_regression_fails_warns_or_passes_by_threshold() {
        let (a, b) = (series(100.0, 30), series(110.0, 30));
        let i = Design::Interleaved;
        assert_eq!(
            status(a.clone(), b.clone(), i, limits(rel(0.05), None)).status,
            Status::Fail
        );
        assert_eq!(
            status(a.clone(), b.clone(), i, limits(rel(0.15), None)).status,
            Status::Pass
        );
        assert_eq!(
            status(a.clone(), b.clone(), i, limits(rel(0.15), rel(0.03))).status,
            Status::Warn
        );
        // A/A passes; so does an improvement.
        assert_eq!(
            status(a.clone(), series(100.0, 30), i, limits(rel(0.05), rel(0.0))).status,
            Status::Pass
        );
        assert_eq!(
            status(b.clone(), a.clone(), i, limits(rel(0.0), rel(0.0))).status,
            Status::Pass
        );
        // Milliseconds work like percentages: +10 ms against a 5 ms and a 15 ms limit.
        assert_eq!(
            status(a.clone(), b.clone(), i, limits(Some(Regression::Ms(5.0)), None)).status,
            Status::Fail
        );
        assert_eq!(
            status(a, b, i, limits(Some(Regression::Ms(15.0)), None)).status,
            Status::Pass
        );
    }

    #[test]
    fn a_regression_beyond_the_limit_with_a_straddling_ci_says_why_it_passed() {
        // +25 % median with a wide spread, against a 20 % limit.
        let a: Vec<f64> = (0..12).map(|i| 100.0 + (i as f64 - 5.5) * 6.0).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.25).collect();
        let r = status(a, b, Design::Interleaved, limits(rel(0.20), None));
        assert_eq!(r.status, Status::Warn, "{r:?}");
        assert!(r.reasons[0].contains("passed only because"), "{:?}", r.reasons);
    }

    #[test]
    fn separate_invocations_are_decided_on_the_estimate_and_say_so() {
        let (a, b) = (series(100.0, 30), series(110.0, 30));
        let r = status(a.clone(), b, Design::Separate, limits(rel(0.05), None));
        assert_eq!(r.status, Status::Fail);
        assert!(r.comparison.shift.as_ref().is_some_and(|s| s.ci.is_none()));
        assert!(r.reasons.iter().any(|s| s.contains("separate invocations")));
        let same = status(a.clone(), a, Design::Separate, limits(rel(0.05), None));
        assert_eq!(same.status, Status::Pass);
    }

    #[test]
    fn absolute_limit_and_its_margin() {
        let a = series(100.0, 30);
        let max = |m: f64| Limits {
            max_ms: Some(m),
            ..limits(None, None)
        };
        assert_eq!(
            status(a.clone(), a.clone(), Design::Separate, max(90.0)).status,
            Status::Fail
        );
        assert_eq!(
            status(a.clone(), a.clone(), Design::Separate, max(103.0)).status,
            Status::Warn
        );
        assert_eq!(
            status(a.clone(), a, Design::Separate, max(200.0)).status,
            Status::Pass
        );
    }

    #[test]
    fn incomplete_failed_or_empty_sides_fail() {
        let a = series(100.0, 30);
        let mut killed = side(2, a.clone());
        killed.stopped = None;
        let r = row(
            "x",
            &side(1, a.clone()),
            &killed,
            Design::Separate,
            0.01,
            limits(rel(0.5), None),
        );
        assert_eq!(r.status, Status::Fail);
        assert!(r.reasons[0].contains("incomplete"));
        let empty = side(2, Vec::new());
        let r = row(
            "x",
            &side(1, a),
            &empty,
            Design::Interleaved,
            0.01,
            limits(rel(0.5), None),
        );
        assert_eq!(r.status, Status::Fail);
        assert!(
            r.reasons.iter().any(|s| s.contains("no successful run")),
            "{:?}",
            r.reasons
        );
    }

    fn flaky(id: i64, xs: Vec<f64>, failed: usize) -> Side {
        Side {
            failed_runs: failed,
            ..side(id, xs)
        }
    }

    /// A side of a fleet experiment: `per_machine[k]` runs around `base_ms[k]` on shard k.
    fn fleet_side(id: i64, base_ms: &[f64], factor: f64, per_machine: &[usize]) -> Side {
        let by_shard: Vec<(u32, Vec<f64>)> = base_ms
            .iter()
            .zip(per_machine)
            .enumerate()
            .map(|(k, (b, n))| (k as u32, series(b * factor, *n)))
            .collect();
        Side {
            by_shard: by_shard.clone(),
            ..side(id, by_shard.into_iter().flat_map(|(_, t)| t).collect())
        }
    }

    /// Variants of one fleet experiment are judged machine by machine: machines
    /// 100, 150 and 200 ms apart, the candidate +10 % on each, fail a 5 % limit
    /// and pass a 15 % one, on the pooled interval (which the reasons name). With
    /// no change on any machine but the candidate's runs mostly on the slow
    /// machine, pooling all runs would call it ~40 % slower and fail; blocked, it passes.
    #[test]
    fn a_fleet_experiment_is_gated_on_the_interval_pooled_over_machines() {
        let machines = [100.0, 150.0, 200.0];
        let i = Design::Interleaved;
        let (base, cand) = (
            fleet_side(1, &machines, 1.0, &[12, 12, 12]),
            fleet_side(1, &machines, 1.10, &[12, 12, 12]),
        );
        let r = row("x", &base, &cand, i, 0.01, limits(rel(0.05), None));
        assert_eq!(r.status, Status::Fail, "{:?}", r.reasons);
        assert_eq!(r.pooled_over, Some(3));
        assert!(
            r.comparison.mann_whitney.is_none(),
            "the pooled comparison, not all runs at once"
        );
        assert!(
            r.reasons
                .iter()
                .any(|x| x.contains("pooled over 3 machines (shards 0, 1, 2")),
            "{:?}",
            r.reasons
        );
        let rel_ = r.comparison.relative.as_ref().expect("a pooled relative effect");
        assert!((rel_.estimate - 0.10).abs() < 0.01, "{rel_:?}");
        let r = row("x", &base, &cand, i, 0.01, limits(rel(0.15), None));
        assert_eq!(r.status, Status::Pass, "{:?}", r.reasons);

        let (base, cand) = (
            fleet_side(1, &machines, 1.0, &[20, 12, 4]),
            fleet_side(1, &machines, 1.0, &[4, 12, 20]),
        );
        let naive = status(
            base.ready_ms.clone(),
            cand.ready_ms.clone(),
            i,
            limits(rel(0.05), None),
        );
        assert_eq!(
            naive.status,
            Status::Fail,
            "pooling every run sees the machine mix"
        );
        let r = row("x", &base, &cand, i, 0.01, limits(rel(0.05), None));
        assert_eq!(r.status, Status::Pass, "{:?}", r.reasons);
        assert!(r
            .comparison
            .relative
            .as_ref()
            .is_some_and(|x| x.estimate.abs() < 0.01));

        // Two separate fleet experiments: separate invocations, never blocked.
        let other = Side {
            experiment: 2,
            ..fleet_side(2, &machines, 1.10, &[12, 12, 12])
        };
        let r = row(
            "x",
            &base,
            &other,
            Design::Separate,
            0.01,
            limits(rel(0.05), None),
        );
        assert_eq!(r.pooled_over, None);
        assert_eq!(r.comparison.verdict, Verdict::None);
    }

    /// One machine faster, another slower: the gate says so.
    #[test]
    fn machines_that_disagree_are_named() {
        let base = fleet_side(1, &[100.0, 100.0], 1.0, &[15, 15]);
        let mut cand = fleet_side(1, &[100.0, 100.0], 1.0, &[15, 15]);
        cand.by_shard[0].1 = series(90.0, 15);
        cand.by_shard[1].1 = series(110.0, 15);
        cand.ready_ms = cand.by_shard.iter().flat_map(|(_, t)| t.clone()).collect();
        let r = row(
            "x",
            &base,
            &cand,
            Design::Interleaved,
            0.01,
            limits(rel(0.5), None),
        );
        assert!(
            r.reasons
                .iter()
                .any(|x| x
                    .contains("machines disagree: the candidate is faster on shard 0 and slower on shard 1")),
            "{:?}",
            r.reasons
        );
    }

    #[test]
    fn a_failure_rate_above_the_baselines_fails_unless_allowed() {
        let (a, b) = (series(100.0, 20), series(100.0, 13));
        let gate = |cand: Side, base_failed: usize, allow: Option<FailureAllowance>| {
            let l = Limits {
                max_ms: Some(1000.0),
                max_failures: allow,
                ..limits(None, None)
            };
            row(
                "x",
                &flaky(1, a.clone(), base_failed),
                &cand,
                Design::Interleaved,
                0.01,
                l,
            )
        };
        // 7 of 20 vs 0 of 20: p = 0.004.
        let r = gate(flaky(2, b.clone(), 7), 0, None);
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert!(r.reasons[0].contains("fails 7 of 20 runs"), "{:?}", r.reasons);
        assert!(r.reasons[0].contains("Fisher"), "{:?}", r.reasons);
        for allow in [FailureAllowance::Runs(7), FailureAllowance::Share(0.35)] {
            let r = gate(flaky(2, b.clone(), 7), 0, Some(allow));
            assert_eq!(r.status, Status::Pass, "{r:?}");
            assert!(r.reasons.iter().any(|s| s.contains("accepted by --max-failures")));
        }
        let r = gate(flaky(2, b.clone(), 7), 0, Some(FailureAllowance::Runs(6)));
        assert_eq!(r.status, Status::Fail, "{r:?}");
        // 1 of 20 vs 0 of 20 is no evidence: a warning, not a failure.
        let r = gate(flaky(2, series(100.0, 19), 1), 0, None);
        assert_eq!(r.status, Status::Warn, "{r:?}");
        assert!(r.reasons[0].contains("not significantly more"), "{:?}", r.reasons);
        // As flaky as the baseline: no evidence either.
        let r = gate(flaky(2, b, 7), 7, None);
        assert_eq!(r.status, Status::Warn, "{r:?}");
    }

    #[test]
    fn failure_allowance_parsing() {
        assert_eq!(FailureAllowance::parse("7").unwrap(), FailureAllowance::Runs(7));
        assert_eq!(
            FailureAllowance::parse("10%").unwrap(),
            FailureAllowance::Share(0.10)
        );
        assert!(FailureAllowance::parse("-1").is_err());
        assert!(FailureAllowance::parse("x%").is_err());
        assert!(FailureAllowance::Share(0.35).allows(7, 20));
        assert!(!FailureAllowance::Share(0.30).allows(7, 20));
    }

    #[test]
    fn limit_parsing() {
        assert_eq!(
            Regression::parse("--x", "5%").unwrap(),
            Regression::Relative(0.05)
        );
        assert_eq!(Regression::parse("--x", "300ms").unwrap(), Regression::Ms(300.0));
        assert_eq!(Regression::parse("--x", "1.5s").unwrap(), Regression::Ms(1500.0));
        assert!(Regression::parse("--x", "five").is_err());
        assert!(Regression::parse("--x", "-1%").is_err());
        assert!(Regression::parse("--x", "12").is_err());
        assert_eq!(parse_ms("12s"), Some(12000.0));
        assert_eq!(parse_ms("1e300s"), None);
    }
}
