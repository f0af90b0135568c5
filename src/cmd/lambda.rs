//! The `lambda` command: arguments → validated variants (a memory sweep is one
//! variant per size) → the session's `measure` (schedule, store, statistics,
//! reports), with emulated cold starts (`lambda::ColdStarts`) as the runner.

use crate::cli::{LambdaArgs, LambdaVariantArgs, LambdaVariantSpec};
use anyhow::{anyhow, bail, Context, Result};
use coldstart::config;
use coldstart::experiment::{Plan, StopRule};
use coldstart::lambda::{discover_extensions, env, sandbox, ColdStarts, Config, Options};
use coldstart::session::{self, RunSettings};
use coldstart::target::{parse_env, Target};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Lambda's smallest and largest memory sizes.
const MEMORY_RANGE: std::ops::RangeInclusive<u64> = 128..=10_240;

/// Variants (name, config) from the arguments, validated before any run.
pub fn variants(args: &LambdaArgs) -> Result<Vec<(String, Config)>> {
    let unnamed = [LambdaVariantSpec {
        name: String::new(),
        args: LambdaVariantArgs::default(),
    }];
    let specs: &[LambdaVariantSpec] = if args.variants.is_empty() {
        &unnamed
    } else {
        &args.variants
    };
    let mut out: Vec<(String, Config)> = Vec::new();
    for spec in specs {
        let a = &spec.args;
        let runtime = a
            .runtime
            .as_ref()
            .or(args.shared.runtime.as_ref())
            .ok_or_else(|| {
                anyhow!("no runtime: give --runtime ./bootstrap (a `provided` runtime's executable)")
            })?;
        let runtime = Target::new(vec![runtime.display().to_string()], Vec::new(), None)
            .with_context(|| format!("--runtime {}", runtime.display()))?;
        let runtime = Target {
            cwd: runtime.program.parent().map(PathBuf::from),
            ..runtime
        };
        let bare = a.bare || args.shared.bare;
        let extensions = match a.extensions.as_ref().or(args.shared.extensions.as_ref()) {
            Some(dir) if !bare => discover_extensions(dir)?,
            _ => Vec::new(),
        };
        let mut vars = Vec::new();
        for e in args.shared.env.iter().chain(&a.env) {
            vars.push(parse_env(e)?);
        }
        env::check_user_env(&vars)?;
        let memories = if !a.memory.is_empty() {
            a.memory.clone()
        } else if !args.shared.memory.is_empty() {
            args.shared.memory.clone()
        } else {
            vec![1769]
        };
        for &mb in &memories {
            if !MEMORY_RANGE.contains(&mb) {
                bail!("--memory {mb}: Lambda allows 128 to 10240 MB");
            }
            let base = if spec.name.is_empty() {
                if memories.len() > 1 {
                    String::new()
                } else {
                    runtime.display_command()
                }
            } else {
                spec.name.clone()
            };
            let name = match (base.is_empty(), memories.len() > 1) {
                (true, _) => format!("{mb}MB"),
                (false, true) => format!("{base}@{mb}MB"),
                (false, false) => base,
            };
            if out.iter().any(|(n, _)| *n == name) {
                bail!("two variants are named '{name}': give each its own --name");
            }
            out.push((
                name,
                Config {
                    runtime: runtime.clone(),
                    extensions: extensions.clone(),
                    memory_mb: mb,
                    env: vars.clone(),
                    bare,
                },
            ));
        }
    }
    Ok(out)
}

pub fn run(args: &LambdaArgs) -> Result<i32> {
    coldstart::bounds::runs("--runs", args.runs, 1)?;
    coldstart::bounds::runs("--warmup", args.warmup, 0)?;
    coldstart::bounds::count(
        "--output-lines",
        args.common.output_lines,
        0,
        coldstart::bounds::MAX_OUTPUT_LINES,
    )?;
    let init_timeout = coldstart::bounds::seconds("--init-timeout", args.init_timeout, false)?;
    let function_timeout = coldstart::bounds::seconds("--timeout", args.timeout, false)?;
    args.common.export.check_dirs()?;
    let configs = variants(args)?;
    let event = match &args.event {
        Some(p) => {
            let bytes = std::fs::read(p).with_context(|| format!("reading --event {}", p.display()))?;
            serde_json::from_slice::<serde_json::Value>(&bytes).with_context(|| {
                format!(
                    "--event {} is not JSON: Lambda events are JSON documents",
                    p.display()
                )
            })?;
            bytes
        }
        None => b"{}".to_vec(),
    };
    let cgroups = if args.no_cgroup || configs.iter().all(|(_, c)| c.bare) {
        None
    } else {
        Some(sandbox::Cgroups::detect()?)
    };
    let log = match &args.log {
        Some(p) => Some(Arc::new(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("opening --log {}", p.display()))?,
        ))),
        None => None,
    };
    let opts = Options {
        event,
        init_timeout,
        function_timeout,
        init_boost: args.init_boost,
        cgroups,
        function_name: args.function_name.clone(),
        handler: args.handler.clone(),
        region: args.region.clone(),
        log,
        save_response: args.save_response.clone(),
        tail_lines: args.common.output_lines,
    };
    let plan = Plan {
        variants: configs.iter().map(|(name, c)| c.variant(name.clone())).collect(),
        warmup: args.warmup,
        order: args.order.into(),
        stop: StopRule::Fixed { runs: args.runs },
        keep_going: args.common.keep_going,
        seed: args.common.seed(),
    };
    // What lambda has always recorded: the init timeout, no polling (the APIs
    // say when init is over), and the one invoke.
    let recorded = RunSettings {
        timeout: opts.init_timeout,
        poll_interval: Duration::ZERO,
        requests: 1,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime for the Lambda APIs")?;
    if !args.common.quiet {
        let limits = match &opts.cgroups {
            Some(c) => format!(
                "cgroup {}: memory limit and CPU = memory/1769 vCPU{}",
                c.version(),
                if opts.init_boost {
                    ", unthrottled during init"
                } else {
                    ""
                }
            ),
            None => "no cgroup: no memory or CPU limit".into(),
        };
        coldstart::out::errln!("coldstart lambda: {} variant(s), {limits}", configs.len());
    }
    let root = config::project_root();
    let cfg = config::load(&root)?;
    let settings = session::settings(&plan, recorded, args.common.noise.noise);
    let outputs = args.common.outputs(cfg.as_ref(), &root);
    let mut runner = ColdStarts {
        rt: &rt,
        configs: configs.into_iter().map(|(_, c)| c).collect(),
        opts,
    };
    session::measure(&plan, &settings, &outputs, &mut runner)
}
