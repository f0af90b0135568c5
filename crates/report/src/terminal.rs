//! The terminal report: one row per variant (min p50 [CI] p90 p99 max mean±sd),
//! a Δ line per variant against the baseline, then resources and requests.

use super::format::{comparison, detectable, median_with_ci, ms, tail};
use coldstart_core::analysis::Analysis;
use coldstart_core::experiment::ExperimentResult;
use coldstart_core::run::{KUBELET_READY_METRIC, MEMORY_PEAK_METRIC, OOM_KILLS_METRIC};
use coldstart_core::stats::Summary;
use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};

pub fn render(result: &ExperimentResult, analysis: &Analysis) -> String {
    let mut out = summaries(analysis);
    out += &deltas(analysis);
    if let Some(w) = result.load.as_ref().and_then(|l| l.warning()) {
        out.push_str(&format!("  {w}\n"));
    }
    out.push_str(&limits(result));
    out.push('\n');
    out += &super::fleet::terminal(analysis);
    out += &sweep(analysis);
    out.push_str(&resources(analysis));
    out.push_str(&marks(analysis));
    out.push_str(&phases(analysis));
    out.push_str(&read_sets(analysis));
    out.push_str(&probe_advice(result, analysis));
    out += &metrics(analysis);
    if result.stopped != Some(coldstart_core::experiment::StopReason::Completed) {
        out.push_str(&format!("stopped: {}\n", result.stopped_label()));
    }
    super::width::fit(&out)
}

/// The table of ready times, one row per variant.
fn summaries(analysis: &Analysis) -> String {
    let mut out = String::new();
    let mut t = table();
    t.set_header([
        "variant",
        "runs",
        "min",
        "p50 [95% CI]",
        "p90",
        "p99",
        "max",
        "mean ± sd",
        "outliers",
    ]);
    for v in &analysis.variants {
        let runs = if v.failed_runs > 0 {
            format!("{} ({} failed)", v.ok_runs, v.failed_runs)
        } else {
            v.ok_runs.to_string()
        };
        match &v.ready_ms {
            Some(s) => t.add_row(vec![
                Cell::new(&v.name),
                Cell::new(runs),
                Cell::new(ms(s.min)),
                Cell::new(median_with_ci(s)),
                Cell::new(tail(s.p90, s.p90_reliable)),
                Cell::new(tail(s.p99, s.p99_reliable)),
                Cell::new(ms(s.max)),
                Cell::new(format!("{} ± {}", ms(s.mean), ms(s.sd))),
                Cell::new(s.outliers.to_string()),
            ]),
            None => t.add_row(vec![
                Cell::new(&v.name),
                Cell::new(runs),
                Cell::new("no successful run"),
            ]),
        };
    }
    right_align(&mut t, 1..9);
    // Least useful first: mean ± sd, p99, min, max.
    let hidden = super::width::fit_table(&mut t, &[7, 5, 2, 6]);
    out.push_str(&format!(
        "{} ({})\n",
        measured(analysis),
        readiness_line(analysis)
    ));
    out.push_str(&t.to_string());
    out.push('\n');
    out.push_str(&super::width::hidden_note(&hidden));
    if analysis
        .variants
        .iter()
        .any(|v| v.ready_ms.as_ref().is_some_and(|s| !s.p99_reliable))
    {
        out.push_str("  * tail quantile from too few runs to be reliable (p90 needs ≥ 10, p99 ≥ 100)\n");
    }
    out
}

