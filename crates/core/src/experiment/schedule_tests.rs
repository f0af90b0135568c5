//! The scheduler alone, with a mock runner (as hyperfine's `MockExecutor`): plans
//! are built here directly, so these tests say what the schedule is whatever the
//! command line (src/cmd/bench_tests.rs checks that the flags make these plans).

use super::*;
use crate::experiment::{CiOf, Order, Plan, StopRule, Variant};
use crate::sample::Outcome;
use crate::target::Target;
use std::collections::BTreeSet;

/// What the mock answers for a run.
#[derive(Debug, Clone, Copy)]
enum Reply {
    Ready(f64),
    /// The target did not become ready (a failed run, not an error).
    Timeout,
    Interrupted,
    /// The runner itself fails (bad setup): the experiment aborts.
    Error,
}

/// A runner that records every run asked of it and answers from `script(variant,
/// n)`, n counting that variant's runs from 1 (warmups included).
struct Mock<F: FnMut(usize, usize) -> Reply> {
    script: F,
    ids: Vec<RunId>,
    count: Vec<usize>,
}

impl<F: FnMut(usize, usize) -> Reply> Mock<F> {
    fn new(script: F) -> Self {
        Mock {
            script,
            ids: Vec::new(),
            count: Vec::new(),
        }
    }

    /// The (variant, round) of each measured run, in the order they ran.
    fn measured(&self) -> Vec<(usize, usize)> {
        self.ids
            .iter()
            .filter(|id| !id.warmup)
            .map(|id| (id.variant, id.round))
            .collect()
    }

    /// The variant order of each measured round.
    fn rounds(&self) -> Vec<Vec<usize>> {
        let mut out: Vec<Vec<usize>> = Vec::new();
        for id in self.ids.iter().filter(|id| !id.warmup) {
            if out.len() <= id.round {
                out.resize(id.round + 1, Vec::new());
            }
            out[id.round].push(id.variant);
        }
        out
    }
}

impl<F: FnMut(usize, usize) -> Reply> Runner for Mock<F> {
    fn run(&mut self, variant: usize, id: RunId) -> Result<Sample> {
        assert_eq!(variant, id.variant, "the runner is told the variant twice, alike");
        self.ids.push(id);
        if self.count.len() <= variant {
            self.count.resize(variant + 1, 0);
        }
        self.count[variant] += 1;
        let mut s = Sample::begin(&id, 0);
        match (self.script)(variant, self.count[variant]) {
            Reply::Ready(ms) => {
                s.outcome = Outcome::Ready;
                s.ready_ns = Some((ms * 1e6) as u64);
            }
            Reply::Timeout => s.outcome = Outcome::Timeout,
            Reply::Interrupted => s.outcome = Outcome::Interrupted,
            Reply::Error => anyhow::bail!("setup broke"),
        }
        Ok(s)
    }
}

#[derive(Default)]
struct Seen {
    planned: Vec<usize>,
    finished: Vec<(String, usize, usize, bool)>,
}

impl Observer for Seen {
    fn planned(&mut self, total_runs: usize) {
        self.planned.push(total_runs);
    }
    fn finished(&mut self, variant: &Variant, sample: &Sample) {
        self.finished
            .push((variant.name.clone(), sample.variant, sample.round, sample.warmup));
    }
}

/// `n` variants named a, b, c, …; a fixed number of runs, no failures tolerated.
fn plan(n: usize, runs: usize, warmup: usize, order: Order, seed: u64) -> Plan {
    Plan {
        variants: (0..n)
            .map(|i| Variant {
                name: ((b'a' + i as u8) as char).to_string(),
                // Never spawned: the mock runs nothing.
                target: Target {
                    argv: vec!["true".into()],
                    program: "/bin/true".into(),
                    env: Vec::new(),
                    cwd: None,
                    limits: Default::default(),
                    container: None,
                },
                readiness: "exit".into(),
                params: Vec::new(),
            })
            .collect(),
        warmup,
        order,
        stop: StopRule::Fixed { runs },
        keep_going: false,
        seed,
    }
}

