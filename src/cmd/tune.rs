//! The `tune` command: detect the runtime (one traced run), pick the
//! catalogue's candidates, time one baseline run for the estimate, set up and
//! check each candidate (untimed), measure them all against the baseline in one
//! interleaved experiment (the session machinery bench uses), then the
//! combination of the winners in a second short one; print, export and store.

use crate::analysis::Analysis;
use crate::bounds;
use crate::config;
use crate::experiment::{CiOf, Order, Plan, StopReason, StopRule};
use crate::flags::TuneArgs;
use crate::launch::signals;
use crate::out;
use crate::run::conditions::{Conditions, Settings};
use crate::run::{run_once, Plain, RunId, RunOptions, Spec};
use crate::sample::ExitPolicy;
use crate::session;
use crate::target::{parse_env, Readiness, Target};
use crate::tune::catalogue::{self, Candidate};
use crate::tune::plan::{self, Change, Prepared};
use crate::tune::report::{self, Recommended, Row, Status, Tuned};
use crate::tune::show::{command_line, list, recommendation, shown};
use crate::tune::stored::{StoredCandidate, StoredRow, TuneSettings, PREFIX};
use crate::tune::{self as tune};
use crate::tuned;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub fn run(args: &TuneArgs) -> Result<i32> {
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
    let (ci_target, relative) = crate::bounds::target_ci(&args.target_ci)?;
    crate::bounds::count("--requests", args.requests, 0, crate::bounds::MAX_REQUESTS)?;
    // As bench and explain: the readiness URL is the default, and the probe has just
    // warmed it, so a lazily built page shows only with --request-url.
    let request_url = match &args.request_url {
        Some(u) => Some(url::Url::parse(u).map_err(|e| anyhow::anyhow!("bad --request-url '{u}': {e}"))?),
        None => None,
    };
    if args.requests > 0 && request_url.is_none() && !matches!(readiness, Readiness::Http { .. }) {
        bail!("--requests needs a URL: use http readiness or give --request-url http://127.0.0.1:PORT/");
    }
    let exports = crate::report::export::Exports {
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
    let opts = RunOptions {
        timeout,
        poll_interval: Duration::from_micros(200),
        requests: args.requests,
        request_url,
        grace: Duration::from_secs(2),
        tail_lines: 10,
        log_marks: Vec::new(),
        claims: Vec::new(),
        exit_policy: ExitPolicy::from_flags(false, None)?,
        show_output: false,
    };

    // The runtime: named, or detected from one traced run of the baseline.
    let mut rt = match &args.runtime {
        Some(name) => {
            if !catalogue::runtimes().contains(name) {
                bail!(
                    "unknown --runtime {name}: use one of {}",
                    catalogue::runtimes().join(", ")
                );
            }
            tune::Runtime {
                name: name.clone(),
                exe: target.program.clone(),
                version: None,
                shim: None,
            }
        }
        None => {
            if !args.quiet {
                out::errln!(
                    "tune: one traced run of {} to find its runtime…",
                    target.display_command()
                );
            }
            tune::detect(&target, &readiness, &opts)?
        }
    };
    let root = config::project_root();
    let cfg = config::load(&root)?;
    // coldstart.toml's [tune] catalogue first: --catalogue files override it.
    let mut user: Vec<PathBuf> = cfg
        .as_ref()
        .and_then(|c| c.tune.as_ref())
        .map(|t| root.join(&t.catalogue))
        .into_iter()
        .collect();
    user.extend(args.catalogue.iter().cloned());
    let mut cat = catalogue::load(&rt.name, &user)?;
    // The shim the traced run went through is a candidate of its own, first: the
    // resolved command, exactly as the service process finally exec'd it (a team's
    // candidate of the same id wins).
    if let Some(shim) = &rt.shim {
        if !cat.file.candidates.iter().any(|c| c.id == tune::BYPASS_SHIM) {
            cat.file.candidates.insert(0, tune::bypass(shim));
        }
    }
    rt.version = tune::version(&rt, &cat.file);
    let chosen = catalogue::select(&cat, &args.only, &args.skip)?;
    if args.list {
        out::out!("{}", list(&rt, &chosen))?;
        return Ok(0);
    }

    let outputs = session::Outputs {
        store: (!args.no_store).then(|| config::store_spec(args.store.store.as_deref(), cfg.as_ref(), &root)),
        quiet: args.quiet,
        noise: args.noise.noise,
        exports: Default::default(),
    };
    // Every candidate's artefacts (archives, caches) live here and go with it.
    let work = tempfile::Builder::new()
        .prefix("coldstart-tune-")
        .tempdir()
        .context("creating tune's work directory")?;

    // One plain run of the baseline: the cost of a run, for the estimate.
    let started = Instant::now();
    let first = run_once(&target, &readiness, &opts, untimed())?;
    let run_cost = started.elapsed().as_secs_f64();
    if !first.ok() {
        bail!(
            "the unchanged program must start before anything is tuned:\n{}",
            crate::sample::describe_failure(&target.display_command(), &first)
        );
    }
    let seed = args
        .seed
        .unwrap_or_else(|| crate::clock::now_ns() ^ u64::from(std::process::id()));
    let ctx = Ctx {
        args,
        base: Spec { target, readiness },
        opts,
        outputs,
        file: &cat.file,
        work: work.path(),
        run_cost,
        seed,
        ci: (ci_target, relative),
        stored: TuneSettings {
            runtime: rt.name.clone(),
            version: rt.version.clone(),
            executable: rt.exe.display().to_string(),
            ..TuneSettings::default()
        },
    };
    estimate(&ctx, &rt, &chosen);
    let mut screened = screen(&ctx, &rt, &chosen)?;
    let mut experiments: Vec<Measured> = Vec::new();
    let measured_variants = screened.ready.len() + 1;
    let mut baseline_ready_ms = first.ready_ns.map(|ns| ns as f64 / 1e6);
    let mut baseline_first_request_ms = first.requests_ns.first().map(|ns| *ns as f64 / 1e6);
    if !screened.ready.is_empty() && !screened.interrupted {
        let rounds = rounds_for(args, run_cost, screened.ready.len() + 1);
        let candidates: Vec<(String, Target)> = screened
            .ready
            .iter()
            .map(|r| (chosen[r.index].id.clone(), r.target.clone()))
            .collect();
        let stored = TuneSettings {
            candidates: screened
                .ready
                .iter()
                .map(|r| {
                    let c = chosen[r.index];
                    // A team's candidate without an apply text: its command line says it.
                    let apply = match shown(Row::unmeasured(c, Status::NoVerdict), work.path()).apply {
                        a if a.is_empty() => command_line(&r.target, &ctx.base.target, work.path()),
                        a => a,
                    };
                    StoredCandidate::of(c, apply)
                })
                .collect(),
            unmeasured: screened
                .rows
                .iter()
                .map(|(_, r)| {
                    let r = shown(r.clone(), work.path());
                    StoredRow {
                        id: r.id,
                        title: r.title,
                        status: r.status,
                    }
                })
                .collect(),
            ..ctx.stored.clone()
        };
        let m = ctx.measure(&candidates, rounds, seed, stored)?;
        screened.interrupted |= m.stopped == Some(StopReason::Interrupted);
        let base = &m.analysis.variants[0];
        baseline_ready_ms = base.ready_ms.as_ref().map(|s| s.p50).or(baseline_ready_ms);
        baseline_first_request_ms = base
            .first_request_ms
            .as_ref()
            .map(|s| s.p50)
            .or(baseline_first_request_ms);
        for (k, r) in screened.ready.iter().enumerate() {
            let v = &m.analysis.variants[k + 1];
            let row = if v.ok_runs + v.failed_runs == 0 {
                Row::unmeasured(chosen[r.index], Status::NotMeasured)
            } else {
                Row::measured(chosen[r.index], v, base)
            };
            screened.rows.push((r.index, row));
        }
        experiments.push(m);
    }
    screened.rows.sort_by_key(|(i, _)| *i);
    let rows: Vec<Row> = screened.rows.into_iter().map(|(_, r)| r).collect();
    let mut interrupted = screened.interrupted;
    let recommended = recommend(
        &ctx,
        &chosen,
        &screened.ready,
        &rows,
        &mut experiments,
        &mut interrupted,
    )?;

    let tuned = Tuned {
        runtime: rt.name.clone(),
        executable: rt.exe.display().to_string(),
        version: rt.version.clone(),
        baseline: ctx.base.target.display_command(),
        baseline_ready_ms,
        baseline_first_request_ms,
        noise: args.noise.noise,
        rows: rows.into_iter().map(|r| shown(r, work.path())).collect(),
        recommended,
        experiments: experiments
            .iter()
            .flat_map(|m| &m.stored)
            .map(|(id, _)| *id)
            .collect(),
        interrupted,
        pace: Some(report::Pace {
            round_s: run_cost * measured_variants as f64,
            warmup: args.warmup,
            budget_s: args.budget,
        }),
    };
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
        .find_map(|m| m.result.load.as_ref().and_then(|l| l.warning()))
    {
        out::errln!("{w}");
    }
    for (id, location) in experiments.iter().flat_map(|m| &m.stored) {
        out::outln!("stored as experiment {id} in {location}")?;
    }
    drop(ctx);
    work.close().context("removing tune's work directory")?;
    Ok(if interrupted { signals::exit_code() } else { 0 })
}

/// What a tune run shares between its phases.
struct Ctx<'a> {
    args: &'a TuneArgs,
    base: Spec,
    opts: RunOptions,
    outputs: session::Outputs,
    file: &'a catalogue::File,
    /// Every candidate's private directory is under this one.
    work: &'a Path,
    /// Seconds one baseline run took, start to stop: the unit of every estimate.
    run_cost: f64,
    seed: u64,
    /// --target-ci: (value, relative).
    ci: (f64, bool),
    /// What each experiment's settings keep of the runtime (the candidates are added per experiment).
    stored: TuneSettings,
}

