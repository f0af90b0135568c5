//! One `coldstart tune` from checked options to its table: the runtime (named,
//! or detected from one traced run) and its catalogue ([`find`]); then one
//! timed baseline run for the estimate, each candidate set up and checked
//! (untimed), all measured against the baseline in one interleaved experiment,
//! and the combination of the winners in a second short one ([`run`]). How the
//! experiments are shown and recorded is the caller's (`record`), and so are the
//! exports and the printed table.

use super::catalogue::{self, Candidate, Catalogue};
use super::exec::{Applied, Executor};
use super::plan::{self, Change, Prepared};
use super::report::{self, Recommended, Row, Status, Tuned};
use super::sets;
use super::show::{command_line, recommendation, shown};
use super::stored::{StoredCandidate, StoredRow, TuneSettings, PREFIX};
use super::Runtime;
use anyhow::{bail, Context, Result};
use coldstart_core::analysis::Analysis;
use coldstart_core::experiment::{CiOf, ExperimentResult, Order, Plan, Runner, StopReason, StopRule};
use coldstart_core::launch::signals;
use coldstart_core::out;
use coldstart_core::run::{RunId, RunOptions, Spec};
use coldstart_core::target::Target;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What a tune does, checked.
#[derive(Debug, Clone)]
pub struct Options {
    /// The unchanged program and when it is ready.
    pub base: Spec,
    pub run: RunOptions,
    /// `--runtime`: named instead of detected.
    pub runtime: Option<String>,
    /// The user's catalogue files, over the built-in one (later ones win).
    pub catalogues: Vec<PathBuf>,
    pub only: Vec<String>,
    pub skip: Vec<String>,
    pub min_runs: usize,
    pub max_runs: usize,
    /// The option that sets `max_runs`, for the "run more" hint.
    pub runs_flag: &'static str,
    pub warmup: usize,
    /// Seconds the measuring may take.
    pub budget: f64,
    /// `--target-ci`: (value, relative).
    pub target_ci: (f64, bool),
    pub seed: u64,
    /// The noise threshold of the verdicts (a fraction of the baseline median).
    pub noise: f64,
    pub quiet: bool,
}

/// The runtime and its catalogue.
pub struct Found {
    pub runtime: Runtime,
    pub catalogue: Catalogue,
}

impl Found {
    /// The candidates `--only` and `--skip` leave.
    pub fn chosen(&self, opts: &Options) -> Result<Vec<&Candidate>> {
        catalogue::select(&self.catalogue, &opts.only, &opts.skip)
    }
}

/// An experiment as the caller recorded it: what tune reads back.
pub trait Recorded {
    fn result(&self) -> &ExperimentResult;
    fn analysis(&mut self) -> &mut Analysis;
    /// The experiment's id when stored.
    fn stored_id(&self) -> Option<i64>;
}

/// The table, and the experiments behind it (the candidates', then the
/// recommended set's).
pub struct Outcome<R> {
    pub tuned: Tuned,
    pub experiments: Vec<R>,
}

/// The runtime (named, or from one traced run of the baseline) and its catalogue.
pub fn find(opts: &Options) -> Result<Found> {
    let target = &opts.base.target;
    let mut rt = match &opts.runtime {
        Some(name) => {
            if !catalogue::runtimes().contains(name) {
                bail!(
                    "unknown --runtime {name}: use one of {}",
                    catalogue::runtimes().join(", ")
                );
            }
            Runtime {
                name: name.clone(),
                exe: target.program.clone(),
                version: None,
                shim: None,
                app: None,
            }
        }
        None => {
            if !opts.quiet {
                out::errln!(
                    "tune: one traced run of {} to find its runtime…",
                    target.display_command()
                );
            }
            super::detect(target, &opts.base.readiness, &opts.run)?
        }
    };
    let mut cat = catalogue::load(&rt.name, &opts.catalogues)?;
    // The shim the traced run went through is a candidate of its own, first: the
    // resolved command, exactly as the service process finally exec'd it (a team's
    // candidate of the same id wins).
    if let Some(shim) = &rt.shim {
        if !cat.file.candidates.iter().any(|c| c.id == super::BYPASS_SHIM) {
            cat.file.candidates.insert(0, super::bypass(shim));
        }
    }
    rt.version = super::version(&rt, &cat.file);
    if rt.name == "jvm" {
        let app = super::spring::fit(&mut cat, &target.argv, target.cwd.as_deref());
        rt.app = app.map(|a| a.describe());
    }
    Ok(Found {
        runtime: rt,
        catalogue: cat,
    })
}

