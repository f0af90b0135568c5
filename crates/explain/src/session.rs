//! One `coldstart explain` from checked options to its explanations: the
//! tracer's calibration, an experiment of three arms per build (untraced,
//! traced, adapted; + profiled) run by the scheduler, each build's share of the
//! runs explained, A vs B attributed, and the explanation stored beside the runs.
//! How the runs are shown and recorded is the caller's (`record`), and so are
//! the exports and the printed report: neither is explain's business.

use super::adapter::{self, Adapter};
use super::attribution::{self, Attribution};
use super::{adapted, estimate, otlp, Explanation, ADAPTED, ARMS, PROFILED, PROFILED_ARM, TRACED, UNTRACED};
use anyhow::{Context, Result};
use coldstart_core::experiment::{ExperimentResult, Order, Plan, Runner, StopReason, StopRule, Variant};
use coldstart_core::launch::signals;
use coldstart_core::out;
use coldstart_core::run::{run_once, run_profiled, run_traced, RunId, RunOptions};
use coldstart_core::sample::{Outcome as RunOutcome, Sample};
use coldstart_core::target::{Readiness, Target};

/// One build to explain: its name (`--name`, or the command), command and readiness.
#[derive(Debug, Clone)]
pub struct BuildSpec {
    pub name: String,
    pub target: Target,
    pub readiness: Readiness,
}

/// What an explain does, checked.
#[derive(Debug, Clone)]
pub struct Options {
    /// One build, or two for A vs B.
    pub builds: Vec<BuildSpec>,
    pub run: RunOptions,
    /// Measured runs of each arm.
    pub runs: usize,
    pub warmup: usize,
    pub seed: u64,
    /// `--profile`: a fourth arm, plain runs under the CPU profiler.
    pub profile: bool,
    /// Whether the runs export to an OTLP receiver (`--no-otlp`: none).
    pub otlp: bool,
    /// `--adapter`: `auto`, `none` or names.
    pub adapter: String,
    pub class_depth: Option<usize>,
    pub quiet: bool,
}

/// The experiment as the caller recorded it: what explain reads back, and
/// where its explanation goes.
pub trait Recorded {
    fn result(&mut self) -> &mut ExperimentResult;
    /// Keep the explanation (`json`) beside the runs, where they were kept.
    fn add_explanation(&mut self, json: &str) -> Result<()>;
}

/// How an explain ended.
pub enum Outcome<R> {
    /// Ctrl-C: during the calibration (nothing recorded), or during the runs.
    Interrupted(Option<R>),
    /// A run failed and the experiment stopped.
    Failed {
        recorded: R,
        /// The failed run's variant, e.g. `traced` or `B/adapted`.
        arm: String,
        /// The plain program did start, and the failed run had the adapters' switches on.
        adapters_suspect: bool,
    },
    /// Boxed: an explanation is large beside the other outcomes.
    Explained(Box<Explained<R>>),
}

pub struct Explained<R> {
    /// The experiment, its samples back in place without their traces.
    pub recorded: R,
    /// One per build, in order.
    pub explanations: Vec<Explanation>,
    /// A vs B: the difference between the builds, phase by phase.
    pub attribution: Option<Attribution>,
    /// The document stored beside the runs (and what `--export-json` writes).
    pub json: String,
}

