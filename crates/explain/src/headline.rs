//! The headline of an explanation: at most three costs a user can act on,
//! largest first, each with its share of the run and the report section that
//! shows it. Typed data (stored with the explanation); `report::headline`
//! formats it.
//!
//! # Candidates
//!
//! * the exec chain (shims and wrappers before the final program), when there
//!   is more than one step;
//! * the phases `loader`, `listen→ready`, `first request`, `request N`;
//! * init, split into what explains it where something does: the service's
//!   time **off CPU** in init (see [`OffCpu`]), the runtime's own costs from
//!   the adapters' sections (Python imports, classes loaded…), connects made
//!   during init; the rest of init is one more candidate ("init, the rest").
//!   Without any of those, init itself.
//!
//! Each figure is the untraced estimate where explain has one, else the traced
//! figure ([`figure`]: the one place that choice is made).

use super::estimate::{Estimate, Estimated};
use super::Explanation;
use crate::timeline::Timeline;
use coldstart_core::sample::Section;
use coldstart_core::trace::{CpuReading, Trace};
use serde::{Deserialize, Serialize};

/// The most lines a headline has.
pub const MAX_ITEMS: usize = 3;
/// Smaller items are left out: a headline names what is worth acting on.
pub const MIN_SHARE_PCT: f64 = 3.0;
/// Time off CPU below this share of its phase is not named on its own.
pub const MIN_OFF_CPU_PCT: f64 = 10.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Shims and wrappers before the final program (the `exec-chain` phase).
    ExecChain,
    /// A phase of the waterfall (`what` is its name).
    Phase,
    /// The service's main thread off CPU in a phase: sleeping or blocked.
    OffCpu,
    /// A runtime's own cost from an adapter's section (imports, classes…).
    Runtime,
    /// A connect made during init (its latency).
    Connect,
    /// What is left of init once the items above inside it are taken out.
    InitRest,
}

/// One line of the headline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub kind: Kind,
    /// What it is, for people: "the exec chain python3 → pyenv → python3.12",
    /// "init", "Python imports".
    pub what: String,
    /// The figure, ms: an untraced estimate when `estimated`, else as measured.
    pub ms: f64,
    pub estimated: bool,
    /// The run length the share is of, ms (the estimated untraced total for
    /// an estimate, the traced or adapted run's for a measured figure).
    pub of_ms: Option<f64>,
    /// `ms` ÷ `of_ms`, %.
    pub share_pct: Option<f64>,
    /// The report section that shows it ("exec chain", "off CPU", a
    /// section's title…).
    pub section: String,
}

/// The service's main thread in one phase, from its scheduler counters
/// (`/proc/PID/schedstat`, read by the tracer at the phase's boundaries): wall
/// time = on a CPU + waiting for one (runnable) + off CPU (sleeping, blocked on
/// I/O, a lock, a child, a timer, or held at one of the tracer's stops).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffCpu {
    pub phase: String,
    pub pid: i32,
    /// Between the two readings (≈ the phase), ms.
    pub wall_ms: f64,
    pub on_cpu_ms: f64,
    /// Runnable but waiting for a CPU (a busy machine), ms.
    pub runqueue_ms: f64,
    /// wall − on CPU − run queue, ms (the tracer's stops included).
    pub off_cpu_ms: f64,
    /// The process's tracer stops in the window and their cost, ms (with the
    /// calibration: its round trip and the tracer's own time; else the latter).
    pub stops: usize,
    pub stops_ms: f64,
    /// The tracer thread's time on a CPU and waiting for one in the window,
    /// ms: how long it can have held the process at its stops (it serves the
    /// whole tree, so this can be more), which on a busy machine is far more
    /// than the calibrated cost.
    #[serde(default)]
    pub tracer_ms: f64,
    /// off CPU − the larger of the two costs above, ms (never below 0): the
    /// untraced estimate (null without one).
    pub estimate_ms: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    /// Largest first, at most [`MAX_ITEMS`].
    pub items: Vec<Item>,
    /// The service's time off CPU per phase (`loader`, `init`): the section
    /// the off-CPU item points to.
    #[serde(default)]
    pub off_cpu: Vec<OffCpu>,
}

/// A figure to show for an interval, and whether it is an untraced estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    pub ms: f64,
    pub estimated: bool,
}

/// The figure to show for an interval: its untraced estimate when explain has
/// a reliable one (an estimate explain trusts carries its range), else the
/// traced figure. The one place this choice is made.
pub fn figure(traced_ms: f64, estimate: Option<&Estimated>) -> Figure {
    match estimate.filter(|e| e.range_ms.is_some()) {
        Some(e) => Figure {
            ms: e.estimate_ms,
            estimated: true,
        },
        None => Figure {
            ms: traced_ms,
            estimated: false,
        },
    }
}

