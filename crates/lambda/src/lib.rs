//! `coldstart lambda`: one emulated Lambda cold start per run, as a bench Sample.
//!
//! T0 → external extensions start (all at once) and register → the runtime starts
//! → its first /next → registration closes → every extension's /next → Init
//! Duration (T0 to the last of these, CLOCK_MONOTONIC); then the event is invoked,
//! the response collected, extensions finish, and the environment shuts down with
//! Lambda's deadlines. Platform events go to telemetry subscribers all along.
//!
//! Modules: `command` (CLI → plan → bench's measure), the spec's phases `init`,
//! `invoke` and `shutdown` (this module runs them in order), `server` +
//! `runtime_api` + `extensions_api` + `telemetry_api` (the HTTP APIs; `api` what
//! their handlers share), `telemetry` (records to subscribers), `state` (the
//! environment's state), `processes` (spawn, exit, output, checkpoints), `sandbox`
//! (cgroups), `mapped` (file pages the cgroup does not charge), `boost` (the init
//! CPU model), `env`, `function` (a variant's flags → its runtime), `layout` (code,
//! layers and extensions: Lambda's paths or the host's), `namespace` (the sandbox's
//! mount namespace), `managed` (managed runtimes' commands), `report` (log lines),
//! `bare` (the no-emulator baseline).
//!
//! A run's Sample: `ready_ns` = Init Duration; marks (source lambda) for the
//! APIs' instants and (source checkpoint) for the processes' SDK checkpoints;
//! metrics for the invoke's and the sandbox's figures.

pub mod api;
pub mod bare;
pub mod boost;

pub mod env;
pub mod extensions_api;
pub mod function;
mod init;
mod invoke;
pub mod kept;
pub mod layout;
pub mod managed;
mod mapped;
pub mod namespace;
pub mod processes;
pub mod report;
mod runner;
pub mod runtime_api;
pub mod sandbox;
pub mod serve;
pub mod server;
pub mod settings;
pub mod setup;
mod shutdown;
pub mod state;
pub mod telemetry;
mod telemetry_api;

use anyhow::{bail, Result};
use coldstart_core::run::RunId;
use coldstart_core::sample::{Mark, Outcome, Sample, Usage};
use coldstart_core::target::Target;
use processes::{Logs, Process};
use report::Failure;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use runner::ColdStarts;
pub use shutdown::SHUTDOWN_MS;

/// One variant: a function configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub runtime: Target,
    /// Executables of the extensions directory, sorted by name.
    pub extensions: Vec<PathBuf>,
    pub memory_mb: u64,
    /// _HANDLER.
    pub handler: String,
    pub env: Vec<(String, String)>,
    /// What the runtime's bootstrap sets (a managed runtime's paths, the layers'
    /// PATH and LD_LIBRARY_PATH); the function's `env` overrides it.
    pub platform_env: Vec<(String, String)>,
    /// INIT_START's and initStart's runtime version (`python:3.11.coldstart`).
    pub runtime_version: String,
    /// Measure the bare spawn → first /next instead (no emulator, no extensions).
    pub bare: bool,
    /// The code, layers and extensions, and whether the sandbox's mount
    /// namespace shows them at Lambda's paths.
    pub layout: layout::Layout,
    /// A managed runtime's interpreter and the ones passed over, for the
    /// header line (`Resolved::chosen`).
    pub interpreter_note: Option<String>,
    /// The function version this environment runs: `$LATEST` for experiments,
    /// a published number under `lambda serve` (AWS_LAMBDA_FUNCTION_VERSION, START).
    pub version: String,
}

/// Settings shared by every run.
impl Config {
    /// The function's identity, as the reserved environment variables show it.
    pub fn function(&self, opts: &Options, log_stream: &str) -> env::Function {
        env::Function {
            name: opts.function_name.clone(),
            version: self.version.clone(),
            handler: self.handler.clone(),
            memory_mb: self.memory_mb,
            region: opts.region.clone(),
            account_id: "000000000000".into(),
            task_root: self.layout.paths().task_root,
            log_stream: log_stream.into(),
        }
    }

    /// The runtime's variables beyond the reserved ones: the platform's, then
    /// the function's own.
    pub fn runtime_vars(&self) -> Vec<(String, String)> {
        self.platform_env.iter().chain(&self.env).cloned().collect()
    }
}

#[derive(Clone)]
pub struct Options {
    pub event: Vec<u8>,
    pub init_timeout: Duration,
    pub function_timeout: Duration,
    /// The CPU an on-demand init gets (None: `--no-init-boost`, the memory's share).
    pub init_boost: Option<boost::Boost>,
    pub cgroups: Option<sandbox::Cgroups>,
    pub function_name: String,
    pub region: String,
    pub log: Option<Arc<Mutex<std::fs::File>>>,
    pub save_response: Option<PathBuf>,
    pub tail_lines: usize,
    /// Warm invokes after the cold one, per environment.
    pub invokes: usize,
    /// Not Lambda's: SIGTERM to the runtime at shutdown and this long for it to
    /// exit, extensions or not (a training run's JVM writes its archive at exit).
    pub runtime_grace: Option<Duration>,
}

