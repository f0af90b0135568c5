//! `bench`'s flags → the schedule: plans come from real `bench` argument lists
//! (the CLI grammar and bench::plan) and run with a mock runner, so these follow
//! the flags users type. The scheduler's own behaviour, on plans built directly,
//! is tested in crates/core/src/experiment/schedule_tests.rs.

use coldstart_core::experiment::*;
use coldstart_core::sample::RunId;
use coldstart_core::sample::{Outcome, Sample};
use std::collections::BTreeSet;

/// The plan `coldstart bench ARGS` would execute.
pub(crate) fn plan_of(args: &[&str]) -> Plan {
    let argv = ["coldstart", "bench"].iter().chain(args).map(|s| s.to_string());
    let crate::flags::Command::Bench(b) = crate::flags::parse(argv).expect("bench arguments") else {
        panic!("not a bench command");
    };
    crate::cmd::bench::plan(&b, None, std::path::Path::new("."))
        .expect("a valid plan")
        .0
}

/// Three variants running `true`.
fn three(extra: &[&str]) -> Plan {
    let mut args: Vec<&str> = extra.to_vec();
    for name in ["a", "b", "c"] {
        args.extend(["--name", name, "--", "true"]);
    }
    plan_of(&args)
}

#[derive(Default)]
struct Seen {
    planned: Vec<usize>,
    finished: Vec<(String, usize, bool)>,
}

impl Observer for Seen {
    fn planned(&mut self, total_runs: usize) {
        self.planned.push(total_runs);
    }
    fn finished(&mut self, variant: &Variant, sample: &Sample) {
        self.finished
            .push((variant.name.clone(), sample.round, sample.warmup));
    }
}

fn ready(id: RunId, ms: f64) -> Sample {
    let mut s = Sample::begin(&id, 0);
    s.outcome = Outcome::Ready;
    s.ready_ns = Some((ms * 1e6) as u64);
    s
}

/// Execute with a runner that records every RunId and answers `ms(variant, n)`
/// for the n-th run of that variant.
fn execute(plan: &Plan, ms: impl Fn(usize, usize) -> f64) -> (ExperimentResult, Vec<RunId>, Seen) {
    let mut ids = Vec::new();
    let mut seen = Seen::default();
    let mut count = vec![0usize; plan.variants.len()];
    let result = execute_with(plan, &mut seen, &mut |v: usize, id: RunId| {
        ids.push(id);
        count[v] += 1;
        assert_eq!(v, id.variant, "the runner is told the variant twice, alike");
        Ok(ready(id, ms(v, count[v])))
    })
    .expect("execute");
    (result, ids, seen)
}

/// The variant order of each measured round.
fn rounds(ids: &[RunId]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for id in ids.iter().filter(|id| !id.warmup) {
        if out.len() <= id.round {
            out.resize(id.round + 1, Vec::new());
        }
        out[id.round].push(id.variant);
    }
    out
}

#[test]
fn warmups_come_first_then_rounds_with_every_variant_once() {
    let plan = three(&["--runs", "4", "--warmup", "2", "--seed", "7"]);
    let (result, ids, seen) = execute(&plan, |_, _| 10.0);
    assert_eq!(ids.len(), 3 * (2 + 4));
    assert!(ids[..6].iter().all(|id| id.warmup), "{ids:?}");
    assert!(ids[6..].iter().all(|id| !id.warmup), "{ids:?}");
    for (w, chunk) in ids[..6].chunks(3).enumerate() {
        let vs: BTreeSet<usize> = chunk.iter().map(|id| id.variant).collect();
        assert_eq!(vs.len(), 3, "warmup round {w}: {chunk:?}");
        assert!(chunk.iter().all(|id| id.round == w));
    }
    for (r, order) in rounds(&ids).iter().enumerate() {
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2], "round {r} runs each variant once: {order:?}");
    }
    // Rounds run one after another, never overlapping.
    let measured: Vec<usize> = ids.iter().filter(|id| !id.warmup).map(|id| id.round).collect();
    assert!(measured.windows(2).all(|w| w[0] <= w[1]), "{measured:?}");
    assert_eq!(result.samples.len(), ids.len());
    assert_eq!(result.stopped, Some(StopReason::Completed));
    assert_eq!(seen.planned, [3 * (2 + 4)]);
    assert_eq!(seen.finished.len(), ids.len(), "the observer hears of every run");
}