/// Each variant against its baseline: the Δ line, the same in words, and what
/// the runs could detect.
fn deltas(analysis: &Analysis) -> String {
    let mut out = String::new();
    let first = analysis.variants.first().map(|v| v.name.as_str()).unwrap_or("");
    for v in analysis.variants.iter().skip(1) {
        if let Some(c) = &v.vs_baseline {
            let baseline = v.baseline.as_deref().unwrap_or(first);
            let failures = failures(analysis, v, baseline);
            // Without a verdict the sentence below gives the reason: the Δ
            // line says "no verdict" and the figures, not the reason twice.
            let figures = if c.verdict == coldstart_core::stats::Verdict::None {
                let mut short = c.clone();
                short.reason = Some("no verdict".into());
                comparison(&short)
            } else {
                comparison(c)
            };
            let pooled = v.by_shard.as_ref().map_or_else(String::new, |b| {
                format!(" (pooled over {} shards, per machine below)", b.shards.len())
            });
            out.push_str(&format!(
                "  Δ {} vs {}: {failures}{figures}{pooled}\n",
                v.name, baseline
            ));
            // The same in plain words.
            out.push_str(&format!(
                "      {}\n",
                super::words::sentence(c, &v.name, baseline, false)
            ));
            if let Some(d) = detectable(c) {
                out.push_str(&format!("      {d}\n"));
            }
        }
    }
    out
}

/// A sweep's p50 per value and the best values (nothing without a sweep).
fn sweep(analysis: &Analysis) -> String {
    let mut out = String::new();
    if let Some(rows) = super::sweep::cells(analysis) {
        let mut t = table();
        let mut rows = rows.into_iter();
        if let Some(h) = rows.next() {
            t.set_header(h);
        }
        let n = analysis.variants.first().map_or(0, |v| v.params.len());
        for r in rows {
            t.add_row(r);
        }
        let cols = t.column_count();
        right_align(&mut t, n..cols);
        out.push_str("sweep: p50 per value; each variant vs the baseline at the same value\n");
        out.push_str(&t.to_string());
        out.push('\n');
        for line in super::sweep::best_lines(analysis) {
            out.push_str(&format!("  {line}\n"));
        }
        out.push('\n');
    }
    out
}

/// OOM kills the runs survived, the runs' own metrics and captured values.
fn metrics(analysis: &Analysis) -> String {
    let mut out = String::new();
    for v in &analysis.variants {
        // Successful runs with OOM kills: only -i/--ignore-failure lets them succeed.
        if let Some(s) = v.metrics.get(OOM_KILLS_METRIC) {
            let kills = (s.mean * s.n as f64).round() as u64;
            out.push_str(&format!(
                "  note: {}: in {} of {} successful runs {}; accepted by -i/--ignore-failure\n",
                v.name,
                s.n,
                v.ok_runs,
                coldstart_core::limits::oom_kills_text(kills)
            ));
        }
        for (name, s) in v
            .metrics
            .iter()
            .filter(|(n, _)| *n != MEMORY_PEAK_METRIC && *n != OOM_KILLS_METRIC)
        {
            out.push_str(&format!(
                "  {}: {name}: median {} (n = {})\n",
                v.name,
                trim(s.p50),
                s.n
            ));
        }
        for (name, s) in &v.captures {
            out.push_str(&format!(
                "  {}: captured {name}: median {} (n = {})\n",
                v.name,
                trim(s.p50),
                s.n
            ));
        }
    }
    out
}

/// "fails 7 of 20 runs (baseline 0 of 20: …); " before a variant's speed verdict, or
/// nothing when it failed no run. Failing more often than the baseline is a verdict
/// before any speed: the speed is measured on the runs that survived.
pub(super) fn failures(
    analysis: &Analysis,
    v: &coldstart_core::analysis::VariantAnalysis,
    baseline: &str,
) -> String {
    analysis
        .variants
        .iter()
        .find(|b| b.name == baseline)
        .and_then(|b| {
            crate::gate::failure_line(
                v.failed_runs,
                v.ok_runs + v.failed_runs,
                b.failed_runs,
                b.ok_runs + b.failed_runs,
            )
        })
        .map(|l| format!("{l}; "))
        .unwrap_or_default()
}

/// Marks per variant: when each happened after the spawn (median and CI), and,
/// for a variant with a baseline, the same comparison as its ready time's.
fn marks(a: &Analysis) -> String {
    let Some((header, rows)) = mark_cells(a) else {
        return String::new();
    };
    let t = cells_table(header, rows, 3..5);
    match on_service(a) {
        true => format!("marks ({MARKS_ON_SERVICE})\n{t}\n"),
        false => format!("marks\n{t}\n"),
    }
}

