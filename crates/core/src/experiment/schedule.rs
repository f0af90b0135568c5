//! Executing a plan: warmups, then rounds in shuffled (or sequential) order,
//! with adaptive stopping on the median's confidence interval.

use super::plan::{CiOf, Order, Plan, StopRule, Variant};
use crate::sample::{RunId, Sample};
use anyhow::Result;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why measuring stopped. Stored (the `stopped` column) and exported as these
/// strings; an experiment that never stopped (its coldstart was killed, or it
/// still runs) has none: "incomplete".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// Every planned run was done (a fixed number of runs).
    Completed,
    /// Adaptive stopping: every interval asked for was within the target.
    TargetCi,
    /// Adaptive stopping: the maximum number of runs came first.
    MaxRuns,
    /// A run failed (and failures were not tolerated with --keep-going).
    Failure,
    /// A signal (Ctrl-C) cut the experiment short.
    Interrupted,
}

impl StopReason {
    pub const ALL: [StopReason; 5] = [
        StopReason::Completed,
        StopReason::TargetCi,
        StopReason::MaxRuns,
        StopReason::Failure,
        StopReason::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::TargetCi => "target-ci",
            StopReason::MaxRuns => "max-runs",
            StopReason::Failure => "failure",
            StopReason::Interrupted => "interrupted",
        }
    }

    /// The stored form back; None for text no coldstart writes.
    pub fn parse(s: &str) -> Option<StopReason> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Whether every planned measurement was taken (the results are whole).
    pub fn finished(self) -> bool {
        matches!(
            self,
            StopReason::Completed | StopReason::TargetCi | StopReason::MaxRuns
        )
    }

    /// How an optional reason reads: "incomplete" when the experiment never stopped.
    pub fn label(reason: Option<StopReason>) -> &'static str {
        reason.map_or("incomplete", StopReason::as_str)
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ExperimentResult {
    pub variants: Vec<Variant>,
    pub samples: Vec<Sample>,
    /// Why measuring stopped; None while it runs, or for a stored experiment
    /// whose coldstart was killed ("incomplete").
    pub stopped: Option<StopReason>,
    /// How the samples were collected: what kind of comparison they support.
    pub design: coldstart_stats::Design,
    /// How loaded the machine was during the runs (session::run reads it; None for
    /// experiments stored before it was, and for results built in memory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<super::load::Load>,
    /// A fleet experiment's shards, as stored (None when it was not sharded, and
    /// while a shard runs: the shard knows only its own runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<super::shard::FleetRecord>,
}

impl ExperimentResult {
    /// Ready times (ms) of the successful, non-warmup runs of one variant.
    pub fn ready_ms(&self, variant: usize) -> Vec<f64> {
        self.samples
            .iter()
            .filter(|s| s.variant == variant && !s.warmup && s.ok())
            .filter_map(|s| s.ready_ns)
            .map(|ns| ns as f64 / 1e6)
            .collect()
    }

    /// Why it stopped, as stored and shown ("incomplete" when it never stopped).
    pub fn stopped_label(&self) -> &'static str {
        StopReason::label(self.stopped)
    }
}

/// Told about each run as it finishes (progress display lives in report).
pub trait Observer {
    fn planned(&mut self, total_runs: usize);
    fn finished(&mut self, variant: &Variant, sample: &Sample);
}

/// Does one run. The runner owns what a run of each variant needs (targets,
/// probes, options, an emulated Lambda environment); the plan only schedules.
pub trait Runner {
    /// One run of variant `variant` (an index into the plan's variants; the same
    /// as `id.variant`).
    fn run(&mut self, variant: usize, id: RunId) -> Result<Sample>;

    /// Told the stored experiment's id (None: not stored) before the first run:
    /// a runner that changes things outside coldstart journals them under it
    /// (`coldstart lambda --aws`).
    fn started(&mut self, _experiment: Option<i64>) -> Result<()> {
        Ok(())
    }
}

/// A closure is a runner (tests' mocks, one-off embedders).
impl<F: FnMut(usize, RunId) -> Result<Sample>> Runner for F {
    fn run(&mut self, variant: usize, id: RunId) -> Result<Sample> {
        self(variant, id)
    }
}

