//! A container run's phases: spawn → ready cut at the engine's marks
//! (`target::container::phases`), each summarised across runs and compared with
//! the baseline's same phase, as marks are. In each run the phases add up to
//! its spawn → ready exactly; their medians need not, and how far they do is
//! said (`cover`).

use super::summarize;
use crate::sample::{MarkSource, Sample};
use crate::target::container::Phase;
use coldstart_stats::{CompareOptions, Comparison, Summary};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct PhaseSummary {
    pub name: String,
    /// The mark it ends at ("ready" for the last).
    pub ends_at: String,
    /// Runs that had every mark of the chain, in order.
    pub runs: usize,
    pub ms: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_baseline: Option<Comparison>,
}

/// A variant's phase durations (ms): per phase (name, ends_at), one per run.
pub(super) type PhaseTimes = Vec<(String, String, Vec<f64>)>;

/// The phases of `chain` that the runs have marks for: a mark the engine gave
/// in fewer than half the runs (an engine that logs no events) is left out of
/// the chain, its phase merged into the next ("client + pull + create"). A run
/// missing one of the chain's marks has no phases.
pub(super) fn phase_times(ok: &[&Sample], chain: &[Phase]) -> PhaseTimes {
    let at = |s: &Sample, mark: &str| {
        s.marks
            .iter()
            .find(|m| m.source == MarkSource::Engine && m.name == mark)
            .map(|m| m.t_ns)
    };
    let kept: Vec<Phase> = chain
        .iter()
        .filter(|p| match p.ends_at {
            None => true,
            Some(mark) => 2 * ok.iter().filter(|s| at(s, mark).is_some()).count() >= ok.len().max(1),
        })
        .copied()
        .collect();
    if kept.len() < 2 {
        return Vec::new();
    }
    // Names: a phase absorbs the dropped ones before it.
    let mut names = Vec::new();
    let mut pending: Vec<&str> = Vec::new();
    for p in chain {
        pending.push(p.name);
        if kept.contains(p) {
            names.push(pending.join(" + "));
            pending.clear();
        }
    }
    let mut out: PhaseTimes = kept
        .iter()
        .zip(names)
        .map(|(p, name)| (name, p.ends_at.unwrap_or("ready").to_string(), Vec::new()))
        .collect();
    for s in ok {
        let Some(ready) = s.ready_ns else { continue };
        let ends: Option<Vec<u64>> = kept
            .iter()
            .map(|p| p.ends_at.map_or(Some(ready), |m| at(s, m)))
            .collect();
        let Some(ends) = ends else { continue };
        // An instant recorded after the next one is not out of order in time:
        // a program that exits at once may exit before the engine has written
        // its start. The phase between counts as zero, so the run still adds up.
        let mut from = 0;
        for (slot, end) in out.iter_mut().zip(ends) {
            let end = end.max(from);
            slot.2.push((end - from) as f64 / 1e6);
            from = end;
        }
    }
    if out.iter().all(|p| p.2.is_empty()) {
        return Vec::new();
    }
    out
}

