//! explain: the waterfall of the traced run shown (phases, one lane per process
//! with the tracer's marks, one per runtime source with its spans and marks;
//! hover or focus for details) and every source's section as tables.

use super::section;
use super::svg::{self, chart, n, Scale};
use crate::format::ms;
use crate::value;
use coldstart_core::sample::Section;
pub use coldstart_explain::Explanation;
use maud::{html, Markup};

const LANE: f64 = 20.0;
/// Most processes and spans drawn (the tables and the Chrome trace have them all).
const MAX_PROCESSES: usize = 40;
const MAX_SPANS: usize = 60;

fn t(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// The spans drawn for a source: the longest, at most two levels deep.
fn spans(s: &Section) -> Vec<&coldstart_core::sample::section::Span> {
    let mut v: Vec<_> = s.spans.iter().filter(|x| x.depth <= 1).collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.dur_ns));
    v.truncate(MAX_SPANS);
    v.sort_by_key(|x| (x.depth, x.start_ns));
    v
}

/// How far a runtime source's lane is moved right in the run drawn, ns. Its
/// spans come from the adapted run, on that run's clock, and some are laid out
/// from its spawn (Python's importtime gives durations only): no span of the
/// service's runtime can start before the service's final exec, so the lane
/// starts there at the earliest (under a shim, hundreds of ms in). The app's
/// own checkpoints and OTLP spans keep their instants.
pub fn lane_offset_ns(x: &Explanation, s: &Section) -> u64 {
    if matches!(s.source.as_str(), "checkpoints" | "otlp") {
        return 0;
    }
    let exec = x.timeline.exec_chain.last().map_or(0, |e| e.start_ns);
    let first = s
        .spans
        .iter()
        .map(|p| p.start_ns)
        .chain(s.marks.iter().map(|m| m.t_ns))
        .min()
        .unwrap_or(exec);
    exec.saturating_sub(first)
}

/// A process lane's label: what it runs (its script, else its program), with
/// the first argument of a program that runs no script (`bash -c`, `sh -e`).
fn lane_label(p: &coldstart_explain::timeline::ProcessInfo) -> String {
    let name = p.label();
    match (&p.script, p.argv.get(1)) {
        (None, Some(arg)) if !arg.is_empty() => format!("{name} {}", basename(arg)),
        _ => name,
    }
}

/// The figure beside a traced one: `≈ 12.3 ms`, or `—` where explain shows the
/// traced figure only (no estimate; [`coldstart_explain::headline::figure`] decides).
fn est_cell(e: Option<&coldstart_explain::estimate::Estimated>) -> String {
    let traced = e.map_or(0.0, |e| e.traced_ms);
    let f = coldstart_explain::headline::figure(traced, e);
    if f.estimated {
        format!("≈ {}", ms(f.ms))
    } else {
        "—".to_string()
    }
}

/// The section of this page a headline item's report section is shown in.
fn anchor(id: &str, section: &str, x: &Explanation) -> String {
    let kind = if x.sources.iter().any(|s| s.title == section) {
        "sources"
    } else {
        "waterfall"
    };
    format!("#{id}-{kind}")
}

/// The headline at the top of an explain: at most three costs to act on.
pub fn headline(id: &str, x: &Explanation) -> Markup {
    let items = x
        .headline
        .as_ref()
        .map(|h| h.items.as_slice())
        .unwrap_or_default();
    let body = html! {
        ol.headline {
            @for i in items {
                li { (crate::headline::line(i)) " " a href=(anchor(id, &i.section, x)) { "↓" } }
            }
        }
    };
    section(id, "headline", "Where to look first", body)
}