/// A table of text cells, the columns in `right` right-aligned, fitted to the width.
fn cells_table(header: Vec<String>, rows: Vec<Vec<String>>, right: std::ops::Range<usize>) -> Table {
    let mut t = table();
    t.set_header(header);
    for r in rows {
        t.add_row(r);
    }
    right_align(&mut t, right);
    super::width::fit_table(&mut t, &[]);
    t
}

/// A container variant's phases (spawn → ready cut at the engine's marks).
fn phases(a: &Analysis) -> String {
    let Some((header, rows)) = phase_cells(a) else {
        return String::new();
    };
    let t = cells_table(header, rows, 2..5);
    format!(
        "phases (engine events; each run's add up to its spawn → ready)\n{t}\n{}",
        cover_lines(a)
    )
}

/// A pod variant's readiness probes: when the kubelet would mark it Ready
/// (`kubelet_ready_ms`, per run) against when it was, and what a startup probe
/// every second would make of it.
fn probe_advice(result: &ExperimentResult, a: &Analysis) -> String {
    let mut out = String::new();
    for (v, va) in result.variants.iter().zip(&a.variants) {
        let Some(pod) = v.target.container.as_ref().and_then(|c| c.pod.as_ref()) else {
            continue;
        };
        let (Some(ready), Some(kubelet)) = (&va.ready_ms, va.metrics.get(KUBELET_READY_METRIC)) else {
            continue;
        };
        let probes: Vec<String> = pod
            .probes
            .iter()
            .filter_map(|p| {
                let r = p.readiness?;
                let startup = p.startup.map_or_else(String::new, |s| {
                    format!(
                        ", startupProbe initialDelaySeconds {} / periodSeconds {}",
                        s.initial_delay_s, s.period_s
                    )
                });
                Some(format!(
                    "{}: readinessProbe initialDelaySeconds {} / periodSeconds {}{startup}",
                    p.container, r.initial_delay_s, r.period_s
                ))
            })
            .collect();
        let lost = kubelet.p50 - ready.p50;
        let per_second = coldstart_pods::ProbeSpec {
            initial_delay_s: 0,
            period_s: 1,
        }
        .ready_by_ms(None, ready.p50);
        let advice = if lost >= 1000.0 {
            format!(
                ": {} lost per start; a startupProbe with periodSeconds 1 and no readiness delay would mark it by {}",
                ms(lost),
                ms(per_second)
            )
        } else {
            ": the probes cost less than a second".to_string()
        };
        out.push_str(&format!(
            "  {}: ready at {} (p50); the kubelet would mark it Ready by {} ({}){advice}\n",
            va.name,
            ms(ready.p50),
            ms(kubelet.p50),
            probes.join("; ")
        ));
    }
    if out.is_empty() {
        return out;
    }
    format!(
        "probes (when the kubelet would mark the pod Ready, its probes' clock started at the spawn)\n{out}"
    )
}

/// `--read-set`'s lines, under their title.
fn read_sets(a: &Analysis) -> String {
    let lines = super::read_set::lines(a);
    if lines.is_empty() {
        return String::new();
    }
    let mut out = format!("{}\n", super::read_set::TITLE);
    for l in lines {
        out.push_str(&format!("  {l}\n"));
    }
    out
}

/// How much of the median spawn → ready the phases' medians make up, per variant.
pub(super) fn cover_lines(a: &Analysis) -> String {
    let mut out = String::new();
    for v in &a.variants {
        if let Some(c) = v.phases_cover {
            out.push_str(&format!(
                "  {}: the phases' medians add up to {:.0}% of the median spawn → ready\n",
                v.name,
                c * 100.0
            ));
        }
    }
    out
}

