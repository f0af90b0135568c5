//! `coldstart lambda`: one emulated Lambda cold start per run, as a bench Sample.
//!
//! T0 → external extensions start (all at once) and register → the runtime starts
//! → its first /next → registration closes → every extension's /next → Init
//! Duration (T0 to the last of these, CLOCK_MONOTONIC); then the event is invoked,
//! the response collected, extensions finish, and the environment shuts down with
//! Lambda's deadlines. Platform events go to telemetry subscribers all along.
//!
//! Modules: `command` (CLI → plan → bench's measure), `server` + `runtime_api` +
//! `extensions_api` + `telemetry` (the HTTP APIs), `state` (what they share),
//! `processes` (spawn, exit, output), `sandbox` (cgroups), `env`, `report` (log
//! lines), `bare` (the no-emulator baseline).

pub mod bare;

pub mod env;
pub mod extensions_api;
pub mod processes;
pub mod report;
pub mod runtime_api;
pub mod sandbox;
pub mod server;
pub mod state;
pub mod telemetry;

use crate::clock::now_ns;
use crate::launch::{tree, usage};
use crate::run::RunId;
use crate::sample::{Outcome, Sample, Usage};
use crate::target::Target;
use anyhow::{bail, Result};
use processes::{Logs, Process};
use report::Failure;
use serde_json::json;
use state::{Invocation, Role, Shared, State};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Shutdown budget with external extensions ([DG]): 2,000 ms, of which the runtime
/// gets 300 ms after SIGTERM (500 ms with an internal extension).
pub const SHUTDOWN_MS: u64 = 2_000;
const RUNTIME_GRACE_MS: u64 = 300;
const RUNTIME_GRACE_INTERNAL_MS: u64 = 500;

/// One variant: a function configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub runtime: Target,
    /// Executables of the extensions directory, sorted by name.
    pub extensions: Vec<PathBuf>,
    pub memory_mb: u64,
    pub env: Vec<(String, String)>,
    /// Measure the bare spawn → first /next instead (no emulator, no extensions).
    pub bare: bool,
}

/// Settings shared by every run.
impl Config {
    /// The function's identity, as the reserved environment variables show it.
    pub fn function(&self, opts: &Options, log_stream: &str) -> env::Function {
        env::Function {
            name: opts.function_name.clone(),
            version: "$LATEST".into(),
            handler: opts.handler.clone(),
            memory_mb: self.memory_mb,
            region: opts.region.clone(),
            account_id: "000000000000".into(),
            task_root: self
                .runtime
                .program
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            log_stream: log_stream.into(),
        }
    }
}

pub struct Options {
    pub event: Vec<u8>,
    pub init_timeout: Duration,
    pub function_timeout: Duration,
    pub init_boost: bool,
    pub cgroups: Option<sandbox::Cgroups>,
    pub function_name: String,
    pub handler: String,
    pub region: String,
    pub log: Option<Arc<Mutex<std::fs::File>>>,
    pub save_response: Option<PathBuf>,
    pub tail_lines: usize,
}

/// How far one environment got.
struct EnvRun {
    t0: u64,
    /// Init Duration (ns) or why init failed.
    init: std::result::Result<u64, Failure>,
    usage: Usage,
    captures: BTreeMap<String, String>,
    invoke_ns: Option<u64>,
    invoke_failure: Option<Failure>,
    shutdown_ns: Option<u64>,
    killed: bool,
    exit_status: Option<crate::sample::ExitStatus>,
    interrupted: bool,
    tail: Vec<String>,
}

/// One cold start → one Sample (ready_ns = Init Duration).
pub fn cold_start(rt: &tokio::runtime::Runtime, cfg: &Config, opts: &Options, id: RunId) -> Result<Sample> {
    if cfg.bare {
        return bare::first_next(cfg, opts, id);
    }
    let first = rt.block_on(environment(cfg, opts, &id, "init"))?;
    let mut sample = Sample {
        outcome: Outcome::Ready,
        exit_status: first.exit_status.clone(),
        usage: first.usage.clone(),
        captures: first.captures.clone(),
        requests_ns: first.invoke_ns.into_iter().collect(),
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
            let retry = rt.block_on(environment(cfg, opts, &id, "invoke"))?;
            if retry.interrupted {
                sample.outcome = Outcome::Interrupted;
            } else if let Ok(ns) = retry.init {
                sample
                    .captures
                    .insert("suppressed_init_ms".into(), format!("{:.3}", ns as f64 / 1e6));
            }
        }
    }
    if !sample.ok() {
        sample.output_tail = first.tail;
    }
    Ok(sample)
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// Has init failed (or been interrupted) in a way that ends the wait?
fn init_broken(s: &State) -> bool {
    s.interrupted || s.init_error.is_some() || s.extension_error.is_some() || !s.exits.is_empty()
}

