//! Lambda's shutdown phase, with its deadlines, and the environment's cleanup.

use super::processes::{self, Process};
use super::state::{Role, State};
use super::Environment;
use coldstart_core::clock::now_ns;
use coldstart_core::launch::tree;
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
/// `grace` (not Lambda's) gives the runtime SIGTERM and that long, extensions or not.
pub(super) async fn run(e: &Environment, grace: Option<Duration>) -> (u64, bool) {
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
            if externals || internal || grace.is_some() {
                processes::signal_group(rt.pid, libc::SIGTERM);
                let grace = match grace {
                    Some(g) => g.as_millis() as u64,
                    None if internal => RUNTIME_GRACE_INTERNAL_MS,
                    None => RUNTIME_GRACE_MS,
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
        alone,
        env,
        seen,
        ..
    } = e;
    let procs = &mut procs;
    // Before the kill: who else is the environment's (once killed, its
    // children are reparented to coldstart and no longer show whose they were).
    let strays = if alone {
        Vec::new()
    } else {
        let mut all = members(procs, sandbox.as_ref());
        for p in seen {
            if !all.contains(&p) {
                all.push(p);
            }
        }
        all
    };
    for p in procs.iter() {
        processes::signal_group(p.pid, libc::SIGKILL);
    }
    if !alone {
        kill_own(&env.shared, procs, sandbox.as_ref(), strays).await;
    } else if let Some(p) = procs.first() {
        let pid = p.pid;
        let ok = tokio::task::spawn_blocking(move || tree::kill_all_in(lab, pid))
            .await
            .unwrap_or(false);
        if !ok {
            coldstart_core::out::errln!(
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

/// How long an environment among others may take to be gone after SIGKILL.
const OWN_GONE_WITHIN: Duration = Duration::from_secs(2);

/// The cleanup of one environment among others (`lambda serve`): the Lab's
/// (every live run's cgroup, every child of coldstart) would take the others
/// with it. Its process groups are already SIGKILLed; here its cgroup's
/// processes are, then its own processes' exits are awaited and the orphans it
/// left (reparented to coldstart, the subreaper) are reaped by pid.
async fn kill_own(
    shared: &super::state::Shared,
    procs: &[Process],
    sandbox: Option<&super::sandbox::Sandbox>,
    mut strays: Vec<i32>,
) {
    let own: Vec<i32> = procs.iter().map(|p| p.pid).collect();
    let deadline = now_ns() + OWN_GONE_WITHIN.as_nanos() as u64;
    let sweep = |strays: &mut Vec<i32>| {
        for pid in sandbox.map(|sb| sb.kill_all()).unwrap_or_default() {
            if !own.contains(&pid) && !strays.contains(&pid) {
                strays.push(pid);
            }
        }
        // One that left its process group (setsid) with no cgroup to hold it:
        // seen as the environment's moments ago, so its pid is still its own.
        for &pid in strays.iter().filter(|&&p| running(p)) {
            let _ = coldstart_sys::signal::kill(pid, libc::SIGKILL);
        }
    };
    sweep(&mut strays);
    shared
        .wait_until(deadline, |st| {
            own.iter().all(|pid| st.exits.iter().any(|e| e.pid == *pid))
        })
        .await;
    while now_ns() < deadline {
        sweep(&mut strays);
        // Reaped here if it was reparented to us; gone if another reaped it.
        strays.retain(|&pid| coldstart_core::launch::reaping::reap_exited(pid).is_none() && running(pid));
        if strays.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    coldstart_core::out::errln!(
        "coldstart: processes {strays:?} of a Lambda environment survived SIGKILL: check `ps -o pid,stat,cmd -p {}`",
        strays.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
    );
}

/// Whether `pid` exists and is not a zombie nobody reaped yet.
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| t.rfind(')').map(|i| t[i + 1..].trim_start().to_string()))
        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
}

/// The environment's processes besides its own roots: their descendants and
/// whatever else is in its cgroup.
pub(super) fn members(procs: &[Process], sandbox: Option<&super::sandbox::Sandbox>) -> Vec<i32> {
    let own: Vec<i32> = procs.iter().map(|p| p.pid).collect();
    let mut stack = own.clone();
    if let Some(sb) = sandbox {
        stack.extend(sb.pids());
    }
    let mut seen: Vec<i32> = Vec::new();
    while let Some(pid) = stack.pop() {
        if seen.contains(&pid) {
            continue;
        }
        seen.push(pid);
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten();
        for t in tasks {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            stack.extend(children.split_whitespace().filter_map(|c| c.parse::<i32>().ok()));
        }
    }
    seen.retain(|p| !own.contains(p));
    seen
}
