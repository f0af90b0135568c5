//! What a tune experiment keeps in its settings (`settings.tune`, see
//! docs/json-schema.md) so that the table can be drawn again from the store
//! (`show`, the HTML report): each measured candidate's title, apply line and
//! whether it shifts work, and the rows decided without measuring. The effects
//! are not stored: they come from the stored runs' analysis, as when tune ran.

use super::catalogue::Candidate;
use super::report::{Recommended, Row, Status, Tuned};
use super::sets;
use coldstart_core::analysis::Analysis;
use coldstart_core::experiment::ExperimentResult;
use serde::{Deserialize, Serialize};

/// The variant name prefix of a candidate in the store: `tune:ID`.
pub const PREFIX: &str = "tune:";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TuneSettings {
    pub runtime: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub executable: String,
    /// What the command runs, when recognised (a Spring Boot fat jar…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// The measured candidates (variants `tune:ID`).
    pub candidates: Vec<StoredCandidate>,
    /// Rows decided before measuring (broken, unavailable, not applicable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmeasured: Vec<StoredRow>,
    /// This experiment measures the recommended set (its one candidate, `ID+ID…`,
    /// whose apply line is the whole command).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recommended_set: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StoredCandidate {
    pub id: String,
    pub title: String,
    /// How to apply it (the work directory's paths already plain file names).
    pub apply: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shifts_work: bool,
    /// The whole command with it applied, as a shell line (older stores: empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// What the user runs once before `command` (the extraction, the training run),
    /// so a table drawn again from the store still says how to apply it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<String>,
    /// The variables `command` sets beyond the baseline's (KEY=VALUE).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// What to know before applying it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StoredRow {
    pub id: String,
    pub title: String,
    pub status: Status,
}

impl StoredCandidate {
    /// `c` as stored: its apply text, and how the user applies it (the whole
    /// command, its variables, the set-up run once before).
    pub fn of(c: &Candidate, apply: String, how: &Recommended) -> StoredCandidate {
        StoredCandidate {
            id: c.id.clone(),
            title: c.title.clone(),
            apply,
            shifts_work: c.shifts_work,
            command: how.command.clone(),
            setup: how.train.clone(),
            env: how.env.clone(),
            caveats: how.caveats.clone(),
        }
    }

    fn candidate(&self) -> Candidate {
        Candidate {
            id: self.id.clone(),
            title: self.title.clone(),
            apply: self.apply.clone(),
            shifts_work: self.shifts_work,
            ..Candidate::default()
        }
    }
}

/// The table of a stored tune experiment: each `tune:ID` variant against the
/// baseline (variant 0), then the rows decided without measuring; for the
/// recommended set's experiment (nested sets), the set tune chose with its effect. None when the
/// variants are not tune's (a subset without the baseline, say).
pub fn tuned(t: &TuneSettings, result: &ExperimentResult, analysis: &Analysis, noise: f64) -> Option<Tuned> {
    let base = analysis.variants.first().filter(|v| v.name == "baseline")?;
    if analysis.variants.len() < 2 {
        return None;
    }
    let mut rows = Vec::new();
    for v in analysis.variants.iter().skip(1) {
        let id = v.name.strip_prefix(PREFIX)?;
        let c = t.candidates.iter().find(|c| c.id == id)?;
        rows.push(if v.ok_runs + v.failed_runs == 0 {
            Row::unmeasured(&c.candidate(), Status::NotMeasured)
        } else {
            Row::measured(&c.candidate(), v, base)
        });
    }
    for r in &t.unmeasured {
        let c = Candidate {
            id: r.id.clone(),
            title: r.title.clone(),
            ..Candidate::default()
        };
        rows.push(Row::unmeasured(&c, r.status.clone()));
    }
    let chosen = |index: usize, rejected| {
        let row: &Row = &rows[index];
        let stored = t.candidates.iter().find(|c| c.id == row.id);
        Recommended {
            ids: sets::ids(&row.id),
            command: stored
                .map(|c| c.command.clone())
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| row.apply.clone()),
            env: stored.map(|c| c.env.clone()).unwrap_or_default(),
            train: stored.map(|c| c.setup.clone()).unwrap_or_default(),
            caveats: stored.map(|c| c.caveats.clone()).unwrap_or_default(),
            rejected,
            row: Some(row.clone()),
        }
    };
    let recommended = if t.recommended_set && !rows.is_empty() {
        // The nested sets, chosen from as tune chose when it ran (sets::choose).
        let (index, rejected) = sets::choose(result, &rows, noise);
        Some(chosen(index, rejected))
    } else {
        // A single winner is the set: tune measures no sets after it.
        let mut winners = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.status == Status::Faster);
        match (winners.next(), winners.next()) {
            (Some((index, _)), None) => Some(chosen(index, None)),
            _ => None,
        }
    };
    if t.recommended_set && recommended.is_some() {
        rows.clear();
    }
    Some(Tuned {
        runtime: t.runtime.clone(),
        executable: t.executable.clone(),
        version: t.version.clone(),
        app: t.app.clone(),
        baseline: base.command.clone(),
        baseline_ready_ms: base.ready_ms.as_ref().map(|s| s.p50),
        baseline_first_request_ms: base.first_request_ms.as_ref().map(|s| s.p50),
        noise,
        rows,
        recommended,
        experiments: Vec::new(),
        interrupted: false,
        pace: None,
    })
}
