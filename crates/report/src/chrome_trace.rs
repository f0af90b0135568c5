//! Chrome Trace Event JSON (opens in Perfetto and chrome://tracing).
//!
//! One track per thread (`pid` = process id, `tid` = thread id), named with
//! `M` metadata events (`process_name`: the program, `thread_name`). Each process
//! and thread gets a `X` (complete) event spanning its life; connects are `X`
//! events with their duration; execs, opens, library mappings, listens, accepts,
//! first writes and clones are `i` (instant) events. The phases and marks of the
//! [`Timeline`] go on their own track under a synthetic process whose pid,
//! 4194304 (`PID_MAX_LIMIT`), no real process can have.
//!
//! `ts`/`dur` are microseconds (floats, ns precision) since time zero; the
//! absolute CLOCK_MONOTONIC time zero is in `otherData.t0_ns`. (The trace's
//! events are absolute; the timeline's and the sections' times count from time
//! zero already.) Within a track events are emitted in non-decreasing `ts` order.

use coldstart_core::sample::section::Section;
use coldstart_core::trace::{Event, Trace};
use coldstart_explain::timeline::Timeline;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Pid of the synthetic "phases" process (Linux pids are < PID_MAX_LIMIT = 2^22).
pub const PHASES_PID: i64 = 4_194_304;

#[derive(Debug, Clone, Serialize)]
struct ChromeEvent {
    name: String,
    ph: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    cat: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: i64,
    tid: i64,
    /// Scope of an instant event ("t": thread).
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Value::is_null")]
    args: Value,
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// Build the trace document.
pub fn to_chrome_trace(trace: &Trace, timeline: &Timeline, sections: &[Section]) -> Value {
    let mut doc = Doc {
        t0: trace.t0_ns,
        tracks: BTreeMap::new(),
        meta: Vec::new(),
    };
    doc.tasks(trace, timeline);
    for e in &trace.events {
        let (pid, tid) = (e.pid as i64, e.tid as i64);
        let Some((name, cat, dur_ns, args)) = shown(&e.event) else {
            continue;
        };
        let ev = match dur_ns {
            Some(d) => doc.complete(name, cat, e.ts_ns, e.ts_ns + d, pid, tid, args),
            None => doc.instant(name, cat, e.ts_ns, pid, tid, args),
        };
        doc.tracks.entry((pid, tid)).or_default().push(ev);
    }
    doc.phases(timeline);
    doc.sections(sections);
    doc.finish(trace.root_pid)
}

/// The document as it is built: events by track (pid, tid), and the tracks'
/// names. Times are absolute CLOCK_MONOTONIC ns until written.
struct Doc {
    t0: u64,
    /// Track key (pid, tid) -> events; BTreeMap for a stable output order.
    tracks: BTreeMap<(i64, i64), Vec<ChromeEvent>>,
    meta: Vec<ChromeEvent>,
}

/// Lifetime of a task: first sight (clone or own event) to exit.
struct Life {
    pid: i32,
    start: u64,
    exit: Option<u64>,
}

impl Doc {
    fn us(&self, ns: u64) -> f64 {
        ns.saturating_sub(self.t0) as f64 / 1000.0
    }