/// The phases table's header and rows (terminal and Markdown): variant, phase,
/// median duration with its CI, its share of the median ready, runs, and
/// "Δ vs baseline" when any variant has a baseline.
pub(super) fn phase_cells(a: &Analysis) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    if a.variants.iter().all(|v| v.phases.is_empty()) {
        return None;
    }
    let compared = a
        .variants
        .iter()
        .any(|v| v.phases.iter().any(|p| p.vs_baseline.is_some()));
    let mut header: Vec<String> = ["variant", "phase", "p50 [95% CI]", "of ready", "runs"]
        .map(String::from)
        .to_vec();
    if compared {
        header.push("Δ vs baseline".into());
    }
    let first = a.variants.first().map_or("", |v| v.name.as_str());
    let mut rows = Vec::new();
    for v in &a.variants {
        let ready = v.ready_ms.as_ref().map(|r| r.p50).filter(|r| *r > 0.0);
        for p in &v.phases {
            let mut row = vec![
                v.name.clone(),
                p.name.clone(),
                median_with_ci(&p.ms),
                ready.map_or_else(String::new, |r| format!("{:.0}%", 100.0 * p.ms.p50 / r)),
                format!("{}/{}", p.runs, v.ok_runs),
            ];
            if compared {
                row.push(vs_cell(v, p.vs_baseline.as_ref(), first));
            }
            rows.push(row);
        }
    }
    Some((header, rows))
}

/// The runs were on the Lambda service (`coldstart lambda --aws`): no spawn
/// is seen there, and the marks come from the invoke's log tail.
pub(super) fn on_service(a: &Analysis) -> bool {
    !a.variants.is_empty() && a.variants.iter().all(|v| v.command.starts_with("aws:lambda"))
}

/// How marks from the service's log tail are timed.
pub(super) const MARKS_ON_SERVICE: &str =
    "from the log tail: SDK checkpoints since the first one, --mark lines as they say";

/// The marks table's header and rows (terminal and Markdown): variant, mark,
/// source, median since spawn with its CI, runs, and "Δ vs baseline" when any
/// variant has a baseline to compare with.
pub(super) fn mark_cells(a: &Analysis) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    if a.variants.iter().all(|v| v.marks.is_empty()) {
        return None;
    }
    let compared = a
        .variants
        .iter()
        .any(|v| v.marks.iter().any(|m| m.vs_baseline.is_some()));
    let when = if on_service(a) {
        "p50 [95% CI]"
    } else {
        "since spawn p50 [95% CI]"
    };
    let mut header: Vec<String> = ["variant", "mark", "source", when, "runs"]
        .map(String::from)
        .to_vec();
    if compared {
        header.push("Δ vs baseline".into());
    }
    let first = a.variants.first().map_or("", |v| v.name.as_str());
    let mut rows = Vec::new();
    for v in &a.variants {
        for m in &v.marks {
            let mut row = vec![
                v.name.clone(),
                m.name.clone(),
                format!("{:?}", m.source).to_lowercase(),
                median_with_ci(&m.t_ms),
                format!("{}/{}", m.runs, v.ok_runs),
            ];
            if compared {
                row.push(vs_cell(v, m.vs_baseline.as_ref(), first));
            }
            rows.push(row);
        }
    }
    Some((header, rows))
}

/// A mark's or phase's "Δ vs baseline" cell: against the variant's baseline
/// (else the first variant), empty without a comparison.
fn vs_cell(
    v: &coldstart_core::analysis::VariantAnalysis,
    c: Option<&coldstart_stats::Comparison>,
    first: &str,
) -> String {
    c.map_or_else(String::new, |c| {
        format!("vs {}: {}", v.baseline.as_deref().unwrap_or(first), comparison(c))
    })
}

/// What the table's times are: a Lambda init's is its Init Duration.
pub(crate) fn measured(a: &Analysis) -> &'static str {
    if !a.variants.is_empty() && a.variants.iter().all(|v| v.readiness == "lambda:init") {
        "Init Duration"
    } else {
        "spawn → ready"
    }
}

fn readiness_line(a: &Analysis) -> String {
    let mut kinds: Vec<&str> = a.variants.iter().map(|v| v.readiness.as_str()).collect();
    kinds.dedup();
    format!("ready = {}", kinds.join(" | "))
}

