//! The `lambda` command: arguments → validated variants (a memory sweep is one
//! variant per size) → the session's `measure` (schedule, store, statistics,
//! reports), with emulated cold starts (`lambda::ColdStarts`) as the runner.

use crate::flags::{LambdaArgs, LambdaInitCpuArgs, LambdaServeArgs, LambdaVariantArgs, LambdaVariantSpec};
use crate::session::{self, RunSettings};
use anyhow::{anyhow, bail, Context, Result};
use coldstart_core::config;
use coldstart_core::experiment::sweep::point_name;
use coldstart_core::experiment::{Param, Plan, StopRule, Sweep};
use coldstart_core::target::parse_env;
use coldstart_lambda::{boost, env, function, namespace, sandbox, ColdStarts, Config, Options};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[cfg(feature = "aws")]
mod aws;
mod tune;

/// Lambda's smallest and largest memory sizes.
const MEMORY_RANGE: std::ops::RangeInclusive<u64> = 128..=10_240;

/// A variant at one memory size: its name, its parameter values (`memory`, when
/// several sizes run) and its configuration.
pub type Point = (String, Vec<(String, String)>, Config);

/// The memory sizes a variant runs at.
fn memories(args: &LambdaArgs, a: &LambdaVariantArgs) -> Vec<u64> {
    if !a.memory.is_empty() {
        a.memory.clone()
    } else if !args.shared.memory.is_empty() {
        args.shared.memory.clone()
    } else {
        vec![1769]
    }
}

