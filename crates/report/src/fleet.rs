//! Fleet experiments for people: the line a shard prints when it joins, the
//! per-machine view of a comparison blocked by shard, and `coldstart fleet status`.

use super::format::{p_value, signed_ms, signed_percent};
use coldstart_core::analysis::{Analysis, ByShard, VariantAnalysis};
use coldstart_core::experiment::shard::{Fleet, FleetRecord};
use coldstart_core::stats::{Comparison, Verdict};
use coldstart_core::store::fleet::Joined;
use comfy_table::{presets, Cell, CellAlignment, Table};

/// What a shard did on joining: which shard (and who said so), which experiment.
pub fn joined(fleet: &Fleet, joined: &Joined, location: &str) -> String {
    let what = if joined.created {
        "created".to_string()
    } else if joined.attempt > 1 {
        format!(
            "joined, started again (attempt {}: its {} earlier runs are replaced)",
            joined.attempt, joined.replaced_runs
        )
    } else {
        "joined".to_string()
    };
    format!(
        "shard {}/{} (from {}) of fleet experiment '{}' (named by {}): {what}, experiment {} in {location}",
        fleet.shard.index,
        fleet.shard.count,
        fleet.shard.source.describe(),
        fleet.name,
        fleet.named_by,
        joined.experiment,
    )
}

pub(crate) fn verdict_word(c: &Comparison) -> &'static str {
    match c.verdict {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::Same => "~",
        Verdict::WithinNoise => "~ (noise)",
        Verdict::None => "no verdict",
    }
}

pub(crate) fn interval(c: &Comparison) -> String {
    match (&c.relative, c.relative.as_ref().and_then(|r| r.ci)) {
        (Some(r), Some((lo, hi))) => format!(
            "{} [{}, {}]",
            signed_percent(r.estimate),
            signed_percent(lo),
            signed_percent(hi)
        ),
        (Some(r), None) => signed_percent(r.estimate),
        _ => "–".into(),
    }
}

/// One row per shard: the shard, its machine, runs of each side, the shift and
/// relative interval on that machine alone, its verdict.
fn rows(by: &ByShard) -> Vec<[String; 6]> {
    by.shards
        .iter()
        .zip(&by.machines)
        .zip(&by.comparison.blocks)
        .map(|((k, machine), c)| {
            [
                k.to_string(),
                if machine.is_empty() {
                    "?".into()
                } else {
                    machine.clone()
                },
                c.shift
                    .as_ref()
                    .map_or_else(|| "–".into(), |s| signed_ms(s.estimate)),
                interval(c),
                verdict_word(c).into(),
                c.reason
                    .clone()
                    .filter(|_| c.verdict == Verdict::None)
                    .unwrap_or_default(),
            ]
        })
        .collect()
}

/// What the blocked comparison adds under the table: the stratified test, the
/// between-machine spread, and whether machines disagree.
fn notes(by: &ByShard) -> Vec<String> {
    let b = &by.comparison;
    let mut out = Vec::new();
    if let Some(v) = &b.van_elteren {
        out.push(format!(
            "van Elteren test over {} shards (ranks within each machine): p = {}",
            by.shards.len(),
            p_value(v.p_value)
        ));
    }
    if let Some(h) = &b.heterogeneity {
        let machine = |i: &usize| by.machines.get(*i).cloned().unwrap_or_default();
        if h.disagree {
            out.push(format!(
                "machines disagree: faster on {}, slower on {}; the pooled verdict is an average over \
                 machines that hides this",
                h.faster.iter().map(machine).collect::<Vec<_>>().join(", "),
                h.slower.iter().map(machine).collect::<Vec<_>>().join(", ")
            ));
        }
        if h.p_value < 0.05 {
            out.push(format!(
                "machines differ by more than their own noise (Cochran's Q = {:.1} on {} df, p = {}, I² = {:.0} %): \
                 the pooled interval includes that spread",
                h.q,
                h.df,
                p_value(h.p_value),
                h.i2 * 100.0
            ));
        }
    }
    out
}

