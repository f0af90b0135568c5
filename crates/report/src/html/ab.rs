//! A/B: every comparison with the baseline on one axis (the shift as a share of the
//! baseline median, its 95 % CI, the noise band), each verdict in words, and the
//! power line under it.

use super::section;
use super::svg::{self, chart, n, Scale};
use crate::format::{comparison, detectable, ms, signed_ms, signed_percent};
use crate::words;
use coldstart_core::analysis::{Analysis, VariantAnalysis};
use coldstart_core::stats::Comparison;
use maud::{html, Markup};

const ROW: f64 = 30.0;

/// Each comparison with what it was made against: the baseline (in a sweep, the
/// baseline variant at the same values), and with --compare-along the first value.
fn comparisons(a: &Analysis) -> Vec<(usize, &VariantAnalysis, &Comparison, &str)> {
    let first = a.variants.first().map(|v| v.name.as_str()).unwrap_or("");
    let mut rows: Vec<_> = Vec::new();
    for (i, v) in a.variants.iter().enumerate() {
        if let Some(c) = &v.vs_baseline {
            rows.push((i, v, c, v.baseline.as_deref().unwrap_or(first)));
        }
        if let Some(c) = &v.vs_first {
            rows.push((i, v, c, v.first.as_deref().unwrap_or(first)));
        }
    }
    rows
}

/// The top of an experiment: one verdict line per comparison, in the terminal's
/// words (the same sentence, so the page and the terminal never disagree).
pub fn verdicts(a: &Analysis) -> Markup {
    let rows = comparisons(a);
    html! {
        @if !rows.is_empty() {
            div.verdicts aria-label="Verdicts" {
                @for (_, v, c, base) in &rows {
                    p.verdict { (words::sentence(c, &v.name, base, false)) }
                }
            }
        }
    }
}

/// The relative axis (fractions): the data's range (every CI and estimate), so
/// small effects fill the chart. Zero and the noise band join it only when they
/// lie within one data span of it, where they are a reference and not a squeeze
/// (a +20 % effect on a 0 … +20 % axis looks like nothing).
pub(super) fn extent<'a>(cs: impl Iterator<Item = &'a Comparison>, noise: f64) -> (f64, f64) {
    let (mut lo, mut hi, mut intervals) = (f64::INFINITY, f64::NEG_INFINITY, false);
    for r in cs.filter_map(|c| c.relative.as_ref()) {
        intervals |= r.ci.is_some();
        let (l, h) = r.ci.unwrap_or((r.estimate, r.estimate));
        lo = lo.min(l).min(r.estimate);
        hi = hi.max(h).max(r.estimate);
    }
    if !(lo.is_finite() && hi.is_finite()) {
        return (-noise * 1.5, noise * 1.5);
    }
    let span = (hi - lo).max(noise);
    // Estimates without any interval: nothing to zoom on, so zero stays in view.
    if !intervals || (lo - span <= 0.0 && hi + span >= 0.0) {
        (
            lo.min(-noise * 1.5).max(lo - span),
            hi.max(noise * 1.5).min(hi + span),
        )
    } else {
        (lo, hi)
    }
}

/// The relative axis: linear in % while the data spans less than a factor of 4,
/// else on the ratio's log scale (where the CI was computed), so a +60 % effect
/// stays visible beside a +9000 % one and −100 % is never reached.
pub(super) struct RelAxis {
    /// Over % (linear) or ln(ratio) (log).
    pub(super) scale: Scale,
    pub(super) log: bool,
}

impl RelAxis {
    pub(super) fn new(lo: f64, hi: f64) -> RelAxis {
        let log = (1.0 + hi) / (1.0 + lo).max(1e-9) > 4.0;
        let f = |r: f64| if log { (1.0 + r).max(1e-9).ln() } else { r * 100.0 };
        RelAxis {
            scale: Scale::padded(f(lo), f(hi), svg::LEFT, svg::WIDTH - svg::RIGHT),
            log,
        }
    }

    /// The pixel of a relative effect (0.25 = +25 %).
    pub(super) fn at(&self, r: f64) -> f64 {
        if self.log {
            self.scale.at((1.0 + r).max(1e-9).ln())
        } else {
            self.scale.at(r * 100.0)
        }
    }

