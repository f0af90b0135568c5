//! The service process: the one the readiness probe talks to, whose events
//! give the phases; the fork path from the root to it (the critical path);
//! and how long other processes held that path.

use super::{script, Ev, ListenInfo, ProcessInfo, ServiceInfo};
use coldstart_core::target::Readiness;
use coldstart_core::trace::{Event, SockAddr, Trace};
use std::collections::HashMap;

/// What the readiness probe says about which process serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceHint {
    /// tcp/http: the process listening on (or bound to) this port.
    Port(u16),
    /// `listen`: the process whose listen made the run ready (the first).
    FirstListen,
    /// `exit`: the root, whose exit is ready (past shells that forked and
    /// waited on their program, as for [`ServiceHint::Output`]).
    Root,
    /// log/file: the tracer does not see which process wrote the line or made
    /// the file; the root's program, past shells that forked and waited on it.
    Output,
}

impl ServiceHint {
    pub fn of(readiness: &Readiness) -> ServiceHint {
        match readiness {
            Readiness::Tcp { port, .. } => ServiceHint::Port(*port),
            Readiness::Http { url } => url
                .port_or_known_default()
                .map_or(ServiceHint::FirstListen, ServiceHint::Port),
            Readiness::Listen => ServiceHint::FirstListen,
            Readiness::Exit => ServiceHint::Root,
            Readiness::Log { .. } | Readiness::File { .. } => ServiceHint::Output,
        }
    }

    /// From a readiness as stored (its display form).
    pub fn parse(readiness: &str) -> ServiceHint {
        Readiness::parse(readiness).map_or(ServiceHint::FirstListen, |r| ServiceHint::of(&r))
    }
}

fn port_of(addr: &Option<SockAddr>) -> Option<u16> {
    match addr {
        Some(SockAddr::Inet { port, .. }) => Some(*port),
        _ => None,
    }
}

/// The service process's pid, why it is the one, and its listen.
pub(super) fn find(
    events: &[Ev],
    procs: &[ProcessInfo],
    listens: &[ListenInfo],
    hint: ServiceHint,
) -> (i32, String, Option<ListenInfo>) {
    let root = procs[0].pid;
    let first_listen_of = |pid: i32| listens.iter().find(|l| l.pid == pid).cloned();
    let by_first_listen = |why_not: &str| match listens.first() {
        Some(l) => (l.pid, format!("{why_not}made the first listen"), Some(l.clone())),
        None => (root, format!("{why_not}nothing listened: the root"), None),
    };
    match hint {
        ServiceHint::Port(port) => {
            if let Some(l) = listens.iter().find(|l| port_of(&l.addr) == Some(port)) {
                let addr = l.addr.as_ref().map(|a| a.to_string()).unwrap_or_default();
                return (
                    l.pid,
                    format!("listens on {addr}, the probe's port"),
                    Some(l.clone()),
                );
            }
            let bound = events.iter().find_map(|e| match e.event {
                Event::Bind { addr, ok: true, .. } if port_of(addr) == Some(port) => Some(e.pid),
                _ => None,
            });
            if let Some(pid) = bound {
                return (
                    pid,
                    format!("bound port {port}, the probe's"),
                    first_listen_of(pid),
                );
            }
            by_first_listen(&format!("no listen on port {port} was seen; "))
        }
        ServiceHint::FirstListen => by_first_listen(""),
        ServiceHint::Root => {
            // A wrapper that forks its program and waits on it (pyenv's
            // `pip-rehash/pip`) ends when the program does: the program is what
            // the run is about, and the wrapper's time is exec chain, not init.
            let pid = past_shells(procs, root);
            let why = if pid == root {
                "the root (ready = its exit)".to_string()
            } else {
                "the program the root's shell started and waited on (ready = the root's exit)".to_string()
            };
            (pid, why, first_listen_of(pid))
        }
        ServiceHint::Output => {
            let pid = past_shells(procs, root);
            let why = if pid == root {
                "the root (the writer of a ready line is not traced)".to_string()
            } else {
                "the program the root's shell started and waited on (the writer of a ready line is not traced)"
                    .to_string()
            };
            (pid, why, first_listen_of(pid))
        }
    }
}

