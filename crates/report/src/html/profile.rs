//! explain --profile: the startup CPU profile as inferno's interactive flame
//! graph, the hottest functions as a table, and the profiler's overhead.
//!
//! The flame graph is inferno's own SVG with its own script, placed in an
//! `<iframe srcdoc>`: its script looks up "the first svg of the document" and
//! fixed ids (`frames`, `details`) and listens on the whole window, so inline in
//! the page it would take the report's first chart and clash with a second
//! profile. A srcdoc frame is a document of its own that fetches nothing and
//! inherits the page's Content-Security-Policy (inline scripts only).

use super::section;
use crate::explain::overhead;
use crate::format::ms;
use coldstart_core::profile::{render, Profile};
use maud::{html, Markup};

/// Hottest functions listed.
const TOP: usize = 15;

pub fn render(id: &str, p: &Profile, command: &str) -> Markup {
    let pct = |n: u64| format!("{:.1} %", 100.0 * n as f64 / p.samples.max(1) as f64);
    let graph = render::flamegraph(p, command)
        .ok()
        .and_then(|svg| String::from_utf8(svg).ok())
        .map(|svg| embeddable(&svg));
    let body = html! {
        p {
            (p.samples) " samples from " (p.runs) " profiled runs, spawn → ready (" (p.event) " at "
            (p.frequency_hz) " Hz, stacks by " (p.callchains)
            @if p.kernel { ", user + kernel" } @else { ", user only" } ")."
        }
        @if let (Some(s), Some(o)) = (&p.profiled_ms, p.overhead) {
            p.overhead { "profiled p50 " (ms(s.p50)) " (n=" (s.n) ") · profiler overhead " (overhead(o, p.overhead_ci)) }
        }
        @if let Some((doc, height)) = &graph {
            figure {
                iframe.flamegraph srcdoc=(doc) title="Startup CPU flame graph (click a frame to zoom, Ctrl-F to search)"
                    style=(format!("width: 100%; height: {}px; border: 0;", height + 4)) {}
                figcaption {
                    "The phases along the top in time order, callees below; a frame's width is its share of the samples. "
                    "Click to zoom, Ctrl-F to search; --export-flamegraph writes the same SVG."
                }
            }
        }
        table.hot {
            caption { "Hottest functions (share of all samples)" }
            thead { tr { th scope="col" { "function" } th.num scope="col" { "on the stack" } th.num scope="col" { "at the top" } } }
            tbody {
                @for (name, total, own) in p.top(TOP) {
                    tr { td { code { (name) } } td.num { (pct(total)) } td.num { (pct(own)) } }
                }
            }
        }
        table.phases {
            caption { "Samples per phase" }
            thead { tr { th scope="col" { "phase" } th.num scope="col" { "samples" } th.num scope="col" { "share" } } }
            tbody {
                @for ph in &p.phases {
                    tr { td { (ph.name) } td.num { (ph.samples) } td.num { (pct(ph.samples)) } }
                }
            }
        }
        @if p.lost > 0 || !p.runtimes.is_empty() || p.cut.is_some() {
            ul {
                @if p.lost > 0 { li.note { "The kernel dropped " (p.lost) " records (ring buffer full)." } }
                @for r in &p.runtimes { li.note { (r) } }
                @if let Some(cut) = &p.cut { li.note { (cut.note()) } }
            }
        }
    };
    section(id, "profile", "Startup CPU profile", body)
}

/// inferno's SVG as a small HTML document (no XML prolog or DOCTYPE, which an
/// HTML parser does not take inside a body), and the height it draws at.
fn embeddable(svg: &str) -> (String, u32) {
    let start = svg.find("<svg").unwrap_or(0);
    let svg = &svg[start..];
    let tag = &svg[..svg.find('>').unwrap_or(svg.len())];
    let height = tag
        .split_once(" height=\"")
        .and_then(|(_, rest)| rest.split('"').next())
        .and_then(|h| h.parse::<f64>().ok())
        .map_or(600, |h| h.ceil() as u32);
    (
        format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>html,body{{margin:0}} svg{{display:block;width:100%}}</style></head><body>{svg}</body></html>"
        ),
        height,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_svg_loses_its_prolog_and_keeps_its_height() {
        let (doc, h) = embeddable(
            "<?xml version=\"1.0\"?><!DOCTYPE svg PUBLIC \"x\" \"y\"><svg version=\"1.1\" width=\"1200\" height=\"342\" onload=\"init(evt)\"><g/></svg>",
        );
        assert_eq!(h, 342);
        assert!(!doc.contains("<?xml") && !doc.contains("DOCTYPE svg"), "{doc}");
        assert!(doc.contains("<body><svg version=\"1.1\""), "{doc}");
    }
}
