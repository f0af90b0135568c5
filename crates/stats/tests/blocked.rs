//! The oracle of the blocked comparison: simulated fleets whose truth is known.
//!
//! Each try draws 10 machines. A machine multiplies every time by its own level
//! (a log-uniform offset, ±30 % or ±5 %) and adds its own run-to-run noise
//! (lognormal, σ from 2 % to 8 %); the candidate is the baseline times e^δ_i,
//! where δ_i = δ (one shift everywhere) or δ + N(0, τ²) (the shift varies by
//! machine; the truth is then the mean shift δ over machines). The same data go
//! to [`compare_blocked`] and to the naive [`compare`] of all runs pooled as if
//! from one machine.
//!
//! Checked: the blocked 95 % interval covers the true pooled shift e^δ − 1 in
//! ≥ 95 % of tries and A/A (δ = 0) gives ≤ 5 % false verdicts, both "not
//! significantly" (one-sided binomial at 1 %); and in the fleets where pooling
//! is wrong (unequal runs per machine, a shift that varies by machine) naive
//! pooling does worse. Print the table with
//! `cargo test -p coldstart-stats --test blocked -- --nocapture`.

use coldstart_stats::{compare, compare_blocked, Block, CompareOptions, Verdict};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const MACHINES: usize = 10;
const TRIES: usize = 1000;
const BASE_MS: f64 = 100.0;

#[derive(Clone, Copy)]
struct Fleet {
    name: &'static str,
    /// Machine levels are uniform in [1 − offset, 1 + offset] (on the log scale).
    offset: f64,
    /// The mean log shift over machines.
    delta: f64,
    /// The standard deviation of a machine's own log shift about `delta`.
    tau: f64,
    /// Runs per machine and variant: fixed 10, or each drawn from 3..=17 (failed
    /// runs, a shard cut short).
    unequal: bool,
}

