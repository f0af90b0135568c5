//! The `tune` command: detect the runtime (one traced run), pick the
//! catalogue's candidates, time one baseline run for the estimate, set up and
//! check each candidate (untimed), measure them all against the baseline in one
//! interleaved experiment (the session machinery bench uses), then the
//! combination of the winners in a second short one; print, export and store.

use crate::cli::TuneArgs;
use anyhow::{anyhow, bail, Context, Result};
use coldstart::analysis::Analysis;
use coldstart::bounds;
use coldstart::config;
use coldstart::experiment::{CiOf, Order, Plan, StopReason, StopRule};
use coldstart::launch::signals;
use coldstart::out;
use coldstart::run::conditions::{Conditions, Settings};
use coldstart::run::{run_once, Plain, RunId, RunOptions, Spec};
use coldstart::sample::ExitPolicy;
use coldstart::session;
use coldstart::target::{parse_env, shell_join, shell_quote, Readiness, Target};
use coldstart::tune::catalogue::{self, Candidate};
use coldstart::tune::plan::{self, Change, Prepared};
use coldstart::tune::report::{self, Recommended, Row, Status, Tuned};
use coldstart::tune::{self as tune};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The name candidate variants get in the store: history lists such an experiment as `tune`.
const PREFIX: &str = "tune:";

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
    let (ci_target, relative) = parse_target_ci(&args.target_ci)?;
    if args.requests > 0 && !matches!(readiness, Readiness::Http { .. }) {
        bail!(
            "--requests needs http readiness (--ready http://127.0.0.1:PORT/…): the requests go to that URL"
        );
    }
    let exports = coldstart::report::export::Exports {
        json: args.export_json.clone(),
        markdown: args.export_markdown.clone(),
        csv: None,
        trace: None,
    };
    exports.check()?;
    let opts = RunOptions {
        timeout,
        poll_interval: Duration::from_micros(200),
        requests: args.requests,
        request_url: None,
        grace: Duration::from_secs(2),
        tail_lines: 10,
        log_marks: Vec::new(),
        claims: Vec::new(),
        exit_policy: ExitPolicy::from_flags(false, None)?,
        show_output: false,
    };
    let say = |line: String| {
        if !args.quiet {
            out::errln!("{line}");
        }
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
            }
        }
        None => {
            say(format!(
                "tune: one traced run of {} to find its runtime…",
                target.display_command()
            ));
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
    let cat = catalogue::load(&rt.name, &user)?;
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
            coldstart::sample::describe_failure(&target.display_command(), &first)
        );
    }
    let base = Spec {
        target: target.clone(),
        readiness: readiness.clone(),
    };
    let mut rows: Vec<(usize, Row)> = Vec::new();
    let mut ready: Vec<(usize, Target, PathBuf)> = Vec::new();
    let measurable: Vec<usize> = (0..chosen.len())
        .filter(|&i| chosen[i].unavailable(rt.version.as_deref()).is_none())
        .collect();
    let setups: f64 = measurable
        .iter()
        .map(|&i| if chosen[i].train.is_some() { 2.0 } else { 1.0 })
        .sum();
    let variants = measurable.len() + 1;
    let rounds = rounds_for(args, run_cost, variants);
    say(format!(
        "tune: {} {}· {} candidates, {} to measure · one run ≈ {:.1} s · set-up ≈ {:.0} s, then at most {} rounds × {} variants ≈ {:.0} s (--budget {:.0} s)",
        rt.name,
        rt.version.as_deref().map(|v| format!("{v} ")).unwrap_or_default(),
        chosen.len(),
        measurable.len(),
        run_cost,
        setups * run_cost,
        rounds + args.warmup,
        variants,
        (rounds + args.warmup) as f64 * variants as f64 * run_cost,
        args.budget
    ));

    let mut interrupted = false;
    for (i, c) in chosen.iter().enumerate() {
        if let Some(why) = c.unavailable(rt.version.as_deref()) {
            rows.push((i, Row::unmeasured(c, Status::Unavailable { why })));
            continue;
        }
        if interrupted || signals::interrupted() {
            interrupted = true;
            rows.push((i, Row::unmeasured(c, Status::NotMeasured)));
            continue;
        }
        let dir = plan::work_dir(work.path(), &c.id)?;
        let t = match plan::apply(&target, &cat.file, &Change::of(c, &dir)) {
            Ok(t) => t,
            Err(e) => {
                rows.push((
                    i,
                    Row::unmeasured(
                        c,
                        Status::NotApplicable {
                            why: format!("{e:#}"),
                        },
                    ),
                ));
                continue;
            }
        };
        say(format!("tune: setting up and checking {} ({})…", c.id, c.title));
        let prepared = plan::prepare(c, &dir, &base, &cat.file, &opts, &t)?;
        if signals::interrupted() {
            interrupted = true;
            rows.push((i, Row::unmeasured(c, Status::NotMeasured)));
            continue;
        }
        match prepared {
            Prepared::Ready(t) => ready.push((i, t, dir)),
            Prepared::Broken(why) => rows.push((i, Row::unmeasured(c, Status::Broken { why }))),
            Prepared::NotApplicable(why) => rows.push((i, Row::unmeasured(c, Status::NotApplicable { why }))),
        }
    }

    let mut experiments = Vec::new();
    let mut baseline_ready_ms = first.ready_ns.map(|ns| ns as f64 / 1e6);
    let stop = |max_runs: usize| StopRule::Adaptive {
        min_runs: args.min_runs.min(max_runs),
        max_runs,
        target: ci_target,
        relative,
        of: CiOf::Shift,
    };
    let seed = args
        .seed
        .unwrap_or_else(|| coldstart::clock::now_ns() ^ u64::from(std::process::id()));
    if !ready.is_empty() && !interrupted {
        let rounds = rounds_for(args, run_cost, ready.len() + 1);
        let mut specs = vec![base.clone()];
        let mut names = vec!["baseline".to_string()];
        for (i, t, _) in &ready {
            specs.push(Spec {
                target: t.clone(),
                readiness: readiness.clone(),
            });
            names.push(format!("{PREFIX}{}", chosen[*i].id));
        }
        let (measured, stored) =
            experiment(&specs, &names, stop(rounds), seed, &opts, &outputs, args.warmup)?;
        experiments.extend(stored);
        interrupted |= measured.1 == Some(StopReason::Interrupted);
        let analysis = &measured.0;
        baseline_ready_ms = analysis.variants[0]
            .ready_ms
            .as_ref()
            .map(|s| s.p50)
            .or(baseline_ready_ms);
        for (k, (i, _, _)) in ready.iter().enumerate() {
            let v = &analysis.variants[k + 1];
            let row = if v.ok_runs + v.failed_runs == 0 {
                Row::unmeasured(chosen[*i], Status::NotMeasured)
            } else {
                Row::measured(chosen[*i], v, &analysis.variants[0])
            };
            rows.push((*i, row));
        }
    }
    rows.sort_by_key(|(i, _)| *i);
    let rows: Vec<Row> = rows.into_iter().map(|(_, r)| r).collect();

    // The winners together, best first.
    let mut winners: Vec<(&Candidate, PathBuf, f64)> = ready
        .iter()
        .filter_map(|(i, _, dir)| {
            let r = rows.iter().find(|r| r.id == chosen[*i].id)?;
            (r.status == Status::Faster).then(|| (chosen[*i], dir.clone(), r.shift_ms.unwrap_or(0.0)))
        })
        .collect();
    winners.sort_by(|a, b| a.2.total_cmp(&b.2));
    let mut recommended = None;
    if !winners.is_empty() {
        let pairs: Vec<(&Candidate, PathBuf)> = winners.iter().map(|(c, d, _)| (*c, d.clone())).collect();
        let (mut members, change) = plan::combine(&pairs);
        let mut combined = plan::apply(&target, &cat.file, &change)?;
        let mut ids: Vec<String> = members.iter().map(|c| c.id.clone()).collect();
        let mut note = None;
        let mut row = None;
        if members.len() == 1 {
            row = rows.iter().find(|r| r.id == ids[0]).cloned();
        } else if !interrupted {
            say(format!("tune: measuring the combination {}…", ids.join(" + ")));
            let combo = Candidate {
                id: ids.join("+"),
                title: "recommended set".into(),
                ..Candidate::default()
            };
            row = Some(match plan::check(&combined, &readiness, &opts)? {
                Prepared::Ready(_) => {
                    let rounds =
                        rounds_for(args, run_cost, 2).min(args.max_runs.div_ceil(2).max(args.min_runs));
                    let specs = vec![
                        base.clone(),
                        Spec {
                            target: combined.clone(),
                            readiness: readiness.clone(),
                        },
                    ];
                    let names = vec!["baseline".to_string(), format!("{PREFIX}{}", combo.id)];
                    let (m, stored) = experiment(
                        &specs,
                        &names,
                        stop(rounds),
                        seed ^ 1,
                        &opts,
                        &outputs,
                        args.warmup,
                    )?;
                    experiments.extend(stored);
                    interrupted |= m.1 == Some(StopReason::Interrupted);
                    Row::measured(&combo, &m.0.variants[1], &m.0.variants[0])
                }
                Prepared::Broken(why) | Prepared::NotApplicable(why) => {
                    Row::unmeasured(&combo, Status::Broken { why })
                }
            });
        }
        // A combination that breaks or does not beat the baseline is not recommended:
        // the best single winner is, and the table says what the combination did.
        if members.len() > 1 && row.as_ref().is_some_and(|r| r.status != Status::Faster) {
            let best = members[0];
            let shown_combo = row.as_ref().map(|r| shown(r.clone(), work.path()));
            note = Some(format!(
                "{} together: {}; the best single one is recommended",
                ids.join(" + "),
                shown_combo.map_or_else(String::new, |r| report::effect(&r))
            ));
            members = vec![best];
            ids = vec![best.id.clone()];
            combined = plan::apply(&target, &cat.file, &Change::of(best, &work.path().join(&best.id)))?;
            row = rows.iter().find(|r| r.id == best.id).cloned();
        }
        let mut train = Vec::new();
        for c in &members {
            let Some(t) = &c.train else { continue };
            let dir = work.path().join(&c.id);
            let change = Change {
                args: t.args.iter().map(|a| catalogue::expand(a, &dir)).collect(),
                env: t
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), catalogue::expand(v, &dir)))
                    .collect(),
                env_append: Default::default(),
            };
            if let Ok(trainee) = plan::apply(&target, &cat.file, &change) {
                train.push(command_line(&trainee, &target, work.path()));
            }
        }
        let mut rec = recommendation(ids, &combined, &target, work.path(), row);
        rec.train = train;
        rec.note = note;
        recommended = Some(rec);
    }

    let tuned = Tuned {
        runtime: rt.name.clone(),
        executable: rt.exe.display().to_string(),
        version: rt.version.clone(),
        baseline: target.display_command(),
        baseline_ready_ms,
        noise: args.noise.noise,
        rows: rows.into_iter().map(|r| shown(r, work.path())).collect(),
        recommended,
        experiments: experiments.iter().map(|(id, _)| *id).collect(),
        interrupted,
    };
    if let Some(p) = &args.export_json {
        coldstart::report::export::write(p, &serde_json::to_vec_pretty(&tuned)?)?;
    }
    if let Some(p) = &args.export_markdown {
        coldstart::report::export::write(p, report::markdown(&tuned).as_bytes())?;
    }
    out::out!("{}", report::terminal(&tuned))?;
    for (id, location) in &experiments {
        out::outln!("stored as experiment {id} in {location}")?;
    }
    work.close().context("removing tune's work directory")?;
    Ok(if interrupted { signals::exit_code() } else { 0 })
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