impl Ctx<'_> {
    fn say(&self, line: String) {
        if !self.args.quiet {
            out::errln!("{line}");
        }
    }

    fn stop(&self, max_runs: usize) -> StopRule {
        StopRule::Adaptive {
            min_runs: self.args.min_runs.min(max_runs),
            max_runs,
            target: self.ci.0,
            relative: self.ci.1,
            of: CiOf::Shift,
        }
    }

    /// The baseline and these candidates (id, target) in one interleaved experiment.
    fn measure(
        &self,
        candidates: &[(String, Target)],
        rounds: usize,
        seed: u64,
        stored: TuneSettings,
    ) -> Result<Measured> {
        let mut specs = vec![self.base.clone()];
        let mut names = vec!["baseline".to_string()];
        for (id, t) in candidates {
            specs.push(Spec {
                target: t.clone(),
                readiness: self.base.readiness.clone(),
            });
            names.push(format!("{PREFIX}{id}"));
        }
        experiment(self, &specs, &names, self.stop(rounds), seed, stored)
    }
}

/// The bound printed up front, from the one timed baseline run.
fn estimate(ctx: &Ctx, rt: &tune::Runtime, chosen: &[&Candidate]) {
    let measurable: Vec<&&Candidate> = chosen
        .iter()
        .filter(|c| c.unavailable(rt.version.as_deref()).is_none())
        .collect();
    let setups: f64 = measurable
        .iter()
        .map(|c| if c.train.is_some() { 2.0 } else { 1.0 })
        .sum();
    let variants = measurable.len() + 1;
    let rounds = rounds_for(ctx.args, ctx.run_cost, variants) + ctx.args.warmup;
    ctx.say(format!(
        "tune: {} {}· {} candidates, {} to measure · one run ≈ {:.1} s · set-up ≈ {:.0} s, then at most {} rounds × {} variants ≈ {:.0} s (--budget {:.0} s)",
        rt.name,
        rt.version.as_deref().map(|v| format!("{v} ")).unwrap_or_default(),
        chosen.len(),
        measurable.len(),
        ctx.run_cost,
        setups * ctx.run_cost,
        rounds,
        variants,
        rounds as f64 * variants as f64 * ctx.run_cost,
        ctx.args.budget
    ));
}