fn adaptive(min_runs: usize, max_runs: usize, target: f64, relative: bool, of: CiOf) -> StopRule {
    StopRule::Adaptive {
        min_runs,
        max_runs,
        target,
        relative,
        of,
    }
}

fn execute<F: FnMut(usize, usize) -> Reply>(plan: &Plan, mock: &mut Mock<F>) -> (ExperimentResult, Seen) {
    let mut seen = Seen::default();
    let result = execute_with(plan, &mut seen, mock).expect("execute");
    (result, seen)
}

fn steady(_: usize, _: usize) -> Reply {
    Reply::Ready(10.0)
}

#[test]
fn warmup_rounds_come_first_then_rounds_with_every_variant_once() {
    let p = plan(3, 4, 2, Order::Shuffled, 7);
    let mut mock = Mock::new(steady);
    let (result, seen) = execute(&p, &mut mock);
    let ids = &mock.ids;
    assert_eq!(ids.len(), 3 * (2 + 4));
    assert!(ids[..6].iter().all(|id| id.warmup), "{ids:?}");
    assert!(ids[6..].iter().all(|id| !id.warmup), "{ids:?}");
    for (w, chunk) in ids[..6].chunks(3).enumerate() {
        let vs: BTreeSet<usize> = chunk.iter().map(|id| id.variant).collect();
        assert_eq!(vs.len(), 3, "warmup round {w} runs each variant once: {chunk:?}");
        assert!(chunk.iter().all(|id| id.round == w), "{chunk:?}");
    }
    let rounds = mock.rounds();
    assert_eq!(rounds.len(), 4);
    for (r, order) in rounds.iter().enumerate() {
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2], "round {r} runs each variant once: {order:?}");
    }
    // Rounds run one after another, never overlapping.
    let measured: Vec<usize> = mock.measured().iter().map(|&(_, r)| r).collect();
    assert!(measured.windows(2).all(|w| w[0] <= w[1]), "{measured:?}");
    // Every sample is kept, warmups flagged; only measured ones count.
    assert_eq!(result.samples.len(), ids.len());
    assert_eq!(result.samples.iter().filter(|s| s.warmup).count(), 6);
    assert!((0..3).all(|v| result.ready_ms(v).len() == 4));
    assert_eq!(result.stopped, Some(StopReason::Completed));
    assert_eq!(result.design, coldstart_stats::Design::Interleaved);
    assert_eq!(seen.planned, [3 * (2 + 4)]);
    // The observer hears of every run, with the variant it belongs to.
    assert_eq!(seen.finished.len(), ids.len());
    for (name, v, _, _) in &seen.finished {
        assert_eq!(*name, p.variants[*v].name);
    }
}

#[test]
fn shuffled_rounds_vary_and_the_seed_reproduces_them() {
    let order_of = |seed| {
        let mut mock = Mock::new(steady);
        execute(&plan(3, 30, 0, Order::Shuffled, seed), &mut mock);
        mock.rounds()
    };
    let (a, again, other) = (order_of(1), order_of(1), order_of(2));
    assert_eq!(a, again, "one seed, one order");
    assert_ne!(a, other, "another seed, another order");
    let distinct: BTreeSet<&Vec<usize>> = a.iter().collect();
    assert!(
        distinct.len() >= 4,
        "30 rounds of 3 variants use most of the 6 orders: {distinct:?}"
    );
    let firsts: BTreeSet<usize> = a.iter().map(|r| r[0]).collect();
    assert_eq!(firsts.len(), 3, "every variant leads some round: {a:?}");
}

#[test]
fn warmup_rounds_are_shuffled_too() {
    let mut mock = Mock::new(steady);
    execute(&plan(3, 1, 30, Order::Shuffled, 5), &mut mock);
    let warm: Vec<Vec<usize>> = mock
        .ids
        .iter()
        .filter(|id| id.warmup)
        .map(|id| id.variant)
        .collect::<Vec<_>>()
        .chunks(3)
        .map(<[usize]>::to_vec)
        .collect();
    let distinct: BTreeSet<&Vec<usize>> = warm.iter().collect();
    assert!(distinct.len() >= 4, "{distinct:?}");
}

