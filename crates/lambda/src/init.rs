//! Lambda's init phase. Before T0: the APIs' server, every process's command, the
//! sandbox. From T0: external extensions start (all at once) and register → the
//! runtime starts → its first /next → registration closes → every extension's
//! /next → Init Duration (T0 to the last of these). Then `platform.extension` per
//! extension and `platform.initReport` (with INIT_REPORT in the log on failure).

use super::processes::{self, Logs, Process};
use super::report::{self, Failure};
use super::state::{self, Role, Shared, State};
use super::{api, boost, round2, sandbox, server, telemetry, Config, Environment, Options};
use anyhow::Result;
use coldstart_core::clock::now_ns;
use coldstart_core::launch::{tree, usage};
use coldstart_core::run::RunId;
use coldstart_core::sample::{ExitStatus, Mark, MarkSource, Usage};
use coldstart_core::target::Target;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

/// The processes of an environment, prepared but not started.
pub(super) struct Pending {
    /// External extensions: (name, command), in name order.
    extensions: Vec<(String, processes::Prepared)>,
    runtime: processes::Prepared,
}

/// How init ended.
pub(super) struct Init {
    /// Init Duration (ns) or why init failed.
    pub result: std::result::Result<u64, Failure>,
    /// The Init Duration the platform lines show (up to the deadline on failure).
    pub ms: f64,
    pub exit_status: Option<ExitStatus>,
    pub interrupted: bool,
    /// The runtime's first /next, each extension's /register and first /next.
    pub marks: Vec<Mark>,
    /// Of the first process's tree, at the end of init.
    pub usage: Usage,
}

