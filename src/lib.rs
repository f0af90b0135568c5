//! coldstart: a cold-start lab for programs on Linux, as a library.
//!
//! The binary (src/main.rs, src/cli.rs, src/cmd/) is a thin layer of commands over
//! this crate. Nothing here installs a signal handler, becomes a subreaper or
//! touches the process environment on its own: that is [`Lab::open`]'s job, which
//! the binary calls once at startup, and functions that start targets refuse to
//! run without it.

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
pub mod explain;
/// How numbers read: ms, signed deltas, percentages, p-values, comparisons.
pub mod format;
pub mod gate;

pub use launch::lab::Lab;
pub mod lambda;
pub mod launch;
pub mod limits;
pub mod marks;
pub mod out;
pub mod probe;
pub mod profile;
pub mod report;
#[cfg(test)]
#[path = "report/report_tests.rs"]
mod report_tests;
pub mod run;
pub mod sample;
pub mod session;
/// Pure statistics: its own crate (crates/stats).
pub use coldstart_stats as stats;
pub mod store;
pub mod target;
#[cfg(test)]
use coldstart_testkit as testkit;
pub mod timeline;
pub mod tune;
/// The syscall tracer: its own crate (crates/trace).
pub use coldstart_trace as trace;
