//! Output: the terminal table, exports (JSON, Markdown, CSV) and live progress.
//! Reports render an Analysis and raw samples; they never spawn or compute stats.

// The modules this crate renders, under their own names, so paths read `crate::run::…`.
use coldstart_core::{
    analysis, bounds, clock, experiment, limits, out, profile, run, sample, stats, store, target, trace,
};
#[cfg(test)]
use coldstart_core::{launch, Lab};
use coldstart_explain::timeline;
use coldstart_lambda as lambda;
use coldstart_tune as tune;
#[cfg(test)]
#[path = "../../core/src/fixtures.rs"]
mod fixtures;
#[cfg(test)]
use coldstart_testkit as testkit;

pub mod chrome_trace;
pub mod csv;
pub mod estimate;
pub mod explain;
pub mod explain_ab;
pub mod explain_procs;
pub mod export;
pub mod fleet;
/// Number formatting is shared with the sample model and the gate.
pub mod format;
pub mod gate;
pub mod headline;
pub mod history;
pub mod json;
pub mod markdown;
pub mod progress;
pub mod sweep;
pub mod terminal;
pub mod value;

/// Write an export to its path: `-` (stdout), a device or FIFO, a symlink's target
/// or a regular file (atomically); see [`export`].
pub use export::write as write_export;
pub mod html;
#[cfg(test)]
mod report_tests;
pub mod tuned;
pub mod width;
pub mod words;