/// Execute with any runner (e.g. `coldstart lambda`'s emulated cold start): the
/// schedule, warmups, adaptive stop and observer calls are the same for all.
pub fn execute_with(
    plan: &Plan,
    observer: &mut dyn Observer,
    runner: &mut dyn Runner,
) -> Result<ExperimentResult> {
    let n = plan.variants.len();
    let mut result = ExperimentResult {
        variants: plan.variants.clone(),
        samples: Vec::new(),
        stopped: None,
        design: plan.order.design(),
        load: None,
        fleet: None,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(plan.seed);
    observer.planned(n * (plan.warmup + plan.stop.max_runs()));

    // Warmups: fill the page cache with the binaries and libraries so the first
    // measured run does not pay disk reads the others do not.
    for w in 0..plan.warmup {
        for v in order_for_round(n, plan.order, &mut rng) {
            if !step(plan, &mut result, observer, runner, v, w, true)? {
                return Ok(result);
            }
        }
    }
    match plan.order {
        Order::Shuffled => {
            for round in 0..plan.stop.max_runs() {
                for v in order_for_round(n, Order::Shuffled, &mut rng) {
                    if !step(plan, &mut result, observer, runner, v, round, false)? {
                        return Ok(result);
                    }
                }
                if let Some(reason) = should_stop(plan, &result, 0..n, round + 1) {
                    result.stopped = Some(reason);
                    return Ok(result);
                }
            }
        }
        Order::Sequential => {
            for v in 0..n {
                for round in 0..plan.stop.max_runs() {
                    if !step(plan, &mut result, observer, runner, v, round, false)? {
                        return Ok(result);
                    }
                    if should_stop(plan, &result, v..v + 1, round + 1).is_some() {
                        break;
                    }
                }
            }
        }
    }
    result.stopped = Some(match plan.stop {
        StopRule::Fixed { .. } => StopReason::Completed,
        StopRule::Adaptive { .. } => StopReason::MaxRuns,
    });
    Ok(result)
}

/// One run; false when the experiment must stop (failure without --keep-going, or interrupt).
fn step(
    plan: &Plan,
    result: &mut ExperimentResult,
    observer: &mut dyn Observer,
    runner: &mut dyn Runner,
    v: usize,
    round: usize,
    warmup: bool,
) -> Result<bool> {
    let variant = &plan.variants[v];
    let sample = runner.run(
        v,
        RunId {
            variant: v,
            round,
            warmup,
        },
    )?;
    observer.finished(variant, &sample);
    let interrupted = sample.outcome == crate::sample::Outcome::Interrupted;
    let failed = !sample.ok();
    result.samples.push(sample);
    if interrupted {
        result.stopped = Some(StopReason::Interrupted);
        return Ok(false);
    }
    if failed && !plan.keep_going {
        result.stopped = Some(StopReason::Failure);
        return Ok(false);
    }
    Ok(true)
}

fn order_for_round(n: usize, order: Order, rng: &mut rand::rngs::StdRng) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    if order == Order::Shuffled {
        idx.shuffle(rng);
    }
    idx
}

/// Adaptive stop: at least min runs, and every interval asked for (each median in
/// `range`, or each shift against the baseline) within the target on both sides of
/// its estimate. Cold-start times are right-skewed, more so on a busy machine, and
/// so are their intervals: a median of 102 ms with a CI of [100, 116] has a
/// half-width of 8 ms but reaches 14 ms above the estimate. Judging the half-width
/// stopped such an experiment on an interval wider than asked for; the farther end
/// decides (`reach`).
fn should_stop(
    plan: &Plan,
    result: &ExperimentResult,
    range: std::ops::Range<usize>,
    runs: usize,
) -> Option<StopReason> {
    let StopRule::Adaptive {
        min_runs,
        target,
        relative,
        of,
        ..
    } = plan.stop
    else {
        return None;
    };
    if runs < min_runs {
        return None;
    }
    let within = |half: f64, median: f64| half <= if relative { target * median } else { target };
    let shift_tight = |v: usize| shift_tight(plan, result, v, target, relative);
    let all_tight = match of {
        CiOf::Median => range.into_iter().all(|v| {
            let Some(summary) = median_of(result, v) else {
                return false;
            };
            let Some(ci) = summary.p50_ci else {
                return false;
            };
            within(reach(summary.p50, ci), summary.p50)
        }),
        // Each variant against its baseline: the first variant, or in a sweep the
        // baseline variant at the same parameter values.
        CiOf::Shift => (0..plan.variants.len()).all(shift_tight),
        CiOf::Verdict { noise } => (0..plan.variants.len()).all(|v| {
            let Some(b) = super::sweep::baseline_of(&plan.variants, v) else {
                return true;
            };
            // The ratio's interval, as coldstart_stats::compare's `relative` (ratio − 1).
            let decided = coldstart_stats::ratio(
                &result.ready_ms(b),
                &result.ready_ms(v),
                coldstart_stats::COMPARE_CONFIDENCE,
            )
            .and_then(|r| r.ci)
            .is_some_and(|(lo, hi)| hi - 1.0 < -noise || lo - 1.0 >= -noise);
            decided || shift_tight(v)
        }),
    };
    all_tight.then_some(StopReason::TargetCi)
}

fn median_of(result: &ExperimentResult, v: usize) -> Option<coldstart_stats::Summary> {
    let mut xs = result.ready_ms(v);
    xs.sort_by(f64::total_cmp);
    coldstart_stats::summarize(&xs)
}

/// How far the interval reaches from its estimate, on its wider side.
fn reach(estimate: f64, (lo, hi): (f64, f64)) -> f64 {
    (estimate - lo).max(hi - estimate)
}

/// Whether `v`'s comparison with its baseline is as precise as `target` asks.
fn shift_tight(plan: &Plan, result: &ExperimentResult, v: usize, target: f64, relative: bool) -> bool {
    let Some(b) = super::sweep::baseline_of(&plan.variants, v) else {
        return true;
    };
    let Some(base) = median_of(result, b) else {
        return false;
    };
    let (bx, cx) = (result.ready_ms(b), result.ready_ms(v));
    // A share is judged on the interval the report prints for it: the
    // ratio's (coldstart_stats::compare's `relative`), whose units are already
    // shares; milliseconds, and times with no log, on the shift's.
    if relative {
        if let Some(r) = coldstart_stats::ratio(&bx, &cx, coldstart_stats::COMPARE_CONFIDENCE) {
            return r.ci.is_some_and(|ci| reach(r.estimate, ci) <= target);
        }
    }
    let within = |half: f64, median: f64| half <= if relative { target * median } else { target };
    match coldstart_stats::hodges_lehmann(&bx, &cx, coldstart_stats::COMPARE_CONFIDENCE) {
        Some(coldstart_stats::Shift {
            estimate,
            ci: Some(ci),
        }) => within(reach(estimate, ci), base.p50),
        _ => false,
    }
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