/// A candidate that passed its set-up and check run.
struct ReadyCandidate {
    index: usize,
    target: Target,
}

struct Screened {
    /// Rows decided without measuring (unavailable, broken, not applicable), by catalogue index.
    rows: Vec<(usize, Row)>,
    ready: Vec<ReadyCandidate>,
    interrupted: bool,
}

/// Each candidate's set-up and check run, in catalogue order (untimed).
fn screen(ctx: &Ctx, rt: &tune::Runtime, chosen: &[&Candidate]) -> Result<Screened> {
    let mut out = Screened {
        rows: Vec::new(),
        ready: Vec::new(),
        interrupted: false,
    };
    for (i, c) in chosen.iter().enumerate() {
        if let Some(why) = c.unavailable(rt.version.as_deref()) {
            out.rows
                .push((i, Row::unmeasured(c, Status::Unavailable { why })));
            continue;
        }
        if out.interrupted || signals::interrupted() {
            out.interrupted = true;
            out.rows.push((i, Row::unmeasured(c, Status::NotMeasured)));
            continue;
        }
        let dir = plan::work_dir(ctx.work, &c.id)?;
        let t = match plan::apply(&ctx.base.target, ctx.file, &Change::of(c, &dir)) {
            Ok(t) => t,
            Err(e) => {
                let why = format!("{e:#}");
                out.rows
                    .push((i, Row::unmeasured(c, Status::NotApplicable { why })));
                continue;
            }
        };
        ctx.say(format!("tune: setting up and checking {} ({})…", c.id, c.title));
        let prepared = plan::prepare(c, &dir, &ctx.base, ctx.file, &ctx.opts, &t)?;
        if signals::interrupted() {
            out.interrupted = true;
            out.rows.push((i, Row::unmeasured(c, Status::NotMeasured)));
            continue;
        }
        match prepared {
            Prepared::Ready(target) => out.ready.push(ReadyCandidate { index: i, target }),
            Prepared::Broken(why) => out.rows.push((i, Row::unmeasured(c, Status::Broken { why }))),
            Prepared::NotApplicable(why) => out
                .rows
                .push((i, Row::unmeasured(c, Status::NotApplicable { why }))),
        }
    }
    Ok(out)
}