/// One interleaved experiment through the session (stored run by run).
fn experiment(
    specs: &[Spec],
    names: &[String],
    stop: StopRule,
    seed: u64,
    opts: &RunOptions,
    outputs: &session::Outputs,
    warmup: usize,
) -> Result<((Analysis, Option<StopReason>), Stored)> {
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
    let settings = session::settings(&plan, opts.into(), outputs.noise);
    let (m, store_error) = session::run(&plan, &settings, outputs, &mut runner)?;
    runner.finish()?;
    if let Some(e) = store_error {
        return Err(e.context("the runs were measured, but storing them failed"));
    }
    // The run Ctrl-C cut short is no failure of its candidate.
    let mut analysis = m.analysis;
    for s in &m.result.samples {
        if !s.warmup && s.outcome == coldstart::sample::Outcome::Interrupted {
            if let Some(v) = analysis.variants.get_mut(s.variant) {
                v.failed_runs = v.failed_runs.saturating_sub(1);
            }
        }
    }
    Ok(((analysis, m.result.stopped), m.stored_as.into_iter().collect()))
}

/// A row as shown: the work directory's paths become plain file names.
fn shown(mut r: Row, work: &Path) -> Row {
    let w = work.to_string_lossy();
    r.apply = r.apply.replace(&format!("{w}/"), "");
    if let Status::Broken { why } = &mut r.status {
        *why = strip_work(why, work);
    }
    r
}