pub fn waterfall(id: &str, x: &Explanation) -> Markup {
    let tl = &x.timeline;
    let (plot, axis_y) = waterfall_plot(x);
    let desc = format!(
        "The traced run nearest the traced median (ready at {}): phases on top, one lane per process \
         (bar: alive; red ticks: the tracer's marks such as exec, listen), then one lane per source inside \
         the runtime with its longest spans and its marks; the dashed line is ready.",
        ms(x.ready_ms)
    );
    let body = html! {
        p { code { (x.command) } " — ready = " (x.readiness) }
        @if let Some(o) = x.overhead {
            p { "Tracer overhead (traced ÷ untraced): " (crate::explain::overhead(o, x.overhead_ci)) }
        }
        @if let Some(o) = x.adapter_overhead {
            p { "Adapters' overhead (adapted ÷ untraced): " (crate::explain::overhead(o, x.adapter_overhead_ci)) }
        }
        @if let Some(est) = x.estimate.as_ref().filter(|e| !e.reliable) {
            div.note.estimates {
                @for line in crate::estimate::not_shown(est) { p { (line) } }
            }
        }
        figure {
            (chart(&format!("{id}-wf"), axis_y + 40.0, "Waterfall of the traced run", &desc, plot))
            figcaption { (desc) }
        }
        @if tl.processes.len() > MAX_PROCESSES { p.note { "The first " (MAX_PROCESSES) " of " (tl.processes.len()) " processes are drawn." } }
        table.phases {
            caption { "Phases (traced, and ≈ untraced where explain estimated them)" }
            thead { tr { th scope="col" { "phase" } th.num scope="col" { "start" } th.num scope="col" { "duration" } th.num scope="col" { "≈ untraced" } } }
            tbody { @for p in &tl.phases { tr {
                th scope="row" { (p.name) } td.num { (ms(t(p.start_ns))) } td.num { (ms(t(p.dur_ns))) }
                td.num { (est_cell(x.estimate.as_ref().and_then(|e| e.phases.iter().find(|q| q.name == p.name)))) }
            } } }
        }
        @if !tl.exec_chain.is_empty() {
            table {
                caption { "Exec chain (shims and wrappers before the final program)" }
                thead { tr { th scope="col" { "program" } th.num scope="col" { "from" } th.num scope="col" { "for" } th.num scope="col" { "≈ untraced" } } }
                tbody { @for (i, s) in tl.exec_chain.iter().enumerate() { tr {
                    th scope="row" { code { (s.label()) } }
                    td.num { (ms(t(s.start_ns))) }
                    td.num { (s.end_ns.map(|e| ms(t(e - s.start_ns))).unwrap_or_else(|| "final".into())) }
                    td.num { (if s.end_ns.is_some() { est_cell(x.estimate.as_ref().and_then(|e| e.exec_chain.get(i))) } else { "—".into() }) }
                } } }
            }
        }
        (blame(x))
        (off_cpu(x))
        @if !x.warnings.is_empty() { ul { @for w in &x.warnings { li.note { (w) } } } }
    };
    section(id, "waterfall", "Where the time went: waterfall", body)
}

