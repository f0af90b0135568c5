//! Output: the terminal table, exports (JSON, Markdown, CSV) and live progress.
//! Reports render an Analysis and raw samples; they never spawn or compute stats.

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
pub mod pods;
pub mod progress;
mod read_set;
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
