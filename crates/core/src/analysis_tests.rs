//! analysis::analyze on hand-made samples: which runs count, the per-variant
//! summaries, marks and captures. (The comparison with the baseline is the stats
//! module's and the verdict's tests' business.)

use crate::analysis::{analyze, Analysis};
use crate::experiment::ExperimentResult;
use crate::fixtures::{result, sample, variants};
use crate::sample::{Mark, MarkSource};

fn mark(name: &str, ms: u64, source: MarkSource) -> Mark {
    Mark::new(name, source, ms * 1_000_000)
}

/// base: a 1000 ms warmup, ok runs of 10/20/30 ms, one timeout; cand: 5/7 ms.
fn mixed() -> Analysis {
    let mut samples = vec![sample(0, 0, true, Some(1000.0)), sample(1, 0, true, Some(1000.0))];
    for (round, ms) in [10.0, 20.0, 30.0].into_iter().enumerate() {
        samples.push(sample(0, round, false, Some(ms)));
    }
    samples.push(sample(0, 3, false, None));
    samples.push(sample(1, 0, false, Some(5.0)));
    samples.push(sample(1, 1, false, Some(7.0)));
    analyze(&result(samples), coldstart_stats::DEFAULT_NOISE)
}

#[test]
fn summaries_count_only_successful_measured_runs() {
    let a = mixed();
    let base = &a.variants[0];
    assert_eq!(base.name, "base");
    assert_eq!((base.ok_runs, base.failed_runs, base.warmup_runs), (3, 1, 1));
    let ready = base.ready_ms.as_ref().expect("ready summary");
    assert_eq!(ready.n, 3);
    assert_eq!(
        (ready.min, ready.p50, ready.max),
        (10.0, 20.0, 30.0),
        "no warmup, no timeout"
    );
    let cand = &a.variants[1];
    assert_eq!((cand.ok_runs, cand.failed_runs, cand.warmup_runs), (2, 0, 1));
    assert_eq!(cand.ready_ms.as_ref().map(|s| s.max), Some(7.0));
    assert!(
        base.vs_baseline.is_none(),
        "the baseline is not compared with itself"
    );
    assert!(cand.vs_baseline.is_some());
}

#[test]
fn a_variant_without_a_successful_run_has_no_summary() {
    let a = analyze(
        &result(vec![
            sample(0, 0, false, Some(10.0)),
            sample(1, 0, false, None),
            sample(1, 1, false, None),
        ]),
        coldstart_stats::DEFAULT_NOISE,
    );
    let cand = &a.variants[1];
    assert_eq!((cand.ok_runs, cand.failed_runs), (0, 2));
    assert!(cand.ready_ms.is_none() && cand.cpu_ms.is_none());
}

#[test]
fn resources_and_requests_come_from_ok_runs() {
    let mut samples = Vec::new();
    for (round, cpu_us) in [2_000u64, 4_000, 6_000].into_iter().enumerate() {
        let mut s = sample(0, round, false, Some(10.0));
        s.usage.cpu_total_us = cpu_us;
        s.usage.peak_rss_kb = Some(2048);
        s.usage.processes = 1;
        s.requests_ns = vec![9_000_000, 1_000_000, 3_000_000];
        samples.push(s);
    }
    let mut failed = sample(0, 3, false, None);
    failed.usage.cpu_total_us = 1_000_000;
    failed.requests_ns = vec![500_000_000];
    samples.push(failed);
    let a = analyze(&result(samples), coldstart_stats::DEFAULT_NOISE);
    let v = &a.variants[0];
    let cpu = v.cpu_ms.as_ref().expect("cpu");
    assert_eq!(
        (cpu.n, cpu.min, cpu.max),
        (3, 2.0, 6.0),
        "the failed run's CPU is left out"
    );
    assert_eq!(v.peak_rss_mb.as_ref().map(|s| s.p50), Some(2.0));
    let first = v.first_request_ms.as_ref().expect("first request");
    assert_eq!(
        (first.n, first.p50),
        (3, 9.0),
        "the cold handler: first request only"
    );
    let later = v.later_requests_ms.as_ref().expect("later requests");
    assert_eq!(
        (later.n, later.min, later.max),
        (6, 1.0, 3.0),
        "requests 2..N pooled"
    );
    assert!(v.shutdown_ms.is_none(), "no run measured a shutdown");
}

/// A run that saw no process (on the Lambda service, or a root reaped by the
/// tracer) measured no usage: its zeros are left out, not summarised as 0 µs.
#[test]
fn usage_of_runs_that_saw_no_process_is_not_a_figure() {
    let mut seen = sample(0, 0, false, Some(10.0));
    seen.usage.cpu_total_us = 4_000;
    seen.usage.processes = 1;
    let mut unseen = sample(0, 1, false, Some(10.0));
    unseen.usage.processes = 0;
    let a = analyze(
        &result(vec![seen, unseen.clone()]),
        coldstart_stats::DEFAULT_NOISE,
    );
    let cpu = a.variants[0].cpu_ms.as_ref().expect("cpu");
    assert_eq!((cpu.n, cpu.p50), (1, 4.0));
    let a = analyze(&result(vec![unseen]), coldstart_stats::DEFAULT_NOISE);
    let v = &a.variants[0];
    assert!(v.cpu_ms.is_none() && v.processes.is_none() && v.minor_faults.is_none());
}