fn pooled_head(v: &VariantAnalysis, baseline: &str, by: &ByShard) -> String {
    let shift = by
        .comparison
        .shift
        .as_ref()
        .map(|s| format!(", shift {}", signed_ms(s.estimate)))
        .unwrap_or_default();
    format!(
        "{} vs {baseline} per machine (shard): pooled {} {}{shift}",
        v.name,
        verdict_word(&by.comparison.overall()),
        interval(&by.comparison.overall()),
    )
}

/// The terminal's per-machine section (empty unless the experiment was sharded).
pub fn terminal(analysis: &Analysis) -> String {
    let mut out = String::new();
    let first = analysis.variants.first().map(|v| v.name.as_str()).unwrap_or("");
    for v in &analysis.variants {
        let Some(by) = &v.by_shard else { continue };
        let baseline = v.baseline.as_deref().unwrap_or(first);
        out.push_str(&pooled_head(v, baseline, by));
        out.push('\n');
        let rows = rows(by);
        // The reason column only when a shard has no verdict.
        let width = if rows.iter().any(|r| !r[5].is_empty()) {
            6
        } else {
            5
        };
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED);
        t.set_header(
            ["shard", "machine", "shift", "Δ [95% CI]", "verdict", "why"]
                .into_iter()
                .take(width),
        );
        for r in &rows {
            t.add_row(r.iter().take(width).map(Cell::new).collect::<Vec<_>>());
        }
        for i in [0, 2, 3] {
            if let Some(c) = t.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        let hidden = super::width::fit_table(&mut t, if width == 6 { &[5, 2] } else { &[2] });
        out.push_str(&t.to_string());
        out.push('\n');
        out.push_str(&super::width::hidden_note(&hidden));
        for n in notes(by) {
            out.push_str(&format!("  {n}\n"));
        }
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// The Markdown export's per-machine section (empty unless sharded).
pub fn markdown(analysis: &Analysis) -> String {
    let mut out = String::new();
    let first = analysis.variants.first().map(|v| v.name.as_str()).unwrap_or("");
    for v in &analysis.variants {
        let Some(by) = &v.by_shard else { continue };
        let baseline = v.baseline.as_deref().unwrap_or(first);
        out.push_str(&format!("\n**{}**\n\n", pooled_head(v, baseline, by)));
        out.push_str("| shard | machine | shift | Δ [95% CI] | verdict |\n|---:|---|---:|---:|---|\n");
        for r in rows(by) {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                r[0],
                r[1].replace('|', "\\|"),
                r[2],
                r[3],
                r[4]
            ));
        }
        for n in notes(by) {
            out.push_str(&format!("\n{n}\n"));
        }
    }
    out
}

fn age(seconds: i64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s => format!("{:.1} h", s as f64 / 3600.0),
    }
}

