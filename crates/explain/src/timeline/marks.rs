//! The tracer's marks: spawn, each exec, libraries mapped, the service's
//! listen, accept and response, the root's exit.

use super::{Ev, ExecStep, ListenInfo, ProcessInfo};
use coldstart_core::sample::{Mark, MarkSource};
use coldstart_core::trace::{Event, SocketRole};

fn mark(name: &str, t_ns: u64, pid: i32) -> Mark {
    Mark::new(name, MarkSource::Tracer, t_ns).in_pid(pid)
}

/// What the marks are read from, besides the events.
pub(super) struct Found<'a> {
    pub chain: &'a [ExecStep],
    pub loader_end: u64,
    pub first_listen: Option<&'a ListenInfo>,
    pub root: &'a ProcessInfo,
}

/// The marks in time order (ties: in the order listed above).
pub(super) fn marks(events: &[Ev], found: &Found) -> Vec<Mark> {
    let root = found.root.pid;
    let mut marks = vec![mark("spawn", 0, root)];
    for step in found.chain {
        marks.push(mark("exec", step.start_ns, step.pid).with_detail(step.path.clone()));
    }
    let (final_exec, final_pid) = found.chain.last().map_or((0, root), |s| (s.start_ns, s.pid));
    if found.loader_end > final_exec {
        marks.push(mark("libraries-mapped", found.loader_end, final_pid));
    }
    if let Some(l) = found.first_listen {
        let addr = l.addr.as_ref().map(|a| a.to_string()).unwrap_or_default();
        marks.push(mark("first-listen", l.t_ns, l.pid).with_detail(addr));
    }
    // The service's own accept and response when it made them (a helper's,
    // epmd answering a registration, is not the first request); else the tree's.
    let server = found.first_listen.map(|l| l.pid);
    let first = |pred: &dyn Fn(&Event) -> bool| {
        events
            .iter()
            .find(|e| Some(e.pid) == server && pred(e.event))
            .or_else(|| events.iter().find(|e| pred(e.event)))
    };
    if let Some(e) = first(&|ev| matches!(ev, Event::Accept { .. })) {
        marks.push(mark("first-accept", e.t_ns, e.pid));
    }
    if let Some(e) = first(&|ev| {
        matches!(
            ev,
            Event::FirstWrite {
                role: SocketRole::Accepted,
                ..
            }
        )
    }) {
        marks.push(mark("first-response", e.t_ns, e.pid));
    }
    let p = found.root;
    if let Some(exit) = p.exit_ns {
        let detail = match (p.exit_code, p.exit_signal) {
            (Some(c), _) => format!("status {c}"),
            (_, Some(s)) => format!("signal {s}"),
            _ => String::new(),
        };
        marks.push(mark("exit", exit, root).with_detail(detail));
    }
    marks.sort_by_key(|m| m.t_ns);
    marks
}
