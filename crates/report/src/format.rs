//! Number formatting shared by the terminal and Markdown reports.

use coldstart_core::stats::{percent, Comparison, Detectable, Summary, Verdict, POWER};

/// A duration in milliseconds, with a unit and precision that fit its size.
pub fn ms(x: f64) -> String {
    let a = x.abs();
    if a < 1.0 {
        format!("{:.0} µs", x * 1000.0)
    } else if a < 10.0 {
        format!("{x:.2} ms")
    } else if a < 1000.0 {
        format!("{x:.1} ms")
    } else {
        format!("{:.2} s", x / 1000.0)
    }
}

/// A signed duration (for shifts); one that rounds to zero has no sign ("−0 µs"
/// read as a shift).
pub fn signed_ms(x: f64) -> String {
    if ms(x.abs()) == ms(0.0) {
        ms(0.0)
    } else if x >= 0.0 {
        format!("+{}", ms(x))
    } else {
        format!("−{}", ms(-x))
    }
}

pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// A signed share, `+2.5 %` / `−0.8 %`.
pub fn signed_percent(x: f64) -> String {
    let p = x * 100.0;
    let digits = if p.abs() >= 10.0 { 0 } else { 1 };
    if p >= 0.0 {
        format!("+{p:.digits$} %")
    } else {
        format!("−{:.digits$} %", -p)
    }
}

/// One line saying how a variant compares with the baseline; never a bare delta:
/// the verdict, the shift with the interval the verdict was decided on, the p-value.
pub fn comparison(c: &Comparison) -> String {
    let head = match c.verdict {
        Verdict::Faster => "faster".to_string(),
        Verdict::Slower => "slower".to_string(),
        Verdict::Same => "~ no significant difference".to_string(),
        Verdict::WithinNoise => format!("~ within the ±{} noise threshold", percent(c.noise)),
        Verdict::None => c.reason.clone().unwrap_or_else(|| "no verdict".to_string()),
    };
    let mut parts = vec![head];
    if let Some(s) = &c.shift {
        let rel = c
            .relative
            .as_ref()
            .map(|r| format!(" ({})", signed_percent(r.estimate)))
            .unwrap_or_default();
        let ci = match c.relative.as_ref().and_then(|r| r.ci) {
            Some((lo, hi)) => format!(" [95% CI {}, {}]", signed_percent(lo), signed_percent(hi)),
            None if c.design.supports_verdict() => String::new(),
            None => " (estimate only)".to_string(),
        };
        parts.push(format!("shift {}{rel}{ci}", signed_ms(s.estimate)));
    }
    if let Some(m) = &c.mann_whitney {
        parts.push(format!("p = {}", p_value(m.p_value)));
    }
    parts.join(", ")
}

/// The power statement under a comparison, when it has one.
pub fn detectable(c: &Comparison) -> Option<String> {
    c.detectable.as_ref().map(detectable_line)
}

/// The power statement: the smallest shift the experiment could detect.
pub fn detectable_line(d: &Detectable) -> String {
    let mut s = format!(
        "could detect ≥ {} ({}) at {:.0}% power",
        percent(d.relative),
        ms(d.shift),
        POWER * 100.0
    );
    if let Some((goal, runs)) = d.goal {
        s.push_str(&format!("; for {} run ~{runs} per variant", percent(goal)));
    }
    s
}

/// A median with its 95 % CI.
pub fn median_with_ci(s: &Summary) -> String {
    match s.p50_ci {
        Some((lo, hi)) => format!("{} [{}, {}]", ms(s.p50), ms(lo), ms(hi)),
        None => format!("{} [n too small]", ms(s.p50)),
    }
}

/// A tail percentile; `*` when too few runs make it unreliable.
pub fn tail(x: f64, reliable: bool) -> String {
    if reliable {
        ms(x)
    } else {
        format!("{}*", ms(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shift_that_rounds_to_zero_has_no_sign() {
        assert_eq!(signed_ms(-0.0004), "0 µs");
        assert_eq!(signed_ms(0.0), "0 µs");
        assert_eq!(signed_ms(-0.002), "−2 µs");
        assert_eq!(signed_ms(1.5), "+1.50 ms");
    }

    #[test]
    fn units_fit_magnitude() {
        assert_eq!(ms(0.25), "250 µs");
        assert_eq!(ms(5.5), "5.50 ms");
        assert_eq!(ms(83.04), "83.0 ms");
        assert_eq!(ms(7000.0), "7.00 s");
        assert_eq!(signed_ms(-2.0), "−2.00 ms");
    }
}
