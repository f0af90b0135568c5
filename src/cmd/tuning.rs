//! A tune's experiments recorded as bench's are, and its table printed and
//! exported: what `coldstart tune` and `coldstart lambda --tune` share once
//! their options are checked (they differ in where the runs happen).

use crate::session;
use anyhow::Result;
use coldstart_core::analysis::Analysis;
use coldstart_core::experiment::{ExperimentResult, Plan, Runner};
use coldstart_core::launch::signals;
use coldstart_core::out;
use coldstart_report::tuned;
use coldstart_report::{export::Exports, json::Settings};
use coldstart_tune::catalogue::Candidate;
use coldstart_tune::exec::Executor;
use coldstart_tune::report;
use coldstart_tune::session::{self as tuning, Found, Options};
use coldstart_tune::stored::TuneSettings;

/// Where the experiments and the table go.
pub struct Outputs {
    pub store: Option<String>,
    pub quiet: bool,
    pub noise: f64,
    pub exports: Exports,
}

/// Measure `chosen` with `exec`, record each experiment (its plan first passed
/// to `relabel`), then print and export the table (its baseline named
/// `baseline` when given, else by its command); the exit code.
pub fn run(
    opts: &Options,
    found: &Found,
    chosen: &[&Candidate],
    exec: &dyn Executor,
    outputs: &Outputs,
    baseline: Option<String>,
    relabel: impl Fn(&mut Plan),
) -> Result<i32> {
    let recording = session::Outputs {
        store: outputs.store.clone(),
        quiet: outputs.quiet,
        noise: outputs.noise,
        exports: Default::default(),
        fleet: None,
    };
    let mut record = |plan: &Plan, tune: TuneSettings, runner: &mut dyn Runner| -> Result<Measured> {
        let mut plan = plan.clone();
        relabel(&mut plan);
        let mut settings = session::settings(&plan, (&opts.run).into(), recording.noise);
        settings.of_kind.tune = Some(tune);
        let (m, store_error) = session::run(
            &plan,
            coldstart_core::experiment::Kind::Tune,
            &settings,
            &recording,
            runner,
        )?;
        if let Some(e) = store_error {
            return Err(e.context("the runs were measured, but storing them failed"));
        }
        Ok(Measured { m, settings })
    };
    let outcome = tuning::run(opts, found, chosen, exec, &mut record)?;
    let (mut tuned, experiments) = (outcome.tuned, outcome.experiments);
    if let Some(b) = baseline {
        tuned.baseline = b;
    }
    let exports = &outputs.exports;
    let exported = (|| -> Result<()> {
        if let Some(p) = &exports.json {
            coldstart_report::export::write(p, &report::json(&tuned)?)?;
        }
        if let Some(p) = &exports.markdown {
            coldstart_report::export::write(p, tuned::markdown(&tuned).as_bytes())?;
        }
        if exports.html.is_some() {
            write_html(exports, &experiments)?;
        }
        Ok(())
    })();
    if let Err(e) = exported {
        // The runs are measured and stored: say where, so nothing is lost.
        let ids: Vec<String> = experiments
            .iter()
            .filter_map(|m| m.m.stored_as.as_ref().map(|(id, _)| id.to_string()))
            .collect();
        return Err(match ids.as_slice() {
            [] => e,
            _ => anyhow::anyhow!(
                "{e:#}; the runs are stored as experiment {}: `coldstart show {}` draws the table again",
                ids.join(" and "),
                ids[ids.len() - 1]
            ),
        });
    }
    out::out!("{}", tuned::terminal(&tuned))?;
    // One line, however many experiments tune ran on the busy machine.
    if let Some(w) = experiments
        .iter()
        .find_map(|m| m.m.result.load.as_ref().and_then(|l| l.warning()))
    {
        out::errln!("{w}");
    }
    for (id, location) in experiments.iter().filter_map(|m| m.m.stored_as.as_ref()) {
        out::outln!("stored as experiment {id} in {location}")?;
    }
    Ok(if tuned.interrupted {
        signals::exit_code()
    } else {
        0
    })
}

/// coldstart.toml's [tune] catalogue first: `extra` files (--catalogue) override it.
pub fn catalogues(
    cfg: Option<&coldstart_core::config::Config>,
    root: &std::path::Path,
    extra: &[std::path::PathBuf],
) -> Vec<std::path::PathBuf> {
    let mut user: Vec<std::path::PathBuf> = cfg
        .and_then(|c| c.tune.as_ref())
        .map(|t| root.join(&t.catalogue))
        .into_iter()
        .collect();
    user.extend(extra.iter().cloned());
    user
}

/// An experiment as the session recorded it, with the settings its HTML shows.
struct Measured {
    m: session::Measured,
    settings: Settings,
}

impl tuning::Recorded for Measured {
    fn result(&self) -> &ExperimentResult {
        &self.m.result
    }

    fn analysis(&mut self) -> &mut Analysis {
        &mut self.m.analysis
    }

    fn stored_id(&self) -> Option<i64> {
        self.m.stored_as.as_ref().map(|(id, _)| *id)
    }
}

/// `--export-html`: each experiment tune ran (the candidates, then the
/// recommended set), with its table.
fn write_html(exports: &Exports, experiments: &[Measured]) -> Result<()> {
    let meta = coldstart_core::store::meta::collect();
    let report = coldstart_report::html::Report {
        title: "coldstart tune".to_string(),
        experiments: experiments
            .iter()
            .map(|e| coldstart_report::html::Experiment {
                heading: match &e.m.stored_as {
                    Some((id, _)) => format!("Experiment {id}"),
                    None => "This run (not stored)".to_string(),
                },
                id: e.m.stored_as.as_ref().map(|(id, _)| *id),
                created_unix_s: None,
                meta: Some(&meta),
                settings: Some(&e.settings),
                result: &e.m.result,
                analysis: &e.m.analysis,
                explanation: None,
                tuned: e.settings.of_kind.tune.as_ref().and_then(|t| {
                    coldstart_tune::stored::tuned(t, &e.m.result, &e.m.analysis, e.settings.noise)
                }),
            })
            .collect(),
        history: Vec::new(),
        gate: None,
    };
    exports.write_html(&report)
}