/// How far one environment got.
struct EnvRun {
    t0: u64,
    /// Init Duration (ns) or why init failed.
    init: std::result::Result<u64, Failure>,
    usage: Usage,
    /// The APIs' instants (source Lambda) and the processes' SDK checkpoints, in
    /// time order.
    marks: Vec<Mark>,
    /// The invoke's figures and the sandbox's (`throttled_ms`).
    metrics: BTreeMap<String, f64>,
    invoke_ns: Option<u64>,
    /// The warm invokes' Durations (`--invokes`), in order.
    warm_ns: Vec<u64>,
    invoke_failure: Option<Failure>,
    shutdown_ns: Option<u64>,
    killed: bool,
    exit_status: Option<coldstart_core::sample::ExitStatus>,
    interrupted: bool,
    tail: Vec<String>,
}

/// One cold start → one Sample (ready_ns = Init Duration).
pub fn cold_start(rt: &tokio::runtime::Runtime, cfg: &Config, opts: &Options, id: RunId) -> Result<Sample> {
    // The entry point an embedder calls: the Lab is passed on from here.
    let lab = coldstart_core::Lab::get()?;
    if cfg.bare {
        return bare::first_next(lab, cfg, opts, id);
    }
    let first = rt.block_on(environment(lab, cfg, opts, &id, "init"))?;
    let mut sample = Sample {
        outcome: Outcome::Ready,
        exit_status: first.exit_status.clone(),
        usage: first.usage.clone(),
        marks: first.marks.clone(),
        metrics: first.metrics.clone(),
        // The cold invoke, then the warm ones: bench's "1st request" and "later
        // requests".
        requests_ns: first
            .invoke_ns
            .into_iter()
            .chain(first.warm_ns.iter().copied())
            .collect(),
        shutdown_ns: first.shutdown_ns,
        killed: first.killed,
        ..Sample::begin(&id, first.t0)
    };
    match &first.init {
        _ if first.interrupted => sample.outcome = Outcome::Interrupted,
        Ok(ns) => {
            sample.ready_ns = Some(*ns);
            if let Some(f) = &first.invoke_failure {
                sample.outcome = Outcome::Failed {
                    error_type: f.error_type.clone().unwrap_or_else(|| f.status.clone()),
                };
            }
        }
        Err(f) => {
            sample.outcome = if f.status == "timeout" {
                Outcome::Timeout
            } else {
                Outcome::Failed {
                    error_type: f.error_type.clone().unwrap_or_else(|| f.status.clone()),
                }
            };
            // Lambda retries a failed init inside the first invoke (a "suppressed
            // init", phase invoke, bounded by the function timeout). The run stays
            // failed: its cold start did not finish within the limit.
            let retry = rt.block_on(environment(lab, cfg, opts, &id, "invoke"))?;
            if retry.interrupted {
                sample.outcome = Outcome::Interrupted;
            } else if let Ok(ns) = retry.init {
                sample
                    .metrics
                    .insert("suppressed_init_ms".into(), ns as f64 / 1e6);
            }
        }
    }
    if !sample.ok() {
        sample.output_tail = first.tail;
    }
    Ok(sample)
}

/// What one execution environment owns, from before T0 to its cleanup.
struct Environment {
    /// Its processes are started and cleaned up under the Lab's rules.
    lab: &'static coldstart_core::Lab,
    env: Arc<api::Env>,
    bus: Arc<telemetry::Bus>,
    logs: Arc<Logs>,
    srv: server::Server,
    sandbox: Option<sandbox::Sandbox>,
    /// The sandbox's mount namespace (`--sandbox`), held until every process is gone.
    namespace: Option<namespace::Namespace>,
    /// Started processes, in start order (extensions, then the runtime).
    procs: Vec<Process>,
    /// CLOCK_MONOTONIC ns; set when init starts, then moved past the kernel's
    /// waits while processes entered the sandbox (coldstart's time, not init's).
    t0: u64,
    /// "init", or "invoke" for a suppressed init.
    phase: &'static str,
    /// `platform.initStart`'s instanceId (also in the log stream's name).
    instance_id: String,
    /// The only environment alive (an experiment's run): its cleanup is the
    /// Lab's whole one. False under `lambda serve`, where others live beside it.
    alone: bool,
    /// Under `lambda serve`: the environment's other processes seen before its
    /// shutdown signalled it (once their parent is gone they are coldstart's
    /// orphans, reaped by pid in the cleanup).
    seen: Vec<i32>,
}

