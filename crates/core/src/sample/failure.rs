//! How a failed run reads: the one description every command prints (progress
//! lines, errors) so a failure looks the same wherever it surfaces.

use super::{Outcome, Sample};

/// What went wrong in one run of an experiment, with the target's last output lines.
pub fn describe_failure(variant: &str, sample: &Sample) -> String {
    if sample.outcome == Outcome::Ready {
        return String::new();
    }
    let kind = if sample.warmup { "warmup" } else { "run" };
    let what = reason(sample, true);
    let mut s = format!("coldstart: {variant}: {kind} {} failed: {what}", sample.round + 1);
    with_tail(&mut s, sample);
    s
}

/// What went wrong in a single untimed run whose caller names it (tune's traced,
/// training and check runs): the reason and the last output lines, without an
/// experiment's round or the options that accept a failing exit in bench.
pub fn describe_untimed(sample: &Sample) -> String {
    let mut s = reason(sample, false);
    with_tail(&mut s, sample);
    s
}

/// Why `sample` failed; with `hint`, the options that accept a failing exit.
fn reason(sample: &Sample, hint: bool) -> String {
    let status = sample
        .exit_status
        .as_ref()
        .map_or_else(|| "an unknown status".to_string(), |s| s.to_string());
    match &sample.outcome {
        Outcome::Ready => "ready".to_string(),
        Outcome::Timeout => "not ready before --timeout".to_string(),
        Outcome::ExitedEarly => format!("exited before ready ({status})"),
        Outcome::ExitFailure if hint => {
            format!("exited with {status} (a failure: -i/--ignore-failure or --success-exit-codes accept it)")
        }
        Outcome::ExitFailure => format!("exited with {status}"),
        Outcome::Interrupted => "interrupted".to_string(),
        Outcome::Failed { error_type } => format!("failed with {error_type}"),
        Outcome::OutOfMemory { limit_bytes, kills } => crate::limits::oom_cause(*limit_bytes, *kills),
    }
}

/// `s` followed by the target's last output lines, or "(no output)".
fn with_tail(s: &mut String, sample: &Sample) {
    if sample.output_tail.is_empty() {
        s.push_str(" (no output)");
    } else {
        s.push_str("; last output:");
        // A record of several lines joined by CR (awslambdaric's tracebacks, as
        // CloudWatch shows them) reads as those lines, not as text a terminal's
        // carriage return overwrites.
        for line in sample.output_tail.iter().flat_map(|l| l.split('\r')) {
            s.push_str("\n  | ");
            s.push_str(&clip(line));
        }
    }
}

/// A tail line as shown: a runaway line (a megabyte without a newline) is cut.
fn clip(line: &str) -> String {
    const MAX: usize = 400;
    if line.len() <= MAX {
        return line.to_string();
    }
    let mut end = MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &line[..end], line.len() - end)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cr_joined_record_reads_as_its_lines() {
        let mut sample = crate::sample::Sample::begin(
            &crate::sample::RunId {
                variant: 0,
                round: 0,
                warmup: false,
            },
            0,
        );
        sample.outcome = crate::sample::Outcome::Timeout;
        sample.output_tail =
            vec!["[ERROR] ValueError: boom\rTraceback (most recent call last):\r  File \"app.py\"".into()];
        let text = super::describe_failure("fn", &sample);
        assert!(!text.contains('\r'), "{text:?}");
        assert!(text.ends_with("\n  | [ERROR] ValueError: boom\n  | Traceback (most recent call last):\n  |   File \"app.py\""), "{text}");
    }

    #[test]
    fn long_lines_are_clipped_on_a_char_boundary() {
        assert_eq!(super::clip("short"), "short");
        let long = "é".repeat(300);
        let c = super::clip(&long);
        assert!(c.ends_with("… (200 more bytes)"), "{c}");
    }
}
