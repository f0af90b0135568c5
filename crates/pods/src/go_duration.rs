//! The kubelet's `Pulled` event message carries the pull's duration as Go's
//! `time.Duration` prints it: "Successfully pulled image \"nginx:1.25\" in
//! 1.234s (1.234s including waiting)", or "… in 1m2.5s", "… in 523ms".

/// The pull's own duration (ms) from a Pulled message; 0 for an image that was
/// already present; None for any other message.
pub(crate) fn pulled_in(message: &str) -> Option<f64> {
    if message.contains("already present on machine") {
        return Some(0.0);
    }
    let rest = message.strip_prefix("Successfully pulled image ")?;
    let after = rest
        .rsplit_once("\" in ")
        .map(|(_, a)| a)
        .or_else(|| rest.split_once(" in ").map(|(_, a)| a))?;
    let word = after.split_whitespace().next()?;
    parse(word)
}

/// Go's Duration.String(): numbers with units h, m, s, ms, µs/us, ns, in order.
fn parse(s: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let (ms, len) = [
            ("ms", 1.0),
            ("µs", 1e-3),
            ("us", 1e-3),
            ("ns", 1e-6),
            ("h", 3.6e6),
            ("m", 6e4),
            ("s", 1e3),
        ]
        .iter()
        .find(|(u, _)| rest.starts_with(u))
        .map(|(u, f)| (*f, u.len()))?;
        total += value * ms;
        rest = &rest[len..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubelets_pull_durations_in_each_form_it_writes() {
        let new = r#"Successfully pulled image "nginx:1.25" in 1.234s (1.234s including waiting)"#;
        assert_eq!(pulled_in(new), Some(1234.0));
        let old = r#"Successfully pulled image "registry.k8s.io/pause:3.9" in 523.4ms"#;
        assert!((pulled_in(old).unwrap() - 523.4).abs() < 1e-9);
        let long = r#"Successfully pulled image "app:1" in 1m2.5s (1m3s including waiting)"#;
        assert_eq!(pulled_in(long), Some(62_500.0));
        let present = r#"Container image "nginx:1.25" already present on machine"#;
        assert_eq!(pulled_in(present), Some(0.0));
        assert_eq!(pulled_in("Pulling image \"nginx\""), None);
        assert_eq!(pulled_in(r#"Successfully pulled image "x" in soon"#), None);
    }
}
