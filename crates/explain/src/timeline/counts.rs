//! How many of each thing the tracer saw.

use super::{ConnectInfo, Counts, Ev, ProcessInfo};
use coldstart_core::trace::Event;

pub(super) fn tally(events: &[Ev], processes: &[ProcessInfo], connects: &[ConnectInfo]) -> Counts {
    let mut c = Counts {
        processes: processes.len(),
        connects: connects.len(),
        ..Counts::default()
    };
    for e in events {
        match e.event {
            Event::Clone { thread: true, .. } => c.threads += 1,
            Event::Exec { .. } => c.execs += 1,
            Event::ExecFailed { .. } => c.exec_failures += 1,
            Event::MmapExec { .. } => c.libraries_mapped += 1,
            Event::Open { path, ok, .. } if !path.is_empty() => {
                if *ok {
                    c.opens += 1;
                } else {
                    c.opens_failed += 1;
                }
            }
            _ => {}
        }
    }
    c
}
