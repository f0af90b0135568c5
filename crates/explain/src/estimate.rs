//! True times: every traced figure beside an estimate of what it would have
//! been untraced.
//!
//! # Method (per-stop subtraction)
//!
//! A traced run is slower than an untraced one almost only because of the
//! tracer's stops: each one holds a task for the kernel's round trip (the stop,
//! waking the tracer, the resume, the task scheduled again) plus the tracer's
//! own work on it (decoding, reading memory and procfs), which the tracer times
//! per stop ([`coldstart_core::trace::Stop::held_ns`]). So a stop costs
//! `round_trip + held`, and a traced interval's untraced estimate is its traced
//! duration minus the cost of the stops inside it (the whole tree's: a waiting
//! parent is delayed by its children's stops too), never below zero.
//!
//! The round trip is calibrated on this machine when explain starts
//! ([`calibrate`]): coldstart's own binary, started as a calibration target that
//! makes [`CALIBRATION_OPENS`] failing opens (two stops each), runs
//! [`CALIBRATION_ROUNDS`] times untraced and traced, interleaved; the round trip
//! is `(median(traced − held) − median(untraced)) / stops`. The experiment's
//! untraced arm then sets the residual scale on every stop's cost
//! ([`residual_scale`]) and its interval ([`scale_ci`]: the test of traced −
//! k × cost against the untraced runs, inverted), from which every estimate
//! gets a range. Estimates are shown only when reliable ([`Noise`] says why
//! not); otherwise every figure stays traced, and an estimate is never above
//! its traced figure. The calibrated model's own error stays on the report.

use crate::timeline::{self, Timeline};
use anyhow::{bail, Context, Result};
use coldstart_core::experiment::ExperimentResult;
use coldstart_core::run::{run_once, run_traced, RunId, RunOptions};
use coldstart_core::target::{Readiness, Target};
use coldstart_core::trace::{Stop, Trace};
use serde::{Deserialize, Serialize};

/// The variable that turns coldstart's binary into the calibration target:
/// the number of failing opens to make before exiting.
pub const CALIBRATE_ENV: &str = "COLDSTART_CALIBRATE_OPENS";
pub const CALIBRATION_OPENS: usize = 1000;
pub const CALIBRATION_ROUNDS: usize = 15;

/// Called first thing in `main`: when started as the calibration target, make
/// the opens and return the exit code (no Lab, no threads, no output).
pub fn calibration_target() -> Option<i32> {
    let n: usize = std::env::var(CALIBRATE_ENV).ok()?.parse().ok()?;
    for i in 0..n {
        // A path that does not exist: the open fails at once, after the
        // tracer's two stops (entry, and the exit for its result).
        let _ = std::fs::File::open(format!("/nonexistent-coldstart-calibration/{i}"));
    }
    Some(0)
}

/// The tracer's cost per stop on this machine, beside the tracer's own time
/// per stop (which is measured in every run, so not part of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The kernel's round trip per stop, µs (calibrated).
    pub round_trip_us: f64,
    /// The tracer's own time per stop in the calibration runs, µs (measured).
    pub held_us: f64,
    /// Stops per traced calibration run.
    pub stops: usize,
    pub rounds: usize,
    /// Half the 95 % CI of the per-round round trips' median (order
    /// statistics), as a percentage of the estimate: how stable the
    /// calibration was. (Before: half their whole range, which one round
    /// disturbed by another process made ±538 %.)
    pub spread_pct: f64,
}

/// Measure [`Calibration`]: the calibration target untraced and traced,
/// interleaved, `rounds` times each.
pub fn calibrate(opts: &RunOptions, rounds: usize) -> Result<Calibration> {
    let exe = std::env::current_exe().context("locating coldstart's own binary for the calibration")?;
    let target = Target {
        argv: vec![exe.display().to_string()],
        program: exe,
        env: vec![(CALIBRATE_ENV.into(), CALIBRATION_OPENS.to_string())],
        cwd: None,
        limits: Default::default(),
        container: None,
    };
    // Coldstart's own binary is the target here: the command's requests and marks are not for it.
    let opts = opts.bare();
    let id = |round| RunId {
        variant: 0,
        round,
        warmup: false,
    };
    let (mut untraced, mut traced) = (Vec::new(), Vec::new());
    // One warm-up of each first (page cache, the binary's first map).
    for round in 0..=rounds {
        let u = run_once(&target, &Readiness::Exit, &opts, id(round))?;
        let mut t = run_traced(&target, &Readiness::Exit, &opts, id(round))?;
        let (Some(u_ns), Some(t_ns), Some(trace)) = (u.ready_ns, t.ready_ns, t.trace.take()) else {
            bail!("the tracer's calibration run failed (coldstart's own binary as the target)")
        };
        if round == 0 {
            continue;
        }
        let held: u64 = trace.stops.iter().map(|s| u64::from(s.held_ns)).sum();
        untraced.push(u_ns as f64);
        traced.push((t_ns as f64, held as f64, trace.stops.len()));
    }
    Ok(fit(&untraced, &traced))
}

