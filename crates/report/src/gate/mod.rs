//! The gate's Markdown table, fit for a pull-request comment: one row per target,
//! then the reasons behind every status that is not a plain pass.

pub mod rules;
pub use rules::*;

use super::format::{comparison, ms, signed_percent};
pub use crate::gate::{GateRow, Status};

pub fn render(rows: &[GateRow], baseline: Option<i64>, candidate: i64) -> String {
    let against = baseline.map_or_else(
        || " (no baseline: absolute limits)".to_string(),
        |b| format!(" vs baseline {b}"),
    );
    let mut out = format!(
        "### coldstart gate: experiment {candidate}{against}\n\n\
         | target | baseline p50 | candidate p50 | change [95% CI] | limits | status |\n\
         |:--|--:|--:|--:|:--|:--|\n"
    );
    for r in rows {
        let c = &r.comparison;
        let change = match &c.relative {
            Some(rel) => match rel.ci {
                Some((lo, hi)) => format!(
                    "{} [{}, {}]",
                    signed_percent(rel.estimate),
                    signed_percent(lo),
                    signed_percent(hi)
                ),
                None => format!("{} (estimate)", signed_percent(rel.estimate)),
            },
            None => "—".into(),
        };
        let mut limits = Vec::new();
        if let Some(m) = r.limits.max_regression {
            limits.push(format!("≤ {}", m.describe()));
        }
        if let Some(m) = r.limits.max_ms {
            limits.push(format!("p50 ≤ {}", ms(m)));
        }
        if let Some(a) = r.limits.max_failures {
            limits.push(format!("failures ≤ {}", a.describe()));
        }
        let status = match r.status {
            Status::Pass => "✅ pass",
            Status::Warn => "⚠️ warn",
            Status::Fail => "❌ fail",
        };
        out.push_str(&format!(
            "| {} | {} (n={}) | {} (n={}) | {change} | {} | {status} |\n",
            escape(&r.target),
            r.baseline_p50_ms.map(ms).unwrap_or_else(|| "—".into()),
            r.baseline_runs,
            r.candidate_p50_ms.map(ms).unwrap_or_else(|| "—".into()),
            r.candidate_runs,
            limits.join(", "),
        ));
    }
    out.push('\n');
    for r in rows {
        out.push_str(&format!(
            "- **{}**: {}{}",
            escape(&r.target),
            comparison(&r.comparison),
            r.pooled_over
                .map(|n| format!(" (pooled over {n} machines)"))
                .unwrap_or_default()
        ));
        out.push('\n');
        for reason in &r.reasons {
            out.push_str(&format!("  - {}\n", escape(reason)));
        }
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('|', "\\|")
}