#[test]
fn shuffled_rounds_vary_and_the_seed_reproduces_them() {
    let args = |seed: &'static str| three(&["--runs", "30", "--warmup", "0", "--seed", seed]);
    let (_, a, _) = execute(&args("1"), |_, _| 10.0);
    let (_, again, _) = execute(&args("1"), |_, _| 10.0);
    let (_, other, _) = execute(&args("2"), |_, _| 10.0);
    let (a, again, other) = (rounds(&a), rounds(&again), rounds(&other));
    assert_eq!(a, again, "one seed, one order");
    assert_ne!(a, other, "another seed, another order");
    let distinct: BTreeSet<&Vec<usize>> = a.iter().collect();
    assert!(
        distinct.len() >= 4,
        "30 rounds of 3 variants use most of the 6 orders: {distinct:?}"
    );
    assert!(
        a.iter().any(|r| r[0] != 0),
        "the baseline is not always first: {a:?}"
    );
}

#[test]
fn sequential_order_runs_each_variant_to_the_end() {
    let plan = three(&["--runs", "3", "--warmup", "1", "--order", "sequential"]);
    let (result, ids, _) = execute(&plan, |_, _| 10.0);
    let measured: Vec<(usize, usize)> = ids
        .iter()
        .filter(|id| !id.warmup)
        .map(|id| (id.variant, id.round))
        .collect();
    assert_eq!(
        measured,
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
    let warm: Vec<usize> = ids.iter().filter(|id| id.warmup).map(|id| id.variant).collect();
    assert_eq!(warm, [0, 1, 2], "warmups first, in order");
    assert!(ids[..3].iter().all(|id| id.warmup));
    assert_eq!(result.stopped, Some(StopReason::Completed));
}

#[test]
fn adaptive_stop_respects_min_and_max_runs() {
    let adaptive = [
        "--target-ci",
        "1%",
        "--min-runs",
        "8",
        "--max-runs",
        "30",
        "--warmup",
        "0",
    ];
    // Identical times: the median's CI has zero width as soon as it exists, yet no
    // variant stops before --min-runs.
    let (result, _, seen) = execute(&three(&adaptive), |_, _| 10.0);
    assert_eq!(result.stopped, Some(StopReason::TargetCi));
    for v in 0..3 {
        assert_eq!(result.ready_ms(v).len(), 8, "variant {v}");
    }
    assert_eq!(seen.planned, [3 * 30], "progress is planned for the maximum");
    // Times spread over two orders of magnitude: never tight, stopped at --max-runs.
    let (result, _, _) = execute(
        &three(&adaptive),
        |v, n| {
            if (n + v) % 2 == 0 {
                1.0
            } else {
                100.0
            }
        },
    );
    assert_eq!(result.stopped, Some(StopReason::MaxRuns));
    for v in 0..3 {
        assert_eq!(result.ready_ms(v).len(), 30, "variant {v}");
    }
}

#[test]
fn adaptive_sequential_stops_each_variant_on_its_own() {
    let plan = three(&[
        "--target-ci",
        "1%",
        "--min-runs",
        "8",
        "--max-runs",
        "20",
        "--warmup",
        "0",
        "--order",
        "sequential",
    ]);
    // Variant b is noisy, a and c are steady.
    let (result, _, _) = execute(&plan, |v, n| if v == 1 && n % 2 == 0 { 1.0 } else { 50.0 });
    let counts: Vec<usize> = (0..3).map(|v| result.ready_ms(v).len()).collect();
    assert_eq!(counts, [8, 20, 8]);
}

#[test]
fn an_interrupt_stops_at_once_and_says_so() {
    let plan = three(&["--runs", "5", "--warmup", "0", "--seed", "3"]);
    let mut runs = 0;
    let result = execute_with(&plan, &mut Seen::default(), &mut |_: usize, id: RunId| {
        runs += 1;
        let mut s = ready(id, 5.0);
        if runs == 4 {
            s.outcome = Outcome::Interrupted;
            s.ready_ns = None;
        }
        Ok(s)
    })
    .expect("execute");
    assert_eq!(runs, 4, "no run after the interrupt");
    assert_eq!(result.samples.len(), 4, "the interrupted run is kept");
    assert_eq!(result.stopped, Some(StopReason::Interrupted));
}

#[test]
fn a_runner_error_aborts_the_experiment() {
    let plan = three(&["--runs", "5", "--warmup", "1"]);
    let mut runs = 0;
    let err = execute_with(&plan, &mut Seen::default(), &mut |_: usize, _: RunId| {
        runs += 1;
        anyhow::bail!("setup broke")
    })
    .expect_err("an error");
    assert_eq!(runs, 1);
    assert!(format!("{err:#}").contains("setup broke"));
}

/// `coldstart bench ARGS` → its plan, or the one-line error it would print.
fn try_plan(args: &[&str]) -> Result<(Plan, coldstart_core::run::Plain, Sweep), String> {
    let argv = ["coldstart", "bench"].iter().chain(args).map(|s| s.to_string());
    let crate::flags::Command::Bench(b) = crate::flags::parse(argv).map_err(|e| e.to_string())? else {
        panic!("not a bench command");
    };
    crate::cmd::bench::plan(&b, None, std::path::Path::new(".")).map_err(|e| format!("{e:#}"))
}

#[test]
fn params_make_a_point_per_value_of_each_variant() {
    let dir = tempfile::tempdir().unwrap();
    for n in ["1", "2"] {
        std::fs::create_dir(dir.path().join(n)).unwrap();
    }
    let cwd = format!("{}/{{n}}", dir.path().display());
    let (plan, runner, sweep) = try_plan(&[
        "--param",
        "heap=64m,96m",
        "--param",
        "n=1..2",
        "--env",
        "HEAP={heap}",
        "--ready",
        "file:/tmp/ready-{n}",
        "--name",
        "a",
        "--cwd",
        &cwd,
        "--",
        "echo",
        "-Xmx{heap}",
        "--name",
        "b",
        "--",
        "echo",
        "{{heap}}",
        "{n}",
    ])
    .unwrap();
    let names: Vec<&str> = plan.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "a[heap=64m,n=1]",
            "a[heap=64m,n=2]",
            "a[heap=96m,n=1]",
            "a[heap=96m,n=2]",
            "b[heap=64m,n=1]",
            "b[heap=64m,n=2]",
            "b[heap=96m,n=1]",
            "b[heap=96m,n=2]"
        ]
    );
    let v = &plan.variants[3];
    assert_eq!(
        v.params,
        [("heap".to_string(), "96m".to_string()), ("n".into(), "2".into())]
    );
    assert_eq!(v.base_name(), "a");
    let t = &runner.specs[3].target;
    assert_eq!(t.argv, ["echo", "-Xmx96m"]);
    assert!(
        t.env.contains(&("HEAP".to_string(), "96m".to_string())),
        "{:?}",
        t.env
    );
    assert_eq!(t.cwd.as_deref(), Some(dir.path().join("2").as_path()));
    assert_eq!(runner.specs[3].readiness.to_string(), "file:/tmp/ready-2");
    // `{{heap}}` is literal; the shared --env reaches b as well.
    let b = &runner.specs[6].target;
    assert_eq!(b.argv, ["echo", "{heap}", "1"]);
    assert!(b.env.contains(&("HEAP".to_string(), "96m".to_string())));
    assert_eq!(sweep.params.len(), 2);
    assert_eq!(sweep.compare_along, None, "two variants: compared at each value");
    // Every point of every variant is in each round.
    let (_, ids, _) = execute(&plan, |_, _| 10.0);
    let measured = rounds(&ids);
    assert!(!measured.is_empty());
    for r in &measured {
        assert_eq!(
            r.iter().copied().collect::<BTreeSet<_>>().len(),
            8,
            "every point once a round: {r:?}"
        );
    }
    assert!(
        measured.windows(2).any(|w| w[0] != w[1]),
        "shuffled rounds: {measured:?}"
    );
}

