//! True times: every traced figure beside an estimate of what it would have
//! been untraced.
//!
//! # Method (per-stop subtraction)
//!
//! A traced run is slower than an untraced one almost only because of the
//! tracer's stops: each one holds a task for the kernel's round trip (the stop,
//! waking the tracer, the resume, the task scheduled again) plus the tracer's
//! own work on it (decoding, reading memory and procfs), which the tracer times
//! per stop ([`crate::trace::Stop::held_ns`]). So a stop costs
//! `round_trip + held`, and a traced interval's untraced estimate is its traced
//! duration minus the cost of the stops inside it (the whole tree's: a waiting
//! parent is delayed by its children's stops too), never below zero.
//!
//! The round trip is calibrated on this machine when explain starts
//! ([`calibrate`]): coldstart's own binary, started as a calibration target that
//! makes [`CALIBRATION_OPENS`] failing opens (two stops each), runs
//! [`CALIBRATION_ROUNDS`] times untraced and traced, interleaved; the round trip
//! is `(median(traced − held) − median(untraced)) / stops`. The experiment's
//! untraced arm is the check, not an input: the report prints the estimated
//! total beside the untraced median and the error between them, so a wrong
//! calibration shows instead of being scaled away.

use crate::experiment::ExperimentResult;
use crate::run::{run_once, run_traced, RunId, RunOptions};
use crate::target::{Readiness, Target};
use crate::timeline::{self, Timeline};
use crate::trace::{Stop, Trace};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The variable that turns coldstart's binary into the calibration target:
/// the number of failing opens to make before exiting.
pub const CALIBRATE_ENV: &str = "COLDSTART_CALIBRATE_OPENS";
pub const CALIBRATION_OPENS: usize = 1000;
pub const CALIBRATION_ROUNDS: usize = 5;

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
    /// Half the spread (max − min) of the per-round round trips, as a
    /// percentage of the estimate: how stable the calibration was.
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
    };
    let opts = RunOptions {
        log_marks: Vec::new(),
        claims: Vec::new(),
        requests: 0,
        request_url: None,
        ..opts.clone()
    };
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
        crate::stats::quantile(xs, 0.5)
    };
    let u = med(&mut untraced.to_vec());
    let stops = med(&mut traced.iter().map(|t| t.2 as f64).collect()).max(1.0);
    let rest = med(&mut traced.iter().map(|t| t.0 - t.1).collect());
    let held = med(&mut traced.iter().map(|t| t.1).collect());
    let round_trip = ((rest - u) / stops).max(0.0);
    // Each round against the untraced median: the spread of those.
    let per: Vec<f64> = traced
        .iter()
        .map(|t| ((t.0 - t.1 - u) / (t.2.max(1) as f64)).max(0.0))
        .collect();
    let (lo, hi) = per.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
        (a.min(x), b.max(x))
    });
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
    /// `scale` multiplies every stop's cost (the residual scale; 1 = as calibrated).
    pub fn new(trace: &Trace, cal: &Calibration, scale: f64) -> StopCosts {
        let mut stops: Vec<&Stop> = trace.stops.iter().collect();
        stops.sort_by_key(|s| s.ts_ns);
        let mut cum = Vec::with_capacity(stops.len() + 1);
        cum.push(0.0);
        let mut acc = 0.0;
        for s in &stops {
            acc += scale * (cal.round_trip_us * 1e3 + f64::from(s.held_ns));
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
    pub estimate_ms: f64,
    pub stops: usize,
}

/// One measured traced run's phases, estimated: the per-run values that CIs of
/// a difference between two builds are computed from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEstimate {
    pub traced_ms: f64,
    pub estimate_ms: f64,
    pub stops: usize,
    /// Its stops' cost at this scale, ms, before the floor at 0 that
    /// `estimate_ms` has (the residual scale needs the whole cost).
    #[serde(default)]
    pub cost_ms: f64,
    pub phases: Vec<Estimated>,
}

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
    /// The phases, steps and groups below use the scaled costs.
    pub scale: f64,
    /// The median of the runs' estimated ready times with the scaled costs, ms.
    pub total_ms: f64,
    /// The run shown: its phases, exec chain steps and open groups (by kind).
    pub phases: Vec<Estimated>,
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

fn phases(tl: &Timeline, costs: &StopCosts) -> Vec<Estimated> {
    tl.phases
        .iter()
        .map(|p| Estimated {
            name: p.name.clone(),
            traced_ms: p.dur_ns as f64 / 1e6,
            estimate_ms: costs.estimate_ms(p.start_ns, p.end_ns),
            stops: costs.within(p.start_ns, p.end_ns).0,
        })
        .collect()
}

