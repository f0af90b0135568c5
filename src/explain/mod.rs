//! `coldstart explain`: where a cold start's time goes. Runs the target untraced
//! and traced (interleaved), builds the timeline of the median traced run from
//! the syscall tracer, and reports phases, blame, files, network and processes,
//! plus the tracer's own overhead (traced ÷ untraced ready time).

pub mod adapted;
pub mod adapter;
pub mod otlp;

use crate::run::{RunId, RunOptions};
use crate::sample::Section;
use crate::stats::{self, Summary};
use crate::target::{Readiness, Target};
use crate::timeline::{self, Timeline};
use crate::trace::Trace;
use adapter::{Adapter, FinalExec};
use anyhow::{bail, Result};
use serde::Serialize;

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
pub fn once(target: &Target, readiness: &Readiness, opts: &RunOptions) -> Result<Explanation> {
    let (ready_ns, trace) = traced_run(target, readiness, opts, 0)?;
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
            crate::sample::describe_failure("adapted", &a.sample)
        ));
    }
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
    let mut s = crate::run::run_traced(target, readiness, opts, id)?;
    match (s.ready_ns, s.trace.take()) {
        (Some(ns), Some(trace)) if s.ok() => Ok((ns, *trace)),
        _ => bail!(
            "{} (under the tracer)",
            crate::sample::describe_failure("traced", &s)
        ),
    }
}

/// The adapters for `spec`, detected from the program that finally ran in `trace`.
pub fn choose_adapters(spec: &str, trace: &Trace) -> Result<Vec<Box<dyn Adapter>>> {
    adapter::select(spec, FinalExec::of(trace).as_ref())
}
