//! A/B: every comparison with the baseline on one axis (the shift as a share of the
//! baseline median, its 95 % CI, the noise band), each verdict in words, and the
//! power line under it.

use super::section;
use super::svg::{self, chart, n, Scale};
use crate::analysis::Analysis;
use crate::report::format::{comparison, detectable, ms, signed_ms, signed_percent};
use crate::report::words;
use maud::{html, Markup};

const ROW: f64 = 30.0;

pub fn render(id: &str, a: &Analysis) -> Markup {
    let baseline = a.variants.first().map(|v| v.name.as_str()).unwrap_or("");
    let rows: Vec<_> = a
        .variants
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.vs_baseline.as_ref().map(|c| (i, v, c)))
        .collect();
    let noise = rows.first().map_or(0.01, |(_, _, c)| c.noise);
    let mut lo = -noise * 1.5;
    let mut hi = noise * 1.5;
    for (_, _, c) in &rows {
        if let Some(r) = &c.relative {
            let (l, h) = r.ci.unwrap_or((r.estimate, r.estimate));
            lo = lo.min(l).min(r.estimate);
            hi = hi.max(h).max(r.estimate);
        }
    }
    let x = Scale::padded(lo * 100.0, hi * 100.0, svg::LEFT, svg::WIDTH - svg::RIGHT);
    let axis_y = 10.0 + rows.len() as f64 * ROW;
    let plot = html! {
        rect.noise x=(n(x.at(-noise * 100.0))) y="4" width=(n(x.at(noise * 100.0) - x.at(-noise * 100.0)))
            height=(n(axis_y - 4.0)) data-tip=(format!("noise threshold ±{}", crate::stats::percent(noise))) {}
        line.zero x1=(n(x.at(0.0))) x2=(n(x.at(0.0))) y1="4" y2=(n(axis_y)) {}
        (svg::x_axis(&x, axis_y, 4.0, " %", &format!("shift vs {baseline}, % of its median (right: slower)")))
        @for (k, (i, v, c)) in rows.iter().enumerate() {
            @let cy = 10.0 + k as f64 * ROW + ROW / 2.0;
            text x=(n(svg::LEFT - 8.0)) y=(n(cy + 4.0)) text-anchor="end" { (svg::clip(&v.name, 22)) }
            @if let Some(r) = &c.relative {
                @if let Some((l, h)) = r.ci {
                    line x1=(n(x.at(l * 100.0))) x2=(n(x.at(h * 100.0))) y1=(n(cy)) y2=(n(cy))
                        stroke=(svg::colour(*i)) stroke-width="3" {}
                }
                circle cx=(n(x.at(r.estimate * 100.0))) cy=(n(cy)) r="5" fill=(svg::colour(*i)) tabindex="0"
                    data-tip=(words::verdict(c, &v.name, baseline)) {}
            }
        }
    };
    let desc = "Each row: a variant's Hodges–Lehmann shift against the baseline as a share of the baseline \
                median (dot) with its 95 % confidence interval (bar); the grey band is the noise threshold \
                inside which no difference counts as faster or slower.";
    let body = html! {
        @if rows.iter().any(|(_, _, c)| c.relative.is_some()) {
            figure {
                (chart(&format!("{id}-ab"), axis_y + 40.0, "Shift of each variant against the baseline", desc, plot))
                figcaption { (desc) }
            }
        }
        @for (_, v, c) in &rows {
            h4 { (v.name) " vs " (baseline) }
            p.verdict { (words::verdict(c, &v.name, baseline)) }
            table {
                caption { "The figures behind the sentence" }
                tbody {
                    tr { th scope="row" { "verdict" } td { (comparison(c)) } }
                    @if let Some(s) = &c.shift {
                        tr { th scope="row" { "shift (Hodges–Lehmann)" } td {
                            (signed_ms(s.estimate))
                            @if let Some((l, h)) = s.ci { " (95% CI " (signed_ms(l)) " … " (signed_ms(h)) ")" }
                        } }
                    }
                    @if let Some(r) = &c.relative {
                        tr { th scope="row" { "relative" } td {
                            (signed_percent(r.estimate))
                            @if let Some((l, h)) = r.ci { " (95% CI " (signed_percent(l)) " … " (signed_percent(h)) ")" }
                        } }
                    }
                    @if let Some(q) = c.ratio { tr { th scope="row" { "ratio of medians" } td { "×" (format!("{q:.3}")) } } }
                    tr { th scope="row" { "noise threshold" } td { "±" (crate::stats::percent(c.noise)) } }
                    @if let Some(d) = detectable(c) { tr { th scope="row" { "power" } td { (d) } } }
                    @if let Some(d) = &c.detectable { tr { th scope="row" { "smallest detectable" } td { (ms(d.shift)) } } }
                }
            }
        }
    };
    section(id, "comparisons", "A/B: each variant against the baseline", body)
}
