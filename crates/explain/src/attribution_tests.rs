//! The attribution's oracles by simulation: builds whose per-run phases are
//! drawn from known distributions, traced the way the tracer distorts them
//! (every stop costs more than calibrated, with noise), estimated and
//! attributed by the real code.
//!
//! * A/A (both builds from one distribution): every phase's interval holds 0
//!   in ≥ 95 % of tries; and the old method (each build at its own scale)
//!   does not, so the oracle can tell the two apart.
//! * A known delay injected into one phase of B (no stops in it, as a sleep):
//!   that phase gets ≥ 80 % of it, with an interval that excludes 0, and the
//!   other phases' intervals hold 0 in ≥ 95 % of tries.

use super::*;
use crate::estimate::{self, Calibration, Estimated, RunEstimate};
use coldstart_core::target::{Readiness, Target};
use coldstart_core::trace::{Outcome, Trace};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// (name, untraced median ms, its noise sd ms, stops, calibrated cost per stop µs)
const PHASES: [(&str, f64, f64, usize, f64); 4] = [
    ("exec-chain", 3.0, 0.3, 400, 8.0),
    ("loader", 1.0, 0.1, 150, 8.0),
    ("init", 12.0, 1.5, 900, 8.0),
    ("listen→ready", 0.4, 0.08, 10, 8.0),
];
const RUNS: usize = 20;

fn normal(rng: &mut StdRng) -> f64 {
    // Box–Muller: enough for a simulation, no extra crate.
    let (u1, u2): (f64, f64) = (rng.gen_range(f64::EPSILON..1.0), rng.gen());
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// One build: `RUNS` untraced totals and `RUNS` traced runs (as calibrated),
/// with `delay` ms added untraced and traced to phase `delayed`.
/// A stop really costs `true_scale` × its calibrated cost, ± 20 % per run.
fn build(rng: &mut StdRng, true_scale: f64, delayed: Option<(&str, f64)>) -> (Vec<f64>, Vec<RunEstimate>) {
    let draw = |rng: &mut StdRng, (name, mean, sd, _, _): (&str, f64, f64, usize, f64)| {
        let extra = delayed.filter(|d| d.0 == name).map_or(0.0, |d| d.1);
        (mean + sd * normal(rng)).max(0.01) + extra
    };
    let untraced = (0..RUNS)
        .map(|_| PHASES.iter().map(|p| draw(rng, *p)).sum())
        .collect();
    let traced = (0..RUNS)
        .map(|_| {
            let per_stop = true_scale * (1.0 + 0.2 * normal(rng)).max(0.2);
            let phases: Vec<Estimated> = PHASES
                .iter()
                .map(|p| {
                    let cost_ms = p.3 as f64 * p.4 / 1e3;
                    let traced_ms = draw(rng, *p) + per_stop * cost_ms;
                    Estimated {
                        name: p.0.to_string(),
                        traced_ms,
                        estimate_ms: traced_ms - cost_ms,
                        stops: p.3,
                        cost_ms,
                        range_ms: None,
                    }
                })
                .collect();
            RunEstimate {
                traced_ms: phases.iter().map(|p| p.traced_ms).sum(),
                estimate_ms: phases.iter().map(|p| p.estimate_ms).sum(),
                stops: phases.iter().map(|p| p.stops).sum(),
                cost_ms: phases.iter().map(|p| p.cost_ms).sum(),
                phases,
            }
        })
        .collect();
    (untraced, traced)
}

fn trace() -> Trace {
    Trace {
        t0_ns: 1_000_000_000,
        end_ns: 1_020_000_000,
        root_pid: 1,
        events: Vec::new(),
        killed: false,
        outcome: Outcome::Reached,
        warnings: Vec::new(),
        root_usage: None,
        task_names: Default::default(),
        stops: Vec::new(),
        cpu: Vec::new(),
    }
}

fn explained(untraced: &[f64], runs: Vec<RunEstimate>) -> Explanation {
    let target = Target::new(vec!["/bin/true".into()], vec![], None).expect("a target");
    let mut e = crate::explanation(&target, &Readiness::Exit, None, None, None, vec![(20.0, trace())])
        .expect("an explanation");
    let cal = Calibration {
        round_trip_us: 8.0,
        held_us: 0.0,
        stops: 1000,
        rounds: 5,
        spread_pct: 5.0,
    };
    let tl = e.timeline.clone();
    e.estimate = Some(estimate::estimate(&trace(), &tl, 20.0, runs, untraced, &cal));
    e
}

fn attribute_pair(a: &(Vec<f64>, Vec<RunEstimate>), b: &(Vec<f64>, Vec<RunEstimate>)) -> Attribution {
    let (ea, eb) = (explained(&a.0, a.1.clone()), explained(&b.0, b.1.clone()));
    attribute(
        &Side {
            name: "A",
            untraced_ms: &a.0,
            explanation: &ea,
        },
        &Side {
            name: "B",
            untraced_ms: &b.0,
            explanation: &eb,
        },
    )
}

/// Whether a simulated rate is consistent with "at least `claim`": its
/// observed value is not significantly below it (one-sided 97.5 %, normal
/// approximation). The simulation's own sampling error must not decide.
fn at_least(hits: usize, tries: usize, claim: f64) -> bool {
    let p = hits as f64 / tries as f64;
    p + 1.96 * (p * (1.0 - p) / tries as f64).sqrt() >= claim
}

fn holds_zero(p: &PhaseDiff) -> bool {
    p.ci_ms.is_some_and(|(lo, hi)| lo <= 0.0 && 0.0 <= hi)
}

#[test]
fn an_aa_explain_holds_zero_for_every_phase_in_95_percent_of_tries() {
    let mut rng = StdRng::seed_from_u64(0xA_A);
    let tries = 300;
    let (mut all_hold, mut own_scale_false, mut estimated) = (0, 0, 0);
    for _ in 0..tries {
        let (a, b) = (build(&mut rng, 1.6, None), build(&mut rng, 1.6, None));
        let att = attribute_pair(&a, &b);
        estimated += usize::from(att.estimated);

        assert_eq!(att.phases.len(), PHASES.len(), "{att:?}");
        all_hold += usize::from(att.phases.iter().all(holds_zero));
        // No share of a total whose interval holds 0.
        if att.total_ci_ms.is_some_and(|(lo, hi)| lo <= 0.0 && 0.0 <= hi) {
            assert!(att.phases.iter().all(|p| p.share_pct.is_none()), "{att:?}");
        }
        // The old method, for contrast: each build at its own scale, 95 % each.
        let (ka, kb) = (
            estimate::residual_scale(&a.1, &a.0),
            estimate::residual_scale(&b.1, &b.0),
        );
        let any_false = PHASES.iter().any(|p| {
            let va: Vec<f64> = a.1.iter().filter_map(|r| r.phase_at(p.0, ka)).collect();
            let vb: Vec<f64> = b.1.iter().filter_map(|r| r.phase_at(p.0, kb)).collect();
            stats::hodges_lehmann(&va, &vb, CONFIDENCE)
                .and_then(|s| s.ci)
                .is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0)
        });
        own_scale_false += usize::from(any_false);
    }
    let rate = all_hold as f64 / tries as f64;
    let old = own_scale_false as f64 / tries as f64;
    eprintln!(
        "A/A simulation: every phase holds 0 in {:.1} % of {tries} tries (one shared scale; estimates in {estimated}); each build at its own scale: a false phase in {:.1} %",
        rate * 100.0,
        old * 100.0
    );
    assert!(
        estimated > tries * 9 / 10,
        "the simulated builds are estimable: {estimated}"
    );
    assert!(
        at_least(all_hold, tries, 0.95),
        "A/A: every phase's CI holds 0 in only {:.1} % of tries",
        rate * 100.0
    );
    assert!(
        old > 0.10,
        "the old per-build scales are not caught by this oracle: {:.1} %",
        old * 100.0
    );
}

