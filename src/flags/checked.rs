//! Checked options: one type per command, whole when `cmd/` gets it (its
//! variants included), and what clap cannot check refused here in one line.
//! Commands without a variant grammar get their clap struct itself, once checked.

use super::raw::{self, RawCommand};
use super::variants::{LambdaVariantSpec, Split, VariantSpec};
use super::{Command, ExportArgs, LimitArgs, StoreArgs};
use raw::NoiseArg;
use std::path::PathBuf;

/// `coldstart bench`.
#[derive(Debug)]
pub struct BenchArgs {
    /// The flags as clap parsed them (every one is valid as it is).
    pub flags: raw::BenchFlags,
    /// The `--name … -- COMMAND` blocks.
    pub variants: Vec<VariantSpec>,
}

impl std::ops::Deref for BenchArgs {
    type Target = raw::BenchFlags;
    fn deref(&self) -> &raw::BenchFlags {
        &self.flags
    }
}

/// `coldstart explain`.
#[derive(Debug)]
pub struct ExplainArgs {
    pub ready: Option<String>,
    pub ignore_failure: bool,
    pub success_exit_codes: Option<String>,
    pub runs: usize,
    pub timeout: f64,
    pub env: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub export_json: Option<PathBuf>,
    pub export_trace: Option<PathBuf>,
    pub export_html: Option<PathBuf>,
    pub profile: bool,
    pub export_flamegraph: Option<PathBuf>,
    pub export_folded: Option<PathBuf>,
    pub export_speedscope: Option<PathBuf>,
    pub adapter: String,
    pub class_depth: Option<u32>,
    pub no_otlp: bool,
    pub marks: Vec<String>,
    pub requests: usize,
    pub request_url: Option<String>,
    pub limits: LimitArgs,
    pub quiet: bool,
    pub warmup: usize,
    pub seed: Option<u64>,
    pub store: StoreArgs,
    pub no_store: bool,
    /// The program and its arguments (one build), or empty with `variants`.
    pub command: Vec<String>,
    /// A vs B: the builds named by `--name A [--ready …] [-e …] -- COMMAND`.
    pub variants: Vec<VariantSpec>,
}

/// `coldstart lambda`.
#[derive(Debug)]
pub struct LambdaArgs {
    /// The flags as clap parsed them (every one is valid as it is).
    pub flags: raw::LambdaFlags,
    /// The `--name … [--runtime …]` blocks.
    pub variants: Vec<LambdaVariantSpec>,
}

/// `coldstart lambda serve`.
#[derive(Debug)]
pub struct LambdaServeArgs {
    pub flags: raw::LambdaServeFlags,
    /// The `--name F [--runtime …]` blocks: one function each.
    pub functions: Vec<LambdaVariantSpec>,
}

impl std::ops::Deref for LambdaServeArgs {
    type Target = raw::LambdaServeFlags;
    fn deref(&self) -> &raw::LambdaServeFlags {
        &self.flags
    }
}

impl std::ops::Deref for LambdaArgs {
    type Target = raw::LambdaFlags;
    fn deref(&self) -> &raw::LambdaFlags {
        &self.flags
    }
}

/// `coldstart tune`.
#[derive(Debug)]
pub struct TuneArgs {
    pub ready: String,
    pub env: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub list: bool,
    pub only: Vec<String>,
    pub skip: Vec<String>,
    pub catalogue: Vec<PathBuf>,
    pub runtime: Option<String>,
    pub budget: f64,
    pub target_ci: String,
    pub min_runs: usize,
    pub max_runs: usize,
    pub warmup: usize,
    pub timeout: f64,
    pub requests: usize,
    pub request_url: Option<String>,
    pub noise: NoiseArg,
    pub export_json: Option<PathBuf>,
    pub export_markdown: Option<PathBuf>,
    pub export_html: Option<PathBuf>,
    pub store: StoreArgs,
    pub no_store: bool,
    pub quiet: bool,
    pub seed: Option<u64>,
    pub command: Vec<String>,
}

/// The export formats a command writes; the group's other flags (hidden from its
/// help) are refused.
fn writes(export: &ExportArgs, command: &str, json: bool, markdown: bool, csv: bool) -> Result<(), String> {
    for (given, flag, writes) in [
        (&export.export_json, "--export-json", json),
        (&export.export_markdown, "--export-markdown", markdown),
        (&export.export_csv, "--export-csv", csv),
    ] {
        if given.is_some() && !writes {
            return Err(format!(
                "{command} has no {flag}: see `coldstart {command} --help` for its exports"
            ));
        }
    }
    Ok(())
}