/// `{work}/ID/file` → `file` in what is shown to the user.
fn strip_work(s: &str, work: &Path) -> String {
    let w = work.to_string_lossy();
    let re = regex::Regex::new(&format!("{}/[^/ ]+/", regex::escape(&w)));
    match re {
        Ok(re) => re.replace_all(s, "").into_owned(),
        Err(_) => s.to_string(),
    }
}

/// The recommended command and environment, with the work paths as plain file names.
fn recommendation(
    ids: Vec<String>,
    combined: &Target,
    base: &Target,
    work: &Path,
    row: Option<Row>,
) -> Recommended {
    Recommended {
        ids,
        command: command_line(combined, base, work),
        env: added_env(combined, base, work),
        train: Vec::new(),
        note: None,
        row: row.map(|r| shown(r, work)),
    }
}

/// The variables `t` sets beyond the baseline's, as KEY=VALUE.
fn added_env(t: &Target, base: &Target, work: &Path) -> Vec<String> {
    t.env
        .iter()
        .skip(base.env.len())
        .map(|(k, v)| format!("{k}={}", shell_quote(&strip_work(v, work))))
        .collect()
}

/// `t` as a shell line: its added variables, then its argv.
fn command_line(t: &Target, base: &Target, work: &Path) -> String {
    let added = added_env(t, base, work);
    let argv: Vec<String> = t.argv.iter().map(|a| strip_work(a, work)).collect();
    if added.is_empty() {
        shell_join(&argv)
    } else {
        format!("{} {}", added.join(" "), shell_join(&argv))
    }
}

