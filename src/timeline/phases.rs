//! The phases that tile a run: `exec-chain`, `loader`, `init` from the tracer;
//! `listen→ready` and `first request` once the probe's ready time is known.

use super::{Phase, Timeline};
use crate::trace::{Event, SocketRole, Trace};

/// time zero → final exec → loader end → init end, each starting where the
/// previous ends.
pub(super) fn tiling(final_exec: u64, loader_end: u64, init_end: u64) -> Vec<Phase> {
    vec![
        Phase::new("exec-chain", 0, final_exec),
        Phase::new("loader", final_exec, loader_end),
        Phase::new("init", loader_end, init_end),
    ]
}

/// The tracer's timeline ends init at the first listen (or the end of the
/// trace); with a readiness probe the run ends at ready: add `listen→ready`,
/// clip init to ready, and the first request's accept → first response.
/// `ready_ns` counts from time zero; `trace` is the one `tl` was built from.
pub fn add_ready_phases(tl: &mut Timeline, trace: &Trace, ready_ns: u64) {
    if let Some(init) = tl.phases.iter_mut().find(|p| p.name == "init") {
        if tl.listens.is_empty() && init.end_ns > ready_ns && ready_ns >= init.start_ns {
            *init = Phase::new("init", init.start_ns, ready_ns);
        }
    }
    if let Some(listen) = tl.listens.first() {
        if ready_ns > listen.t_ns {
            tl.phases.push(Phase::new("listen→ready", listen.t_ns, ready_ns));
        }
    }
    // The tracer's order, not time order: the first accept it reported.
    let since_t0 = |ts: u64| ts.saturating_sub(trace.t0_ns);
    let accept = trace
        .events
        .iter()
        .find(|e| matches!(e.event, Event::Accept { .. }))
        .map(|e| since_t0(e.ts_ns));
    let respond = trace
        .events
        .iter()
        .find(|e| {
            matches!(
                e.event,
                Event::FirstWrite {
                    role: SocketRole::Accepted,
                    ..
                }
            )
        })
        .map(|e| since_t0(e.ts_ns));
    if let (Some(a), Some(r)) = (accept, respond) {
        if r >= a {
            tl.phases.push(Phase::new("first request", a, r));
        }
    }
    tl.phases.sort_by_key(|p| p.start_ns);
}