    /// (position in the scale's domain, label in %).
    pub(super) fn ticks(&self) -> Vec<(f64, String)> {
        if !self.log {
            return self
                .scale
                .ticks(6)
                .into_iter()
                .map(|t| (t, svg::tick_label(t, " %")))
                .collect();
        }
        // Round % changes (what the labels say), placed by their ratio; the
        // roundest first, each kept only where it has room beside those kept.
        const PERCENT: [f64; 21] = [
            0.0, 100.0, 1e3, 1e4, 1e5, -50.0, -90.0, -99.0, 500.0, 5e3, 5e4, 200.0, 2e3, 2e4, 50.0, 20.0,
            10.0, -20.0, -10.0, -80.0, -95.0,
        ];
        let (d0, d1) = (self.scale.d0.min(self.scale.d1), self.scale.d0.max(self.scale.d1));
        let mut kept: Vec<(f64, f64)> = Vec::new();
        for p in PERCENT {
            let at = (1.0 + p / 100.0).ln();
            let px = self.scale.at(at);
            if (d0..=d1).contains(&at) && kept.iter().all(|(k, _)| (self.scale.at(*k) - px).abs() >= 60.0) {
                kept.push((at, p));
            }
        }
        kept.sort_by(|a, b| a.0.total_cmp(&b.0));
        kept.into_iter()
            .map(|(at, p)| (at, svg::tick_label(p, " %")))
            .collect()
    }
}

pub fn render(id: &str, a: &Analysis) -> Markup {
    let first = a.variants.first().map(|v| v.name.as_str()).unwrap_or("");
    let rows = comparisons(a);
    let labels = super::experiment::labels(a);
    let baseline = match rows.first() {
        Some((_, _, _, b)) if rows.iter().all(|r| r.3 == *b) => *b,
        Some(_) => "its baseline",
        None => first,
    };
    let noise = rows.first().map_or(0.01, |(_, _, c, _)| c.noise);
    let (lo, hi) = extent(rows.iter().map(|r| r.2), noise);
    let axis = RelAxis::new(lo, hi);
    let x = |f: f64| axis.at(f);
    // The noise band and the zero line only where the axis reaches them.
    let band = (x(-noise).max(axis.scale.r0), x(noise).min(axis.scale.r1));
    let zero_shown = lo <= 0.0 && hi >= 0.0;
    let label = format!(
        "shift vs {baseline}, % of its median{} (right: slower)",
        if axis.log {
            ", on a log scale of the ratio"
        } else {
            ""
        }
    );
    let off_axis = match (zero_shown, lo > 0.0) {
        (true, _) => None,
        (false, true) => Some("left"),
        (false, false) => Some("right"),
    };
    let axis_y = 10.0 + rows.len() as f64 * ROW;
    let plot = html! {
        @if band.1 > band.0 {
            rect.noise x=(n(band.0)) y="4" width=(n(band.1 - band.0))
                height=(n(axis_y - 4.0)) data-tip=(format!("noise threshold ±{}", coldstart_core::stats::percent(noise))) {}
        }
        @if zero_shown {
            line.zero x1=(n(x(0.0))) x2=(n(x(0.0))) y1="4" y2=(n(axis_y)) {}
        }
        (svg::x_axis_ticks(&axis.scale, &axis.ticks(), axis_y, 4.0, &label))
        @for (k, (i, v, c, base)) in rows.iter().enumerate() {
            @let cy = 10.0 + k as f64 * ROW + ROW / 2.0;
            text x=(n(svg::LEFT - 8.0)) y=(n(cy + 4.0)) text-anchor="end" { (labels[*i]) }
            @if let Some(r) = &c.relative {
                @if let Some((l, h)) = r.ci {
                    line x1=(n(x(l))) x2=(n(x(h))) y1=(n(cy)) y2=(n(cy))
                        stroke=(svg::colour(*i)) stroke-width="3" {}
                }
                circle cx=(n(x(r.estimate))) cy=(n(cy)) r="5" fill=(svg::colour(*i)) tabindex="0"
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
            @if let Some(side) = off_axis {
                p.note { "The axis spans the measured intervals: 0 % (no change) lies off it, to the " (side) "." }
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
                    tr { th scope="row" { "noise threshold" } td { "±" (coldstart_core::stats::percent(c.noise)) } }
                    @if let Some(d) = detectable(c) { tr { th scope="row" { "power" } td { (d) } } }
                    @if let Some(d) = &c.detectable { tr { th scope="row" { "smallest detectable" } td { (ms(d.shift)) } } }
                }
            }
        }
    };
    section(id, "comparisons", "A/B: each variant against the baseline", body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linear for effects within a factor of 4, log beyond; ticks inside the
    /// axis, apart, and round.
    #[test]
    fn the_relative_axis_goes_log_for_effects_of_orders_of_magnitude() {
        let small = RelAxis::new(0.9, 1.1);
        assert!(!small.log);
        let wide = RelAxis::new(-0.6, 300.0);
        assert!(wide.log);
        let t = wide.ticks();
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert!(
            labels.contains(&"0 %") && labels.contains(&"1000 %"),
            "{labels:?}"
        );
        for w in t.windows(2) {
            assert!(wide.scale.at(w[1].0) - wide.scale.at(w[0].0) >= 60.0, "{t:?}");
        }
        // An effect and its place: +100 % sits where the ratio 2 does.
        assert!((wide.at(1.0) - wide.scale.at(2f64.ln())).abs() < 1e-9);
    }
}