/// One execution environment from T0 to the last process reaped: init, invoke
/// (if init succeeded), shutdown.
async fn environment(
    lab: &'static coldstart_core::Lab,
    cfg: &Config,
    opts: &Options,
    id: &RunId,
    phase: &'static str,
) -> Result<EnvRun> {
    let (mut e, pending) = init::prepare(lab, cfg, opts, id, phase).await?;
    let init = match init::run(&mut e, pending, cfg, opts).await {
        Ok(init) => init,
        Err(err) => {
            shutdown::cleanup(e).await;
            return Err(err);
        }
    };
    let mut run = EnvRun {
        t0: e.t0,
        init: init.result.clone(),
        usage: init.usage,
        marks: init.marks,
        metrics: BTreeMap::new(),
        invoke_ns: None,
        warm_ns: Vec::new(),
        invoke_failure: None,
        shutdown_ns: None,
        killed: false,
        exit_status: init.exit_status,
        interrupted: init.interrupted,
        tail: Vec::new(),
    };
    if init.result.is_ok() && !init.interrupted {
        let which = if phase == "init" {
            invoke::Which::Cold(init.ms)
        } else {
            invoke::Which::AfterSuppressedInit
        };
        let invoked = invoke::run(&e, cfg, opts, &opts.event, which).await;
        run.invoke_ns = Some(invoked.ns);
        run.invoke_failure = invoked.failure;
        run.metrics
            .extend(invoked.metrics.into_iter().map(|(k, v)| (k.to_string(), v)));
        // Warm invokes of the same environment, each with its REPORT; the first
        // failure ends them (Lambda would start a new environment).
        for _ in 0..opts.invokes {
            if run.invoke_failure.is_some() || coldstart_core::launch::signals::interrupted() {
                break;
            }
            let warm = invoke::run(&e, cfg, opts, &opts.event, invoke::Which::Warm).await;
            run.warm_ns.push(warm.ns);
            run.invoke_failure = warm.failure;
        }
        invoke::after_last(&e, run.invoke_failure.as_ref()).await;
    } else if let (Err(f), "invoke", false) = (&init.result, phase, init.interrupted) {
        let exit = run
            .exit_status
            .clone()
            .filter(|_| f.error_type.as_deref() == Some("Runtime.ExitError"));
        let billed = invoke::after_failed_init(&e, cfg, opts, f, init.ms, exit.as_ref());
        run.metrics.insert("billed_ms".into(), billed);
    }
    if !coldstart_core::launch::signals::interrupted() {
        let (took, killed) = shutdown::run(&e, opts.runtime_grace).await;
        run.shutdown_ns = Some(took);
        run.killed = killed;
    }
    run.interrupted = coldstart_core::launch::signals::interrupted();
    if let Some(t) = e.sandbox.as_ref().and_then(|sb| sb.throttled_ns()) {
        run.metrics.insert("throttled_ms".into(), t as f64 / 1e6);
    }
    let (shared, logs) = (e.env.shared.clone(), e.logs.clone());
    let deliveries = shutdown::cleanup(e).await;
    for d in &deliveries {
        let key = |what: &str| format!("{}.{}.{what}", d.api, d.extension);
        run.metrics
            .insert(key("delivered_batches"), d.delivered_batches as f64);
        run.metrics.insert(key("failed_batches"), d.failed_batches as f64);
        // Batches cut off by an interrupt are no subscriber's fault.
        if !run.interrupted {
            warn_undelivered(d);
        }
    }
    run.marks.extend(processes::checkpoint_marks(&shared, run.t0));
    run.marks.sort_by_key(|m| m.t_ns);
    run.tail = logs.tail();
    Ok(run)
}

/// Say once per subscriber and destination that batches did not arrive: an
/// extension whose listener is not where it subscribed gets nothing, which
/// would otherwise look like a quiet success.
fn warn_undelivered(d: &telemetry::Delivery) {
    static WARNED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
    if d.failed_batches == 0 {
        return;
    }
    let key = (d.extension.clone(), d.destination.clone());
    let mut warned = WARNED.lock().unwrap_or_else(|p| p.into_inner());
    if warned.contains(&key) {
        return;
    }
    warned.push(key);
    coldstart_core::out::errln!(
        "coldstart lambda: {} of {} {} batches to extension {} at {} were not delivered (nothing accepted them there); see the metric {}.{}.failed_batches",
        d.failed_batches,
        d.failed_batches + d.delivered_batches,
        d.api,
        d.extension,
        d.destination,
        d.api,
        d.extension
    );
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Executables in an extensions directory (every regular file, as Lambda does),
/// sorted by name; at most 10.
pub fn discover_extensions(dir: &std::path::Path) -> Result<Vec<PathBuf>> {
    use std::os::unix::fs::PermissionsExt;
    let entries = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("cannot read the extensions directory {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        if meta.permissions().mode() & 0o111 == 0 {
            bail!(
                "{} in the extensions directory is not executable: `chmod +x` it (Lambda runs every file there)",
                path.display()
            );
        }
        // Absolute but not resolved: the name an extension registers under is its
        // file name, which a symlink's target would change.
        files.push(std::path::absolute(&path).unwrap_or(path));
    }
    files.sort();
    if files.len() > state::MAX_EXTENSIONS {
        bail!(
            "{} holds {} extensions; Lambda allows at most {}",
            dir.display(),
            files.len(),
            state::MAX_EXTENSIONS
        );
    }
    Ok(files)
}