#[test]
fn a_delay_injected_into_one_phase_is_attributed_to_it() {
    let mut rng = StdRng::seed_from_u64(0xDE1A);
    for phase in ["init", "listen→ready"] {
        let tries = 100;
        let (mut found, mut others_hold, mut named) = (0, 0, 0);
        for _ in 0..tries {
            let a = build(&mut rng, 1.6, None);
            let b = build(&mut rng, 1.6, Some((phase, 20.0)));
            let att = attribute_pair(&a, &b);
            let p = att.phases.iter().find(|p| p.name == phase).expect("the phase");
            found += usize::from(p.diff_ms >= 16.0 && !holds_zero(p));
            others_hold += usize::from(att.phases.iter().filter(|q| q.name != phase).all(holds_zero));
            named += usize::from(
                att.named_phase()
                    .is_some_and(|p| p.name == phase && p.diff_ms > 0.0),
            );
        }
        eprintln!("{phase} +20 ms: found in {found}, other phases clean in {others_hold}, named first in {named} of {tries}");
        assert_eq!(found, tries, "{phase}: ≥ 16 ms with a clear CI in every try");
        assert!(
            at_least(others_hold, tries, 0.95),
            "{phase}: other phases hold 0 in {others_hold} of {tries}"
        );
        assert_eq!(named, tries, "{phase}: the headline names it");
    }
}

#[test]
fn a_noisy_build_is_compared_traced_with_a_note() {
    let mut rng = StdRng::seed_from_u64(7);
    // Traced runs no slower than untraced (the stops cost nothing extra): no
    // reliable estimate, so both builds are compared on their traced runs.
    let a = build(&mut rng, 0.0, None);
    let b = build(&mut rng, 0.0, None);
    let att = attribute_pair(&a, &b);
    assert!(!att.estimated && att.scale.is_none(), "{att:?}");
    assert!(
        att.notes.iter().any(|n| n.contains("not reliable")),
        "{:?}",
        att.notes
    );
}