/// The headline of an explanation (its trace, when it still has one, gives
/// the time off CPU).
pub fn build(e: &Explanation) -> Headline {
    let tl = &e.timeline;
    // Estimates explain does not trust are not shown: traced figures instead.
    let est = e.estimate.as_ref().filter(|x| x.reliable);
    // Time off CPU less the tracer's own measured busy time is a subtraction of
    // two measurements, not the per-stop model: it stands without `est`.
    let off_cpu = e
        .trace
        .as_ref()
        .map(|t| off_cpu(t, tl, e.estimate.as_ref()))
        .unwrap_or_default();
    let of = Totals {
        traced: Some(e.ready_ms).filter(|t| *t > 0.0),
        // An estimate's share is of the untraced run: the untraced arm's median
        // (the estimated total equals it when the estimates are reliable).
        untraced: e
            .untraced_ms
            .as_ref()
            .map(|s| s.p50)
            .or(est.map(|x| x.total_ms))
            .filter(|t| *t > 0.0),
    };
    let phase_est = |name: &str| est.and_then(|x| x.phases.iter().find(|p| p.name == name));
    let mut items = Vec::new();
    for p in &tl.phases {
        let f = figure(p.dur_ns as f64 / 1e6, phase_est(&p.name));
        match p.name.as_str() {
            "exec-chain" if tl.exec_chain.len() > 1 => {
                items.push(of.item(Kind::ExecChain, chain(tl), f, "exec chain"))
            }
            "exec-chain" => {}
            "init" => {
                let inside = inside_init(e, &off_cpu, p.dur_ns as f64 / 1e6, &of);
                if inside.is_empty() {
                    items.push(of.item(Kind::Phase, "init".into(), f, "waterfall"));
                } else {
                    let taken: f64 = inside.iter().map(|i| i.ms).sum();
                    let rest = Figure {
                        ms: (f.ms - taken).max(0.0),
                        estimated: f.estimated,
                    };
                    items.push(of.item(Kind::InitRest, "init, the rest".into(), rest, "waterfall"));
                    items.extend(inside);
                }
            }
            name => items.push(of.item(Kind::Phase, name.to_string(), f, "waterfall")),
        }
    }
    items.retain(|i| i.ms > 0.0 && i.share_pct.is_none_or(|s| s >= MIN_SHARE_PCT));
    items.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    items.truncate(MAX_ITEMS);
    Headline { items, off_cpu }
}

/// What a figure's share is of: the traced run, or for an estimate the untraced one.
struct Totals {
    traced: Option<f64>,
    untraced: Option<f64>,
}

impl Totals {
    fn item(&self, kind: Kind, what: String, f: Figure, section: &str) -> Item {
        let of_ms = if f.estimated { self.untraced } else { self.traced };
        Item {
            kind,
            what,
            ms: f.ms,
            estimated: f.estimated,
            of_ms,
            share_pct: of_ms.map(|o| f.ms / o * 100.0),
            section: section.to_string(),
        }
    }
}

/// What init (`init_ms` long, traced) is made of, as far as it is known: time
/// off CPU, the runtime's own sections, connects made during it.
fn inside_init(e: &Explanation, off_cpu: &[OffCpu], init_ms: f64, of: &Totals) -> Vec<Item> {
    let mut inside = Vec::new();
    if let Some(o) = off_cpu.iter().find(|o| o.phase == "init") {
        let f = figure(
            o.off_cpu_ms,
            o.estimate_ms
                .map(|ms| Estimated {
                    name: "off CPU".into(),
                    traced_ms: o.off_cpu_ms,
                    estimate_ms: ms,
                    stops: o.stops,
                    cost_ms: o.off_cpu_ms - ms,
                    // Between the estimate (the tracer's busy time
                    // taken out) and the traced figure.
                    range_ms: Some((ms, o.off_cpu_ms)),
                })
                .as_ref(),
        );
        if f.ms >= 1.0 && f.ms >= init_ms * MIN_OFF_CPU_PCT / 100.0 {
            inside.push(of.item(
                Kind::OffCpu,
                "time off CPU in init (sleep, poll, read, a lock…: waiting, not computing)".into(),
                f,
                "off CPU",
            ));
        }
    }
    for sec in &e.sources {
        if let Some(ms) = runtime_ms(sec) {
            let mut it = of.item(
                Kind::Runtime,
                sec.title.split(" (").next().unwrap_or(&sec.title).to_string(),
                Figure { ms, estimated: false },
                &sec.title,
            );
            // Measured in the adapted run: its share is of that run.
            it.of_ms = e.adapted_ms.as_ref().map(|s| s.p50).filter(|t| *t > 0.0);
            it.share_pct = it.of_ms.map(|o| ms / o * 100.0);
            inside.push(it);
        }
    }
    for c in e.timeline.connects.iter().filter(|c| c.during_init) {
        if let Some(l) = c.latency_ns {
            let addr = c.addr.as_ref().map_or_else(|| "?".to_string(), |a| a.to_string());
            inside.push(of.item(
                Kind::Connect,
                format!("connect to {addr} during init"),
                figure(l as f64 / 1e6, None),
                "network connects",
            ));
        }
    }
    inside
}

