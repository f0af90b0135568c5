//! Lambda: per variant, a lane for the runtime (T0 → its first /next) and one per
//! extension (register → its first /next), from the medians of the emulator's
//! marks, with the Init Duration median across all lanes.

use super::section;
use super::svg::{self, chart, n, Scale};
use crate::format::ms;
use coldstart_core::analysis::{Analysis, VariantAnalysis};
use coldstart_core::experiment::ExperimentResult;
use coldstart_core::sample::MarkSource;
use maud::{html, Markup};

pub fn is_lambda(r: &ExperimentResult) -> bool {
    r.variants.iter().any(|v| v.readiness.starts_with("lambda"))
}

pub fn has_lanes(a: &Analysis) -> bool {
    a.variants
        .iter()
        .any(|v| v.marks.iter().any(|m| m.source == MarkSource::Lambda))
}

/// (lane name, start ms, end ms) of one variant, runtime first.
fn lanes(v: &VariantAnalysis) -> Vec<(String, f64, f64)> {
    let at = |name: &str| {
        v.marks
            .iter()
            .find(|m| m.source == MarkSource::Lambda && m.name == name)
            .map(|m| m.t_ms.p50)
    };
    let mut out = Vec::new();
    if let Some(t) = at("runtime_ready") {
        out.push(("runtime".to_string(), 0.0, t));
    }
    for m in &v.marks {
        let Some(ext) = m
            .name
            .strip_prefix("ext.")
            .and_then(|s| s.strip_suffix(".register"))
        else {
            continue;
        };
        if m.source != MarkSource::Lambda {
            continue;
        }
        let end = at(&format!("ext.{ext}.ready")).unwrap_or(m.t_ms.p50);
        out.push((format!("extension {ext}"), m.t_ms.p50, end));
    }
    out
}

const LANE: f64 = 22.0;

pub fn render(id: &str, a: &Analysis) -> Markup {
    let body = html! {
        @for (i, v) in a.variants.iter().enumerate() {
            @let ls = lanes(v);
            @if !ls.is_empty() {
                @let end = v.ready_ms.as_ref().map_or(0.0, |s| s.p50);
                @let hi = ls.iter().map(|l| l.2).fold(end, f64::max);
                @let x = Scale::padded(0.0, hi, svg::LEFT, svg::WIDTH - svg::RIGHT);
                @let axis_y = 8.0 + ls.len() as f64 * LANE;
                @let desc = format!("{}: median start and end of each process's part of init; the dashed line is the median Init Duration ({}).", v.name, ms(end));
                h4 { (v.name) }
                figure {
                    (chart(&format!("{id}-lambda{i}"), axis_y + 40.0, &format!("Init lanes of {}", v.name), &desc, html! {
                        (svg::x_axis(&x, axis_y, 4.0, " ms", "since T0 (ms)"))
                        @for (k, (name, s, e)) in ls.iter().enumerate() {
                            @let y = 8.0 + k as f64 * LANE;
                            text x=(n(svg::LEFT - 8.0)) y=(n(y + 14.0)) text-anchor="end" { (svg::clip(name, 22)) }
                            rect x=(n(x.at(*s))) y=(n(y + 3.0)) width=(n((x.at(*e) - x.at(*s)).max(1.5))) height=(n(LANE - 6.0))
                                fill=(svg::colour(k)) tabindex="0"
                                data-tip=(format!("{name}: {} → {} (medians)", ms(*s), ms(*e))) {}
                        }
                        line.zero x1=(n(x.at(end))) x2=(n(x.at(end))) y1="4" y2=(n(axis_y)) {}
                    }))
                    figcaption { (desc) }
                }
                table {
                    caption { (v.name) ": lanes (medians over runs)" }
                    thead { tr { th scope="col" { "lane" } th.num scope="col" { "start" } th.num scope="col" { "ready (first /next)" } } }
                    tbody { @for (name, s, e) in &ls { tr { th scope="row" { (name) } td.num { (ms(*s)) } td.num { (ms(*e)) } } } }
                }
            }
        }
    };
    section(id, "lambda", "Lambda init: runtime and extension lanes", body)
}
