//! `coldstart explain`: arguments → an experiment of three arms (untraced,
//! traced, adapted) run by the scheduler and recorded by the session → the
//! explanation, stored beside the runs, exported and printed.

use crate::config;
use crate::experiment::{ExperimentResult, Order, Plan, Runner, StopReason, StopRule, Variant};
use crate::explain::{
    self, adapted, adapter, attribution, estimate, otlp, ADAPTED, ARMS, PROFILED, PROFILED_ARM, TRACED,
    UNTRACED,
};
use crate::flags::ExplainArgs;
use crate::launch::signals;
use crate::out;
use crate::report::{self, export::Exports};
use crate::run::{run_once, run_profiled, run_traced, RunId, RunOptions};
use crate::sample::{ExitPolicy, Outcome, Sample};
use crate::session::{self, Outputs};
use crate::store::Store;
use crate::target::{parse_env, Readiness, Target};
use adapter::Adapter;
use anyhow::{bail, Context, Result};
use std::time::Duration;

pub fn run(args: &ExplainArgs) -> Result<i32> {
    let builds = builds(args)?;
    let exports = Exports {
        json: args.export_json.clone(),
        trace: args.export_trace.clone(),
        html: args.export_html.clone(),
        ..Exports::default()
    };
    exports.check()?;
    crate::report::export::check(&[
        &args.export_flamegraph,
        &args.export_folded,
        &args.export_speedscope,
    ])?;
    let timeout = crate::bounds::seconds("--timeout", args.timeout, false)?;
    let runs = crate::bounds::runs("--runs", args.runs, 1)?;
    let warmup = crate::bounds::runs("--warmup", args.warmup, 0)?;
    crate::bounds::count("--requests", args.requests, 0, crate::bounds::MAX_REQUESTS)?;
    let request_url = match &args.request_url {
        Some(u) => Some(url::Url::parse(u).map_err(|e| anyhow::anyhow!("bad --request-url '{u}': {e}"))?),
        None => None,
    };
    if args.requests > 0
        && request_url.is_none()
        && builds
            .iter()
            .any(|b| !matches!(b.readiness, Readiness::Http { .. }))
    {
        bail!("--requests needs a URL: use http readiness or give --request-url http://127.0.0.1:PORT/");
    }
    let opts = RunOptions {
        timeout,
        poll_interval: Duration::from_micros(200),
        requests: args.requests,
        request_url,
        grace: Duration::from_secs(2),
        tail_lines: 10,
        log_marks: args
            .marks
            .iter()
            .map(|m| crate::marks::parse_log_mark(m))
            .collect::<Result<_>>()?,
        claims: Vec::new(),
        exit_policy: ExitPolicy::from_flags(args.ignore_failure, args.success_exit_codes.as_deref())?,
        show_output: false,
    };
    if let Some(b) = builds.iter().find(|b| {
        args.profile
            && matches!(b.readiness, Readiness::Listen)
            && crate::probe::listen::needs_tracer(&b.target.program)
    }) {
        // Its listen is seen only by the tracer, and a profiled run is a plain one.
        bail!(
            "--profile with --ready listen needs LD_PRELOAD, which {} (static, or Go) ignores: use --ready tcp:PORT or an http:// URL",
            b.target.program.display()
        );
    }
    if args.profile {
        // Refused now, not after the first runs.
        coldstart_profile::Recorder::available().context(
            "--profile: the kernel refuses perf_event_open here (see /proc/sys/kernel/perf_event_paranoid; root or CAP_PERFMON works)",
        )?;
    }
    // An unknown adapter name is refused now, not after the first runs.
    adapter::select(&args.adapter, None)?;
    let root = config::project_root();
    let cfg = config::load(&root)?;
    let ab = builds.len() > 1;
    let plan = Plan {
        variants: builds
            .iter()
            .flat_map(|b| {
                ARMS.iter()
                    .chain(args.profile.then_some(&PROFILED_ARM))
                    .map(move |arm| Variant {
                        // One build keeps the arms' own names (what `compare` pairs).
                        name: if ab {
                            format!("{}/{arm}", b.name)
                        } else {
                            arm.to_string()
                        },
                        target: b.target.clone(),
                        readiness: b.readiness.to_string(),
                        params: Vec::new(),
                    })
            })
            .collect(),
        warmup,
        order: Order::Shuffled,
        stop: StopRule::Fixed { runs },
        keep_going: false,
        seed: args
            .seed
            .unwrap_or_else(|| crate::clock::now_ns() ^ u64::from(std::process::id())),
    };
    let outputs = Outputs {
        store: (!args.no_store).then(|| config::store_spec(args.store.store.as_deref(), cfg.as_ref(), &root)),
        quiet: args.quiet,
        noise: crate::stats::DEFAULT_NOISE,
        // The experiment's own formats are `show`'s; explain writes its explanation below.
        exports: Exports::default(),
    };
    let settings = session::settings(&plan, (&opts).into(), outputs.noise);
    // The untraced and traced runs export to a receiver too (one that keeps
    // nothing), so an app with an OpenTelemetry SDK behaves the same in every kind
    // of run instead of retrying a missing collector in all but the adapted ones.
    let sink = if args.no_otlp {
        None
    } else {
        Some(otlp::Receiver::sink().context("starting the OTLP receiver (--no-otlp runs without it)")?)
    };
    let mut builds = builds;
    if let Some(r) = &sink {
        for b in &mut builds {
            b.target.env.extend(r.env());
        }
    }
    if !args.quiet {
        out::errln!("coldstart explain: calibrating the tracer's cost per stop on this machine…");
    }
    let calibration = match estimate::calibrate(&opts, estimate::CALIBRATION_ROUNDS) {
        Ok(c) => c,
        // Ctrl-C during the calibration: nothing measured yet.
        Err(_) if signals::interrupted() => return Ok(130),
        Err(e) => return Err(e.context("calibrating the tracer (the untraced estimates need it)")),
    };
    if !args.quiet {
        let each = if ab { " per build" } else { "" };
        let profiled = if args.profile {
            format!(", {runs} profiled")
        } else {
            String::new()
        };
        out::errln!(
            "coldstart explain: {runs} untraced, {runs} traced{profiled} and {runs} adapted runs{each}, interleaved…"
        );
    }
    // The runtimes' perf-map switches, in the profiled runs only.
    for b in builds.iter_mut().filter(|_| args.profile) {
        let mut t = b.target.clone();
        t.env.extend(crate::profile::runtimes::env(&b.target.env));
        b.profiled_target = Some(t);
    }
    let per_build = ARMS.len() + usize::from(args.profile);
    let mut arms = Arms {
        args,
        opts,
        builds,
        per_build,
    };
    if args.adapter.trim() == "none" && !args.quiet {
        out::errln!("coldstart explain: adapters: none");
    }
    let (mut m, store_error) = session::run(
        &plan,
        crate::experiment::Kind::Explain,
        &settings,
        &outputs,
        &mut arms,
    )?;
    match m.result.stopped {
        Some(StopReason::Interrupted) => {
            if let Some((id, at)) = &m.stored_as {
                out::errln!("coldstart: interrupted; the runs so far are stored as experiment {id} in {at}");
            }
            return Ok(130);
        }
        Some(StopReason::Failure) => {
            let failed = m.result.samples.last().filter(|s| !s.ok());
            let arm = failed.map_or("a".to_string(), |s| plan.variants[s.variant].name.clone());
            // Blame the adapters' switches only when the plain program did start.
            let plain_ok = m
                .result
                .samples
                .iter()
                .any(|s| s.variant % per_build == UNTRACED && s.ok());
            let hint = if plain_ok && failed.is_some_and(|s| s.variant % per_build == ADAPTED) {
                " (it had the adapters' switches on: try --adapter none)"
            } else {
                ""
            };
            let stored = m
                .stored_as
                .as_ref()
                .map(|(id, at)| format!("; its runs are stored as experiment {id} in {at}"))
                .unwrap_or_default();
            // A run that failed is the target's outcome, not bad input: exit 1, as bench.
            out::errln!("coldstart: the explain stopped: {arm} run failed, as shown above{hint}{stored}");
            return Ok(1);
        }
        _ => {}
    }
    let per_build_arms = per_build;
    let mut per_build = split_by_build(&mut m.result, arms.builds.len(), per_build);
    let mut explanations = Vec::new();
    for (build, result) in arms.builds.iter_mut().zip(per_build.iter_mut()) {
        let adapters = build.adapters.take().unwrap_or_default();
        let mut e = explain::from_experiment(
            result,
            &build.adapted,
            &adapters,
            Some(&calibration),
            args.requests,
        )?;
        e.otlp = !args.no_otlp;
        if args.profile {
            let collector = std::mem::take(&mut build.profile);
            e.profile = profile(collector, &e, result);
        }
        explanations.push(e);
    }
    // The samples go back into the experiment (its HTML report draws them);
    // their traces are done with (the explanations hold what they need).
    for s in per_build.iter_mut().flat_map(|r| r.samples.iter_mut()) {
        s.trace = None;
    }
    m.result.samples = per_build
        .iter()
        .enumerate()
        .flat_map(|(b, r)| {
            r.samples.iter().map(move |s| {
                let mut s = s.clone();
                s.variant += b * per_build_arms;
                s
            })
        })
        .collect();
    let (json, text) = if let [ea, eb] = &explanations[..] {
        let (ua, ub) = (per_build[0].ready_ms(UNTRACED), per_build[1].ready_ms(UNTRACED));
        let side = |i: usize, untraced_ms, explanation| attribution::Side {
            name: &arms.builds[i].name,
            untraced_ms,
            explanation,
        };
        let att = attribution::attribute(&side(0, &ua, ea), &side(1, &ub, eb));
        let doc = serde_json::json!({
            "schema": attribution::SCHEMA,
            "attribution": att,
            "builds": { arms.builds[0].name.clone(): ea, arms.builds[1].name.clone(): eb },
        });
        let text = format!(
            "{}\n{}\n{}",
            report::explain::render(ea),
            report::explain::render(eb),
            report::explain_ab::render(&att)
        );
        (serde_json::to_string_pretty(&doc)? + "\n", text)
    } else {
        let e = &explanations[0];
        (
            serde_json::to_string_pretty(e)? + "\n",
            report::explain::render(e),
        )
    };
    if let (Some((id, location)), Some(spec)) = (&m.stored_as, &outputs.store) {
        Store::open(spec)
            .and_then(|mut s| s.add_explanation(*id, &json))
            .with_context(|| format!("the runs are stored as experiment {id} in {location}"))?;
    }
    if let Some(p) = &exports.json {
        report::write_export(p, json.as_bytes())?;
    }
    // A vs B: the first build's trace (one file per export path).
    if let (Some(p), Some(e)) = (&exports.trace, explanations.first()) {
        if let Some(trace) = &e.trace {
            let doc = report::chrome_trace::to_chrome_trace(trace, &e.timeline, &e.sources);
            report::write_export(p, serde_json::to_string(&doc)?.as_bytes())?;
        }
    }
    // A vs B: the HTML shows the first build's explanation (the attribution is in the text).
    crate::session::write_html(&exports, &m, &settings, explanations.first())?;
    // A vs B: the first build's profile (one file per export path).
    if let Some((e, p)) = explanations.first().and_then(|e| Some((e, e.profile.as_ref()?))) {
        let r = &crate::profile::render::folded;
        if let Some(path) = &args.export_folded {
            report::write_export(path, r(p).as_bytes())?;
        }
        if let Some(path) = &args.export_flamegraph {
            let svg = crate::profile::render::flamegraph(p, &e.command)?;
            report::write_export(path, &svg)?;
        }
        if let Some(path) = &args.export_speedscope {
            let doc = crate::profile::render::speedscope(p, &e.command);
            report::write_export(path, serde_json::to_string(&doc)?.as_bytes())?;
        }
    }
    // Printed last: exports survive a reader that closes stdout early.
    out::out!("{text}")?;
    // On stderr: the stored report (`show`) is what stdout printed.
    if let Some(w) = m.result.load.as_ref().and_then(|l| l.warning()) {
        out::errln!("{w}");
    }
    if let Some((id, location)) = &m.stored_as {
        out::outln!("stored as experiment {id} in {location}")?;
    }
    if let Some(e) = store_error {
        return Err(e.context("the runs were measured and printed, but storing them failed"));
    }
    Ok(0)
}