/// Everything that can be prepared is prepared before T0. `phase`: "init", or
/// "invoke" for the retry of a failed init inside the first invoke.
pub(super) async fn prepare(
    lab: &'static coldstart_core::Lab,
    cfg: &Config,
    opts: &Options,
    id: &RunId,
    phase: &'static str,
) -> Result<(Environment, Pending)> {
    // First: nothing else of the environment exists yet if it cannot be made.
    let namespace = if cfg.layout.sandboxed {
        Some(super::namespace::make(&cfg.layout)?)
    } else {
        None
    };
    let ext_names: Vec<String> = cfg
        .extensions
        .iter()
        .map(|p| {
            p.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    // The log stream names the environment, as on Lambda; initStart's
    // instanceId is the same id.
    let instance_id = state::uuid().replace('-', "");
    let function = cfg.function(opts, &format!("coldstart/[{}]{instance_id}", cfg.version));
    let bus = Arc::new(telemetry::Bus::default());
    let env = Arc::new(api::Env {
        shared: Arc::new(Shared::default()),
        telemetry: bus.clone(),
        function: function.clone(),
        external_names: ext_names.clone(),
    });
    let srv = server::Server::start(env.clone()).await?;
    let api = srv.addr.to_string();
    let rt_env = super::env::runtime_env(&function, &api, &cfg.runtime_vars());
    let ext_env = super::env::extension_env(&rt_env);
    let sandbox = match &opts.cgroups {
        Some(c) => {
            let tag = format!("{}-{}-{}", id.variant, id.round, u8::from(id.warmup));
            let sb = c.create(&tag, cfg.memory_mb)?;
            sb.set_cpu(Some(boost::plan(opts.init_boost, cfg.memory_mb, phase).0))?;
            Some(sb)
        }
        None => None,
    };
    // Every process enters the sandbox before its exec (see sandbox.rs), and
    // its namespace (see namespace.rs).
    let cgroups = || -> Result<Vec<std::os::fd::OwnedFd>> {
        Ok(match &sandbox {
            Some(sb) => sb.procs_files()?,
            None => Vec::new(),
        })
    };
    let mut extensions = Vec::new();
    for (path, name) in cfg.extensions.iter().zip(&ext_names) {
        let target = Target::new(
            vec![path.display().to_string()],
            Vec::new(),
            path.parent().map(PathBuf::from),
        )?;
        let prep = processes::prepare(
            lab,
            Role::Extension(name.clone()),
            &inside_target(&target, &cfg.layout, Some(&extension_path(&cfg.layout, name))),
            &ext_env,
            cgroups()?,
            namespace.as_ref(),
        )?;
        extensions.push((name.clone(), prep));
    }
    let runtime = processes::prepare(
        lab,
        Role::Runtime,
        &inside_target(&cfg.runtime, &cfg.layout, None),
        &rt_env,
        cgroups()?,
        namespace.as_ref(),
    )?;
    let environment = Environment {
        lab,
        env,
        bus,
        logs: Arc::new(Logs::new(opts.tail_lines, opts.log.clone())),
        srv,
        sandbox,
        namespace,
        procs: Vec::new(),
        t0: 0,
        phase,
        instance_id,
        alone: true,
        seen: Vec::new(),
    };
    Ok((environment, Pending { extensions, runtime }))
}

/// Where an external extension is in the sandbox: /opt/extensions/NAME (the
/// file the overlay shows there is the one discovery picked).
fn extension_path(layout: &super::layout::Layout, name: &str) -> PathBuf {
    if layout.sandboxed {
        std::path::Path::new(super::layout::OPT)
            .join("extensions")
            .join(name)
    } else {
        PathBuf::new()
    }
}

/// A host target as the sandbox's processes see it: its program (at `program`
/// when given and sandboxed) and working directory mapped into the namespace;
/// the runtime works in the task root, as on Lambda.
pub(super) fn inside_target(
    target: &Target,
    layout: &super::layout::Layout,
    program: Option<&std::path::Path>,
) -> Target {
    if !layout.sandboxed {
        return target.clone();
    }
    // An extension works in its directory, the runtime in the task root.
    let (program, cwd) = match program {
        Some(p) => (p.to_path_buf(), p.parent().map(PathBuf::from)),
        None => (
            layout.inside(&target.program),
            Some(PathBuf::from(super::layout::TASK_ROOT)),
        ),
    };
    let mut argv = target.argv.clone();
    if let Some(first) = argv.first_mut() {
        *first = program.display().to_string();
    }
    Target {
        argv,
        cwd,
        program,
        ..target.clone()
    }
}

/// Has init failed (or been interrupted) in a way that ends the wait?
fn init_broken(s: &State) -> bool {
    s.interrupted || s.init_error.is_some() || s.extension_error.is_some() || !s.exits.is_empty()
}

/// T0 → Init Duration or a failure, then init's platform events. Err: a process
/// could not be started (or put in its cgroup); the caller cleans up.
pub(super) async fn run(e: &mut Environment, pending: Pending, cfg: &Config, opts: &Options) -> Result<Init> {
    let ext_names: Vec<String> = pending.extensions.iter().map(|(n, _)| n.clone()).collect();
    e.t0 = now_ns();
    let phase = e.phase;
    let boost_timer = match (&e.sandbox, boost::plan(opts.init_boost, cfg.memory_mb, phase).1) {
        (Some(sb), Some(after)) => Some(boost::Timer::start(sb.cpu_quota(), after, cfg.memory_mb)),
        _ => None,
    };
    init_start(e, cfg, opts);
    let mut setup_error = None;
    for (_, prep) in pending.extensions {
        match start(e, prep) {
            Ok(p) => e.procs.push(p),
            Err(err) => {
                setup_error = Some(err);
                break;
            }
        }
    }
    let limit = if phase == "init" {
        opts.init_timeout
    } else {
        opts.function_timeout
    }
    .as_nanos() as u64;
    // From T0 as moved past the first placement (the runtime's, when there are
    // no extensions, is only known after this point): the limit is init's own.
    let deadline = |e: &Environment| e.t0 + limit;
    let registered = |s: &State| {
        ext_names
            .iter()
            .all(|n| s.extensions.iter().any(|e| &e.name == n))
    };
    let mut init: std::result::Result<u64, Failure> = Err(timed_out());
    let mut runtime_started = false;
    let s = e.env.shared.clone();
    if setup_error.is_none()
        && s.wait_until(deadline(e), |s| init_broken(s) || registered(s))
            .await
        && !init_broken(&s.lock())
    {
        match start(e, pending.runtime) {
            Ok(p) => {
                e.procs.push(p);
                runtime_started = true;
            }
            Err(err) => setup_error = Some(err),
        }
    }
    if runtime_started {
        if let Some(ns) = ready(e, deadline(e)).await {
            init = Ok(ns);
        }
    }
    e.bus.close();
    // Init is over: from here on the CPU is the memory's share.
    drop(boost_timer);
    if let Some(sb) = &e.sandbox {
        sb.set_cpu(Some(sandbox::vcpus(cfg.memory_mb)))?;
    }
    let interrupted = coldstart_core::launch::signals::interrupted();
    let mut exit_status = None;
    let marks = {
        let st = s.lock();
        if init.is_err() {
            let oom = || e.sandbox.as_ref().is_some_and(|sb| sb.oom_killed());
            init = Err(classify_failure(&st, oom));
            exit_status = st.exits.first().map(|e| e.status.clone());
        }
        lambda_marks(&st, e.t0, &e.procs)
    };
    if let Some(err) = setup_error {
        return Err(err);
    }
    // platform.extension per extension, then initReport.
    extension_events(e);
    let init_ms = match &init {
        Ok(ns) => *ns as f64 / 1e6,
        Err(_) => now_ns().min(deadline(e)).saturating_sub(e.t0) as f64 / 1e6,
    };
    if init.is_err() {
        // What the processes printed before they failed belongs before INIT_REPORT
        // (it may still be in their pipes when the exit is seen).
        for p in &e.procs {
            p.flush_output().await;
        }
    }
    init_report(e, &init, init_ms, interrupted);
    let usage = e
        .procs
        .first()
        .map(|p| usage::snapshot(&tree::members(p.pid)))
        .unwrap_or_default();
    Ok(Init {
        result: init,
        ms: init_ms,
        exit_status,
        interrupted,
        marks,
        usage,
    })
}

/// INIT_START in the log, and `platform.initStart`.
fn init_start(e: &Environment, cfg: &Config, opts: &Options) {
    let phase = e.phase;
    let function = &e.env.function;
    e.logs
        .line(&report::init_start(&opts.region, &cfg.runtime_version));
    e.bus.emit(
        "platform.initStart",
        json!({
            "initializationType": "on-demand",
            "phase": phase,
            "runtimeVersion": cfg.runtime_version,
            "functionName": function.name,
            "functionVersion": function.version,
            "instanceId": e.instance_id,
            "instanceMaxMemory": cfg.memory_mb * 1024 * 1024,
        }),
    );
}

/// Once the runtime started: its /next (`platform.initRuntimeDone`), then every
/// extension's; how long init took (None: it broke, or `deadline` came first).
async fn ready(e: &Environment, deadline: u64) -> Option<u64> {
    let s = &e.env.shared;
    let phase = e.phase;
    let rt_ready = s
        .wait_until(deadline, |s| init_broken(s) || s.runtime_ready_ns.is_some())
        .await
        && s.lock().runtime_ready_ns.is_some()
        && !init_broken(&s.lock());
    if rt_ready {
        e.bus.emit(
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
                .unwrap_or(e.t0);
            return Some(end.saturating_sub(e.t0));
        }
    }
    None
}

/// INIT_REPORT and `platform.initRuntimeDone` of a failed init, and
/// `platform.initReport` (none of them when Ctrl-C ended it).
fn init_report(e: &Environment, init: &std::result::Result<u64, Failure>, init_ms: f64, interrupted: bool) {
    let phase = e.phase;
    let mut init_report = json!({
        "initializationType": "on-demand",
        "phase": phase,
        "metrics": {"durationMs": round2(init_ms)},
    });
    // An interrupt is ours, not the function's: its processes dying of it is no
    // error of theirs (Lambda has no such init to report).
    if let (Err(f), false) = (init, interrupted) {
        init_report["status"] = f.status.clone().into();
        if let Some(t) = &f.error_type {
            init_report["errorType"] = t.clone().into();
        }
        e.logs.line(&report::init_report(init_ms, phase, f));
        if !matches!(f.error_type.as_deref(), Some("Sandbox.Timedout")) {
            e.bus.emit(
                "platform.initRuntimeDone",
                super::invoke::with_error_type(
                    Some(f),
                    json!({"initializationType": "on-demand", "phase": phase, "status": f.status}),
                ),
            );
        }
    }
    if !interrupted {
        e.bus.emit("platform.initReport", init_report);
    }
}

/// `platform.extension` for each extension: registered, or ready, and its events.
fn extension_events(e: &Environment) {
    for x in e.env.shared.lock().extensions.iter() {
        let mut events = Vec::new();
        if x.invoke {
            events.push("INVOKE");
        }
        if x.shutdown {
            events.push("SHUTDOWN");
        }
        e.bus.emit(
            "platform.extension",
            json!({"name": x.name, "state": if x.ready_ns.is_some() { "Ready" } else { "Registered" }, "events": events}),
        );
    }
}

/// Start a prepared process (after T0; it enters the sandbox before its exec).
/// The spawning thread is held during the placement's kernel wait. T0 moves
/// past the first process's wait only, while nothing of the environment runs:
/// a later process's wait overlaps the ones already running (an extension can
/// register and be ready during it), so moving T0 past it would put their
/// instants before T0. Those later waits (microseconds on a quiet machine, up
/// to an RCU grace period under load) stay inside Init Duration.
fn start(e: &mut Environment, prep: processes::Prepared) -> Result<Process> {
    let p = processes::start(prep, &e.env.shared, &e.bus, &e.logs)?;
    if e.procs.is_empty() {
        e.t0 += p.placement_ns;
    }
    Ok(p)
}

/// The instants the APIs saw, as marks since T0, each in the process that made the
/// call: `runtime_ready` (the runtime's first /next), `ext.NAME.register` and
/// `ext.NAME.ready` (its /register and first /event/next). An internal extension
/// registers from the runtime's process.
fn lambda_marks(st: &State, t0: u64, procs: &[Process]) -> Vec<Mark> {
    let pid_of = |role: &Role| procs.iter().find(|p| &p.role == role).map(|p| p.pid);
    let runtime = pid_of(&Role::Runtime);
    let mark = |name: String, at: u64, pid: Option<i32>| {
        let m = Mark::new(name, MarkSource::Lambda, at.saturating_sub(t0));
        match pid {
            Some(pid) => m.in_pid(pid),
            None => m,
        }
    };
    let mut marks = Vec::new();
    if let Some(r) = st.runtime_ready_ns {
        marks.push(mark("runtime_ready".into(), r, runtime));
    }
    for x in &st.extensions {
        let pid = if x.external {
            pid_of(&Role::Extension(x.name.clone()))
        } else {
            runtime
        };
        marks.push(mark(format!("ext.{}.register", x.name), x.registered_ns, pid));
        if let Some(r) = x.ready_ns {
            marks.push(mark(format!("ext.{}.ready", x.name), r, pid));
        }
    }
    marks.sort_by_key(|m| m.t_ns);
    marks
}

fn timed_out() -> Failure {
    Failure {
        status: "timeout".into(),
        error_type: Some("Sandbox.Timedout".into()),
    }
}

/// Why init did not finish, in Lambda's terms. `oom`: whether the sandbox's
/// memory cgroup recorded an OOM kill (a SIGKILLed runtime then ran out of the
/// memory size, as during an invoke).
fn classify_failure(s: &State, oom: impl Fn() -> bool) -> Failure {
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
            Role::Runtime if e.status.signal == Some(libc::SIGKILL) && oom() => error("Runtime.OutOfMemory"),
            Role::Runtime => error("Runtime.ExitError"),
            Role::Extension(_) => error("Extension.Crash"),
        };
    }
    timed_out()
}