/// `coldstart fleet status`: shards done / running / missing, and a row per shard.
pub fn status(record: &FleetRecord, experiment: i64, location: &str, now_unix_s: i64) -> String {
    let (done, running, missing) = record.tally();
    let mut out = format!(
        "fleet experiment '{}' (experiment {experiment} in {location}): {done}/{} shards done, {running} running, {} missing\n",
        record.name,
        record.count,
        missing.len()
    );
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    t.set_header([
        "shard", "state", "attempt", "runs", "machine", "cpu", "took", "stopped",
    ]);
    for s in &record.shards {
        let (state, took) = match s.ended_unix_s {
            Some(end) => ("done", age(end - s.started_unix_s)),
            None => (
                "running",
                format!("{} so far", age(now_unix_s - s.started_unix_s)),
            ),
        };
        let runs = if s.replaced_runs > 0 {
            format!("{} ({} replaced)", s.runs, s.replaced_runs)
        } else {
            s.runs.to_string()
        };
        t.add_row(vec![
            Cell::new(s.index),
            Cell::new(state),
            Cell::new(s.attempt),
            Cell::new(runs),
            Cell::new(s.host.label()),
            Cell::new(format!("{} × {}", s.host.cores, s.host.cpu_model)),
            Cell::new(took),
            Cell::new(s.stopped.as_deref().unwrap_or("")),
        ]);
    }
    for k in &missing {
        t.add_row(vec![Cell::new(k), Cell::new("missing")]);
    }
    let hidden = super::width::fit_table(&mut t, &[5, 7, 6]);
    out.push_str(&t.to_string());
    out.push('\n');
    out.push_str(&super::width::hidden_note(&hidden));
    if running > 0 {
        out.push_str(
            "  a shard shown running either runs or died without closing (its engine knows which); \
             a retry replaces its runs\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_core::analysis::analyze;
    use coldstart_core::experiment::shard::{Host, ShardRecord};
    use coldstart_core::fixtures::{result, sample};

    /// Shard 0 (machine m0): the candidate 20 % faster; shard 1 (m1): 20 % slower.
    fn disagreeing() -> coldstart_core::experiment::ExperimentResult {
        let mut samples = Vec::new();
        for (shard, factor) in [(0u32, 0.8), (1, 1.2)] {
            for round in 0..12 {
                let jitter = 1.0 + round as f64 * 0.001;
                for (variant, ms) in [(0, 100.0 * jitter), (1, 100.0 * factor * jitter)] {
                    let mut s = sample(variant, round, false, Some(ms));
                    s.shard = Some(shard);
                    samples.push(s);
                }
            }
        }
        let mut r = result(samples);
        r.fleet = Some(FleetRecord {
            name: "f".into(),
            count: 2,
            shards: (0..2)
                .map(|index| ShardRecord {
                    index,
                    attempt: 1,
                    source: "--shard".into(),
                    host: Host {
                        hostname: format!("m{index}"),
                        ..Host::default()
                    },
                    started_unix_s: 0,
                    ended_unix_s: Some(10),
                    stopped: Some("completed".into()),
                    runs: 24,
                    replaced_runs: 0,
                })
                .collect(),
        });
        r
    }

    #[test]
    fn machines_that_disagree_are_named_in_both_formats() {
        let r = disagreeing();
        let a = analyze(&r, 0.01);
        let by = a.variants[1].by_shard.as_ref().expect("blocked by shard");
        assert_eq!(by.machines, ["m0", "m1"]);
        let text = terminal(&a);
        assert!(text.contains("cand vs base per machine (shard)"), "{text}");
        assert!(
            text.contains("machines disagree: faster on m0, slower on m1"),
            "{text}"
        );
        assert!(text.contains("−20 %") && text.contains("+20 %"), "{text}");
        let md = markdown(&a);
        assert!(md.contains("| 0 | m0 |") && md.contains("| 1 | m1 |"), "{md}");
        assert!(md.contains("machines disagree"), "{md}");
        // The pooled verdict is not "faster" or "slower": the machines cancel out.
        let pooled = a.variants[1].vs_baseline.as_ref().expect("pooled");
        assert!(
            !matches!(pooled.verdict, Verdict::Faster | Verdict::Slower),
            "{pooled:?}"
        );
        let full = crate::terminal::render(&r, &a);
        assert!(full.contains("pooled over 2 shards"), "{full}");
    }

    #[test]
    fn an_unsharded_experiment_has_no_per_machine_view() {
        let r = result(
            (0..8)
                .flat_map(|round| {
                    [
                        sample(0, round, false, Some(10.0)),
                        sample(1, round, false, Some(12.0)),
                    ]
                })
                .collect(),
        );
        let a = analyze(&r, 0.01);
        assert!(a.variants[1].by_shard.is_none());
        assert_eq!(terminal(&a), "");
        assert_eq!(markdown(&a), "");
    }

    #[test]
    fn status_counts_done_running_and_missing() {
        let mut record = disagreeing().fleet.expect("fleet");
        record.count = 4;
        record.shards[1].ended_unix_s = None;
        record.shards[1].attempt = 2;
        record.shards[1].replaced_runs = 7;
        let text = status(&record, 3, "db", 100);
        assert!(
            text.starts_with(
                "fleet experiment 'f' (experiment 3 in db): 1/4 shards done, 1 running, 2 missing"
            ),
            "{text}"
        );
        assert!(
            text.contains("24 (7 replaced)") && text.contains("missing"),
            "{text}"
        );
    }
}
