//! The table the engineers wrote by hand: one row per candidate with its
//! measured effect against the baseline (the comparison's verdict, CI and
//! power), how to apply it, and a recommended set with its combined effect.
//! The same rows render for the terminal, Markdown and JSON.

use super::catalogue::Candidate;
use crate::analysis::VariantAnalysis;
use crate::format::{detectable, ms, signed_ms};
use crate::stats::{Comparison, Verdict};
use serde::{Deserialize, Serialize};

/// How a candidate came out.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Status {
    /// Significantly faster beyond the noise threshold.
    Faster,
    Slower,
    /// No difference shown (CI includes 0, or within the noise threshold).
    Same,
    /// Faster or not, it moves work to the first request (or that got slower).
    Caution,
    /// No verdict (too few runs).
    NoVerdict,
    /// Set-up, the check run or a measured run failed: never fast.
    Broken {
        why: String,
    },
    /// Not for this runtime version, or advice only.
    Unavailable {
        why: String,
    },
    /// The command cannot take it (flags with a wrapper).
    NotApplicable {
        why: String,
    },
    /// Ctrl-C came first.
    NotMeasured,
}

/// One candidate's row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub id: String,
    pub title: String,
    pub status: Status,
    /// The comparison's verdict on ready (faster, slower, ~, no verdict), when measured.
    pub ready_verdict: Option<String>,
    /// Median shift of ready, ms (candidate − baseline), with its 95 % CI.
    pub shift_ms: Option<f64>,
    pub shift_ci_ms: Option<(f64, f64)>,
    /// The same relative to the baseline median.
    pub relative: Option<f64>,
    pub relative_ci: Option<(f64, f64)>,
    /// The power line: the smallest shift this experiment could detect.
    pub detectable: Option<String>,
    /// First request: median candidate − median baseline, ms (with --requests).
    pub first_request_delta_ms: Option<f64>,
    /// Peak RSS: median candidate − median baseline, MiB.
    pub peak_rss_delta_mb: Option<f64>,
    pub runs: usize,
    pub failed_runs: usize,
    /// How to apply it permanently, and what it needed.
    pub apply: String,
    pub what: String,
    pub why: String,
    pub risks: String,
    pub source: String,
}

impl Row {
    /// A row from the catalogue alone (not measured).
    pub fn unmeasured(c: &Candidate, status: Status) -> Row {
        Row {
            id: c.id.clone(),
            title: c.title.clone(),
            status,
            ready_verdict: None,
            shift_ms: None,
            shift_ci_ms: None,
            relative: None,
            relative_ci: None,
            detectable: None,
            first_request_delta_ms: None,
            peak_rss_delta_mb: None,
            runs: 0,
            failed_runs: 0,
            apply: c.apply.clone(),
            what: c.what.clone(),
            why: c.why.clone(),
            risks: c.risks.clone(),
            source: c.source.clone(),
        }
    }

    /// A measured row: the comparison against the baseline decides.
    pub fn measured(c: &Candidate, v: &VariantAnalysis, base: &VariantAnalysis) -> Row {
        let mut row = Row::unmeasured(c, Status::NoVerdict);
        row.runs = v.ok_runs;
        row.failed_runs = v.failed_runs;
        let delta =
            |a: Option<&crate::stats::Summary>, b: Option<&crate::stats::Summary>| Some(a?.p50 - b?.p50);
        row.first_request_delta_ms = delta(v.first_request_ms.as_ref(), base.first_request_ms.as_ref());
        row.peak_rss_delta_mb = delta(v.peak_rss_mb.as_ref(), base.peak_rss_mb.as_ref());
        if let Some(cmp) = &v.vs_baseline {
            fill(&mut row, cmp);
            row.ready_verdict = Some(cmp.verdict.to_string());
        }
        row.status = if v.failed_runs > 0 {
            Status::Broken {
                why: format!(
                    "{} of {} measured runs failed",
                    v.failed_runs,
                    v.failed_runs + v.ok_runs
                ),
            }
        } else {
            let verdict = v.vs_baseline.as_ref().map_or(Verdict::None, |c| c.verdict);
            let base_first = base.first_request_ms.as_ref().map(|s| s.p50);
            // A first request slower by more than 5 % of the baseline's (and 1 ms).
            let first_worse = match (row.first_request_delta_ms, base_first) {
                (Some(d), Some(b)) => d > (0.05 * b).max(1.0),
                _ => false,
            };
            match verdict {
                _ if c.shifts_work || (first_worse && verdict == Verdict::Faster) => Status::Caution,
                Verdict::Faster => Status::Faster,
                Verdict::Slower => Status::Slower,
                Verdict::Same | Verdict::WithinNoise => Status::Same,
                Verdict::None => Status::NoVerdict,
            }
        };
        row
    }
}

