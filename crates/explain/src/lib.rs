//! `coldstart explain`: where a cold start's time goes. An experiment of three
//! arms (untraced, traced, adapted; interleaved by the scheduler); the timeline
//! of the median traced run from the syscall tracer, phases, blame, files,
//! network and processes, the runtime's own sections from an adapted run, and
//! the overheads (traced ÷ untraced, adapted ÷ untraced) with 95 % CIs.

#[cfg(test)]
use coldstart_testkit as testkit;

pub mod adapted;
pub mod adapter;
pub mod attribution;
pub mod estimate;
pub mod headline;
pub mod otlp;
pub mod requests;
pub mod session;
pub mod timeline;

use crate::timeline::Timeline;
use adapted::AdaptedRun;
use adapter::{Adapter, FinalExec};
use anyhow::{bail, Result};
use coldstart_core::experiment::ExperimentResult;
use coldstart_core::run::{RunId, RunOptions};
use coldstart_core::sample::Section;
use coldstart_core::stats::{Ratio, Summary};
use coldstart_core::target::{Readiness, Target};
use coldstart_core::trace::Trace;
use serde::{Deserialize, Serialize};

// The arms' names are the store's too (it tells an explain by them).
pub use coldstart_core::experiment::arms::{is_arms, ARMS, PROFILED_ARM};
pub const PROFILED: usize = 3;
pub const UNTRACED: usize = 0;
pub const TRACED: usize = 1;
pub const ADAPTED: usize = 2;

/// The explanation document's schema. 3: sections' facts, table cells, span
/// arguments and notes carry numbers with their unit (`{"ns": 456000}`); /2 documents
/// (every value text) still load, their values as text.
pub const SCHEMA: &str = "coldstart.explain/3";

/// The confidence of the overheads' intervals.
pub const CONFIDENCE: f64 = 0.95;

#[derive(Debug, Serialize, Deserialize)]
pub struct Explanation {
    pub schema: String,
    pub command: String,
    pub readiness: String,
    pub untraced_ms: Option<Summary>,
    pub traced_ms: Option<Summary>,
    /// Traced ÷ untraced ready time: the Hodges–Lehmann ratio (the median of
    /// all pairwise ratios; with one run each, the plain ratio).
    pub overhead: Option<f64>,
    /// Its 95 % CI (Moses, on log times); null when too few runs for one.
    #[serde(default)]
    pub overhead_ci: Option<(f64, f64)>,
    /// The traced run shown: its ready time (ms since spawn).
    pub ready_ms: f64,
    pub timeline: Timeline,
    /// Adapted runs (adapters' switches on, untraced): their ready times, and
    /// adapted ÷ untraced (as `overhead`), the adapters' own cost.
    pub adapted_ms: Option<Summary>,
    pub adapter_overhead: Option<f64>,
    #[serde(default)]
    pub adapter_overhead_ci: Option<(f64, f64)>,
    /// The adapters used (auto-detected or chosen with --adapter).
    pub adapters: Vec<String>,
    /// One section per source inside the runtime, from the adapted run nearest
    /// the adapted median; times count from that run's spawn.
    pub sources: Vec<Section>,
    pub warnings: Vec<String>,
    /// Whether the adapted runs had the OTLP receiver (`--no-otlp` turns it off).
    #[serde(default = "otlp_default")]
    pub otlp: bool,
    /// The startup CPU profile (`--profile`): every profiled run's samples, per phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<coldstart_core::profile::Profile>,
    /// The raw events of the run shown (for the Chrome trace; not in the JSON,
    /// so not in the store either: an explanation loaded back has none).
    #[serde(skip)]
    pub trace: Option<Trace>,
    /// Untraced estimates of the traced figures (explain calibrates the
    /// tracer; `bench --explain` and explanations stored before: none).
    #[serde(default)]
    pub estimate: Option<estimate::Estimate>,
    /// The regular files the run shown opened (successfully), sorted: what
    /// explain A vs B names when only one build opens a file.
    #[serde(default)]
    pub opened_files: Vec<String>,
    /// At most three costs to act on, largest first, each pointing to the
    /// section that shows it (explanations stored before: none).
    #[serde(default)]
    pub headline: Option<headline::Headline>,
}

