//! Samples → statistics: per-variant summaries and the comparison of each variant
//! with the baseline (the first variant). Reports render this; they compute nothing.

use crate::experiment::sweep::{baseline_of, by_cost, first_along};
use crate::experiment::{ExperimentResult, Sweep};
use coldstart_stats::{Comparison, Summary};
use serde::Serialize;
use std::collections::BTreeMap;

mod phases;
pub use phases::PhaseSummary;

#[derive(Debug, Clone, Serialize)]
pub struct VariantAnalysis {
    pub name: String,
    /// The name without a sweep point's values, and the values (the JSON export
    /// has them beside the variant, as `params`).
    #[serde(skip)]
    pub base: String,
    #[serde(skip)]
    pub params: Vec<(String, String)>,
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
    /// A container variant's phases (spawn → ready cut at the engine's marks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseSummary>,
    /// The phases' medians as a share of the median spawn → ready (1.0 = all of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases_cover: Option<f64>,
    /// A container variant's reads of its image until ready (`--read-set`): the
    /// last successful measured run's (each run's is in its sample, and the
    /// bytes and files per run are `metrics`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_set: Option<crate::sample::ReadSet>,
    /// This variant vs the baseline (None for the baseline itself): the first
    /// variant, or in a sweep the baseline variant at the same parameter values.
    pub vs_baseline: Option<Comparison>,
    /// The name of the variant `vs_baseline` compared with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// With `--compare-along NAME`: this point vs the same variant at NAME's first
    /// value (the other parameters equal), and that point's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_first: Option<Comparison>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
    /// A fleet experiment's comparison with the baseline, per shard and pooled
    /// over shards (machines as blocks); `vs_baseline` is its pooled result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_shard: Option<ByShard>,
}

/// A comparison made per shard of a fleet experiment and combined over them.
#[derive(Debug, Clone, Serialize)]
pub struct ByShard {
    /// The shards, in the order of `comparison.blocks`.
    pub shards: Vec<u32>,
    /// The machine each ran on (its engine node name, else hostname; "" when unknown).
    pub machines: Vec<String>,
    pub comparison: coldstart_stats::BlockedComparison,
}

/// The shards whose runs the result holds, when more than one did: then every
/// comparison is blocked by shard (each shard is one machine over one stretch of
/// time, and machines differ by more than runs do).
fn shards_of(result: &ExperimentResult) -> Option<Vec<u32>> {
    let mut shards: Vec<u32> = result.samples.iter().filter_map(|s| s.shard).collect();
    shards.sort_unstable();
    shards.dedup();
    (shards.len() >= 2).then_some(shards)
}

/// Ready times (ms) of `variant`'s successful measured runs in `shard`.
fn ready_ms_in(result: &ExperimentResult, variant: usize, shard: u32) -> Vec<f64> {
    result
        .samples
        .iter()
        .filter(|s| s.variant == variant && s.shard == Some(shard) && !s.warmup && s.ok())
        .filter_map(|s| s.ready_ns)
        .map(|ns| ns as f64 / 1e6)
        .collect()
}

/// `candidate` against `baseline` on ready time: blocked by shard when `shards`
/// is given, else today's comparison of all runs.
fn compare_ready(
    result: &ExperimentResult,
    baseline: usize,
    candidate: usize,
    shards: Option<&[u32]>,
    options: coldstart_stats::CompareOptions,
) -> (Comparison, Option<ByShard>) {
    let Some(shards) = shards else {
        return (
            coldstart_stats::compare(&result.ready_ms(baseline), &result.ready_ms(candidate), options),
            None,
        );
    };
    let times: Vec<(Vec<f64>, Vec<f64>)> = shards
        .iter()
        .map(|&k| {
            (
                ready_ms_in(result, baseline, k),
                ready_ms_in(result, candidate, k),
            )
        })
        .collect();
    let blocks: Vec<coldstart_stats::Block<'_>> = times
        .iter()
        .map(|(b, c)| coldstart_stats::Block {
            baseline: b,
            candidate: c,
        })
        .collect();
    let comparison = coldstart_stats::compare_blocked(&blocks, options);
    (
        comparison.overall(),
        Some(ByShard {
            shards: shards.to_vec(),
            machines: shards
                .iter()
                .map(|k| {
                    result
                        .fleet
                        .as_ref()
                        .and_then(|f| f.shards.iter().find(|s| s.index == *k))
                        .map_or_else(String::new, |s| s.host.label().to_string())
                })
                .collect(),
            comparison,
        }),
    )
}

