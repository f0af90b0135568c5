//! `coldstart explain`: arguments → checked options → the explain session
//! (`explain::session`: calibration, the arms, the explanations, stored beside
//! the runs) → the explanation exported and printed.

use crate::flags::ExplainArgs;
use crate::session::{Measured, Outputs};
use anyhow::{bail, Context, Result};
use coldstart_core::config;
use coldstart_core::experiment::ExperimentResult;
use coldstart_core::out;
use coldstart_core::run::RunOptions;
use coldstart_core::sample::ExitPolicy;
use coldstart_core::store::Store;
use coldstart_core::target::{parse_env, Readiness, Target};
use coldstart_explain::adapter;
use coldstart_explain::session::{self, BuildSpec, Explained, Options, Outcome};
use coldstart_report::{export::Exports, json::Settings};

pub fn run(args: &ExplainArgs) -> Result<i32> {
    let (opts, exports, store) = options(args)?;
    let outputs = Outputs {
        store,
        quiet: args.quiet,
        noise: coldstart_core::stats::DEFAULT_NOISE,
        // The experiment's own formats are `show`'s; explain writes its explanation.
        exports: Exports::default(),
        fleet: None,
    };
    let outcome = session::run(&opts, |plan, runner| {
        let settings = crate::session::settings(plan, (&opts.run).into(), outputs.noise);
        let (m, store_error) = crate::session::run(
            plan,
            coldstart_core::experiment::Kind::Explain,
            &settings,
            &outputs,
            runner,
        )?;
        Ok(Recorded {
            m,
            settings,
            store_error,
            store: outputs.store.clone(),
        })
    })?;
    match outcome {
        Outcome::Interrupted(recorded) => {
            if let Some((id, at)) = recorded.as_ref().and_then(|r| r.m.stored_as.as_ref()) {
                out::errln!("coldstart: interrupted; the runs so far are stored as experiment {id} in {at}");
            }
            Ok(130)
        }
        Outcome::Failed {
            recorded,
            arm,
            adapters_suspect,
        } => {
            let hint = if adapters_suspect {
                " (it had the adapters' switches on: try --adapter none)"
            } else {
                ""
            };
            let stored = recorded
                .m
                .stored_as
                .as_ref()
                .map(|(id, at)| format!("; its runs are stored as experiment {id} in {at}"))
                .unwrap_or_default();
            // A run that failed is the target's outcome, not bad input: exit 1, as bench.
            out::errln!("coldstart: the explain stopped: {arm} run failed, as shown above{hint}{stored}");
            Ok(1)
        }
        Outcome::Explained(explained) => finish(args, &exports, *explained),
    }
}

/// The experiment as the session recorded it, with what explain's exports need.
struct Recorded {
    m: Measured,
    settings: Settings,
    store_error: Option<anyhow::Error>,
    /// Where the runs went (when stored).
    store: Option<String>,
}

impl session::Recorded for Recorded {
    fn result(&mut self) -> &mut ExperimentResult {
        &mut self.m.result
    }

    fn add_explanation(&mut self, json: &str) -> Result<()> {
        let (Some((id, location)), Some(spec)) = (&self.m.stored_as, &self.store) else {
            return Ok(());
        };
        Store::open(spec)
            .and_then(|mut s| s.add_explanation(*id, json))
            .with_context(|| format!("the runs are stored as experiment {id} in {location}"))
    }
}

