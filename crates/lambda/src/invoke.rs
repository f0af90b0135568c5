//! Lambda's invoke phase: the event to the runtime (and INVOKE to the extensions
//! that asked for it), its response or error, the extensions' post-runtime work,
//! then END and REPORT (Duration, Billed Duration, Max Memory Used) in the log and
//! `platform.runtimeDone` / `platform.report` in telemetry.

use super::report::{self, Failure};
use super::state::{self, Invocation, Role, State};
use super::{round2, telemetry, Config, Environment, Options};
use coldstart_core::clock::now_ns;
use coldstart_core::launch::{tree, usage};
use serde_json::json;
use std::time::Duration;

/// What the invoke measured.
pub(super) struct Invoked {
    /// The invoke's Duration (event sent → runtime and extensions done), ns.
    pub ns: u64,
    pub failure: Option<Failure>,
    /// `invoke_ms`, `post_runtime_ms`, `max_memory_mb`, `billed_ms`.
    pub metrics: Vec<(&'static str, f64)>,
    /// The runtime's response or error document (None: it posted neither).
    pub body: Option<Vec<u8>>,
    pub request_id: String,
}

/// Which invoke of an environment this is, for its REPORT.
#[derive(Debug, Clone, Copy)]
pub(super) enum Which {
    /// The first after an on-demand init: REPORT shows this Init Duration.
    Cold(f64),
    /// The first after a suppressed init, which counts inside its Duration.
    AfterSuppressedInit,
    /// A later invoke of the same environment (`--invokes`).
    Warm,
}

/// One invoke of the event.
pub(super) async fn run(
    e: &Environment,
    cfg: &Config,
    opts: &Options,
    event: &[u8],
    which: Which,
) -> Invoked {
    let (bus, logs) = (&e.bus, &e.logs);
    // As on Lambda, an invoke starts when the runtime asks for it: what a runtime
    // does after posting the previous response (before its /next) belongs to no
    // invoke's Duration. A runtime that never asks gets the event after the
    // function timeout, and that invoke times out.
    runtime_asks(e, opts.function_timeout).await;
    let Sent {
        request_id,
        t_inv,
        inv_deadline,
    } = send(e, opts, event);
    let (result, delivered, mut failure) = runtime_result(e, &request_id, inv_deadline).await;
    // A timed-out invoke ends at its deadline, as Lambda's REPORT shows it (the
    // wait's wake-up may come later on a busy machine).
    let runtime_done = result.as_ref().map_or(now_ns().min(inv_deadline), |r| r.at_ns);
    let produced = result.as_ref().map_or(0, |r| r.body.len());
    let latency_ms = delivered.map_or(0.0, |d| (d.saturating_sub(t_inv)) as f64 / 1e6);
    bus.emit(
        "platform.runtimeDone",
        with_error_type(failure.as_ref(), json!({
            "requestId": request_id,
            "status": failure.as_ref().map_or("success", |f| f.status.as_str()),
            "metrics": {"durationMs": round2(runtime_done.saturating_sub(t_inv) as f64 / 1e6), "producedBytes": produced},
            "spans": [
                {"name": "responseLatency", "start": telemetry::iso8601_now(), "durationMs": round2(latency_ms)},
                {"name": "responseDuration", "start": telemetry::iso8601_now(), "durationMs": 0.0},
            ],
        })),
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
        match extensions_done(e, t_inv, inv_deadline, runtime_done).await {
            Ok(t) => t_end = t,
            Err((t, f)) => {
                t_end = t;
                failure = Some(f);
            }
        }
    }
    let duration_ms = (t_end - t_inv) as f64 / 1e6;
    let max_bytes = max_memory_bytes(e);
    let max_mb = report::mb(max_bytes);
    // A suppressed init (phase invoke) is part of the invoke's duration.
    let (duration_ms, init_ms) = match which {
        Which::Cold(i) => (duration_ms, Some(i)),
        Which::AfterSuppressedInit => ((t_end - e.t0) as f64 / 1e6, None),
        Which::Warm => (duration_ms, None),
    };
    // Output the processes left without a newline belongs to this invoke.
    for p in &e.procs {
        p.flush_output().await;
    }
    let billed = close(
        e,
        opts,
        &report::ReportLine {
            request_id: &request_id,
            duration_ms,
            memory_mb: cfg.memory_mb,
            max_memory_used_mb: max_mb,
            init_ms,
            failure: failure.as_ref(),
        },
    );
    Invoked {
        ns: t_end - t_inv,
        failure,
        metrics: vec![
            ("invoke_ms", duration_ms),
            ("post_runtime_ms", t_end.saturating_sub(runtime_done) as f64 / 1e6),
            ("max_memory_mb", max_mb as f64),
            ("billed_ms", billed as f64),
        ],
        body: result.map(|r| r.body),
        request_id,
    }
}

/// The invoke's end in the log and in telemetry: the error lines of a failed
/// one, END, `platform.end`, REPORT and `platform.report`; its billed ms.
fn close(e: &Environment, opts: &Options, line: &report::ReportLine) -> u64 {
    let s = &e.env.shared;
    let (bus, logs) = (&e.bus, &e.logs);
    let (request_id, failure) = (line.request_id, line.failure);
    let (duration_ms, init_ms, max_mb) = (line.duration_ms, line.init_ms, line.max_memory_used_mb);
    if let Some(f) = failure {
        let exit = s.lock().exited(&Role::Runtime).map(|x| x.status.clone());
        for l in report::invoke_error(
            request_id,
            f,
            exit.as_ref(),
            opts.function_timeout.as_secs_f64(),
            &telemetry::iso8601_now(),
        ) {
            logs.line(&l);
        }
    }
    logs.line(&report::end(request_id));
    // Only Logs API subscribers get platform.end (the Telemetry API has none).
    bus.emit("platform.end", json!({"requestId": request_id}));
    logs.line(&report::report(line));
    let billed = report::billed_ms(duration_ms, init_ms);
    let mut metrics = json!({
        "durationMs": round2(duration_ms),
        "billedDurationMs": billed,
        "memorySizeMB": line.memory_mb,
        "maxMemoryUsedMB": max_mb,
    });
    if let Some(i) = init_ms {
        metrics["initDurationMs"] = round2(i).into();
    }
    bus.emit(
        "platform.report",
        with_error_type(
            failure,
            json!({
                "requestId": request_id,
                "status": failure.map_or("success", |f| f.status.as_str()),
                "metrics": metrics,
            }),
        ),
    );
    billed
}

/// The event sent: START in the log, `platform.start`, INVOKE to the
/// extensions that asked for it, and the event queued for the runtime's /next.
struct Sent {
    request_id: String,
    /// When the invoke started (ns), and its deadline.
    t_inv: u64,
    inv_deadline: u64,
}

fn send(e: &Environment, opts: &Options, event: &[u8]) -> Sent {
    let s = &e.env.shared;
    let (bus, logs) = (&e.bus, &e.logs);
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
    let arn = e.env.function.arn();
    let version = &e.env.function.version;
    logs.line(&report::start(&request_id, version));
    bus.emit(
        "platform.start",
        json!({"requestId": request_id, "version": version,
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
            event: event.to_vec(),
            deadline_ms,
            trace_id: trace_id.clone(),
            arn: arn.clone(),
            delivered_ns: None,
            result: None,
        });
    });
    Sent {
        request_id,
        t_inv,
        inv_deadline,
    }
}

