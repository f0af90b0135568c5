//! History: a target's median over stored experiments (oldest first), labelled by
//! commit: the trend a CI gate guards.

use super::svg::{self, chart, n, Scale};
use crate::format::ms;
use crate::history::{commit, utc};
use coldstart_core::store::Listed;
use maud::{html, Markup};

/// One target's medians over experiments that measured the same thing (command,
/// readiness, requests): a line joins only like with like.
#[derive(Debug, Clone)]
pub struct Trend {
    pub target: String,
    /// What was measured (see `Listed::measures`).
    pub measures: String,
    /// The legend entry: the target, and what sets its series apart when it has several.
    pub label: String,
    /// (experiment id, when, commit label, median ms), oldest first.
    pub points: Vec<(i64, i64, String, f64)>,
}

/// The trends of `targets` in a store listing (any order): per target, one series
/// per thing measured. A target stored fewer than two times has no history and
/// is left out; a series of one point stays (it shows the target was measured
/// differently there, rather than joining it to the others).
pub fn trends(listed: &[Listed], targets: &[String]) -> Vec<Trend> {
    let mut out: Vec<Trend> = Vec::new();
    for target in targets {
        if out.iter().any(|t| &t.target == target) {
            continue;
        }
        let mut series: Vec<Trend> = Vec::new();
        for e in listed {
            let Some(i) = e.variants.iter().position(|v| v == target) else {
                continue;
            };
            let Some(p50) = e.p50_ms.get(i).copied().flatten() else {
                continue;
            };
            let measures = e.measures.get(i).cloned().unwrap_or_default();
            let point = (e.id, e.created_unix_s, commit(&e.git_commit, e.git_dirty), p50);
            match series.iter_mut().find(|t| t.measures == measures) {
                Some(t) => t.points.push(point),
                None => series.push(Trend {
                    target: target.clone(),
                    label: target.clone(),
                    measures,
                    points: vec![point],
                }),
            }
        }
        if series.iter().map(|t| t.points.len()).sum::<usize>() < 2 {
            continue;
        }
        for t in &mut series {
            t.points.sort_by_key(|p| p.0);
        }
        series.sort_by_key(|t| t.points.first().map_or(0, |p| p.0));
        if series.len() > 1 {
            label_apart(&mut series);
        }
        out.extend(series);
    }
    out
}

/// Name each series of one target by what sets it apart: readiness and requests
/// (`command | readiness | N requests`), and the command when those are the same.
fn label_apart(series: &mut [Trend]) {
    let parts = |m: &str| -> (String, String) {
        let mut it = m.splitn(2, " | ");
        let command = it.next().unwrap_or("").to_string();
        (command, it.next().unwrap_or("").replace(" | ", ", "))
    };
    let probes: Vec<String> = series.iter().map(|t| parts(&t.measures).1).collect();
    for (k, t) in series.iter_mut().enumerate() {
        let (command, probe) = parts(&t.measures);
        let shared = probes.iter().filter(|p| **p == probe).count() > 1;
        t.label = if shared {
            format!("{} ({probe}; {})", t.target, svg::clip(&command, 60))
        } else {
            format!("{} ({probe})", t.target)
        };
        if t.measures.is_empty() {
            t.label = format!("{} (series {})", t.target, k + 1);
        }
    }
}

pub fn section(trends: &[Trend]) -> Markup {
    let all: Vec<f64> = trends.iter().flat_map(|t| t.points.iter().map(|p| p.3)).collect();
    // From 0: a truncated axis turns a 3 % change into a cliff.
    let lo = 0.0;
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut ids: Vec<i64> = trends.iter().flat_map(|t| t.points.iter().map(|p| p.0)).collect();
    ids.sort_unstable();
    ids.dedup();
    let (top, bottom) = (10.0, 230.0);
    let mut y = Scale::padded(lo, hi, bottom, top);
    y.d0 = 0.0;
    let x = Scale::padded(
        0.0,
        (ids.len().max(2) - 1) as f64,
        svg::LEFT,
        svg::WIDTH - svg::RIGHT,
    );
    let at = |id: i64| x.at(ids.iter().position(|i| *i == id).unwrap_or(0) as f64);
    let step = (ids.len() / 12).max(1);
    let commit_of = |id: i64| {
        trends
            .iter()
            .flat_map(|t| t.points.iter())
            .find(|p| p.0 == id && p.2 != "—")
            .map(|p| p.2.chars().take(7).collect::<String>())
    };
    let plot = html! {
        (svg::y_axis(&y, svg::LEFT, svg::WIDTH - svg::RIGHT, "", "median (ms)"))
        g.axis {
            line x1=(n(x.r0)) x2=(n(x.r1)) y1=(n(bottom)) y2=(n(bottom)) {}
            @for id in ids.iter().step_by(step) {
                text x=(n(at(*id))) y=(n(bottom + 14.0)) text-anchor="middle" { "#" (id) }
                @if let Some(c) = commit_of(*id) {
                    text.label x=(n(at(*id))) y=(n(bottom + 26.0)) text-anchor="middle" { (c) }
                }
            }
            text.label x=(n((x.r0 + x.r1) / 2.0)) y=(n(bottom + 42.0)) text-anchor="middle" { "stored experiment (commit), oldest first" }
        }
        @for (i, t) in trends.iter().enumerate() {
            polyline fill="none" stroke=(svg::colour(i)) stroke-width="2"
                points=(t.points.iter().map(|p| format!("{},{}", n(at(p.0)), n(y.at(p.3)))).collect::<Vec<_>>().join(" ")) {}
            @for p in &t.points {
                circle cx=(n(at(p.0))) cy=(n(y.at(p.3))) r="3.5" fill=(svg::colour(i)) tabindex="0"
                    data-tip=(format!("{}: {} in experiment {} ({}, commit {})", t.label, ms(p.3), p.0, utc(p.1), p.2)) {}
            }
        }
    };
    let desc = "Each line is one target's median spawn → ready time in every stored experiment that ran it \
                the same way (same command, readiness and requests); the axis starts at 0.";
    html! {
        section id="history" data-section="history" aria-labelledby="history-h" {
            h2 id="history-h" { "History" }
            figure {
                (chart("history-c", 285.0, "Median over stored experiments", desc, plot))
                figcaption { (desc) }
            }
            ul.legend aria-label="Colours" {
                @for (i, t) in trends.iter().enumerate() { li { span style=(format!("background:{}", svg::colour(i))) {} (t.label) } }
            }
            @for t in trends {
                table {
                    caption { (t.label) ": median per experiment" }
                    thead { tr { th scope="col" { "experiment" } th scope="col" { "when (UTC)" } th scope="col" { "commit" } th.num scope="col" { "median" } } }
                    tbody { @for p in &t.points { tr { th scope="row" { (p.0) } td { (utc(p.1)) } td { (p.2) } td.num { (ms(p.3)) } } } }
                }
            }
        }
    }
}
