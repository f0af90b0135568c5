//! A measuring session: what every command that runs an experiment shares.
//! The plan's runs are executed by the scheduler with a runner the command
//! gives; each finished run is committed to the store as it comes (one
//! transaction per run) while progress is shown; then analysis, exports and the
//! terminal report, in that order (exports survive a reader that closes stdout).

use anyhow::Result;
use coldstart_core::analysis::{analyze_sweep, Analysis};
use coldstart_core::experiment::{self, ExperimentResult, Kind, Observer, Plan, Runner, StopReason, Variant};
use coldstart_core::out;
use coldstart_core::sample::Sample;
use coldstart_core::store::{self, Store};
use coldstart_report::{export::Exports, json::Settings, progress::Progress};
use std::time::Duration;

/// Where a session's results go.
#[derive(Debug, Clone)]
pub struct Outputs {
    /// The store to record in (a path or a postgres:// URL); None: not stored.
    pub store: Option<String>,
    pub quiet: bool,
    /// The noise threshold of verdicts (a fraction of the baseline median).
    pub noise: f64,
    pub exports: Exports,
    /// The fleet experiment this process is a shard of (None: not sharded).
    pub fleet: Option<experiment::shard::Fleet>,
}

/// What a session measured, where it was stored, and its analysis.
pub struct Measured {
    pub result: ExperimentResult,
    pub analysis: Analysis,
    /// (experiment id, store location) when stored.
    pub stored_as: Option<(i64, String)>,
}

/// Execute `plan` with `runner`, recording every finished run, and analyse it.
/// A failure to store does not stop the measuring: it is returned after the
/// runs (with the results) so nothing measured is lost.
pub fn run(
    plan: &Plan,
    kind: Kind,
    settings: &Settings,
    outputs: &Outputs,
    runner: &mut dyn Runner,
) -> Result<(Measured, Option<anyhow::Error>)> {
    let store = match &outputs.store {
        None => None,
        Some(spec) => {
            let mut store = Store::open(spec)?;
            let meta = store::meta::collect();
            let id = match &outputs.fleet {
                None => store.begin(&meta, kind, settings, &plan.variants)?,
                Some(fleet) => {
                    let host = store::fleet::this_host(|k| std::env::var(k).ok());
                    let joined = store.begin_shard(&meta, kind, settings, &plan.variants, fleet, &host)?;
                    if !outputs.quiet {
                        out::err_line(&coldstart_report::fleet::joined(fleet, &joined, &store.location));
                    }
                    joined.experiment
                }
            };
            Some((store, id))
        }
    };
    runner.started(store.as_ref().map(|(_, id)| *id))?;
    let mut progress = Progress::new(outputs.quiet);
    let mut recorder = Recorder {
        progress: &mut progress,
        store,
        error: None,
        // The first reading of the machine's load, before the first run.
        load: Some(experiment::load::Watch::new()),
    };
    let executed = experiment::execute_with(plan, &mut recorder, runner);
    let (store, store_error) = (recorder.store.take(), recorder.error.take());
    let watch = recorder.load.take();
    progress.finish();
    let mut result = executed?;
    result.load = watch.and_then(|w| w.finish(&result));
    let mut stored_as = None;
    if let Some((mut store, id)) = store {
        // The scheduler always says why it stopped; without a reason the row stays
        // NULL, which reads back as "incomplete".
        if let Some(reason) = result.stopped {
            store.finish(id, reason, result.load.as_ref())?;
        }
        stored_as = Some((id, store.location.clone()));
    }
    let analysis = analyze_sweep(&result, outputs.noise, settings.sweep.as_ref());
    Ok((
        Measured {
            result,
            analysis,
            stored_as,
        },
        store_error,
    ))
}

