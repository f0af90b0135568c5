//! `explain --requests N`: the requests sent after ready, as phases of the
//! timeline (accept → the first write of the response on that connection), so
//! the handler's first (cold) and later (warm) runs are timed and estimated
//! like the start itself.

use coldstart_core::sample::Phase;
use coldstart_core::trace::{Event, SocketRole, Trace};

/// `request 1`, `request 2`, …: each connection accepted at or after `ready_ns`
/// (ns since time zero), from its accept to its first response write. At most
/// `n` (the requests sent); a connection with no response is left out.
pub fn phases(trace: &Trace, ready_ns: u64, n: usize) -> Vec<Phase> {
    let since = |ts: u64| ts.saturating_sub(trace.t0_ns);
    let mut out = Vec::new();
    for (i, e) in trace.events.iter().enumerate() {
        if out.len() >= n {
            break;
        }
        let Event::Accept { fd, .. } = e.event else {
            continue;
        };
        if since(e.ts_ns) < ready_ns {
            continue;
        }
        let response = trace.events[i + 1..].iter().find(|w| {
            w.pid == e.pid
                && matches!(w.event, Event::FirstWrite { fd: wfd, role: SocketRole::Accepted } if wfd == fd)
        });
        if let Some(w) = response {
            out.push(Phase::new(
                &format!("request {}", out.len() + 1),
                since(e.ts_ns),
                since(w.ts_ns),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_core::trace::{Outcome, TraceEvent};

    fn ev(ms: u64, event: Event) -> TraceEvent {
        TraceEvent {
            ts_ns: 1_000_000_000 + ms * 1_000_000,
            pid: 7,
            tid: 7,
            event,
        }
    }

    #[test]
    fn requests_after_ready_pair_accepts_with_their_responses() {
        let accept = |fd| Event::Accept { listen_fd: 3, fd };
        let write = |fd| Event::FirstWrite {
            fd,
            role: SocketRole::Accepted,
        };
        let trace = Trace {
            t0_ns: 1_000_000_000,
            end_ns: 1_100_000_000,
            root_pid: 7,
            events: vec![
                // The readiness probe's own request, before ready.
                ev(10, accept(4)),
                ev(12, write(4)),
                ev(20, accept(5)),
                ev(26, write(5)),
                ev(30, accept(4)),
                ev(31, write(4)),
                ev(40, accept(6)),
            ],
            killed: true,
            outcome: Outcome::Reached,
            warnings: Vec::new(),
            root_usage: None,
            task_names: Default::default(),
            stops: Vec::new(),
            cpu: Vec::new(),
        };
        let p = phases(&trace, 13_000_000, 5);
        let got: Vec<(&str, u64, u64)> = p
            .iter()
            .map(|p| (p.name.as_str(), p.start_ns, p.end_ns))
            .collect();
        assert_eq!(
            got,
            vec![
                ("request 1", 20_000_000, 26_000_000),
                ("request 2", 30_000_000, 31_000_000)
            ]
        );
        assert_eq!(phases(&trace, 13_000_000, 1).len(), 1);
    }
}
