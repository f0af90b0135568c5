//! explain A vs B: where the difference between two builds' start times comes
//! from. The total is the untraced arms' difference (the Hodges–Lehmann shift
//! B − A with its Moses CI, as bench's verdicts); each phase's difference is
//! the same statistic on the per-run untraced estimates of that phase
//! ([`super::estimate::RunEstimate`]), sorted by its contribution to the total.
//! Section rows (files opened by kind, processes, connects, the runtime's own
//! tables by package) are put side by side from the runs shown, and the files
//! only one build opened are named.

use super::{Explanation, CONFIDENCE};
use coldstart_core::sample::section::{Unit, Value};
use coldstart_core::sample::Section;
use coldstart_core::stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// One build: its name, its untraced ready times (ms), its explanation.
pub struct Side<'a> {
    pub name: &'a str,
    pub untraced_ms: &'a [f64],
    pub explanation: &'a Explanation,
}

/// One phase, A beside B (ms, untraced estimates).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseDiff {
    pub name: String,
    /// Medians of the per-run estimates.
    pub a_ms: f64,
    pub b_ms: f64,
    /// B − A: the Hodges–Lehmann shift of the per-run estimates.
    pub diff_ms: f64,
    /// Its CI (Moses, at [`Attribution::phase_confidence`], never narrower
    /// than the traced runs'); None with too few runs.
    pub ci_ms: Option<(f64, f64)>,
    /// diff ÷ the total difference, %: only when the total's CI excludes 0.
    pub share_pct: Option<f64>,
}

/// One row of a section, A beside B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowDiff {
    pub section: String,
    pub key: String,
    /// What is compared (a column name, "opened", "processes", …).
    pub what: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// "ms", "count", "bytes" or "percent".
    pub unit: String,
}

impl RowDiff {
    pub fn diff(&self) -> f64 {
        self.b.unwrap_or(0.0) - self.a.unwrap_or(0.0)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    pub schema: String,
    pub a: String,
    pub b: String,
    pub a_untraced_ms: Option<f64>,
    pub b_untraced_ms: Option<f64>,
    /// B − A of the untraced runs (the measured difference) and its CI.
    pub total_ms: Option<f64>,
    pub total_ci_ms: Option<(f64, f64)>,
    /// Largest |difference| first.
    pub phases: Vec<PhaseDiff>,
    /// Whether the phases are untraced estimates (else traced runs).
    pub estimated: bool,
    /// The scale both builds' estimates share (None: traced).
    #[serde(default)]
    pub scale: Option<SharedScale>,
    /// The confidence of each phase's interval: 95 % for all phases at once
    /// (Bonferroni over the phases).
    #[serde(default = "default_confidence")]
    pub phase_confidence: f64,
    /// Largest |difference| first, within each section.
    pub rows: Vec<RowDiff>,
    /// Files (successful opens in the runs shown) only one build opened.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    pub notes: Vec<String>,
}

/// The A vs B document's schema. 2: phases share one scale, intervals are
/// family-wise, shares only of a clear total. 3: its builds' explanations are
/// `coldstart.explain/3` (typed section values); a row's unit may be `bytes`
/// or `percent`.
pub const SCHEMA: &str = "coldstart.explain-ab/3";

fn default_confidence() -> f64 {
    CONFIDENCE
}

/// Rows of the runtime's tables shown per section.
const ROWS_PER_SECTION: usize = 8;

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    stats::quantile(&v, 0.5)
}

/// The one model both builds' phases are estimated with: per-run untraced
/// estimates with the same scale on every stop's calibrated cost. Each build
/// has a residual scale of its own, and estimating each with its own would turn
/// the difference between two scales (noise) into a "significant" phase shift;
/// so both use the mean of the two scales, and the CI spans the mean of their
/// intervals. When either build's estimates are not reliable, or were stored
/// without per-run costs, both are compared traced (scale 0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SharedScale {
    pub scale: f64,
    pub ci: (f64, f64),
}

