//! The `tune` command: arguments → checked options → the tune session
//! (`tune::session`: the runtime and its catalogue, then the candidates
//! measured against the baseline, and the winners together) → the table
//! printed and exported, each experiment recorded as bench's are.

use crate::analysis::Analysis;
use crate::bounds;
use crate::config;
use crate::experiment::{ExperimentResult, Plan, Runner};
use crate::flags::TuneArgs;
use crate::launch::signals;
use crate::out;
use crate::report::{export::Exports, json::Settings};
use crate::run::{RunOptions, Spec};
use crate::session;
use crate::target::{parse_env, Readiness, Target};
use crate::tune::report;
use crate::tune::session::{self as tuning, Options};
use crate::tune::show::list;
use crate::tune::stored::TuneSettings;
use crate::tuned;
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

pub fn run(args: &TuneArgs) -> Result<i32> {
    let (opts, exports, store) = options(args)?;
    let found = tuning::find(&opts)?;
    let chosen = found.chosen(&opts)?;
    if args.list {
        out::out!("{}", list(&found.runtime, &chosen))?;
        return Ok(0);
    }
    let outputs = session::Outputs {
        store,
        quiet: args.quiet,
        noise: args.noise.noise,
        exports: Default::default(),
        fleet: None,
    };
    let mut record = |plan: &Plan, tune: TuneSettings, runner: &mut dyn Runner| -> Result<Measured> {
        let mut settings = session::settings(plan, (&opts.run).into(), outputs.noise);
        settings.of_kind.tune = Some(tune);
        let (m, store_error) =
            session::run(plan, crate::experiment::Kind::Tune, &settings, &outputs, runner)?;
        if let Some(e) = store_error {
            return Err(e.context("the runs were measured, but storing them failed"));
        }
        Ok(Measured { m, settings })
    };
    let outcome = tuning::run(&opts, &found, &chosen, &mut record)?;
    let (tuned, experiments) = (outcome.tuned, outcome.experiments);
    if let Some(p) = &args.export_json {
        crate::report::export::write(p, &report::json(&tuned)?)?;
    }
    if let Some(p) = &args.export_markdown {
        crate::report::export::write(p, tuned::markdown(&tuned).as_bytes())?;
    }
    if args.export_html.is_some() {
        write_html(&exports, &experiments)?;
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

/// The arguments checked, in the order their mistakes are reported; the store
/// the experiments go to.
fn options(args: &TuneArgs) -> Result<(Options, Exports, Option<String>)> {
    if args.command.is_empty() {
        bail!("no command to tune: put it after `--`, e.g. `coldstart tune --ready exit -- python3 app.py`");
    }
    let env = args
        .env
        .iter()
        .map(|e| parse_env(e))
        .collect::<Result<Vec<_>>>()?;
    let target = Target::new(args.command.clone(), env, args.cwd.clone())?;
    let readiness = Readiness::parse(&args.ready)?;
    let timeout = bounds::seconds("--timeout", args.timeout, false)?;
    bounds::runs("--max-runs", args.max_runs, 2)?;
    if args.min_runs < 2 || args.min_runs > args.max_runs {
        bail!(
            "--min-runs must be at least 2 and at most --max-runs ({})",
            args.max_runs
        );
    }
    if !(args.budget.is_finite() && args.budget > 0.0) {
        bail!("--budget must be a positive number of seconds");
    }
    let target_ci = bounds::target_ci(&args.target_ci)?;
    bounds::count("--requests", args.requests, 0, bounds::MAX_REQUESTS)?;
    // As bench and explain: the readiness URL is the default, and the probe has just
    // warmed it, so a lazily built page shows only with --request-url.
    let run = RunOptions::new(timeout).requests(args.requests, args.request_url.as_deref())?;
    if run.lacks_url(&readiness) {
        bail!("--requests needs a URL: use http readiness or give --request-url http://127.0.0.1:PORT/");
    }
    let exports = Exports {
        json: args.export_json.clone(),
        markdown: args.export_markdown.clone(),
        csv: None,
        trace: None,
        html: args.export_html.clone(),
    };
    exports.check()?;
    // Before the traced run: a mistyped path should not cost a run first.
    if let Some(p) = args.catalogue.iter().find(|p| !p.exists()) {
        bail!(
            "--catalogue {}: no such file or directory (give a TOML file or a directory of them)",
            p.display()
        );
    }
    let root = config::project_root();
    let cfg = config::load(&root)?;
    let store =
        (!args.no_store).then(|| config::store_spec(args.store.store.as_deref(), cfg.as_ref(), &root));
    let opts = Options {
        base: Spec { target, readiness },
        run,
        runtime: args.runtime.clone(),
        catalogues: catalogues(args, cfg.as_ref(), &root),
        only: args.only.clone(),
        skip: args.skip.clone(),
        min_runs: args.min_runs,
        max_runs: args.max_runs,
        warmup: args.warmup,
        budget: args.budget,
        target_ci,
        seed: args
            .seed
            .unwrap_or_else(|| crate::clock::now_ns() ^ u64::from(std::process::id())),
        noise: args.noise.noise,
        quiet: args.quiet,
    };
    Ok((opts, exports, store))
}

/// coldstart.toml's [tune] catalogue first: --catalogue files override it.
fn catalogues(args: &TuneArgs, cfg: Option<&config::Config>, root: &Path) -> Vec<PathBuf> {
    let mut user: Vec<PathBuf> = cfg
        .and_then(|c| c.tune.as_ref())
        .map(|t| root.join(&t.catalogue))
        .into_iter()
        .collect();
    user.extend(args.catalogue.iter().cloned());
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
    let meta = crate::store::meta::collect();
    let report = crate::report::html::Report {
        title: "coldstart tune".to_string(),
        experiments: experiments
            .iter()
            .map(|e| crate::report::html::Experiment {
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
                    crate::tune::stored::tuned(t, &e.m.result, &e.m.analysis, e.settings.noise)
                }),
            })
            .collect(),
        history: Vec::new(),
        gate: None,
    };
    exports.write_html(&report)
}