#[test]
fn an_unnamed_sweep_is_named_after_its_command_and_compared_along() {
    let (plan, _, sweep) = try_plan(&["--param", "n=1..4:x2", "--", "echo", "{n}"]).unwrap();
    let names: Vec<&str> = plan.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["echo '{n}'[n=1]", "echo '{n}'[n=2]", "echo '{n}'[n=4]"]);
    assert_eq!(sweep.compare_along.as_deref(), Some("n"));
    // Without --param, braces are nobody's business.
    let (plan, runner, _) = try_plan(&["--", "echo", "{n}"]).unwrap();
    assert!(plan.variants[0].params.is_empty());
    assert_eq!(runner.specs[0].target.argv, ["echo", "{n}"]);
}

#[test]
fn sweep_mistakes_are_one_line_each() {
    for (args, says) in [
        (
            &["--param", "n=1,2", "--", "echo", "{m}"][..],
            "unknown parameter {m}",
        ),
        (
            &["--param", "n=1,2", "--", "echo", "x"][..],
            "--param n is used nowhere",
        ),
        (
            &["--param", "n=1,2", "--param", "n=3", "--", "echo", "{n}"][..],
            "given twice",
        ),
        (
            &["--param", "n=1,2", "--compare-along", "m", "--", "echo", "{n}"][..],
            "--compare-along m: no such parameter",
        ),
        (
            &["--param", "n=1,2", "--resource", "m", "--", "echo", "{n}"][..],
            "--resource m: no such parameter",
        ),
        (&["--param", "n=2..1", "--", "echo", "{n}"][..], "backwards"),
        (
            &["--name", "a[1]", "--", "echo"][..],
            "brackets mark parameter values",
        ),
        (
            &["--param", "n=1,2", "--env", "K={x}", "--", "echo", "{n}"][..],
            "--env of variant",
        ),
    ] {
        let e = try_plan(args).map(|_| ()).expect_err(&args.join(" "));
        assert!(e.contains(says), "{args:?}: {e}");
        assert!(!e.trim_end().contains('\n'), "one line: {e}");
    }
}