/// Variants (name, params, config) from the arguments, validated before any
/// run. When more than one memory size runs, memory is a swept parameter (a
/// resource): each variant runs at each of its sizes as `NAME[memory=MB]`, and the
/// reports show bench's sweep table.
pub fn variants(args: &LambdaArgs) -> Result<Vec<Point>> {
    let unnamed = [LambdaVariantSpec {
        name: String::new(),
        args: LambdaVariantArgs::default(),
    }];
    let specs: &[LambdaVariantSpec] = if args.variants.is_empty() {
        &unnamed
    } else {
        &args.variants
    };
    let mut sizes: Vec<u64> = specs.iter().flat_map(|s| memories(args, &s.args)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let swept = sizes.len() > 1;
    let mut out: Vec<Point> = Vec::new();
    for spec in specs {
        let a = &spec.args;
        let runtime = a
            .runtime
            .as_ref()
            .or(args.shared.runtime.as_ref())
            .ok_or_else(|| {
                anyhow!("no runtime: give --runtime python3.11|nodejs20.x|java17 with --code DIR, or --runtime ./bootstrap (a `provided` runtime's executable)")
            })?;
        let bare = a.bare || args.shared.bare;
        let mut vars = Vec::new();
        for e in args.shared.env.iter().chain(&a.env) {
            vars.push(parse_env(e)?);
        }
        env::check_user_env(&vars)?;
        let layers = if a.layer.is_empty() {
            &args.shared.layer
        } else {
            &a.layer
        };
        let handler = a
            .handler
            .as_deref()
            .or(args.shared.handler.as_deref())
            .unwrap_or("function.handler");
        let func = function::Function::new(&function::Flags {
            runtime,
            code: a.code.as_deref().or(args.shared.code.as_deref()),
            layers,
            extensions: a.extensions.as_deref().or(args.shared.extensions.as_deref()),
            handler,
            env: &vars,
            bare,
            sandboxed: sandboxed(&args.shared, a)?,
        })?;
        if spec.name.contains(['[', ']']) {
            bail!(
                "bad --name '{}': brackets mark parameter values (name[memory=512]); pick a name without them",
                spec.name
            );
        }
        let sizes = memories(args, a);
        if let Some(mb) = sizes
            .iter()
            .enumerate()
            .find_map(|(i, mb)| sizes[..i].contains(mb).then_some(mb))
        {
            bail!("--memory {mb} is given twice: give each size once");
        }
        for mb in sizes {
            if !MEMORY_RANGE.contains(&mb) {
                bail!("--memory {mb}: Lambda allows 128 to 10240 MB");
            }
            let base = if spec.name.is_empty() {
                func.label()
            } else {
                spec.name.clone()
            };
            let params = if swept {
                vec![("memory".to_string(), mb.to_string())]
            } else {
                Vec::new()
            };
            let name = point_name(&base, &params);
            if out.iter().any(|(n, _, _)| *n == name) {
                bail!("two variants are named '{name}': give each its own --name");
            }
            let at = func.at(mb)?;
            out.push((
                name,
                params,
                Config {
                    runtime: at.runtime,
                    extensions: func.extensions.clone(),
                    memory_mb: mb,
                    handler: handler.to_string(),
                    env: vars.clone(),
                    platform_env: at.platform_env,
                    runtime_version: at.runtime_version,
                    bare,
                    layout: func.layout.clone(),
                    interpreter_note: func.interpreter_note(),
                    version: "$LATEST".into(),
                },
            ));
        }
    }
    Ok(out)
}

/// Whether a variant runs in the sandbox's mount namespace: `--sandbox` requires
/// it, `--no-sandbox` refuses it (a variant's flag over the shared one), and by
/// default it is on where it can be made, else off with one note on stderr.
fn sandboxed(shared: &LambdaVariantArgs, a: &LambdaVariantArgs) -> Result<bool> {
    let (on, off) = if a.sandbox || a.no_sandbox {
        (a.sandbox, a.no_sandbox)
    } else {
        (shared.sandbox, shared.no_sandbox)
    };
    if off {
        return Ok(false);
    }
    match namespace::available() {
        Ok(_) => Ok(true),
        Err(why) if on => bail!("--sandbox: {why}; run without it (on the host's paths)"),
        Err(why) => {
            static NOTED: std::sync::Once = std::sync::Once::new();
            NOTED.call_once(|| {
                coldstart_core::out::errln!(
                    "coldstart lambda: no sandbox mount namespace ({why}): `sandbox` does not resolve, and the code and layers stay at their host paths"
                )
            });
            Ok(false)
        }
    }
}

/// What a memory sweep records in the settings: `memory`, a resource.
fn memory_sweep(configs: &[Point], along: Option<&str>) -> Result<Option<Sweep>> {
    let mut sizes: Vec<u64> = configs
        .iter()
        .filter(|(_, p, _)| !p.is_empty())
        .map(|(_, _, c)| c.memory_mb)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let names: Vec<&str> = configs.iter().map(|(n, _, _)| n.as_str()).collect();
    sweep_of(sizes.iter().map(u64::to_string).collect(), &names, along)
}

/// The `memory` parameter over `values` (none: no sweep, and --compare-along
/// refused), compared along it by default when `names` (the variants',
/// `NAME[memory=MB]`) hold more than one base name.
fn sweep_of(values: Vec<String>, names: &[&str], along: Option<&str>) -> Result<Option<Sweep>> {
    if values.is_empty() {
        if let Some(a) = along {
            bail!(
                "--compare-along {a}: only a memory sweep (--memory 128,512,...) has a parameter, `memory`"
            );
        }
        return Ok(None);
    }
    let mut sweep = Sweep {
        params: vec![Param {
            name: "memory".into(),
            values,
            resource: true,
        }],
        compare_along: along.map(str::to_string),
    };
    sweep.check().map_err(|e| anyhow!(e))?;
    let mut bases: Vec<&str> = names.iter().map(|n| n.split('[').next().unwrap_or(n)).collect();
    bases.dedup();
    sweep.default_along(bases.len());
    Ok(Some(sweep))
}

/// The init boost model from its flags (None: `--no-init-boost`).
fn init_boost(a: &LambdaInitCpuArgs) -> Result<Option<boost::Boost>> {
    if a.no_init_boost {
        return Ok(None);
    }
    if !(a.init_cpus.is_finite() && a.init_cpus > 0.0 && a.init_cpus <= sandbox::MAX_VCPUS) {
        bail!(
            "--init-cpus {}: give vCPUs above 0 and at most {} (or --no-init-boost)",
            a.init_cpus,
            sandbox::MAX_VCPUS
        );
    }
    let seconds = coldstart_core::bounds::seconds("--init-boost-seconds", a.init_boost_seconds, true)?;
    Ok(Some(boost::Boost {
        vcpus: a.init_cpus,
        seconds,
    }))
}

/// Lambda's maximum function timeout (s).
const MAX_FUNCTION_TIMEOUT_S: f64 = 900.0;

/// `--save-response` is written after the first successful invoke: a path that
/// cannot be written is said before any run, as `--log`'s is.
fn check_save_response(p: &std::path::Path) -> Result<()> {
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "--save-response {}: directory {} does not exist; create it or give another path",
            p.display(),
            dir.display()
        );
    }
    if p.is_dir() {
        bail!(
            "--save-response {}: is a directory; give a file's path",
            p.display()
        );
    }
    Ok(())
}