/// Calibrate, run the arms through `record`, explain each build, store the
/// explanation.
pub fn run<R: Recorded>(
    opts: &Options,
    record: impl FnOnce(&Plan, &mut dyn Runner) -> Result<R>,
) -> Result<Outcome<R>> {
    let plan = plan(opts);
    // The untraced and traced runs export to a receiver too (one that keeps
    // nothing), so an app with an OpenTelemetry SDK behaves the same in every kind
    // of run instead of retrying a missing collector in all but the adapted ones.
    let sink = if opts.otlp {
        Some(otlp::Receiver::sink().context("starting the OTLP receiver (--no-otlp runs without it)")?)
    } else {
        None
    };
    let builds = builds(opts, sink.as_ref());
    say(
        opts,
        "coldstart explain: calibrating the tracer's cost per stop on this machine…",
    );
    let calibration = match estimate::calibrate(&opts.run, estimate::CALIBRATION_ROUNDS) {
        Ok(c) => c,
        // Ctrl-C during the calibration: nothing measured yet.
        Err(_) if signals::interrupted() => return Ok(Outcome::Interrupted(None)),
        Err(e) => return Err(e.context("calibrating the tracer (the untraced estimates need it)")),
    };
    announce(opts);
    let per_build = ARMS.len() + usize::from(opts.profile);
    let mut arms = Arms {
        opts,
        builds,
        per_build,
    };
    if opts.adapter.trim() == "none" {
        say(opts, "coldstart explain: adapters: none");
    }
    let mut recorded = record(&plan, &mut arms)?;
    let recorded = match stopped(&plan, recorded.result(), per_build) {
        Some(Stopped::Interrupted) => return Ok(Outcome::Interrupted(Some(recorded))),
        Some(Stopped::Failed {
            arm,
            adapters_suspect,
        }) => {
            return Ok(Outcome::Failed {
                recorded,
                arm,
                adapters_suspect,
            })
        }
        None => recorded,
    };
    explained(opts, arms.builds, recorded, &calibration)
}

