//! Live progress: an indicatif bar on a terminal, a few plain lines otherwise.
//! Failed runs are always described, with the target's last output lines.

use super::format::ms;
use crate::experiment::{Observer, Variant};
use crate::sample::{Outcome, Sample};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

pub struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
    next_plain: usize,
    quiet: bool,
}

impl Progress {
    pub fn new(quiet: bool) -> Self {
        Progress {
            bar: None,
            total: 0,
            done: 0,
            next_plain: 0,
            quiet,
        }
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => crate::out::errln!("{line}"),
        }
    }
}

impl Observer for Progress {
    fn planned(&mut self, total_runs: usize) {
        self.total = total_runs;
        if !self.quiet && std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total_runs as u64);
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} runs  {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            self.bar = Some(bar);
        }
    }

    fn finished(&mut self, variant: &Variant, sample: &Sample) {
        self.done += 1;
        if !sample.ok() {
            self.say(&describe_failure(&variant.name, sample));
        }
        if let Some(bar) = &self.bar {
            bar.set_position(self.done as u64);
            let what = if sample.warmup { "warmup" } else { "run" };
            let last = sample
                .ready_ns
                .map(|ns| ms(ns as f64 / 1e6))
                .unwrap_or_else(|| "failed".into());
            bar.set_message(format!("{}: {what} {}", variant.name, last));
        } else if !self.quiet && self.done >= self.next_plain {
            crate::out::errln!("coldstart: {}/{} runs", self.done, self.total);
            self.next_plain = self.done + (self.total / 4).max(1);
        }
    }
}

/// What went wrong in one run, with the target's last output lines.
pub fn describe_failure(variant: &str, sample: &Sample) -> String {
    let status = sample
        .exit_status
        .as_ref()
        .map_or_else(|| "an unknown status".to_string(), |s| s.to_string());
    let what = match &sample.outcome {
        Outcome::Ready => return String::new(),
        Outcome::Timeout => "not ready before --timeout".to_string(),
        Outcome::ExitedEarly => format!("exited before ready ({status})"),
        Outcome::ExitFailure => {
            format!("exited with {status} (a failure: -i/--ignore-failure or --success-exit-codes accept it)")
        }
        Outcome::Interrupted => "interrupted".to_string(),
        Outcome::Failed { error_type } => format!("failed with {error_type}"),
    };
    let kind = if sample.warmup { "warmup" } else { "run" };
    let mut s = format!("coldstart: {variant}: {kind} {} failed: {what}", sample.round + 1);
    if sample.output_tail.is_empty() {
        s.push_str(" (no output)");
    } else {
        s.push_str("; last output:");
        for line in &sample.output_tail {
            s.push_str("\n  | ");
            s.push_str(&clip(line));
        }
    }
    s
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
    fn long_lines_are_clipped_on_a_char_boundary() {
        assert_eq!(super::clip("short"), "short");
        let long = "é".repeat(300);
        let c = super::clip(&long);
        assert!(c.ends_with("… (200 more bytes)"), "{c}");
    }
}
