//! The recommended set, grown one winner at a time and measured, not assumed:
//! the winners that go together, best first (a, b, c), are measured as nested
//! sets (a; a + b; a + b + c) against the baseline in one interleaved experiment,
//! and the set grows only while each step is itself faster than the set before
//! it (the same comparison and noise threshold as every verdict). The first step
//! that is not stops it: what is recommended is a set that was measured, and the
//! note says what the next one did. The live table and the stored one (`show`,
//! the HTML report) choose with this one rule from the same runs.

use super::catalogue::Candidate;
use super::report::{classify, fill, Rejected, Row, Status};
use coldstart_core::experiment::ExperimentResult;
use coldstart_core::stats::{compare, CompareOptions, Verdict};

/// At most this many winners in a set: each one more is a variant more to measure.
pub const MAX_SET: usize = 4;

/// Which of the nested sets to recommend: `rows[i]` is set i + 1's row against the
/// baseline, measured as variant i + 1 of `result` (variant 0 the baseline). The
/// index of the chosen set, and the first larger set that was not better, with
/// its step (it against the set before it).
pub fn choose(result: &ExperimentResult, rows: &[Row], noise: f64) -> (usize, Option<Rejected>) {
    let opts = CompareOptions {
        design: result.design,
        noise,
    };
    let mut chosen = 0;
    for i in 1..rows.len() {
        let step = compare(&result.ready_ms(i), &result.ready_ms(i + 1), opts);
        // A set whose runs failed is no step up, however its other runs went.
        let broken = matches!(rows[i].status, Status::Broken { .. });
        if step.verdict == Verdict::Faster && !broken {
            chosen = i;
            continue;
        }
        let mut step_row = Row::unmeasured(
            &Candidate {
                id: format!("{} vs {}", rows[i].id, rows[i - 1].id),
                title: rows[i].title.clone(),
                ..Candidate::default()
            },
            classify(Some(&step), false, false),
        );
        fill(&mut step_row, &step);
        step_row.ready_verdict = Some(step.verdict.to_string());
        step_row.runs = rows[i].runs;
        return (
            chosen,
            Some(Rejected {
                ids: ids(&rows[i].id),
                row: rows[i].clone(),
                smaller: ids(&rows[i - 1].id),
                step: Some(step_row),
            }),
        );
    }
    (chosen, None)
}

/// A set's member ids from its row id (`a+b`).
pub fn ids(set: &str) -> Vec<String> {
    set.split('+').map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_core::experiment::ExperimentResult;
    use coldstart_core::run::RunId;
    use coldstart_core::sample::{Outcome, Sample};

    /// An experiment whose variant v's runs took these times (ms).
    fn result(times: &[&[f64]]) -> ExperimentResult {
        let mut r = ExperimentResult {
            variants: Vec::new(),
            samples: Vec::new(),
            stopped: None,
            design: Default::default(),
            load: None,
            fleet: None,
        };
        for (v, ts) in times.iter().enumerate() {
            for (round, t) in ts.iter().enumerate() {
                let id = RunId {
                    variant: v,
                    round,
                    warmup: false,
                };
                let mut s = Sample::begin(&id, 0);
                s.outcome = Outcome::Ready;
                s.ready_ns = Some((t * 1e6) as u64);
                r.samples.push(s);
            }
        }
        r
    }

    fn row(id: &str) -> Row {
        Row::unmeasured(
            &Candidate {
                id: id.into(),
                ..Candidate::default()
            },
            Status::Faster,
        )
    }

    fn around(center: f64) -> Vec<f64> {
        (0..8).map(|i| center + (i % 4) as f64).collect()
    }

    #[test]
    fn the_set_grows_while_each_step_is_faster_and_stops_at_the_first_that_is_not() {
        let (base, a, ab, abc) = (around(1000.0), around(500.0), around(300.0), around(301.0));
        let r = result(&[&base, &a, &ab, &abc]);
        let rows = [row("a"), row("a+b"), row("a+b+c")];
        let (chosen, rejected) = choose(&r, &rows, 0.01);
        // a + b is faster than a; a + b + c is not faster than a + b.
        assert_eq!(chosen, 1);
        let rej = rejected.unwrap();
        assert_eq!(rej.ids, ["a", "b", "c"]);
        assert_eq!(rej.smaller, ["a", "b"]);
        let step = rej.step.unwrap();
        assert_ne!(step.ready_verdict.as_deref(), Some("faster"));
        assert!(step.relative_ci.is_some());
        // Every step faster: the whole set.
        let r = result(&[&base, &a, &ab, &around(100.0)]);
        let (chosen, rejected) = choose(&r, &rows, 0.01);
        assert_eq!(chosen, 2);
        assert!(rejected.is_none());
        // One set: nothing to choose.
        assert_eq!(choose(&result(&[&base, &a]), &rows[..1], 0.01).0, 0);
    }
}