#[test]
fn sequential_order_runs_each_variant_to_the_end() {
    let p = plan(3, 3, 1, Order::Sequential, 9);
    let mut mock = Mock::new(steady);
    let (result, seen) = execute(&p, &mut mock);
    assert_eq!(
        mock.measured(),
        [
            (0, 0),
            (0, 1),
            (0, 2),
            (1, 0),
            (1, 1),
            (1, 2),
            (2, 0),
            (2, 1),
            (2, 2)
        ]
    );
    let warm: Vec<usize> = mock
        .ids
        .iter()
        .filter(|id| id.warmup)
        .map(|id| id.variant)
        .collect();
    assert_eq!(warm, [0, 1, 2], "warmups first, in variant order");
    assert!(mock.ids[..3].iter().all(|id| id.warmup));
    assert_eq!(result.stopped, Some(StopReason::Completed));
    assert_eq!(result.design, coldstart_stats::Design::Sequential);
    assert_eq!(seen.planned, [3 * (1 + 3)]);
}

#[test]
fn a_failed_run_stops_the_experiment_unless_keep_going() {
    // The second run of variant b times out.
    let script = |v, n| {
        if v == 1 && n == 2 {
            Reply::Timeout
        } else {
            Reply::Ready(10.0)
        }
    };
    let p = plan(2, 5, 0, Order::Sequential, 1);
    let mut mock = Mock::new(script);
    let (result, _) = execute(&p, &mut mock);
    assert_eq!(result.stopped, Some(StopReason::Failure));
    assert_eq!(
        mock.measured(),
        [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 0), (1, 1)],
        "nothing runs after the failure"
    );
    let last = result.samples.last().expect("samples");
    assert_eq!(
        (last.variant, last.outcome.clone()),
        (1, Outcome::Timeout),
        "the failed run is kept"
    );

    let p = Plan {
        keep_going: true,
        ..plan(2, 5, 0, Order::Sequential, 1)
    };
    let mut mock = Mock::new(script);
    let (result, _) = execute(&p, &mut mock);
    assert_eq!(result.stopped, Some(StopReason::Completed));
    assert_eq!(mock.ids.len(), 10, "--keep-going: every planned run");
    assert_eq!(result.ready_ms(1).len(), 4, "the failed run is not a measurement");
    assert_eq!(result.samples.iter().filter(|s| !s.ok()).count(), 1);
}

#[test]
fn a_failed_warmup_stops_too() {
    let p = plan(2, 5, 1, Order::Shuffled, 4);
    let mut mock = Mock::new(|v, _| if v == 0 { Reply::Timeout } else { Reply::Ready(1.0) });
    let (result, _) = execute(&p, &mut mock);
    assert_eq!(result.stopped, Some(StopReason::Failure));
    assert!(
        mock.ids.iter().all(|id| id.warmup),
        "no measured run: {:?}",
        mock.ids
    );
    assert!(mock.ids.len() <= 2);
}

#[test]
fn an_interrupt_stops_at_once_even_with_keep_going() {
    for keep_going in [false, true] {
        let p = Plan {
            keep_going,
            ..plan(3, 5, 1, Order::Shuffled, 3)
        };
        let mut runs = 0;
        let mut mock = Mock::new(|_, _| {
            runs += 1;
            if runs == 7 {
                Reply::Interrupted
            } else {
                Reply::Ready(5.0)
            }
        });
        let (result, seen) = execute(&p, &mut mock);
        assert_eq!(
            mock.ids.len(),
            7,
            "no run after the interrupt (keep_going {keep_going})"
        );
        assert_eq!(result.samples.len(), 7, "the interrupted run is kept");
        assert_eq!(seen.finished.len(), 7, "and the observer heard of it");
        assert_eq!(result.stopped, Some(StopReason::Interrupted));
    }
}

#[test]
fn a_runner_error_aborts_the_experiment() {
    let p = plan(3, 5, 1, Order::Shuffled, 2);
    let mut mock = Mock::new(|_, _| Reply::Error);
    let err = execute_with(&p, &mut Seen::default(), &mut mock).expect_err("an error");
    assert_eq!(mock.ids.len(), 1);
    assert!(format!("{err:#}").contains("setup broke"));
}