/// bench's and lambda's tail: run, export, print the terminal report; the
/// command's exit code.
pub fn measure(
    plan: &Plan,
    kind: Kind,
    settings: &Settings,
    outputs: &Outputs,
    runner: &mut dyn Runner,
) -> Result<i32> {
    let (m, store_error) = run(plan, kind, settings, outputs, runner)?;
    outputs
        .exports
        .write_experiment(&m.result, &m.analysis, settings)
        .map_err(|e| match &m.stored_as {
            Some((id, location)) => {
                e.context(format!("the runs are stored as experiment {id} in {location}"))
            }
            None => e,
        })?;
    write_html(&outputs.exports, &m, settings, None)?;
    out::out!("{}", coldstart_report::terminal::render(&m.result, &m.analysis))?;
    if let Some((id, location)) = &m.stored_as {
        out::outln!("stored as experiment {id} in {location}")?;
    }
    if let Some(e) = store_error {
        return Err(e.context("the runs were measured and printed, but storing them failed"));
    }
    Ok(exit_code(&m.result))
}

/// The HTML report of a session just measured (when `--export-html` asked for one).
pub fn write_html(
    exports: &Exports,
    m: &Measured,
    settings: &Settings,
    explanation: Option<&coldstart_explain::Explanation>,
) -> Result<()> {
    if exports.html.is_none() {
        return Ok(());
    }
    let meta = store::meta::collect();
    let heading = match &m.stored_as {
        Some((id, _)) => format!("Experiment {id}"),
        None => "This run (not stored)".to_string(),
    };
    let report = coldstart_report::html::Report {
        title: format!("coldstart report: {heading}"),
        experiments: vec![coldstart_report::html::Experiment {
            heading,
            id: m.stored_as.as_ref().map(|(id, _)| *id),
            created_unix_s: None,
            meta: Some(&meta),
            settings: Some(settings),
            result: &m.result,
            analysis: &m.analysis,
            explanation,
            tuned: settings
                .of_kind
                .tune
                .as_ref()
                .and_then(|t| coldstart_tune::stored::tuned(t, &m.result, &m.analysis, settings.noise)),
        }],
        history: Vec::new(),
        gate: None,
    };
    exports.write_html(&report).map_err(|e| match &m.stored_as {
        Some((id, location)) => e.context(format!("the runs are stored as experiment {id} in {location}")),
        None => e,
    })
}

/// Progress on screen, and each finished run committed to the store.
struct Recorder<'a> {
    progress: &'a mut Progress,
    store: Option<(Store, i64)>,
    error: Option<anyhow::Error>,
    /// Readings of the machine's load between runs.
    load: Option<experiment::load::Watch>,
}

impl Observer for Recorder<'_> {
    fn planned(&mut self, total_runs: usize) {
        self.progress.planned(total_runs);
    }

    fn finished(&mut self, variant: &Variant, sample: &Sample) {
        // Between runs: this run is over, the next not started.
        if let Some(w) = self.load.as_mut() {
            w.read();
        }
        self.progress.finished(variant, sample);
        if let Some((store, id)) = self.store.as_mut() {
            if let Err(e) = store.add_sample(*id, sample) {
                // Keep measuring; the failure is reported (and fails the command) at the end.
                self.error = Some(e);
                self.store = None;
            }
        }
    }
}

/// 0 when every measured run succeeded (or failures were tolerated with
/// --keep-going and some runs succeeded); 1 on a stopping failure; 130 on interrupt.
pub fn exit_code(result: &ExperimentResult) -> i32 {
    match result.stopped {
        Some(StopReason::Interrupted) => 130,
        Some(StopReason::Failure) => 1,
        _ if (0..result.variants.len()).any(|v| result.ready_ms(v).is_empty()) => 1,
        _ => 0,
    }
}

/// The run settings an experiment records beside its plan: the runner's.
#[derive(Debug, Clone, Copy)]
pub struct RunSettings {
    pub timeout: Duration,
    pub poll_interval: Duration,
    pub requests: usize,
}

impl From<&coldstart_core::run::RunOptions> for RunSettings {
    fn from(o: &coldstart_core::run::RunOptions) -> Self {
        RunSettings {
            timeout: o.timeout,
            poll_interval: o.poll_interval,
            requests: o.requests,
        }
    }
}

/// The settings recorded with an experiment (and in its JSON export); the
/// command adds what its kind records (sweep, tune, lambda).
pub fn settings(plan: &Plan, run: RunSettings, noise: f64) -> Settings {
    Settings::new(
        plan,
        run.timeout,
        run.poll_interval,
        run.requests,
        noise,
        coldstart_report::json::KindSettings::default(),
    )
}