/// `--event FILE`: a JSON document Lambda would take in a synchronous invoke
/// (none: `{}`).
fn read_event(event: Option<&std::path::Path>) -> Result<Vec<u8>> {
    Ok(match event {
        Some(p) => {
            let bytes = std::fs::read(p).with_context(|| format!("reading --event {}", p.display()))?;
            let max = coldstart_lambda::runtime_api::MAX_EVENT;
            if bytes.len() > max {
                bail!(
                    "--event {}: {} bytes is too large for a synchronous invoke (Lambda's limit is {max} bytes); pass a smaller event, or a reference to the data (an S3 key)",
                    p.display(),
                    bytes.len()
                );
            }
            serde_json::from_slice::<serde_json::Value>(&bytes).with_context(|| {
                format!(
                    "--event {} is not JSON: Lambda events are JSON documents",
                    p.display()
                )
            })?;
            bytes
        }
        None => b"{}".to_vec(),
    })
}

/// The limits the runs will have, and which interpreter each managed runtime
/// found on PATH (once each).
fn announce(opts: &Options, configs: &[Point]) {
    let limits = match &opts.cgroups {
        Some(c) => format!(
            "cgroup {}: memory limit and CPU = memory/1769 vCPU{}",
            c.version(),
            match opts.init_boost {
                Some(b) => format!(
                    ", on-demand init at least {} vCPU for up to {} s",
                    b.vcpus,
                    b.seconds.as_secs_f64()
                ),
                None => ", init too (--no-init-boost)".into(),
            }
        ),
        None => "no cgroup: no memory or CPU limit".into(),
    };
    // Which interpreter each managed runtime found on PATH, once each.
    let mut chosen: Vec<&str> = Vec::new();
    for note in configs
        .iter()
        .filter_map(|(_, _, c)| c.interpreter_note.as_deref())
    {
        if !chosen.contains(&note) {
            chosen.push(note);
        }
    }
    let chosen: String = chosen.iter().map(|n| format!("; {n}")).collect();
    coldstart_core::out::errln!("coldstart lambda: {} variant(s), {limits}{chosen}", configs.len());
}

/// `--aws`: deployed functions on the service (`aws::run`), in a build with the
/// `aws` feature.
#[cfg(feature = "aws")]
fn on_aws(args: &LambdaArgs) -> Result<i32> {
    aws::run(args)
}

#[cfg(not(feature = "aws"))]
fn on_aws(_: &LambdaArgs) -> Result<i32> {
    bail!("--aws: this coldstart was built without the `aws` feature (cargo build --features aws)")
}

/// The deployed-function flags belong to --aws; the emulator invokes every
/// variant with one event.
fn local_only(args: &LambdaArgs) -> Result<()> {
    let given = std::iter::once(&args.shared)
        .chain(args.variants.iter().map(|v| &v.args))
        .find_map(|a| {
            a.function
                .as_ref()
                .map(|_| "--function")
                .or((!a.layer_arn.is_empty()).then_some("--layer-arn"))
        });
    if let Some(flag) = given {
        bail!("{flag} names a deployed function or layer: give --aws with it");
    }
    let all = || std::iter::once(&args.shared).chain(args.variants.iter().map(|v| &v.args));
    if all().any(|a| a.snapstart) {
        bail!("--snapstart is SnapStart on the service: give --aws with it (the emulator has no snapshots)");
    }
    if let Some(arch) = all().find_map(|a| a.architecture) {
        bail!(
            "--architecture {}: it checks a deployed function's: give --aws with it (the emulator runs on this machine's)",
            arch.as_str()
        );
    }
    if args.variants.iter().any(|v| v.args.event.is_some()) {
        bail!("--event per variant is for --aws: the emulator invokes every variant with one --event, given before the first --name");
    }
    Ok(())
}