#[test]
fn adaptive_stop_on_the_median_respects_min_and_max_runs() {
    let p = Plan {
        stop: adaptive(8, 30, 0.01, true, CiOf::Median),
        ..plan(3, 0, 0, Order::Shuffled, 6)
    };
    // Identical times: the median's CI has zero width as soon as it exists, yet no
    // variant stops before the minimum.
    let mut mock = Mock::new(steady);
    let (result, seen) = execute(&p, &mut mock);
    assert_eq!(result.stopped, Some(StopReason::TargetCi));
    assert!(
        (0..3).all(|v| result.ready_ms(v).len() == 8),
        "{:?}",
        mock.rounds()
    );
    assert_eq!(seen.planned, [3 * 30], "progress is planned for the maximum");
    // Times spread over two orders of magnitude: never tight, stopped at the maximum.
    let mut mock = Mock::new(|v, n| Reply::Ready(if (n + v) % 2 == 0 { 1.0 } else { 100.0 }));
    let (result, _) = execute(&p, &mut mock);
    assert_eq!(result.stopped, Some(StopReason::MaxRuns));
    assert!((0..3).all(|v| result.ready_ms(v).len() == 30));
}

#[test]
fn adaptive_stop_waits_for_every_variant() {
    // a and b are steady; c's spread never narrows: the experiment runs on for c.
    let p = Plan {
        stop: adaptive(4, 12, 0.5, false, CiOf::Median),
        ..plan(3, 0, 0, Order::Shuffled, 8)
    };
    let mut mock = Mock::new(|v, n| Reply::Ready(if v == 2 && n % 2 == 0 { 1.0 } else { 50.0 }));
    let (result, _) = execute(&p, &mut mock);
    assert_eq!(result.stopped, Some(StopReason::MaxRuns));
    assert_eq!(mock.rounds().len(), 12);
}

#[test]
fn an_absolute_target_is_in_milliseconds() {
    // Alternating 10 / 12 ms: the median's CI half-width is about 1 ms, so a 5 ms
    // target is met at the minimum and a 0.1 ms one never.
    let script = |_, n| Reply::Ready(if n % 2 == 0 { 10.0 } else { 12.0 });
    let stop_at = |target| {
        let p = Plan {
            stop: adaptive(6, 20, target, false, CiOf::Median),
            ..plan(2, 0, 0, Order::Shuffled, 10)
        };
        let mut mock = Mock::new(script);
        let (result, _) = execute(&p, &mut mock);
        (result.stopped, mock.rounds().len())
    };
    assert_eq!(stop_at(5.0), (Some(StopReason::TargetCi), 6));
    assert_eq!(stop_at(0.1), (Some(StopReason::MaxRuns), 20));
}

#[test]
fn adaptive_stop_on_the_shift_narrows_the_comparison_not_the_medians() {
    // The baseline takes a steady second; the candidate alternates 10 / 12 ms.
    // Each candidate median's CI (±1 ms) is wide against 1 % of its own 11 ms, but
    // the shift's is narrow against 1 % of the baseline's 1000 ms.
    let script = |v, n| match v {
        0 => Reply::Ready(1000.0),
        _ => Reply::Ready(if n % 2 == 0 { 10.0 } else { 12.0 }),
    };
    let run = |of| {
        let p = Plan {
            stop: adaptive(6, 20, 0.01, true, of),
            ..plan(2, 0, 0, Order::Shuffled, 12)
        };
        let mut mock = Mock::new(script);
        let (result, _) = execute(&p, &mut mock);
        (result.stopped, mock.rounds().len())
    };
    assert_eq!(run(CiOf::Shift), (Some(StopReason::TargetCi), 6));
    assert_eq!(run(CiOf::Median), (Some(StopReason::MaxRuns), 20));

    // A candidate that spreads over two orders of magnitude: the shift never narrows.
    let p = Plan {
        stop: adaptive(6, 20, 0.01, true, CiOf::Shift),
        ..plan(2, 0, 0, Order::Shuffled, 12)
    };
    let mut mock = Mock::new(|v, n| Reply::Ready(if v == 1 && n % 2 == 0 { 1.0 } else { 100.0 }));
    let (result, _) = execute(&p, &mut mock);
    assert_eq!(result.stopped, Some(StopReason::MaxRuns));
}