/// `pid`, or, when its final program is a shell that forked (rather than
/// exec'd) its work, the child it ended up waiting on, repeated: the process a
/// `start.sh` that forks and waits on a runtime really runs. That child is the
/// last one started among those that exec'd and were still running when the
/// shell ended (or at the end of the trace), else among all that exec'd: a
/// script's helpers come first, its foreground command or `wait`ed server
/// last. (Not the one it waited for longest: a wrapper's own `sleep` or
/// lookups may outlast its quick program.)
pub fn past_shells(procs: &[ProcessInfo], pid: i32) -> i32 {
    let mut pid = pid;
    for _ in 0..procs.len() {
        let Some(p) = procs.iter().find(|p| p.pid == pid) else {
            return pid;
        };
        let shell = script::is_shell(&p.program) || p.argv.first().is_some_and(|a| script::is_shell(a));
        if !shell {
            return pid;
        }
        let outlived = |c: &ProcessInfo| match (c.exit_ns, p.exit_ns) {
            (None, _) => true,
            (Some(c), Some(s)) => c >= s,
            (Some(_), None) => false,
        };
        let Some(child) = procs
            .iter()
            .filter(|c| c.parent == Some(pid) && c.execs > 0)
            .max_by_key(|c| (outlived(c), c.start_ns))
        else {
            return pid;
        };
        pid = child.pid;
    }
    pid
}

/// Who waited for whom: each process whose end its parent collected gets
/// [`ProcessInfo::waited_from_ns`] and [`ProcessInfo::waited`]. The parent
/// waited from its last stop (any traced call or event of any of its
/// threads) at or before the child's end: a blocking wait4 entered earlier is
/// that stop itself; a shell reading a `$(…)`'s output makes no traced call
/// until the child is gone, so its last stop is the fork. A parent that
/// collects the end much later (a SIGCHLD handler) has worked meanwhile, or
/// the wait starts late; a parent that never collects it (the child ended
/// with it, or after) did not wait at all.
pub(super) fn waits(events: &[Ev], trace: &Trace, procs: &mut [ProcessInfo]) {
    let mut stops: HashMap<i32, Vec<u64>> = HashMap::new();
    for s in &trace.stops {
        stops
            .entry(s.pid)
            .or_default()
            .push(s.ts_ns.saturating_sub(trace.t0_ns));
    }
    for ts in stops.values_mut() {
        ts.sort_unstable();
    }
    let index: HashMap<i32, usize> = procs.iter().enumerate().map(|(i, p)| (p.pid, i)).collect();
    // Ends from our own kill at the end of the run: a parent that collects
    // them then (epmd's forking parent, say) was not waiting on the run's path.
    let killed_from = trace.killed.then(|| trace.end_ns.saturating_sub(trace.t0_ns));
    for e in events {
        let Event::Wait { child, .. } = e.event else {
            continue;
        };
        let Some(c) = index.get(child).map(|&i| &mut procs[i]) else {
            continue;
        };
        let Some(exit) = c.exit_ns.filter(|&x| killed_from.is_none_or(|k| x < k)) else {
            continue;
        };
        if c.parent != Some(e.pid) || c.waited_from_ns.is_some() {
            continue;
        }
        let last = stops.get(&e.pid).and_then(|ts| {
            let n = ts.partition_point(|&t| t <= exit);
            n.checked_sub(1).map(|i| ts[i])
        });
        // A stop at the wait's entry is always recorded; `e.t_ns` covers a
        // trace without stops (hand-made, or an older tracer's).
        let from = last.unwrap_or(e.t_ns.min(exit)).max(c.start_ns);
        c.waited_from_ns = Some(from.min(exit));
        c.waited = if e.t_ns < exit { "wait" } else { "reaped" }.into();
    }
}

/// Root → … → `service` through the recorded forks.
fn path_to(procs: &[ProcessInfo], service: i32) -> Vec<i32> {
    let parent: HashMap<i32, Option<i32>> = procs.iter().map(|p| (p.pid, p.parent)).collect();
    let mut path = vec![service];
    let mut at = service;
    while let Some(Some(p)) = parent.get(&at) {
        if path.contains(p) {
            break;
        }
        path.push(*p);
        at = *p;
    }
    path.reverse();
    path
}