/// One run's estimate.
pub fn run_estimate(
    trace: &Trace,
    ready_ms: f64,
    requests: usize,
    cal: &Calibration,
    scale: f64,
    hint: timeline::ServiceHint,
) -> RunEstimate {
    let tl = timeline_of(trace, ready_ms, requests, hint);
    let costs = StopCosts::new(trace, cal, scale);
    let ready_ns = (ready_ms * 1e6) as u64;
    let (stops, cost_ns) = costs.within(0, ready_ns);
    RunEstimate {
        traced_ms: ready_ms,
        estimate_ms: costs.estimate_ms(0, ready_ns),
        stops,
        cost_ms: cost_ns / 1e6,
        phases: phases(&tl, &costs),
    }
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
    let med = |mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        crate::stats::quantile(&xs, 0.5)
    };
    if calibrated.is_empty() || untraced_ms.is_empty() {
        return 1.0;
    }
    let target = med(untraced_ms.to_vec());
    // The median estimated total at scale k; it falls as k grows (each run's
    // total is traced − k × its stops' cost, floored at 0).
    let total = |k: f64| {
        med(calibrated
            .iter()
            .map(|r| (r.traced_ms - k * r.cost_ms).max(0.0))
            .collect())
    };
    if total(0.0) <= target {
        return 0.0;
    }
    let mut hi = 1.0;
    while total(hi) > target {
        hi *= 2.0;
        if hi > 1e6 {
            // Stops that cost nothing cannot explain any difference.
            return 1.0;
        }
    }
    let mut lo = 0.0;
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if total(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The traced runs' estimates, as calibrated and scaled.
pub struct Runs {
    pub calibrated: Vec<RunEstimate>,
    pub scaled: Vec<RunEstimate>,
    pub scale: f64,
}

pub fn estimate(
    shown: &Trace,
    tl: &Timeline,
    ready_ms: f64,
    runs: Runs,
    untraced_median_ms: Option<f64>,
    cal: &Calibration,
) -> Estimate {
    let Runs {
        calibrated,
        scaled,
        scale,
    } = runs;
    let costs = StopCosts::new(shown, cal, scale);
    let ready_ns = (ready_ms * 1e6) as u64;
    let span = |name: &str, a: u64, b: u64| Estimated {
        name: name.to_string(),
        traced_ms: b.saturating_sub(a) as f64 / 1e6,
        estimate_ms: costs.estimate_ms(a, b),
        stops: costs.within(a, b).0,
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
    let median_of = |runs: &[RunEstimate]| {
        let mut xs: Vec<f64> = runs.iter().map(|r| r.estimate_ms).collect();
        xs.sort_by(f64::total_cmp);
        (!xs.is_empty()).then(|| crate::stats::quantile(&xs, 0.5))
    };
    let calibrated_total_ms =
        median_of(&calibrated).unwrap_or_else(|| StopCosts::new(shown, cal, 1.0).estimate_ms(0, ready_ns));
    let total_ms = median_of(&scaled).unwrap_or_else(|| costs.estimate_ms(0, ready_ns));
    let (stops, cost) = costs.within(0, ready_ns);
    let mut e = Estimate {
        method: "per-stop subtraction, residual-scaled".into(),
        calibration: cal.clone(),
        calibrated_total_ms,
        untraced_median_ms,
        error_pct: untraced_median_ms
            .filter(|u| *u > 0.0)
            .map(|u| (calibrated_total_ms - u) / u * 100.0),
        scale,
        total_ms,
        phases: phases(tl, &costs),
        exec_chain,
        opens_by_kind,
        stops,
        stops_cost_ms: StopCosts::new(shown, cal, 1.0).within(0, ready_ns).1 / 1e6,
        scaled_cost_ms: cost / 1e6,
        runs: scaled,
    };
    // Traced runs no slower than untraced ones (scale 0): the tracer's cost is
    // below this experiment's noise, and subtracting nothing would leave the
    // traced figures short of (or over) the untraced ones by that noise. The
    // untraced median is then the best figure for the total, and each interval
    // is scaled by untraced ÷ traced (the second method).
    if let Some(u) = untraced_median_ms.filter(|u| scale == 0.0 && *u > 0.0 && e.total_ms > 0.0) {
        let k = u / e.total_ms;
        stretch(&mut e, k);
    }
    e
}

/// Every estimate × `k` (the proportional method; see [`estimate`]).
fn stretch(e: &mut Estimate, k: f64) {
    e.method = format!(
        "proportional: traced × {k:.3} (untraced ÷ traced medians; the stops' cost is below the noise)"
    );
    e.total_ms *= k;
    for x in e
        .phases
        .iter_mut()
        .chain(&mut e.exec_chain)
        .chain(&mut e.opens_by_kind)
    {
        x.estimate_ms = x.traced_ms * k;
    }
    for r in &mut e.runs {
        r.estimate_ms = r.traced_ms * k;
        for p in &mut r.phases {
            p.estimate_ms = p.traced_ms * k;
        }
    }
}

/// The estimates of every measured traced run of an explain experiment (its
/// traces still attached), in run order.
pub fn run_estimates(
    result: &ExperimentResult,
    traced: usize,
    requests: usize,
    cal: &Calibration,
    scale: f64,
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
                scale,
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
            outcome: crate::trace::Outcome::Reached,
            warnings: Vec::new(),
            root_usage: None,
            task_names: Default::default(),
            // Unsorted on purpose: estimates sort.
            stops: vec![stop(5, 100), stop(1, 100), stop(2, 100)],
            cpu: Vec::new(),
        };
        let c = StopCosts::new(&trace, &cal(400.0), 1.0);
        // [0, 3 ms): two stops of 0.5 ms.
        assert_eq!(c.within(0, 3_000_000).0, 2);
        assert!((c.estimate_ms(0, 3_000_000) - 2.0).abs() < 1e-9);
        // [3, 10): one stop.
        assert!((c.estimate_ms(3_000_000, 10_000_000) - 6.5).abs() < 1e-9);
        // An interval shorter than its stops' cost is zero, not negative.
        assert_eq!(c.estimate_ms(1_000_000, 1_200_000), 0.0);
    }
}