fn fill(row: &mut Row, cmp: &Comparison) {
    if let Some(s) = &cmp.shift {
        row.shift_ms = Some(s.estimate);
        row.shift_ci_ms = s.ci;
    }
    if let Some(r) = &cmp.relative {
        row.relative = Some(r.estimate);
        row.relative_ci = r.ci;
    }
    row.detectable = detectable(cmp);
}

/// The recommended set: the significant winners that go together, measured as one variant.
#[derive(Debug, Clone, Serialize)]
pub struct Recommended {
    pub ids: Vec<String>,
    /// The baseline command with the set applied, as a shell line.
    pub command: String,
    /// Variables to set (KEY=VALUE), also in `command`'s environment.
    pub env: Vec<String>,
    /// Training runs to do once before (for archives and caches), as shell lines.
    pub train: Vec<String>,
    /// Why the set is smaller than the winners (their combination broke or did not help).
    pub note: Option<String>,
    /// Its own measured effect (a second, short experiment when it has more than one member).
    pub row: Option<Row>,
}

/// Everything tune found.
#[derive(Debug, Clone, Serialize)]
pub struct Tuned {
    pub runtime: String,
    pub executable: String,
    pub version: Option<String>,
    pub baseline: String,
    pub baseline_ready_ms: Option<f64>,
    pub noise: f64,
    pub rows: Vec<Row>,
    pub recommended: Option<Recommended>,
    /// Experiments as stored (ids), when stored.
    pub experiments: Vec<i64>,
    pub interrupted: bool,
}

pub fn icon(s: &Status) -> &'static str {
    match s {
        Status::Faster => "✅",
        Status::Slower | Status::Same | Status::NoVerdict => "❌",
        Status::Caution => "⚠️",
        Status::Broken { .. } => "💥",
        Status::Unavailable { .. } | Status::NotApplicable { .. } | Status::NotMeasured => "·",
    }
}

fn percent(x: f64) -> String {
    let s = format!("{:+.0} %", x * 100.0);
    s.replacen('-', "−", 1)
}