/// The round trip from untraced times and traced (time, held, stops), ns.
pub fn fit(untraced: &[f64], traced: &[(f64, f64, usize)]) -> Calibration {
    let med = |xs: &mut Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        coldstart_core::stats::quantile(xs, 0.5)
    };
    let u = med(&mut untraced.to_vec());
    let stops = med(&mut traced.iter().map(|t| t.2 as f64).collect()).max(1.0);
    let rest = med(&mut traced.iter().map(|t| t.0 - t.1).collect());
    let held = med(&mut traced.iter().map(|t| t.1).collect());
    let round_trip = ((rest - u) / stops).max(0.0);
    // Each round against the untraced median: the median's CI of those.
    let mut per: Vec<f64> = traced
        .iter()
        .map(|t| ((t.0 - t.1 - u) / (t.2.max(1) as f64)).max(0.0))
        .collect();
    per.sort_by(f64::total_cmp);
    let (lo, hi) = coldstart_core::stats::median_ci(&per, super::CONFIDENCE)
        .or_else(|| Some((*per.first()?, *per.last()?)))
        .unwrap_or((round_trip, round_trip));
    let spread_pct = if round_trip > 0.0 && per.len() > 1 {
        (hi - lo) / 2.0 / round_trip * 100.0
    } else {
        0.0
    };
    Calibration {
        round_trip_us: round_trip / 1e3,
        held_us: held / stops / 1e3,
        stops: stops as usize,
        rounds: traced.len(),
        spread_pct,
    }
}

/// The cost of the stops inside an interval of one traced run.
pub struct StopCosts {
    /// Stop instants since time zero, ascending.
    ts: Vec<u64>,
    /// cost[i] = the cost of stops[..i], ns.
    cum: Vec<f64>,
}

impl StopCosts {
    /// Every stop's cost as calibrated (the residual scale is applied later, per estimate).
    pub fn new(trace: &Trace, cal: &Calibration) -> StopCosts {
        let mut stops: Vec<&Stop> = trace.stops.iter().collect();
        stops.sort_by_key(|s| s.ts_ns);
        let mut cum = Vec::with_capacity(stops.len() + 1);
        cum.push(0.0);
        let mut acc = 0.0;
        for s in &stops {
            acc += cal.round_trip_us * 1e3 + f64::from(s.held_ns);
            cum.push(acc);
        }
        StopCosts {
            ts: stops
                .iter()
                .map(|s| s.ts_ns.saturating_sub(trace.t0_ns))
                .collect(),
            cum,
        }
    }

    /// Stops in [a, b) (ns since time zero) and their cost in ns.
    pub fn within(&self, a: u64, b: u64) -> (usize, f64) {
        let i = self.ts.partition_point(|&t| t < a);
        let j = self.ts.partition_point(|&t| t < b).max(i);
        (j - i, self.cum[j] - self.cum[i])
    }

    /// The untraced estimate of the interval [a, b), ms.
    pub fn estimate_ms(&self, a: u64, b: u64) -> f64 {
        let traced = b.saturating_sub(a) as f64;
        (traced - self.within(a, b).1).max(0.0) / 1e6
    }
}

/// One interval: traced and estimated untraced, ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimated {
    pub name: String,
    pub traced_ms: f64,
    /// The untraced estimate; the traced figure itself when the experiment's
    /// estimates are not reliable ([`Estimate::reliable`]). Never above `traced_ms`.
    pub estimate_ms: f64,
    pub stops: usize,
    /// The calibrated cost of the stops inside (scale 1), ms: what the scale multiplies.
    #[serde(default)]
    pub cost_ms: f64,
    /// The estimate's 95 % range, ms (the scale's interval; for the phases of
    /// [`Estimate::phases`] also the spread of the runs). None when not reliable.
    #[serde(default)]
    pub range_ms: Option<(f64, f64)>,
}

