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
    let first = a.variants.first().map(|v| v.name.as_str()).unwrap_or("");
    // Each comparison with what it was made against: the baseline (in a sweep, the
    // baseline variant at the same values), and with --compare-along the first value.
    let mut rows: Vec<_> = Vec::new();
    for (i, v) in a.variants.iter().enumerate() {
        if let Some(c) = &v.vs_baseline {
            rows.push((i, v, c, v.baseline.as_deref().unwrap_or(first)));
        }
        if let Some(c) = &v.vs_first {
            rows.push((i, v, c, v.first.as_deref().unwrap_or(first)));
        }
    }
    let baseline = match rows.first() {
        Some((_, _, _, b)) if rows.iter().all(|r| r.3 == *b) => *b,
        Some(_) => "its baseline",
        None => first,
    };
    let noise = rows.first().map_or(0.01, |(_, _, c, _)| c.noise);
    let mut lo = -noise * 1.5;
    let mut hi = noise * 1.5;
    for (_, _, c, _) in &rows {
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
        @for (k, (i, v, c, base)) in rows.iter().enumerate() {
            @let cy = 10.0 + k as f64 * ROW + ROW / 2.0;
            text x=(n(svg::LEFT - 8.0)) y=(n(cy + 4.0)) text-anchor="end" { (svg::clip(&v.name, 22)) }
            @if let Some(r) = &c.relative {
                @if let Some((l, h)) = r.ci {
                    line x1=(n(x.at(l * 100.0))) x2=(n(x.at(h * 100.0))) y1=(n(cy)) y2=(n(cy))
                        stroke=(svg::colour(*i)) stroke-width="3" {}
                }
                circle cx=(n(x.at(r.estimate * 100.0))) cy=(n(cy)) r="5" fill=(svg::colour(*i)) tabindex="0"
                    data-tip=(words::verdict(c, &v.name, base)) {}
            }
        }
    };
    let desc = "Each row: a variant's Hodges–Lehmann shift against the baseline as a share of the baseline \
                median (dot) with its 95 % confidence interval (bar); the grey band is the noise threshold \
                inside which no difference counts as faster or slower.";
    let body = html! {
        @if rows.iter().any(|(_, _, c, _)| c.relative.is_some()) {
            figure {
                (chart(&format!("{id}-ab"), axis_y + 40.0, "Shift of each variant against the baseline", desc, plot))
                figcaption { (desc) }
            }
        }
        @for (_, v, c, base) in &rows {
            h4 { (v.name) " vs " (base) }
            p.verdict { (words::verdict(c, &v.name, base)) }
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