/// For a resource parameter, per variant (and per setting of the other
/// parameters): the cheapest value whose median is within the noise threshold of
/// the best median.
#[derive(Debug, Clone, Serialize)]
pub struct Best {
    /// The variant's base name (without the values).
    pub variant: String,
    pub param: String,
    /// The other parameters' values this choice holds for.
    #[serde(with = "crate::experiment::sweep::params_serde")]
    pub others: Vec<(String, String)>,
    /// The cheapest value within the threshold, and its median (ms).
    pub value: String,
    pub p50_ms: f64,
    /// The value with the lowest median, and that median.
    pub fastest: String,
    pub fastest_p50_ms: f64,
    /// `value` compared with `fastest` (bench's verdict; None when they are one).
    pub vs_fastest: Option<Comparison>,
    /// The threshold "within" means (a fraction of the fastest median).
    pub noise: f64,
    /// Why `value` was chosen over the cheaper ones and the faster one.
    pub why: BestWhy,
}

/// How the best value was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BestWhy {
    /// It is the cheapest value and the fastest.
    CheapestAndFastest,
    /// It is the fastest, and every cheaper value is measurably slower.
    Fastest,
    /// Its median is within the noise threshold of the fastest's.
    WithinNoise,
    /// Its median is further off, but the runs cannot tell it from the fastest
    /// (no significant difference): more runs would say more.
    NotMeasurablySlower,
    /// No best value can be named yet: a cheaper value has no verdict against
    /// the fastest (too few runs for an interval). `value` is the fastest by
    /// median, which is no evidence.
    NoVerdict,
}

#[derive(Debug, Clone, Serialize)]
pub struct MarkSummary {
    pub name: String,
    pub source: crate::sample::MarkSource,
    /// Runs in which the mark appeared (first occurrence per run).
    pub runs: usize,
    pub t_ms: Summary,
    /// The same mark of the variant's baseline vs this one's (bench's comparison
    /// of ready times, on the mark's instants): an extension's ready time in a
    /// Lambda A/B gets a shift, CI and verdict as Init Duration does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_baseline: Option<Comparison>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub variants: Vec<VariantAnalysis>,
    /// Best values of resource parameters (empty unless a sweep has one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub best: Vec<Best>,
}

/// `noise`: the practical-significance threshold for the comparisons (0.01 = 1 %).
pub fn analyze(result: &ExperimentResult, noise: f64) -> Analysis {
    analyze_sweep(result, noise, None)
}

