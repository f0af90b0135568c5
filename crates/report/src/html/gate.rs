//! A gate's decision per target: status, medians, the verdict in words, the reasons.

use crate::format::ms;
pub use crate::gate::{GateRow, Status};
use crate::words;
use maud::{html, Markup};

pub fn section(rows: &[GateRow]) -> Markup {
    html! {
        section id="gate" data-section="gate" aria-labelledby="gate-h" {
            h2 id="gate-h" { "Gate" }
            table {
                caption { "Each target: pass, warn or fail, and why" }
                thead { tr {
                    th scope="col" { "target" } th scope="col" { "status" } th.num scope="col" { "baseline median" }
                    th.num scope="col" { "candidate median" } th scope="col" { "in words" } th scope="col" { "why" }
                } }
                tbody {
                    @for r in rows {
                        @let (label, class) = match r.status {
                            Status::Pass => ("pass", "status-pass"),
                            Status::Warn => ("warn", "status-warn"),
                            Status::Fail => ("fail", "status-fail"),
                        };
                        tr {
                            th scope="row" { (r.target) }
                            td class=(class) { strong { (label) } }
                            td.num { (r.baseline_p50_ms.map(ms).unwrap_or_else(|| "—".into())) " (" (r.baseline_runs) " runs)" }
                            td.num { (r.candidate_p50_ms.map(ms).unwrap_or_else(|| "—".into())) " (" (r.candidate_runs) " runs)" }
                            td { (words::verdict(&r.comparison, "the candidate", "the baseline")) }
                            td { ul { @for why in &r.reasons { li { (why) } } } }
                        }
                    }
                }
            }
        }
    }
}