/// The experiment: every build's arms, interleaved.
fn plan(opts: &Options) -> Plan {
    let ab = opts.builds.len() > 1;
    Plan {
        variants: opts
            .builds
            .iter()
            .flat_map(|b| {
                ARMS.iter()
                    .chain(opts.profile.then_some(&PROFILED_ARM))
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
        warmup: opts.warmup,
        order: Order::Shuffled,
        stop: StopRule::Fixed { runs: opts.runs },
        keep_going: false,
        seed: opts.seed,
    }
}

fn say(opts: &Options, line: &str) {
    if !opts.quiet {
        out::errln!("{line}");
    }
}

/// What is about to run, before the first run.
fn announce(opts: &Options) {
    let runs = opts.runs;
    let each = if opts.builds.len() > 1 { " per build" } else { "" };
    let profiled = if opts.profile {
        format!(", {runs} profiled")
    } else {
        String::new()
    };
    say(
        opts,
        &format!("coldstart explain: {runs} untraced, {runs} traced{profiled} and {runs} adapted runs{each}, interleaved…"),
    );
}

/// One build as the arms run it.
struct Build {
    spec: BuildSpec,
    /// Chosen from its first traced run (`--adapter none`: none, at once).
    adapters: Option<Vec<Box<dyn Adapter>>>,
    /// The measured adapted runs, their adapters' files kept for the sections.
    adapted: Vec<adapted::AdaptedRun>,
    /// The command with the runtimes' perf-map switches (the profiled arm; set
    /// once the OTLP receiver's environment is in `target`).
    profiled_target: Option<Target>,
    /// The measured profiled runs' samples, named after each run.
    profile: coldstart_core::profile::Collector,
}

/// The builds as run: with the OTLP receiver's environment, and the profiled
/// arm's own command.
fn builds(opts: &Options, sink: Option<&otlp::Receiver>) -> Vec<Build> {
    let none = opts.adapter.trim() == "none";
    opts.builds
        .iter()
        .map(|b| {
            let mut spec = b.clone();
            if let Some(r) = sink {
                spec.target.env.extend(r.env());
            }
            // The runtimes' perf-map switches, in the profiled runs only.
            let profiled_target = opts.profile.then(|| {
                let mut t = spec.target.clone();
                t.env
                    .extend(coldstart_core::profile::runtimes::env(&spec.target.env));
                t
            });
            Build {
                spec,
                adapters: none.then(Vec::new),
                adapted: Vec::new(),
                profiled_target,
                profile: coldstart_core::profile::Collector::new(),
            }
        })
        .collect()
}

enum Stopped {
    Interrupted,
    Failed { arm: String, adapters_suspect: bool },
}

/// Why the experiment stopped before its explanation, if it did.
fn stopped(plan: &Plan, result: &ExperimentResult, per_build: usize) -> Option<Stopped> {
    match result.stopped {
        Some(StopReason::Interrupted) => Some(Stopped::Interrupted),
        Some(StopReason::Failure) => {
            let failed = result.samples.last().filter(|s| !s.ok());
            let arm = failed.map_or("a".to_string(), |s| plan.variants[s.variant].name.clone());
            // Blame the adapters' switches only when the plain program did start.
            let plain_ok = result
                .samples
                .iter()
                .any(|s| s.variant % per_build == UNTRACED && s.ok());
            Some(Stopped::Failed {
                arm,
                adapters_suspect: plain_ok && failed.is_some_and(|s| s.variant % per_build == ADAPTED),
            })
        }
        _ => None,
    }
}

/// Each build explained from its share of the runs, A vs B attributed, the
/// document stored beside the runs.
fn explained<R: Recorded>(
    opts: &Options,
    mut builds: Vec<Build>,
    mut recorded: R,
    calibration: &estimate::Calibration,
) -> Result<Outcome<R>> {
    let per_build = ARMS.len() + usize::from(opts.profile);
    let result = recorded.result();
    let mut shares = split_by_build(result, builds.len(), per_build);
    let mut explanations = Vec::new();
    for (build, share) in builds.iter_mut().zip(shares.iter_mut()) {
        explanations.push(explain_build(opts, build, share, calibration)?);
    }
    let untraced: Vec<Vec<f64>> = shares.iter().map(|r| r.ready_ms(UNTRACED)).collect();
    result.samples = rejoin(shares, per_build);
    let names: Vec<&str> = builds.iter().map(|b| b.spec.name.as_str()).collect();
    let (json, attribution) = document(&names, &untraced, &explanations)?;
    recorded.add_explanation(&json)?;
    Ok(Outcome::Explained(Box::new(Explained {
        recorded,
        explanations,
        attribution,
        json,
    })))
}

/// One build's explanation from its arms' runs.
fn explain_build(
    opts: &Options,
    build: &mut Build,
    share: &mut ExperimentResult,
    calibration: &estimate::Calibration,
) -> Result<Explanation> {
    let adapters = build.adapters.take().unwrap_or_default();
    let mut e = super::from_experiment(
        share,
        &build.adapted,
        &adapters,
        Some(calibration),
        opts.run.requests,
    )?;
    e.otlp = opts.otlp;
    if opts.profile {
        let collector = std::mem::take(&mut build.profile);
        e.profile = profile(collector, &e, share);
    }
    Ok(e)
}

/// The document stored beside the runs: one explanation, or A vs B's two with
/// their attribution.
fn document(
    names: &[&str],
    untraced: &[Vec<f64>],
    explanations: &[Explanation],
) -> Result<(String, Option<Attribution>)> {
    if let ([na, nb], [ua, ub], [ea, eb]) = (names, untraced, explanations) {
        let side = |name, untraced_ms, explanation| attribution::Side {
            name,
            untraced_ms,
            explanation,
        };
        let att = attribution::attribute(&side(na, ua, ea), &side(nb, ub, eb));
        let doc = serde_json::json!({
            "schema": attribution::SCHEMA,
            "attribution": att,
            "builds": { na.to_string(): ea, nb.to_string(): eb },
        });
        return Ok((serde_json::to_string_pretty(&doc)? + "\n", Some(att)));
    }
    let e = explanations.first().context("no build was explained")?;
    Ok((serde_json::to_string_pretty(e)? + "\n", None))
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
            fleet: None,
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

/// The builds' samples back as the experiment's (variants numbered again);
/// their traces are done with (the explanations hold what they need).
fn rejoin(shares: Vec<ExperimentResult>, k: usize) -> Vec<Sample> {
    shares
        .into_iter()
        .enumerate()
        .flat_map(|(b, r)| {
            r.samples.into_iter().map(move |mut s| {
                s.trace = None;
                s.variant += b * k;
                s
            })
        })
        .collect()
}

/// The runner of the arms of every build: variant `v` is arm `v % k` of build
/// `v / k` (k = 3 arms, 4 with --profile). Each build's adapters are chosen from its first traced run's final
/// exec (what really runs after shims and wrappers), then kept for every
/// adapted run; an adapted run scheduled before any traced one first traces
/// one run, unrecorded, to choose them.
struct Arms<'a> {
    opts: &'a Options,
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
            ADAPTED => self.adapted(b, id),
            PROFILED => {
                let build = &mut self.builds[b];
                let target = build.profiled_target.as_ref().unwrap_or(&build.spec.target);
                let r = run_profiled(target, &build.spec.readiness, &self.opts.run, id);
                let mut s = interrupted(r, id)?;
                build.profile.add(&mut s, !id.warmup);
                Ok(s)
            }
            _ => {
                let spec = &self.builds[b].spec;
                run_once(&spec.target, &spec.readiness, &self.opts.run, id)
            }
        }
    }
}