/// What records one experiment: its plan, what it keeps of the tune, its runner.
pub type Record<'a, R> = dyn FnMut(&Plan, TuneSettings, &mut dyn Runner) -> Result<R> + 'a;

/// Measure the `chosen` candidates of `found` against the baseline, then the
/// winners together: the table.
pub fn run<R: Recorded>(
    opts: &Options,
    found: &Found,
    chosen: &[&Candidate],
    exec: &dyn Executor,
    record: &mut Record<R>,
) -> Result<Outcome<R>> {
    // Every candidate's artefacts (archives, caches) live here and go with it.
    let work = tempfile::Builder::new()
        .prefix("coldstart-tune-")
        .tempdir()
        .context("creating tune's work directory")?;
    // One plain run of the baseline: the cost of a run, for the estimate.
    let started = Instant::now();
    let first = exec.once(&opts.base.target, &opts.base.readiness, &opts.run, untimed())?;
    let run_cost = started.elapsed().as_secs_f64();
    if !first.ok() {
        bail!(
            "the unchanged program must start before anything is tuned, and its first run ({}) failed: {}",
            opts.base.target.display_command(),
            coldstart_core::sample::describe_untimed(&first)
        );
    }
    let rt = &found.runtime;
    let ctx = Ctx {
        opts,
        exec,
        file: &found.catalogue.file,
        work: work.path(),
        run_cost,
        stored: TuneSettings {
            runtime: rt.name.clone(),
            version: rt.version.clone(),
            executable: rt.exe.display().to_string(),
            app: rt.app.clone(),
            ..TuneSettings::default()
        },
    };
    estimate(&ctx, rt, chosen);
    let mut screened = screen(&ctx, rt, chosen)?;
    let mut experiments: Vec<R> = Vec::new();
    let mut baseline = Baseline {
        ready_ms: first.ready_ns.map(|ns| ns as f64 / 1e6),
        first_request_ms: first.requests_ns.first().map(|ns| *ns as f64 / 1e6),
    };
    let measured_variants = screened.ready.len() + 1;
    if !screened.ready.is_empty() && !screened.interrupted {
        let m = ctx.candidates(chosen, &mut screened, &mut baseline, record)?;
        experiments.push(m);
    }
    screened.rows.sort_by_key(|(i, _)| *i);
    let rows: Vec<Row> = screened.rows.into_iter().map(|(_, r)| r).collect();
    let mut interrupted = screened.interrupted;
    let recommended = recommend(
        &ctx,
        chosen,
        &screened.ready,
        &rows,
        &mut experiments,
        &mut interrupted,
        record,
    )?;
    let tuned = Tuned {
        runtime: rt.name.clone(),
        executable: rt.exe.display().to_string(),
        version: rt.version.clone(),
        app: rt.app.clone(),
        baseline: opts.base.target.display_command(),
        baseline_ready_ms: baseline.ready_ms,
        baseline_first_request_ms: baseline.first_request_ms,
        noise: opts.noise,
        rows: rows.into_iter().map(|r| shown(r, work.path())).collect(),
        recommended,
        experiments: experiments.iter().filter_map(|m| m.stored_id()).collect(),
        interrupted,
        pace: Some(report::Pace {
            round_s: run_cost * measured_variants as f64,
            warmup: opts.warmup,
            budget_s: opts.budget,
            runs_flag: opts.runs_flag,
        }),
    };
    drop(ctx);
    work.close().context("removing tune's work directory")?;
    Ok(Outcome { tuned, experiments })
}

