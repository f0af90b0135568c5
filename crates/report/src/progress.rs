//! Live progress: an indicatif bar on a terminal, a few plain lines otherwise.
//! Failed runs are always described, with the target's last output lines.

use super::format::ms;
use coldstart_core::experiment::{Observer, Variant};
use coldstart_core::sample::Sample;
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
            None => coldstart_core::out::errln!("{line}"),
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
            coldstart_core::out::errln!("coldstart: {}/{} runs", self.done, self.total);
            self.next_plain = self.done + (self.total / 4).max(1);
        }
    }
}

pub use coldstart_core::sample::describe_failure;
