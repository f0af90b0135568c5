//! The chart primitives the sections share: a linear scale, "nice" ticks, an axis,
//! a colour per series and compact number text. Charts are plain SVG inside the
//! page (no library at view time, nothing fetched); every chart has a <title>
//! and <desc> for screen readers and a table beside it with the same numbers.

use maud::{html, Markup};

/// Plot width and the margins every chart uses, in SVG user units (= CSS px).
pub const WIDTH: f64 = 760.0;
pub const LEFT: f64 = 150.0;
pub const RIGHT: f64 = 20.0;

/// A linear map from data to pixels.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub d0: f64,
    pub d1: f64,
    pub r0: f64,
    pub r1: f64,
}

impl Scale {
    /// A scale over [lo, hi] padded by 4 % each side (a flat range gets ±1).
    pub fn padded(lo: f64, hi: f64, r0: f64, r1: f64) -> Scale {
        let (lo, hi) = if (hi - lo).abs() < 1e-9 {
            (lo - 1.0, hi + 1.0)
        } else {
            (lo, hi)
        };
        let pad = (hi - lo) * 0.04;
        Scale {
            d0: lo - pad,
            d1: hi + pad,
            r0,
            r1,
        }
    }

    pub fn at(&self, x: f64) -> f64 {
        self.r0 + (x - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
    }

    /// Ticks at 1, 2 or 5 × 10^k inside the domain, about `n` of them.
    pub fn ticks(&self, n: usize) -> Vec<f64> {
        let (lo, hi) = (self.d0.min(self.d1), self.d0.max(self.d1));
        let raw = (hi - lo) / n.max(1) as f64;
        if !(raw.is_finite() && raw > 0.0) {
            return vec![lo];
        }
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .into_iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag);
        let mut t = (lo / step).ceil() * step;
        let mut out = Vec::new();
        while t <= hi + step * 1e-9 && out.len() < 50 {
            out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
            t += step;
        }
        out
    }
}

/// A number for an SVG attribute: one decimal is finer than a pixel.
pub fn n(x: f64) -> String {
    let s = format!("{x:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// Tick label: as few digits as the step needs.
pub fn tick_label(x: f64, unit: &str) -> String {
    let a = x.abs();
    let s = if a == 0.0 || a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{unit}")
}

/// A horizontal axis at `y` with ticks, labels and faint grid lines up to `top`.
pub fn x_axis(s: &Scale, y: f64, top: f64, unit: &str, label: &str) -> Markup {
    html! {
        g.axis {
            line x1=(n(s.r0)) x2=(n(s.r1)) y1=(n(y)) y2=(n(y)) {}
            @for t in s.ticks(6) {
                line.grid x1=(n(s.at(t))) x2=(n(s.at(t))) y1=(n(top)) y2=(n(y)) {}
                text x=(n(s.at(t))) y=(n(y + 14.0)) text-anchor="middle" { (tick_label(t, unit)) }
            }
            text.label x=(n((s.r0 + s.r1) / 2.0)) y=(n(y + 30.0)) text-anchor="middle" { (label) }
        }
    }
}

/// A vertical axis at `x` (a scale whose range runs bottom → top).
pub fn y_axis(s: &Scale, x: f64, right: f64, unit: &str, label: &str) -> Markup {
    html! {
        g.axis {
            line x1=(n(x)) x2=(n(x)) y1=(n(s.r0)) y2=(n(s.r1)) {}
            @for t in s.ticks(5) {
                line.grid x1=(n(x)) x2=(n(right)) y1=(n(s.at(t))) y2=(n(s.at(t))) {}
                text x=(n(x - 6.0)) y=(n(s.at(t) + 4.0)) text-anchor="end" { (tick_label(t, unit)) }
            }
            text.label transform=(format!("translate({},{}) rotate(-90)", n(x - 52.0), n((s.r0 + s.r1) / 2.0)))
                text-anchor="middle" { (label) }
        }
    }
}

/// The colour of series `i` (a colour-blind-safe palette, Okabe–Ito, then repeats).
pub fn colour(i: usize) -> &'static str {
    const P: [&str; 8] = [
        "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
    ];
    P[i % P.len()]
}

/// An SVG chart: role img, labelled by its title and described by `desc`.
pub fn chart(id: &str, height: f64, title: &str, desc: &str, body: Markup) -> Markup {
    html! {
        svg.chart xmlns="http://www.w3.org/2000/svg" viewBox=(format!("0 0 {} {}", n(WIDTH), n(height)))
            role="img" aria-labelledby=(format!("{id}-t {id}-d")) {
            title id=(format!("{id}-t")) { (title) }
            desc id=(format!("{id}-d")) { (desc) }
            (body)
        }
    }
}

/// Text no wider than `max` characters (SVG does not wrap or clip).
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_inside() {
        let s = Scale {
            d0: 3.2,
            d1: 47.9,
            r0: 0.0,
            r1: 100.0,
        };
        let t = s.ticks(5);
        assert_eq!(t, vec![10.0, 20.0, 30.0, 40.0]);
        let s = Scale {
            d0: 0.0,
            d1: 1.0,
            r0: 0.0,
            r1: 1.0,
        };
        assert_eq!(s.ticks(5), vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
        assert_eq!(tick_label(0.6000000000000001, " ms"), "0.6 ms");
    }
}