#[test]
fn marks_take_the_first_occurrence_per_run_ordered_by_median() {
    let mut samples = Vec::new();
    for round in 0..3 {
        let mut s = sample(0, round, false, Some(50.0));
        s.marks = vec![
            mark("late", 30, MarkSource::Log),
            mark("late", 40, MarkSource::Log),
            mark("early", 5 + round as u64, MarkSource::Checkpoint),
        ];
        samples.push(s);
    }
    // Only in one run, and not in the warmup or failed runs.
    samples[0].marks.push(mark("once", 45, MarkSource::Checkpoint));
    let mut warm = sample(0, 0, true, Some(50.0));
    warm.marks = vec![
        mark("late", 1, MarkSource::Log),
        mark("warm-only", 1, MarkSource::Log),
    ];
    samples.push(warm);
    let mut failed = sample(0, 3, false, None);
    failed.marks = vec![mark("early", 900, MarkSource::Checkpoint)];
    samples.push(failed);
    let a = analyze(&result(samples), coldstart_stats::DEFAULT_NOISE);
    let marks = &a.variants[0].marks;
    let names: Vec<&str> = marks.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        ["early", "late", "once"],
        "by median, warmup-only marks absent"
    );
    assert_eq!(
        (marks[0].runs, marks[0].t_ms.max),
        (3, 7.0),
        "the failed run's mark is left out"
    );
    assert_eq!(marks[0].source, MarkSource::Checkpoint);
    assert_eq!(marks[1].runs, 3);
    assert_eq!(
        (marks[1].t_ms.min, marks[1].t_ms.max),
        (30.0, 30.0),
        "a repeated mark counts at its first occurrence"
    );
    assert_eq!(marks[2].runs, 1);
}

#[test]
fn captures_keep_numeric_values_only() {
    let mut samples = Vec::new();
    for (round, (port, took)) in [("8080", "12.5"), ("8081", "n/a"), ("8082", "14.5")]
        .into_iter()
        .enumerate()
    {
        let mut s = sample(0, round, false, Some(10.0));
        s.captures.insert("port".into(), port.into());
        s.captures.insert("took_ms".into(), took.into());
        s.captures.insert("host".into(), "localhost".into());
        samples.push(s);
    }
    let mut failed = sample(0, 3, false, None);
    failed.captures.insert("port".into(), "1".into());
    samples.push(failed);
    let a = analyze(&result(samples), coldstart_stats::DEFAULT_NOISE);
    let caps = &a.variants[0].captures;
    assert_eq!(
        caps.keys().collect::<Vec<_>>(),
        ["port", "took_ms"],
        "no summary of text"
    );
    assert_eq!(
        (caps["port"].n, caps["port"].min),
        (3, 8080.0),
        "the failed run is left out"
    );
    assert_eq!(
        (caps["took_ms"].n, caps["took_ms"].p50),
        (2, 13.5),
        "a non-number is skipped"
    );
}

#[test]
fn metrics_are_summarised_per_variant_from_successful_runs() {
    let mut samples = Vec::new();
    for round in 0..3 {
        let mut s = sample(0, round, false, Some(10.0));
        s.metrics.insert("billed_ms".into(), 10.0 + round as f64);
        // A run that did not measure it leaves it out; n says so.
        if round != 1 {
            s.metrics.insert("throttled_ms".into(), 0.25);
        }
        samples.push(s);
        let mut c = sample(1, round, false, Some(10.0));
        c.metrics.insert("billed_ms".into(), 100.0);
        samples.push(c);
    }
    let mut failed = sample(0, 3, false, None);
    failed.metrics.insert("billed_ms".into(), 1e6);
    samples.push(failed);
    let mut warm = sample(0, 0, true, Some(10.0));
    warm.metrics.insert("billed_ms".into(), 1e6);
    samples.push(warm);
    let a = analyze(&result(samples), coldstart_stats::DEFAULT_NOISE);
    let m = &a.variants[0].metrics;
    assert_eq!(
        (m["billed_ms"].n, m["billed_ms"].p50, m["billed_ms"].max),
        (3, 11.0, 12.0),
        "failed runs and warmups are left out"
    );
    assert_eq!((m["throttled_ms"].n, m["throttled_ms"].p50), (2, 0.25));
    assert_eq!(a.variants[1].metrics["billed_ms"].p50, 100.0, "per variant");
    assert!(a.variants[0].captures.is_empty(), "metrics are not captures");
}

