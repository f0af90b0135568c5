//! The process tree: who forked whom, what each ran, how each ended.

use super::{Ev, ProcessInfo};
use crate::trace::Event;
use std::collections::HashMap;

/// The root first, then every forked process in the order it started.
pub(super) fn tree(events: &[Ev], root: i32) -> Vec<ProcessInfo> {
    let mut procs: Vec<ProcessInfo> = vec![ProcessInfo {
        pid: root,
        parent: None,
        start_ns: 0,
        exit_ns: None,
        exit_code: None,
        exit_signal: None,
        program: String::new(),
        execs: 0,
        threads: 0,
    }];
    let mut index: HashMap<i32, usize> = HashMap::from([(root, 0)]);
    for e in events {
        match e.event {
            Event::Clone { child, thread: false } => {
                let program = index
                    .get(&e.pid)
                    .map(|&i| procs[i].program.clone())
                    .unwrap_or_default();
                index.insert(*child, procs.len());
                procs.push(ProcessInfo {
                    pid: *child,
                    parent: Some(e.pid),
                    start_ns: e.t_ns,
                    exit_ns: None,
                    exit_code: None,
                    exit_signal: None,
                    program,
                    execs: 0,
                    threads: 0,
                });
            }
            Event::Clone { thread: true, .. } => {
                if let Some(&i) = index.get(&e.pid) {
                    procs[i].threads += 1;
                }
            }
            Event::Exec { path, .. } => {
                if let Some(&i) = index.get(&e.pid) {
                    procs[i].program = path.clone();
                    procs[i].execs += 1;
                }
            }
            Event::Exit { code, signal } if e.tid == e.pid => {
                if let Some(&i) = index.get(&e.pid) {
                    procs[i].exit_ns = Some(e.t_ns);
                    procs[i].exit_code = *code;
                    procs[i].exit_signal = *signal;
                }
            }
            _ => {}
        }
    }
    procs
}