fn shared_scale(ea: &Explanation, eb: &Explanation) -> Option<SharedScale> {
    let (a, b) = (ea.estimate.as_ref()?, eb.estimate.as_ref()?);
    let costed = |e: &super::estimate::Estimate| !e.runs.is_empty() && e.runs.iter().any(|r| r.cost_ms > 0.0);
    if !(a.reliable && b.reliable && costed(a) && costed(b)) {
        return None;
    }
    let ((al, ah), (bl, bh)) = (a.scale_ci?, b.scale_ci?);
    Some(SharedScale {
        scale: (a.scale + b.scale) / 2.0,
        ci: ((al + bl) / 2.0, (ah + bh) / 2.0),
    })
}

/// Per-run values of phase `name` at scale `k` (0: traced): a run without the
/// phase counts 0. Without per-run estimates, the traced phase of the run
/// shown (one value, no CI).
fn phase_values(e: &Explanation, name: &str, k: f64) -> Vec<f64> {
    match e.estimate.as_ref().filter(|x| !x.runs.is_empty()) {
        Some(est) => est
            .runs
            .iter()
            .map(|r| r.phase_at(name, k).unwrap_or(0.0))
            .collect(),
        None => vec![e
            .timeline
            .phases
            .iter()
            .find(|p| p.name == name)
            .map_or(0.0, |p| p.dur_ns as f64 / 1e6)],
    }
}

fn phase_names(e: &Explanation) -> Vec<String> {
    match e.estimate.as_ref().filter(|x| !x.runs.is_empty()) {
        Some(est) => est
            .runs
            .iter()
            .flat_map(|r| r.phases.iter().map(|p| p.name.clone()))
            .collect(),
        None => e.timeline.phases.iter().map(|p| p.name.clone()).collect(),
    }
}

/// The smallest interval holding all of `cis` (None if any is None).
fn hull(cis: &[Option<(f64, f64)>]) -> Option<(f64, f64)> {
    cis.iter()
        .try_fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), c| {
            c.map(|(a, b)| (lo.min(a), hi.max(b)))
        })
}

/// One phase's B − A: the Hodges–Lehmann shift of the per-run values at the
/// shared scale, its interval at the ends of the scale's CI joined, and never
/// narrower than the same interval on the traced runs: subtracting an
/// estimated cost cannot make two builds' runs less noisy than they were.
fn phase_diff(
    ea: &Explanation,
    eb: &Explanation,
    name: String,
    shared: Option<SharedScale>,
    confidence: f64,
) -> Option<PhaseDiff> {
    let k = shared.map_or(0.0, |s| s.scale);
    let shift_at = |k: f64| {
        stats::hodges_lehmann(
            &phase_values(ea, &name, k),
            &phase_values(eb, &name, k),
            confidence,
        )
    };
    let shift = shift_at(k)?;
    let traced = if k > 0.0 {
        shift_at(0.0)
    } else {
        Some(shift.clone())
    };
    let ci = match shared {
        Some(s) => hull(&[
            shift.ci,
            shift_at(s.ci.0).and_then(|x| x.ci),
            shift_at(s.ci.1).and_then(|x| x.ci),
        ]),
        None => shift.ci,
    };
    let ci = match (ci, traced.and_then(|t| t.ci)) {
        (Some((lo, hi)), Some((tlo, thi))) if hi - lo < thi - tlo => {
            let half = (thi - tlo) / 2.0;
            Some((lo.min(shift.estimate - half), hi.max(shift.estimate + half)))
        }
        (ci, _) => ci,
    };
    let (va, vb) = (phase_values(ea, &name, k), phase_values(eb, &name, k));
    Some(PhaseDiff {
        a_ms: median(&va),
        b_ms: median(&vb),
        diff_ms: shift.estimate,
        ci_ms: ci,
        share_pct: None,
        name,
    })
}

