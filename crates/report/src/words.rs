//! A comparison said in plain words, for people who do not read `×1.45 [1.38, 1.48]`:
//! "b starts 24 ms (25 %) slower than a; 95 % CI 17–30 %; p = 5.0e-8; could detect ≥ 2 %".
//! Shared by the terminal report (one line under each Δ) and the HTML report.

use super::format::{ms, p_value};
use coldstart_core::stats::{percent, Comparison, Verdict};

/// One sentence about `name` against `baseline`, with the power statement.
pub fn verdict(c: &Comparison, name: &str, baseline: &str) -> String {
    sentence(c, name, baseline, true)
}

/// The sentence; `power`: end with "could detect ≥ …" (the terminal prints the
/// power line right under it instead).
pub fn sentence(c: &Comparison, name: &str, baseline: &str, power: bool) -> String {
    let mut parts = Vec::new();
    let rel = c.relative.as_ref();
    let shift = c.shift.as_ref();
    let size = match (shift, rel) {
        (Some(s), Some(r)) => format!("{} ({})", ms(s.estimate.abs()), percent(r.estimate.abs())),
        (Some(s), None) => ms(s.estimate.abs()),
        _ => String::new(),
    };
    let direction = |est: f64| if est >= 0.0 { "slower" } else { "faster" };
    let sign = |est: f64| if est >= 0.0 { "+" } else { "−" };
    // Some reasons already begin with "no verdict: ".
    let reason = |default: &'static str| {
        let r = c.reason.as_deref().unwrap_or(default);
        r.strip_prefix("no verdict: ").unwrap_or(r).to_string()
    };
    let head = match (c.verdict, shift) {
        (Verdict::Faster | Verdict::Slower, Some(s)) => {
            format!("{name} starts {size} {} than {baseline}", direction(s.estimate))
        }
        (Verdict::WithinNoise, Some(s)) => format!(
            "{name} starts {size} {} than {baseline}: real, but within the ±{} noise threshold",
            direction(s.estimate),
            percent(c.noise)
        ),
        // No verdict word where there is no verdict: the estimate is signed instead.
        (Verdict::Same, Some(s)) => format!(
            "no significant difference between {name} and {baseline} (estimate {}{size})",
            sign(s.estimate)
        ),
        (Verdict::None, Some(s)) => format!(
            "no verdict: {} (estimate: {name} {}{size} against {baseline})",
            reason("the runs cannot support one"),
            sign(s.estimate)
        ),
        (_, None) => format!("no verdict: {}", reason("a side has no successful run")),
    };
    parts.push(head);
    if let Some((lo, hi)) = rel.and_then(|r| r.ci) {
        parts.push(format!("95 % CI {}", interval(lo, hi, c.verdict)));
    }
    if let Some(m) = &c.mann_whitney {
        parts.push(format!("p = {}", p_value(m.p_value)));
    }
    if let Some(d) = c.detectable.as_ref().filter(|_| power) {
        parts.push(format!("could detect ≥ {}", percent(d.relative)));
    }
    parts.join("; ")
}

/// The CI of a relative shift: as magnitudes ("17–30 %") when it lies on one side
/// of zero, since the sentence already says slower or faster; signed otherwise.
fn interval(lo: f64, hi: f64, verdict: Verdict) -> String {
    let one_side = (lo > 0.0 && hi > 0.0) || (lo < 0.0 && hi < 0.0);
    if one_side && verdict != Verdict::Same {
        let (a, b) = if lo > 0.0 { (lo, hi) } else { (-hi, -lo) };
        let a = percent(a);
        format!("{}–{}", a.trim_end_matches(" %"), percent(b))
    } else {
        format!(
            "{} to {}",
            super::format::signed_percent(lo),
            super::format::signed_percent(hi)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_core::stats::{compare, CompareOptions, Design};

    fn xs(base: f64, n: usize) -> Vec<f64> {
        (0..n).map(|i| base + (i % 7) as f64 * 0.5).collect()
    }

    #[test]
    fn a_clear_slowdown_reads_as_a_sentence() {
        let c = compare(
            &xs(100.0, 30),
            &xs(125.0, 30),
            CompareOptions {
                design: Design::Interleaved,
                noise: 0.01,
            },
        );
        let s = verdict(&c, "b", "a");
        assert!(
            s.starts_with("b starts 25.0 ms (25 %) slower than a; 95 % CI "),
            "{s}"
        );
        assert!(s.contains("; p = ") && s.contains("could detect ≥ "), "{s}");
        assert!(!s.contains('×') && !s.contains('['), "no notation to decode: {s}");
    }

    #[test]
    fn faster_and_no_difference() {
        let opts = CompareOptions {
            design: Design::Interleaved,
            noise: 0.01,
        };
        let s = verdict(&compare(&xs(100.0, 30), &xs(80.0, 30), opts), "b", "a");
        assert!(s.starts_with("b starts 20.0 ms (20 %) faster than a"), "{s}");
        let s = verdict(&compare(&xs(100.0, 30), &xs(100.0, 30), opts), "b", "a");
        assert!(s.starts_with("no significant difference between b and a"), "{s}");
        assert!(s.contains(" to "), "a CI across zero keeps its signs: {s}");
        let s = verdict(
            &compare(
                &xs(100.0, 30),
                &xs(125.0, 30),
                CompareOptions {
                    design: Design::Sequential,
                    noise: 0.01,
                },
            ),
            "b",
            "a",
        );
        assert!(s.starts_with("no verdict: "), "{s}");
        assert!(!s.contains("no verdict: no verdict"), "{s}");
        let few = verdict(&compare(&xs(100.0, 2), &xs(125.0, 2), opts), "b", "a");
        assert!(
            few.starts_with("no verdict: ") && !few.contains("no verdict: no verdict"),
            "{few}"
        );
    }
}
