//! The phases that tile a run: `exec-chain`, `loader`, `init` from the tracer;
//! `listen→ready` and `first request` once the probe's ready time is known.

use super::{Phase, Timeline};
use coldstart_core::trace::{Event, SocketRole, Trace};

/// time zero → final exec → loader end → init end, each starting where the
/// previous ends.
pub(super) fn tiling(final_exec: u64, loader_end: u64, init_end: u64) -> Vec<Phase> {
    vec![
        Phase::new("exec-chain", 0, final_exec),
        Phase::new("loader", final_exec, loader_end),
        Phase::new("init", loader_end, init_end),
    ]
}

/// The tracer's timeline ends init at the service process's listen (or the
/// end of the trace); with a readiness probe the run ends at ready: add
/// `listen→ready` from that listen, clip init to ready, and the first request:
/// the first accept on the service's listening socket (by it, or by a worker
/// it forked after listening, which inherited the socket) → the first
/// response on that connection. `ready_ns` counts from time zero; `trace` is
/// the one `tl` was built from.
pub fn add_ready_phases(tl: &mut Timeline, trace: &Trace, ready_ns: u64) {
    let listen = tl.service.listen.clone();
    if let Some(init) = tl.phases.iter_mut().find(|p| p.name == "init") {
        if listen.is_none() && init.end_ns > ready_ns && ready_ns >= init.start_ns {
            *init = Phase::new("init", init.start_ns, ready_ns);
        }
    }
    let Some(listen) = listen else {
        tl.phases.sort_by_key(|p| p.start_ns);
        return;
    };
    if ready_ns > listen.t_ns {
        tl.phases.push(Phase::new("listen→ready", listen.t_ns, ready_ns));
    }
    // Processes that can accept on it: the listener, and its descendants forked
    // after the listen (an earlier child, epmd say, has sockets of its own).
    let mut acceptors = vec![listen.pid];
    for p in &tl.processes {
        if p.parent.is_some_and(|q| acceptors.contains(&q)) && p.start_ns >= listen.t_ns {
            acceptors.push(p.pid);
        }
    }
    let since_t0 = |ts: u64| ts.saturating_sub(trace.t0_ns);
    // The tracer's order, not time order: the first accept it reported.
    let accept = trace.events.iter().find_map(|e| match e.event {
        Event::Accept { listen_fd, fd } if listen_fd == listen.fd && acceptors.contains(&e.pid) => {
            Some((e.pid, fd, since_t0(e.ts_ns)))
        }
        _ => None,
    });
    let Some((pid, fd, a)) = accept else {
        tl.phases.sort_by_key(|p| p.start_ns);
        return;
    };
    let respond = trace.events.iter().find_map(|e| match e.event {
        Event::FirstWrite {
            fd: f,
            role: SocketRole::Accepted,
        } if e.pid == pid && f == fd && since_t0(e.ts_ns) >= a => Some(since_t0(e.ts_ns)),
        _ => None,
    });
    if let Some(r) = respond {
        tl.phases.push(Phase::new("first request", a, r));
    }
    tl.phases.sort_by_key(|p| p.start_ns);
}
