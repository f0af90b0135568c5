//! Candidate versus baseline measured on several machines, each machine a block
//! holding interleaved runs of both (one shard of a fleet experiment).
//!
//! Machines differ by tens of percent, so pooling every run into one
//! Mann–Whitney/Hodges–Lehmann treats machine-to-machine spread as run-to-run
//! noise, and an unequal mix of runs per machine (a failed or retried shard) as
//! a difference between the variants. Here:
//!
//! - Within each machine: today's [`compare`] (shift, ratio, Mann–Whitney, verdict).
//! - The test: van Elteren's stratified Wilcoxon–Mann–Whitney ([`van_elteren`]),
//!   ranks taken within machines only.
//! - The pooled shift: each machine's Hodges–Lehmann estimate (on log times for
//!   the relative effect, in ms for the shift), combined by a random-effects
//!   weighted mean ([`random_effects`]); see there for the weights and the interval.
//! - Heterogeneity: Cochran's Q with its χ² p-value, I², τ², and which machines'
//!   own intervals lie wholly above or below zero (machines disagree when both
//!   exist).
//! - The verdict: today's rules ([`super::compare::decide`]) on the pooled
//!   relative interval, which includes the between-machine variation.

use serde::Serialize;

use super::compare::{
    compare, decide, CompareOptions, Comparison, Design, Relative, Verdict, COMPARE_CONFIDENCE,
};
use super::hodges_lehmann::{moses_z, Shift};
use super::mann_whitney::{null_sigma, rank_sum};
use super::normal;
use super::special;

/// One machine's samples of both variants (times, any order).
#[derive(Debug, Clone, Copy)]
pub struct Block<'a> {
    pub baseline: &'a [f64],
    pub candidate: &'a [f64],
}

/// A shift pooled over machines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pooled {
    pub estimate: f64,
    /// 95 % interval including between-machine variation; `None` when no
    /// machine has enough runs for its own interval.
    pub ci: Option<(f64, f64)>,
    /// Between-machine variance of the shift (DerSimonian–Laird), in the
    /// estimate's scale (log ratio for the relative effect, ms² for the shift).
    pub tau2: f64,
    /// Machines that entered the estimate (those with an interval of their own).
    pub blocks: usize,
}

/// van Elteren's stratified Wilcoxon–Mann–Whitney test (two-sided, normal
/// approximation, no continuity correction).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VanElteren {
    /// Σ over machines of W_i / (N_i + 1), W_i the candidate's rank sum among
    /// the N_i runs of machine i (midranks for ties).
    pub statistic: f64,
    pub expected: f64,
    /// Tie-corrected null variance.
    pub variance: f64,
    /// Positive when the candidate tends to be slower.
    pub z: f64,
    pub p_value: f64,
}

/// Do machines agree on the (log) shift?
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Heterogeneity {
    /// Cochran's Q of the per-machine log-ratio estimates, and its degrees of freedom.
    pub q: f64,
    pub df: usize,
    /// P(χ²_df > Q): small when machines differ by more than their own noise.
    pub p_value: f64,
    /// I² = max(0, (Q − df) / Q): the share of the spread between machines that
    /// is real rather than noise.
    pub i2: f64,
    /// Machines (indices into the blocks) whose own relative interval is wholly
    /// below 0 (candidate faster there) and wholly above 0 (slower there).
    pub faster: Vec<usize>,
    pub slower: Vec<usize>,
    /// One machine faster, another slower.
    pub disagree: bool,
}

/// Candidate versus baseline over machines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockedComparison {
    pub design: Design,
    pub noise: f64,
    /// Each machine's own comparison, in the order of the blocks given.
    pub blocks: Vec<Comparison>,
    /// Pooled ratio candidate ÷ baseline − 1 (the verdict's interval).
    pub relative: Option<Pooled>,
    /// Pooled shift candidate − baseline in the samples' unit.
    pub shift: Option<Pooled>,
    pub van_elteren: Option<VanElteren>,
    /// `None` with fewer than two machines with an interval.
    pub heterogeneity: Option<Heterogeneity>,
    pub verdict: Verdict,
    pub reason: Option<String>,
}

