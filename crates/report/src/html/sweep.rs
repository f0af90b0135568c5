//! Sweeps: the median (with its 95 % CI as a band) against a parameter's value,
//! one line per group of variants that differ only in that parameter.
//!
//! A variant's parameters come from [`params_of`]: the (name, value) list a sweep
//! point carries (bench's `--param`, lambda's `--memory`), else, for lambda
//! experiments stored before sweeps existed, the memory in a `NAME@1024MB` name.

use super::section;
use super::svg::{self, chart, n, Scale};
use crate::format::ms;
use coldstart_core::analysis::Analysis;
use coldstart_core::experiment::{ExperimentResult, Variant};
use coldstart_core::stats::Summary;
use maud::{html, Markup};

/// One parameter of a sweep: a line per group.
#[derive(Debug, Clone)]
pub struct SweepParam {
    pub name: String,
    /// All values numbers: a numeric axis; else evenly spaced in the order met.
    pub numeric: bool,
    pub lines: Vec<SweepLine>,
}

#[derive(Debug, Clone)]
pub struct SweepLine {
    /// The variant with this parameter taken out (its other parameters, or its name).
    pub group: String,
    /// (value as written, its position on the axis, the median's summary).
    pub points: Vec<(String, f64, Summary)>,
}

/// A variant's group name and its parameters (name, value).
pub fn params_of(v: &Variant) -> (String, Vec<(String, String)>) {
    if !v.params.is_empty() {
        return (v.base_name().to_string(), v.params.clone());
    }
    let lambda = v.readiness.starts_with("lambda");
    if lambda {
        let (group, size) = match v.name.rsplit_once('@') {
            Some((g, s)) => (g.to_string(), s),
            None => (String::new(), v.name.as_str()),
        };
        if let Some(mb) = size.strip_suffix("MB").filter(|m| m.parse::<u64>().is_ok()) {
            return (group, vec![("memory (MB)".to_string(), mb.to_string())]);
        }
    }
    (v.name.clone(), Vec::new())
}

/// The swept parameters of an experiment: those with at least two values.
pub fn params(r: &ExperimentResult, a: &Analysis) -> Vec<SweepParam> {
    let all: Vec<_> = r.variants.iter().map(params_of).collect();
    from_params(&all, a)
}

/// `variants[i]` = variant i's (group, params); `a.variants[i]` its statistics.
pub fn from_params(variants: &[(String, Vec<(String, String)>)], a: &Analysis) -> Vec<SweepParam> {
    let mut names: Vec<&String> = variants
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(k, _)| k))
        .collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for name in names {
        let mut values: Vec<&String> = variants
            .iter()
            .filter_map(|(_, p)| p.iter().find(|(k, _)| k == name).map(|(_, v)| v))
            .collect();
        let mut seen = Vec::new();
        values.retain(|v| {
            let new = !seen.contains(v);
            seen.push(*v);
            new
        });
        if values.len() < 2 {
            continue;
        }
        let numeric = values.iter().all(|v| v.parse::<f64>().is_ok());
        let position = |v: &String| {
            if numeric {
                v.parse::<f64>().unwrap_or(0.0)
            } else {
                values.iter().position(|x| *x == v).unwrap_or(0) as f64
            }
        };
        let mut lines: Vec<SweepLine> = Vec::new();
        for (i, (group, p)) in variants.iter().enumerate() {
            let Some((_, value)) = p.iter().find(|(k, _)| k == name) else {
                continue;
            };
            let Some(s) = a.variants.get(i).and_then(|v| v.ready_ms.clone()) else {
                continue;
            };
            let others: Vec<String> = p
                .iter()
                .filter(|(k, _)| k != name)
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let key = if others.is_empty() {
                group.clone()
            } else {
                format!("{group} {}", others.join(" "))
            };
            let point = (value.clone(), position(value), s);
            match lines.iter_mut().find(|l| l.group == key) {
                Some(l) => l.points.push(point),
                None => lines.push(SweepLine {
                    group: key,
                    points: vec![point],
                }),
            }
        }
        for l in &mut lines {
            l.points.sort_by(|a, b| a.1.total_cmp(&b.1));
        }
        out.push(SweepParam {
            name: name.clone(),
            numeric,
            lines,
        });
    }
    out
}