/// The arguments checked, in the order their mistakes are reported; the store
/// the runs go to.
fn options(args: &ExplainArgs) -> Result<(Options, Exports, Option<String>)> {
    let builds = builds(args)?;
    let exports = Exports {
        json: args.export_json.clone(),
        trace: args.export_trace.clone(),
        html: args.export_html.clone(),
        ..Exports::default()
    };
    exports.check()?;
    coldstart_report::export::check(&[
        &args.export_flamegraph,
        &args.export_folded,
        &args.export_speedscope,
    ])?;
    let timeout = coldstart_core::bounds::seconds("--timeout", args.timeout, false)?;
    let runs = coldstart_core::bounds::runs("--runs", args.runs, 1)?;
    let warmup = coldstart_core::bounds::runs("--warmup", args.warmup, 0)?;
    coldstart_core::bounds::count(
        "--requests",
        args.requests,
        0,
        coldstart_core::bounds::MAX_REQUESTS,
    )?;
    let run = RunOptions::new(timeout).requests(args.requests, args.request_url.as_deref())?;
    if builds.iter().any(|b| run.lacks_url(&b.readiness)) {
        bail!("--requests needs a URL: use http readiness or give --request-url http://127.0.0.1:PORT/");
    }
    let run = run.marks(&args.marks)?.exit_policy(ExitPolicy::from_flags(
        args.ignore_failure,
        args.success_exit_codes.as_deref(),
    )?);
    check_profile(args, &builds)?;
    // An unknown adapter name is refused now, not after the first runs.
    adapter::select(&args.adapter, None)?;
    let root = config::project_root();
    let cfg = config::load(&root)?;
    let opts = Options {
        builds,
        run,
        runs,
        warmup,
        seed: args
            .seed
            .unwrap_or_else(|| coldstart_core::clock::now_ns() ^ u64::from(std::process::id())),
        profile: args.profile,
        otlp: !args.no_otlp,
        adapter: args.adapter.clone(),
        class_depth: args.class_depth.map(|d| d as usize),
        quiet: args.quiet,
    };
    let store =
        (!args.no_store).then(|| config::store_spec(args.store.store.as_deref(), cfg.as_ref(), &root));
    Ok((opts, exports, store))
}

/// `--profile` refused now, not after the first runs, where it cannot work.
fn check_profile(args: &ExplainArgs, builds: &[BuildSpec]) -> Result<()> {
    if !args.profile {
        return Ok(());
    }
    if let Some(b) = builds.iter().find(|b| {
        matches!(b.readiness, Readiness::Listen)
            && coldstart_core::probe::listen::needs_tracer(&b.target.program)
    }) {
        // Its listen is seen only by the tracer, and a profiled run is a plain one.
        bail!(
            "--profile with --ready listen needs LD_PRELOAD, which {} (static, or Go) ignores: use --ready tcp:PORT or an http:// URL",
            b.target.program.display()
        );
    }
    coldstart_profile::Recorder::available().context(
        "--profile: the kernel refuses perf_event_open here (see /proc/sys/kernel/perf_event_paranoid; root or CAP_PERFMON works)",
    )?;
    Ok(())
}

/// The explanation exported, then printed; the command's exit code.
fn finish(args: &ExplainArgs, exports: &Exports, explained: Explained<Recorded>) -> Result<i32> {
    let Explained {
        recorded,
        explanations,
        attribution,
        json,
    } = explained;
    let text = match &attribution {
        Some(att) => format!(
            "{}\n{}\n{}",
            coldstart_report::explain::render(&explanations[0]),
            coldstart_report::explain::render(&explanations[1]),
            coldstart_report::explain_ab::render(att)
        ),
        None => coldstart_report::explain::render(&explanations[0]),
    };
    if let Some(p) = &exports.json {
        coldstart_report::write_export(p, json.as_bytes())?;
    }
    write_exports(args, exports, &recorded, explanations.first())?;
    // Printed last: exports survive a reader that closes stdout early.
    out::out!("{text}")?;
    let m = &recorded.m;
    // On stderr: the stored report (`show`) is what stdout printed.
    if let Some(w) = m.result.load.as_ref().and_then(|l| l.warning()) {
        out::errln!("{w}");
    }
    if let Some((id, location)) = &m.stored_as {
        out::outln!("stored as experiment {id} in {location}")?;
    }
    if let Some(e) = recorded.store_error {
        return Err(e.context("the runs were measured and printed, but storing them failed"));
    }
    Ok(0)
}

