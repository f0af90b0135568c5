//! An experiment's settings and how to reproduce it; each variant's distribution
//! (a strip of every run with the median and its CI, outliers marked) and its
//! runs in time order (drift, warm-up effects).

use super::svg::{self, chart, n, Scale};
use super::{section, Experiment};
use crate::format::median_with_ci;
use crate::format::ms;
use crate::history::{commit, utc};
use coldstart_core::analysis::Analysis;
use coldstart_core::experiment::ExperimentResult;
use maud::{html, Markup};

pub fn settings(id: &str, e: &Experiment) -> Markup {
    let r = e.result;
    let envs: Vec<&[(String, String)]> = r.variants.iter().map(|v| v.target.env.as_slice()).collect();
    let differing = differing_env(&envs);
    let body = html! {
        dl.facts {
            @if let Some(i) = e.id { dt { "stored as" } dd { "experiment " (i) } }
            @if let Some(t) = e.created_unix_s { dt { "when (UTC)" } dd { (utc(t)) } }
            @if let Some(m) = e.meta {
                dt { "commit" } dd { (commit(&m.git_commit, m.git_dirty)) }
                dt { "host" } dd { (m.hostname) ", " (m.cpu_model) ", " (m.cores) " cores, Linux " (m.kernel) }
                dt { "load average" } dd { (m.loadavg) }
                dt { "coldstart" } dd { (m.coldstart_version) }
            }
            @if let Some(s) = e.settings {
                dt { "runs" } dd { (s.runs) " per variant, " (s.warmup) " warmup" }
                dt { "order" } dd { (s.order.as_str()) " (seed " (s.seed) ")" }
                dt { "timeout" } dd { (s.timeout.as_millis()) " ms" }
                dt { "noise threshold" } dd { (coldstart_core::stats::percent(s.noise)) }
            }
            dt { "stopped" } dd { (r.stopped_label()) }
            @if let Some(l) = &r.load {
                dt { "machine during the runs" }
                dd {
                    @if let Some(w) = l.warning() { strong { (w) } } @else {
                        "not busy (1-minute load " (format!("{:.1}", l.load1_before)) " → "
                        (format!("{:.1}", l.load1_after)) " on " (l.cpus) " CPUs)"
                    }
                }
            }
        }
        table {
            caption { "Variants (the first is the baseline)" }
            thead { tr {
                th scope="col" { "variant" } th scope="col" { "readiness" } th scope="col" { "command" }
                @if !differing.is_empty() { th scope="col" { "environment (where variants differ)" } }
            } }
            tbody {
                @for v in &r.variants {
                    tr {
                        th scope="row" { (v.name) } td { (v.readiness) } td { code { (v.target.display_command()) } }
                        @if !differing.is_empty() {
                            td.env { @for (k, i) in differing.iter().enumerate() {
                                @if k > 0 { " " }
                                code { (env_setting(&v.target.env, i)) }
                            } }
                        }
                    }
                }
            }
        }
        @if let Some(m) = e.meta.filter(|m| !m.command_line.is_empty()) {
            p { "Reproduce it with:" }
            pre { code { (m.command_line) } }
        }
    };
    section(id, "settings", "Settings, host and how to reproduce", body)
}

/// The value a target sets for `key` (the last setting wins, as at spawn).
fn env_value<'a>(env: &'a [(String, String)], key: &str) -> Option<&'a str> {
    env.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// `KEY=value` as this target sets it, or `KEY unset` (it inherits coldstart's).
fn env_setting(env: &[(String, String)], key: &str) -> String {
    match env_value(env, key) {
        Some(v) => format!("{key}={}", coldstart_core::target::shell_quote(v)),
        None => format!("{key} unset"),
    }
}

/// The variables whose values differ between the variants, or that only some set,
/// in the order first met: what tells two otherwise identical commands apart.
pub fn differing_env(envs: &[&[(String, String)]]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for (k, _) in envs.iter().flat_map(|e| e.iter()) {
        if !keys.contains(k) {
            keys.push(k.clone());
        }
    }
    keys.retain(|k| {
        let first = envs.first().and_then(|e| env_value(e, k));
        envs.iter().any(|e| env_value(e, k) != first)
    });
    keys
}