fn std_normal(rng: &mut StdRng) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// One fleet experiment: per machine (baseline, candidate).
fn draw(fleet: Fleet, rng: &mut StdRng) -> Vec<(Vec<f64>, Vec<f64>)> {
    (0..MACHINES)
        .map(|_| {
            let level = rng.gen_range((1.0 - fleet.offset).ln()..(1.0 + fleet.offset).ln());
            let sigma = rng.gen_range(0.02..0.08);
            let shift = fleet.delta + fleet.tau * std_normal(rng);
            let mut runs = || if fleet.unequal { rng.gen_range(3..=17) } else { 10 };
            let (nb, nc) = (runs(), runs());
            let mut sample = |n: usize, s: f64| -> Vec<f64> {
                (0..n)
                    .map(|_| BASE_MS * (level + s + sigma * std_normal(rng)).exp())
                    .collect()
            };
            (sample(nb, 0.0), sample(nc, shift))
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    covered: usize,
    differs: usize, // interval excludes 0: faster, slower or within noise
    slower: usize,
    width: f64,
}

impl Tally {
    fn add(&mut self, verdict: Verdict, ci: Option<(f64, f64)>, truth: f64) {
        let (lo, hi) = ci.unwrap_or_else(|| panic!("every try has an interval"));
        self.covered += usize::from(lo <= truth && truth <= hi);
        self.differs += usize::from(matches!(
            verdict,
            Verdict::Faster | Verdict::Slower | Verdict::WithinNoise
        ));
        self.slower += usize::from(verdict == Verdict::Slower);
        self.width += (hi - lo) / TRIES as f64;
    }

    fn rate(count: usize) -> f64 {
        count as f64 / TRIES as f64
    }
}

fn run(fleet: Fleet, seed: u64) -> (Tally, Tally) {
    let mut rng = StdRng::seed_from_u64(seed);
    let truth = fleet.delta.exp() - 1.0;
    let (mut blocked, mut naive) = (Tally::default(), Tally::default());
    for _ in 0..TRIES {
        let data = draw(fleet, &mut rng);
        let blocks: Vec<Block> = data
            .iter()
            .map(|(b, c)| Block {
                baseline: b,
                candidate: c,
            })
            .collect();
        let b = compare_blocked(&blocks, CompareOptions::default());
        blocked.add(b.verdict, b.relative.and_then(|r| r.ci), truth);
        let all_b: Vec<f64> = data.iter().flat_map(|(b, _)| b.iter().copied()).collect();
        let all_c: Vec<f64> = data.iter().flat_map(|(_, c)| c.iter().copied()).collect();
        let n = compare(&all_b, &all_c, CompareOptions::default());
        naive.add(n.verdict, n.relative.and_then(|r| r.ci), truth);
    }
    println!(
        "{:<58} | blocked: covers {:>5.1} %, differs {:>5.1} %, slower {:>5.1} %, width {:>5.2} % | naive: covers {:>5.1} %, differs {:>5.1} %, slower {:>5.1} %, width {:>5.2} %",
        fleet.name,
        100.0 * Tally::rate(blocked.covered),
        100.0 * Tally::rate(blocked.differs),
        100.0 * Tally::rate(blocked.slower),
        100.0 * blocked.width,
        100.0 * Tally::rate(naive.covered),
        100.0 * Tally::rate(naive.differs),
        100.0 * Tally::rate(naive.slower),
        100.0 * naive.width,
    );
    (blocked, naive)
}

/// One-sided binomial slack at 1 % for a rate p over TRIES.
fn slack(p: f64) -> f64 {
    2.326 * (p * (1.0 - p) / TRIES as f64).sqrt()
}

fn assert_calibrated(fleet: Fleet, blocked: &Tally) {
    let coverage = Tally::rate(blocked.covered);
    assert!(
        coverage >= 0.95 - slack(0.95),
        "{}: blocked coverage {coverage}",
        fleet.name
    );
    if fleet.delta == 0.0 {
        let false_rate = Tally::rate(blocked.differs);
        assert!(
            false_rate <= 0.05 + slack(0.05),
            "{}: blocked A/A false verdicts {false_rate}",
            fleet.name
        );
    }
}

const WIDE: f64 = 0.30;
const NARROW: f64 = 0.05;
const SHIFT: f64 = 0.029_558_802_241_544_4; // ln 1.03

#[test]
fn a_homogeneous_fleet_is_calibrated_and_naive_pooling_is_blunt() {
    let aa = Fleet {
        name: "A/A, offsets ±30 %, 10 runs each",
        offset: WIDE,
        delta: 0.0,
        tau: 0.0,
        unequal: false,
    };
    let shift = Fleet {
        name: "+3 %, offsets ±30 %, 10 runs each",
        delta: SHIFT,
        ..aa
    };
    for (fleet, seed) in [(aa, 1), (shift, 2)] {
        let (blocked, naive) = run(fleet, seed);
        assert_calibrated(fleet, &blocked);
        // Balanced machines: pooling is not biased, but the machines' levels
        // swamp a 3 % shift: a much wider interval and far less power.
        assert!(naive.width > 2.0 * blocked.width, "{}", fleet.name);
        if fleet.delta > 0.0 {
            assert!(blocked.slower > 2 * naive.slower, "{}", fleet.name);
        }
    }
}

#[test]
fn unequal_runs_per_machine_fool_naive_pooling_only() {
    let fleet = Fleet {
        name: "A/A, offsets ±30 %, 3–17 runs each",
        offset: WIDE,
        delta: 0.0,
        tau: 0.0,
        unequal: true,
    };
    let (blocked, naive) = run(fleet, 3);
    assert_calibrated(fleet, &blocked);
    assert!(naive.differs > blocked.differs && Tally::rate(naive.differs) > 0.05 + slack(0.05));
    assert!(naive.covered < blocked.covered);
}

#[test]
fn a_shift_that_varies_by_machine_is_covered_only_when_blocked() {
    let aa = Fleet {
        name: "A/A on average, ±2 % per machine, offsets ±5 %",
        offset: NARROW,
        delta: 0.0,
        tau: 0.02,
        unequal: false,
    };
    let shift = Fleet {
        name: "+3 % on average, ±2 % per machine, offsets ±5 %",
        delta: SHIFT,
        ..aa
    };
    let mixed = Fleet {
        name: "+3 % on average, ±2 % per machine, offsets ±30 %, 3–17 runs",
        offset: WIDE,
        unequal: true,
        ..shift
    };
    for (fleet, seed) in [(aa, 4), (shift, 5), (mixed, 6)] {
        let (blocked, naive) = run(fleet, seed);
        assert_calibrated(fleet, &blocked);
        assert!(naive.covered < blocked.covered, "{}", fleet.name);
        if fleet.delta == 0.0 {
            assert!(naive.differs > blocked.differs, "{}", fleet.name);
        }
    }
}