/// The waterfall's drawing: phases, one lane per process with the tracer's
/// marks, one lane per source inside the runtime; and where its time axis is.
fn waterfall_plot(x: &Explanation) -> (Markup, f64) {
    let tl = &x.timeline;
    let sources: Vec<(&Section, u64)> = x
        .sources
        .iter()
        .filter(|s| !s.spans.is_empty() || !s.marks.is_empty())
        .map(|s| (s, lane_offset_ns(x, s)))
        .collect();
    let end = sources
        .iter()
        .flat_map(|(s, off)| {
            s.spans
                .iter()
                .map(move |p| off + p.start_ns + p.dur_ns)
                .chain(s.marks.iter().map(move |m| off + m.t_ns))
        })
        .map(t)
        .fold(t(tl.end_ns).max(x.ready_ms), f64::max);
    let xs = Scale::padded(0.0, end, svg::LEFT, svg::WIDTH - svg::RIGHT);
    let procs: Vec<_> = tl.processes.iter().take(MAX_PROCESSES).collect();
    let source_rows: Vec<usize> = sources
        .iter()
        .map(|(s, _)| spans(s).iter().map(|p| p.depth + 1).max().unwrap_or(1))
        .collect();
    let rows = 1 + procs.len() + source_rows.iter().sum::<usize>();
    let axis_y = 6.0 + rows as f64 * LANE;
    let row_y = |r: usize| 6.0 + r as f64 * LANE;
    let pid_row = |pid: Option<i32>| {
        pid.and_then(|p| procs.iter().position(|q| q.pid == p))
            .unwrap_or(0)
            + 1
    };
    let plot = html! {
        (svg::x_axis(&xs, axis_y, 4.0, " ms", "since spawn (ms)"))
        text x=(n(svg::LEFT - 8.0)) y=(n(row_y(0) + 14.0)) text-anchor="end" { "phases" }
        @for (k, p) in tl.phases.iter().enumerate() {
            @let w = xs.at(t(p.end_ns)) - xs.at(t(p.start_ns));
            rect x=(n(xs.at(t(p.start_ns)))) y=(n(row_y(0) + 2.0)) width=(n(w.max(1.0))) height=(n(LANE - 4.0))
                fill=(svg::colour(k)) fill-opacity="0.7" tabindex="0"
                data-tip=(format!("phase {}: {} → {} ({})", p.name, ms(t(p.start_ns)), ms(t(p.end_ns)), ms(t(p.dur_ns)))) {}
            @if w > 8.0 * p.name.len() as f64 {
                text x=(n(xs.at(t(p.start_ns)) + 4.0)) y=(n(row_y(0) + 14.0)) { (p.name) }
            }
        }
        @for (k, p) in procs.iter().enumerate() {
            @let y = row_y(k + 1);
            @let stop = p.exit_ns.unwrap_or(tl.end_ns);
            text.lane-label x=(n(svg::LEFT - 8.0)) y=(n(y + 14.0)) text-anchor="end" data-pid=(p.pid) { (svg::clip(&lane_label(p), 22)) }
            rect.lane x=(n(svg::LEFT)) y=(n(y + 1.0)) width=(n(svg::WIDTH - svg::LEFT - svg::RIGHT)) height=(n(LANE - 2.0)) {}
            rect x=(n(xs.at(t(p.start_ns)))) y=(n(y + 5.0)) width=(n((xs.at(t(stop)) - xs.at(t(p.start_ns))).max(1.0))) height=(n(LANE - 10.0))
                fill="#8c959f" tabindex="0"
                data-tip=(format!("pid {} {}: {} → {}{}, {} exec(s), {} thread(s)", p.pid, p.program, ms(t(p.start_ns)),
                    ms(t(stop)), if p.exit_ns.is_some() { " (exit)" } else { " (still running)" }, p.execs, p.threads)) {}
        }
        @for m in &tl.marks {
            @let y = row_y(pid_row(m.pid));
            path d=(format!("M{} {}v{}", n(xs.at(t(m.t_ns))), n(y + 1.0), n(LANE - 2.0))) stroke="#cf222e" stroke-width="2" tabindex="0"
                data-mark=(m.name) data-pid=(m.pid.unwrap_or(0)) data-x=(n(xs.at(t(m.t_ns))))
                data-tip=(format!("{} at {}{}", m.name, ms(t(m.t_ns)), if m.detail.is_empty() { String::new() } else { format!("\n{}", m.detail) })) {}
        }
        @for (k, (s, off)) in sources.iter().enumerate() {
            @let first = 1 + procs.len() + source_rows[..k].iter().sum::<usize>();
            @let moved = if *off > 0 { format!("\n(drawn from the service's exec in this run, +{})", ms(t(*off))) } else { String::new() };
            text x=(n(svg::LEFT - 8.0)) y=(n(row_y(first) + 14.0)) text-anchor="end" { (svg::clip(&s.source, 22)) }
            @for p in spans(s) {
                @let y = row_y(first + p.depth);
                @let a = off + p.start_ns;
                rect x=(n(xs.at(t(a)))) y=(n(y + 3.0)) width=(n((xs.at(t(a + p.dur_ns)) - xs.at(t(a))).max(1.0)))
                    height=(n(LANE - 6.0)) fill=(svg::colour(k + 2)) fill-opacity="0.8" tabindex="0" data-source=(s.source)
                    data-tip=(format!("{}: {} at {} ({}){}{moved}", s.source, p.name, ms(t(a)), ms(t(p.dur_ns)),
                        p.args.iter().map(|(k, v)| format!("\n{k}: {}", value::text(v))).collect::<String>())) {}
            }
            @for m in &s.marks {
                path d=(format!("M{} {}v{}", n(xs.at(t(off + m.t_ns))), n(row_y(first) + 1.0), n(LANE - 2.0))) stroke="#1b1f24" stroke-width="2" tabindex="0"
                    data-tip=(format!("{} ({}) at {}{moved}", m.name, m.source.label(), ms(t(off + m.t_ns)))) {}
            }
        }
        line.zero x1=(n(xs.at(x.ready_ms))) x2=(n(xs.at(x.ready_ms))) y1="2" y2=(n(axis_y)) data-tip=(format!("ready at {}", ms(x.ready_ms))) {}
    };
    (plot, axis_y)
}