/// `the exec chain to server.py (python3 → pyenv → pyenv-exec)`: the steps
/// before the final program by base name, a long chain shortened in the middle.
fn chain(tl: &Timeline) -> String {
    let mut names: Vec<&str> = Vec::new();
    for s in &tl.exec_chain {
        let n = s.label().rsplit('/').next().unwrap_or(s.label());
        if names.last() != Some(&n) {
            names.push(n);
        }
    }
    let Some((last, before)) = names.split_last() else {
        return "the exec chain".into();
    };
    let steps = if before.len() > 4 {
        let n = before.len();
        format!(
            "{} → {} → … → {} ({n} programs)",
            before[0],
            before[1],
            before[n - 1]
        )
    } else {
        before.join(" → ")
    };
    if steps.is_empty() {
        format!("the exec chain to {last}")
    } else {
        format!("the exec chain to {last} ({steps})")
    }
}

/// A runtime adapter's own cost: the union of its section's top-level spans, ms.
/// Sections of the app's own checkpoints and spans are not a runtime's cost.
fn runtime_ms(sec: &Section) -> Option<f64> {
    if matches!(sec.source.as_str(), "checkpoints" | "otlp") {
        return None;
    }
    let mut roots: Vec<(u64, u64)> = sec
        .spans
        .iter()
        .filter(|s| s.depth == 0)
        .map(|s| (s.start_ns, s.start_ns + s.dur_ns))
        .collect();
    roots.sort_unstable();
    let (mut total, mut end) = (0u64, 0u64);
    for (a, b) in roots {
        let a = a.max(end);
        if b > a {
            total += b - a;
            end = b;
        }
    }
    (total > 0).then_some(total as f64 / 1e6)
}

