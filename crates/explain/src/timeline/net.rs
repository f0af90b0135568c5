//! Sockets: listens, and connects with the time until each was usable.

use super::{ConnectInfo, Ev, ListenInfo};
use coldstart_core::trace::{Event, SocketRole};

pub(super) fn listens(events: &[Ev]) -> Vec<ListenInfo> {
    events
        .iter()
        .filter_map(|e| match e.event {
            Event::Listen { fd, addr } => Some(ListenInfo {
                t_ns: e.t_ns,
                pid: e.pid,
                fd: *fd,
                addr: addr.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// Every connect; `init` is the init phase's `(start, end)`, to flag the
/// connects made during it.
pub(super) fn connects(events: &[Ev], init: (u64, u64)) -> Vec<ConnectInfo> {
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if let Event::Connect {
            fd,
            addr,
            ok,
            errno,
            dur_ns,
        } = e.event
        {
            let latency_ns = if *errno == libc::EINPROGRESS {
                events[i + 1..]
                    .iter()
                    .find(|w| {
                        w.pid == e.pid
                            && matches!(w.event, Event::FirstWrite { fd: f, role: SocketRole::Connected } if f == fd)
                    })
                    .map(|w| w.t_ns - e.t_ns)
            } else {
                Some(*dur_ns)
            };
            out.push(ConnectInfo {
                t_ns: e.t_ns,
                pid: e.pid,
                fd: *fd,
                addr: addr.clone(),
                ok: *ok,
                errno: *errno,
                latency_ns,
                during_init: e.t_ns >= init.0 && e.t_ns <= init.1,
            });
        }
    }
    out
}