/// The variants' configurations and the options every run shares, checked.
fn emulator(args: &LambdaArgs) -> Result<(Vec<Point>, Options)> {
    coldstart_core::bounds::runs("--runs", args.runs, 1)?;
    coldstart_core::bounds::runs("--warmup", args.warmup, 0)?;
    coldstart_core::bounds::count("--invokes", args.invokes, 0, 10_000)?;
    coldstart_core::bounds::count(
        "--output-lines",
        args.common.output_lines,
        0,
        coldstart_core::bounds::MAX_OUTPUT_LINES,
    )?;
    let init_timeout = coldstart_core::bounds::seconds("--init-timeout", args.init_timeout, false)?;
    let function_timeout = coldstart_core::bounds::seconds("--timeout", args.timeout, false)?;
    if args.timeout > MAX_FUNCTION_TIMEOUT_S {
        bail!(
            "--timeout {}: Lambda's function timeout is at most {MAX_FUNCTION_TIMEOUT_S} seconds (15 minutes); give 900 or less",
            args.timeout
        );
    }
    if let Some(p) = &args.save_response {
        check_save_response(p)?;
    }
    let init_boost = init_boost(&args.init_cpu)?;
    args.common.export.check_dirs()?;
    let configs = variants(args)?;
    let event = read_event(args.shared.event.as_deref())?;
    let cgroups = if args.no_cgroup || configs.iter().all(|(_, _, c)| c.bare) {
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
        init_boost,
        cgroups,
        function_name: args.function_name.clone(),
        region: args.region.clone().unwrap_or_else(|| "us-east-1".to_string()),
        log,
        save_response: args.save_response.clone(),
        tail_lines: args.common.output_lines,
        invokes: args.invokes,
        runtime_grace: None,
    };
    Ok((configs, opts))
}