/// The explanation of the traced run nearest the traced median.
pub fn explanation(
    target: &Target,
    readiness: &impl std::fmt::Display,
    untraced_ms: Option<Summary>,
    traced_ms: Option<Summary>,
    overhead: Option<Ratio>,
    traced_runs: Vec<(f64, Trace)>,
) -> Result<Explanation> {
    let median = traced_ms.as_ref().map_or(0.0, |s| s.p50);
    let Some((ready_ms, trace)) = traced_runs
        .into_iter()
        .min_by(|a, b| (a.0 - median).abs().total_cmp(&(b.0 - median).abs()))
    else {
        bail!("no traced run")
    };
    let hint = timeline::ServiceHint::parse(&readiness.to_string());
    let mut timeline = timeline::build_for(&trace, hint);
    timeline::add_ready_phases(&mut timeline, &trace, (ready_ms * 1e6) as u64);
    let opened_files = attribution::opened_files(&trace);
    Ok(Explanation {
        schema: SCHEMA.into(),
        command: target.display_command(),
        readiness: readiness.to_string(),
        untraced_ms,
        traced_ms,
        overhead: overhead.as_ref().map(|r| r.estimate),
        overhead_ci: overhead.and_then(|r| r.ci),
        ready_ms,
        adapted_ms: None,
        adapter_overhead: None,
        adapter_overhead_ci: None,
        adapters: Vec::new(),
        otlp: true,
        profile: None,
        sources: Vec::new(),
        warnings: trace.warnings.clone(),
        timeline,
        trace: Some(trace),
        estimate: None,
        opened_files,
        headline: None,
    })
}

/// The explanation of a finished explain experiment (variants in [`ARMS`]
/// order): summaries and overheads from every measured run, the timeline of
/// the traced run nearest the traced median (its trace is taken out of
/// `result`), and the sections of the adapted run nearest the adapted median
/// (`adapted`: the measured adapted runs, their files still on disk).
pub fn from_experiment(
    result: &mut ExperimentResult,
    adapted: &[AdaptedRun],
    adapters: &[Box<dyn Adapter>],
    calibration: Option<&estimate::Calibration>,
    requests: usize,
) -> Result<Explanation> {
    let Some(v) = result.variants.get(UNTRACED) else {
        bail!("an explain experiment without arms")
    };
    let (target, readiness) = (v.target.clone(), v.readiness.clone());
    let ms = |v: usize| result.ready_ms(v);
    let summary = |xs: &[f64]| {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        coldstart_core::stats::summarize(&v)
    };
    let (untraced, traced, adapted_ms) = (ms(UNTRACED), ms(TRACED), ms(ADAPTED));
    // The estimates need the traces, which the explanation takes out below.
    let runs = calibration.map(|c| estimate::run_estimates(result, TRACED, requests, c));
    let traced_runs: Vec<(f64, Trace)> = result
        .samples
        .iter_mut()
        .filter(|s| s.variant == TRACED && !s.warmup && s.ok())
        .filter_map(|s| Some((s.ready_ns? as f64 / 1e6, *s.trace.take()?)))
        .collect();
    let mut e = explanation(
        &target,
        &readiness,
        summary(&untraced),
        summary(&traced),
        coldstart_core::stats::ratio(&untraced, &traced, CONFIDENCE),
        traced_runs,
    )?;
    if let Some(trace) = e.trace.as_ref() {
        let ready_ns = (e.ready_ms * 1e6) as u64;
        e.timeline
            .phases
            .extend(requests::phases(trace, ready_ns, requests));
    }
    let adapter_overhead = coldstart_core::stats::ratio(&untraced, &adapted_ms, CONFIDENCE);
    e.adapter_overhead = adapter_overhead.as_ref().map(|r| r.estimate);
    e.adapter_overhead_ci = adapter_overhead.and_then(|r| r.ci);
    if let (Some(cal), Some(runs), Some(trace)) = (calibration, runs, e.trace.as_ref()) {
        e.estimate = Some(estimate::estimate(
            trace,
            &e.timeline,
            e.ready_ms,
            runs,
            &untraced,
            cal,
        ));
    }
    e.adapters = adapters.iter().map(|a| a.name().to_string()).collect();
    e.adapted_ms = summary(&adapted_ms);
    if let Some(median) = e.adapted_ms.as_ref().map(|s| s.p50) {
        let ready = |a: &AdaptedRun| a.sample.ready_ns.unwrap_or(0) as f64 / 1e6;
        if let Some(run) = adapted
            .iter()
            .filter(|a| a.sample.ok())
            .min_by(|a, b| (ready(a) - median).abs().total_cmp(&(ready(b) - median).abs()))
        {
            e.sources = run.sections(adapters, e.trace.as_ref());
        }
    }
    e.headline = Some(headline::build(&e));
    Ok(e)
}

