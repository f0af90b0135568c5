//! coldstart's core: what one cold start is and how it is run, measured, stored and
//! analysed. Targets and readiness (`target`, `probe`), the run engine (`run`,
//! `launch`, `marks`, `profile`), what a run measured (`sample`), experiments
//! (`experiment`: plan, schedule, sweeps), the store and the analysis of stored
//! experiments. Explanations (crates/explain), the Lambda emulator (crates/lambda),
//! tune (crates/tune) and every renderer (crates/report) build on it.
//!
//! Nothing here installs a signal handler, becomes a subreaper or touches the
//! process environment on its own: that is [`Lab::open`]'s job, which the binary
//! calls once at startup, and functions that start targets refuse to run without it.

pub mod analysis;
// Beside analysis.rs, not inside it: the verdict code there changes independently.
#[cfg(test)]
#[path = "analysis_tests.rs"]
mod analysis_tests;
pub mod bounds;
/// The one clock (crates/sys).
pub use coldstart_sys::clock;
pub mod config;
pub mod elf;
pub mod experiment;
pub use launch::lab::Lab;
pub mod launch;
pub mod limits;
pub mod marks;
pub mod out;
pub mod probe;
pub mod profile;
pub mod run;
pub mod sample;
/// Pure statistics: its own crate (crates/stats).
pub use coldstart_stats as stats;
/// Hand-made samples and experiments for the analysis and report tests (the
/// `fixtures` feature, which report's tests turn on).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod store;
pub mod target;
#[cfg(test)]
use coldstart_testkit as testkit;
/// The syscall tracer: its own crate (crates/trace).
pub use coldstart_trace as trace;
