//! `coldstart explain`: where a cold start's time goes. Runs the target untraced
//! and traced (interleaved), builds the timeline of the median traced run from
//! the syscall tracer, and reports phases, blame, files, network and processes,
//! plus the tracer's own overhead (traced ÷ untraced ready time).

pub mod adapted;
pub mod adapter;
pub mod otlp;

pub mod traced;

use crate::cli::ExplainArgs;
use crate::launch::signals;
use crate::report;
use crate::run::{run_once, RunId, RunOptions};
use crate::sample::Section;
use crate::stats::{self, Summary};
use crate::target::{parse_env, Readiness, Target};
use crate::timeline::{self, Timeline};
use crate::trace::Trace;
use adapter::{Adapter, FinalExec};
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::time::Duration;

#[derive(Debug, Serialize)]
pub struct Explanation {
    pub schema: &'static str,
    pub command: String,
    pub readiness: String,
    pub untraced_ms: Option<Summary>,
    pub traced_ms: Option<Summary>,
    /// Median traced ÷ median untraced ready time.
    pub overhead: Option<f64>,
    /// The traced run shown: its ready time (ms since spawn).
    pub ready_ms: f64,
    pub timeline: Timeline,
    /// Adapted runs (adapters' switches on, untraced): their ready times, and
    /// median adapted ÷ median untraced, the adapters' own cost.
    pub adapted_ms: Option<Summary>,
    pub adapter_overhead: Option<f64>,
    /// The adapters used (auto-detected or chosen with --adapter).
    pub adapters: Vec<String>,
    /// One section per source inside the runtime, from the adapted run nearest
    /// the adapted median; times count from that run's spawn.
    pub sources: Vec<Section>,
    pub warnings: Vec<String>,
    /// The raw events of the run shown (for the Chrome trace; not in the JSON).
    #[serde(skip)]
    pub trace: Trace,
}

/// The explanation of the traced run nearest the traced median.
pub fn explanation(
    target: &Target,
    readiness: &Readiness,
    untraced_ms: Option<Summary>,
    traced_ms: Option<Summary>,
    overhead: Option<f64>,
    traced_runs: Vec<(f64, Trace)>,
) -> Result<Explanation> {
    let median = traced_ms.as_ref().map_or(0.0, |s| s.p50);
    let Some((ready_ms, trace)) = traced_runs
        .into_iter()
        .min_by(|a, b| (a.0 - median).abs().total_cmp(&(b.0 - median).abs()))
    else {
        bail!("no traced run")
    };
    let mut timeline = timeline::build(&trace);
    timeline::add_ready_phases(&mut timeline, &trace, (ready_ms * 1e6) as u64);
    Ok(Explanation {
        schema: "coldstart.explain/2",
        command: target.display_command(),
        readiness: readiness.to_string(),
        untraced_ms,
        traced_ms,
        overhead,
        ready_ms,
        adapted_ms: None,
        adapter_overhead: None,
        adapters: Vec::new(),
        sources: Vec::new(),
        warnings: trace.warnings.clone(),
        timeline,
        trace,
    })
}

/// `bench --explain`: after a variant's timed runs, one traced run (the
/// timeline) and one adapted run (the sections of its auto-detected adapter,
/// checkpoints and OpenTelemetry spans). One run each: no overheads measured.
pub fn once(target: &Target, readiness: &Readiness, opts: &RunOptions) -> Result<String> {
    let (ready_ns, trace) = traced::run(target, readiness, opts.timeout)?;
    let adapters = choose_adapters("auto", &trace)?;
    let ms = ready_ns as f64 / 1e6;
    let traced = stats::summarize(&[ms]);
    let mut e = explanation(target, readiness, None, traced, None, vec![(ms, trace)])?;
    let id = RunId {
        variant: 0,
        round: 0,
        warmup: false,
    };
    let a = adapted::run(target, readiness, opts, &adapters, true, id)?;
    if a.sample.ok() {
        e.adapters = adapters.iter().map(|a| a.name().to_string()).collect();
        e.sources = a.sections(&adapters, Some(&e.trace));
    } else {
        e.warnings.push(format!(
            "the adapted run failed, so no sections: {}",
            report::progress::describe_failure("adapted", &a.sample)
        ));
    }
    Ok(report::explain::render(&e))
}