/// One build to explain: its name (`--name`, or the command), command and readiness.
struct Build {
    name: String,
    /// The command, with the OTLP receiver's environment when one runs.
    target: Target,
    readiness: Readiness,
    /// Chosen from its first traced run (`--adapter none`: none, at once).
    adapters: Option<Vec<Box<dyn Adapter>>>,
    /// The measured adapted runs, their adapters' files kept for the sections.
    adapted: Vec<adapted::AdaptedRun>,
    /// The command with the runtimes' perf-map switches (the profiled arm; set
    /// once the OTLP receiver's environment is in `target`).
    profiled_target: Option<Target>,
    /// The measured profiled runs' samples, named after each run.
    profile: crate::profile::Collector,
}

/// The builds of the command line: one (`-- COMMAND`), or two for A vs B
/// (`--name A [--ready …] -- … --name B -- …`; options before the first
/// `--name` apply to both).
fn builds(args: &ExplainArgs) -> Result<Vec<Build>> {
    let global_env = args
        .env
        .iter()
        .map(|e| parse_env(e))
        .collect::<Result<Vec<_>>>()?;
    let adapters = (args.adapter.trim() == "none").then(Vec::new);
    if args.variants.is_empty() {
        if args.command.is_empty() {
            bail!("no command to explain: put it after `--`, e.g. `coldstart explain --ready exit -- python3 -c pass`");
        }
        return Ok(vec![Build {
            name: args.command.join(" "),
            target: Target::new(args.command.clone(), global_env, args.cwd.clone())?
                .with_limits(args.limits.parse_over(&Default::default())?),
            readiness: Readiness::parse(args.ready.as_deref().unwrap_or("exit"))?,
            adapters,
            adapted: Vec::new(),
            profiled_target: None,
            profile: crate::profile::Collector::new(),
        }]);
    }
    if args.variants.len() != 2 {
        bail!(
            "explain compares two builds: give exactly two `--name NAME -- COMMAND` (got {})",
            args.variants.len()
        );
    }
    let mut out: Vec<Build> = Vec::new();
    for v in &args.variants {
        let name = v.name.clone().unwrap_or_else(|| v.argv.join(" "));
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
        out.push(Build {
            target: Target::new(v.argv.clone(), env, cwd)
                .with_context(|| format!("build '{name}'"))?
                .with_limits(v.args.limits.parse_over(&args.limits)?),
            readiness: Readiness::parse(ready).with_context(|| format!("build '{name}'"))?,
            name,
            adapters: adapters.as_ref().map(|_| Vec::new()),
            adapted: Vec::new(),
            profiled_target: None,
            profile: crate::profile::Collector::new(),
        });
    }
    Ok(out)
}

