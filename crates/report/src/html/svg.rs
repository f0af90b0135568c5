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
    let ticks: Vec<(f64, String)> = s.ticks(6).into_iter().map(|t| (t, tick_label(t, unit))).collect();
    x_axis_ticks(s, &ticks, y, top, label)
}

/// [`x_axis`] with given ticks: (position in the scale's domain, label).
pub fn x_axis_ticks(s: &Scale, ticks: &[(f64, String)], y: f64, top: f64, label: &str) -> Markup {
    html! {
        g.axis {
            line x1=(n(s.r0)) x2=(n(s.r1)) y1=(n(y)) y2=(n(y)) {}
            @for (t, text) in ticks {
                line.grid x1=(n(s.at(*t))) x2=(n(s.at(*t))) y1=(n(top)) y2=(n(y)) {}
                text x=(n(s.at(*t))) y=(n(y + 14.0)) text-anchor="middle" { (text) }
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

/// A variant as its label sees it: (name, name without the point's values, the values).
pub type LabelOf<'a> = (&'a str, &'a str, &'a [(String, String)]);

/// Chart labels of at most `max` characters that keep what tells the variants
/// apart: a sweep point shows its values (`m=json`, with its variant's name
/// before them only when several variants are swept), and names that share a
/// long prefix (commands) lose the prefix, not their distinguishing end.
pub fn variant_labels(variants: &[LabelOf], max: usize) -> Vec<String> {
    let values = |p: &[(String, String)]| {
        p.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut bases: Vec<&str> = variants
        .iter()
        .filter(|(_, _, p)| !p.is_empty())
        .map(|(_, b, _)| *b)
        .collect();
    bases.dedup();
    let one_base = bases.windows(2).all(|w| w[0] == w[1]);
    let plain: Vec<&str> = variants
        .iter()
        .filter(|(_, _, p)| p.is_empty())
        .map(|(n, _, _)| *n)
        .collect();
    let prefix = shared_prefix(&plain);
    variants
        .iter()
        .map(|(name, base, p)| {
            if !p.is_empty() {
                let vals = values(p);
                let room = max.saturating_sub(vals.chars().count() + 1);
                if one_base || room < 4 {
                    clip(&vals, max)
                } else {
                    format!("{} {vals}", clip(base, room))
                }
            } else if name.chars().count() <= max || prefix == 0 {
                clip(name, max)
            } else {
                // Cut at the earliest word boundary inside the shared prefix that
                // fits, so as much context as fits stays before what differs.
                let chars: Vec<char> = name.chars().collect();
                let cut = (1..=prefix)
                    .filter(|&i| i == prefix || chars[i - 1] == ' ' || chars[i - 1] == '/')
                    .find(|&i| chars.len() - i < max)
                    .unwrap_or(prefix);
                let rest: String = chars[cut..].iter().collect();
                clip(&format!("…{rest}"), max)
            }
        })
        .collect()
}

/// How many leading characters all `names` share, cut back to a word boundary
/// (a space or `/`), so the rest starts with a whole word; 0 for fewer than two.
fn shared_prefix(names: &[&str]) -> usize {
    let Some((first, others)) = names.split_first() else {
        return 0;
    };
    if others.is_empty() {
        return 0;
    }
    let first: Vec<char> = first.chars().collect();
    let mut n = first.len();
    for o in others {
        n = n.min(o.chars().zip(&first).take_while(|(a, b)| a == *b).count());
    }
    first[..n]
        .iter()
        .rposition(|c| *c == ' ' || *c == '/')
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_keep_what_differs() {
        let json = vec![("m".to_string(), "json".to_string())];
        let os = vec![("m".to_string(), "os".to_string())];
        let base = "python3 -c 'import {m}'";
        let (a, b) = (format!("{base}[m=json]"), format!("{base}[m=os]"));
        let l = variant_labels(&[(&a, base, &json), (&b, base, &os)], 22);
        assert_eq!(l, ["m=json", "m=os"]);
        let l = variant_labels(&[(&a, base, &json), (&a, "other", &os)], 22);
        assert!(l[0].ends_with(" m=json") && l[1] == "other m=os", "{l:?}");
        let (c, d) = (
            "/usr/local/bin/python3 -c 'import json'",
            "/usr/local/bin/python3 -c 'import asyncio'",
        );
        let l = variant_labels(&[(c, c, &[]), (d, d, &[])], 22);
        assert_eq!(l, ["…-c 'import json'", "…-c 'import asyncio'"]);
        let l = variant_labels(&[("a", "a", &[]), ("b", "b", &[])], 22);
        assert_eq!(l, ["a", "b"]);
    }

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
