//! The untraced estimates beside the traced figures (explain/estimate.rs).

use super::format::ms;
use crate::explain::estimate::{Estimate, Estimated};

/// The method and its error, under the overhead line.
pub fn headline(e: &Estimate) -> String {
    let c = &e.calibration;
    let mut out = format!(
        "untraced estimate: each of the {} stops before ready costs {:.1} µs (kernel round trip, calibrated: {} rounds, ±{:.0} %) + the tracer's own time on it (measured; {:.1} µs in calibration) = {} in the run shown\n",
        thousands(e.stops),
        c.round_trip_us,
        c.rounds,
        c.spread_pct,
        c.held_us,
        ms(e.stops_cost_ms),
    );
    match (e.untraced_median_ms, e.error_pct) {
        (Some(u), Some(err)) => out.push_str(&format!(
            "  calibrated estimate of the total {} vs untraced median {} ({err:+.1} %); so each stop's cost is scaled ×{:.2} to match the untraced runs ({} in the run shown): estimated total {}\n",
            ms(e.calibrated_total_ms),
            ms(u),
            e.scale,
            ms(e.scaled_cost_ms),
            ms(e.total_ms)
        )),
        _ => out.push_str(&format!(
            "  estimated total {} (no untraced runs to check it against)\n",
            ms(e.total_ms)
        )),
    }
    out
}

/// `  ≈ 12.3 ms untraced`, or nothing without an estimate.
pub fn untraced(e: Option<&Estimated>) -> String {
    e.map(|e| format!("  ≈ {} untraced", ms(e.estimate_ms)))
        .unwrap_or_default()
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
    use crate::explain::estimate::Calibration;

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
            total_ms: 100.0,
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
}