impl Estimated {
    fn new(name: &str, traced_ns: u64, (stops, cost_ns): (usize, f64)) -> Estimated {
        let mut e = Estimated {
            name: name.to_string(),
            traced_ms: traced_ns as f64 / 1e6,
            estimate_ms: 0.0,
            stops,
            cost_ms: cost_ns / 1e6,
            range_ms: None,
        };
        e.estimate_ms = e.at(1.0);
        e
    }

    /// The untraced estimate with every stop's calibrated cost × `k`: never
    /// below 0 and never above the traced figure (a negative scale is not a
    /// cost the tracer could have removed).
    pub fn at(&self, k: f64) -> f64 {
        untraced_at(self.traced_ms, self.cost_ms, k)
    }
}

fn untraced_at(traced_ms: f64, cost_ms: f64, k: f64) -> f64 {
    let traced = traced_ms.max(0.0);
    (traced - k.max(0.0) * cost_ms).clamp(0.0, traced)
}

/// One measured traced run's phases, estimated: the per-run values that CIs of
/// a difference between two builds are computed from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEstimate {
    pub traced_ms: f64,
    /// The untraced estimate at the experiment's scale (the traced time when
    /// the estimates are not reliable).
    pub estimate_ms: f64,
    pub stops: usize,
    /// Its stops' calibrated cost before ready (scale 1), ms.
    #[serde(default)]
    pub cost_ms: f64,
    pub phases: Vec<Estimated>,
}

impl RunEstimate {
    pub fn at(&self, k: f64) -> f64 {
        untraced_at(self.traced_ms, self.cost_ms, k)
    }

    /// Phase `name` of this run at scale `k` (None: the run has no such phase).
    pub fn phase_at(&self, name: &str, k: f64) -> Option<f64> {
        self.phases.iter().find(|p| p.name == name).map(|p| p.at(k))
    }

    fn set_scale(&mut self, k: f64) {
        self.estimate_ms = self.at(k);
        for p in &mut self.phases {
            p.estimate_ms = p.at(k);
        }
    }
}

/// Why an experiment's untraced estimates are not shown as such (typed; the
/// report words them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Noise {
    /// No untraced runs to scale the tracer's cost against.
    NoUntracedRuns,
    /// Too few runs for an interval on the tracer's cost (4 per arm give one).
    TooFewRuns,
    /// The traced runs are not measurably slower than the untraced ones: the
    /// tracer's cost is inside this experiment's noise (medians, ms).
    OverheadInsideNoise { traced_ms: f64, untraced_ms: f64 },
    /// The calibration rounds disagree by more than [`MAX_SPREAD_PCT`].
    WideCalibration { spread_pct: f64 },
    /// The estimated total's 95 % range is wider than ± [`MAX_MARGIN_PCT`] of it.
    WideMargin { margin_pct: f64 },
}

/// The widest calibration spread (± %) at which estimates are still shown.
/// The residual scale absorbs the calibration's level (its interval carries
/// the arms' noise); the calibration only weighs the kernel's round trip
/// against the tracer's own time per stop, so only a spread beyond the round
/// trip itself says the per-stop model is not measurable here.
pub const MAX_SPREAD_PCT: f64 = 100.0;
/// The widest range of the estimated total (± % of it) at which estimates are still shown.
pub const MAX_MARGIN_PCT: f64 = 50.0;

/// The untraced estimates of an explanation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub method: String,
    pub calibration: Calibration,
    /// The median of the traced runs' ready times less their stops' cost as
    /// calibrated, ms: the model's own estimate of the total.
    pub calibrated_total_ms: f64,
    /// The untraced arm's median, ms: the check.
    pub untraced_median_ms: Option<f64>,
    /// (calibrated total − untraced median) ÷ untraced median, %: the error of
    /// the calibrated model on this target.
    pub error_pct: Option<f64>,
    /// The residual scale: the factor on every stop's calibrated cost that
    /// makes the median estimated total the untraced median (never below 0;
    /// 1 without untraced runs).
    pub scale: f64,
    /// Its 95 % interval: the scales at which the estimated totals are not
    /// significantly different from the untraced runs (the Hodges–Lehmann
    /// shift's Moses interval, inverted). None with too few runs.
    #[serde(default)]
    pub scale_ci: Option<(f64, f64)>,
    /// Whether the estimates are shown as such. When false, every
    /// `estimate_ms` below is the traced figure and `noise` says why.
    #[serde(default)]
    pub reliable: bool,
    #[serde(default)]
    pub noise: Vec<Noise>,
    /// The median of the runs' estimated ready times, ms (traced when not reliable).
    pub total_ms: f64,
    /// Its 95 % range, ms.
    #[serde(default)]
    pub total_range_ms: Option<(f64, f64)>,
    /// Each phase of the run shown, over every measured traced run: the
    /// medians of its traced and estimated durations, and the estimate's range.
    pub phases: Vec<Estimated>,
    /// The run shown: its exec chain steps and open groups (by kind).
    pub exec_chain: Vec<Estimated>,
    pub opens_by_kind: Vec<Estimated>,
    /// Its stops before ready, their calibrated cost and their scaled cost, ms.
    pub stops: usize,
    pub stops_cost_ms: f64,
    #[serde(default)]
    pub scaled_cost_ms: f64,
    /// Every measured traced run (for A vs B).
    pub runs: Vec<RunEstimate>,
}