pub fn run(args: &LambdaArgs) -> Result<i32> {
    if args.aws {
        return on_aws(args);
    }
    local_only(args)?;
    let (configs, opts) = emulator(args)?;
    if args.tune {
        return tune::run(args, configs, opts);
    }
    let fleet = args.common.fleet()?;
    let sweep = memory_sweep(&configs, args.compare_along.as_deref())?;
    let plan = Plan {
        variants: configs
            .iter()
            .map(|(name, params, c)| {
                let mut v = c.variant(name.clone());
                v.params = params.clone();
                v
            })
            .collect(),
        warmup: args.warmup,
        order: args.order.into(),
        stop: StopRule::Fixed { runs: args.runs },
        keep_going: args.common.keep_going,
        seed: fleet
            .as_ref()
            .map_or_else(|| args.common.seed(), |f| f.seed(args.common.seed)),
    };
    // The init timeout, no polling (the APIs say when init is over), and the
    // invokes: the cold one and the warm ones.
    let recorded = RunSettings {
        timeout: opts.init_timeout,
        poll_interval: Duration::ZERO,
        requests: 1 + args.invokes,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime for the Lambda APIs")?;
    if !args.common.quiet {
        announce(&opts, &configs);
    }
    let root = config::project_root();
    let cfg = config::load(&root)?;
    let mut settings = session::settings(&plan, recorded, args.common.noise.noise);
    settings.sweep = sweep;
    settings.of_kind.lambda = Some(coldstart_lambda::settings::record(
        &opts,
        configs.iter().map(|(name, _, c)| (name.as_str(), c)),
    ));
    let mut outputs = args.common.outputs(cfg.as_ref(), &root);
    outputs.fleet = fleet;
    let mut runner = ColdStarts {
        rt: &rt,
        configs: configs.into_iter().map(|(_, _, c)| c).collect(),
        opts,
    };
    session::measure(
        &plan,
        coldstart_core::experiment::Kind::Lambda,
        &settings,
        &outputs,
        &mut runner,
    )
}

/// `coldstart lambda serve`: the functions from their flags, checked before the
/// server starts; then the Lambda API until SIGINT/SIGTERM.
pub fn serve(args: &LambdaServeArgs) -> Result<i32> {
    let init_timeout = coldstart_core::bounds::seconds("--init-timeout", args.init_timeout, false)?;
    let idle_timeout = coldstart_core::bounds::seconds("--idle-timeout", args.idle_timeout, false)?;
    if !(args.bind.is_loopback() || args.allow_remote) {
        bail!(
            "--bind {}: not a loopback address, and nothing is authenticated (anyone who reaches the port runs the functions); add --allow-remote if that is what you want",
            args.bind
        );
    }
    let defs = serve_functions(args)?;
    let cgroups = if args.no_cgroup {
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
    let settings = coldstart_lambda::serve::Settings {
        addr: std::net::SocketAddr::new(args.bind, args.port),
        idle_timeout,
        init_timeout,
        init_boost: init_boost(&args.init_cpu)?,
        cgroups,
        region: args.region.clone(),
        log,
        quiet: args.quiet,
        reuse_environments: args.reuse_environments,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime for the Lambda API")?;
    if !args.quiet {
        let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        coldstart_core::out::errln!(
            "coldstart lambda serve: function(s) {}; requests are not authenticated (signatures are not verified)",
            names.join(", ")
        );
    }
    coldstart_lambda::serve::run(&rt, settings, defs)
}

/// The served functions: one per `--name` block (or one, `function`), each at
/// one memory size.
fn serve_functions(args: &LambdaServeArgs) -> Result<Vec<coldstart_lambda::serve::Definition>> {
    let unnamed = [LambdaVariantSpec {
        name: "function".into(),
        args: LambdaVariantArgs::default(),
    }];
    let specs: &[LambdaVariantSpec] = if args.functions.is_empty() {
        &unnamed
    } else {
        &args.functions
    };
    let timeout = coldstart_core::bounds::seconds("--timeout", args.timeout, false)?;
    if args.timeout > MAX_FUNCTION_TIMEOUT_S {
        bail!(
            "--timeout {}: Lambda's function timeout is at most {MAX_FUNCTION_TIMEOUT_S} seconds",
            args.timeout
        );
    }
    let shared = &args.shared;
    let mut defs: Vec<coldstart_lambda::serve::Definition> = Vec::new();
    for spec in specs {
        let (a, name) = (&spec.args, &spec.name);
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        if name.is_empty() || name.len() > 64 || !name.chars().all(valid) {
            bail!("--name '{name}': a function name is 1 to 64 letters, digits, - and _");
        }
        if defs.iter().any(|d| d.name == *name) {
            bail!("two functions are named '{name}': give each its own --name");
        }
        if a.bare || shared.bare {
            bail!("--bare measures a spawn, not a function: lambda serve has no use for it");
        }
        for a in [a, shared] {
            if a.event.is_some()
                || a.snapstart
                || a.function.is_some()
                || !a.layer_arn.is_empty()
                || a.architecture.is_some()
            {
                bail!("--event, --snapstart, --function, --layer-arn and --architecture are flags of `coldstart lambda --aws`: lambda serve's callers choose the event and configuration per request");
            }
        }
        let runtime = a.runtime.as_ref().or(shared.runtime.as_ref()).ok_or_else(|| {
            anyhow!("function {name}: no runtime: give --runtime python3.11|nodejs20.x|java17 with --code DIR, or --runtime ./bootstrap")
        })?;
        let memory = if a.memory.is_empty() {
            &shared.memory
        } else {
            &a.memory
        };
        let memory_mb = match memory.as_slice() {
            [] => 1769,
            [mb] if MEMORY_RANGE.contains(mb) => *mb,
            [mb] => bail!("--memory {mb}: Lambda allows 128 to 10240 MB"),
            _ => bail!("function {name}: give one --memory size (UpdateFunctionConfiguration changes it)"),
        };
        let mut env = Vec::new();
        for e in shared.env.iter().chain(&a.env) {
            env.push(parse_env(e)?);
        }
        env::check_user_env(&env)?;
        defs.push(coldstart_lambda::serve::Definition {
            name: name.clone(),
            runtime: runtime.clone(),
            code: a.code.clone().or_else(|| shared.code.clone()),
            layers: if a.layer.is_empty() {
                shared.layer.clone()
            } else {
                a.layer.clone()
            },
            extensions: a.extensions.clone().or_else(|| shared.extensions.clone()),
            handler: a
                .handler
                .clone()
                .or_else(|| shared.handler.clone())
                .unwrap_or_else(|| "function.handler".into()),
            env,
            memory_mb,
            timeout,
            sandboxed: sandboxed(shared, a)?,
        });
    }
    Ok(defs)
}

/// `coldstart lambda setup RUNTIME`: one managed runtime's pinned client, into the
/// user's cache (or --dir), with a line per step.
pub fn setup(args: &crate::flags::raw::LambdaSetupFlags) -> Result<i32> {
    let ids = coldstart_lambda::managed::SUPPORTED.map(|r| r.id()).join(", ");
    let Some(id) = args.runtime.as_deref() else {
        bail!("lambda setup needs a runtime: one of {ids}");
    };
    let Some(runtime) = coldstart_lambda::managed::Runtime::parse(id) else {
        bail!("lambda setup {id}: not a managed runtime coldstart runs; one of {ids}");
    };
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => coldstart_lambda::managed::user_cache()
            .ok_or_else(|| anyhow::anyhow!("neither XDG_CACHE_HOME nor HOME is set: give --dir DIR"))?,
    };
    let quiet = args.quiet;
    coldstart_lambda::setup::install(runtime, &dir, &mut |line| {
        if !quiet {
            coldstart_core::out::errln!("coldstart lambda setup: {line}");
        }
    })?;
    Ok(0)
}
