//! The untraced estimates beside the traced figures (explain/estimate.rs).

use super::format::ms;
use coldstart_explain::estimate::{Estimate, Estimated, Noise, MAX_MARGIN_PCT, MAX_SPREAD_PCT};

/// Why the estimates are not shown, one line each (the first says so; the
/// terminal and the HTML page print the same lines); empty when they are.
pub fn not_shown(e: &Estimate) -> Vec<String> {
    if e.reliable {
        return Vec::new();
    }
    let mut lines = vec![
        "untraced estimates: not shown — this machine is too noisy to estimate untraced times here; every figure below is traced (with the tracer's cost)".to_string(),
    ];
    lines.extend(e.noise.iter().map(noise));
    lines.push("more runs (e.g. --runs 40) or a quieter machine narrow the noise".into());
    lines
}

/// The method and its error, under the overhead line; or, when the
/// estimates are not reliable, why, and that the figures below are traced.
pub fn headline(e: &Estimate) -> String {
    let c = &e.calibration;
    if !e.reliable {
        let lines = not_shown(e);
        let mut out = String::new();
        for (i, l) in lines.iter().enumerate() {
            out.push_str(if i == 0 { "" } else { "  " });
            out.push_str(l);
            out.push('\n');
        }
        return out;
    }
    let mut out = format!(
        "untraced estimate: each of the {} stops before ready costs {:.1} µs (kernel round trip, calibrated: {} rounds, ±{:.0} %) + the tracer's own time on it (measured; {:.1} µs in calibration) = {} in the run shown\n",
        thousands(e.stops),
        c.round_trip_us,
        c.rounds,
        c.spread_pct,
        c.held_us,
        ms(e.stops_cost_ms),
    );
    let scale = match e.scale_ci {
        Some((lo, hi)) => format!("×{:.2} [×{lo:.2}, ×{hi:.2}]", e.scale),
        None => format!("×{:.2}", e.scale),
    };
    match (e.untraced_median_ms, e.error_pct) {
        (Some(u), Some(err)) => out.push_str(&format!(
            "  calibrated estimate of the total {} vs untraced median {} ({}); so each stop's cost is scaled {scale} to match the untraced runs ({} in the run shown): estimated total {}{}\n",
            ms(e.calibrated_total_ms),
            ms(u),
            super::format::signed_percent(err / 100.0),
            ms(e.scaled_cost_ms),
            ms(e.total_ms),
            range(e.total_range_ms),
        )),
        _ => out.push_str(&format!(
            "  estimated total {} (no untraced runs to check it against)\n",
            ms(e.total_ms)
        )),
    }
    out
}

/// One reason the estimates are not shown.
fn noise(n: &Noise) -> String {
    match n {
        Noise::NoUntracedRuns => "no untraced runs to scale the tracer's cost against".into(),
        Noise::TooFewRuns => "too few runs for an interval on the tracer's cost (--runs 4 or more)".into(),
        Noise::OverheadInsideNoise {
            traced_ms,
            untraced_ms,
        } => format!(
            "the traced runs (median {}) are not measurably slower than the untraced ones ({}): the tracer's cost is inside the noise",
            ms(*traced_ms),
            ms(*untraced_ms)
        ),
        Noise::WideCalibration { spread_pct } => format!(
            "the calibration rounds disagree by ±{spread_pct:.0} % (at most ±{MAX_SPREAD_PCT:.0} %)"
        ),
        Noise::WideMargin { margin_pct } => format!(
            "the estimated total's 95 % range is ±{margin_pct:.0} % wide (at most ±{MAX_MARGIN_PCT:.0} %)"
        ),
    }
}

/// ` (95 %: 91.0–104.2 ms)`, or nothing.
fn range(r: Option<(f64, f64)>) -> String {
    r.map(|(lo, hi)| format!(" (95 %: {}–{})", ms(lo), ms(hi)))
        .unwrap_or_default()
}

/// `  ≈ 12.3 ms untraced (±8 %)`, or nothing without a reliable estimate.
pub fn untraced(e: Option<&Estimated>) -> String {
    let Some(e) = e.filter(|e| e.range_ms.is_some()) else {
        return String::new();
    };
    let margin = e
        .range_ms
        .filter(|_| e.estimate_ms > 0.0)
        .map(|(lo, hi)| format!(" (±{:.0} %)", (hi - lo) / 2.0 / e.estimate_ms * 100.0))
        .unwrap_or_default();
    format!("  ≈ {} untraced{margin}", ms(e.estimate_ms))
}

/// The open groups' spans, estimated.
pub fn spans(groups: &[Estimated], n: usize) -> String {
    let mut out = String::from("  their spans untraced (≈): ");
    let parts: Vec<String> = groups
        .iter()
        .take(n)
        .map(|g| format!("{} {}", g.name, ms(g.estimate_ms)))
        .collect();
    out.push_str(&parts.join(" · "));
    out.push('\n');
    out
}

/// 5320 → 5,320.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_explain::estimate::Calibration;

    #[test]
    fn the_headline_states_the_method_and_its_error() {
        let e = Estimate {
            method: "per-stop subtraction, residual-scaled".into(),
            calibration: Calibration {
                round_trip_us: 11.0,
                held_us: 7.0,
                stops: 2016,
                rounds: 5,
                spread_pct: 8.0,
            },
            calibrated_total_ms: 108.0,
            untraced_median_ms: Some(100.0),
            error_pct: Some(8.0),
            scale: 0.9,
            scale_ci: Some((0.8, 1.0)),
            reliable: true,
            noise: Vec::new(),
            total_ms: 100.0,
            total_range_ms: Some((95.0, 105.0)),
            phases: Vec::new(),
            exec_chain: Vec::new(),
            opens_by_kind: Vec::new(),
            stops: 5320,
            stops_cost_ms: 95.8,
            scaled_cost_ms: 86.2,
            runs: Vec::new(),
        };
        let h = headline(&e);
        assert!(
            h.contains("each of the 5,320 stops before ready costs 11.0 µs"),
            "{h}"
        );
        assert!(
            h.contains("±8 %") && h.contains("95.8 ms in the run shown"),
            "{h}"
        );
        assert!(h.contains("vs untraced median 100.0 ms (+8.0 %)"), "{h}");
        assert!(
            h.contains("scaled ×0.90") && h.contains("estimated total 100.0 ms"),
            "{h}"
        );
        assert_eq!(untraced(None), "");
    }

    #[test]
    fn an_unreliable_estimate_says_it_is_too_noisy_and_why() {
        let e = Estimate {
            method: "per-stop subtraction, residual-scaled".into(),
            calibration: Calibration {
                round_trip_us: 11.0,
                held_us: 7.0,
                stops: 2016,
                rounds: 5,
                spread_pct: 538.0,
            },
            calibrated_total_ms: 108.0,
            untraced_median_ms: Some(100.0),
            error_pct: Some(8.0),
            scale: 0.9,
            scale_ci: Some((0.8, 1.0)),
            reliable: false,
            noise: vec![coldstart_explain::estimate::Noise::WideCalibration { spread_pct: 538.0 }],
            total_ms: 100.0,
            total_range_ms: None,
            phases: Vec::new(),
            exec_chain: Vec::new(),
            opens_by_kind: Vec::new(),
            stops: 5320,
            stops_cost_ms: 95.8,
            scaled_cost_ms: 86.2,
            runs: Vec::new(),
        };
        let text = headline(&e);
        assert!(
            text.contains("too noisy to estimate untraced times") && text.contains("±538 %"),
            "{text}"
        );
    }
}
