//! tune's table for people: the terminal and Markdown renderings of what tune found
//! (crates/tune holds the rows, their statuses and the recommended set).

use crate::format::{detectable_line, ms, signed_ms};
use coldstart_tune::report::{Rejected, Row, Status, Tuned};

pub fn icon(s: &Status) -> &'static str {
    match s {
        Status::Faster => "✅",
        Status::Slower | Status::NoGain => "❌",
        // Could not tell: never ❌, which says the data rule a gain out.
        Status::Inconclusive { .. } | Status::NoVerdict => "❔",
        Status::Caution => "⚠️",
        Status::Broken { .. } => "💥",
        Status::Unavailable { .. } | Status::NotApplicable { .. } | Status::NotMeasured => "·",
    }
}

fn percent(x: f64) -> String {
    format!("{} %", signed_percent(x))
}

/// `−52`, `+0.8`: a decimal below 10 %, where the ±1 % noise threshold is decided.
fn signed_percent(x: f64) -> String {
    let p = x * 100.0;
    let s = if p.abs() < 10.0 {
        format!("{p:+.1}")
    } else {
        format!("{p:+.0}")
    };
    s.replacen('-', "−", 1)
}

/// The effect column: `−4.50 s (−52 %) [−57, −44 %]`, `no gain: −0.50 ms (−0.4 %) [−0.9, +0.2 %] …`.
pub fn effect(r: &Row) -> String {
    let span = |r: &Row| {
        let ci = r
            .relative_ci
            .map(|(lo, hi)| format!(" [{}, {} %]", signed_percent(lo), signed_percent(hi)))
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
        Status::NoGain => format!(
            "no gain: {} (a gain beyond the noise threshold is ruled out){}",
            span(r),
            first()
        ),
        Status::Inconclusive { could_detect, .. } => {
            let power = could_detect
                .map(|d| format!(", could detect ≥ {}", percent(d).trim_start_matches('+')))
                .unwrap_or_default();
            format!("inconclusive: {}{power}{}", span(r), first())
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
                None => "; moves work to the first request: measure it with --requests 1 --request-url URL (a real page)".to_string(),
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
        "tune: {} {}({}){} · baseline {}{}\n",
        t.runtime,
        t.version.as_deref().map(|v| format!("{v} ")).unwrap_or_default(),
        t.executable,
        t.app.as_deref().map(|a| format!(" · {a}")).unwrap_or_default(),
        t.baseline,
        t.baseline_ready_ms
            .map(|m| format!(" · ready {}", ms(m)))
            .unwrap_or_default()
    );
    if let Some(f) = t.baseline_first_request_ms {
        // Before the newline: the header stays one line.
        out.pop();
        out.push_str(&format!(" · first request {}\n", ms(f)));
    }
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
            "power: {} (noise threshold ±{:.0} %)\n",
            detectable_line(d),
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
    let open = inconclusive(t);
    match &t.recommended {
        // Drawn again from the store: the set is the next experiment's.
        None if t.rows.iter().any(|r| r.status == Status::Faster) => {
            let mut s = "recommended set: the winners together are measured in tune's next experiment\n".to_string();
            if let Some(o) = open {
                s.push_str(&format!("  also {o}\n"));
            }
            s
        }
        None => match open {
            // Not "keep the command as it is": the runs could not tell.
            Some(o) => format!("recommended set: none yet — {o}\n"),
            None if t
                .rows
                .iter()
                .any(|r| matches!(r.status, Status::NoGain | Status::Slower)) =>
            {
                "recommended set: none — every measured candidate is ruled out (no gain beyond the noise threshold, or slower); keep the command as it is\n".into()
            }
            // Nothing ran: "not shown to help" would suggest something was tried.
            None if t.rows.iter().all(|r| {
                matches!(
                    r.status,
                    Status::Unavailable { .. } | Status::NotApplicable { .. } | Status::NotMeasured
                )
            }) =>
            {
                "recommended set: none — no candidate was measured\n".into()
            }
            None => "recommended set: none — no candidate was shown to help\n".into(),
        },
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
            if let Some(n) = rec.rejected.as_ref().map(rejected) {
                s.push_str(&format!("  note: {n}\n"));
            }
            for line in &rec.train {
                s.push_str(&format!("  set up once: {line}\n"));
            }
            // (A function's set is its environment: the run line says it already.)
            if !rec.env.is_empty() && !rec.command.ends_with(&rec.env.join(" ")) {
                s.push_str(&format!("  env: {}\n", rec.env.join(" ")));
            }
            for c in &rec.caveats {
                s.push_str(&format!("  caveat: {c}\n"));
            }
            if let Some(o) = open {
                s.push_str(&format!("  also {o}\n"));
            }
            s
        }
    }
}

