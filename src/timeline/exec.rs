//! The root's exec chain and where the dynamic loader's work ends.

use super::files::{is_library, is_loader_file};
use super::{Ev, ExecStep};
use crate::trace::Event;

/// Every successful exec of the root process, each running until the next.
pub(super) fn chain(events: &[Ev], root: i32) -> Vec<ExecStep> {
    let execs: Vec<(u64, &str, &str, &str)> = events
        .iter()
        .filter(|e| e.pid == root)
        .filter_map(|e| match e.event {
            Event::Exec { path, exe, argv0, .. } => Some((e.t_ns, path.as_str(), exe.as_str(), argv0.as_str())),
            _ => None,
        })
        .collect();
    execs
        .iter()
        .enumerate()
        .map(|(i, &(start_ns, path, exe, argv0))| ExecStep {
            start_ns,
            end_ns: execs.get(i + 1).map(|n| n.0),
            path: path.to_string(),
            exe: exe.to_string(),
            argv0: argv0.to_string(),
        })
        .collect()
}

/// The root's last library mapping after its final exec and before its first
/// successful open of an ordinary file (where the program's own code takes
/// over); the final exec itself when it maps nothing (a static binary).
pub(super) fn loader_end(events: &[Ev], root: i32, final_exec: u64) -> u64 {
    let mut end = final_exec;
    for e in events.iter().filter(|e| e.pid == root && e.t_ns >= final_exec) {
        match e.event {
            Event::MmapExec { path } if is_library(path) => end = e.t_ns,
            Event::Open { path, ok: true, .. } if !is_loader_file(path) => break,
            _ => {}
        }
    }
    end
}