/// A traced run's timeline, with the ready phases when it became ready and
/// the phases of the `requests` sent after ready.
pub fn timeline_of(trace: &Trace, ready_ms: f64, requests: usize, hint: timeline::ServiceHint) -> Timeline {
    // The phases of the service process, as in the run shown.
    let mut tl = timeline::build_for(trace, hint);
    let ready_ns = (ready_ms * 1e6) as u64;
    timeline::add_ready_phases(&mut tl, trace, ready_ns);
    tl.phases
        .extend(super::requests::phases(trace, ready_ns, requests));
    tl
}

/// One traced run's estimate as calibrated (scale 1).
pub fn run_estimate(
    trace: &Trace,
    ready_ms: f64,
    requests: usize,
    cal: &Calibration,
    hint: timeline::ServiceHint,
) -> RunEstimate {
    let tl = timeline_of(trace, ready_ms, requests, hint);
    let costs = StopCosts::new(trace, cal);
    let ready_ns = (ready_ms * 1e6) as u64;
    let (stops, cost_ns) = costs.within(0, ready_ns);
    let mut r = RunEstimate {
        traced_ms: ready_ms,
        estimate_ms: 0.0,
        stops,
        cost_ms: cost_ns / 1e6,
        phases: tl
            .phases
            .iter()
            .map(|p| Estimated::new(&p.name, p.dur_ns, costs.within(p.start_ns, p.end_ns)))
            .collect(),
    };
    r.set_scale(1.0);
    r
}

fn median(xs: &[f64]) -> Option<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| coldstart_core::stats::quantile(&v, 0.5))
}

/// The residual scale from calibrated run estimates: the factor on the stops'
/// cost that makes the median estimated total the untraced median (found by
/// bisection: per-run costs differ, so medians do not simply subtract). A stop in a real program
/// costs more than in the calibration loop whenever the tracer has to wait for
/// a CPU or the tracee's caches are cold after the switch; that excess grows
/// with the stops, so it is spread over them. Never below 0 (traced runs
/// faster than untraced ones are noise, not a negative cost). The calibrated
/// model's own error stays on the report ([`Estimate::error_pct`]).
pub fn residual_scale(calibrated: &[RunEstimate], untraced_ms: &[f64]) -> f64 {
    let Some(target) = median(untraced_ms) else {
        return 1.0;
    };
    if calibrated.is_empty() {
        return 1.0;
    }
    // The median estimated total at scale k; it falls as k grows.
    let total = |k: f64| median(&calibrated.iter().map(|r| r.at(k)).collect::<Vec<_>>()).unwrap_or(0.0);
    if total(0.0) <= target {
        return 0.0;
    }
    let Some(hi) = bracket(|k| total(k) > target) else {
        // Stops that cost nothing cannot explain any difference.
        return 1.0;
    };
    bisect(|k| total(k) > target, 0.0, hi)
}

/// The first power of two at which `above` turns false (None: not below 2^20).
fn bracket(above: impl Fn(f64) -> bool) -> Option<f64> {
    let mut hi = 1.0;
    while above(hi) {
        hi *= 2.0;
        if hi > 1e6 {
            return None;
        }
    }
    Some(hi)
}