/// The runtime's response or error for `request_id` (None: it exited, or the
/// deadline came first), when the runtime took the event, and the failure it is.
async fn runtime_result(
    e: &Environment,
    request_id: &str,
    inv_deadline: u64,
) -> (Option<state::InvokeResult>, Option<u64>, Option<Failure>) {
    let s = &e.env.shared;
    let runtime_gone = |st: &State| st.exited(&Role::Runtime).is_some();
    s.wait_until(inv_deadline, |st| {
        // `current` may still be the previous (warm) invoke's until the runtime's
        // /next takes this one.
        st.interrupted
            || runtime_gone(st)
            || st
                .current
                .as_ref()
                .is_some_and(|c| c.request_id == request_id && c.result.is_some())
    })
    .await;
    let (result, delivered) = {
        let st = s.lock();
        let cur = st.current.as_ref().filter(|c| c.request_id == request_id);
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
    // A runtime SIGKILLed by the OOM killer ran out of the memory size.
    if let Some(f) = failure
        .as_mut()
        .filter(|f| f.error_type.as_deref() == Some("Runtime.ExitError"))
    {
        let killed = s
            .lock()
            .exited(&Role::Runtime)
            .is_some_and(|x| x.status.signal == Some(libc::SIGKILL));
        if killed && e.sandbox.as_ref().is_some_and(|sb| sb.oom_killed()) {
            f.error_type = Some("Runtime.OutOfMemory".into());
        }
    }
    (result, delivered, failure)
}

/// When the extensions subscribed to INVOKE were done (each called /next again
/// after the invoke started), or when and how they failed it: the deadline
/// came, or one exited.
async fn extensions_done(
    e: &Environment,
    t_inv: u64,
    inv_deadline: u64,
    runtime_done: u64,
) -> Result<u64, (u64, Failure)> {
    let s = &e.env.shared;
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
        return Ok(st
            .extensions
            .iter()
            .filter(|e| e.invoke)
            .filter_map(|e| e.last_next_ns)
            .chain([runtime_done])
            .max()
            .unwrap_or(runtime_done));
    }
    let t_end = now_ns().min(inv_deadline);
    let failure = if now_ns() >= inv_deadline {
        Failure {
            status: "timeout".into(),
            error_type: Some("Sandbox.Timedout".into()),
        }
    } else {
        Failure {
            status: "error".into(),
            error_type: Some("Extension.Crash".into()),
        }
    };
    Err((t_end, failure))
}