/// The service's main thread off CPU in its `loader` and `init` phases.
pub fn off_cpu(trace: &Trace, tl: &Timeline, est: Option<&Estimate>) -> Vec<OffCpu> {
    let pid = tl.service.pid;
    let readings: Vec<&CpuReading> = trace.cpu.iter().filter(|r| r.pid == pid).collect();
    let nearest = |t: u64| readings.iter().min_by_key(|r| r.ts_ns.abs_diff(t)).copied();
    let mut out = Vec::new();
    for p in tl
        .phases
        .iter()
        .filter(|p| matches!(p.name.as_str(), "loader" | "init"))
    {
        let (a, b) = (trace.t0_ns + p.start_ns, trace.t0_ns + p.end_ns);
        let (Some(ra), Some(rb)) = (nearest(a), nearest(b)) else {
            continue;
        };
        // Readings far from the phase's ends (a process killed before it
        // listened or exited) would describe some other stretch.
        let slack = (p.dur_ns / 10).max(2_000_000);
        if rb.ts_ns <= ra.ts_ns || ra.ts_ns.abs_diff(a) > slack || rb.ts_ns.abs_diff(b) > slack {
            continue;
        }
        let wall = rb.ts_ns - ra.ts_ns;
        let run = rb.run_ns.saturating_sub(ra.run_ns);
        let wait = rb.wait_ns.saturating_sub(ra.wait_ns);
        let off = wall.saturating_sub(run + wait);
        // Held at a stop is off CPU too: the tracer's cost, not the program's.
        let stops: Vec<_> = trace
            .stops
            .iter()
            .filter(|s| s.pid == pid && s.ts_ns >= ra.ts_ns && s.ts_ns < rb.ts_ns)
            .collect();
        let held: f64 = stops.iter().map(|s| f64::from(s.held_ns)).sum();
        let stops_ns = match est {
            Some(x) => x.scale * (x.calibration.round_trip_us * 1e3 * stops.len() as f64 + held),
            None => held,
        };
        let tracer =
            (rb.tracer_run_ns + rb.tracer_wait_ns).saturating_sub(ra.tracer_run_ns + ra.tracer_wait_ns);
        out.push(OffCpu {
            phase: p.name.clone(),
            pid,
            wall_ms: wall as f64 / 1e6,
            on_cpu_ms: run as f64 / 1e6,
            runqueue_ms: wait as f64 / 1e6,
            off_cpu_ms: off as f64 / 1e6,
            stops: stops.len(),
            stops_ms: stops_ns / 1e6,
            tracer_ms: tracer as f64 / 1e6,
            estimate_ms: est.map(|_| ((off as f64 - stops_ns.max(tracer as f64)) / 1e6).max(0.0)),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_core::trace::{CpuReading, Event, Outcome, Stop, TraceEvent};

    const MS: u64 = 1_000_000;

    fn ev(ms: u64, event: Event) -> TraceEvent {
        TraceEvent {
            ts_ns: ms * MS,
            pid: 10,
            tid: 10,
            event,
        }
    }

    fn exec(ms: u64, path: &str) -> TraceEvent {
        ev(
            ms,
            Event::Exec {
                path: path.into(),
                exe: path.into(),
                argv0: path.into(),
                argv: vec![path.into()],
            },
        )
    }

    fn reading(ms: u64, run_ms: u64, wait_ms: u64, tracer_ms: u64) -> CpuReading {
        CpuReading {
            ts_ns: ms * MS,
            pid: 10,
            run_ns: run_ms * MS,
            wait_ns: wait_ms * MS,
            tracer_run_ns: tracer_ms * MS,
            tracer_wait_ns: 0,
        }
    }

    /// A shim (two scripts) execs the program at 40 ms; its loader maps libc at
    /// 41 ms; init runs to its exit at 300 ms: 60 ms on a CPU, 20 ms waiting for
    /// one, 10 ms of the tracer's time, so 260 − 80 = 180 ms off CPU.
    fn trace() -> Trace {
        Trace {
            t0_ns: 0,
            end_ns: 300 * MS,
            root_pid: 10,
            events: vec![
                exec(0, "/shims/tool"),
                exec(20, "/libexec/tool-exec"),
                exec(40, "/usr/bin/tool"),
                ev(
                    41,
                    Event::MmapExec {
                        path: "/lib/libc.so.6".into(),
                    },
                ),
                ev(
                    42,
                    Event::Open {
                        path: "/etc/tool.conf".into(),
                        ok: true,
                        errno: 0,
                        flags: 0,
                    },
                ),
                ev(
                    300,
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
            stops: (0..4)
                .map(|i| Stop {
                    ts_ns: (100 + i) * MS,
                    pid: 10,
                    held_ns: 1000,
                })
                .collect(),
            cpu: vec![
                reading(40, 5, 0, 1),
                reading(41, 6, 0, 1),
                reading(300, 66, 20, 11),
            ],
        }
    }

    #[test]
    fn off_cpu_is_wall_less_on_cpu_and_runnable_and_its_estimate_less_the_tracer() {
        let t = trace();
        let tl = crate::timeline::build(&t);
        let o = off_cpu(&t, &tl, None);
        let init = o.iter().find(|o| o.phase == "init").expect("init's figures");
        assert_eq!(
            (init.wall_ms, init.on_cpu_ms, init.runqueue_ms),
            (259.0, 60.0, 20.0)
        );
        assert_eq!(init.off_cpu_ms, 179.0);
        assert_eq!((init.stops, init.tracer_ms), (4, 10.0));
        // Without an estimate the figure stays as measured.
        assert_eq!(init.estimate_ms, None);
        let f = figure(init.off_cpu_ms, None);
        assert!(!f.estimated && f.ms == 179.0);
    }

    #[test]
    fn readings_far_from_a_phases_ends_give_no_figures() {
        let mut t = trace();
        // The last reading 100 ms before init ends: it describes another stretch.
        t.cpu[2].ts_ns = 200 * MS;
        let tl = crate::timeline::build(&t);
        assert!(off_cpu(&t, &tl, None).iter().all(|o| o.phase != "init"));
    }

    #[test]
    fn the_exec_chain_is_named_by_its_programs_before_the_final_one() {
        let tl = crate::timeline::build(&trace());
        assert_eq!(chain(&tl), "the exec chain to tool (tool → tool-exec)");
    }

    #[test]
    fn a_runtimes_cost_is_the_union_of_its_top_level_spans() {
        use coldstart_core::sample::section::Span;
        let span = |start_ms: u64, dur_ms: u64, depth: usize| Span {
            name: "m".into(),
            start_ns: start_ms * MS,
            dur_ns: dur_ms * MS,
            depth,
            args: vec![],
        };
        let sec = Section {
            source: "python".into(),
            spans: vec![span(0, 10, 0), span(5, 10, 0), span(1, 50, 1), span(30, 5, 0)],
            ..Section::default()
        };
        assert_eq!(runtime_ms(&sec), Some(20.0));
        let app = Section {
            source: "otlp".into(),
            ..sec.clone()
        };
        assert_eq!(runtime_ms(&app), None);
    }
}