/// The baseline's medians: from the first experiment, else its one timed run.
struct Baseline {
    ready_ms: Option<f64>,
    first_request_ms: Option<f64>,
}

/// What a tune run shares between its phases.
struct Ctx<'a> {
    opts: &'a Options,
    exec: &'a dyn Executor,
    file: &'a catalogue::File,
    /// Every candidate's private directory is under this one.
    work: &'a Path,
    /// Seconds one baseline run took, start to stop: the unit of every estimate.
    run_cost: f64,
    /// What each experiment's settings keep of the runtime (the candidates are added per experiment).
    stored: TuneSettings,
}

impl Ctx<'_> {
    fn say(&self, line: String) {
        if !self.opts.quiet {
            out::errln!("{line}");
        }
    }

    fn stop(&self, max_runs: usize) -> StopRule {
        StopRule::Adaptive {
            min_runs: self.opts.min_runs.min(max_runs),
            max_runs,
            target: self.opts.target_ci.0,
            relative: self.opts.target_ci.1,
            // Until each candidate is settled against the noise threshold (a
            // gain, or none worth having), or as precise as --target-ci asks.
            of: CiOf::Verdict {
                noise: self.opts.noise,
            },
        }
    }

    /// The baseline and these candidates (id, target) in one interleaved experiment.
    fn measure<R: Recorded>(
        &self,
        candidates: &[(String, Target)],
        rounds: usize,
        seed: u64,
        stored: TuneSettings,
        record: &mut Record<R>,
    ) -> Result<R> {
        let mut specs = vec![self.opts.base.clone()];
        let mut names = vec!["baseline".to_string()];
        for (id, t) in candidates {
            specs.push(Spec {
                target: t.clone(),
                readiness: self.opts.base.readiness.clone(),
            });
            names.push(format!("{PREFIX}{id}"));
        }
        experiment(self, &specs, &names, self.stop(rounds), seed, stored, record)
    }

    /// The candidates that passed their check, measured against the baseline:
    /// their rows, and the baseline's medians from this experiment.
    fn candidates<R: Recorded>(
        &self,
        chosen: &[&Candidate],
        screened: &mut Screened,
        baseline: &mut Baseline,
        record: &mut Record<R>,
    ) -> Result<R> {
        let rounds = rounds_for(self.opts, self.run_cost, screened.ready.len() + 1);
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
                    let apply = match shown(Row::unmeasured(c, Status::NoVerdict), self.work).apply {
                        a if a.is_empty() => command_line(&r.target, &self.opts.base.target, self.work),
                        a => a,
                    };
                    StoredCandidate::of(c, apply, &how(self, vec![], &r.target, &[c], None))
                })
                .collect(),
            unmeasured: screened
                .rows
                .iter()
                .map(|(_, r)| {
                    let r = shown(r.clone(), self.work);
                    StoredRow {
                        id: r.id,
                        title: r.title,
                        status: r.status,
                    }
                })
                .collect(),
            ..self.stored.clone()
        };
        let mut m = self.measure(&candidates, rounds, self.opts.seed, stored, record)?;
        screened.interrupted |= m.result().stopped == Some(StopReason::Interrupted);
        let analysis = m.analysis();
        let base = &analysis.variants[0];
        baseline.ready_ms = base.ready_ms.as_ref().map(|s| s.p50).or(baseline.ready_ms);
        baseline.first_request_ms = base
            .first_request_ms
            .as_ref()
            .map(|s| s.p50)
            .or(baseline.first_request_ms);
        for (k, r) in screened.ready.iter().enumerate() {
            let v = &analysis.variants[k + 1];
            let row = if v.ok_runs + v.failed_runs == 0 {
                Row::unmeasured(chosen[r.index], Status::NotMeasured)
            } else {
                Row::measured(chosen[r.index], v, base)
            };
            screened.rows.push((r.index, row));
        }
        Ok(m)
    }
}

