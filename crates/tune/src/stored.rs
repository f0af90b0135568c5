//! What a tune experiment keeps in its settings (`settings.tune`, see
//! docs/json-schema.md) so that the table can be drawn again from the store
//! (`show`, the HTML report): each measured candidate's title, apply line and
//! whether it shifts work, and the rows decided without measuring. The effects
//! are not stored: they come from the stored runs' analysis, as when tune ran.

use super::catalogue::Candidate;
use super::report::{Recommended, Row, Status, Tuned};
use super::sets;
use crate::analysis::Analysis;
use crate::experiment::ExperimentResult;
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
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StoredRow {
    pub id: String,
    pub title: String,
    pub status: Status,
}

impl StoredCandidate {
    pub fn of(c: &Candidate, apply: String) -> StoredCandidate {
        StoredCandidate {
            id: c.id.clone(),
            title: c.title.clone(),
            apply,
            shifts_work: c.shifts_work,
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
    // The nested sets, chosen from as tune chose when it ran (sets::choose).
    let recommended = (t.recommended_set && !rows.is_empty()).then(|| {
        let (index, rejected) = sets::choose(result, &rows, noise);
        let row = &rows[index];
        Recommended {
            ids: sets::ids(&row.id),
            command: row.apply.clone(),
            env: Vec::new(),
            train: Vec::new(),
            rejected,
            row: Some(row.clone()),
        }
    });
    if recommended.is_some() {
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