/// The blame list: phases, exec chain steps, helpers on the critical path and
/// connects, largest first (traced; phases tile the run, the rest overlap them).
fn blame(x: &Explanation) -> Markup {
    let tl = &x.timeline;
    let est = x.estimate.as_ref();
    let mut rows: Vec<(u64, String, String)> = Vec::new();
    for p in &tl.phases {
        let e = est.and_then(|e| e.phases.iter().find(|q| q.name == p.name));
        rows.push((p.dur_ns, format!("phase {}", p.name), est_cell(e)));
    }
    for (i, s) in tl.exec_chain.iter().enumerate() {
        if let Some(end) = s.end_ns {
            let e = est.and_then(|e| e.exec_chain.get(i));
            rows.push((
                end.saturating_sub(s.start_ns),
                format!("exec {} (before the next exec)", s.label()),
                est_cell(e),
            ));
        }
    }
    for p in tl.processes.iter().filter(|p| p.blocked_ns > 0) {
        rows.push((
            p.blocked_ns,
            format!("process {} (pid {}) on the critical path", p.label(), p.pid),
            "—".into(),
        ));
    }
    for c in &tl.connects {
        if let Some(l) = c.latency_ns {
            let addr = c.addr.as_ref().map_or_else(|| "?".to_string(), |a| a.to_string());
            rows.push((
                l,
                format!("connect {addr}{}", if c.ok { "" } else { " (failed)" }),
                "—".into(),
            ));
        }
    }
    rows.retain(|r| r.0 > 0);
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    rows.truncate(12);
    html! {
        table.blame {
            caption { "Blame (largest first, traced; phases tile the run, the rest overlap them)" }
            thead { tr { th.num scope="col" { "traced" } th.num scope="col" { "≈ untraced" } th scope="col" { "what" } } }
            tbody { @for (ns, what, e) in &rows { tr { td.num { (ms(t(*ns))) } td.num { (e) } td { (what) } } } }
        }
    }
}

/// The service's main thread on and off CPU per phase (the headline's off-CPU item).
fn off_cpu(x: &Explanation) -> Markup {
    let rows = x
        .headline
        .as_ref()
        .map(|h| h.off_cpu.as_slice())
        .unwrap_or_default();
    html! {
        @if !rows.is_empty() {
            table.off-cpu {
                caption { "Off CPU: the service's main thread (pid " (rows[0].pid) "), from its scheduler counters; off CPU = sleeping or blocked, or held at the tracer's stops (at most its calibrated cost or the tracer thread's own time on and waiting for a CPU meanwhile, whichever is larger)" }
                thead { tr {
                    th scope="col" { "phase" } th.num scope="col" { "wall" } th.num scope="col" { "on CPU" }
                    th.num scope="col" { "runnable" } th.num scope="col" { "off CPU" } th.num scope="col" { "held by the tracer" }
                    th.num scope="col" { "≈ off CPU untraced" }
                } }
                tbody { @for o in rows { tr {
                    th scope="row" { (o.phase) } td.num { (ms(o.wall_ms)) } td.num { (ms(o.on_cpu_ms)) }
                    td.num { (ms(o.runqueue_ms)) } td.num { (ms(o.off_cpu_ms)) }
                    td.num { (ms(o.stops_ms.max(o.tracer_ms))) " (" (o.stops) " stops)" }
                    td.num { (o.estimate_ms.map_or_else(|| "—".to_string(), ms)) }
                } } }
            }
        }
    }
}

pub fn sources(id: &str, x: &Explanation) -> Markup {
    let body = html! {
        @for s in &x.sources {
            h4 { (s.title) }
            @if !s.facts.is_empty() {
                dl.facts { @for (k, v) in &s.facts { dt { (k) } dd { (value::text(v)) } } }
            }
            @if !s.table.rows.is_empty() {
                table {
                    caption { (s.title) @if s.table.omitted > 0 { " (" (s.table.omitted) " more rows not shown)" } }
                    thead { tr { @for c in &s.table.columns { th scope="col" { (c) } } } }
                    tbody { @for r in &s.table.rows { tr { @for c in r { td { (value::text(c)) } } } } }
                }
            }
            @if !s.notes.is_empty() { ul { @for note in &s.notes { li.note { (value::text(note)) } } } }
        }
    };
    section(id, "sources", "Inside the runtime: sections", body)
}