/// The trace, HTML and profile exports: of the first build in A vs B (one
/// file per export path; the attribution is in the text).
fn write_exports(
    args: &ExplainArgs,
    exports: &Exports,
    recorded: &Recorded,
    first: Option<&coldstart_explain::Explanation>,
) -> Result<()> {
    if let (Some(p), Some(e)) = (&exports.trace, first) {
        if let Some(trace) = &e.trace {
            let doc = coldstart_report::chrome_trace::to_chrome_trace(trace, &e.timeline, &e.sources);
            coldstart_report::write_export(p, serde_json::to_string(&doc)?.as_bytes())?;
        }
    }
    crate::session::write_html(exports, &recorded.m, &recorded.settings, first)?;
    if let Some((e, p)) = first.and_then(|e| Some((e, e.profile.as_ref()?))) {
        let r = &coldstart_core::profile::render::folded;
        if let Some(path) = &args.export_folded {
            coldstart_report::write_export(path, r(p).as_bytes())?;
        }
        if let Some(path) = &args.export_flamegraph {
            let svg = coldstart_core::profile::render::flamegraph(p, &e.command)?;
            coldstart_report::write_export(path, &svg)?;
        }
        if let Some(path) = &args.export_speedscope {
            let doc = coldstart_core::profile::render::speedscope(p, &e.command);
            coldstart_report::write_export(path, serde_json::to_string(&doc)?.as_bytes())?;
        }
    }
    Ok(())
}

/// The builds of the command line: one (`-- COMMAND`), or two for A vs B
/// (`--name A [--ready …] -- … --name B -- …`; options before the first
/// `--name` apply to both).
fn builds(args: &ExplainArgs) -> Result<Vec<BuildSpec>> {
    let global_env = args
        .env
        .iter()
        .map(|e| parse_env(e))
        .collect::<Result<Vec<_>>>()?;
    if args.variants.is_empty() {
        if args.command.is_empty() {
            bail!("no command to explain: put it after `--`, e.g. `coldstart explain --ready exit -- python3 -c pass`");
        }
        return Ok(vec![BuildSpec {
            name: args.command.join(" "),
            target: Target::new(args.command.clone(), global_env, args.cwd.clone())?
                .with_limits(args.limits.parse_over(&Default::default())?),
            readiness: Readiness::parse(args.ready.as_deref().unwrap_or("exit"))?,
        }]);
    }
    if args.variants.len() != 2 {
        bail!(
            "explain compares two builds: give exactly two `--name NAME -- COMMAND` (got {})",
            args.variants.len()
        );
    }
    let mut out: Vec<BuildSpec> = Vec::new();
    for v in &args.variants {
        let name = v.name.clone().unwrap_or_else(|| v.argv.join(" "));
        if v.args.container.image.is_some() {
            bail!("explain cannot trace inside a container yet: measure the image with `coldstart bench --image`");
        }
        if out.iter().any(|b| b.name == name) {
            bail!("two builds are named '{name}': give each its own --name");
        }
        let mut env = global_env.clone();
        env.extend(
            v.args
                .env
                .iter()
                .map(|e| parse_env(e))
                .collect::<Result<Vec<_>>>()?,
        );
        let cwd = v.args.cwd.clone().or_else(|| args.cwd.clone());
        let ready = v
            .args
            .ready
            .as_deref()
            .or(args.ready.as_deref())
            .unwrap_or("exit");
        out.push(BuildSpec {
            target: Target::new(v.argv.clone(), env, cwd)
                .with_context(|| format!("build '{name}'"))?
                .with_limits(v.args.limits.parse_over(&args.limits)?),
            readiness: Readiness::parse(ready).with_context(|| format!("build '{name}'"))?,
            name,
        });
    }
    Ok(out)
}