/// `--list`: the catalogue for this runtime with each candidate's rationale.
fn list(rt: &tune::Runtime, chosen: &[&Candidate]) -> String {
    let mut s = format!(
        "{} {}({}): {} candidates\n",
        rt.name,
        rt.version.as_deref().map(|v| format!("{v} ")).unwrap_or_default(),
        rt.exe.display(),
        chosen.len()
    );
    for c in chosen {
        let state = match c.unavailable(rt.version.as_deref()) {
            Some(why) => format!("  [{why}]"),
            None => String::new(),
        };
        s.push_str(&format!("\n{} — {}{state}\n", c.id, c.title));
        for (label, text) in [
            ("what", &c.what),
            ("why", &c.why),
            ("risks", &c.risks),
            ("apply", &c.apply),
            ("source", &c.source),
        ] {
            if !text.is_empty() {
                s.push_str(&format!("  {label}: {text}\n"));
            }
        }
        if c.train.is_some() || c.setup.is_some() {
            s.push_str("  set-up: a training run of the program, once, untimed\n");
        }
    }
    s
}

/// `2%` → (0.02, relative); `5ms` or `5` → (5.0, absolute ms).
fn parse_target_ci(s: &str) -> Result<(f64, bool)> {
    let bad =
        || anyhow!("bad --target-ci '{s}': write a percentage of the median (2%) or milliseconds (5ms)");
    let (num, relative) = match s.strip_suffix('%') {
        Some(n) => (n, true),
        None => (s.strip_suffix("ms").unwrap_or(s), false),
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    if !(v > 0.0 && v <= if relative { 100.0 } else { 1e9 }) {
        return Err(bad());
    }
    Ok(if relative { (v / 100.0, true) } else { (v, false) })
}
