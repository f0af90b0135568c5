//! Samples → statistics: per-variant summaries and the comparison of each variant
//! with the baseline (the first variant). Reports render this; they compute nothing.

use crate::experiment::ExperimentResult;
use crate::stats::{self, Comparison, Summary};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct VariantAnalysis {
    pub name: String,
    pub command: String,
    pub readiness: String,
    /// Successful measured runs (warmups excluded).
    pub ok_runs: usize,
    pub failed_runs: usize,
    pub warmup_runs: usize,
    /// Spawn → ready, milliseconds.
    pub ready_ms: Option<Summary>,
    /// First request after ready (the cold handler), ms.
    pub first_request_ms: Option<Summary>,
    /// Requests after the first (warm handler), ms, pooled over runs.
    pub later_requests_ms: Option<Summary>,
    pub shutdown_ms: Option<Summary>,
    pub cpu_ms: Option<Summary>,
    pub peak_rss_mb: Option<Summary>,
    pub minor_faults: Option<Summary>,
    pub major_faults: Option<Summary>,
    pub processes: Option<Summary>,
    pub threads: Option<Summary>,
    /// Numeric log captures (e.g. a self-reported "ready in N ms"), by group name.
    pub captures: BTreeMap<String, Summary>,
    /// Numbers a source measured per run (lambda's `billed_ms`, `max_memory_mb`, …), by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, Summary>,
    /// Marks (checkpoints, log marks, lambda's instants): time since spawn, per name, in order of median.
    pub marks: Vec<MarkSummary>,
    /// This variant vs the baseline (None for the baseline itself).
    pub vs_baseline: Option<Comparison>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MarkSummary {
    pub name: String,
    pub source: crate::sample::MarkSource,
    /// Runs in which the mark appeared (first occurrence per run).
    pub runs: usize,
    pub t_ms: Summary,
}

#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub variants: Vec<VariantAnalysis>,
}

/// `noise`: the practical-significance threshold for the comparisons (0.01 = 1 %).
pub fn analyze(result: &ExperimentResult, noise: f64) -> Analysis {
    let options = stats::CompareOptions {
        design: result.design,
        noise,
    };
    let baseline = result.ready_ms(0);
    let variants = result
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let measured: Vec<_> = result
                .samples
                .iter()
                .filter(|s| s.variant == i && !s.warmup)
                .collect();
            let ok: Vec<_> = measured.iter().filter(|s| s.ok()).collect();
            let of =
                |f: &dyn Fn(&crate::sample::Sample) -> Option<f64>| summarize(ok.iter().filter_map(|s| f(s)));
            let mut names: Vec<&String> = ok.iter().flat_map(|s| s.captures.keys()).collect();
            names.sort();
            names.dedup();
            let captures = names
                .into_iter()
                .filter_map(|name| {
                    let vals = ok
                        .iter()
                        .filter_map(|s| s.captures.get(name)?.parse::<f64>().ok());
                    Some((name.clone(), summarize(vals)?))
                })
                .collect();
            let mut names: Vec<&String> = ok.iter().flat_map(|s| s.metrics.keys()).collect();
            names.sort();
            names.dedup();
            let metrics = names
                .into_iter()
                .filter_map(|name| {
                    let vals = ok.iter().filter_map(|s| s.metrics.get(name).copied());
                    Some((name.clone(), summarize(vals)?))
                })
                .collect();
            let ready = result.ready_ms(i);
            let marks = mark_summaries(&ok);
            VariantAnalysis {
                name: v.name.clone(),
                command: v.target.display_command(),
                readiness: v.readiness.clone(),
                ok_runs: ok.len(),
                failed_runs: measured.len() - ok.len(),
                warmup_runs: result
                    .samples
                    .iter()
                    .filter(|s| s.variant == i && s.warmup)
                    .count(),
                ready_ms: summarize(ready.iter().copied()),
                first_request_ms: of(&|s| s.requests_ns.first().map(|ns| *ns as f64 / 1e6)),
                later_requests_ms: summarize(
                    ok.iter()
                        .flat_map(|s| s.requests_ns.iter().skip(1))
                        .map(|ns| *ns as f64 / 1e6),
                ),
                shutdown_ms: of(&|s| s.shutdown_ns.map(|ns| ns as f64 / 1e6)),
                cpu_ms: of(&|s| Some(s.usage.cpu_total_us as f64 / 1e3)),
                peak_rss_mb: of(&|s| s.usage.peak_rss_kb.map(|kb| kb as f64 / 1024.0)),
                minor_faults: of(&|s| Some(s.usage.minor_faults as f64)),
                major_faults: of(&|s| Some(s.usage.major_faults as f64)),
                processes: of(&|s| Some(s.usage.processes as f64)),
                threads: of(&|s| Some(s.usage.threads as f64)),
                captures,
                metrics,
                marks,
                vs_baseline: (i > 0).then(|| stats::compare(&baseline, &ready, options)),
            }
        })
        .collect();
    Analysis { variants }
}

/// First occurrence of each mark name per run, summarised across runs.
fn mark_summaries(ok: &[&&crate::sample::Sample]) -> Vec<MarkSummary> {
    let mut by_name: BTreeMap<(String, crate::sample::MarkSource), Vec<f64>> = BTreeMap::new();
    for s in ok {
        let mut seen = std::collections::HashSet::new();
        for m in &s.marks {
            if seen.insert(&m.name) {
                by_name
                    .entry((m.name.clone(), m.source))
                    .or_default()
                    .push(m.t_ns as f64 / 1e6);
            }
        }
    }
    let mut out: Vec<MarkSummary> = by_name
        .into_iter()
        .filter_map(|((name, source), xs)| {
            let runs = xs.len();
            Some(MarkSummary {
                name,
                source,
                runs,
                t_ms: summarize(xs.into_iter())?,
            })
        })
        .collect();
    out.sort_by(|a, b| a.t_ms.p50.total_cmp(&b.t_ms.p50));
    out
}

fn summarize(values: impl Iterator<Item = f64>) -> Option<Summary> {
    let mut xs: Vec<f64> = values.collect();
    xs.sort_by(f64::total_cmp);
    stats::summarize(&xs)
}