#[test]
fn adaptive_stop_on_the_verdict_waits_until_each_candidate_is_settled() {
    // The baseline spreads over 100–110 ms. Candidate 1 halves it (a gain far
    // beyond 1 %), candidate 2 is 30 % slower, each as noisy: with a 1 % precision
    // target neither interval is ever that narrow, but both are soon decided, so
    // the verdict rule stops early where the precision rule runs to the maximum.
    let script = |v: usize, n: usize| {
        let wobble = 1.0 + 0.1 * ((n * 7 + v * 3) % 11) as f64 / 10.0;
        Reply::Ready(
            match v {
                1 => 50.0,
                2 => 130.0,
                _ => 100.0,
            } * wobble,
        )
    };
    let run = |of| {
        let p = Plan {
            stop: adaptive(6, 30, 0.01, true, of),
            ..plan(3, 0, 0, Order::Shuffled, 5)
        };
        let mut mock = Mock::new(script);
        let (result, _) = execute(&p, &mut mock);
        (result, mock.rounds().len())
    };
    let (result, rounds) = run(CiOf::Verdict { noise: 0.01 });
    assert_eq!(result.stopped, Some(StopReason::TargetCi));
    assert!(rounds < 15, "{rounds}");
    // Where it stopped, each comparison's verdict is settled: the gain's interval
    // wholly beyond −1 %, the slower one's faster end at −1 % or above.
    let rel = |v| {
        let c = coldstart_stats::compare(
            &result.ready_ms(0),
            &result.ready_ms(v),
            coldstart_stats::CompareOptions::default(),
        );
        c.relative.and_then(|r| r.ci).expect("an interval")
    };
    assert!(rel(1).1 < -0.01, "{:?}", rel(1));
    assert!(rel(2).0 >= -0.01, "{:?}", rel(2));
    // The precision rule alone runs to the maximum on the same runs.
    assert_eq!(run(CiOf::Shift).0.stopped, Some(StopReason::MaxRuns));
    assert_eq!(run(CiOf::Shift).1, 30);
    // A candidate 3 % faster with ±5 % wobble is not settled at 6 runs: the rule
    // keeps going (until its interval clears −1 % or the maximum).
    let close = |v, n: usize| {
        let wobble = 1.0 + 0.05 * ((n * 7 + v * 3) % 5) as f64 / 4.0;
        Reply::Ready(if v == 1 { 97.0 } else { 100.0 } * wobble)
    };
    let p = Plan {
        stop: adaptive(6, 30, 0.01, true, CiOf::Verdict { noise: 0.01 }),
        ..plan(2, 0, 0, Order::Shuffled, 5)
    };
    let mut mock = Mock::new(close);
    execute(&p, &mut mock);
    assert!(mock.rounds().len() > 6, "{}", mock.rounds().len());
}

#[test]
fn adaptive_sequential_stops_each_variant_on_its_own() {
    let p = Plan {
        stop: adaptive(8, 20, 0.01, true, CiOf::Median),
        ..plan(3, 0, 0, Order::Sequential, 0)
    };
    // Variant b is noisy, a and c are steady.
    let mut mock = Mock::new(|v, n| Reply::Ready(if v == 1 && n % 2 == 0 { 1.0 } else { 50.0 }));
    let (result, _) = execute(&p, &mut mock);
    let counts: Vec<usize> = (0..3).map(|v| result.ready_ms(v).len()).collect();
    assert_eq!(counts, [8, 20, 8]);
    // Each variant's runs are contiguous: c starts after b reached its maximum.
    let vs: Vec<usize> = mock.measured().iter().map(|&(v, _)| v).collect();
    assert!(vs.windows(2).all(|w| w[0] <= w[1]), "{vs:?}");
    assert_eq!(result.stopped, Some(StopReason::MaxRuns));
}