impl Attribution {
    /// The phase a headline names: the largest whose interval excludes 0 (phases are
    /// ordered largest first). A phase that moved inside its noise is no reason.
    pub fn named_phase(&self) -> Option<&PhaseDiff> {
        self.phases
            .iter()
            .find(|p| p.ci_ms.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0))
    }
}

pub fn attribute(a: &Side, b: &Side) -> Attribution {
    let (ea, eb) = (a.explanation, b.explanation);
    let total = stats::hodges_lehmann(a.untraced_ms, b.untraced_ms, CONFIDENCE);
    let total_ms = total.as_ref().map(|s| s.estimate);
    let total_ci_ms = total.and_then(|s| s.ci);
    // Phases in the order they first appear in A, then B's own.
    let mut names: Vec<String> = Vec::new();
    for n in phase_names(ea).into_iter().chain(phase_names(eb)) {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let shared = shared_scale(ea, eb);
    // One interval per phase, all at once: Bonferroni, so that an A/A explain
    // shows every phase's interval holding 0 in 95 % of tries, not each one.
    let phase_confidence = 1.0 - (1.0 - CONFIDENCE) / names.len().max(1) as f64;
    // Shares of a total that may be 0 explode (710019 %): only of a clear difference.
    let clear_total =
        total_ms.filter(|t| *t != 0.0 && total_ci_ms.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0));
    let mut phases: Vec<PhaseDiff> = names
        .into_iter()
        .filter_map(|name| phase_diff(ea, eb, name, shared, phase_confidence))
        .map(|mut p| {
            p.share_pct = clear_total.map(|t| p.diff_ms / t * 100.0);
            p
        })
        .collect();
    phases.sort_by(|x, y| y.diff_ms.abs().total_cmp(&x.diff_ms.abs()));
    let estimated = shared.is_some();
    let mut notes = Vec::new();
    if !estimated {
        let why = if ea.estimate.is_some() && eb.estimate.is_some() {
            "a build's untraced estimates are not reliable (too noisy)"
        } else {
            "no untraced estimates stored"
        };
        notes.push(format!(
            "phases compare the traced runs ({why}): the shifts include any difference in the tracer's cost"
        ));
    }
    let (fa, fb): (BTreeSet<&String>, BTreeSet<&String>) =
        (ea.opened_files.iter().collect(), eb.opened_files.iter().collect());
    Attribution {
        schema: SCHEMA.into(),
        a: a.name.to_string(),
        b: b.name.to_string(),
        a_untraced_ms: (!a.untraced_ms.is_empty()).then(|| median(a.untraced_ms)),
        b_untraced_ms: (!b.untraced_ms.is_empty()).then(|| median(b.untraced_ms)),
        total_ms,
        total_ci_ms,
        phases,
        estimated,
        scale: shared,
        phase_confidence,
        rows: rows(ea, eb),
        only_a: fa.difference(&fb).map(|s| s.to_string()).collect(),
        only_b: fb.difference(&fa).map(|s| s.to_string()).collect(),
        notes,
    }
}

