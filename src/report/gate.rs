//! The gate's Markdown table, fit for a pull-request comment.

use super::format::{ms, p_value};
use crate::gate::{GateRow, Status, Thresholds};

pub fn render(rows: &[GateRow], t: Thresholds, baseline: i64, candidate: i64) -> String {
    let mut out = format!(
        "### coldstart gate: experiment {candidate} vs baseline {baseline}\n\n\
         | target | baseline p50 | candidate p50 | change [95% CI] | p | verdict | status |\n\
         |:--|--:|--:|--:|--:|:--|:--|\n"
    );
    for r in rows {
        let change = r
            .comparison
            .ratio
            .as_ref()
            .map(|x| {
                format!(
                    "{:+.1}% [{:+.1}%, {:+.1}%]",
                    (x.estimate - 1.0) * 100.0,
                    (x.ci.0 - 1.0) * 100.0,
                    (x.ci.1 - 1.0) * 100.0
                )
            })
            .unwrap_or_else(|| "too few runs".into());
        let p = r
            .comparison
            .mann_whitney
            .as_ref()
            .map(|m| p_value(m.p_value))
            .unwrap_or_default();
        let status = match r.status {
            Status::Pass => "✅ pass",
            Status::Warn => "⚠️ warn",
            Status::Fail => "❌ fail",
        };
        out.push_str(&format!(
            "| {} | {} (n={}) | {} (n={}) | {change} | {p} | {} | {status} |\n",
            r.target.replace('|', "\\|"),
            r.baseline_p50_ms.map(ms).unwrap_or_else(|| "—".into()),
            r.baseline_runs,
            r.candidate_p50_ms.map(ms).unwrap_or_else(|| "—".into()),
            r.candidate_runs,
            r.comparison.verdict,
        ));
    }
    let warn = t
        .warn
        .map(|w| format!(", warn beyond +{:.1}%", w * 100.0))
        .unwrap_or_default();
    out.push_str(&format!(
        "\nFail: significantly slower with the whole CI beyond +{:.1}%{warn}. `~`: no significant difference.\n",
        t.fail * 100.0
    ));
    out
}
