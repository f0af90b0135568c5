//! Number formatting shared by the terminal and Markdown reports.

use crate::stats::{Comparison, Verdict};

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

/// A signed duration (for shifts).
pub fn signed_ms(x: f64) -> String {
    if x >= 0.0 {
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

/// One line saying how a variant compares with the baseline; never a bare delta.
pub fn comparison(c: &Comparison) -> String {
    let shift = match &c.shift {
        Some(s) => match s.ci {
            Some((lo, hi)) => format!(
                "shift {} [{}, {}]",
                signed_ms(s.estimate),
                signed_ms(lo),
                signed_ms(hi)
            ),
            None => format!("shift {} (too few runs for a CI)", signed_ms(s.estimate)),
        },
        None => "too few runs to compare".to_string(),
    };
    let ratio = c
        .ratio
        .as_ref()
        .map(|r| format!("×{:.3} [{:.3}, {:.3}]", r.estimate, r.ci.0, r.ci.1))
        .unwrap_or_default();
    let p = c
        .mann_whitney
        .as_ref()
        .map(|m| format!("p = {}", p_value(m.p_value)))
        .unwrap_or_default();
    let head = match c.verdict {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::Same => "~ no significant difference",
    };
    [head.to_string(), ratio, shift, p]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_fit_magnitude() {
        assert_eq!(ms(0.25), "250 µs");
        assert_eq!(ms(5.5), "5.50 ms");
        assert_eq!(ms(83.04), "83.0 ms");
        assert_eq!(ms(7000.0), "7.00 s");
        assert_eq!(signed_ms(-2.0), "−2.00 ms");
    }
}
