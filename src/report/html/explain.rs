//! explain: the waterfall of the traced run shown (phases, one lane per process
//! with the tracer's marks, one per runtime source with its spans and marks;
//! hover or focus for details) and every source's section as tables.

use super::section;
use super::svg::{self, chart, n, Scale};
use crate::explain::Explanation;
use crate::report::format::ms;
use crate::sample::Section;
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
fn spans(s: &Section) -> Vec<&crate::sample::section::Span> {
    let mut v: Vec<_> = s.spans.iter().filter(|x| x.depth <= 1).collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.dur_ns));
    v.truncate(MAX_SPANS);
    v.sort_by_key(|x| (x.depth, x.start_ns));
    v
}

pub fn waterfall(id: &str, x: &Explanation) -> Markup {
    let tl = &x.timeline;
    let sources: Vec<&Section> = x
        .sources
        .iter()
        .filter(|s| !s.spans.is_empty() || !s.marks.is_empty())
        .collect();
    let end = sources
        .iter()
        .flat_map(|s| {
            s.spans
                .iter()
                .map(|p| p.start_ns + p.dur_ns)
                .chain(s.marks.iter().map(|m| m.t_ns))
        })
        .map(t)
        .fold(t(tl.end_ns).max(x.ready_ms), f64::max);
    let xs = Scale::padded(0.0, end, svg::LEFT, svg::WIDTH - svg::RIGHT);
    let procs: Vec<_> = tl.processes.iter().take(MAX_PROCESSES).collect();
    let source_rows: Vec<usize> = sources
        .iter()
        .map(|s| spans(s).iter().map(|p| p.depth + 1).max().unwrap_or(1))
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
            text x=(n(svg::LEFT - 8.0)) y=(n(y + 14.0)) text-anchor="end" { (svg::clip(&format!("{} {}", p.pid, basename(&p.program)), 22)) }
            rect.lane x=(n(svg::LEFT)) y=(n(y + 1.0)) width=(n(svg::WIDTH - svg::LEFT - svg::RIGHT)) height=(n(LANE - 2.0)) {}
            rect x=(n(xs.at(t(p.start_ns)))) y=(n(y + 5.0)) width=(n((xs.at(t(stop)) - xs.at(t(p.start_ns))).max(1.0))) height=(n(LANE - 10.0))
                fill="#8c959f" tabindex="0"
                data-tip=(format!("pid {} {}: {} → {}{}, {} exec(s), {} thread(s)", p.pid, p.program, ms(t(p.start_ns)),
                    ms(t(stop)), if p.exit_ns.is_some() { " (exit)" } else { " (still running)" }, p.execs, p.threads)) {}
        }
        @for m in &tl.marks {
            @let y = row_y(pid_row(m.pid));
            path d=(format!("M{} {}v{}", n(xs.at(t(m.t_ns))), n(y + 1.0), n(LANE - 2.0))) stroke="#cf222e" stroke-width="2" tabindex="0"
                data-tip=(format!("{} at {}{}", m.name, ms(t(m.t_ns)), if m.detail.is_empty() { String::new() } else { format!("\n{}", m.detail) })) {}
        }
        @for (k, s) in sources.iter().enumerate() {
            @let first = 1 + procs.len() + source_rows[..k].iter().sum::<usize>();
            text x=(n(svg::LEFT - 8.0)) y=(n(row_y(first) + 14.0)) text-anchor="end" { (svg::clip(&s.source, 22)) }
            @for p in spans(s) {
                @let y = row_y(first + p.depth);
                rect x=(n(xs.at(t(p.start_ns)))) y=(n(y + 3.0)) width=(n((xs.at(t(p.start_ns + p.dur_ns)) - xs.at(t(p.start_ns))).max(1.0)))
                    height=(n(LANE - 6.0)) fill=(svg::colour(k + 2)) fill-opacity="0.8" tabindex="0"
                    data-tip=(format!("{}: {} at {} ({}){}", s.source, p.name, ms(t(p.start_ns)), ms(t(p.dur_ns)),
                        p.args.iter().map(|(k, v)| format!("\n{k}: {v}")).collect::<String>())) {}
            }
            @for m in &s.marks {
                path d=(format!("M{} {}v{}", n(xs.at(t(m.t_ns))), n(row_y(first) + 1.0), n(LANE - 2.0))) stroke="#1b1f24" stroke-width="2" tabindex="0"
                    data-tip=(format!("{} ({}) at {}", m.name, m.source.label(), ms(t(m.t_ns)))) {}
            }
        }
        line.zero x1=(n(xs.at(x.ready_ms))) x2=(n(xs.at(x.ready_ms))) y1="2" y2=(n(axis_y)) data-tip=(format!("ready at {}", ms(x.ready_ms))) {}
    };
    let desc = format!(
        "The traced run nearest the traced median (ready at {}): phases on top, one lane per process \
         (bar: alive; red ticks: the tracer's marks such as exec, listen), then one lane per source inside \
         the runtime with its longest spans and its marks; the dashed line is ready.",
        ms(x.ready_ms)
    );
    let body = html! {
        p { code { (x.command) } " — ready = " (x.readiness) }
        @if let Some(o) = x.overhead {
            p { "Tracer overhead (traced ÷ untraced): " (crate::report::explain::overhead(o, x.overhead_ci)) }
        }
        @if let Some(o) = x.adapter_overhead {
            p { "Adapters' overhead (adapted ÷ untraced): " (crate::report::explain::overhead(o, x.adapter_overhead_ci)) }
        }
        figure {
            (chart(&format!("{id}-wf"), axis_y + 40.0, "Waterfall of the traced run", &desc, plot))
            figcaption { (desc) }
        }
        @if tl.processes.len() > MAX_PROCESSES { p.note { "The first " (MAX_PROCESSES) " of " (tl.processes.len()) " processes are drawn." } }
        table {
            caption { "Phases" }
            thead { tr { th scope="col" { "phase" } th.num scope="col" { "start" } th.num scope="col" { "duration" } } }
            tbody { @for p in &tl.phases { tr { th scope="row" { (p.name) } td.num { (ms(t(p.start_ns))) } td.num { (ms(t(p.dur_ns))) } } } }
        }
        @if !tl.exec_chain.is_empty() {
            table {
                caption { "Exec chain (shims and wrappers before the final program)" }
                thead { tr { th scope="col" { "program" } th.num scope="col" { "from" } th.num scope="col" { "for" } } }
                tbody { @for s in &tl.exec_chain { tr {
                    th scope="row" { code { (s.path) } }
                    td.num { (ms(t(s.start_ns))) }
                    td.num { (s.end_ns.map(|e| ms(t(e - s.start_ns))).unwrap_or_else(|| "final".into())) }
                } } }
            }
        }
        @if !x.warnings.is_empty() { ul { @for w in &x.warnings { li.note { (w) } } } }
    };
    section(id, "waterfall", "Where the time went: waterfall", body)
}

pub fn sources(id: &str, x: &Explanation) -> Markup {
    let body = html! {
        @for s in &x.sources {
            h4 { (s.title) }
            @if !s.facts.is_empty() {
                dl.facts { @for (k, v) in &s.facts { dt { (k) } dd { (v) } } }
            }
            @if !s.table.rows.is_empty() {
                table {
                    caption { (s.title) @if s.table.omitted > 0 { " (" (s.table.omitted) " more rows not shown)" } }
                    thead { tr { @for c in &s.table.columns { th scope="col" { (c) } } } }
                    tbody { @for r in &s.table.rows { tr { @for c in r { td { (c) } } } } }
                }
            }
            @if !s.notes.is_empty() { ul { @for note in &s.notes { li.note { (note) } } } }
        }
    };
    section(id, "sources", "Inside the runtime: sections", body)
}