/// The service, its path, each process's role and the time it held the path.
///
/// The critical path runs through the path's processes: each from its start
/// to the fork of the next, the service to `done` (its listen, or the end).
/// A process off the path held it only while the path process it hangs off
/// waited for it (see [`waits`]): for the child of a path process, from when
/// that process began waiting to the child's end, within the stretch; for its
/// descendants, the part of that span in which each was itself waited for by
/// its parent (`$(helper)` and `system("epmd -daemon")` wait on the shell that
/// runs them; the daemon epmd forks and leaves is waited for by no one). A process that
/// ran alongside, however and whenever it ended (a VM's port helper that
/// exits with it), held nothing.
pub(super) fn resolve(
    procs: &mut [ProcessInfo],
    pid: i32,
    why: String,
    listen: Option<ListenInfo>,
    end_ns: u64,
) -> ServiceInfo {
    let path = path_to(procs, pid);
    let done = listen.as_ref().map_or(end_ns, |l| l.t_ns);
    let start: HashMap<i32, u64> = procs.iter().map(|p| (p.pid, p.start_ns)).collect();
    let stretch: HashMap<i32, (u64, u64)> = path
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let until = path
                .get(i + 1)
                .and_then(|n| start.get(n))
                .copied()
                .unwrap_or(done);
            (*p, (start.get(p).copied().unwrap_or(0), until))
        })
        .collect();
    let parent: HashMap<i32, Option<i32>> = procs.iter().map(|p| (p.pid, p.parent)).collect();
    // Each path process's children's waited spans within its stretch.
    let waited: HashMap<i32, (u64, u64)> = procs
        .iter()
        .filter_map(|c| {
            let (from, until) = *stretch.get(&c.parent?)?;
            let span = (c.waited_from_ns?.max(from), c.exit_ns?.min(until));
            (span.0 < span.1).then_some((c.pid, span))
        })
        .collect();
    // Each process's own waited start (its parent collected it while waiting).
    let waited_from: HashMap<i32, Option<u64>> = procs.iter().map(|p| (p.pid, p.waited_from_ns)).collect();
    let mut held: Vec<(u64, u64)> = Vec::new();
    for p in procs.iter_mut() {
        p.role = if p.pid == pid {
            "service".into()
        } else if path.contains(&p.pid) {
            "launcher".into()
        } else {
            "helper".into()
        };
        if p.role != "helper" {
            continue;
        }
        // Its ancestor (or itself) that a path process forked, and that one.
        let mut top = p.pid;
        let mut owner = p.parent;
        while let Some(o) = owner {
            if stretch.contains_key(&o) {
                break;
            }
            top = o;
            owner = parent.get(&o).copied().flatten();
        }
        let Some(owner) = owner else {
            continue;
        };
        let (from, until) = stretch[&owner];
        let life_end = p.exit_ns.unwrap_or(end_ns);
        p.overlap_ns = life_end.min(until).saturating_sub(p.start_ns.max(from));
        // A descendant of `top` holds the path only where its own parent waited
        // for it, and so on up to `top`: a daemon that `epmd -daemon` forks
        // and leaves runs beside the shell that system(3) waits on.
        let mut since = 0;
        let mut q = p.pid;
        let mut chained = true;
        while q != top {
            match waited_from.get(&q).copied().flatten() {
                Some(w) => since = since.max(w),
                None => {
                    chained = false;
                    break;
                }
            }
            q = parent.get(&q).copied().flatten().unwrap_or(top);
        }
        if let Some(&(a, b)) = waited.get(&top).filter(|_| chained) {
            let (a, b) = (a.max(p.start_ns).max(since), b.min(life_end));
            if a < b {
                p.blocked_ns = b - a;
                held.push((a, b));
            }
        }
    }
    ServiceInfo {
        pid,
        why,
        listen,
        path,
        blocked_ns: union_ns(held),
    }
}

/// Total length of the union of intervals.
fn union_ns(mut spans: Vec<(u64, u64)>) -> u64 {
    spans.sort_unstable();
    let mut total = 0;
    let mut cur: Option<(u64, u64)> = None;
    for (a, b) in spans {
        cur = match cur {
            Some((ca, cb)) if a <= cb => Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                total += cb - ca;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    total + cur.map_or(0, |(a, b)| b - a)
}

#[cfg(test)]
mod tests {
    #[test]
    fn union_merges_overlaps() {
        assert_eq!(
            super::union_ns(vec![(5, 10), (0, 3), (8, 12), (20, 21)]),
            3 + 7 + 1
        );
        assert_eq!(super::union_ns(vec![]), 0);
    }
}