/// Each limited variant's --cpus/--cpuset/--memory.
fn limits(result: &ExperimentResult) -> String {
    let mut out = String::new();
    for v in result.variants.iter().filter(|v| !v.target.limits.is_none()) {
        out.push_str(&format!(
            "  limits of {}: {}\n",
            v.name,
            v.target.limits.describe()
        ));
    }
    out
}

fn resources(a: &Analysis) -> String {
    let has_cgroup_peak = a
        .variants
        .iter()
        .any(|v| v.metrics.contains_key(MEMORY_PEAK_METRIC));
    // Runs on the Lambda service see no process: no usage columns at all.
    let has_usage = a.variants.iter().any(|v| v.cpu_ms.is_some());
    let has_requests = a.variants.iter().any(|v| v.first_request_ms.is_some());
    let has_shutdown = a.variants.iter().any(|v| v.shutdown_ms.is_some());
    if !has_usage && !has_cgroup_peak && !has_requests && !has_shutdown {
        return String::new();
    }
    let mut header = vec!["medians"];
    if has_usage {
        header.extend(["cpu (user+sys)", "peak rss"]);
    }
    if has_cgroup_peak {
        // The whole tree's, from its first instruction (limited runs only).
        header.push("peak mem (cgroup)");
    }
    if has_usage {
        header.extend(["faults min/maj", "procs/threads"]);
    }
    if has_requests {
        header.extend(["1st request", "later requests"]);
    }
    if has_shutdown {
        header.push("shutdown");
    }
    let mut t = table();
    t.set_header(header.clone());
    for v in &a.variants {
        let med = |s: &Option<Summary>| s.as_ref().map(|s| s.p50);
        let mut row = vec![v.name.clone()];
        if has_usage {
            row.push(med(&v.cpu_ms).map(ms).unwrap_or_default());
            // † only where the footnote below explains it: a variant without a
            // successful run has no figures at all.
            row.push(
                med(&v.peak_rss_mb)
                    .map(|m| format!("{m:.1} MiB"))
                    .unwrap_or_else(|| {
                        if v.ok_runs > 0 && v.cpu_ms.is_some() {
                            "n/a †".into()
                        } else {
                            String::new()
                        }
                    }),
            );
        }
        if has_cgroup_peak {
            let peak = v
                .metrics
                .get(MEMORY_PEAK_METRIC)
                .map(|s| format!("{:.1} MiB", s.p50));
            row.push(peak.unwrap_or_default());
        }
        if has_usage {
            row.push(match (med(&v.minor_faults), med(&v.major_faults)) {
                (Some(a), Some(b)) => format!("{a:.0}/{b:.0}"),
                _ => String::new(),
            });
            row.push(match (med(&v.processes), med(&v.threads)) {
                (Some(p), Some(t)) => format!("{p:.0}/{t:.0}"),
                _ => String::new(),
            });
        }
        if has_requests {
            row.push(med(&v.first_request_ms).map(ms).unwrap_or_default());
            row.push(med(&v.later_requests_ms).map(ms).unwrap_or_default());
        }
        if has_shutdown {
            row.push(med(&v.shutdown_ms).map(ms).unwrap_or_default());
        }
        t.add_row(row);
    }
    right_align(&mut t, 1..header.len());
    super::width::fit_table(&mut t, &[]);
    let mut out = format!("{t}\n");
    if a.variants
        .iter()
        .any(|v| v.peak_rss_mb.is_none() && v.ok_runs > 0 && v.cpu_ms.is_some())
    {
        out.push_str("  † peak RSS not measurable: below coldstart's own (Linux starts a vfork+exec child's maxrss at the parent's)\n");
    }
    out
}

fn trim(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

pub(crate) fn table() -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_HORIZONTAL_ONLY)
        .set_content_arrangement(ContentArrangement::Disabled);
    t
}

pub(crate) fn right_align(t: &mut Table, cols: std::ops::Range<usize>) {
    for i in cols {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}
