//! The `tune` command: arguments → checked options → the tune session
//! (`tune::session`: the runtime and its catalogue, then the candidates
//! measured against the baseline, and the winners together) → the table
//! printed and exported, each experiment recorded as bench's are.

use crate::flags::TuneArgs;
use anyhow::{bail, Result};
use coldstart_core::bounds;
use coldstart_core::config;
use coldstart_core::out;
use coldstart_core::run::{RunOptions, Spec};
use coldstart_core::target::{parse_env, Readiness, Target};
use coldstart_report::export::Exports;
use coldstart_tune::session::{self as tuning, Options};
use coldstart_tune::show::list;

pub fn run(args: &TuneArgs) -> Result<i32> {
    let (opts, exports, store) = options(args)?;
    let found = tuning::find(&opts)?;
    let chosen = found.chosen(&opts)?;
    if args.list {
        out::out!("{}", list(&found.runtime, &chosen))?;
        return Ok(0);
    }
    let outputs = super::tuning::Outputs {
        store,
        quiet: args.quiet,
        noise: args.noise.noise,
        exports,
    };
    super::tuning::run(
        &opts,
        &found,
        &chosen,
        &coldstart_tune::exec::Local,
        &outputs,
        None,
        |_| {},
    )
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
        catalogues: super::tuning::catalogues(cfg.as_ref(), &root, &args.catalogue),
        only: args.only.clone(),
        skip: args.skip.clone(),
        min_runs: args.min_runs,
        max_runs: args.max_runs,
        runs_flag: "--max-runs",
        warmup: args.warmup,
        budget: args.budget,
        target_ci,
        seed: args
            .seed
            .unwrap_or_else(|| coldstart_core::clock::now_ns() ^ u64::from(std::process::id())),
        noise: args.noise.noise,
        quiet: args.quiet,
    };
    Ok((opts, exports, store))
}