/// The experiment's samples split into one result of `k` arms per build
/// (variants renumbered 0..k, traces moved along).
fn split_by_build(result: &mut ExperimentResult, builds: usize, k: usize) -> Vec<ExperimentResult> {
    // Put back (traces dropped) once the explanations are built: the HTML
    // report draws the whole experiment's runs.
    let samples = std::mem::take(&mut result.samples);
    let mut out: Vec<ExperimentResult> = (0..builds)
        .map(|b| ExperimentResult {
            variants: result.variants[b * k..b * k + k].to_vec(),
            samples: Vec::new(),
            stopped: result.stopped,
            design: result.design,
            load: result.load.clone(),
        })
        .collect();
    for mut s in samples {
        let b = s.variant / k;
        s.variant %= k;
        if let Some(r) = out.get_mut(b) {
            r.samples.push(s);
        }
    }
    out
}

/// The runner of the arms of every build: variant `v` is arm `v % k` of build
/// `v / k` (k = 3 arms, 4 with --profile). Each build's adapters are chosen from its first traced run's final
/// exec (what really runs after shims and wrappers), then kept for every
/// adapted run; an adapted run scheduled before any traced one first traces
/// one run, unrecorded, to choose them.
struct Arms<'a> {
    args: &'a ExplainArgs,
    opts: RunOptions,
    builds: Vec<Build>,
    /// Arms per build: the three, + `profiled` with --profile.
    per_build: usize,
}