/// A run cut short by Ctrl-C is an interrupted sample, so the scheduler stops
/// as it does for the plain arms.
fn interrupted(r: Result<Sample>, id: RunId) -> Result<Sample> {
    if signals::interrupted() {
        let mut s = match r {
            Ok(s) => s,
            Err(_) => Sample::begin(&id, coldstart_core::clock::now_ns()),
        };
        s.outcome = RunOutcome::Interrupted;
        s.ready_ns = None;
        return Ok(s);
    }
    r
}

/// The merged profile with the profiled arm's ready times and overhead.
fn profile(
    collector: coldstart_core::profile::Collector,
    e: &Explanation,
    result: &ExperimentResult,
) -> Option<coldstart_core::profile::Profile> {
    let mut p = collector.finish(&e.timeline.phases, (e.ready_ms * 1e6) as u64)?;
    let (untraced, profiled) = (result.ready_ms(UNTRACED), result.ready_ms(PROFILED));
    let mut sorted = profiled.clone();
    sorted.sort_by(f64::total_cmp);
    p.profiled_ms = coldstart_core::stats::summarize(&sorted);
    let r = coldstart_core::stats::ratio(&untraced, &profiled, super::CONFIDENCE);
    p.overhead = r.as_ref().map(|r| r.estimate);
    p.overhead_ci = r.and_then(|r| r.ci);
    Some(p)
}

impl Arms<'_> {
    /// A traced run; one cut short by Ctrl-C is an interrupted sample, so the
    /// scheduler stops as it does for the other arms.
    fn traced(&self, b: usize, id: RunId) -> Result<Sample> {
        let spec = &self.builds[b].spec;
        let r = run_traced(&spec.target, &spec.readiness, &self.opts.run, id);
        interrupted(r, id)
    }

    /// An adapted run (adapters' switches on, untraced); the adapters are
    /// chosen first from an unrecorded traced run if none was traced yet.
    fn adapted(&mut self, b: usize, id: RunId) -> Result<Sample> {
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
            &build.spec.target,
            &build.spec.readiness,
            &self.opts.run,
            chosen,
            self.opts.otlp,
            id,
        )?;
        let sample = a.sample.clone();
        if !id.warmup {
            build.adapted.push(a);
        }
        Ok(sample)
    }

    fn choose(&mut self, b: usize, trace: &coldstart_core::trace::Trace) -> Result<()> {
        let mut chosen =
            super::choose_adapters_for(&self.opts.adapter, trace, &self.builds[b].spec.readiness)?;
        let settings = adapter::Options {
            class_depth: self.opts.class_depth,
        };
        chosen.iter_mut().for_each(|a| a.configure(&settings));
        if !self.opts.quiet {
            let names: Vec<&str> = chosen.iter().map(|a| a.name()).collect();
            let of = if self.builds.len() > 1 {
                format!(" ({})", self.builds[b].spec.name)
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