/// [`analyze`], with what a sweep adds: comparisons along `--compare-along` and
/// the best value of each resource parameter. Each point is compared with the
/// baseline at the same values whether or not `sweep` is given (that is in the
/// variants' params).
pub fn analyze_sweep(result: &ExperimentResult, noise: f64, sweep: Option<&Sweep>) -> Analysis {
    let options = coldstart_stats::CompareOptions {
        design: result.design,
        noise,
    };
    let along = sweep.and_then(|s| s.compare_along.as_deref());
    let shards = shards_of(result);
    // Each variant's mark instants and (a container's) phases, from its
    // successful measured runs.
    let mark_times: Vec<MarkTimes> = per_variant(result, |_, ok| mark_values(ok));
    let phase_times: Vec<phases::PhaseTimes> = per_variant(result, |v, ok| match v.target.container {
        Some(_) => phases::phase_times(ok, &crate::target::container::phases(v.readiness == "exit")),
        None => Vec::new(),
    });
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
            let seen = |s: &crate::sample::Sample| s.usage.processes > 0;
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
            let baseline = baseline_of(&result.variants, i);
            let (vs_baseline, by_shard) = match baseline {
                Some(b) => {
                    let (c, by) = compare_ready(result, b, i, shards.as_deref(), options);
                    (Some(c), by)
                }
                None => (None, None),
            };
            let first = along.and_then(|a| first_along(&result.variants, i, a));
            let baseline_marks = baseline_of(&result.variants, i).map(|b| &mark_times[b]);
            let marks = mark_summaries(&mark_times[i], baseline_marks, options);
            let ready_ms = summarize(ready.iter().copied());
            let (phases, phases_cover) = phases::phase_summaries(
                &phase_times[i],
                baseline.map(|b| &phase_times[b]),
                ready_ms.as_ref().map(|r| r.p50),
                options,
            );
            VariantAnalysis {
                name: v.name.clone(),
                base: v.base_name().to_string(),
                params: v.params.clone(),
                command: v.target.display_command(),
                readiness: v.readiness.clone(),
                ok_runs: ok.len(),
                failed_runs: measured.len() - ok.len(),
                warmup_runs: result
                    .samples
                    .iter()
                    .filter(|s| s.variant == i && s.warmup)
                    .count(),
                ready_ms,
                first_request_ms: of(&|s| s.requests_ns.first().map(|ns| *ns as f64 / 1e6)),
                later_requests_ms: summarize(
                    ok.iter()
                        .flat_map(|s| s.requests_ns.iter().skip(1))
                        .map(|ns| *ns as f64 / 1e6),
                ),
                shutdown_ms: of(&|s| s.shutdown_ns.map(|ns| ns as f64 / 1e6)),
                // A run that saw no process (on the Lambda service) measured no
                // usage: its zeros are not figures.
                cpu_ms: of(&|s| seen(s).then_some(s.usage.cpu_total_us as f64 / 1e3)),
                peak_rss_mb: of(&|s| {
                    s.usage
                        .peak_rss_kb
                        .filter(|_| seen(s))
                        .map(|kb| kb as f64 / 1024.0)
                }),
                minor_faults: of(&|s| seen(s).then_some(s.usage.minor_faults as f64)),
                major_faults: of(&|s| seen(s).then_some(s.usage.major_faults as f64)),
                processes: of(&|s| seen(s).then_some(s.usage.processes as f64)),
                threads: of(&|s| seen(s).then_some(s.usage.threads as f64)),
                captures,
                metrics,
                marks,
                phases,
                phases_cover,
                read_set: ok.iter().rev().find_map(|s| s.read_set.as_deref().cloned()),
                vs_baseline,
                baseline: baseline.map(|b| result.variants[b].name.clone()),
                vs_first: first.map(|f| compare_ready(result, f, i, shards.as_deref(), options).0),
                first: first.map(|f| result.variants[f].name.clone()),
                by_shard,
            }
        })
        .collect();
    let best = sweep.map_or_else(Vec::new, |s| best_values(result, s, options));
    Analysis { variants, best }
}