/// Max Memory Used: the sandbox's peak, else the process tree's peak RSS.
fn max_memory_bytes(e: &Environment) -> u64 {
    e.sandbox
        .as_ref()
        .and_then(|sb| sb.max_memory_bytes())
        .unwrap_or_else(|| {
            let u = e
                .procs
                .first()
                .map(|p| usage::snapshot(&tree::members(p.pid)))
                .unwrap_or_default();
            u.peak_rss_kb.unwrap_or(0) * 1024
        })
}

/// After an environment's last invoke, how long the runtime may take to call /next
/// again: what it prints after its response (awslambdaric's "Failed to post handler
/// success response. Http response code: 413") then reaches the log before shutdown.
pub(super) const LAST_NEXT_WITHIN: Duration = Duration::from_secs(2);

/// Wait (at most `within`) until the runtime is blocked in /next, it exited, or
/// Ctrl-C. True if it is in /next.
pub(super) async fn runtime_asks(e: &Environment, within: Duration) -> bool {
    let s = &e.env.shared;
    let deadline = now_ns().saturating_add(within.as_nanos() as u64);
    s.wait_until(deadline, |st| {
        st.runtime_waiting || st.interrupted || st.exited(&Role::Runtime).is_some()
    })
    .await;
    s.lock().runtime_waiting
}

/// After the last invoke: let the runtime finish its post-response work (up to
/// `LAST_NEXT_WITHIN`, not after a timeout: Lambda would reset that environment)
/// and pass on what it printed meanwhile, before shutdown signals it.
pub(super) async fn after_last(e: &Environment, last: Option<&Failure>) {
    if last.is_some_and(|f| f.status == "timeout") || coldstart_core::launch::signals::interrupted() {
        return;
    }
    runtime_asks(e, LAST_NEXT_WITHIN).await;
    for p in &e.procs {
        p.flush_output().await;
    }
}

/// A record's `errorType`, only when there is one (Lambda's schema leaves it out
/// on success rather than sending null).
pub(super) fn with_error_type(failure: Option<&Failure>, mut record: serde_json::Value) -> serde_json::Value {
    if let Some(t) = failure.and_then(|f| f.error_type.as_ref()) {
        record["errorType"] = t.clone().into();
    }
    record
}

/// The invoke of a suppressed init that failed too: Lambda still logs START, the
/// error, END and a billed REPORT (Duration = the retried init, up to the function
/// timeout), and sends platform.start / runtimeDone / report.
pub(super) fn after_failed_init(
    e: &Environment,
    cfg: &Config,
    opts: &Options,
    failure: &Failure,
    init_ms: f64,
    runtime_exit: Option<&coldstart_core::sample::ExitStatus>,
) -> f64 {
    let (bus, logs) = (&e.bus, &e.logs);
    let request_id = state::uuid();
    let version = &e.env.function.version;
    logs.line(&report::start(&request_id, version));
    bus.emit(
        "platform.start",
        json!({"requestId": request_id, "version": version}),
    );
    for l in report::invoke_error(
        &request_id,
        failure,
        runtime_exit,
        opts.function_timeout.as_secs_f64(),
        &telemetry::iso8601_now(),
    ) {
        logs.line(&l);
    }
    bus.emit(
        "platform.runtimeDone",
        with_error_type(
            Some(failure),
            json!({"requestId": request_id, "status": failure.status,
                   "metrics": {"durationMs": round2(init_ms), "producedBytes": 0}}),
        ),
    );
    logs.line(&report::end(&request_id));
    bus.emit("platform.end", json!({"requestId": request_id}));
    let max_mb = report::mb(
        e.sandbox
            .as_ref()
            .and_then(|sb| sb.max_memory_bytes())
            .unwrap_or(0),
    );
    logs.line(&report::report(&report::ReportLine {
        request_id: &request_id,
        duration_ms: init_ms,
        memory_mb: cfg.memory_mb,
        max_memory_used_mb: max_mb,
        init_ms: None,
        failure: Some(failure),
    }));
    let billed = report::billed_ms(init_ms, None);
    bus.emit(
        "platform.report",
        with_error_type(
            Some(failure),
            json!({"requestId": request_id, "status": failure.status,
                   "metrics": {"durationMs": round2(init_ms), "billedDurationMs": billed,
                               "memorySizeMB": cfg.memory_mb, "maxMemoryUsedMB": max_mb}}),
        ),
    );
    billed as f64
}