impl Runner for Arms<'_> {
    fn run(&mut self, v: usize, id: RunId) -> Result<Sample> {
        let b = v / self.per_build;
        match v % self.per_build {
            TRACED => {
                let s = self.traced(b, id)?;
                if self.builds[b].adapters.is_none() {
                    if let Some(trace) = &s.trace {
                        self.choose(b, trace)?;
                    }
                }
                Ok(s)
            }
            ADAPTED => {
                if self.builds[b].adapters.is_none() {
                    let s = self.traced(b, RunId { warmup: true, ..id })?;
                    match &s.trace {
                        Some(trace) if s.ok() => self.choose(b, trace)?,
                        // Interrupted (or failed): the scheduler stops on it.
                        _ => return Ok(s),
                    }
                }
                let build = &mut self.builds[b];
                let chosen = build.adapters.as_deref().unwrap_or_default();
                let a = adapted::run(
                    &build.target,
                    &build.readiness,
                    &self.opts,
                    chosen,
                    !self.args.no_otlp,
                    id,
                )?;
                let sample = a.sample.clone();
                if !id.warmup {
                    build.adapted.push(a);
                }
                Ok(sample)
            }
            PROFILED => {
                let build = &mut self.builds[b];
                let target = build.profiled_target.as_ref().unwrap_or(&build.target);
                let r = run_profiled(target, &build.readiness, &self.opts, id);
                let mut s = interrupted(r, id)?;
                build.profile.add(&mut s, !id.warmup);
                Ok(s)
            }
            _ => run_once(&self.builds[b].target, &self.builds[b].readiness, &self.opts, id),
        }
    }
}