/// Compare candidate with baseline over machines (see the module docs).
pub fn compare_blocked(blocks: &[Block<'_>], opts: CompareOptions) -> BlockedComparison {
    let per_block: Vec<Comparison> = blocks
        .iter()
        .map(|b| compare(b.baseline, b.candidate, opts))
        .collect();
    let (log_points, shift_points) = block_points(blocks, &per_block);
    let log_pooled = random_effects(&log_points);
    let relative = log_pooled.as_ref().map(|p| Pooled {
        estimate: p.mean.exp() - 1.0,
        ci: p.ci.map(|(lo, hi)| (lo.exp() - 1.0, hi.exp() - 1.0)),
        tau2: p.tau2,
        blocks: p.blocks,
    });
    let shift = random_effects(&shift_points).map(|p| Pooled {
        estimate: p.mean,
        ci: p.ci,
        tau2: p.tau2,
        blocks: p.blocks,
    });
    let heterogeneity = log_pooled
        .as_ref()
        .filter(|p| p.blocks >= 2)
        .map(|p| heterogeneity(p, &per_block));
    let mut out = BlockedComparison {
        design: opts.design,
        noise: opts.noise,
        blocks: per_block,
        relative,
        shift,
        van_elteren: van_elteren(blocks),
        heterogeneity,
        verdict: Verdict::None,
        reason: None,
    };
    if !opts.design.supports_verdict() {
        out.reason = Some(opts.design.why_no_verdict().into());
    } else if let Some((lo, hi)) = out.relative.as_ref().and_then(|r| r.ci) {
        (out.verdict, out.reason) = decide(lo, hi, opts.noise);
    } else if blocks
        .iter()
        .all(|b| b.baseline.is_empty() || b.candidate.is_empty())
    {
        out.reason = Some("no verdict: no machine has successful runs of both variants".into());
    } else {
        out.reason = Some("no verdict: no machine has enough runs for a 95 % interval".into());
    }
    out
}

impl BlockedComparison {
    /// The pooled result in the shape of a single comparison, for what reads
    /// only a verdict and its interval (tables, the gate): the pooled relative
    /// effect and shift with their between-machine intervals; no Mann–Whitney
    /// (the test is van Elteren's, in `van_elteren`) and no power line (a fleet's
    /// power depends on machines as much as on runs).
    pub fn overall(&self) -> Comparison {
        Comparison {
            design: self.design,
            noise: self.noise,
            ratio: self.relative.as_ref().map(|r| 1.0 + r.estimate),
            shift: self.shift.as_ref().map(|p| Shift {
                estimate: p.estimate,
                ci: p.ci,
            }),
            relative: self.relative.as_ref().map(|p| Relative {
                estimate: p.estimate,
                ci: p.ci,
            }),
            mann_whitney: None,
            verdict: self.verdict,
            reason: self.reason.clone(),
            detectable: None,
        }
    }
}

/// One machine's estimate with its interval and standard error.
#[derive(Debug, Clone, Copy)]
struct Point {
    estimate: f64,
    ci: (f64, f64),
    se: f64,
}

/// Each machine's Hodges–Lehmann estimate of the log ratio and of the shift, for
/// the machines with a Moses interval of positive width, read off its own
/// comparison (not computed twice). The standard error is the interval's
/// half-width over its span in standard errors ([`moses_z`]: the exact interval
/// is wider than ±1.96 se at small n), so a machine's weight follows its own
/// noise and run count.
fn block_points(blocks: &[Block<'_>], per_block: &[Comparison]) -> (Vec<Point>, Vec<Point>) {
    let mut logs = Vec::new();
    let mut shifts = Vec::new();
    for (b, c) in blocks.iter().zip(per_block) {
        let (m, n) = (b.baseline.len(), b.candidate.len());
        let Some(span) = moses_z(m, n, COMPARE_CONFIDENCE).filter(|z| *z > 0.0) else {
            continue;
        };
        let point = |estimate: f64, (lo, hi): (f64, f64)| {
            let se = (hi - lo) / (2.0 * span);
            (se > 0.0 && se.is_finite() && estimate.is_finite()).then_some(Point {
                estimate,
                ci: (lo, hi),
                se,
            })
        };
        // `compare`'s relative effect is the ratio's (Moses on logs) exactly when
        // every time is positive; otherwise it has no log scale to pool on.
        let positive = b
            .baseline
            .iter()
            .chain(b.candidate)
            .all(|&x| x > 0.0 && x.is_finite());
        if let Some(r) = c.relative.as_ref().filter(|_| positive) {
            let ln = |x: f64| x.ln_1p();
            if let Some(p) = r.ci.and_then(|(lo, hi)| point(ln(r.estimate), (ln(lo), ln(hi)))) {
                logs.push(p);
            }
        }
        if let Some(s) = c.shift.as_ref() {
            if let Some(p) = s.ci.and_then(|ci| point(s.estimate, ci)) {
                shifts.push(p);
            }
        }
    }
    (logs, shifts)
}

struct RandomEffects {
    mean: f64,
    ci: Option<(f64, f64)>,
    tau2: f64,
    q: f64,
    blocks: usize,
}

/// The pooled shift over machines and its 95 % interval.
///
/// Estimate: the inverse-variance weighted mean of the machines' Hodges–Lehmann
/// estimates with DerSimonian–Laird random-effects weights 1 / (se_i² + τ²).
/// Without between-machine variation (τ² = 0) and with equal noise these are
/// ∝ n_a n_b / (n_a + n_b), the efficient weights of a stratified rank
/// estimate; a noisier machine counts less; and as machines disagree more, the
/// weights tend to equal, since each machine is then one draw of the machine
/// effect and the target is the mean shift over machines. (The median of the
/// pooled within-machine differences would instead weight machines by n_a n_b
/// whatever their noise, and has no simple interval that admits machine effects.)
///
/// Interval: Hartung–Knapp–Sidik–Jonkman, μ ± t_{k−1} √(max(1, q) / Σ w*),
/// q = Σ w*_i (y_i − μ)² / (k − 1): the plain DerSimonian–Laird normal interval
/// is too narrow with the 2–20 machines of a fleet (its τ² is itself a noisy
/// estimate from k points), while HKSJ's t interval holds its level there; the
/// max(1, ·) keeps it from being narrower than the machines' own noise allows
/// when they happen to agree closely. Not a bootstrap over machines: with k
/// machines it has only k distinct values to resample, and its percentile
/// interval is too narrow by about √((k − 1) / k) and ragged at k ≤ 10. One
/// machine: its own Moses interval.
fn random_effects(points: &[Point]) -> Option<RandomEffects> {
    let k = points.len();
    if k == 0 {
        return None;
    }
    if k == 1 {
        let p = points[0];
        return Some(RandomEffects {
            mean: p.estimate,
            ci: Some(p.ci),
            tau2: 0.0,
            q: 0.0,
            blocks: 1,
        });
    }
    let w: Vec<f64> = points.iter().map(|p| 1.0 / (p.se * p.se)).collect();
    let sum_w: f64 = w.iter().sum();
    let fixed = points.iter().zip(&w).map(|(p, w)| w * p.estimate).sum::<f64>() / sum_w;
    let q: f64 = points
        .iter()
        .zip(&w)
        .map(|(p, w)| w * (p.estimate - fixed).powi(2))
        .sum();
    let df = (k - 1) as f64;
    let c = sum_w - w.iter().map(|w| w * w).sum::<f64>() / sum_w;
    let tau2 = if c > 0.0 { ((q - df) / c).max(0.0) } else { 0.0 };
    let w_star: Vec<f64> = points.iter().map(|p| 1.0 / (p.se * p.se + tau2)).collect();
    let sum_ws: f64 = w_star.iter().sum();
    let mean = points
        .iter()
        .zip(&w_star)
        .map(|(p, w)| w * p.estimate)
        .sum::<f64>()
        / sum_ws;
    let q_hk = points
        .iter()
        .zip(&w_star)
        .map(|(p, w)| w * (p.estimate - mean).powi(2))
        .sum::<f64>()
        / df;
    let half =
        special::t_quantile(1.0 - (1.0 - COMPARE_CONFIDENCE) / 2.0, df) * (q_hk.max(1.0) / sum_ws).sqrt();
    Some(RandomEffects {
        mean,
        ci: half.is_finite().then_some((mean - half, mean + half)),
        tau2,
        q,
        blocks: k,
    })
}

fn heterogeneity(pooled: &RandomEffects, per_block: &[Comparison]) -> Heterogeneity {
    let df = pooled.blocks - 1;
    let q = pooled.q;
    let mut faster = Vec::new();
    let mut slower = Vec::new();
    for (i, c) in per_block.iter().enumerate() {
        match c.relative.as_ref().and_then(|r| r.ci) {
            Some((_, hi)) if hi < 0.0 => faster.push(i),
            Some((lo, _)) if lo > 0.0 => slower.push(i),
            _ => {}
        }
    }
    Heterogeneity {
        q,
        df,
        p_value: special::chi_square_upper(q, df as f64),
        i2: if q > 0.0 {
            ((q - df as f64) / q).max(0.0)
        } else {
            0.0
        },
        disagree: !faster.is_empty() && !slower.is_empty(),
        faster,
        slower,
    }
}

/// van Elteren's test of candidate against baseline, machines as strata: each
/// machine's Wilcoxon rank sum of the candidate, weighted 1 / (N_i + 1), so
/// every machine's ranks count on the same 0–1 scale (the locally most powerful
/// stratified rank test when the shift is the same on every machine; R's
/// `coin::wilcox_test(y ~ g | block)` sums unweighted rank sums instead, which
/// is the same test when machines have equal run counts). Machines without runs
/// of both variants carry no information and are skipped; `None` when no
/// machine remains or every run ties.
pub fn van_elteren(blocks: &[Block<'_>]) -> Option<VanElteren> {
    let (mut statistic, mut expected, mut variance) = (0.0, 0.0, 0.0);
    for b in blocks {
        let (nc, nb) = (b.candidate.len(), b.baseline.len());
        if nc == 0 || nb == 0 {
            continue;
        }
        let rs = rank_sum(b.candidate, b.baseline);
        let total = (nc + nb) as f64;
        let w = 1.0 / (total + 1.0);
        let nc_f = nc as f64;
        let rank_sum_c = rs.u + nc_f * (nc_f + 1.0) / 2.0;
        statistic += w * rank_sum_c;
        expected += w * nc_f * (total + 1.0) / 2.0;
        variance += w * w * null_sigma(nc, nb, rs.tie_term).powi(2);
    }
    if variance <= 0.0 {
        return None;
    }
    let z = (statistic - expected) / variance.sqrt();
    Some(VanElteren {
        statistic,
        expected,
        variance,
        z,
        p_value: normal::two_sided_p(z),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Three machines, unequal run counts, a tie on machines 1 and 2; candidate
    // (b) slower on the first two. Machine levels differ by ±30 %.
    const B1: [f64; 7] = [101.2, 98.7, 103.4, 99.9, 100.8, 102.2, 97.6];
    const C1: [f64; 6] = [104.1, 106.3, 103.0, 105.5, 104.1, 107.2];
    const B2: [f64; 5] = [131.0, 128.4, 133.9, 130.2, 129.5];
    const C2: [f64; 6] = [134.8, 136.1, 132.0, 135.5, 137.9, 133.9];
    const B3: [f64; 8] = [88.1, 90.4, 87.3, 89.9, 91.2, 88.8, 86.5, 90.0];
    const C3: [f64; 5] = [88.6, 91.7, 89.3, 92.4, 90.1];

    fn three() -> [Block<'static>; 3] {
        [
            Block {
                baseline: &B1,
                candidate: &C1,
            },
            Block {
                baseline: &B2,
                candidate: &C2,
            },
            Block {
                baseline: &B3,
                candidate: &C3,
            },
        ]
    }

    /// R 4.2.2, coin 1.4.2 (a = baseline, b = candidate):
    /// ```text
    /// y <- c(B1, C1, B2, C2, B3, C3)   # the arrays above, in that order
    /// g <- factor(c(rep("a", 7), rep("b", 6), rep("a", 5), rep("b", 6), rep("a", 8), rep("b", 5)),
    ///             levels = c("b", "a"))
    /// blk <- factor(c(rep(1, 13), rep(2, 11), rep(3, 13)))
    /// # by formula: T = Σ W_k / (N_k + 1), W_k = sum(rank(y)[b]) within machine k,
    /// # E = Σ n_k / 2, V = Σ (m n / 12 ((N + 1) − Σ(t³ − t) / (N (N − 1)))) / (N + 1)²
    /// #   T = 11.6964285714286  E = 8.5  V = 0.694794788544789
    /// #   z = 3.83474710134719  p = 0.000125693554365149
    /// it <- independence_test(y ~ g | blk, teststat = "scalar", distribution = "asymptotic",
    ///   ytrafo = function(data) trafo(data, numeric_trafo = function(x) rank(x) / (length(x) + 1),
    ///                                 block = blk))
    /// statistic(it)  # 3.83474710134719;  pvalue(it)  # 0.000125693554365203
    /// wilcox_test(y ~ g | blk, distribution = "asymptotic")  # unweighted: z = 3.79531327376313
    /// ```
    #[test]
    fn van_elteren_matches_r() {
        let v = van_elteren(&three()).unwrap_or_else(|| panic!("a statistic"));
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1.0);
        assert!(close(v.statistic, 11.6964285714286), "{v:?}");
        assert!(close(v.expected, 8.5), "{v:?}");
        assert!(close(v.variance, 0.694794788544789), "{v:?}");
        assert!(close(v.z, 3.83474710134719), "{v:?}");
        assert!((v.p_value / 0.000125693554365149 - 1.0).abs() < 1e-9, "{v:?}");
        // Swapping the variants flips the sign, not the p-value.
        let swapped: Vec<Block> = three()
            .iter()
            .map(|b| Block {
                baseline: b.candidate,
                candidate: b.baseline,
            })
            .collect();
        let back = van_elteren(&swapped).unwrap_or_else(|| panic!("a statistic"));
        assert!(close(back.z, -3.83474710134719) && close(back.p_value, v.p_value));
    }

    /// Each machine's shift is today's Hodges–Lehmann with its Moses interval. R 4.2.2:
    /// ```text
    /// for (k in 1:3) print(wilcox.test(y[blk == k & g == "b"], y[blk == k & g == "a"],
    ///                                  conf.int = TRUE)[c("estimate", "conf.int")])
    /// # 1: 4.3000249668252   [1.90002879667072, 6.7999473168014]   (a tie: normal approximation)
    /// # 2: 4.51872760470365  [1.00001963542748, 7.69999428915453]  (a tie: normal approximation)
    /// # 3: 1.3               [-1.10000000000001, 3.60000000000001] (exact)
    /// ```
    /// With ties R solves the normal-approximation statistic by `uniroot`, which
    /// lands within its tolerance (1e-4 here) of the order statistic the Moses
    /// interval picks, and estimates the shift the same way (4.5187 on machine 2
    /// against the median difference, R's `median(outer(C2, B2, "-"))` = 4.55):
    /// the intervals are compared to 1e-4, the tie-free machine exactly.
    #[test]
    fn per_machine_shifts_match_r() {
        let c = compare_blocked(&three(), CompareOptions::default());
        let shift = |i: usize| c.blocks[i].shift.clone().unwrap_or_else(|| panic!("shift {i}"));
        let ci = |i: usize| shift(i).ci.unwrap_or_else(|| panic!("ci {i}"));
        for (i, lo, hi) in [
            (0, 1.90002879667072, 6.7999473168014),
            (1, 1.00001963542748, 7.69999428915453),
        ] {
            assert!(
                (ci(i).0 - lo).abs() < 1e-4 && (ci(i).1 - hi).abs() < 1e-4,
                "{i}: {:?}",
                ci(i)
            );
        }
        assert!((shift(0).estimate - 4.3000249668252).abs() < 1e-4);
        assert!((shift(1).estimate - 4.55).abs() < 1e-9);
        assert!((shift(2).estimate - 1.3).abs() < 1e-12);
        assert!((ci(2).0 + 1.1).abs() < 1e-12 && (ci(2).1 - 3.6).abs() < 1e-12);
    }

    #[test]
    fn pooled_interval_holds_every_machine_and_agrees_with_the_verdict() {
        let c = compare_blocked(&three(), CompareOptions::default());
        let rel = c.relative.clone().unwrap_or_else(|| panic!("pooled"));
        assert_eq!(rel.blocks, 3);
        let (lo, hi) = rel.ci.unwrap_or_else(|| panic!("pooled ci"));
        assert!(lo < rel.estimate && rel.estimate < hi, "{rel:?}");
        // Three machines, t on 2 df: wide. The estimate lies among the machines'.
        let each: Vec<f64> = c
            .blocks
            .iter()
            .filter_map(|b| b.relative.as_ref().map(|r| r.estimate))
            .collect();
        let (min, max) = each
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        assert!(min <= rel.estimate && rel.estimate <= max, "{rel:?} {each:?}");
        assert_eq!(c.verdict, decide(lo, hi, c.noise).0);
        let h = c.heterogeneity.clone().unwrap_or_else(|| panic!("heterogeneity"));
        assert_eq!(
            (h.df, h.slower.clone(), h.faster.clone(), h.disagree),
            (2, vec![0, 1], vec![], false)
        );
        assert!((0.0..=1.0).contains(&h.p_value) && (0.0..=1.0).contains(&h.i2));
        let shift = c.shift.clone().unwrap_or_else(|| panic!("pooled shift"));
        assert!(shift.estimate > 1.3 && shift.estimate < 4.6, "{shift:?}");
    }

    #[test]
    fn one_machine_is_todays_comparison() {
        let block = [Block {
            baseline: &B1,
            candidate: &C1,
        }];
        let c = compare_blocked(&block, CompareOptions::default());
        let today = compare(&B1, &C1, CompareOptions::default());
        let rel = c.relative.clone().unwrap_or_else(|| panic!("pooled"));
        let want = today.relative.clone().unwrap_or_else(|| panic!("relative"));
        let (lo, hi) = rel.ci.unwrap_or_else(|| panic!("ci"));
        let (wlo, whi) = want.ci.unwrap_or_else(|| panic!("ci"));
        assert!((rel.estimate - want.estimate).abs() < 1e-12);
        assert!((lo - wlo).abs() < 1e-12 && (hi - whi).abs() < 1e-12);
        assert_eq!(c.verdict, today.verdict);
        assert!(c.heterogeneity.is_none());
    }

    #[test]
    fn machines_that_disagree_are_named() {
        let b1: Vec<f64> = (0..12).map(|i| 100.0 + f64::from(i)).collect();
        let b2: Vec<f64> = (0..12).map(|i| 130.0 + f64::from(i)).collect();
        let c1: Vec<f64> = b1.iter().map(|x| x + 20.0).collect(); // slower on machine 0
        let c2: Vec<f64> = b2.iter().map(|x| x - 26.0).collect(); // faster on machine 1
        let blocks = [
            Block {
                baseline: &b1,
                candidate: &c1,
            },
            Block {
                baseline: &b2,
                candidate: &c2,
            },
        ];
        let c = compare_blocked(&blocks, CompareOptions::default());
        let h = c.heterogeneity.clone().unwrap_or_else(|| panic!("heterogeneity"));
        assert!(h.disagree && h.slower == vec![0] && h.faster == vec![1], "{h:?}");
        assert!(h.p_value < 1e-6 && h.i2 > 0.9, "{h:?}");
        // Opposite effects on two machines: the pooled interval cannot call it.
        assert_eq!(c.verdict, Verdict::Same, "{c:?}");
    }

    #[test]
    fn too_little_data_or_design_gives_no_verdict() {
        let empty = compare_blocked(&[], CompareOptions::default());
        assert_eq!(empty.verdict, Verdict::None);
        assert!(empty.van_elteren.is_none() && empty.relative.is_none());
        let one_side = [Block {
            baseline: &B1,
            candidate: &[],
        }];
        let c = compare_blocked(&one_side, CompareOptions::default());
        assert!(
            c.reason.as_deref().unwrap_or("").contains("both variants"),
            "{c:?}"
        );
        let tiny = [Block {
            baseline: &[1.0, 2.0, 3.0],
            candidate: &[4.0, 5.0, 6.0],
        }];
        let c = compare_blocked(&tiny, CompareOptions::default());
        assert_eq!(c.verdict, Verdict::None);
        assert!(c.reason.as_deref().unwrap_or("").contains("enough runs"), "{c:?}");
        let seq = CompareOptions {
            design: Design::Sequential,
            ..Default::default()
        };
        let c = compare_blocked(&three(), seq);
        assert_eq!(c.verdict, Verdict::None);
        assert!(c.reason.as_deref().unwrap_or("").contains("sequential"), "{c:?}");
    }
}