/// Every measured run of variant `v` in the order it ran: (ready ms or None if it failed).
pub fn runs_of(r: &ExperimentResult, v: usize) -> Vec<Option<f64>> {
    r.samples
        .iter()
        .filter(|s| s.variant == v && !s.warmup)
        .map(|s| s.ready_ns.filter(|_| s.ok()).map(|ns| ns as f64 / 1e6))
        .collect()
}

/// Tukey's fences (Q1 − 1.5 IQR, Q3 + 1.5 IQR): the rule the summaries' outlier counts use.
pub fn fences(xs: &[f64]) -> (f64, f64) {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let (q1, q3) = (
        coldstart_core::stats::quantile(&s, 0.25),
        coldstart_core::stats::quantile(&s, 0.75),
    );
    (q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1))
}

const ROW: f64 = 34.0;

pub fn distribution(id: &str, r: &ExperimentResult, a: &Analysis) -> Markup {
    let all: Vec<f64> = (0..r.variants.len()).flat_map(|v| r.ready_ms(v)).collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let x = Scale::padded(lo, hi, svg::LEFT, svg::WIDTH - svg::RIGHT);
    let rows = a.variants.len() as f64;
    let height = 12.0 + rows * ROW + 40.0;
    let axis_y = 12.0 + rows * ROW;
    let labels = labels(a);
    let body = html! {
        (svg::x_axis(&x, axis_y, 6.0, " ms", &format!("{} (ms)", crate::terminal::measured(a))))
        @for (i, v) in a.variants.iter().enumerate() {
            @let xs = r.ready_ms(i);
            @let (f_lo, f_hi) = fences(&xs);
            @let cy = 12.0 + i as f64 * ROW + ROW / 2.0;
            g {
                rect.lane x=(n(svg::LEFT)) y=(n(cy - ROW / 2.0 + 2.0)) width=(n(svg::WIDTH - svg::LEFT - svg::RIGHT)) height=(n(ROW - 4.0)) {}
                text x=(n(svg::LEFT - 8.0)) y=(n(cy + 4.0)) text-anchor="end" { (labels[i]) }
                @if let Some(s) = &v.ready_ms {
                    @if let Some((l, h)) = s.p50_ci {
                        rect.ci x=(n(x.at(l))) y=(n(cy - 12.0)) width=(n((x.at(h) - x.at(l)).max(1.0))) height="24"
                            fill=(svg::colour(i)) tabindex="0"
                            data-tip=(format!("{}: median {}, 95% CI {} – {}", v.name, ms(s.p50), ms(l), ms(h))) {}
                    }
                    @for (k, t) in xs.iter().enumerate() {
                        @let jitter = ((k as f64 * 0.618_034).fract() - 0.5) * 16.0;
                        @let out = *t < f_lo || *t > f_hi;
                        circle.dot.out[out] cx=(n(x.at(*t))) cy=(n(cy + jitter)) r=(if out { "2.5" } else { "2" })
                            fill=(svg::colour(i)) {}
                    }
                    line x1=(n(x.at(s.p50))) x2=(n(x.at(s.p50))) y1=(n(cy - 14.0)) y2=(n(cy + 14.0))
                        stroke="#1b1f24" stroke-width="2" {}
                }
            }
        }
    };
    let desc = "One row per variant: a dot per successful run, the shaded box is the 95 % confidence \
                interval of the median, the dark line the median; red dots are outliers (beyond Tukey's fences).";
    let table = html! {
        table {
            caption { "Spawn → ready per variant" }
            thead { tr {
                th scope="col" { "variant" } th.num scope="col" { "runs" } th.num scope="col" { "min" }
                th.num scope="col" { "median [95% CI]" } th.num scope="col" { "p90" } th.num scope="col" { "max" }
                th.num scope="col" { "outliers" }
            } }
            tbody {
                @for v in &a.variants {
                    tr {
                        th scope="row" { (v.name) }
                        td.num { (v.ok_runs) @if v.failed_runs > 0 { " (" (v.failed_runs) " failed)" } }
                        @if let Some(s) = &v.ready_ms {
                            td.num { (ms(s.min)) } td.num { (median_with_ci(s)) } td.num { (ms(s.p90)) }
                            td.num { (ms(s.max)) } td.num { (s.outliers) }
                        } @else {
                            td colspan="5" { "no successful run" }
                        }
                    }
                }
            }
        }
    };
    let body = html! {
        figure {
            (chart(&format!("{id}-dist"), height, &format!("Distribution of {} per variant", crate::terminal::measured(a)), desc, body))
            figcaption { (desc) }
        }
        (table)
    };
    section(id, "distribution", "Distribution per variant", body)
}