#[test]
fn a_closure_is_a_runner() {
    let p = plan(2, 2, 0, Order::Sequential, 0);
    let mut calls = Vec::new();
    let result = execute_with(&p, &mut Seen::default(), &mut |v: usize, id: RunId| {
        calls.push(v);
        let mut s = Sample::begin(&id, 0);
        s.outcome = Outcome::Ready;
        s.ready_ns = Some(1_000_000);
        Ok(s)
    })
    .expect("execute");
    assert_eq!(calls, [0, 0, 1, 1]);
    assert_eq!(result.ready_ms(1), [1.0, 1.0]);
}

#[test]
fn stop_reasons_keep_their_stored_words() {
    let words: Vec<&str> = StopReason::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        words,
        ["completed", "target-ci", "max-runs", "failure", "interrupted"]
    );
    for r in StopReason::ALL {
        assert_eq!(serde_json::to_value(r).expect("json"), r.as_str());
        assert_eq!(StopReason::parse(r.as_str()), Some(r));
        assert_eq!(r.to_string(), r.as_str());
    }
    assert_eq!(StopReason::parse("incomplete"), None);
    assert_eq!(StopReason::label(None), "incomplete");
}

/// A right-skewed series, as cold starts on a busy machine are: half the runs at
/// 100 ms, the rest spread up to 116 ms, and one in ten at 300 ms.
fn skewed(n: usize) -> f64 {
    [
        100.0, 100.0, 100.0, 100.0, 100.0, 104.0, 108.0, 112.0, 116.0, 300.0,
    ][(n - 1) % 10]
}

#[test]
fn adaptive_stop_waits_until_both_ends_of_the_interval_are_within_the_target() {
    // After 10 runs the median is 102 ms with the CI [100, 116]: a half-width of 8 ms
    // (under 9 % of 102 ms), but 14 ms above the estimate. Stopping there claims a
    // precision the experiment does not have: it must run on. (The shift against a
    // steady 100 ms: 2 ms [0, 12], half-width 6, reach 10 ms, against 9 ms.)
    let mut xs: Vec<f64> = (1..=10).map(skewed).collect();
    xs.sort_by(f64::total_cmp);
    let s = coldstart_stats::summarize(&xs).expect("summary");
    let (lo, hi) = s.p50_ci.expect("a CI at n = 10");
    assert_eq!((s.p50, lo, hi), (102.0, 100.0, 116.0));

    for of in [CiOf::Median, CiOf::Shift] {
        let p = Plan {
            stop: adaptive(10, 200, 0.09, true, of),
            ..plan(2, 0, 0, Order::Shuffled, 3)
        };
        // Shift: a steady baseline, so the shift's interval is the candidate's.
        let mut mock = Mock::new(|v, n| {
            Reply::Ready(if v == 0 && of == CiOf::Shift {
                100.0
            } else {
                skewed(n)
            })
        });
        let (result, _) = execute(&p, &mut mock);
        let rounds = mock.rounds().len();
        assert!(
            rounds > 10,
            "{of:?}: stopped at {rounds} rounds on a lopsided interval"
        );
        assert_eq!(result.stopped, Some(StopReason::TargetCi), "{of:?}");
        // Where it stopped, the interval is within 9 % on both sides.
        let b = result.ready_ms(0);
        let c = result.ready_ms(1);
        let (estimate, (lo, hi), scale) = match of {
            CiOf::Median => {
                let s = coldstart_stats::summarize(&c).expect("summary");
                (s.p50, s.p50_ci.expect("ci"), s.p50)
            }
            CiOf::Shift | CiOf::Verdict { .. } => {
                let sh = coldstart_stats::hodges_lehmann(&b, &c, coldstart_stats::COMPARE_CONFIDENCE)
                    .expect("shift");
                (sh.estimate, sh.ci.expect("ci"), 100.0)
            }
        };
        assert!(
            estimate - lo <= 0.09 * scale && hi - estimate <= 0.09 * scale,
            "{of:?}: stopped at {rounds} rounds with {estimate} [{lo}, {hi}]"
        );
    }
}