/// The candidates the runs could not decide, and how many runs would: `inconclusive:
/// a, b could still help (this run could detect only ≥ 46 %); run more (--max-runs
/// 240 --budget 2900: about 240 runs per variant would detect 20 %)`. None when
/// every measured candidate was decided.
pub fn inconclusive(t: &Tuned) -> Option<String> {
    let open: Vec<&Row> = t
        .rows
        .iter()
        .filter(|r| matches!(r.status, Status::Inconclusive { .. } | Status::NoVerdict))
        .collect();
    if open.is_empty() {
        return None;
    }
    let ids: Vec<&str> = open.iter().map(|r| r.id.as_str()).collect();
    // The one whose interval still holds the largest gain speaks for them all.
    let lead = open
        .iter()
        .filter_map(|r| match &r.status {
            Status::Inconclusive {
                could_detect,
                goal,
                runs_for_goal,
            } => Some((
                r.relative_ci.map_or(0.0, |c| c.0),
                *could_detect,
                *goal,
                *runs_for_goal,
            )),
            _ => None,
        })
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let power = lead
        .and_then(|l| l.1)
        .map(|d| {
            format!(
                " (this run could detect only ≥ {})",
                percent(d).trim_start_matches('+')
            )
        })
        .unwrap_or_else(|| " (too few runs for a verdict)".to_string());
    let more = match lead.and_then(|l| Some((l.2?, l.3?))) {
        Some((goal, runs)) => {
            // A --budget only when this one would stop the runs short.
            let budget = t
                .pace
                .as_ref()
                .map(|p| ((runs + p.warmup) as f64 * p.round_s).ceil().max(1.0))
                .filter(|need| t.pace.as_ref().is_some_and(|p| *need > p.budget_s))
                .map(|need| format!(" --budget {need:.0}"))
                .unwrap_or_default();
            let flag = t.pace.as_ref().map_or("--max-runs", |p| p.runs_flag);
            format!(
                "{flag} {runs}{budget}: about {runs} runs per variant would detect {}",
                percent(goal).trim_start_matches('+')
            )
        }
        None => "raise --max-runs and --budget".to_string(),
    };
    Some(format!(
        "inconclusive: {} could still help{power}; run more ({more})",
        ids.join(", ")
    ))
}