/// Per resource parameter, variant base and setting of the other parameters:
/// the cheapest value the runs do not show to be slower than the fastest (its
/// median within the noise threshold, or no significant difference).
fn best_values(
    result: &ExperimentResult,
    sweep: &Sweep,
    options: coldstart_stats::CompareOptions,
) -> Vec<Best> {
    let mut out = Vec::new();
    for p in sweep.params.iter().filter(|p| p.resource) {
        let cheapest_first = by_cost(&p.values);
        let mut groups: Vec<(String, Vec<(String, String)>)> = Vec::new();
        for v in &result.variants {
            let others: Vec<_> = v.params.iter().filter(|(k, _)| *k != p.name).cloned().collect();
            let key = (v.base_name().to_string(), others);
            if v.params.iter().any(|(k, _)| *k == p.name) && !groups.contains(&key) {
                groups.push(key);
            }
        }
        for (base, others) in groups {
            // (value, variant index, median) of this group, cheapest first.
            let points: Vec<(String, usize, f64)> = cheapest_first
                .iter()
                .filter_map(|value| {
                    let i = result.variants.iter().position(|v| {
                        v.base_name() == base
                            && v.params.iter().all(|(k, x)| {
                                if *k == p.name {
                                    x == value
                                } else {
                                    others.iter().any(|(ok, ox)| ok == k && ox == x)
                                }
                            })
                    })?;
                    let mut xs = result.ready_ms(i);
                    xs.sort_by(f64::total_cmp);
                    Some((value.clone(), i, coldstart_stats::summarize(&xs)?.p50))
                })
                .collect();
            // One value: nothing to compare it with, so nothing is "best".
            if points.len() < 2 {
                continue;
            }
            let Some(fastest) = points.iter().min_by(|a, b| a.2.total_cmp(&b.2)) else {
                continue;
            };
            // The cheapest value the runs do not show to be slower than the
            // fastest: within the noise threshold by median, or with no
            // significant difference. A cheaper value without a verdict
            // (too few runs, or a verdict-free design) ends the search: the
            // runs cannot say it is slower, so nothing can be named best
            // (it used to count as slower, naming the dearest value best).
            let judged = |x: &(String, usize, f64)| -> Option<BestWhy> {
                if x.1 == fastest.1 {
                    return Some(if x.1 == points[0].1 {
                        BestWhy::CheapestAndFastest
                    } else {
                        BestWhy::Fastest
                    });
                }
                if x.2 <= fastest.2 * (1.0 + options.noise) {
                    return Some(BestWhy::WithinNoise);
                }
                let c = coldstart_stats::compare(&result.ready_ms(fastest.1), &result.ready_ms(x.1), options);
                match c.verdict {
                    coldstart_stats::Verdict::Same | coldstart_stats::Verdict::WithinNoise => {
                        Some(BestWhy::NotMeasurablySlower)
                    }
                    coldstart_stats::Verdict::None => Some(BestWhy::NoVerdict),
                    _ => None,
                }
            };
            let Some((chosen, why)) = points.iter().find_map(|x| judged(x).map(|w| (x, w))) else {
                continue;
            };
            let chosen = if why == BestWhy::NoVerdict {
                fastest
            } else {
                chosen
            };
            out.push(Best {
                variant: base.clone(),
                param: p.name.clone(),
                others: others.clone(),
                value: chosen.0.clone(),
                p50_ms: chosen.2,
                fastest: fastest.0.clone(),
                fastest_p50_ms: fastest.2,
                vs_fastest: (chosen.1 != fastest.1).then(|| {
                    coldstart_stats::compare(&result.ready_ms(fastest.1), &result.ready_ms(chosen.1), options)
                }),
                noise: options.noise,
                why,
            });
        }
    }
    out
}

/// `f` of each variant and its successful measured runs.
fn per_variant<T>(
    result: &ExperimentResult,
    f: impl Fn(&crate::experiment::Variant, &[&crate::sample::Sample]) -> T,
) -> Vec<T> {
    result
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let ok: Vec<&crate::sample::Sample> = result
                .samples
                .iter()
                .filter(|s| s.variant == i && !s.warmup && s.ok())
                .collect();
            f(v, &ok)
        })
        .collect()
}

/// A variant's mark instants: per (name, source), the first occurrence in each run, ms.
type MarkTimes = BTreeMap<(String, crate::sample::MarkSource), Vec<f64>>;

fn mark_values(ok: &[&crate::sample::Sample]) -> MarkTimes {
    let mut by_name = MarkTimes::new();
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
    by_name
}

/// Each mark summarised across runs, in order of median, and compared with the
/// same mark of `baseline` where it has one.
fn mark_summaries(
    times: &MarkTimes,
    baseline: Option<&MarkTimes>,
    options: coldstart_stats::CompareOptions,
) -> Vec<MarkSummary> {
    let mut out: Vec<MarkSummary> = times
        .iter()
        .filter_map(|(key, xs)| {
            Some(MarkSummary {
                name: key.0.clone(),
                source: key.1,
                runs: xs.len(),
                t_ms: summarize(xs.iter().copied())?,
                vs_baseline: baseline
                    .and_then(|b| b.get(key))
                    .map(|base| coldstart_stats::compare(base, xs, options)),
            })
        })
        .collect();
    out.sort_by(|a, b| a.t_ms.p50.total_cmp(&b.t_ms.p50));
    out
}

fn summarize(values: impl Iterator<Item = f64>) -> Option<Summary> {
    let mut xs: Vec<f64> = values.collect();
    xs.sort_by(f64::total_cmp);
    coldstart_stats::summarize(&xs)
}