/// The boundary where `above` (true at `lo`, false at `hi`) turns false.
fn bisect(above: impl Fn(f64) -> bool, mut lo: f64, mut hi: f64) -> f64 {
    // 2⁻⁴⁰ of the bracket: far below any figure printed.
    for _ in 0..40 {
        let mid = (lo + hi) / 2.0;
        if above(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The residual scale's 95 % interval: every scale k at which the runs'
/// estimated totals (traced − k × cost) are not significantly different from
/// the untraced runs, i.e. the Moses interval of their Hodges–Lehmann shift
/// holds 0. Inverting the test carries both arms' noise into the scale, so a
/// noisy experiment gets a wide interval instead of a confident factor.
/// None with too few runs for an interval, or when no scale can close the gap
/// (stops that cost nothing).
pub fn scale_ci(calibrated: &[RunEstimate], untraced_ms: &[f64]) -> Option<(f64, f64)> {
    let ci = |k: f64| {
        let est: Vec<f64> = calibrated.iter().map(|r| r.at(k)).collect();
        coldstart_core::stats::hodges_lehmann(untraced_ms, &est, super::CONFIDENCE).and_then(|s| s.ci)
    };
    let (lo0, hi0) = ci(0.0)?;
    if hi0 < 0.0 {
        // Traced runs measurably faster than untraced: no cost to remove.
        return Some((0.0, 0.0));
    }
    // The lower end: the smallest k whose interval reaches down to 0.
    let k_lo = if lo0 <= 0.0 {
        0.0
    } else {
        let positive = |k: f64| ci(k).is_some_and(|(lo, _)| lo > 0.0);
        bisect(positive, 0.0, bracket(positive)?)
    };
    // The upper end: the largest k whose interval still reaches up to 0.
    let reaches = |k: f64| ci(k).is_some_and(|(_, hi)| hi >= 0.0);
    let k_hi = bisect(reaches, 0.0, bracket(reaches)?);
    Some((k_lo, k_hi.max(k_lo)))
}

/// The estimates of an explanation from its calibrated runs (scale 1, every
/// measured traced run), the run shown and the untraced runs.
pub fn estimate(
    shown: &Trace,
    tl: &Timeline,
    ready_ms: f64,
    mut runs: Vec<RunEstimate>,
    untraced_ms: &[f64],
    cal: &Calibration,
) -> Estimate {
    let untraced_median_ms = median(untraced_ms);
    let calibrated_total_ms = median(&runs.iter().map(|r| r.at(1.0)).collect::<Vec<_>>())
        .unwrap_or_else(|| StopCosts::new(shown, cal).estimate_ms(0, (ready_ms * 1e6) as u64));
    let scale = residual_scale(&runs, untraced_ms);
    let scale_ci = scale_ci(&runs, untraced_ms);
    let traced_median = median(&runs.iter().map(|r| r.traced_ms).collect::<Vec<_>>()).unwrap_or(ready_ms);
    let range_of = |values: &dyn Fn(f64) -> Vec<f64>| median_range(scale_ci, values);
    let total_range_ms = range_of(&|k| runs.iter().map(|r| r.at(k)).collect());
    let total_at_scale = median(&runs.iter().map(|r| r.at(scale)).collect::<Vec<_>>()).unwrap_or(0.0);
    let noise = noise(
        untraced_median_ms.map(|u| (traced_median, u)),
        scale_ci,
        cal,
        total_range_ms.map(|r| (r, total_at_scale)),
    );
    let reliable = noise.is_empty();
    // Not reliable: every figure stays traced (scale 0), with no range.
    let k = if reliable { scale } else { 0.0 };
    for r in &mut runs {
        r.set_scale(k);
    }
    let costs = StopCosts::new(shown, cal);
    let ready_ns = (ready_ms * 1e6) as u64;
    let with_range = |mut e: Estimated, range: Option<(f64, f64)>| {
        e.estimate_ms = e.at(k);
        e.range_ms = range.filter(|_| reliable);
        e
    };
    let span = |name: &str, a: u64, b: u64| {
        let e = Estimated::new(name, b.saturating_sub(a), costs.within(a, b));
        let range = scale_ci.map(|(k_lo, k_hi)| (e.at(k_hi), e.at(k_lo)));
        with_range(e, range)
    };
    let exec_chain = tl
        .exec_chain
        .iter()
        .map(|s| span(&s.path, s.start_ns, s.end_ns.unwrap_or(ready_ns.max(s.start_ns))))
        .collect();
    let opens_by_kind = tl
        .opens_by_kind
        .iter()
        .map(|g| span(&g.key, g.first_ns, g.last_ns))
        .collect();
    let mut phases: Vec<Estimated> = Vec::new();
    for p in &tl.phases {
        if phases.iter().any(|q| q.name == p.name) {
            continue;
        }
        let of = |k: f64| -> Vec<f64> { runs.iter().filter_map(|r| r.phase_at(&p.name, k)).collect() };
        let e = match (median(&of(0.0)), runs.is_empty()) {
            // Over every run that has the phase: medians of traced and estimated.
            (Some(traced_ms), false) => {
                let has: Vec<&Estimated> = runs
                    .iter()
                    .filter_map(|r| r.phases.iter().find(|q| q.name == p.name))
                    .collect();
                Estimated {
                    name: p.name.clone(),
                    traced_ms,
                    estimate_ms: median(&of(k)).unwrap_or(traced_ms).min(traced_ms),
                    stops: median(&has.iter().map(|q| q.stops as f64).collect::<Vec<_>>()).unwrap_or(0.0)
                        as usize,
                    cost_ms: median(&has.iter().map(|q| q.cost_ms).collect::<Vec<_>>()).unwrap_or(0.0),
                    range_ms: range_of(&of).filter(|_| reliable),
                }
            }
            _ => span(&p.name, p.start_ns, p.end_ns),
        };
        phases.push(e);
    }
    let (stops, cost_ns) = costs.within(0, ready_ns);
    let method = if reliable {
        "per-stop subtraction, residual-scaled".to_string()
    } else {
        "none: traced figures (too noisy to estimate untraced times)".to_string()
    };
    Estimate {
        method,
        calibration: cal.clone(),
        calibrated_total_ms,
        untraced_median_ms,
        error_pct: untraced_median_ms
            .filter(|u| *u > 0.0)
            .map(|u| (calibrated_total_ms - u) / u * 100.0),
        scale,
        scale_ci,
        reliable,
        noise,
        total_ms: if reliable { total_at_scale } else { traced_median },
        total_range_ms: total_range_ms.filter(|_| reliable),
        phases,
        exec_chain,
        opens_by_kind,
        stops,
        stops_cost_ms: cost_ns / 1e6,
        scaled_cost_ms: k * cost_ns / 1e6,
        runs,
    }
}

/// The range of a median over the runs (`values` at a scale), from the runs at
/// both ends of the scale's interval.
fn median_range(scale_ci: Option<(f64, f64)>, values: &dyn Fn(f64) -> Vec<f64>) -> Option<(f64, f64)> {
    let (k_lo, k_hi) = scale_ci?;
    // Too few runs for the median's own interval: the scale's alone.
    let ci = |k: f64| {
        let mut v = values(k);
        v.sort_by(f64::total_cmp);
        coldstart_core::stats::median_ci(&v, super::CONFIDENCE).or_else(|| {
            let m = median(&v)?;
            Some((m, m))
        })
    };
    Some((ci(k_hi)?.0, ci(k_lo)?.1))
}

/// Why the estimates are too noisy to show, if they are. `medians`: (traced,
/// untraced), when there are untraced runs; `total`: the estimated total's
/// range and its value at the fitted scale.
fn noise(
    medians: Option<(f64, f64)>,
    scale_ci: Option<(f64, f64)>,
    cal: &Calibration,
    total: Option<((f64, f64), f64)>,
) -> Vec<Noise> {
    let mut noise = Vec::new();
    match (medians, scale_ci) {
        (None, _) => noise.push(Noise::NoUntracedRuns),
        (Some(_), None) => noise.push(Noise::TooFewRuns),
        (Some((traced_ms, untraced_ms)), Some((k_lo, _))) if k_lo <= 0.0 => {
            noise.push(Noise::OverheadInsideNoise {
                traced_ms,
                untraced_ms,
            })
        }
        _ => {}
    }
    if cal.spread_pct > MAX_SPREAD_PCT {
        noise.push(Noise::WideCalibration {
            spread_pct: cal.spread_pct,
        });
    }
    if let Some(((lo, hi), total_at_scale)) = total.filter(|_| noise.is_empty()) {
        let margin_pct = (hi - lo) / 2.0 / total_at_scale.max(f64::MIN_POSITIVE) * 100.0;
        if margin_pct > MAX_MARGIN_PCT {
            noise.push(Noise::WideMargin { margin_pct });
        }
    }
    noise
}

/// The calibrated estimates (scale 1) of every measured traced run of an
/// explain experiment (its traces still attached), in run order.
pub fn run_estimates(
    result: &ExperimentResult,
    traced: usize,
    requests: usize,
    cal: &Calibration,
) -> Vec<RunEstimate> {
    let readiness = result.variants.get(traced).map_or("", |v| v.readiness.as_str());
    result
        .samples
        .iter()
        .filter(|s| s.variant == traced && !s.warmup && s.ok())
        .filter_map(|s| {
            Some(run_estimate(
                s.trace.as_deref()?,
                s.ready_ns? as f64 / 1e6,
                requests,
                cal,
                timeline::ServiceHint::parse(readiness),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal(rt_us: f64) -> Calibration {
        Calibration {
            round_trip_us: rt_us,
            held_us: 0.0,
            stops: 0,
            rounds: 0,
            spread_pct: 0.0,
        }
    }

    #[test]
    fn fit_recovers_a_known_round_trip() {
        // 2,000 stops of 10 µs round trip + 5 µs held on a 4 ms program.
        let untraced = [4.0e6, 4.1e6, 3.9e6];
        let traced = [
            (4.0e6 + 2000.0 * 15e3, 2000.0 * 5e3, 2000),
            (4.1e6 + 2000.0 * 15e3, 2000.0 * 5e3, 2000),
            (3.9e6 + 2000.0 * 15e3, 2000.0 * 5e3, 2000),
        ];
        let c = fit(&untraced, &traced);
        assert!((c.round_trip_us - 10.0).abs() < 0.01, "{c:?}");
        assert!((c.held_us - 5.0).abs() < 0.01, "{c:?}");
        assert!(c.spread_pct < 10.0, "{c:?}");
    }

    #[test]
    fn the_residual_scale_makes_the_median_estimate_the_untraced_median() {
        let run = |traced_ms: f64, cost_ms: f64| RunEstimate {
            traced_ms,
            estimate_ms: traced_ms - cost_ms,
            stops: 100,
            cost_ms,
            phases: Vec::new(),
        };
        // Traced 30 ms, calibrated stops 5 ms, untraced 20 ms: the stops cost ×2.
        let runs = [run(29.0, 5.0), run(30.0, 5.0), run(31.0, 5.0)];
        assert!((residual_scale(&runs, &[19.0, 20.0, 21.0]) - 2.0).abs() < 1e-6);
        // A calibration that overestimates (cost above the traced time: the
        // estimate floors at 0): the scale still uses the whole cost.
        let over = |traced_ms: f64, cost_ms: f64| RunEstimate {
            estimate_ms: 0.0,
            ..run(traced_ms, cost_ms)
        };
        let runs = [over(5.0, 10.0), over(5.0, 10.0), over(5.0, 10.0)];
        assert!((residual_scale(&runs, &[2.0]) - 0.3).abs() < 1e-6);
        // Per-run costs that differ: the median of the scaled totals is the target.
        let mixed = [run(30.0, 2.0), run(40.0, 10.0), run(50.0, 4.0)];
        let k = residual_scale(&mixed, &[30.0]);
        let mut totals: Vec<f64> = mixed
            .iter()
            .map(|r| r.traced_ms - k * (r.traced_ms - r.estimate_ms))
            .collect();
        totals.sort_by(f64::total_cmp);
        assert!((totals[1] - 30.0).abs() < 1e-6, "{k} {totals:?}");
        // Traced faster than untraced (noise): no negative cost.
        assert_eq!(residual_scale(&runs, &[40.0]), 0.0);
        assert_eq!(residual_scale(&runs, &[]), 1.0);
    }

    #[test]
    fn stops_inside_an_interval_are_subtracted_and_never_below_zero() {
        let stop = |ms: u64, held_us: u32| Stop {
            ts_ns: 1_000_000_000 + ms * 1_000_000,
            pid: 1,
            held_ns: held_us * 1000,
        };
        let trace = Trace {
            t0_ns: 1_000_000_000,
            end_ns: 1_010_000_000,
            root_pid: 1,
            events: Vec::new(),
            killed: false,
            outcome: coldstart_core::trace::Outcome::Reached,
            warnings: Vec::new(),
            root_usage: None,
            task_names: Default::default(),
            // Unsorted on purpose: estimates sort.
            stops: vec![stop(5, 100), stop(1, 100), stop(2, 100)],
            cpu: Vec::new(),
        };
        let c = StopCosts::new(&trace, &cal(400.0));
        // [0, 3 ms): two stops of 0.5 ms.
        assert_eq!(c.within(0, 3_000_000).0, 2);
        assert!((c.estimate_ms(0, 3_000_000) - 2.0).abs() < 1e-9);
        // [3, 10): one stop.
        assert!((c.estimate_ms(3_000_000, 10_000_000) - 6.5).abs() < 1e-9);
        // An interval shorter than its stops' cost is zero, not negative.
        assert_eq!(c.estimate_ms(1_000_000, 1_200_000), 0.0);
    }

    fn runs(traced_and_cost: &[(f64, f64)]) -> Vec<RunEstimate> {
        traced_and_cost
            .iter()
            .map(|&(traced_ms, cost_ms)| RunEstimate {
                traced_ms,
                estimate_ms: traced_ms - cost_ms,
                stops: 100,
                cost_ms,
                phases: vec![Estimated {
                    name: "init".into(),
                    traced_ms,
                    estimate_ms: traced_ms - cost_ms,
                    stops: 100,
                    cost_ms,
                    range_ms: None,
                }],
            })
            .collect()
    }

    fn empty_trace() -> Trace {
        Trace {
            t0_ns: 1_000_000_000,
            end_ns: 1_030_000_000,
            root_pid: 1,
            events: Vec::new(),
            killed: false,
            outcome: coldstart_core::trace::Outcome::Reached,
            warnings: Vec::new(),
            root_usage: None,
            task_names: Default::default(),
            stops: Vec::new(),
            cpu: Vec::new(),
        }
    }

    fn estimated(traced: &[(f64, f64)], untraced: &[f64], spread_pct: f64) -> Estimate {
        let trace = empty_trace();
        let mut tl = crate::timeline::build_for(&trace, crate::timeline::ServiceHint::parse("exit"));
        tl.phases = vec![crate::timeline::Phase::new("init", 0, 30_000_000)];
        let c = Calibration {
            spread_pct,
            ..cal(10.0)
        };
        estimate(&trace, &tl, 30.0, runs(traced), untraced, &c)
    }

    /// Traced 30 ± 1 ms with 10 ms of calibrated stops, untraced 20 ± 1 ms:
    /// the scale is 1 with an interval around it, the estimates are shown with
    /// ranges that hold the truth (20 ms), and no estimate is above its traced figure.
    #[test]
    fn a_clear_overhead_gives_reliable_estimates_with_ranges() {
        let traced: Vec<(f64, f64)> = (0..20).map(|i| (29.0 + f64::from(i % 5) * 0.5, 10.0)).collect();
        let untraced: Vec<f64> = (0..20).map(|i| 19.0 + f64::from(i % 5) * 0.5).collect();
        let e = estimated(&traced, &untraced, 5.0);
        assert!(e.reliable, "{:?}", e.noise);
        let (lo, hi) = e.scale_ci.expect("an interval");
        assert!(lo < 1.0 && 1.0 < hi && lo > 0.5 && hi < 1.5, "{lo} {hi}");
        let (tlo, thi) = e.total_range_ms.expect("a range");
        assert!(tlo <= 20.0 && 20.0 <= thi, "{tlo} {thi}");
        let init = &e.phases[0];
        let (plo, phi) = init.range_ms.expect("a phase range");
        assert!(
            plo <= 20.0 && 20.0 <= phi && init.estimate_ms <= init.traced_ms,
            "{init:?}"
        );
    }

    /// The untraced runs as slow as the traced ones (noise, issue 25's
    /// `init 106.8 ms ≈ 170.3 ms untraced`): not reliable, every figure traced,
    /// never an estimate above its traced figure.
    #[test]
    fn an_overhead_inside_the_noise_shows_traced_figures_only() {
        let traced: Vec<(f64, f64)> = (0..15).map(|i| (100.0 + f64::from(i) * 5.0, 3.0)).collect();
        let untraced: Vec<f64> = (0..15).map(|i| 105.0 + f64::from(i) * 6.0).collect();
        let e = estimated(&traced, &untraced, 5.0);
        assert!(!e.reliable);
        assert!(
            e.noise
                .iter()
                .any(|n| matches!(n, Noise::OverheadInsideNoise { .. })),
            "{:?}",
            e.noise
        );
        assert!(e.total_range_ms.is_none() && e.phases[0].range_ms.is_none());
        for r in &e.runs {
            assert_eq!(r.estimate_ms, r.traced_ms);
            assert!(r.phases.iter().all(|p| p.estimate_ms == p.traced_ms));
        }
        assert_eq!(e.phases[0].estimate_ms, e.phases[0].traced_ms);
    }

    /// A calibration whose rounds disagree wildly (`±538 %`) is not trusted.
    #[test]
    fn a_wide_calibration_spread_is_not_reliable() {
        let traced: Vec<(f64, f64)> = (0..20).map(|i| (29.0 + f64::from(i % 5) * 0.5, 10.0)).collect();
        let untraced: Vec<f64> = (0..20).map(|i| 19.0 + f64::from(i % 5) * 0.5).collect();
        let e = estimated(&traced, &untraced, 538.0);
        assert!(!e.reliable);
        assert!(
            e.noise.contains(&Noise::WideCalibration { spread_pct: 538.0 }),
            "{:?}",
            e.noise
        );
    }
}