/// The significant winners together (best first, conflicts left out), checked and
/// measured against the baseline in a second, short experiment; when that
/// combination breaks or is not itself faster, the best single winner.
fn recommend(
    ctx: &Ctx,
    chosen: &[&Candidate],
    ready: &[ReadyCandidate],
    rows: &[Row],
    experiments: &mut Vec<Measured>,
    interrupted: &mut bool,
) -> Result<Option<Recommended>> {
    let mut winners: Vec<(&Candidate, PathBuf, f64)> = ready
        .iter()
        .filter_map(|r| {
            let c = chosen[r.index];
            let row = rows.iter().find(|row| row.id == c.id)?;
            (row.status == Status::Faster).then(|| (c, ctx.work.join(&c.id), row.shift_ms.unwrap_or(0.0)))
        })
        .collect();
    if winners.is_empty() {
        return Ok(None);
    }
    winners.sort_by(|a, b| a.2.total_cmp(&b.2));
    let pairs: Vec<(&Candidate, PathBuf)> = winners.iter().map(|(c, d, _)| (*c, d.clone())).collect();
    let (mut members, change) = plan::combine(&pairs);
    let target = &ctx.base.target;
    let mut combined = plan::apply(target, ctx.file, &change)?;
    let mut ids: Vec<String> = members.iter().map(|c| c.id.clone()).collect();
    let mut note = None;
    let mut row = rows.iter().find(|r| r.id == ids[0]).cloned();
    if members.len() > 1 && !*interrupted {
        ctx.say(format!("tune: measuring the combination {}…", ids.join(" + ")));
        let combo = Candidate {
            id: ids.join("+"),
            title: "recommended set".into(),
            ..Candidate::default()
        };
        let combo_row = match plan::check(&combined, &ctx.base.readiness, &ctx.opts)? {
            Prepared::Ready(_) => {
                let args = ctx.args;
                let rounds =
                    rounds_for(args, ctx.run_cost, 2).min(args.max_runs.div_ceil(2).max(args.min_runs));
                let stored = TuneSettings {
                    candidates: vec![StoredCandidate::of(
                        &combo,
                        command_line(&combined, target, ctx.work),
                    )],
                    recommended_set: true,
                    ..ctx.stored.clone()
                };
                let m = ctx.measure(
                    &[(combo.id.clone(), combined.clone())],
                    rounds,
                    ctx.seed ^ 1,
                    stored,
                )?;
                *interrupted |= m.stopped == Some(StopReason::Interrupted);
                let row = Row::measured(&combo, &m.analysis.variants[1], &m.analysis.variants[0]);
                experiments.push(m);
                row
            }
            Prepared::Broken(why) | Prepared::NotApplicable(why) => {
                Row::unmeasured(&combo, Status::Broken { why })
            }
        };
        if combo_row.status == Status::Faster {
            row = Some(combo_row);
        } else {
            // Not recommended: the best single winner is, and the note says why.
            let best = members[0];
            note = Some(format!(
                "{} together: {}; the best single one is recommended",
                ids.join(" + "),
                tuned::effect(&shown(combo_row, ctx.work))
            ));
            members = vec![best];
            ids = vec![best.id.clone()];
            combined = plan::apply(target, ctx.file, &Change::of(best, &ctx.work.join(&best.id)))?;
        }
    } else if members.len() > 1 {
        row = None;
    }
    let train = members
        .iter()
        .filter_map(|c| {
            plan::trainee(c, &ctx.work.join(&c.id), target, ctx.file)
                .ok()
                .flatten()
        })
        .map(|t| command_line(&t, target, ctx.work))
        .collect();
    let mut rec = recommendation(ids, &combined, target, ctx.work, row);
    rec.train = train;
    rec.note = note;
    Ok(Some(rec))
}

