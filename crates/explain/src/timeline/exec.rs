//! The exec chain to the service process and where the dynamic loader's work ends.

use super::files::{is_library, is_loader_file};
use super::script::script;
use super::{Ev, ExecStep};
use coldstart_core::trace::Event;

/// The execs on the way to the service process: each process of `path` (root
/// first) contributes its execs until it forks the next one; the service all
/// of its own. Each step runs until the next.
pub(super) fn chain(events: &[Ev], path: &[i32], starts: &dyn Fn(i32) -> u64) -> Vec<ExecStep> {
    let until: Vec<(i32, u64)> = path
        .iter()
        .enumerate()
        .map(|(i, &p)| (p, path.get(i + 1).map_or(u64::MAX, |&n| starts(n))))
        .collect();
    let execs: Vec<(u64, i32, &Event)> = events
        .iter()
        .filter(|e| matches!(e.event, Event::Exec { .. }))
        .filter(|e| until.iter().any(|&(p, u)| p == e.pid && e.t_ns < u))
        .map(|e| (e.t_ns, e.pid, e.event))
        .collect();
    execs
        .iter()
        .enumerate()
        .filter_map(|(i, &(start_ns, pid, ev))| match ev {
            Event::Exec {
                path,
                exe,
                argv0,
                argv,
            } => Some(ExecStep {
                start_ns,
                end_ns: execs.get(i + 1).map(|n| n.0),
                path: path.clone(),
                exe: exe.clone(),
                argv0: argv0.clone(),
                pid,
                argv: argv.clone(),
                script: script(exe, argv),
            }),
            _ => None,
        })
        .collect()
}

/// The process's last library mapping after its final exec and before its first
/// successful open of an ordinary file (where the program's own code takes
/// over); the final exec itself when it maps nothing (a static binary).
pub(super) fn loader_end(events: &[Ev], pid: i32, final_exec: u64) -> u64 {
    let mut end = final_exec;
    for e in events.iter().filter(|e| e.pid == pid && e.t_ns >= final_exec) {
        match e.event {
            Event::MmapExec { path } if is_library(path) => end = e.t_ns,
            Event::Open { path, ok: true, .. } if !is_loader_file(path) => break,
            _ => {}
        }
    }
    end
}
