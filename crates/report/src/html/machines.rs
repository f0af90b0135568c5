//! A fleet experiment per machine: for each comparison blocked by shard, a
//! forest plot (each shard's relative effect with its 95 % interval, and the
//! pooled one as a diamond), the table behind it (machine, runs, shift,
//! interval, verdict per shard, then the pooled row), the stratified test, the
//! heterogeneity and, when machines disagree, a sentence saying so. The same
//! figures as the terminal's per-machine table (crate::fleet).

use super::ab::{extent, RelAxis};
use super::section;
use super::svg::{self, chart, n};
use crate::fleet::{interval, verdict_word};
use crate::format::{p_value, signed_ms};
use coldstart_core::analysis::{Analysis, ByShard, VariantAnalysis};
use coldstart_core::experiment::ExperimentResult;
use coldstart_core::stats::{percent, Comparison};
use maud::{html, Markup};

const ROW: f64 = 26.0;

/// Successful measured runs of `variant` in `shard`.
fn runs_in(r: &ExperimentResult, variant: Option<usize>, shard: u32) -> usize {
    r.samples
        .iter()
        .filter(|s| Some(s.variant) == variant && s.shard == Some(shard) && !s.warmup && s.ok())
        .count()
}

fn machine(by: &ByShard, i: usize) -> String {
    match by.machines.get(i) {
        Some(m) if !m.is_empty() => m.clone(),
        _ => "?".into(),
    }
}

/// What each comparison blocked by shard is made of: (candidate index, its
/// analysis, the blocks, the baseline's name).
fn blocked(a: &Analysis) -> Vec<(usize, &VariantAnalysis, &ByShard, &str)> {
    let first = a.variants.first().map(|v| v.name.as_str()).unwrap_or("");
    a.variants
        .iter()
        .enumerate()
        .filter_map(|(i, v)| Some((i, v, v.by_shard.as_ref()?, v.baseline.as_deref().unwrap_or(first))))
        .collect()
}

pub fn has_machines(a: &Analysis) -> bool {
    a.variants.iter().any(|v| v.by_shard.is_some())
}

/// One comparison's forest plot: a row per shard, then the pooled diamond.
fn forest(id: &str, k: usize, by: &ByShard, colour: &str, name: &str, baseline: &str) -> Markup {
    let pooled = by.comparison.overall();
    let noise = by.comparison.noise;
    let (lo, hi) = extent(by.comparison.blocks.iter().chain([&pooled]), noise);
    let axis = RelAxis::new(lo, hi);
    let x = |f: f64| axis.at(f);
    let rows = by.comparison.blocks.len() + 1;
    let axis_y = 10.0 + rows as f64 * ROW;
    let band = (x(-noise).max(axis.scale.r0), x(noise).min(axis.scale.r1));
    let label = format!(
        "{name} vs {baseline}, % of its median{} (right: slower)",
        if axis.log { ", log scale of the ratio" } else { "" }
    );
    let tip = |who: &str, c: &Comparison| format!("{who}: {} {}", verdict_word(c), interval(c));
    let plot = html! {
        @if band.1 > band.0 {
            rect.noise x=(n(band.0)) y="4" width=(n(band.1 - band.0)) height=(n(axis_y - 4.0))
                data-tip=(format!("noise threshold ±{}", percent(noise))) {}
        }
        @if lo <= 0.0 && hi >= 0.0 {
            line.zero x1=(n(x(0.0))) x2=(n(x(0.0))) y1="4" y2=(n(axis_y)) {}
        }
        (svg::x_axis_ticks(&axis.scale, &axis.ticks(), axis_y, 4.0, &label))
        @for (i, c) in by.comparison.blocks.iter().enumerate() {
            @let cy = 10.0 + i as f64 * ROW + ROW / 2.0;
            @let who = format!("shard {} ({})", by.shards.get(i).copied().unwrap_or_default(), machine(by, i));
            text x=(n(svg::LEFT - 8.0)) y=(n(cy + 4.0)) text-anchor="end" { (svg::clip(&who, 22)) }
            @if let Some(r) = &c.relative {
                @if let Some((l, h)) = r.ci {
                    line x1=(n(x(l))) x2=(n(x(h))) y1=(n(cy)) y2=(n(cy)) stroke=(colour) stroke-width="2" {}
                }
                rect.shard x=(n(x(r.estimate) - 4.0)) y=(n(cy - 4.0)) width="8" height="8" fill=(colour)
                    tabindex="0" data-tip=(tip(&who, c)) {}
            }
        }
        @let cy = 10.0 + by.comparison.blocks.len() as f64 * ROW + ROW / 2.0;
        text x=(n(svg::LEFT - 8.0)) y=(n(cy + 4.0)) text-anchor="end" font-weight="600" { "pooled" }
        @if let Some(r) = &pooled.relative {
            @let (l, h) = r.ci.unwrap_or((r.estimate, r.estimate));
            @let (l, m, h) = (x(l), x(r.estimate), x(h));
            polygon.pooled points=(format!("{},{} {},{} {},{} {},{}", n(l), n(cy), n(m), n(cy - 8.0), n(h), n(cy), n(m), n(cy + 8.0)))
                fill=(colour) stroke="#1b1f24" tabindex="0"
                data-tip=(tip(&format!("pooled over {} machines", by.shards.len()), &pooled)) {}
        }
    };
    let desc = "Each row: one machine's (shard's) Hodges–Lehmann relative effect (square) with its own 95 % \
                confidence interval (bar); the diamond is the effect pooled over machines, its width the 95 % \
                interval that includes the spread between machines; the grey band is the noise threshold.";
    html! {
        figure {
            (chart(&format!("{id}-machines-{k}"), axis_y + 40.0, &format!("{name} vs {baseline} per machine"), desc, plot))
            figcaption { (desc) }
        }
    }
}