fn untimed() -> RunId {
    RunId {
        variant: 0,
        round: 0,
        warmup: true,
    }
}

/// Runs per variant the budget allows (each round runs every variant once), within the flags.
fn rounds_for(args: &TuneArgs, run_cost: f64, variants: usize) -> usize {
    let per_round = (run_cost * variants as f64).max(1e-3);
    let affordable = (args.budget / per_round).floor() as usize;
    affordable.saturating_sub(args.warmup).clamp(2, args.max_runs)
}

type Stored = Vec<(i64, String)>;

/// An experiment's runs, analysis and settings, why it stopped, and where it was stored.
struct Measured {
    result: crate::experiment::ExperimentResult,
    analysis: Analysis,
    settings: crate::report::json::Settings,
    stopped: Option<StopReason>,
    stored: Stored,
}

/// One interleaved experiment through the session (stored run by run).
fn experiment(
    ctx: &Ctx,
    specs: &[Spec],
    names: &[String],
    stop: StopRule,
    seed: u64,
    tune: TuneSettings,
) -> Result<Measured> {
    let (opts, outputs, warmup) = (&ctx.opts, &ctx.outputs, ctx.args.warmup);
    let plan = Plan {
        variants: specs
            .iter()
            .zip(names)
            .map(|(s, n)| s.variant(n.clone()))
            .collect(),
        warmup,
        order: Order::Shuffled,
        stop,
        // A failed run marks its candidate broken; the others go on.
        keep_going: true,
        seed,
    };
    let mut runner = Plain {
        specs: specs.to_vec(),
        opts: opts.clone(),
        conditions: Conditions::new(Settings {
            quiet: outputs.quiet,
            ..Settings::default()
        }),
    };
    let mut settings = session::settings(&plan, opts.into(), outputs.noise);
    settings.of_kind.tune = Some(tune);
    let (m, store_error) = session::run(
        &plan,
        crate::experiment::Kind::Tune,
        &settings,
        outputs,
        &mut runner,
    )?;
    runner.finish()?;
    if let Some(e) = store_error {
        return Err(e.context("the runs were measured, but storing them failed"));
    }
    // The run Ctrl-C cut short is no failure of its candidate.
    let mut analysis = m.analysis;
    for s in &m.result.samples {
        if !s.warmup && s.outcome == crate::sample::Outcome::Interrupted {
            if let Some(v) = analysis.variants.get_mut(s.variant) {
                v.failed_runs = v.failed_runs.saturating_sub(1);
            }
        }
    }
    Ok(Measured {
        stopped: m.result.stopped,
        result: m.result,
        analysis,
        settings,
        stored: m.stored_as.into_iter().collect(),
    })
}

/// `--export-html`: each experiment tune ran (the candidates, then the
/// recommended set), with its table.
fn write_html(exports: &crate::report::export::Exports, experiments: &[Measured]) -> Result<()> {
    let meta = crate::store::meta::collect();
    let report = crate::report::html::Report {
        title: "coldstart tune".to_string(),
        experiments: experiments
            .iter()
            .map(|m| crate::report::html::Experiment {
                heading: match m.stored.first() {
                    Some((id, _)) => format!("Experiment {id}"),
                    None => "This run (not stored)".to_string(),
                },
                id: m.stored.first().map(|(id, _)| *id),
                created_unix_s: None,
                meta: Some(&meta),
                settings: Some(&m.settings),
                result: &m.result,
                analysis: &m.analysis,
                explanation: None,
                tuned: m
                    .settings
                    .of_kind
                    .tune
                    .as_ref()
                    .and_then(|t| tune::stored::tuned(t, &m.analysis, m.settings.noise)),
            })
            .collect(),
        history: Vec::new(),
        gate: None,
    };
    exports.write_html(&report)
}
