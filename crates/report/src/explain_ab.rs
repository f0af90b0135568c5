//! explain A vs B: the verdict line, the phases by contribution to the total
//! difference, section rows side by side, the files only one build opened.

use super::format::{ms, signed_ms as signed};
use coldstart_explain::attribution::{Attribution, RowDiff};

/// Files named per side before "… N more".
const FILES: usize = 12;

/// A share with one minus sign (−), as every other figure here.
fn percent(x: f64) -> String {
    let r = x.round();
    if r < 0.0 {
        format!("−{:.0} %", -r)
    } else {
        format!("{:.0} %", r + 0.0)
    }
}

fn ci(ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) => format!(" [{}, {}]", signed(lo), signed(hi)),
        None => String::new(),
    }
}

/// The one-line answer: "B is 0.38 ms faster than A: init −0.35 ms [−0.5, −0.2] (92 %); opened only by A: data.txt".
pub fn headline(a: &Attribution) -> String {
    let Some(total) = a.total_ms else {
        return format!("{} vs {}: not enough untraced runs for a difference\n", a.b, a.a);
    };
    let how = if total < 0.0 { "faster" } else { "slower" };
    let interval = ci(a.total_ci_ms).replace(" [", " (95% CI [").replace(']', "])");
    // An interval holding zero is no verdict: say the difference, not "faster".
    let unclear = a.total_ci_ms.is_some_and(|(lo, hi)| lo <= 0.0 && 0.0 <= hi);
    let mut line = if unclear {
        format!(
            "no clear difference: {} − {} = {}{interval}",
            a.b,
            a.a,
            signed(total)
        )
    } else {
        format!("{} is {} {how} than {}{interval}", a.b, ms(total.abs()), a.a)
    };
    match a.named_phase() {
        Some(p) => {
            line += &format!(": {} {}{}", p.name, signed(p.diff_ms), ci(p.ci_ms));
            if let Some(s) = p.share_pct {
                line += &format!(" ({} of it)", percent(s));
            }
        }
        None if !a.phases.is_empty() => line += ": no phase differs clearly",
        None => {}
    }
    if !a.only_a.is_empty() {
        line += &format!("; opened only by {}: {}", a.a, names(&a.only_a, 3));
    }
    if !a.only_b.is_empty() {
        line += &format!("; opened only by {}: {}", a.b, names(&a.only_b, 3));
    }
    line + "\n"
}

fn names(files: &[String], n: usize) -> String {
    let mut s: Vec<String> = files.iter().take(n).map(|f| format!("`{f}`")).collect();
    if files.len() > n {
        s.push(format!("… {} more", files.len() - n));
    }
    s.join(", ")
}

pub fn render(a: &Attribution) -> String {
    let mut out = format!("\ncoldstart explain: {} vs {}\n", a.a, a.b);
    if let (Some(x), Some(y)) = (a.a_untraced_ms, a.b_untraced_ms) {
        out += &format!("untraced medians: {} {} · {} {}\n", a.a, ms(x), a.b, ms(y));
    }
    out += &headline(a);
    for n in &a.notes {
        out += &format!("note: {n}\n");
    }
    let family = format!(
        "{:.0}% CI each, 95% for all {} at once",
        a.phase_confidence * 100.0,
        a.phases.len()
    );
    let what = match a.scale {
        Some(s) => format!(
            "untraced estimates, medians of the traced runs, one scale ×{:.2} for both builds; B − A: Hodges–Lehmann shift [{family}]",
            s.scale
        ),
        None => format!("traced runs; B − A: Hodges–Lehmann shift [{family}]"),
    };
    out += &format!("\nphases, by contribution to the difference ({what})\n");
    let w = a
        .phases
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    out += &format!(
        "  {:w$}  {:>10}  {:>10}  {:>10}  {:<26} share\n",
        "phase", a.a, a.b, "B − A", "CI"
    );
    for p in &a.phases {
        out += &format!(
            "  {:w$}  {:>10}  {:>10}  {:>10}  {:<26} {}\n",
            p.name,
            ms(p.a_ms),
            ms(p.b_ms),
            signed(p.diff_ms),
            ci(p.ci_ms).trim(),
            p.share_pct.map(percent).unwrap_or_default()
        );
    }
    let mut section = "";
    for r in a
        .rows
        .iter()
        .filter(|r| r.diff() != 0.0 || r.section == "processes")
    {
        if r.section != section {
            section = &r.section;
            out += &format!("\n{} ({})\n", r.section, r.what);
        }
        out += &row(r, a);
    }
    if a.rows.iter().any(|r| r.a.is_none() || r.b.is_none()) {
        out += "  (—: not among that build's rows: a runtime's table lists its top rows only)\n";
    }
    for (who, files) in [(&a.a, &a.only_a), (&a.b, &a.only_b)] {
        if files.is_empty() {
            continue;
        }
        out += &format!("\nopened only by {who} ({})\n", files.len());
        for f in files.iter().take(FILES) {
            out += &format!("  {f}\n");
        }
        if files.len() > FILES {
            out += &format!("  … {} more\n", files.len() - FILES);
        }
    }
    out
}

fn row(r: &RowDiff, a: &Attribution) -> String {
    let cell = |v: Option<f64>| match (v, r.unit.as_str()) {
        (None, _) => "—".to_string(),
        (Some(x), "ms") => ms(x),
        (Some(x), _) => format!("{x:.0}"),
    };
    let d = r.diff();
    let diff = if r.unit == "ms" {
        signed(d)
    } else {
        // One minus sign (−) everywhere, as the durations.
        if d < 0.0 {
            format!("−{:.0}", -d)
        } else {
            format!("+{d:.0}")
        }
    };
    format!(
        "  {:<40}  {}: {:>9}  {}: {:>9}  {:>10}\n",
        r.key,
        a.a,
        cell(r.a),
        a.b,
        cell(r.b),
        diff
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_explain::attribution::PhaseDiff;

    fn att(total: f64, ci: (f64, f64)) -> Attribution {
        Attribution {
            schema: coldstart_explain::attribution::SCHEMA.into(),
            scale: None,
            phase_confidence: 0.95,
            a: "A".into(),
            b: "B".into(),
            a_untraced_ms: Some(2.0),
            b_untraced_ms: Some(1.62),
            total_ms: Some(total),
            total_ci_ms: Some(ci),
            phases: vec![PhaseDiff {
                name: "init".into(),
                a_ms: 0.5,
                b_ms: 0.15,
                diff_ms: -0.35,
                ci_ms: Some((-0.5, -0.2)),
                share_pct: Some(92.0),
            }],
            estimated: true,
            rows: Vec::new(),
            only_a: vec!["handler.ts".into()],
            only_b: Vec::new(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn the_headline_names_the_phase_its_share_and_the_file() {
        let h = headline(&att(-0.38, (-0.5, -0.25)));
        assert!(
            h.starts_with("B is 380 µs faster than A (95% CI [−500 µs, −250 µs])"),
            "{h}"
        );
        assert!(h.contains("init −350 µs [−500 µs, −200 µs] (92 % of it)"), "{h}");
        assert!(h.contains("opened only by A: `handler.ts`"), "{h}");
    }

    #[test]
    fn an_interval_holding_zero_is_no_verdict() {
        let h = headline(&att(-0.38, (-0.9, 0.1)));
        assert!(h.starts_with("no clear difference: B − A = −380 µs"), "{h}");
        assert!(!h.contains("faster"), "{h}");
    }
}