pub fn render(id: &str, sweeps: &[SweepParam], lambda: bool) -> Markup {
    let heading = if lambda {
        "Init Duration per memory size"
    } else {
        "Sweeps"
    };
    let body = html! {
        @for (k, p) in sweeps.iter().enumerate() {
            (one(&format!("{id}-sweep{k}"), p, lambda))
        }
    };
    section(id, "sweep", heading, body)
}

fn one(id: &str, p: &SweepParam, lambda: bool) -> Markup {
    let what = if lambda {
        "Init Duration"
    } else {
        "spawn → ready"
    };
    let pts = p.lines.iter().flat_map(|l| l.points.iter());
    let (mut lo, mut hi, mut x0, mut x1) =
        (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for (_, x, s) in pts {
        let (l, h) = s.p50_ci.unwrap_or((s.p50, s.p50));
        lo = lo.min(l);
        hi = hi.max(h);
        x0 = x0.min(*x);
        x1 = x1.max(*x);
    }
    let (top, bottom) = (10.0, 230.0);
    let y = Scale::padded(lo, hi, bottom, top);
    let x = Scale::padded(x0, x1, svg::LEFT, svg::WIDTH - svg::RIGHT);
    let labels: Vec<(f64, &String)> = {
        let mut v: Vec<(f64, &String)> = p
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|(s, x, _)| (*x, s)))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v.dedup_by(|a, b| a.0 == b.0);
        v
    };
    let plot = html! {
        (svg::y_axis(&y, svg::LEFT, svg::WIDTH - svg::RIGHT, "", &format!("{what} median (ms)")))
        g.axis {
            line x1=(n(x.r0)) x2=(n(x.r1)) y1=(n(bottom)) y2=(n(bottom)) {}
            @for (v, label) in &labels {
                text x=(n(x.at(*v))) y=(n(bottom + 14.0)) text-anchor="middle" { (label) }
            }
            text.label x=(n((x.r0 + x.r1) / 2.0)) y=(n(bottom + 30.0)) text-anchor="middle" { (p.name) }
        }
        @for (i, l) in p.lines.iter().enumerate() {
            @let band: Vec<String> = l.points.iter().map(|(_, px, s)| format!("{},{}", n(x.at(*px)), n(y.at(s.p50_ci.map_or(s.p50, |c| c.1)))))
                .chain(l.points.iter().rev().map(|(_, px, s)| format!("{},{}", n(x.at(*px)), n(y.at(s.p50_ci.map_or(s.p50, |c| c.0))))))
                .collect();
            polygon.ci points=(band.join(" ")) fill=(svg::colour(i)) {}
            polyline fill="none" stroke=(svg::colour(i)) stroke-width="2"
                points=(l.points.iter().map(|(_, px, s)| format!("{},{}", n(x.at(*px)), n(y.at(s.p50)))).collect::<Vec<_>>().join(" ")) {}
            @for (v, px, s) in &l.points {
                circle cx=(n(x.at(*px))) cy=(n(y.at(s.p50))) r="4" fill=(svg::colour(i)) tabindex="0"
                    data-tip=(format!("{} {}={}: median {}{}", l.group, p.name, v, ms(s.p50),
                        s.p50_ci.map(|(a, b)| format!(", 95% CI {} – {}", ms(a), ms(b))).unwrap_or_default())) {}
            }
        }
    };
    let desc = format!(
        "The median {what} (line) and its 95 % confidence interval (band) against {}, one line per group.",
        p.name
    );
    html! {
        figure {
            (chart(id, 270.0, &format!("{what} against {}", p.name), &desc, plot))
            figcaption { (desc) }
        }
        ul.legend aria-label="Colours" {
            @for (i, l) in p.lines.iter().enumerate() {
                li { span style=(format!("background:{}", svg::colour(i))) {} (if l.group.is_empty() { "all" } else { &l.group }) }
            }
        }
        table {
            caption { (what) " median [95% CI] by " (p.name) }
            thead { tr { th scope="col" { "group" } th scope="col" { (p.name) } th.num scope="col" { "median [95% CI]" } th.num scope="col" { "runs" } } }
            tbody {
                @for l in &p.lines {
                    @for (v, _, s) in &l.points {
                        tr { th scope="row" { (l.group) } td { (v) } td.num { (crate::format::median_with_ci(s)) } td.num { (s.n) } }
                    }
                }
            }
        }
    }
}
