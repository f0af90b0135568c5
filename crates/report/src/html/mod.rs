//! The self-contained HTML report: one file, every asset inline (CSS, SVG charts,
//! a few lines of script for hover details), nothing fetched (a
//! Content-Security-Policy forbids it), so it opens from disk or a CI artifact.
//!
//! It renders the stored result model only: experiments (variants, samples,
//! their analysis), explanations and the history listing; it never runs
//! anything. Each section appears only where its data exists, and each carries
//! `data-section` (settings, distribution, runs, comparisons, machines, sweep,
//! lambda, headline, waterfall, sources, profile, tune, history, gate) for tests and for linking.

mod ab;
mod experiment;
mod explain;
mod gate;
mod history;
mod lambda;
mod machines;
mod page;
mod profile;
mod svg;
mod sweep;
#[cfg(test)]
mod tests;
mod tune;

use crate::json::Settings;
use coldstart_core::analysis::Analysis;
use coldstart_core::experiment::ExperimentResult;
use coldstart_core::store::meta::Metadata;
pub use coldstart_explain::Explanation;
use coldstart_tune::report::Tuned;
use maud::{html, Markup};

pub use history::{trends, Trend};
pub use sweep::{params_of, SweepParam};

/// One experiment to show, with what is known about it.
pub struct Experiment<'a> {
    /// e.g. "Experiment 12" or "compare 3 → 5".
    pub heading: String,
    /// Its id in the store (None for an unstored run).
    pub id: Option<i64>,
    pub created_unix_s: Option<i64>,
    pub meta: Option<&'a Metadata>,
    pub settings: Option<&'a Settings>,
    pub result: &'a ExperimentResult,
    pub analysis: &'a Analysis,
    pub explanation: Option<&'a Explanation>,
    /// A tune experiment's table (`tune::stored::tuned`).
    pub tuned: Option<Tuned>,
}

/// The whole page.
pub struct Report<'a> {
    pub title: String,
    pub experiments: Vec<Experiment<'a>>,
    /// Median per target over stored experiments (oldest first).
    pub history: Vec<Trend>,
    /// A gate's decision, when the report is a gate's.
    pub gate: Option<&'a [crate::gate::GateRow]>,
}

/// The page as one HTML document.
pub fn render(report: &Report) -> String {
    let body = html! {
        @for (i, e) in report.experiments.iter().enumerate() {
            (experiment_section(i, e))
        }
        @if let Some(rows) = report.gate {
            (gate::section(rows))
        }
        @if !report.history.is_empty() {
            (history::section(&report.history))
        }
    };
    page::document(&report.title, &toc(report), body).into_string()
}

fn toc(report: &Report) -> Markup {
    html! {
        nav aria-label="Contents" {
            ul {
                @for (i, e) in report.experiments.iter().enumerate() {
                    li { a href=(format!("#exp{i}")) { (e.heading) } }
                }
                @if report.gate.is_some() { li { a href="#gate" { "Gate" } } }
                @if !report.history.is_empty() { li { a href="#history" { "History" } } }
            }
        }
    }
}

fn experiment_section(i: usize, e: &Experiment) -> Markup {
    let id = format!("exp{i}");
    let sweeps = sweep::params(e.result, e.analysis);
    html! {
        section.experiment id=(id) aria-labelledby=(format!("{id}-h")) {
            h2 id=(format!("{id}-h")) { (e.heading) }
            // The answer first; an explain leads with its own headline instead
            // (its comparison is the tracer's overhead, not a verdict).
            @if e.explanation.is_none() {
                (ab::verdicts(e.analysis))
            }
            @if let Some(x) = e.explanation.filter(|x| x.headline.as_ref().is_some_and(|h| !h.items.is_empty())) {
                (explain::headline(&id, x))
            }
            (experiment::settings(&id, e))
            @if e.analysis.variants.iter().any(|v| v.ready_ms.is_some()) {
                (experiment::distribution(&id, e.result, e.analysis))
                (experiment::runs(&id, e.result, e.analysis))
            }
            @if e.analysis.variants.iter().any(|v| v.vs_baseline.is_some() || v.vs_first.is_some()) {
                (ab::render(&id, e.analysis))
            }
            @if machines::has_machines(e.analysis) {
                (machines::render(&id, e.result, e.analysis))
            }
            @if !sweeps.is_empty() {
                (sweep::render(&id, &sweeps, lambda::is_lambda(e.result)))
            }
            @if lambda::has_lanes(e.analysis) {
                (lambda::render(&id, e.analysis))
            }
            @if let Some(x) = e.explanation {
                (explain::waterfall(&id, x))
                @if !x.sources.is_empty() {
                    (explain::sources(&id, x))
                }
                @if let Some(p) = &x.profile {
                    (profile::render(&id, p, &x.command))
                }
            }
            @if let Some(t) = &e.tuned {
                (tune::render(&id, t))
            }
        }
    }
}

/// A section heading with its anchor and `data-section` name.
fn section(id: &str, kind: &str, heading: &str, body: Markup) -> Markup {
    let sid = format!("{id}-{kind}");
    html! {
        section id=(sid) data-section=(kind) aria-labelledby=(format!("{sid}-h")) {
            h3 id=(format!("{sid}-h")) { (heading) }
            (body)
        }
    }
}