/// The effect column: `−4.50 s (−52 %) [−57, −44 %]`, `~ (−0.5 s, CI includes 0)`.
pub fn effect(r: &Row) -> String {
    let span = |r: &Row| {
        let ci = r
            .relative_ci
            .map(|(lo, hi)| {
                format!(
                    " [{}, {} %]",
                    format!("{:+.0}", lo * 100.0).replacen('-', "−", 1),
                    format!("{:+.0}", hi * 100.0).replacen('-', "−", 1)
                )
            })
            .unwrap_or_default();
        match (r.shift_ms, r.relative) {
            (Some(s), Some(rel)) => format!("{} ({}){ci}", signed_ms(s), percent(rel)),
            (Some(s), None) => format!("{}{ci}", signed_ms(s)),
            _ => "no data".to_string(),
        }
    };
    // What ready does not show: the first request's change (with --requests), and a
    // peak-RSS growth of 5 MiB or more (memory some optimizations trade for time).
    let first = || {
        let mut s = r
            .first_request_delta_ms
            .map(|d| format!("; first request {}", signed_ms(d)))
            .unwrap_or_default();
        if let Some(mb) = r.peak_rss_delta_mb.filter(|mb| *mb >= 5.0) {
            s.push_str(&format!("; peak RSS +{mb:.1} MiB"));
        }
        s
    };
    match &r.status {
        Status::Faster | Status::Slower => format!("{}{}", span(r), first()),
        Status::Same => {
            let why = if r.relative_ci.is_some_and(|(lo, hi)| lo <= 0.0 && hi >= 0.0) {
                "CI includes 0"
            } else {
                "within the noise threshold"
            };
            match r.shift_ms {
                Some(s) => format!("~ ({}, {why}){}", signed_ms(s), first()),
                None => "~".to_string(),
            }
        }
        Status::Caution => {
            let significant = matches!(r.ready_verdict.as_deref(), Some("faster" | "slower"));
            let at_ready = match r.shift_ms {
                Some(s) if significant => format!("{} at ready", signed_ms(s)),
                Some(s) => format!("~ at ready ({})", signed_ms(s)),
                None => "at ready: no data".to_string(),
            };
            let later = match r.first_request_delta_ms {
                Some(_) => first(),
                None => "; moves work to the first request: measure it with --requests 1".to_string(),
            };
            format!("{at_ready}{later}")
        }
        Status::NoVerdict => "no verdict (too few runs)".to_string(),
        Status::Broken { why } => format!("broken: {}", first_line(why)),
        Status::Unavailable { why } | Status::NotApplicable { why } => why.clone(),
        Status::NotMeasured => "not measured (interrupted)".to_string(),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The terminal table (and the recommended line).
pub fn terminal(t: &Tuned) -> String {
    let mut out = format!(
        "tune: {} {}({}) · baseline {}{}\n",
        t.runtime,
        t.version.as_deref().map(|v| format!("{v} ")).unwrap_or_default(),
        t.executable,
        t.baseline,
        t.baseline_ready_ms
            .map(|m| format!(" · ready {}", ms(m)))
            .unwrap_or_default()
    );
    let width = t.rows.iter().map(|r| r.title.chars().count()).max().unwrap_or(0);
    for r in &t.rows {
        let pad = " ".repeat(width - r.title.chars().count());
        let apply = match r.status {
            Status::Faster | Status::Caution => format!("   apply: {}", r.apply),
            _ => String::new(),
        };
        out.push_str(&format!(
            "{} {}{pad}   {}{apply}\n",
            icon(&r.status),
            r.title,
            effect(r)
        ));
        if let Status::Broken { why } = &r.status {
            for line in why.lines().skip(1) {
                out.push_str(&format!("      {line}\n"));
            }
        }
    }
    if let Some(d) = t.rows.iter().find_map(|r| r.detectable.as_ref()) {
        out.push_str(&format!(
            "power: {d} (noise threshold ±{:.0} %)\n",
            t.noise * 100.0
        ));
    }
    out.push_str(&recommended_line(t));
    if t.interrupted {
        out.push_str("interrupted: the rows above are what finished\n");
    }
    out
}

pub fn recommended_line(t: &Tuned) -> String {
    match &t.recommended {
        // Drawn again from the store: the set is the next experiment's.
        None if t.rows.iter().any(|r| r.status == Status::Faster) => {
            "recommended set: the winners together are measured in tune's next experiment\n".into()
        }
        None => {
            "recommended set: none — no candidate helped significantly; keep the command as it is\n".into()
        }
        Some(rec) => {
            let eff = rec
                .row
                .as_ref()
                .map_or_else(|| "not measured".to_string(), effect);
            let mut s = format!(
                "recommended set: {} — {eff}\n  run: {}\n",
                rec.ids.join(" + "),
                rec.command
            );
            if let Some(n) = &rec.note {
                s.push_str(&format!("  note: {n}\n"));
            }
            for line in &rec.train {
                s.push_str(&format!("  train once: {line}\n"));
            }
            if !rec.env.is_empty() {
                s.push_str(&format!("  env: {}\n", rec.env.join(" ")));
            }
            s
        }
    }
}

/// The same table in Markdown, with each candidate's rationale and source.
pub fn markdown(t: &Tuned) -> String {
    let mut out = format!(
        "## coldstart tune: {} {}\n\nBaseline: `{}`{}\n\n| | candidate | effect on ready | apply |\n|---|---|---|---|\n",
        t.runtime,
        t.version.as_deref().unwrap_or(""),
        t.baseline,
        t.baseline_ready_ms
            .map(|m| format!(", ready {}", ms(m)))
            .unwrap_or_default()
    );
    for r in &t.rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            icon(&r.status),
            r.title,
            effect(r).replace('|', "\\|").replace('\n', " "),
            r.apply.replace('|', "\\|")
        ));
    }
    out.push('\n');
    out.push_str(&recommended_line(t));
    out.push_str("\n### Candidates\n\n");
    for r in &t.rows {
        out.push_str(&format!(
            "- **{}** (`{}`): {} {} Risks: {} [source]({})\n",
            r.title, r.id, r.what, r.why, r.risks, r.source
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, status: Status, shift: Option<f64>, rel_ci: Option<(f64, f64)>) -> Row {
        let c = Candidate {
            id: id.into(),
            title: id.into(),
            apply: format!("use {id}"),
            ..Candidate::default()
        };
        let mut r = Row::unmeasured(&c, status);
        r.shift_ms = shift;
        r.relative = shift.map(|s| s / 1000.0);
        r.relative_ci = rel_ci;
        r
    }

    #[test]
    fn the_table_reads_as_the_engineers_wrote_it() {
        let mut lazy = row("lazy", Status::Caution, Some(-3.0), Some((-0.01, 0.004)));
        lazy.ready_verdict = Some("~".into());
        lazy.first_request_delta_ms = Some(180.0);
        let t = Tuned {
            runtime: "jvm".into(),
            executable: "/x/java".into(),
            version: Some("17".into()),
            baseline: "java -jar app.jar".into(),
            baseline_ready_ms: Some(1000.0),
            noise: 0.01,
            rows: vec![
                row("appcds", Status::Faster, Some(-520.0), Some((-0.57, -0.44))),
                row("serial", Status::Same, Some(-5.0), Some((-0.02, 0.01))),
                lazy,
                row(
                    "bad",
                    Status::Broken {
                        why: "exited 2\n  | boom".into(),
                    },
                    None,
                    None,
                ),
            ],
            recommended: Some(Recommended {
                ids: vec!["appcds".into()],
                command: "java -XX:SharedArchiveFile=app.jsa -jar app.jar".into(),
                env: vec![],
                train: vec!["java -XX:ArchiveClassesAtExit=app.jsa -jar app.jar".into()],
                note: None,
                row: None,
            }),
            experiments: vec![],
            interrupted: false,
        };
        let out = terminal(&t);
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[1].starts_with("✅ appcds") && lines[1].contains("(−52 %) [−57, −44 %]"),
            "{out}"
        );
        assert!(lines[1].contains("apply: use appcds"), "{out}");
        assert!(
            lines[2].starts_with("❌ serial")
                && lines[2].contains("~ (")
                && lines[2].contains("CI includes 0"),
            "{out}"
        );
        assert!(
            lines[3].starts_with("⚠️ lazy")
                && lines[3].contains("~ at ready")
                && lines[3].contains("first request +180"),
            "{out}"
        );
        assert!(
            lines[4].starts_with("💥 bad") && lines[5].contains("| boom"),
            "{out}"
        );
        assert!(
            out.contains("recommended set: appcds")
                && out.contains("train once: java -XX:ArchiveClassesAtExit"),
            "{out}"
        );
        let md = markdown(&t);
        assert!(md.contains("| ✅ | appcds |") && md.contains("[source]("), "{md}");
    }
}