/// Section rows side by side: the tracer's (files by kind, processes,
/// connects, execs) and each runtime section both builds have.
fn rows(ea: &Explanation, eb: &Explanation) -> Vec<RowDiff> {
    let mut out = Vec::new();
    let count = |section: &str, key: &str, a: usize, b: usize| RowDiff {
        section: section.into(),
        key: key.into(),
        what: "count".into(),
        a: Some(a as f64),
        b: Some(b as f64),
        unit: "count".into(),
    };
    let (ca, cb) = (&ea.timeline.counts, &eb.timeline.counts);
    out.push(count("processes", "processes", ca.processes, cb.processes));
    out.push(count("processes", "execs", ca.execs, cb.execs));
    out.push(count("processes", "threads", ca.threads, cb.threads));
    out.push(count("connects", "connects", ca.connects, cb.connects));
    let mut kinds = Vec::new();
    let mut keys: Vec<&String> = Vec::new();
    for g in ea.timeline.opens_by_kind.iter().chain(&eb.timeline.opens_by_kind) {
        if !keys.contains(&&g.key) {
            keys.push(&g.key);
        }
    }
    for k in keys {
        let find = |e: &Explanation| {
            e.timeline
                .opens_by_kind
                .iter()
                .find(|g| &g.key == k)
                .map(|g| g.opened)
        };
        let (a, b) = (find(ea), find(eb));
        kinds.push(RowDiff {
            section: "files opened, by kind".into(),
            key: k.clone(),
            what: "opened".into(),
            a: a.map(|x| x as f64),
            b: b.map(|x| x as f64),
            unit: "count".into(),
        });
    }
    kinds.sort_by(|x, y| y.diff().abs().total_cmp(&x.diff().abs()));
    out.extend(kinds);
    for sa in &ea.sources {
        if let Some(sb) = eb.sources.iter().find(|s| s.title == sa.title) {
            out.extend(section_rows(sa, sb));
        }
    }
    out
}

/// The column a section's rows are compared on: a duration of the row's own
/// (`self`, `clock`, `span`) if the table has one, else the second column.
fn value_column(s: &Section) -> Option<usize> {
    let cols = &s.table.columns;
    cols.iter()
        .position(|c| matches!(c.as_str(), "self" | "clock" | "span"))
        .or((cols.len() > 1).then_some(1))
}

fn section_rows(sa: &Section, sb: &Section) -> Vec<RowDiff> {
    let Some(col) = value_column(sa).filter(|_| sa.table.columns == sb.table.columns) else {
        return Vec::new();
    };
    let what = sa.table.columns[col].clone();
    let value = |s: &Section, key: &str| {
        s.table
            .rows
            .iter()
            .find(|r| r.first().and_then(Value::as_text) == Some(key))
            .and_then(|r| r.get(col))
            .and_then(Value::number)
    };
    let mut keys: Vec<&str> = Vec::new();
    for r in sa.table.rows.iter().chain(&sb.table.rows) {
        if let Some(k) = r.first().and_then(Value::as_text) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    // A column holds one unit; one without numbers is called a count, as before.
    let mut unit = Unit::Count;
    let mut out: Vec<RowDiff> = keys
        .into_iter()
        .map(|k| {
            let (a, b) = (value(sa, k), value(sb, k));
            if let Some((_, u)) = a.or(b) {
                unit = u;
            }
            RowDiff {
                section: sa.title.clone(),
                key: k.to_string(),
                what: what.clone(),
                a: a.map(|v| v.0),
                b: b.map(|v| v.0),
                unit: String::new(),
            }
        })
        .collect();
    let unit = match unit {
        Unit::Ms => "ms",
        Unit::Count => "count",
        Unit::Bytes => "bytes",
        Unit::Percent => "percent",
    };
    for r in &mut out {
        r.unit = unit.to_string();
    }
    out.sort_by(|x, y| y.diff().abs().total_cmp(&x.diff().abs()));
    out.truncate(ROWS_PER_SECTION);
    out
}

/// The successful opens of regular files in a trace: what a build reads.
/// Kernel interfaces (/proc, /sys, /dev) and directories are left out.
pub fn opened_files(trace: &coldstart_core::trace::Trace) -> Vec<String> {
    let mut files: BTreeSet<String> = BTreeSet::new();
    for e in &trace.events {
        if let coldstart_core::trace::Event::Open {
            path,
            ok: true,
            flags,
            ..
        } = &e.event
        {
            let kernel = ["/proc/", "/sys/", "/dev/"].iter().any(|p| path.starts_with(p));
            if !kernel && flags & libc::O_DIRECTORY as u64 == 0 {
                files.insert(path.clone());
            }
        }
    }
    files.into_iter().collect()
}

#[cfg(test)]
#[path = "attribution_tests.rs"]
mod simulation;
