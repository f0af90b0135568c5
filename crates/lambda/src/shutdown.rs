//! Lambda's shutdown phase, with its deadlines, and the environment's cleanup.

use super::processes::{self, Process};
use super::state::{Role, State};
use super::Environment;
use crate::clock::now_ns;
use crate::launch::tree;
use serde_json::json;
use std::time::Duration;

/// Shutdown budget with external extensions ([DG]): 2,000 ms, of which the runtime
/// gets 300 ms after SIGTERM (500 ms with an internal extension).
pub const SHUTDOWN_MS: u64 = 2_000;
const RUNTIME_GRACE_MS: u64 = 300;
const RUNTIME_GRACE_INTERNAL_MS: u64 = 500;

/// Once every process is dead, how long their checkpoint pipes may take to end.
const CHECKPOINTS_WITHIN: Duration = Duration::from_secs(1);

/// Lambda's shutdown: SIGTERM to the runtime, a short grace, SIGKILL; telemetry
/// flushed; SHUTDOWN to the extensions that asked for it (others SIGKILLed); at the
/// deadline SIGKILL for whatever is left. Returns (duration, whether SIGKILL was needed).
pub(super) async fn run(e: &Environment) -> (u64, bool) {
    let s = &e.env.shared;
    let procs = &e.procs;
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
    e.bus.flush(deadline).await;
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

/// SIGKILL and reap everything of the environment; read the rest of its
/// checkpoints; stop its server and telemetry; remove its cgroup.
pub(super) async fn cleanup(e: Environment) -> Vec<super::telemetry::Delivery> {
    let Environment {
        lab,
        mut procs,
        srv,
        bus,
        sandbox,
        namespace,
        ..
    } = e;
    let procs = &mut procs;
    for p in procs.iter() {
        processes::signal_group(p.pid, libc::SIGKILL);
    }
    if let Some(p) = procs.first() {
        let pid = p.pid;
        let ok = tokio::task::spawn_blocking(move || tree::kill_all_in(lab, pid))
            .await
            .unwrap_or(false);
        if !ok {
            crate::out::errln!(
                "coldstart: could not kill every process of the Lambda environment: check `ps -o pid,stat,cmd --ppid {}`",
                std::process::id()
            );
        }
    }
    for p in procs.iter_mut() {
        p.checkpoints_read(CHECKPOINTS_WITHIN).await;
    }
    let deliveries = bus.stop();
    srv.stop().await;
    drop(sandbox);
    // The last descriptors on it: the namespace and its mounts go with them.
    drop(namespace);
    deliveries
}