/// The bound printed up front, from the one timed baseline run.
fn estimate(ctx: &Ctx, rt: &Runtime, chosen: &[&Candidate]) {
    let measurable: Vec<&&Candidate> = chosen
        .iter()
        .filter(|c| c.unavailable(rt.version.as_deref()).is_none())
        .collect();
    // (A fold from +0: an empty f64 sum is −0, printed "-0 s".)
    let setups: f64 = measurable
        .iter()
        .map(|c| if c.train.is_some() { 2.0 } else { 1.0 })
        .fold(0.0, |a, b| a + b);
    let variants = measurable.len() + 1;
    let rounds = rounds_for(ctx.opts, ctx.run_cost, variants) + ctx.opts.warmup;
    let version = rt.version.as_deref().map(|v| format!("{v} ")).unwrap_or_default();
    let candidates = format!(
        "{} candidate{}",
        chosen.len(),
        if chosen.len() == 1 { "" } else { "s" }
    );
    if measurable.is_empty() {
        ctx.say(format!(
            "tune: {} {version}· {candidates}, none to measure here",
            rt.name
        ));
        return;
    }
    ctx.say(format!(
        "tune: {} {}· {}, {} to measure · one run ≈ {:.1} s · set-up ≈ {:.0} s, then at most {} rounds × {} variants ≈ {:.0} s (--budget {:.0} s)",
        rt.name,
        version,
        candidates,
        measurable.len(),
        ctx.run_cost,
        setups * ctx.run_cost,
        rounds,
        variants,
        rounds as f64 * variants as f64 * ctx.run_cost,
        ctx.opts.budget
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
fn screen(ctx: &Ctx, rt: &Runtime, chosen: &[&Candidate]) -> Result<Screened> {
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
        let t = match plan::apply(&ctx.opts.base.target, ctx.file, &Change::of(c, &dir)) {
            Ok(t) => t,
            Err(e) => {
                let why = format!("{e:#}");
                out.rows
                    .push((i, Row::unmeasured(c, Status::NotApplicable { why })));
                continue;
            }
        };
        ctx.say(format!("tune: setting up and checking {} ({})…", c.id, c.title));
        let prepared = plan::prepare(c, &dir, &ctx.opts.base, ctx.file, &ctx.opts.run, &t, ctx.exec)?;
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

/// The recommended set: the significant winners that go together (best first,
/// conflicts left out, at most `sets::MAX_SET`), grown one at a time as nested
/// sets, each checked, then measured together against the baseline in a second,
/// short experiment (`sets::choose` keeps a winner only while its step is faster).
/// A single winner is recommended with its own row.
fn recommend<R: Recorded>(
    ctx: &Ctx,
    chosen: &[&Candidate],
    ready: &[ReadyCandidate],
    rows: &[Row],
    experiments: &mut Vec<R>,
    interrupted: &mut bool,
    record: &mut Record<R>,
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
    let (mut members, _) = plan::combine(&pairs);
    members.truncate(sets::MAX_SET);
    let (sets_, broke) = nested(ctx, &members)?;
    let (index, row, rejected) = if sets_.len() > 1 && !*interrupted {
        let names: Vec<String> = sets_.iter().map(|s| s.0.join(" + ")).collect();
        ctx.say(format!("tune: measuring the sets {}…", names.join("; ")));
        let (index, measured_rows, rejected) =
            measure_sets(ctx, &members, &sets_, experiments, interrupted, record)?;
        (index, measured_rows.into_iter().nth(index), rejected.or(broke))
    } else {
        let first = rows.iter().find(|r| r.id == sets_[0].0[0]).cloned();
        (0, first, broke)
    };
    let (ids, combined) = &sets_[index];
    let mut rec = how(ctx, ids.clone(), combined, &members[..ids.len()], row);
    rec.rejected = rejected.map(|mut r| {
        r.row = shown(r.row, ctx.work);
        r
    });
    Ok(Some(rec))
}

/// The nested sets of `members` (the first; the first two; …) as targets, each
/// larger one checked; a larger set that breaks ends the list, and is why.
type Nested = (Vec<(Vec<String>, Target)>, Option<report::Rejected>);

fn nested(ctx: &Ctx, members: &[&Candidate]) -> Result<Nested> {
    let target = &ctx.opts.base.target;
    let mut change = Change::default();
    let mut out: Vec<(Vec<String>, Target)> = Vec::new();
    for (k, c) in members.iter().enumerate() {
        // plan::combine joined them already; a None here would be a clash it let through.
        let Some(joined) = change.join(&Change::of(c, &ctx.work.join(&c.id))) else {
            break;
        };
        change = joined;
        let ids: Vec<String> = members[..=k].iter().map(|c| c.id.clone()).collect();
        let t = plan::apply(target, ctx.file, &change)?;
        if k > 0 {
            if let Prepared::Broken(why) | Prepared::NotApplicable(why) =
                plan::check(&t, &ctx.opts.base.readiness, &ctx.opts.run, ctx.file, ctx.exec)?
            {
                let combo = Candidate {
                    id: ids.join("+"),
                    title: ids.join(" + "),
                    ..Candidate::default()
                };
                let smaller = ids[..k].to_vec();
                return Ok((
                    out,
                    Some(report::Rejected {
                        ids,
                        row: Row::unmeasured(&combo, Status::Broken { why }),
                        smaller,
                        step: None,
                    }),
                ));
            }
        }
        out.push((ids, t));
    }
    Ok((out, None))
}

/// How the user applies `members` (the set `ids`, measured as `target`): the
/// command, its variables, what to run once before, what to know — in the
/// executor's terms (a command line, or a Lambda function's environment).
fn how(
    ctx: &Ctx,
    ids: Vec<String>,
    target: &Target,
    members: &[&Candidate],
    row: Option<Row>,
) -> Recommended {
    let mut rec = recommendation(ids, target, &ctx.opts.base.target, ctx.work, row);
    rec.train = setup_lines(ctx, members);
    rec.caveats = super::show::caveats(&rec.command, ctx.exec.applied());
    if ctx.exec.applied() == Applied::FunctionEnvironment {
        rec.command = format!("the function's environment: {}", rec.env.join(" "));
    }
    rec
}

/// Each member's set-up in order, as the user runs it once and as `plan::prepare`
/// runs it: its prepare line (the extraction), its training run, its setup line,
/// with the work directory's paths as plain names. For a Lambda function the
/// training run is one init in the runtime's own image, with its variables.
fn setup_lines(ctx: &Ctx, members: &[&Candidate]) -> Vec<String> {
    let target = &ctx.opts.base.target;
    members
        .iter()
        .flat_map(|c| {
            let work = ctx.work.join(&c.id);
            let line = |l: &Option<String>| {
                l.as_deref()
                    .map(|l| super::show::strip_work(&catalogue::expand(l, &work), ctx.work))
            };
            let trainee = plan::trainee(c, &work, target, ctx.file)
                .ok()
                .flatten()
                .map(|t| match ctx.exec.applied() {
                    Applied::Command => command_line(&t, target, ctx.work),
                    Applied::FunctionEnvironment => format!(
                        "one init of the function with {} in the runtime's own image (what it writes is tied to that exact runtime build); ship it in the function's package, at the path the variable then names",
                        super::show::added_env(&t, target, ctx.work).join(" ")
                    ),
                });
            line(&c.prepare).into_iter().chain(trainee).chain(line(&c.setup))
        })
        .collect()
}

/// The nested sets measured against the baseline in one short experiment: the
/// index of the set `sets::choose` keeps, each set's row, and the first larger
/// set that was not better.
fn measure_sets<R: Recorded>(
    ctx: &Ctx,
    members: &[&Candidate],
    nested: &[(Vec<String>, Target)],
    experiments: &mut Vec<R>,
    interrupted: &mut bool,
    record: &mut Record<R>,
) -> Result<(usize, Vec<Row>, Option<report::Rejected>)> {
    let opts = ctx.opts;
    let combos: Vec<Candidate> = nested
        .iter()
        .map(|(ids, _)| Candidate {
            id: ids.join("+"),
            title: ids.join(" + "),
            ..Candidate::default()
        })
        .collect();
    let rounds =
        rounds_for(opts, ctx.run_cost, nested.len() + 1).min(opts.max_runs.div_ceil(2).max(opts.min_runs));
    let stored = TuneSettings {
        candidates: combos
            .iter()
            .zip(nested)
            .map(|(c, (ids, t))| {
                let how = how(ctx, ids.clone(), t, &members[..ids.len()], None);
                StoredCandidate::of(c, how.command.clone(), &how)
            })
            .collect(),
        recommended_set: true,
        ..ctx.stored.clone()
    };
    let variants: Vec<(String, Target)> = combos
        .iter()
        .zip(nested)
        .map(|(c, (_, t))| (c.id.clone(), t.clone()))
        .collect();
    let mut m = ctx.measure(&variants, rounds, opts.seed ^ 1, stored, record)?;
    *interrupted |= m.result().stopped == Some(StopReason::Interrupted);
    let rows: Vec<Row> = {
        let analysis = m.analysis();
        combos
            .iter()
            .enumerate()
            .map(|(i, c)| Row::measured(c, &analysis.variants[i + 1], &analysis.variants[0]))
            .collect()
    };
    let (index, rejected) = sets::choose(m.result(), &rows, opts.noise);
    experiments.push(m);
    Ok((index, rows, rejected))
}

fn untimed() -> RunId {
    RunId {
        variant: 0,
        round: 0,
        warmup: true,
    }
}

/// Runs per variant the budget allows (each round runs every variant once), within the flags.
fn rounds_for(opts: &Options, run_cost: f64, variants: usize) -> usize {
    let per_round = (run_cost * variants as f64).max(1e-3);
    let affordable = (opts.budget / per_round).floor() as usize;
    affordable.saturating_sub(opts.warmup).clamp(2, opts.max_runs)
}

/// One interleaved experiment, recorded run by run by `record`.
fn experiment<R: Recorded>(
    ctx: &Ctx,
    specs: &[Spec],
    names: &[String],
    stop: StopRule,
    seed: u64,
    tune: TuneSettings,
    record: &mut Record<R>,
) -> Result<R> {
    let plan = Plan {
        variants: specs
            .iter()
            .zip(names)
            .map(|(s, n)| s.variant(n.clone()))
            .collect(),
        warmup: ctx.opts.warmup,
        order: Order::Shuffled,
        stop,
        // A failed run marks its candidate broken; the others go on.
        keep_going: true,
        seed,
    };
    let mut runner = ctx.exec.runner(specs, &ctx.opts.run, ctx.opts.quiet)?;
    let recorded = record(&plan, tune, &mut *runner);
    runner.finish()?;
    let mut m = recorded?;
    // The run Ctrl-C cut short is no failure of its candidate.
    let cut: Vec<usize> = m
        .result()
        .samples
        .iter()
        .filter(|s| !s.warmup && s.outcome == coldstart_core::sample::Outcome::Interrupted)
        .map(|s| s.variant)
        .collect();
    let analysis = m.analysis();
    for v in cut {
        if let Some(v) = analysis.variants.get_mut(v) {
            v.failed_runs = v.failed_runs.saturating_sub(1);
        }
    }
    Ok(m)
}