/// The same table in Markdown, with each candidate's rationale and source.
pub fn markdown(t: &Tuned) -> String {
    let mut out = format!(
        "## coldstart tune: {} {}\n\n{}Baseline: `{}`{}\n\n| | candidate | effect on ready | apply |\n|---|---|---|---|\n",
        t.runtime,
        t.version.as_deref().unwrap_or(""),
        t.app.as_deref().map(|a| format!("Application: {a}. ")).unwrap_or_default(),
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

/// Why the recommended set is smaller than the winners: the next larger set, what
/// it did, and (measured) its step against the set recommended.
pub fn rejected(r: &Rejected) -> String {
    let smaller = r.smaller.join(" + ");
    match (&r.step, smaller.is_empty()) {
        (Some(step), false) => {
            // An undecided step is not shown better, which is not "not better".
            let verdict = match step.status {
                Status::Inconclusive { .. } | Status::NoVerdict => "not shown better (run more to tell)",
                _ => "not better",
            };
            format!(
                "{} was measured too: {}; against {smaller} alone {} — {verdict}, so the set stops at {smaller}",
                r.ids.join(" + "),
                effect(&r.row),
                effect(step)
            )
        }
        (None, false) => format!(
            "{} together: {}; the set stops at {smaller}",
            r.ids.join(" + "),
            effect(&r.row)
        ),
        _ => format!(
            "{} together: {}; the best single one is recommended",
            r.ids.join(" + "),
            effect(&r.row)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_core::stats::{compare, CompareOptions};
    use coldstart_core::stats::{Comparison, Verdict};
    use coldstart_tune::catalogue::Candidate;
    use coldstart_tune::report::{classify, fill, Pace, Recommended};

    /// `n` times around `center` ms, spread ±`spread` (a fraction), deterministic.
    fn times(n: usize, center: f64, spread: f64, seed: usize) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let u = ((i * 7919 + seed * 104_729) % 1000) as f64 / 999.0; // in [0, 1]
                center * (1.0 + spread * (2.0 * u - 1.0))
            })
            .collect()
    }

    /// Six runs a side, ±30 % around the same median.
    fn wide() -> (Vec<f64>, Vec<f64>) {
        (
            vec![70.0, 130.0, 95.0, 110.0, 85.0, 120.0],
            vec![125.0, 75.0, 105.0, 90.0, 115.0, 80.0],
        )
    }

    fn classified(base: &[f64], cand: &[f64]) -> (Status, Comparison) {
        let cmp = compare(base, cand, CompareOptions::default());
        (classify(Some(&cmp), false, false), cmp)
    }

    fn measured_row(id: &str, base: &[f64], cand: &[f64]) -> Row {
        let c = Candidate {
            id: id.into(),
            title: id.into(),
            ..Candidate::default()
        };
        let (status, cmp) = classified(base, cand);
        let mut r = Row::unmeasured(&c, status);
        fill(&mut r, &cmp);
        r.ready_verdict = Some(cmp.verdict.to_string());
        r
    }

    fn tuned(rows: Vec<Row>) -> Tuned {
        Tuned {
            runtime: "python".into(),
            executable: "/x/python3".into(),
            version: None,
            app: None,
            baseline: "python3 -c pass".into(),
            baseline_ready_ms: Some(100.0),
            baseline_first_request_ms: None,
            noise: 0.01,
            rows,
            recommended: None,
            experiments: vec![],
            interrupted: false,
            pace: Some(Pace {
                round_s: 0.25,
                warmup: 1,
                budget_s: 1.0,
                runs_flag: "--max-runs",
            }),
        }
    }

    #[test]
    fn a_tight_interval_around_zero_is_measured_no_gain() {
        // 200 runs a side, ±0.2 % spread: the interval's faster end is far inside −1 %.
        let (status, cmp) = classified(&times(200, 100.0, 0.002, 1), &times(200, 100.0, 0.002, 2));
        let (lo, _) = cmp.relative.as_ref().and_then(|r| r.ci).unwrap();
        assert!(lo > -0.01, "{cmp:?}");
        assert_eq!(status, Status::NoGain);
        assert_eq!(icon(&status), "❌");
        // A real but tiny gain (0.5 %, inside the noise threshold) is no gain worth having too.
        let (status, cmp) = classified(&times(200, 100.0, 0.002, 1), &times(200, 99.5, 0.002, 2));
        assert_eq!(cmp.verdict, Verdict::WithinNoise, "{cmp:?}");
        assert_eq!(status, Status::NoGain);
        let t = tuned(vec![measured_row(
            "same",
            &times(200, 100.0, 0.002, 1),
            &times(200, 100.0, 0.002, 2),
        )]);
        let line = recommended_line(&t);
        assert!(line.contains("keep the command as it is"), "{line}");
        assert!(
            effect(&t.rows[0]).starts_with("no gain: "),
            "{}",
            effect(&t.rows[0])
        );
    }

    #[test]
    fn a_wide_interval_is_inconclusive_never_keep_as_is() {
        // 6 runs a side, ±30 % spread: the CI holds 0 and a large gain alike.
        let (base, cand) = wide();
        let (status, cmp) = classified(&base, &cand);
        assert_eq!(cmp.verdict, Verdict::Same, "{cmp:?}");
        let Status::Inconclusive {
            could_detect: Some(d),
            ..
        } = status
        else {
            panic!("{status:?}");
        };
        assert!(d > 0.1, "{d}");
        assert_eq!(icon(&status), "❔");
        let t = tuned(vec![measured_row("wide", &base, &cand)]);
        let row = effect(&t.rows[0]);
        assert!(
            row.starts_with("inconclusive: ") && row.contains("could detect ≥ "),
            "{row}"
        );
        let line = recommended_line(&t);
        assert!(!line.contains("keep the command as it is"), "{line}");
        assert!(
            line.starts_with("recommended set: none yet — inconclusive: wide could still help")
                && line.contains("run more (--max-runs ")
                && line.contains(" --budget ")
                && line.contains("runs per variant would detect"),
            "{line}"
        );
        // The budget is what those runs cost at the measured pace.
        let Status::Inconclusive {
            runs_for_goal: Some(n),
            ..
        } = &t.rows[0].status
        else {
            panic!("{:?}", t.rows[0].status);
        };
        let budget = ((n + 1) as f64 * 0.25).ceil();
        assert!(
            line.contains(&format!("--max-runs {n} --budget {budget:.0}:")),
            "{line}"
        );
        // Too few runs for any interval: inconclusive too, never ❌.
        let (status, _) = classified(&[100.0], &[90.0]);
        assert_eq!(status, Status::NoVerdict);
        assert_eq!(icon(&status), "❔");
        assert!(
            recommended_line(&tuned(vec![Row::unmeasured(&Candidate::default(), status)]))
                .contains("none yet — inconclusive")
        );
    }

    #[test]
    fn a_clear_win_is_faster_and_a_clear_loss_slower() {
        let base = times(20, 100.0, 0.05, 1);
        let (status, _) = classified(&base, &times(20, 70.0, 0.05, 2));
        assert_eq!(status, Status::Faster);
        assert_eq!(icon(&status), "✅");
        let (status, _) = classified(&base, &times(20, 130.0, 0.05, 2));
        assert_eq!(status, Status::Slower);
        assert_eq!(icon(&status), "❌");
        // Moving work to the first request outranks any verdict at ready.
        let cmp = compare(&base, &times(20, 70.0, 0.05, 2), CompareOptions::default());
        assert_eq!(classify(Some(&cmp), false, true), Status::Caution);
        assert_eq!(classify(None, true, false), Status::Caution);
        // A winner with an inconclusive neighbour: the set, and what is left open.
        let t = tuned(vec![
            measured_row("win", &base, &times(20, 70.0, 0.05, 2)),
            measured_row("wide", &wide().0, &wide().1),
        ]);
        let line = recommended_line(&t);
        assert!(
            line.contains("also inconclusive: wide could still help"),
            "{line}"
        );
    }

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

    /// Nothing measured is said as such, not as "not shown to help".
    #[test]
    fn no_candidate_measured_is_not_no_candidate_helped() {
        let unmeasured = tuned(vec![row(
            "static",
            Status::Unavailable {
                why: "advice only".into(),
            },
            None,
            None,
        )]);
        assert_eq!(
            recommended_line(&unmeasured),
            "recommended set: none — no candidate was measured\n"
        );
        let broken = tuned(vec![row(
            "b",
            Status::Broken { why: "exit 2".into() },
            None,
            None,
        )]);
        assert_eq!(
            recommended_line(&broken),
            "recommended set: none — no candidate was shown to help\n"
        );
    }

    /// A set that stops at an undecided step says so; only a decided one is "not better".
    #[test]
    fn an_undecided_step_is_not_shown_better_not_not_better() {
        let undecided = Status::Inconclusive {
            could_detect: Some(0.4),
            goal: None,
            runs_for_goal: None,
        };
        let stop = |status: Status| {
            rejected(&coldstart_tune::report::Rejected {
                ids: vec!["a".into(), "b".into()],
                row: row("a+b", Status::Faster, Some(-300.0), Some((-0.5, -0.2))),
                smaller: vec!["a".into()],
                step: Some(row("a+b", status, Some(-50.0), Some((-0.3, 0.1)))),
            })
        };
        let open = stop(undecided);
        assert!(
            open.contains("— not shown better (run more to tell), so the set stops at a"),
            "{open}"
        );
        let settled = stop(Status::NoGain);
        assert!(
            settled.contains("— not better, so the set stops at a"),
            "{settled}"
        );
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
            app: None,
            baseline: "java -jar app.jar".into(),
            baseline_ready_ms: Some(1000.0),
            baseline_first_request_ms: Some(52.0),
            noise: 0.01,
            rows: vec![
                row("appcds", Status::Faster, Some(-520.0), Some((-0.57, -0.44))),
                row("serial", Status::NoGain, Some(-5.0), Some((-0.008, 0.01))),
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
                caveats: vec!["a caveat".into()],
                rejected: None,
                row: None,
            }),
            experiments: vec![],
            interrupted: false,
            pace: None,
        };
        let out = terminal(&t);
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].ends_with("· ready 1.00 s · first request 52.0 ms"),
            "{out}"
        );
        assert!(
            lines[1].starts_with("✅ appcds") && lines[1].contains("(−52 %) [−57, −44 %]"),
            "{out}"
        );
        assert!(lines[1].contains("apply: use appcds"), "{out}");
        assert!(
            lines[2].starts_with("❌ serial")
                && lines[2].contains("no gain: −5.00 ms")
                && lines[2].contains("[−0.8, +1.0 %]"),
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
                && out.contains("set up once: java -XX:ArchiveClassesAtExit")
                && out.contains("\n  caveat: a caveat\n"),
            "{out}"
        );
        let md = markdown(&t);
        assert!(md.contains("| ✅ | appcds |") && md.contains("[source]("), "{md}");
    }
}