pub fn run(args: &ExplainArgs) -> Result<i32> {
    if args.command.is_empty() {
        bail!("no command to explain: put it after `--`, e.g. `coldstart explain --ready exit -- python3 -c pass`");
    }
    let env = args
        .env
        .iter()
        .map(|e| parse_env(e))
        .collect::<Result<Vec<_>>>()?;
    let target = Target::new(args.command.clone(), env, args.cwd.clone())?;
    let readiness = Readiness::parse(args.ready.as_deref().unwrap_or("exit"))?;
    if matches!(readiness, Readiness::LambdaInit) {
        bail!("explain does not emulate Lambda: use `coldstart lambda` for lambda:init");
    }
    report::export::check(&[&args.export_json, &args.export_trace])?;
    let timeout = crate::bounds::seconds("--timeout", args.timeout, false)?;
    let runs = crate::bounds::runs("--runs", args.runs, 1)?;
    let opts = RunOptions {
        timeout,
        poll_interval: Duration::from_micros(200),
        requests: 0,
        request_url: None,
        grace: Duration::from_secs(2),
        tail_lines: 10,
        log_marks: Vec::new(),
        claims: Vec::new(),
        exit_policy: Default::default(),
    };
    let mut opts = opts;
    opts.log_marks = args
        .marks
        .iter()
        .map(|m| crate::marks::parse_log_mark(m))
        .collect::<Result<_>>()?;
    // An unknown adapter name is refused now, not after the first runs.
    adapter::select(&args.adapter, None)?;
    // The untraced and traced runs export to a receiver too (one that keeps
    // nothing), so an app with an OpenTelemetry SDK behaves the same in every kind
    // of run instead of retrying a missing collector in all but the adapted ones.
    let sink = if args.no_otlp {
        None
    } else {
        Some(otlp::Receiver::start().context("starting the OTLP receiver (--no-otlp runs without it)")?)
    };
    let mut target = target;
    if let Some(r) = &sink {
        target.env.extend(r.env());
    }
    let id = |round, warmup| RunId {
        variant: 0,
        round,
        warmup,
    };
    if !args.quiet {
        crate::out::errln!(
            "coldstart explain: {runs} untraced, {runs} traced and {runs} adapted runs, interleaved…"
        );
    }
    // One untraced warmup puts the program's files in the page cache for every kind.
    let warm = run_once(&target, &readiness, &opts, id(0, true))?;
    if !warm.ok() {
        bail!("{}", report::progress::describe_failure("warmup", &warm));
    }
    let mut untraced = Vec::new();
    let mut traced_runs: Vec<(f64, Trace)> = Vec::new();
    let mut adapted_runs: Vec<(f64, adapted::AdaptedRun)> = Vec::new();
    // Chosen from the first traced run's final exec (what really runs after
    // shims and wrappers), then kept for every adapted run.
    let mut adapters: Option<Vec<Box<dyn Adapter>>> = None;
    for round in 0..runs {
        let s = run_once(&target, &readiness, &opts, id(round, false))?;
        if signals::interrupted() {
            return Ok(130);
        }
        if !s.ok() {
            bail!("{}", report::progress::describe_failure("untraced", &s));
        }
        untraced.push(s.ready_ns.unwrap_or(0) as f64 / 1e6);
        let traced = traced::run(&target, &readiness, timeout);
        if signals::interrupted() {
            return Ok(130);
        }
        let (ready_ns, trace) = traced?;
        if adapters.is_none() {
            let chosen = choose_adapters(&args.adapter, &trace)?;
            if !args.quiet {
                let names: Vec<&str> = chosen.iter().map(|a| a.name()).collect();
                crate::out::errln!(
                    "coldstart explain: adapters: {}",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                );
            }
            adapters = Some(chosen);
        }
        traced_runs.push((ready_ns as f64 / 1e6, trace));
        let chosen = adapters.as_deref().unwrap_or_default();
        let a = adapted::run(
            &target,
            &readiness,
            &opts,
            chosen,
            !args.no_otlp,
            id(round, false),
        )?;
        if signals::interrupted() {
            return Ok(130);
        }
        if !a.sample.ok() {
            bail!(
                "{}\n(this run had the adapters' switches on: try --adapter none)",
                report::progress::describe_failure("adapted", &a.sample)
            );
        }
        adapted_runs.push((a.sample.ready_ns.unwrap_or(0) as f64 / 1e6, a));
        if !args.quiet {
            crate::out::errln!("coldstart explain: {}/{runs}", round + 1);
        }
    }
    let summary = |xs: &[f64]| {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        stats::summarize(&v)
    };
    let ratio = |a: &Option<Summary>, b: &Option<Summary>| match (a, b) {
        (Some(a), Some(b)) if b.p50 > 0.0 => Some(a.p50 / b.p50),
        _ => None,
    };
    let traced_ms: Vec<f64> = traced_runs.iter().map(|(ms, _)| *ms).collect();
    let adapted_ms: Vec<f64> = adapted_runs.iter().map(|(ms, _)| *ms).collect();
    let (untraced_s, traced_s, adapted_s) = (summary(&untraced), summary(&traced_ms), summary(&adapted_ms));
    let overhead = ratio(&traced_s, &untraced_s);
    let mut explanation = explanation(
        &target,
        &readiness,
        untraced_s.clone(),
        traced_s,
        overhead,
        traced_runs,
    )?;
    let adapters = adapters.unwrap_or_default();
    explanation.adapter_overhead = ratio(&adapted_s, &untraced_s);
    explanation.adapters = adapters.iter().map(|a| a.name().to_string()).collect();
    if let Some(median) = adapted_s.as_ref().map(|s| s.p50) {
        if let Some((_, run)) = adapted_runs
            .iter()
            .min_by(|a, b| (a.0 - median).abs().total_cmp(&(b.0 - median).abs()))
        {
            explanation.sources = run.sections(&adapters, Some(&explanation.trace));
        }
    }
    explanation.adapted_ms = adapted_s;
    if let Some(p) = &args.export_json {
        report::write_export(p, (serde_json::to_string_pretty(&explanation)? + "\n").as_bytes())?;
    }
    if let Some(p) = &args.export_trace {
        let doc = report::chrome_trace::to_chrome_trace(
            &explanation.trace,
            &explanation.timeline,
            &explanation.sources,
        );
        report::write_export(p, serde_json::to_string(&doc)?.as_bytes())?;
    }
    // Printed last: exports survive a reader that closes stdout early.
    crate::out::out!("{}", report::explain::render(&explanation))?;
    Ok(0)
}

/// The adapters for `spec`, detected from the program that finally ran in `trace`.
fn choose_adapters(spec: &str, trace: &Trace) -> Result<Vec<Box<dyn Adapter>>> {
    adapter::select(spec, FinalExec::of(trace).as_ref())
}