/// One execution environment from T0 to the last process reaped.
async fn environment(cfg: &Config, opts: &Options, id: &RunId, phase: &str) -> Result<EnvRun> {
    let ext_names: Vec<String> = cfg
        .extensions
        .iter()
        .map(|p| {
            p.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let function = cfg.function(
        opts,
        &format!("coldstart/[$LATEST]{}", state::uuid().replace('-', "")),
    );
    let bus = Arc::new(telemetry::Bus::default());
    let env = Arc::new(server::Env {
        shared: Arc::new(Shared::default()),
        telemetry: bus.clone(),
        function: function.clone(),
        external_names: ext_names.clone(),
    });
    let srv = server::Server::start(env.clone()).await?;
    let api = srv.addr.to_string();
    let rt_env = env::runtime_env(&function, &api, &cfg.env);
    let ext_env = env::extension_env(&rt_env);
    // Everything that can be prepared is prepared before T0.
    let mut ext_preps = Vec::new();
    for (path, name) in cfg.extensions.iter().zip(&ext_names) {
        let target = Target::new(
            vec![path.display().to_string()],
            Vec::new(),
            path.parent().map(PathBuf::from),
        )?;
        ext_preps.push(processes::prepare(
            Role::Extension(name.clone()),
            &target,
            &ext_env,
        )?);
    }
    let rt_prep = processes::prepare(Role::Runtime, &cfg.runtime, &rt_env)?;
    let sandbox = match &opts.cgroups {
        Some(c) => {
            let tag = format!("{}-{}-{}", id.variant, id.round, u8::from(id.warmup));
            let sb = c.create(&tag, cfg.memory_mb)?;
            if !opts.init_boost {
                sb.set_cpu(Some(sandbox::vcpus(cfg.memory_mb)))?;
            }
            Some(sb)
        }
        None => None,
    };
    let logs = Arc::new(Logs::new(opts.tail_lines, opts.log.clone()));
    let shared = env.clone();

    // ---- INIT ----
    let t0 = now_ns();
    logs.line(&report::init_start(&opts.region));
    bus.emit(
        "platform.initStart",
        json!({
            "initializationType": "on-demand",
            "phase": phase,
            "runtimeVersion": "provided:coldstart",
            "functionName": function.name,
            "functionVersion": function.version,
            "instanceMaxMemory": cfg.memory_mb * 1024 * 1024,
        }),
    );
    let mut procs: Vec<Process> = Vec::new();
    let mut setup_error = None;
    for prep in ext_preps {
        match start(prep, &shared, &bus, &logs, sandbox.as_ref()) {
            Ok(p) => procs.push(p),
            Err(e) => {
                setup_error = Some(e);
                break;
            }
        }
    }
    let deadline = t0
        + if phase == "init" {
            opts.init_timeout
        } else {
            opts.function_timeout
        }
        .as_nanos() as u64;
    let registered = |s: &State| {
        ext_names
            .iter()
            .all(|n| s.extensions.iter().any(|e| &e.name == n))
    };
    let mut init: std::result::Result<u64, Failure> = Err(Failure {
        status: "timeout".into(),
        error_type: Some("Sandbox.Timedout".into()),
    });
    let mut runtime_started = false;
    if setup_error.is_none()
        && shared
            .shared
            .wait_until(deadline, |s| init_broken(s) || registered(s))
            .await
        && !init_broken(&shared.shared.lock())
    {
        match start(rt_prep, &shared, &bus, &logs, sandbox.as_ref()) {
            Ok(p) => {
                procs.push(p);
                runtime_started = true;
            }
            Err(e) => setup_error = Some(e),
        }
    }
    if runtime_started {
        let s = &shared.shared;
        let rt_ready = s
            .wait_until(deadline, |s| init_broken(s) || s.runtime_ready_ns.is_some())
            .await
            && s.lock().runtime_ready_ns.is_some()
            && !init_broken(&s.lock());
        if rt_ready {
            bus.emit(
                "platform.initRuntimeDone",
                json!({"initializationType": "on-demand", "phase": phase, "status": "success"}),
            );
            s.update(|s| s.registration_open = false);
            let all_ready = s
                .wait_until(deadline, |s| {
                    init_broken(s) || s.extensions.iter().all(|e| e.ready_ns.is_some())
                })
                .await
                && !init_broken(&s.lock());
            if all_ready {
                let st = s.lock();
                let end = st
                    .extensions
                    .iter()
                    .filter_map(|e| e.ready_ns)
                    .chain(st.runtime_ready_ns)
                    .max()
                    .unwrap_or(t0);
                init = Ok(end - t0);
            }
        }
    }
    bus.close();
    let interrupted = crate::launch::signals::interrupted();
    let mut captures = BTreeMap::new();
    let mut exit_status = None;
    {
        let st = shared.shared.lock();
        if let Some(r) = st.runtime_ready_ns {
            captures.insert("runtime_ready_ms".to_string(), ms(r - t0));
        }
        for e in &st.extensions {
            captures.insert(format!("ext.{}.register_ms", e.name), ms(e.registered_ns - t0));
            if let Some(r) = e.ready_ns {
                captures.insert(format!("ext.{}.ready_ms", e.name), ms(r - t0));
            }
        }
        if init.is_err() {
            init = Err(classify_init_failure(&st));
            exit_status = st.exits.first().map(|e| e.status.clone());
        }
    }
    if let Some(e) = setup_error {
        // A process could not be started (or put in its cgroup): clean up, then fail the command.
        cleanup(&procs, srv, &bus, sandbox).await;
        return Err(e);
    }
    // platform.extension per extension, then initReport.
    for e in shared.shared.lock().extensions.iter() {
        let mut events = Vec::new();
        if e.invoke {
            events.push("INVOKE");
        }
        if e.shutdown {
            events.push("SHUTDOWN");
        }
        bus.emit(
            "platform.extension",
            json!({"name": e.name, "state": if e.ready_ns.is_some() { "Ready" } else { "Registered" }, "events": events}),
        );
    }
    let init_ms = match &init {
        Ok(ns) => *ns as f64 / 1e6,
        Err(_) => (now_ns().min(deadline) - t0) as f64 / 1e6,
    };
    let mut init_report = json!({
        "initializationType": "on-demand",
        "phase": phase,
        "metrics": {"durationMs": round2(init_ms)},
    });
    if let Err(f) = &init {
        init_report["status"] = f.status.clone().into();
        if let Some(t) = &f.error_type {
            init_report["errorType"] = t.clone().into();
        }
        logs.line(&report::init_report(init_ms, phase, f));
        if !matches!(f.error_type.as_deref(), Some("Sandbox.Timedout")) && !interrupted {
            bus.emit(
                "platform.initRuntimeDone",
                json!({"initializationType": "on-demand", "phase": phase, "status": f.status, "errorType": f.error_type}),
            );
        }
    }
    bus.emit("platform.initReport", init_report);
    let usage = procs
        .first()
        .map(|p| usage::snapshot(&tree::members(p.pid)))
        .unwrap_or_default();

    // ---- INVOKE ----
    let mut run = EnvRun {
        t0,
        init: init.clone(),
        usage,
        captures,
        invoke_ns: None,
        invoke_failure: None,
        shutdown_ns: None,
        killed: false,
        exit_status,
        interrupted,
        tail: Vec::new(),
    };
    if init.is_ok() && !interrupted {
        if let Some(sb) = &sandbox {
            if opts.init_boost {
                sb.set_cpu(Some(sandbox::vcpus(cfg.memory_mb)))?;
            }
        }
        let init_for_report = (phase == "init").then_some(init_ms);
        invoke(
            &shared,
            &bus,
            &logs,
            cfg,
            opts,
            sandbox.as_ref(),
            &procs,
            init_for_report,
            &mut run,
        )
        .await;
    }
    // ---- SHUTDOWN ----
    if !crate::launch::signals::interrupted() {
        let (took, killed) = shutdown(&shared, &bus, &procs).await;
        run.shutdown_ns = Some(took);
        run.killed = killed;
    }
    run.interrupted = crate::launch::signals::interrupted();
    if let Some(sb) = &sandbox {
        if let Some(t) = sb.throttled_ns() {
            run.captures.insert("throttled_ms".into(), ms(t));
        }
    }
    cleanup(&procs, srv, &bus, sandbox).await;
    run.tail = logs.tail();
    Ok(run)
}

fn start(
    prep: processes::Prepared,
    env: &Arc<server::Env>,
    bus: &Arc<telemetry::Bus>,
    logs: &Arc<Logs>,
    sandbox: Option<&sandbox::Sandbox>,
) -> Result<Process> {
    let p = processes::start(prep, &env.shared, bus, logs)?;
    if let Some(sb) = sandbox {
        sb.add(p.pid)?;
    }
    Ok(p)
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Why init did not finish, in Lambda's terms.
fn classify_init_failure(s: &State) -> Failure {
    let error = |t: &str| Failure {
        status: "error".into(),
        error_type: Some(t.to_string()),
    };
    if let Some((kind, _)) = &s.init_error {
        return error(kind);
    }
    if let Some((_, kind, _)) = &s.extension_error {
        return error(kind);
    }
    if let Some(e) = s.exits.first() {
        return match &e.role {
            Role::Runtime => error("Runtime.ExitError"),
            Role::Extension(_) => error("Extension.Crash"),
        };
    }
    Failure {
        status: "timeout".into(),
        error_type: Some("Sandbox.Timedout".into()),
    }
}

#[allow(clippy::too_many_arguments)]
async fn invoke(
    shared: &Arc<server::Env>,
    bus: &telemetry::Bus,
    logs: &Logs,
    cfg: &Config,
    opts: &Options,
    sandbox: Option<&sandbox::Sandbox>,
    procs: &[Process],
    init_ms: Option<f64>,
    run: &mut EnvRun,
) {
    let s = &shared.shared;
    let request_id = state::uuid();
    let epoch_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64;
    let deadline_ms = epoch_ms + opts.function_timeout.as_millis() as u64;
    let trace_id = format!(
        "Root=1-{:08x}-{};Parent={};Sampled=0",
        epoch_ms / 1000,
        &state::uuid().replace('-', "")[..24],
        &state::uuid().replace('-', "")[..16]
    );
    let arn = shared.function.arn();
    logs.line(&report::start(&request_id, "$LATEST"));
    bus.emit(
        "platform.start",
        json!({"requestId": request_id, "version": "$LATEST",
               "tracing": {"type": "X-Amzn-Trace-Id", "value": trace_id}}),
    );
    let t_inv = now_ns();
    let inv_deadline = t_inv + opts.function_timeout.as_nanos() as u64;
    s.update(|st| {
        for e in st.extensions.iter_mut().filter(|e| e.invoke) {
            e.events.push_back(json!({
                "eventType": "INVOKE",
                "deadlineMs": deadline_ms,
                "requestId": request_id,
                "invokedFunctionArn": arn,
                "tracing": {"type": "X-Amzn-Trace-Id", "value": trace_id},
            }));
        }
        st.runtime_queue.push_back(Invocation {
            request_id: request_id.clone(),
            event: opts.event.clone(),
            deadline_ms,
            trace_id: trace_id.clone(),
            arn: arn.clone(),
            delivered_ns: None,
            result: None,
        });
    });
    let runtime_gone = |st: &State| st.exited(&Role::Runtime).is_some();
    s.wait_until(inv_deadline, |st| {
        st.interrupted || runtime_gone(st) || st.current.as_ref().is_some_and(|c| c.result.is_some())
    })
    .await;
    let (result, delivered) = {
        let st = s.lock();
        let cur = st.current.as_ref();
        (
            cur.and_then(|c| c.result.clone()),
            cur.and_then(|c| c.delivered_ns),
        )
    };
    let mut failure = match &result {
        None if runtime_gone(&s.lock()) => Some(Failure {
            status: "error".into(),
            error_type: Some("Runtime.ExitError".into()),
        }),
        None => Some(Failure {
            status: "timeout".into(),
            error_type: Some("Sandbox.Timedout".into()),
        }),
        Some(r) => r.error_type.as_ref().map(|t| Failure {
            status: "error".into(),
            error_type: Some(t.clone()),
        }),
    };
    let runtime_done = result.as_ref().map_or(now_ns(), |r| r.at_ns);
    let produced = result.as_ref().map_or(0, |r| r.body.len());
    let latency_ms = delivered.map_or(0.0, |d| (d.saturating_sub(t_inv)) as f64 / 1e6);
    bus.emit(
        "platform.runtimeDone",
        json!({
            "requestId": request_id,
            "status": failure.as_ref().map_or("success", |f| f.status.as_str()),
            "errorType": failure.as_ref().and_then(|f| f.error_type.clone()),
            "metrics": {"durationMs": round2((runtime_done - t_inv) as f64 / 1e6), "producedBytes": produced},
            "spans": [
                {"name": "responseLatency", "start": telemetry::iso8601_now(), "durationMs": round2(latency_ms)},
                {"name": "responseDuration", "start": telemetry::iso8601_now(), "durationMs": 0.0},
            ],
        }),
    );
    if let (Some(r), Some(path), None) = (&result, &opts.save_response, &failure) {
        if let Err(e) = std::fs::write(path, &r.body) {
            logs.line(&format!(
                "coldstart: cannot save the response to {}: {e}",
                path.display()
            ));
        }
    }
    // Extensions subscribed to INVOKE are done when they call /next again.
    let mut t_end = runtime_done;
    if failure.is_none() {
        let done = s
            .wait_until(inv_deadline, |st| {
                st.interrupted
                    || st
                        .extensions
                        .iter()
                        .filter(|e| e.invoke)
                        .all(|e| e.waiting && e.last_next_ns.is_some_and(|n| n >= t_inv))
                    || st.exits.iter().any(|x| matches!(x.role, Role::Extension(_)))
            })
            .await;
        let st = s.lock();
        let all_done = st
            .extensions
            .iter()
            .filter(|e| e.invoke)
            .all(|e| e.waiting && e.last_next_ns.is_some_and(|n| n >= t_inv));
        if done && all_done {
            t_end = st
                .extensions
                .iter()
                .filter(|e| e.invoke)
                .filter_map(|e| e.last_next_ns)
                .chain([runtime_done])
                .max()
                .unwrap_or(runtime_done);
        } else {
            t_end = now_ns().min(inv_deadline);
            failure = Some(if now_ns() >= inv_deadline {
                Failure {
                    status: "timeout".into(),
                    error_type: Some("Sandbox.Timedout".into()),
                }
            } else {
                Failure {
                    status: "error".into(),
                    error_type: Some("Extension.Crash".into()),
                }
            });
        }
    }
    let duration_ms = (t_end - t_inv) as f64 / 1e6;
    let max_bytes = sandbox.and_then(|sb| sb.peak_memory_bytes()).unwrap_or_else(|| {
        let u = procs
            .first()
            .map(|p| usage::snapshot(&tree::members(p.pid)))
            .unwrap_or_default();
        u.peak_rss_kb.unwrap_or(0) * 1024
    });
    let max_mb = report::mb(max_bytes);
    // A suppressed init (phase invoke) is part of the invoke's duration.
    let (duration_ms, init_ms) = match init_ms {
        Some(i) => (duration_ms, Some(i)),
        None => ((t_end - run.t0) as f64 / 1e6, None),
    };
    logs.line(&report::end(&request_id));
    logs.line(&report::report(&report::ReportLine {
        request_id: &request_id,
        duration_ms,
        memory_mb: cfg.memory_mb,
        max_memory_used_mb: max_mb,
        init_ms,
        failure: failure.as_ref(),
    }));
    let billed = report::billed_ms(duration_ms, init_ms);
    let mut metrics = json!({
        "durationMs": round2(duration_ms),
        "billedDurationMs": billed,
        "memorySizeMB": cfg.memory_mb,
        "maxMemoryUsedMB": max_mb,
    });
    if let Some(i) = init_ms {
        metrics["initDurationMs"] = round2(i).into();
    }
    bus.emit(
        "platform.report",
        json!({
            "requestId": request_id,
            "status": failure.as_ref().map_or("success", |f| f.status.as_str()),
            "errorType": failure.as_ref().and_then(|f| f.error_type.clone()),
            "metrics": metrics,
        }),
    );
    run.invoke_ns = Some(t_end - t_inv);
    run.captures
        .insert("invoke_ms".into(), format!("{duration_ms:.3}"));
    run.captures
        .insert("post_runtime_ms".into(), ms(t_end.saturating_sub(runtime_done)));
    run.captures.insert("max_memory_mb".into(), max_mb.to_string());
    run.captures.insert("billed_ms".into(), billed.to_string());
    run.invoke_failure = failure;
}

/// Lambda's shutdown: SIGTERM to the runtime, a short grace, SIGKILL; telemetry
/// flushed; SHUTDOWN to the extensions that asked for it (others SIGKILLed); at the
/// deadline SIGKILL for whatever is left. Returns (duration, whether SIGKILL was needed).
async fn shutdown(shared: &Arc<server::Env>, bus: &telemetry::Bus, procs: &[Process]) -> (u64, bool) {
    let s = &shared.shared;
    let t = now_ns();
    let alive = |st: &State, p: &Process| st.exits.iter().all(|e| e.pid != p.pid);
    let (externals, internal) = {
        let st = s.lock();
        (
            st.extensions.iter().any(|e| e.external),
            st.extensions.iter().any(|e| !e.external),
        )
    };
    let mut killed = false;
    let deadline = t + SHUTDOWN_MS * 1_000_000;
    if let Some(rt) = procs.iter().find(|p| p.role == Role::Runtime) {
        if alive(&s.lock(), rt) {
            if externals || internal {
                processes::signal_group(rt.pid, libc::SIGTERM);
                let grace = if internal {
                    RUNTIME_GRACE_INTERNAL_MS
                } else {
                    RUNTIME_GRACE_MS
                };
                let exited = s
                    .wait_until(t + grace * 1_000_000, |st| st.exited(&Role::Runtime).is_some())
                    .await;
                if !exited {
                    processes::signal_group(rt.pid, libc::SIGKILL);
                    killed = true;
                }
            } else {
                // No extensions: Lambda's shutdown limit is 0 ms.
                processes::signal_group(rt.pid, libc::SIGKILL);
                killed = true;
            }
        }
    }
    bus.flush(deadline).await;
    let deadline_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
        + deadline.saturating_sub(now_ns()) / 1_000_000;
    s.update(|st| {
        for e in st.extensions.iter_mut().filter(|e| e.shutdown) {
            e.events.push_back(json!({
                "eventType": "SHUTDOWN",
                "shutdownReason": "spindown",
                "deadlineMs": deadline_ms,
            }));
        }
    });
    let not_subscribed: Vec<String> = s
        .lock()
        .extensions
        .iter()
        .filter(|e| e.external && !e.shutdown)
        .map(|e| e.name.clone())
        .collect();
    for p in procs {
        if let Role::Extension(name) = &p.role {
            if not_subscribed.contains(name) && alive(&s.lock(), p) {
                processes::signal_group(p.pid, libc::SIGKILL);
            }
        }
    }
    let pids: Vec<i32> = procs.iter().map(|p| p.pid).collect();
    let all_gone = s
        .wait_until(deadline, |st| {
            pids.iter().all(|pid| st.exits.iter().any(|e| e.pid == *pid))
        })
        .await;
    if !all_gone {
        killed = true;
    }
    (now_ns() - t, killed)
}

/// SIGKILL and reap everything of the environment; stop its server and telemetry;
/// remove its cgroup.
async fn cleanup(
    procs: &[Process],
    srv: server::Server,
    bus: &telemetry::Bus,
    sandbox: Option<sandbox::Sandbox>,
) {
    for p in procs {
        processes::signal_group(p.pid, libc::SIGKILL);
    }
    if let Some(p) = procs.first() {
        let pid = p.pid;
        let ok = tokio::task::spawn_blocking(move || tree::kill_all(pid))
            .await
            .unwrap_or(false);
        if !ok {
            crate::out::errln!(
                "coldstart: could not kill every process of the Lambda environment: check `ps -o pid,stat,cmd --ppid {}`",
                std::process::id()
            );
        }
    }
    bus.stop();
    srv.stop().await;
    drop(sandbox);
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
