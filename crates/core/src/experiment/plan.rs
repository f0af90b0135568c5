//! What an experiment will do, fully validated before the first spawn: only the
//! schedule. How one run is done (targets, probes, timeouts, a Lambda emulation)
//! is the runner's business (see `Runner`), so the plan fits every kind of run.

use crate::target::Target;
use serde::{Deserialize, Serialize};

/// A variant as the store, the progress line and the reports see it: a name and
/// a description of what runs. The runner owns what it needs to run one (bench's
/// target and readiness probe, lambda's emulated environment, explain's arms).
#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    pub name: String,
    /// The program and its environment (for lambda, the runtime).
    pub target: Target,
    /// When a run counts as ready, as text: a bench readiness (`exit`,
    /// `tcp:127.0.0.1:8080`, …) or `lambda:init`. Text, not `Readiness`: stored
    /// variants of any kind load back without being parsed into a probe.
    pub readiness: String,
    /// A sweep point's parameter values, in parameter order (empty when nothing
    /// is swept); the name is then `BASE[name=value,...]` (see `point`).
    #[serde(
        with = "super::point::params_serde",
        skip_serializing_if = "Vec::is_empty",
        default
    )]
    pub params: Vec<(String, String)>,
}

impl Variant {
    /// The name without the point's values: `agent` for `agent[heap=64m]`.
    pub fn base_name(&self) -> &str {
        let suffix = super::point::point_name("", &self.params);
        self.name.strip_suffix(&suffix).unwrap_or(&self.name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Each round runs every variant once, in a fresh random order, so drift
    /// (thermal, other load, page cache) hits all variants alike.
    Shuffled,
    /// All runs of the first variant, then all of the next (hyperfine's order).
    Sequential,
}

impl Order {
    /// As the settings and the store's `run_order` column write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Shuffled => "shuffled",
            Order::Sequential => "sequential",
        }
    }

    pub fn parse(s: &str) -> Option<Order> {
        [Order::Shuffled, Order::Sequential]
            .into_iter()
            .find(|o| o.as_str() == s)
    }

    /// Only shuffled rounds let both variants share every drift.
    pub fn design(self) -> coldstart_stats::Design {
        match self {
            Order::Shuffled => coldstart_stats::Design::Interleaved,
            Order::Sequential => coldstart_stats::Design::Sequential,
        }
    }
}

/// When to stop measuring.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StopRule {
    /// Exactly this many successful-or-failed runs per variant.
    Fixed { runs: usize },
    /// Stop when every 95 % CI (of each variant's median, or of each variant's shift
    /// against the baseline) reaches at most `target` from its estimate on either side
    /// (ms, or a fraction of the median when `relative`), between min and max runs.
    Adaptive {
        min_runs: usize,
        max_runs: usize,
        target: f64,
        relative: bool,
        of: CiOf,
    },
}

/// Which interval adaptive stopping narrows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CiOf {
    /// Each variant's median.
    #[default]
    Median,
    /// Each variant's comparison with the baseline: the ratio's interval (as the
    /// report's relative effect) for a relative target, the Hodges–Lehmann shift's
    /// for one in ms.
    Shift,
    /// Each variant's comparison with the baseline decided against this noise
    /// threshold (a fraction), on the ratio's interval as the verdicts use it:
    /// wholly beyond −noise (a gain), or its faster end at −noise or above (no gain
    /// worth having, or slower); an undecided one stops the runs only once its
    /// interval is as precise as `Shift` asks. tune's rule: run until each
    /// candidate is settled, not merely until its interval is narrow.
    Verdict { noise: f64 },
}

impl StopRule {
    pub fn max_runs(&self) -> usize {
        match self {
            StopRule::Fixed { runs } => *runs,
            StopRule::Adaptive { max_runs, .. } => *max_runs,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub variants: Vec<Variant>,
    pub warmup: usize,
    pub order: Order,
    pub stop: StopRule,
    pub keep_going: bool,
    pub seed: u64,
}