/// A sweep result: variants `base` and `cand` at n = 1, 2, 4 (variant-major),
/// each run's ready time from `ms(base, n)` plus a little per-round jitter.
fn sweep_result(ms: impl Fn(&str, u32) -> f64) -> ExperimentResult {
    let mut vs = Vec::new();
    let mut samples = Vec::new();
    for base in ["base", "cand"] {
        for n in [1u32, 2, 4] {
            let params = vec![("n".to_string(), n.to_string())];
            let i = vs.len();
            vs.push(crate::experiment::Variant {
                name: crate::experiment::sweep::point_name(base, &params),
                params,
                ..variants().remove(0)
            });
            for round in 0..12 {
                samples.push(sample(
                    i,
                    round,
                    false,
                    Some(ms(base, n) * (1.0 + round as f64 * 1e-3)),
                ));
            }
        }
    }
    ExperimentResult {
        variants: vs,
        ..result(samples)
    }
}

fn sweep(along: Option<&str>, resource: bool) -> crate::experiment::Sweep {
    crate::experiment::Sweep {
        params: vec![crate::experiment::Param {
            name: "n".into(),
            values: vec!["1".into(), "2".into(), "4".into()],
            resource,
        }],
        compare_along: along.map(str::to_string),
    }
}

#[test]
fn each_point_is_compared_with_the_baseline_at_the_same_value() {
    use coldstart_stats::Verdict;
    // The time grows with n; cand is 20 % faster than base at every n.
    let r = sweep_result(|b, n| f64::from(n) * 10.0 * if b == "cand" { 0.8 } else { 1.0 });
    let a = crate::analysis::analyze_sweep(&r, 0.01, Some(&sweep(Some("n"), false)));
    let cand: Vec<_> = a.variants.iter().filter(|v| v.base == "cand").collect();
    for v in &cand {
        assert_eq!(
            v.baseline.as_deref(),
            Some(v.name.replace("cand", "base").as_str())
        );
        let c = v.vs_baseline.as_ref().expect("compared");
        assert_eq!(c.verdict, Verdict::Faster, "{}", v.name);
        let rel = c.relative.as_ref().unwrap().estimate;
        assert!((rel + 0.2).abs() < 0.02, "{}: {rel}", v.name);
    }
    for v in a.variants.iter().filter(|v| v.base == "base") {
        assert!(v.vs_baseline.is_none(), "{} is a baseline", v.name);
    }
    // Along n: each value against n=1 of the same variant (2× and 4×).
    assert!(a.variants[0].vs_first.is_none());
    assert_eq!(a.variants[1].first.as_deref(), Some("base[n=1]"));
    let ratio = |i: usize| a.variants[i].vs_first.as_ref().unwrap().ratio.unwrap();
    assert!((ratio(1) - 2.0).abs() < 0.05 && (ratio(2) - 4.0).abs() < 0.1);
    assert!((ratio(5) - 4.0).abs() < 0.1, "cand[n=4] vs cand[n=1]");
    assert_eq!(a.variants[5].first.as_deref(), Some("cand[n=1]"));
    assert!(a.best.is_empty(), "n is not a resource");
}

#[test]
fn the_best_value_of_a_resource_is_the_cheapest_within_the_noise() {
    // base: n=1 slow, n=2 within 0.5 % of n=4 (the fastest); cand: n=1 fastest.
    let r = sweep_result(|b, n| match (b, n) {
        ("base", 1) => 100.0,
        ("base", 2) => 50.25,
        ("base", _) => 50.0,
        (_, 1) => 30.0,
        (_, _) => 40.0,
    });
    let a = crate::analysis::analyze_sweep(&r, 0.01, Some(&sweep(None, true)));
    let best: Vec<_> = a
        .best
        .iter()
        .map(|b| (b.variant.as_str(), b.value.as_str(), b.fastest.as_str()))
        .collect();
    assert_eq!(best, [("base", "2", "4"), ("cand", "1", "1")]);
    assert!(a.best[0].vs_fastest.is_some() && a.best[1].vs_fastest.is_none());
    // A tighter threshold than the 0.5 % gap: the fastest itself.
    let a = crate::analysis::analyze_sweep(&r, 0.001, Some(&sweep(None, true)));
    assert_eq!(a.best[0].value, "4");
}

#[test]
fn a_resource_with_one_value_per_variant_names_no_best() {
    // `--name m128 --memory 128 --name m512 --memory 512`: each variant has one
    // value, so no value was compared with another for it.
    let full = sweep_result(|_, n| f64::from(n) * 10.0);
    let keep = [0usize, 5];
    let variants = keep.iter().map(|&i| full.variants[i].clone()).collect();
    let samples = full
        .samples
        .iter()
        .filter_map(|s| {
            let j = keep.iter().position(|&k| k == s.variant)?;
            let mut s = s.clone();
            s.variant = j;
            Some(s)
        })
        .collect();
    let r = ExperimentResult {
        variants,
        samples,
        ..result(Vec::new())
    };
    let a = crate::analysis::analyze_sweep(&r, 0.01, Some(&sweep(None, true)));
    assert!(a.best.is_empty(), "{:?}", a.best);
}
