//! The process tree: who forked whom, what each ran (argv, script), how each
//! ended, and its threads with the names they gave themselves.

use super::{script, Ev, ProcessInfo, ThreadInfo};
use coldstart_core::trace::Event;
use std::collections::{BTreeMap, HashMap};

fn new_process(pid: i32, parent: Option<i32>, start_ns: u64, like: Option<&ProcessInfo>) -> ProcessInfo {
    ProcessInfo {
        pid,
        parent,
        start_ns,
        exit_ns: None,
        exit_code: None,
        exit_signal: None,
        program: like.map(|p| p.program.clone()).unwrap_or_default(),
        execs: 0,
        threads: 0,
        argv: like.map(|p| p.argv.clone()).unwrap_or_default(),
        script: like.and_then(|p| p.script.clone()),
        name: None,
        role: String::new(),
        blocked_ns: 0,
        waited_from_ns: None,
        waited: String::new(),
        overlap_ns: 0,
        thread_list: Vec::new(),
    }
}

/// The root first, then every forked process in the order it started.
/// `names`: the tracer's task names (tid → comm).
pub(super) fn tree(events: &[Ev], root: i32, names: &BTreeMap<i32, String>) -> Vec<ProcessInfo> {
    let mut procs: Vec<ProcessInfo> = vec![new_process(root, None, 0, None)];
    let mut index: HashMap<i32, usize> = HashMap::from([(root, 0)]);
    // Threads: tid → (index of its process, position in its thread_list).
    let mut threads: HashMap<i32, (usize, usize)> = HashMap::new();
    for e in events {
        match e.event {
            Event::Clone { child, thread: false } => {
                let parent = index.get(&e.pid).map(|&i| procs[i].clone());
                index.insert(*child, procs.len());
                procs.push(new_process(*child, Some(e.pid), e.t_ns, parent.as_ref()));
            }
            Event::Clone { child, thread: true } => {
                if let Some(&i) = index.get(&e.pid) {
                    procs[i].threads += 1;
                    threads.insert(*child, (i, procs[i].thread_list.len()));
                    procs[i].thread_list.push(ThreadInfo {
                        tid: *child,
                        name: names.get(child).cloned(),
                        start_ns: e.t_ns,
                        exit_ns: None,
                    });
                }
            }
            Event::Exec { path, exe, argv, .. } => {
                if let Some(&i) = index.get(&e.pid) {
                    let p = &mut procs[i];
                    p.program = path.clone();
                    p.execs += 1;
                    p.argv = argv.clone();
                    p.script = script::script(exe, argv);
                    // Its threads ended at the exec (only the exec'ing one survives).
                    for t in p.thread_list.iter_mut().filter(|t| t.exit_ns.is_none()) {
                        t.exit_ns = Some(e.t_ns);
                    }
                }
            }
            Event::Exit { code, signal } if e.tid == e.pid => {
                if let Some(&i) = index.get(&e.pid) {
                    procs[i].exit_ns = Some(e.t_ns);
                    procs[i].exit_code = *code;
                    procs[i].exit_signal = *signal;
                }
            }
            Event::Exit { .. } => {
                if let Some(&(i, k)) = threads.get(&e.tid) {
                    if let Some(t) = procs[i].thread_list.get_mut(k) {
                        t.exit_ns.get_or_insert(e.t_ns);
                    }
                }
            }
            _ => {}
        }
    }
    for p in &mut procs {
        p.name = names.get(&p.pid).cloned();
    }
    procs
}