pub fn runs(id: &str, r: &ExperimentResult, a: &Analysis) -> Markup {
    let series: Vec<Vec<Option<f64>>> = (0..r.variants.len()).map(|v| runs_of(r, v)).collect();
    let longest = series.iter().map(Vec::len).max().unwrap_or(0).max(2);
    let vals: Vec<f64> = series.iter().flatten().flatten().copied().collect();
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (top, bottom) = (10.0, 230.0);
    let y = Scale::padded(lo, hi, bottom, top);
    let x = Scale::padded(1.0, longest as f64, svg::LEFT, svg::WIDTH - svg::RIGHT);
    let body = html! {
        (svg::y_axis(&y, svg::LEFT, svg::WIDTH - svg::RIGHT, "", "ready (ms)"))
        (svg::x_axis(&x, bottom, top, "", "measured run of the variant, in the order it ran"))
        @for (i, s) in series.iter().enumerate() {
            @let xs: Vec<f64> = s.iter().flatten().copied().collect();
            @let (f_lo, f_hi) = fences(&xs);
            @let points: Vec<String> = s.iter().enumerate()
                .filter_map(|(k, t)| t.map(|t| format!("{},{}", n(x.at(k as f64 + 1.0)), n(y.at(t))))).collect();
            polyline points=(points.join(" ")) fill="none" stroke=(svg::colour(i)) stroke-width="1.3" {}
            @for (k, t) in s.iter().enumerate() {
                @if let Some(t) = t.filter(|t| *t < f_lo || *t > f_hi) {
                    circle.out cx=(n(x.at(k as f64 + 1.0))) cy=(n(y.at(t))) r="3" tabindex="0"
                        data-tip=(format!("{} run {}: {} (outlier)", a.variants[i].name, k + 1, ms(t))) {}
                }
            }
            @for (k, t) in s.iter().enumerate() {
                @if t.is_none() {
                    text x=(n(x.at(k as f64 + 1.0))) y=(n(top + 8.0)) text-anchor="middle" fill="#cf222e"
                        data-tip=(format!("{} run {}: failed", a.variants[i].name, k + 1)) { "✕" }
                }
            }
        }
    };
    let desc = "Each line is one variant's runs in the order they ran; a trend means drift or warm-up. \
                Red dots are outliers, ✕ marks a failed run.";
    let html = html! {
        figure {
            (chart(&format!("{id}-runs"), 270.0, "Runs in time order", desc, body))
            figcaption { (desc) }
        }
        (legend(a))
    };
    section(id, "runs", "Runs in time order", html)
}

/// Each variant's label on a chart's left margin (see [`svg::variant_labels`]).
pub fn labels(a: &Analysis) -> Vec<String> {
    let vs: Vec<_> = a
        .variants
        .iter()
        .map(|v| (v.name.as_str(), v.base.as_str(), v.params.as_slice()))
        .collect();
    svg::variant_labels(&vs, 22)
}

pub fn legend(a: &Analysis) -> Markup {
    html! {
        ul.legend aria-label="Colours" {
            @for (i, v) in a.variants.iter().enumerate() {
                li { span style=(format!("background:{}", svg::colour(i))) {} (v.name) }
            }
        }
    }
}