/// A run cut short by Ctrl-C is an interrupted sample, so the scheduler stops
/// as it does for the plain arms.
fn interrupted(r: Result<Sample>, id: RunId) -> Result<Sample> {
    if signals::interrupted() {
        let mut s = match r {
            Ok(s) => s,
            Err(_) => Sample::begin(&id, crate::clock::now_ns()),
        };
        s.outcome = Outcome::Interrupted;
        s.ready_ns = None;
        return Ok(s);
    }
    r
}

/// The merged profile with the profiled arm's ready times and overhead.
fn profile(
    collector: crate::profile::Collector,
    e: &explain::Explanation,
    result: &crate::experiment::ExperimentResult,
) -> Option<crate::profile::Profile> {
    let mut p = collector.finish(&e.timeline.phases, (e.ready_ms * 1e6) as u64)?;
    let (untraced, profiled) = (result.ready_ms(UNTRACED), result.ready_ms(PROFILED));
    let mut sorted = profiled.clone();
    sorted.sort_by(f64::total_cmp);
    p.profiled_ms = crate::stats::summarize(&sorted);
    let r = crate::stats::ratio(&untraced, &profiled, explain::CONFIDENCE);
    p.overhead = r.as_ref().map(|r| r.estimate);
    p.overhead_ci = r.and_then(|r| r.ci);
    Some(p)
}

impl Arms<'_> {
    /// A traced run; one cut short by Ctrl-C is an interrupted sample, so the
    /// scheduler stops as it does for the other arms.
    fn traced(&self, b: usize, id: RunId) -> Result<Sample> {
        let r = run_traced(&self.builds[b].target, &self.builds[b].readiness, &self.opts, id);
        interrupted(r, id)
    }

    fn choose(&mut self, b: usize, trace: &crate::trace::Trace) -> Result<()> {
        let mut chosen = explain::choose_adapters_for(&self.args.adapter, trace, &self.builds[b].readiness)?;
        let settings = adapter::Options {
            class_depth: self.args.class_depth.map(|d| d as usize),
        };
        chosen.iter_mut().for_each(|a| a.configure(&settings));
        if !self.args.quiet {
            let names: Vec<&str> = chosen.iter().map(|a| a.name()).collect();
            let of = if self.builds.len() > 1 {
                format!(" ({})", self.builds[b].name)
            } else {
                String::new()
            };
            out::errln!(
                "coldstart explain: adapters{of}: {}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            );
        }
        self.builds[b].adapters = Some(chosen);
        Ok(())
    }
}