    fn instant(
        &self,
        name: String,
        cat: &'static str,
        ts: u64,
        pid: i64,
        tid: i64,
        args: Value,
    ) -> ChromeEvent {
        ChromeEvent {
            name,
            ph: "i",
            cat,
            ts: Some(self.us(ts)),
            dur: None,
            pid,
            tid,
            s: Some("t"),
            args,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn complete(
        &self,
        name: String,
        cat: &'static str,
        start: u64,
        stop: u64,
        pid: i64,
        tid: i64,
        args: Value,
    ) -> ChromeEvent {
        ChromeEvent {
            name,
            ph: "X",
            cat,
            ts: Some(self.us(start)),
            dur: Some(stop.saturating_sub(start) as f64 / 1000.0),
            pid,
            tid,
            s: None,
            args,
        }
    }

    /// A track's (or its process's) name.
    fn name(&mut self, what: &str, pid: i64, tid: i64, value: String) {
        self.meta.push(ChromeEvent {
            name: what.to_string(),
            ph: "M",
            cat: "",
            ts: None,
            dur: None,
            pid,
            tid,
            s: None,
            args: json!({ "name": value }),
        });
    }

    /// One track per task, named, with a lifetime event. Tracks are named after
    /// what each process ran (its script, else its program) with its argv, and
    /// threads after the names they gave themselves.
    fn tasks(&mut self, trace: &Trace, timeline: &Timeline) {
        let end = (self.t0 + timeline.end_ns).max(trace.end_ns);
        let procs: BTreeMap<i32, &coldstart_explain::timeline::ProcessInfo> =
            timeline.processes.iter().map(|p| (p.pid, p)).collect();
        let thread_name = |tid: i32| trace.task_names.get(&tid).cloned();
        for (&tid, life) in &lives(trace) {
            let (pid, tid64) = (life.pid as i64, tid as i64);
            let proc_info = procs.get(&life.pid);
            let label = proc_info.map_or_else(|| format!("pid {}", life.pid), |p| p.label());
            if tid == life.pid {
                let role = proc_info
                    .map(|p| p.role.as_str())
                    .filter(|r| !r.is_empty())
                    .map(|r| format!(", {r}"))
                    .unwrap_or_default();
                let argv = proc_info.map(|p| p.argv.join(" ")).unwrap_or_default();
                let argv: String = argv.chars().take(160).collect();
                self.name(
                    "process_name",
                    pid,
                    tid64,
                    format!("{label} ({}{role}) {argv}", life.pid)
                        .trim_end()
                        .to_string(),
                );
                self.name("thread_name", pid, tid64, format!("{label} main"));
            } else {
                let name =
                    thread_name(tid).map_or_else(|| format!("thread {tid}"), |n| format!("{n} ({tid})"));
                self.name("thread_name", pid, tid64, name);
            }
            let name = if tid == life.pid {
                label
            } else {
                thread_name(tid).unwrap_or_else(|| format!("thread {tid}"))
            };
            let stop = life.exit.unwrap_or(end).max(life.start);
            let ev = self.complete(name, "lifetime", life.start, stop, pid, tid64, Value::Null);
            self.tracks.entry((pid, tid64)).or_default().push(ev);
        }
    }

    /// The timeline's phases and marks, on the synthetic phases track.
    fn phases(&mut self, timeline: &Timeline) {
        let t0 = self.t0;
        self.name("process_name", PHASES_PID, PHASES_PID, "coldstart phases".into());
        self.name("thread_name", PHASES_PID, PHASES_PID, "phases".into());
        let mut track = Vec::new();
        for p in &timeline.phases {
            track.push(self.complete(
                p.name.clone(),
                "phase",
                t0 + p.start_ns,
                t0 + p.end_ns,
                PHASES_PID,
                PHASES_PID,
                Value::Null,
            ));
        }
        for m in &timeline.marks {
            let args = if m.detail.is_empty() {
                Value::Null
            } else {
                json!({ "detail": m.detail })
            };
            track.push(self.instant(m.name.clone(), "mark", t0 + m.t_ns, PHASES_PID, PHASES_PID, args));
        }
        self.tracks
            .entry((PHASES_PID, PHASES_PID))
            .or_default()
            .extend(track);
    }

    /// Sources inside the runtime (imports, classes, inits, checkpoints, spans):
    /// one track each. Their times count from their own run's spawn, which is
    /// placed at this trace's time zero.
    fn sections(&mut self, sections: &[Section]) {
        let t0 = self.t0;
        for (i, sec) in sections.iter().enumerate() {
            let pid = PHASES_PID + 1 + i as i64;
            self.name("process_name", pid, pid, format!("coldstart {}", sec.title));
            self.name("thread_name", pid, pid, sec.source.clone());
            let mut track = Vec::new();
            for sp in &sec.spans {
                let args: serde_json::Map<String, Value> =
                    std::iter::once(("depth".to_string(), json!(sp.depth)))
                        .chain(
                            sp.args
                                .iter()
                                .map(|(k, v)| (k.clone(), json!(super::value::text(v)))),
                        )
                        .collect();
                track.push(self.complete(
                    sp.name.clone(),
                    "source",
                    t0 + sp.start_ns,
                    t0 + sp.start_ns + sp.dur_ns,
                    pid,
                    pid,
                    Value::Object(args),
                ));
            }
            for m in &sec.marks {
                track.push(self.instant(m.name.clone(), "source", t0 + m.t_ns, pid, pid, Value::Null));
            }
            self.tracks.entry((pid, pid)).or_default().extend(track);
        }
    }

    /// The names first, then each track's events in time order.
    fn finish(self, root_pid: i32) -> Value {
        let mut out = self.meta;
        for (_, mut evs) in self.tracks {
            // Stable sort; at equal ts a longer X event first so nesting is explicit.
            evs.sort_by(|a, b| {
                let ka = (a.ts.unwrap_or(0.0), -(a.dur.unwrap_or(0.0)));
                let kb = (b.ts.unwrap_or(0.0), -(b.dur.unwrap_or(0.0)));
                ka.partial_cmp(&kb).unwrap_or(std::cmp::Ordering::Equal)
            });
            out.extend(evs);
        }
        json!({
            "traceEvents": out,
            "displayTimeUnit": "ms",
            "otherData": {
                "tool": "coldstart",
                "clock": "CLOCK_MONOTONIC",
                "t0_ns": self.t0,
                "root_pid": root_pid,
            },
        })
    }
}

/// Every task's lifetime, the root's from time zero.
fn lives(trace: &Trace) -> BTreeMap<i32, Life> {
    let mut lives: BTreeMap<i32, Life> = BTreeMap::new();
    lives.insert(
        trace.root_pid,
        Life {
            pid: trace.root_pid,
            start: trace.t0_ns,
            exit: None,
        },
    );
    for e in &trace.events {
        let life = lives.entry(e.tid).or_insert(Life {
            pid: e.pid,
            start: e.ts_ns,
            exit: None,
        });
        life.start = life.start.min(e.ts_ns);
        match &e.event {
            Event::Clone { child, thread } => {
                let pid = if *thread { e.pid } else { *child };
                let l = lives.entry(*child).or_insert(Life {
                    pid,
                    start: e.ts_ns,
                    exit: None,
                });
                l.start = l.start.min(e.ts_ns);
            }
            Event::Exit { .. } => life.exit = Some(e.ts_ns),
            _ => {}
        }
    }
    lives
}

/// How a trace event shows: its name, category, duration (a complete event;
/// None: an instant) and args. None for an exit: the end of the lifetime event.
fn shown(event: &Event) -> Option<(String, &'static str, Option<u64>, Value)> {
    let at = |addr: &Option<coldstart_core::trace::SockAddr>| {
        addr.as_ref().map(|a| a.to_string()).unwrap_or_default()
    };
    Some(match event {
        Event::Exec { path, exe, argv0, .. } => (
            format!("exec {}", basename(path)),
            "exec",
            None,
            json!({ "path": path, "exe": exe, "argv0": argv0 }),
        ),
        Event::ExecFailed { path, errno } => (
            format!("exec failed {}", basename(path)),
            "exec",
            None,
            json!({ "path": path, "errno": errno }),
        ),
        Event::Open { path, ok, errno, .. } => (
            format!("open {}", basename(path)),
            "open",
            None,
            json!({ "path": path, "ok": ok, "errno": errno }),
        ),
        Event::MmapExec { path } => (
            format!("map {}", basename(path)),
            "mmap",
            None,
            json!({ "path": path }),
        ),
        Event::Connect {
            fd,
            addr,
            ok,
            errno,
            dur_ns,
        } => (
            format!("connect {}", at(addr)),
            "net",
            Some(*dur_ns),
            json!({ "fd": fd, "ok": ok, "errno": errno }),
        ),
        Event::Bind { fd, addr, ok, .. } => (
            format!("bind {}", at(addr)),
            "net",
            None,
            json!({ "fd": fd, "ok": ok }),
        ),
        Event::Listen { fd, addr } => (format!("listen {}", at(addr)), "net", None, json!({ "fd": fd })),
        Event::Wait { child, dur_ns } => (
            format!("wait {child}"),
            "process",
            Some(*dur_ns),
            json!({ "child": child }),
        ),
        Event::Accept { listen_fd, fd } => (
            "accept".into(),
            "net",
            None,
            json!({ "listen_fd": listen_fd, "fd": fd }),
        ),
        Event::FirstWrite { fd, role } => (
            "first write".into(),
            "net",
            None,
            json!({ "fd": fd, "role": role }),
        ),
        Event::Clone { child, thread } => (
            if *thread { "thread".into() } else { "fork".into() },
            "process",
            None,
            json!({ "child": child }),
        ),
        Event::Exit { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_core::trace::{Outcome, SockAddr, TraceEvent};
    use coldstart_explain::timeline;

    fn sample() -> Trace {
        let e = |ts: u64, pid: i32, tid: i32, event: Event| TraceEvent {
            ts_ns: 1_000_000 + ts,
            pid,
            tid,
            event,
        };
        Trace {
            t0_ns: 1_000_000,
            end_ns: 1_000_000 + 90_000,
            root_pid: 10,
            events: vec![
                e(
                    5_000,
                    10,
                    10,
                    Event::Exec {
                        path: "/usr/bin/python3".into(),
                        exe: "/usr/bin/python3.11".into(),
                        argv0: "python3".into(),
                        argv: vec!["python3".into()],
                    },
                ),
                e(
                    6_000,
                    10,
                    10,
                    Event::MmapExec {
                        path: "/lib/libc.so.6".into(),
                    },
                ),
                e(
                    7_000,
                    10,
                    10,
                    Event::Open {
                        path: "/app/main.py".into(),
                        ok: true,
                        errno: 0,
                        flags: 0,
                    },
                ),
                e(
                    8_000,
                    10,
                    10,
                    Event::Clone {
                        child: 11,
                        thread: true,
                    },
                ),
                // The new thread's own event seen before its creator's clone event.
                e(
                    7_900,
                    10,
                    11,
                    Event::Connect {
                        fd: 3,
                        addr: Some(SockAddr::Unix {
                            path: "/run/x".into(),
                        }),
                        ok: true,
                        errno: 0,
                        dur_ns: 2_000,
                    },
                ),
                e(
                    9_000,
                    10,
                    10,
                    Event::Clone {
                        child: 12,
                        thread: false,
                    },
                ),
                e(
                    9_500,
                    12,
                    12,
                    Event::Exec {
                        path: "/bin/true".into(),
                        exe: "/bin/true".into(),
                        argv0: "true".into(),
                        argv: vec!["true".into()],
                    },
                ),
                e(
                    10_000,
                    12,
                    12,
                    Event::Exit {
                        code: Some(0),
                        signal: None,
                    },
                ),
                e(20_000, 10, 10, Event::Listen { fd: 4, addr: None }),
                e(
                    80_000,
                    10,
                    11,
                    Event::Exit {
                        code: Some(0),
                        signal: None,
                    },
                ),
                e(
                    90_000,
                    10,
                    10,
                    Event::Exit {
                        code: Some(0),
                        signal: None,
                    },
                ),
            ],
            killed: false,
            outcome: Outcome::Reached,
            warnings: vec![],
            root_usage: None,
            task_names: Default::default(),
            stops: Vec::new(),
            cpu: Vec::new(),
        }
    }

    #[test]
    fn has_required_fields_and_monotonic_ts_per_track() {
        let trace = sample();
        let tl = timeline::build(&trace);
        let doc = to_chrome_trace(&trace, &tl, &[]);
        let events = doc["traceEvents"].as_array().unwrap();
        assert!(!events.is_empty());
        let mut last: BTreeMap<(i64, i64), f64> = BTreeMap::new();
        let mut named_threads = std::collections::BTreeSet::new();
        let mut used_tracks = std::collections::BTreeSet::new();
        for ev in events {
            let ph = ev["ph"].as_str().expect("ph");
            assert!(ev["name"].is_string(), "name: {ev}");
            let pid = ev["pid"].as_i64().expect("pid");
            let tid = ev["tid"].as_i64().expect("tid");
            match ph {
                "M" => {
                    let n = ev["name"].as_str().unwrap();
                    assert!(n == "process_name" || n == "thread_name");
                    assert!(ev["args"]["name"].is_string());
                    if n == "thread_name" {
                        named_threads.insert((pid, tid));
                    }
                }
                "X" | "i" => {
                    let ts = ev["ts"].as_f64().expect("ts");
                    assert!(ts >= 0.0);
                    if ph == "X" {
                        assert!(ev["dur"].as_f64().expect("dur") >= 0.0);
                    } else {
                        assert_eq!(ev["s"], "t");
                    }
                    let prev = last.insert((pid, tid), ts).unwrap_or(f64::MIN);
                    assert!(ts >= prev, "ts went back on track {pid}/{tid}: {prev} -> {ts}");
                    used_tracks.insert((pid, tid));
                }
                other => panic!("unexpected ph {other}"),
            }
        }
        // Every track used is named.
        assert!(
            used_tracks.is_subset(&named_threads),
            "{used_tracks:?} vs {named_threads:?}"
        );
        // One track per task plus the phases track.
        assert_eq!(used_tracks.len(), 4);
        assert!(used_tracks.contains(&(10, 11)) && used_tracks.contains(&(12, 12)));
        let phases: Vec<&Value> = events.iter().filter(|e| e["cat"] == "phase").collect();
        assert_eq!(phases.len(), 3);
        assert!(phases.iter().all(|p| p["pid"] == PHASES_PID));
        assert_eq!(phases[0]["name"], "exec-chain");
        assert_eq!(phases[0]["ts"], 0.0);
        assert_eq!(phases[0]["dur"], 5.0);
        assert_eq!(doc["otherData"]["t0_ns"], 1_000_000);
        // The thread's lifetime starts at its first own event (7.9 µs), not at
        // the later clone event.
        let thread_life = events
            .iter()
            .find(|e| e["cat"] == "lifetime" && e["tid"] == 11)
            .unwrap();
        assert_eq!(thread_life["ts"], 7.9);
        // Round-trips as JSON text.
        let text = serde_json::to_string(&doc).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["traceEvents"].as_array().unwrap().len(), events.len());
    }
}