/// Each phase summarised and compared with the baseline's phase of the same
/// name; and the share of the median spawn → ready that the phases' medians
/// make up.
pub(super) fn phase_summaries(
    times: &PhaseTimes,
    baseline: Option<&PhaseTimes>,
    ready_p50: Option<f64>,
    options: CompareOptions,
) -> (Vec<PhaseSummary>, Option<f64>) {
    let phases: Vec<PhaseSummary> = times
        .iter()
        .filter_map(|(name, ends_at, xs)| {
            Some(PhaseSummary {
                name: name.clone(),
                ends_at: ends_at.clone(),
                runs: xs.len(),
                ms: summarize(xs.iter().copied())?,
                vs_baseline: baseline
                    .and_then(|b| b.iter().find(|p| &p.0 == name && !p.2.is_empty()))
                    .map(|base| coldstart_stats::compare(&base.2, xs, options)),
            })
        })
        .collect();
    let cover = match (phases.is_empty(), ready_p50) {
        (false, Some(r)) if r > 0.0 => Some(phases.iter().map(|p| p.ms.p50).sum::<f64>() / r),
        _ => None,
    };
    (phases, cover)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Mark;
    use crate::target::container::phases;

    /// A run ready at `ready` ms with the engine marks at `marks` (name, ms).
    fn run(ready: u64, marks: &[(&str, u64)]) -> Sample {
        let mut s = crate::fixtures::sample(0, 0, false, Some(ready as f64));
        s.marks = marks
            .iter()
            .map(|(n, t)| Mark::new(*n, MarkSource::Engine, t * 1_000_000))
            .collect();
        s
    }

    const ALL: [&str; 4] = [
        "image.pull",
        "container.created",
        "container.initialized",
        "container.started",
    ];

    #[test]
    fn phases_are_the_intervals_between_marks_and_add_up_to_ready() {
        let runs = [
            run(100, &[(ALL[0], 10), (ALL[1], 30), (ALL[2], 60), (ALL[3], 70)]),
            run(120, &[(ALL[0], 12), (ALL[1], 30), (ALL[2], 64), (ALL[3], 70)]),
            // Started recorded after the exit: the program's phase is zero.
            run(90, &[(ALL[0], 10), (ALL[1], 30), (ALL[2], 60), (ALL[3], 70)]),
            // A mark missing: no phases from this run.
            run(120, &[(ALL[0], 10), (ALL[2], 64), (ALL[3], 70)]),
        ];
        let ok: Vec<&Sample> = runs.iter().collect();
        let t = phase_times(&ok, &phases(false));
        let names: Vec<&str> = t.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "client",
                "fetch + unpack + create",
                "runtime create",
                "runtime start",
                "init → ready"
            ]
        );
        let durations: Vec<Vec<f64>> = t.iter().map(|p| p.2.clone()).collect();
        assert_eq!(
            durations,
            [
                vec![10.0, 12.0, 10.0],
                vec![20.0, 18.0, 20.0],
                vec![30.0, 34.0, 30.0],
                vec![10.0, 6.0, 10.0],
                vec![30.0, 50.0, 20.0]
            ]
        );
        let (s, cover) = phase_summaries(&t, None, Some(110.0), CompareOptions::default());
        assert_eq!(s.len(), 5);
        assert_eq!(s[4].ends_at, "ready");
        let sum: f64 = s.iter().map(|p| p.ms.p50).sum();
        assert!((cover.unwrap() - sum / 110.0).abs() < 1e-12);
    }

    #[test]
    fn marks_an_engine_did_not_give_merge_their_phase_into_the_next() {
        // Inspect only (no event log): created and started.
        let runs = [
            run(100, &[(ALL[1], 30), (ALL[3], 70)]),
            run(100, &[(ALL[1], 32), (ALL[3], 71)]),
        ];
        let ok: Vec<&Sample> = runs.iter().collect();
        let t = phase_times(&ok, &phases(false));
        let names: Vec<&str> = t.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "client + fetch + unpack + create",
                "runtime create + runtime start",
                "init → ready"
            ]
        );
        // No engine marks at all: no phases.
        let bare = [run(100, &[])];
        let ok: Vec<&Sample> = bare.iter().collect();
        assert!(phase_times(&ok, &phases(false)).is_empty());
        // Exit readiness: the program's exit splits it from the client's.
        let exits = [run(100, &[(ALL[1], 30), (ALL[3], 70), ("container.exited", 80)])];
        let ok: Vec<&Sample> = exits.iter().collect();
        let t = phase_times(&ok, &phases(true));
        let last: Vec<(&str, f64)> = t.iter().rev().take(2).map(|p| (p.0.as_str(), p.2[0])).collect();
        assert_eq!(last, [("client exit", 20.0), ("program", 10.0)]);
        // Exited before its start was written: the program counts zero, the run adds up.
        let early = [run(100, &[(ALL[1], 30), ("container.exited", 69), (ALL[3], 70)])];
        let ok: Vec<&Sample> = early.iter().collect();
        let t = phase_times(&ok, &phases(true));
        let all: Vec<f64> = t.iter().map(|p| p.2[0]).collect();
        assert_eq!(all, [30.0, 40.0, 0.0, 30.0]);
    }
}