/// The table under a forest plot, its test and heterogeneity, and the
/// sentence when machines disagree.
fn table(
    r: &ExperimentResult,
    a: &Analysis,
    cand: usize,
    by: &ByShard,
    name: &str,
    baseline: &str,
) -> Markup {
    let base = a.variants.iter().position(|v| v.name == baseline);
    let pooled = by.comparison.overall();
    let b = &by.comparison;
    let who = |ix: &[usize]| ix.iter().map(|i| machine(by, *i)).collect::<Vec<_>>().join(", ");
    html! {
        table.machines {
            caption { (name) " vs " (baseline) " on each machine (shard), then pooled over machines" }
            thead { tr {
                th.num scope="col" { "shard" } th scope="col" { "machine" }
                th.num scope="col" { "runs (" (baseline) " / " (name) ")" }
                th.num scope="col" { "shift" } th.num scope="col" { "Δ [95% CI]" } th scope="col" { "verdict" }
            } }
            tbody {
                @for (i, c) in b.blocks.iter().enumerate() {
                    @let k = by.shards.get(i).copied().unwrap_or_default();
                    tr data-shard=(k) {
                        td.num { (k) } th scope="row" { (machine(by, i)) }
                        td.num { (runs_in(r, base, k)) " / " (runs_in(r, Some(cand), k)) }
                        td.num { (c.shift.as_ref().map_or_else(|| "–".into(), |s| signed_ms(s.estimate))) }
                        td.num { (interval(c)) }
                        td { (verdict_word(c))
                            @if let Some(why) = c.reason.as_ref().filter(|_| c.relative.is_none()) { " (" (why) ")" } }
                    }
                }
            }
            tfoot {
                tr.pooled {
                    td.num { "all" } th scope="row" { "pooled over " (by.shards.len()) " machines" }
                    td.num { (runs_in_all(r, base, by)) " / " (runs_in_all(r, Some(cand), by)) }
                    td.num { (pooled.shift.as_ref().map_or_else(|| "–".into(), |s| signed_ms(s.estimate))) }
                    td.num { (interval(&pooled)) }
                    td { strong { (verdict_word(&pooled)) } }
                }
            }
        }
        dl.facts {
            @if let Some(v) = &b.van_elteren {
                dt { "stratified test" }
                dd { "van Elteren (ranks within each machine): p = " (p_value(v.p_value)) }
            }
            @if let Some(h) = &b.heterogeneity {
                dt { "heterogeneity" }
                dd {
                    "I² = " (format!("{:.0} %", h.i2 * 100.0)) ", Cochran's Q = " (format!("{:.2}", h.q))
                    " on " (h.df) " df, p = " (p_value(h.p_value))
                    @if h.p_value < 0.05 { " — machines differ by more than their own noise; the pooled interval includes that spread" }
                }
            }
            @if let Some(reason) = &b.reason { dt { "no verdict" } dd { (reason) } }
        }
        @if let Some(h) = b.heterogeneity.as_ref().filter(|h| h.disagree) {
            p.verdict.disagree {
                "Machines disagree: " (name) " is faster than " (baseline) " on " (who(&h.faster))
                " and slower on " (who(&h.slower)) ". The pooled verdict is an average over machines that hides this."
            }
        }
    }
}

fn runs_in_all(r: &ExperimentResult, variant: Option<usize>, by: &ByShard) -> usize {
    by.shards.iter().map(|k| runs_in(r, variant, *k)).sum()
}

/// The section (`data-section="machines"`): one forest plot and table per
/// comparison blocked by shard.
pub fn render(id: &str, r: &ExperimentResult, a: &Analysis) -> Markup {
    let body = html! {
        p.note {
            "The runs came from " (fleet_line(r)) ". Machines differ by more than runs do, so each comparison is \
             made on each machine alone and then pooled (random effects): the pooled interval includes the \
             spread between machines."
        }
        @for (k, (i, v, by, baseline)) in blocked(a).into_iter().enumerate() {
            h4 { (v.name) " vs " (baseline) }
            (forest(id, k, by, svg::colour(i), &v.name, baseline))
            (table(r, a, i, by, &v.name, baseline))
        }
    };
    section(id, "machines", "Per machine (fleet experiment)", body)
}

/// "3 of 4 shards of fleet experiment 't1' on 2 machines".
fn fleet_line(r: &ExperimentResult) -> String {
    let mut shards: Vec<u32> = r.samples.iter().filter_map(|s| s.shard).collect();
    shards.sort_unstable();
    shards.dedup();
    match &r.fleet {
        Some(f) => {
            let mut hosts: Vec<&str> = f.shards.iter().map(|s| s.host.label()).collect();
            hosts.sort_unstable();
            hosts.dedup();
            format!(
                "{} of {} shards of fleet experiment '{}', run on {}",
                shards.len(),
                f.count,
                f.name,
                hosts.join(", ")
            )
        }
        None => format!("{} shards of a fleet experiment", shards.len()),
    }
}