/// The command after `--` of a command that takes one, from the grammar.
fn the_command(split: &mut Split) -> Vec<String> {
    match split.variants.as_slice() {
        [VariantSpec { name: None, .. }] => split.variants.pop().map(|v| v.argv).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// clap's parse and the grammar's blocks → the command with its checked options.
pub fn check(raw: RawCommand, split: Split) -> Result<Command, String> {
    Ok(match raw {
        RawCommand::Bench(b) => bench(b, split)?,
        RawCommand::Explain(e) => explain(e, split)?,
        RawCommand::Lambda(l) => lambda(l, split)?,
        RawCommand::LambdaServe(l) => Command::LambdaServe(Box::new(LambdaServeArgs {
            flags: *l,
            functions: split.lambda,
        })),
        RawCommand::LambdaSetup(s) => Command::LambdaSetup(s),
        RawCommand::Tune(t) => tune(t, split)?,
        RawCommand::Compare(c) => {
            writes(&c.export, "compare", true, true, false)?;
            Command::Compare(c)
        }
        RawCommand::Gate(g) => {
            writes(&g.export, "gate", false, true, false)?;
            Command::Gate(g)
        }
        RawCommand::Demo(a) => Command::Demo(a),
        RawCommand::History(a) => Command::History(a),
        RawCommand::Show(a) => Command::Show(a),
        RawCommand::Report(a) => Command::Report(a),
        RawCommand::Pods(a) => Command::Pods(a),
        RawCommand::Completions(a) => Command::Completions(a),
        RawCommand::Man(a) => Command::Man(a),
        RawCommand::Fleet(raw::FleetArgs {
            command: raw::FleetCommand::Emit(e),
        }) => Command::FleetEmit(fleet_emit(e)?),
        RawCommand::Fleet(raw::FleetArgs {
            command: raw::FleetCommand::Status(s),
        }) => Command::FleetStatus(s),
    })
}

/// `coldstart fleet emit`.
#[derive(Debug)]
pub struct FleetEmitArgs {
    pub recipe: coldstart_fleet::Recipe,
    pub output: Option<PathBuf>,
    pub force: bool,
}

/// Every bad input of `fleet emit` in one line (an engine, N, the bench's words).
fn fleet_emit(e: raw::FleetEmitFlags) -> Result<FleetEmitArgs, String> {
    let engine = e.engine.ok_or_else(|| {
        format!(
            "fleet emit needs an engine: one of {}",
            coldstart_fleet::Engine::NAMES
        )
    })?;
    let engine = coldstart_fleet::Engine::parse(&engine).map_err(|e| e.to_string())?;
    let shards = e
        .shards
        .ok_or("fleet emit needs --shards N (machines, at least 1)")?;
    let shards = match shards.trim().parse::<u32>() {
        Ok(n) if n >= 1 => n,
        _ => return Err(format!("--shards {shards:?}: give a whole number of at least 1")),
    };
    let recipe = coldstart_fleet::Recipe {
        engine,
        shards,
        image: e.image,
        store_secret: e.store_secret,
        experiment: e.experiment,
        parallelism: e.parallelism,
        bench: e.bench,
    };
    recipe.check().map_err(|e| e.to_string())?;
    Ok(FleetEmitArgs {
        recipe,
        output: e.output,
        force: e.force,
    })
}

/// `coldstart bench`: the raw flags and the grammar's blocks.
fn bench(b: Box<raw::BenchFlags>, split: Split) -> Result<Command, String> {
    Ok(Command::Bench(Box::new(BenchArgs {
        flags: *b,
        variants: split.variants,
    })))
}

/// `coldstart explain`: the raw flags and the grammar's blocks.
fn explain(e: Box<raw::ExplainFlags>, mut split: Split) -> Result<Command, String> {
    writes(&e.export, "explain", true, false, false)?;
    let command = the_command(&mut split);
    let raw::ExplainFlags {
        ready,
        ignore_failure,
        success_exit_codes,
        runs,
        timeout,
        env,
        cwd,
        export,
        export_trace,
        profile,
        export_flamegraph,
        export_folded,
        export_speedscope,
        adapter,
        class_depth,
        no_otlp,
        marks,
        requests,
        request_url,
        limits,
        quiet,
        warmup,
        seed,
        store,
        no_store,
        name: _,
        command: _,
    } = *e;
    Ok(Command::Explain(Box::new(ExplainArgs {
        ready,
        ignore_failure,
        success_exit_codes,
        runs,
        timeout,
        env,
        cwd,
        export_json: export.export_json,
        export_trace,
        export_html: export.export_html,
        profile,
        export_flamegraph,
        export_folded,
        export_speedscope,
        adapter,
        class_depth,
        no_otlp,
        marks,
        requests,
        request_url,
        limits,
        quiet,
        warmup,
        seed,
        store,
        no_store,
        command,
        variants: split.variants,
    })))
}

/// `coldstart lambda`: the raw flags and the grammar's blocks.
fn lambda(l: Box<raw::LambdaFlags>, split: Split) -> Result<Command, String> {
    Ok(Command::Lambda(Box::new(LambdaArgs {
        flags: *l,
        variants: split.lambda,
    })))
}

/// `coldstart tune`: the raw flags and the grammar's blocks.
fn tune(t: Box<raw::TuneFlags>, mut split: Split) -> Result<Command, String> {
    writes(&t.export, "tune", true, true, false)?;
    let command = the_command(&mut split);
    let raw::TuneFlags {
        ready,
        env,
        cwd,
        list,
        only,
        skip,
        catalogue,
        runtime,
        budget,
        target_ci,
        min_runs,
        max_runs,
        warmup,
        timeout,
        requests,
        request_url,
        noise,
        export,
        store,
        no_store,
        quiet,
        seed,
        command: _,
    } = *t;
    Ok(Command::Tune(Box::new(TuneArgs {
        ready,
        env,
        cwd,
        list,
        only,
        skip,
        catalogue,
        runtime,
        budget,
        target_ci,
        min_runs,
        max_runs,
        warmup,
        timeout,
        requests,
        request_url,
        noise,
        export_json: export.export_json,
        export_markdown: export.export_markdown,
        export_html: export.export_html,
        store,
        no_store,
        quiet,
        seed,
        command,
    })))
}
