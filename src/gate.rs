//! The regression gate's decision: per target, pass / warn / fail from bench's
//! own comparison statistics. Pure: no store, no output.

use crate::stats::{self, Comparison, Verdict};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Warn,
    Fail,
}

#[derive(Debug, Clone, Serialize)]
pub struct GateRow {
    pub target: String,
    pub baseline_p50_ms: Option<f64>,
    pub candidate_p50_ms: Option<f64>,
    pub baseline_runs: usize,
    pub candidate_runs: usize,
    pub comparison: Comparison,
    pub status: Status,
}

/// Thresholds as fractions (0.05 = 5 %).
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    pub fail: f64,
    pub warn: Option<f64>,
}

/// Fail: significantly slower and the whole ratio CI beyond +fail. Warn:
/// significantly slower and the median ratio beyond +warn. Else pass.
pub fn decide(c: &Comparison, t: Thresholds) -> Status {
    if c.verdict != Verdict::Slower {
        return Status::Pass;
    }
    let Some(ratio) = &c.ratio else {
        return Status::Pass;
    };
    if ratio.ci.0 > 1.0 + t.fail {
        Status::Fail
    } else if t.warn.is_some_and(|w| ratio.estimate > 1.0 + w) {
        Status::Warn
    } else {
        Status::Pass
    }
}

pub fn row(target: &str, baseline_ms: &[f64], candidate_ms: &[f64], t: Thresholds) -> GateRow {
    let comparison = stats::compare(baseline_ms, candidate_ms);
    let median = |xs: &[f64]| {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        stats::summarize(&v).map(|s| s.p50)
    };
    GateRow {
        target: target.to_string(),
        baseline_p50_ms: median(baseline_ms),
        candidate_p50_ms: median(candidate_ms),
        baseline_runs: baseline_ms.len(),
        candidate_runs: candidate_ms.len(),
        status: decide(&comparison, t),
        comparison,
    }
}

/// `5%` or `5` → 0.05.
pub fn parse_percent(flag: &str, s: &str) -> anyhow::Result<f64> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| anyhow::anyhow!("bad {flag} '{s}': write a percentage such as 5%"))?;
    if !(v >= 0.0 && v.is_finite()) {
        anyhow::bail!("bad {flag} '{s}': must be a percentage ≥ 0");
    }
    Ok(v / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(base: f64, n: usize) -> Vec<f64> {
        // Deterministic spread of ±1 % around `base`.
        (0..n)
            .map(|i| base * (1.0 + ((i * 7919) % 21) as f64 / 1000.0 - 0.01))
            .collect()
    }

    #[test]
    fn ten_percent_regression_fails_warns_or_passes_by_threshold() {
        let a = series(100.0, 30);
        let b = series(110.0, 30);
        let t = |fail, warn| Thresholds { fail, warn };
        assert_eq!(row("x", &a, &b, t(0.05, None)).status, Status::Fail);
        assert_eq!(row("x", &a, &b, t(0.15, None)).status, Status::Pass);
        assert_eq!(row("x", &a, &b, t(0.15, Some(0.03))).status, Status::Warn);
        // A/A passes; so does an improvement.
        assert_eq!(
            row("x", &a, &series(100.0, 30), t(0.05, Some(0.0))).status,
            Status::Pass
        );
        assert_eq!(row("x", &b, &a, t(0.0, Some(0.0))).status, Status::Pass);
    }

    #[test]
    fn percent_parsing() {
        assert_eq!(parse_percent("--x", "5%").unwrap(), 0.05);
        assert_eq!(parse_percent("--x", "2.5").unwrap(), 0.025);
        assert!(parse_percent("--x", "five").is_err());
        assert!(parse_percent("--x", "-1%").is_err());
    }
}
