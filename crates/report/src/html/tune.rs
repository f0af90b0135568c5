//! A `coldstart tune` experiment: the table the engineers wrote by hand (✅ / ❌ /
//! ⚠️ / 💥 rows with the effect on ready, its CI and the apply line), drawn
//! from the candidates the experiment's settings keep and the stored runs.

use super::section;
use crate::tuned::{effect, icon, recommended_line};
use coldstart_tune::report::{Status, Tuned};
use maud::{html, Markup};

/// In words, for screen readers (the icons are decoration).
fn status_words(s: &Status) -> &'static str {
    match s {
        Status::Faster => "helps",
        Status::Slower => "slower",
        Status::NoGain => "does not help",
        Status::Inconclusive { .. } | Status::NoVerdict => "inconclusive",
        Status::Caution => "caution",
        Status::Broken { .. } => "broken",
        Status::Unavailable { .. } => "unavailable",
        Status::NotApplicable { .. } => "not applicable",
        Status::NotMeasured => "not measured",
    }
}

fn status_class(s: &Status) -> &'static str {
    match s {
        Status::Faster => "status-pass",
        Status::Caution => "status-warn",
        Status::Slower | Status::Broken { .. } => "status-fail",
        _ => "muted",
    }
}

pub fn render(id: &str, t: &Tuned) -> Markup {
    let body = html! {
        p {
            (t.runtime) " " @if let Some(v) = &t.version { (v) " " } "(" code { (t.executable) } ")"
            @if let Some(a) = &t.app { " · " (a) }
            " · baseline " code { (t.baseline) }
            @if let Some(m) = t.baseline_ready_ms { " · ready " (crate::format::ms(m)) }
        }
        @if !t.rows.is_empty() { table.tune {
            caption { "Candidates measured against the unchanged baseline (effect on ready: median shift, relative, 95 % CI)" }
            thead { tr {
                th scope="col" { span.sr { "verdict" } }
                th scope="col" { "candidate" }
                th scope="col" { "effect on ready" }
                th scope="col" { "apply" }
            } }
            tbody {
                @for r in &t.rows {
                    tr data-status=(status_words(&r.status)) {
                        td class=(status_class(&r.status)) title=(status_words(&r.status)) {
                            span aria-hidden="true" { (icon(&r.status)) } " " span.sr { (status_words(&r.status)) }
                        }
                        td { (r.title) " " code.muted { (r.id) } }
                        td { (effect(r)) }
                        td { @if matches!(r.status, Status::Faster | Status::Caution) && !r.apply.is_empty() { code { (r.apply) } } }
                    }
                }
            }
        } }
        @if let Some(d) = t.rows.iter().find_map(|r| r.detectable.as_ref()) {
            p.note { "Power: " (crate::format::detectable_line(d)) " (noise threshold ±" (format!("{:.0}", t.noise * 100.0)) " %)." }
        }
        @if t.recommended.is_some() || t.rows.iter().any(|r| r.status == Status::Faster) {
            pre.recommended { (recommended_line(t)) }
        }
    };
    section(id, "tune", "coldstart tune: what helped", body)
}