/// `bench --explain`: after a variant's timed runs, one traced run (the
/// timeline) and one adapted run (the sections of its auto-detected adapter,
/// checkpoints and OpenTelemetry spans). One run each: no overheads measured.
pub fn once(target: &Target, readiness: &Readiness, opts: &RunOptions) -> Result<Explanation> {
    let (ready_ns, trace) = traced_run(target, readiness, opts, 0)?;
    let adapters = choose_adapters_for("auto", &trace, readiness)?;
    let ms = ready_ns as f64 / 1e6;
    let traced = coldstart_core::stats::summarize(&[ms]);
    let mut e = explanation(target, readiness, None, traced, None, vec![(ms, trace)])?;
    let id = RunId {
        variant: 0,
        round: 0,
        warmup: false,
    };
    let a = adapted::run(target, readiness, opts, &adapters, true, id)?;
    if a.sample.ok() {
        e.adapters = adapters.iter().map(|a| a.name().to_string()).collect();
        e.sources = a.sections(&adapters, e.trace.as_ref());
    } else {
        e.warnings.push(format!(
            "the adapted run failed, so no sections: {}",
            coldstart_core::sample::describe_failure("adapted", &a.sample)
        ));
    }
    e.headline = Some(headline::build(&e));
    Ok(e)
}

/// One traced run that must become ready: its ready time (ns since spawn) and trace.
pub fn traced_run(
    target: &Target,
    readiness: &Readiness,
    opts: &RunOptions,
    round: usize,
) -> Result<(u64, Trace)> {
    let id = RunId {
        variant: 0,
        round,
        warmup: false,
    };
    let mut s = coldstart_core::run::run_traced(target, readiness, opts, id)?;
    match (s.ready_ns, s.trace.take()) {
        (Some(ns), Some(trace)) if s.ok() => Ok((ns, *trace)),
        _ => bail!(
            "{} (under the tracer)",
            coldstart_core::sample::describe_failure("traced", &s)
        ),
    }
}

/// The adapters for `spec`, detected from the program that finally ran in
/// `trace`'s root process. Prefer [`choose_adapters_for`], which knows the probe.
pub fn choose_adapters(spec: &str, trace: &Trace) -> Result<Vec<Box<dyn Adapter>>> {
    adapter::select(spec, FinalExec::of(trace).as_ref())
}

/// The adapters for `spec`, detected from the service process's final program
/// (the process the probe talks to; past a shell that forked and waited on
/// it): a start script that forks a BEAM or a JVM gets that runtime's adapter.
pub fn choose_adapters_for(
    spec: &str,
    trace: &Trace,
    readiness: &Readiness,
) -> Result<Vec<Box<dyn Adapter>>> {
    let tl = timeline::build_for(trace, timeline::ServiceHint::of(readiness));
    let pid = timeline::past_shells(&tl.processes, tl.service.pid);
    let exec = FinalExec::of_pid(trace, pid).or_else(|| FinalExec::of(trace));
    adapter::select(spec, exec.as_ref())
}

/// Explanations stored before the field existed always had the receiver.
fn otlp_default() -> bool {
    true
}

#[cfg(test)]
mod arms_tests {
    use super::*;

    #[test]
    fn an_explain_has_three_arms_or_four_with_the_profile() {
        assert!(is_arms(ARMS));
        assert!(is_arms(["untraced", "traced", "adapted", "profiled"]));
        assert!(!is_arms(["untraced", "traced"]));
        assert!(!is_arms(["untraced", "traced", "adapted", "other"]));
        assert!(!is_arms(["profiled", "untraced", "traced", "adapted"]));
    }
}
