//! Limits on every duration and count a user can give (flags and coldstart.toml),
//! checked once before any run. Unchecked, a huge value panics in
//! `Duration::from_secs_f64`, wraps the nanosecond deadline arithmetic into an
//! instant timeout, or sizes a schedule that cannot be allocated.

use anyhow::{bail, Result};
use std::time::Duration;

/// The longest duration accepted anywhere (timeouts, grace): one week. Far beyond any
/// cold start, and far below where `now + duration` in u64 nanoseconds could wrap
/// (584 years).
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// The most runs (measured or warmup) per variant: a million runs of even a 1 ms
/// program take 17 minutes, and each sample stays in memory.
pub const MAX_RUNS: usize = 1_000_000;

/// Requests after ready per run (`--requests`, `requests` in coldstart.toml).
pub const MAX_REQUESTS: usize = 100_000;

/// Output lines kept per run for failure messages (`--output-lines`).
pub const MAX_OUTPUT_LINES: usize = 100_000;

/// `v` seconds as a Duration: finite, at most [`MAX_SECONDS`], and above zero unless
/// `zero_ok`. `flag` names the setting in the error ("--timeout", "timeout in coldstart.toml").
pub fn seconds(flag: &str, v: f64, zero_ok: bool) -> Result<Duration> {
    let low_ok = if zero_ok { v >= 0.0 } else { v > 0.0 };
    if !(low_ok && v <= MAX_SECONDS) {
        bail!(
            "{flag} {v}: give a number of seconds {} and at most {MAX_SECONDS} (one week)",
            if zero_ok { "≥ 0" } else { "above 0" }
        );
    }
    // In range, so from_secs_f64 cannot panic.
    Ok(Duration::from_secs_f64(v))
}

/// A count within `min..=max`, with a message naming the flag and the range.
pub fn count(flag: &str, v: usize, min: usize, max: usize) -> Result<usize> {
    if v < min || v > max {
        bail!("{flag} {v}: give a whole number from {min} to {max}");
    }
    Ok(v)
}

/// A count of runs per variant (1..=MAX_RUNS, or 0..=MAX_RUNS for warmups).
pub fn runs(flag: &str, v: usize, min: usize) -> Result<usize> {
    count(flag, v, min, MAX_RUNS)
}

/// `5%` or `5` → 0.05 (a percentage ≥ 0 and below 1000 %).
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage: write e.g. 5%"))?;
    if !(0.0..1000.0).contains(&v) {
        return Err(format!("'{s}' must be a percentage from 0% to below 1000%"));
    }
    Ok(v / 100.0)
}

/// `2%` → (0.02, relative); `5ms` or `5` → (5.0, absolute ms).
pub fn target_ci(s: &str) -> Result<(f64, bool)> {
    let bad = || {
        anyhow::anyhow!("bad --target-ci '{s}': write a percentage of the median (2%) or milliseconds (5ms)")
    };
    let (num, relative) = match s.strip_suffix('%') {
        Some(n) => (n, true),
        None => (s.strip_suffix("ms").unwrap_or(s), false),
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    // Above 100% or a week the stopping rule is meaningless (and from_secs_f64 of it panics).
    let max = if relative { 100.0 } else { MAX_SECONDS * 1e3 };
    if !(v > 0.0 && v <= max) {
        return Err(bad());
    }
    Ok(if relative { (v / 100.0, true) } else { (v, false) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_issue_values_are_refused_with_the_flag_named() {
        for v in [1e20, 1e300, 18446744070.0, f64::INFINITY, f64::NAN, -1.0] {
            let e = seconds("--timeout", v, false).unwrap_err().to_string();
            assert!(e.starts_with("--timeout ") && e.contains("one week"), "{e}");
        }
        assert!(seconds("--timeout", 0.0, false).is_err());
        assert_eq!(seconds("--grace", 0.0, true).unwrap(), Duration::ZERO);
        assert_eq!(
            seconds("--timeout", MAX_SECONDS, false).unwrap().as_secs(),
            604_800
        );
        assert!(runs("--runs", usize::MAX, 1).is_err());
        assert!(runs("--runs", 0, 1).is_err());
        assert_eq!(runs("--warmup", 0, 0).unwrap(), 0);
    }

    proptest! {
        // A failure is printed with its input; never written into the source tree.
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn seconds_never_panics_and_round_trips(bits in any::<u64>(), zero_ok in any::<bool>()) {
            let v = f64::from_bits(bits);
            match seconds("--timeout", v, zero_ok) {
                Ok(d) => {
                    prop_assert!((0.0..=MAX_SECONDS).contains(&v));
                    prop_assert!(zero_ok || v > 0.0);
                    // Duration keeps whole nanoseconds: within 1 ns of the input.
                    prop_assert!((d.as_secs_f64() - v).abs() <= 1e-9 + v * f64::EPSILON);
                    // The deadline arithmetic of the wait loops cannot wrap.
                    prop_assert!(u64::try_from(d.as_nanos()).is_ok_and(|ns| ns.checked_add(1 << 62).is_some()));
                }
                Err(e) => {
                    prop_assert!(!(v.is_finite() && v > 0.0 && v <= MAX_SECONDS));
                    prop_assert!(e.to_string().starts_with("--timeout "));
                }
            }
        }

        #[test]
        fn seconds_in_range_are_accepted(v in 0.0f64..=MAX_SECONDS) {
            prop_assert!(seconds("--grace", v, true).is_ok());
        }

        #[test]
        fn counts_are_accepted_exactly_in_range(v in any::<usize>(), a in 0usize..1000, b in 0usize..2_000_000) {
            let (min, max) = (a.min(b), a.max(b));
            match count("--runs", v, min, max) {
                Ok(got) => prop_assert!(got == v && (min..=max).contains(&v)),
                Err(_) => prop_assert!(!(min..=max).contains(&v)),
            }
        }
    }
}
