//! Phase: a named interval between two instants of a run (`exec-chain`, `loader`,
//! `init`, `listen→ready`, …). Phases are derived from marks and trace events by
//! the timeline and by analysis; they tile the run where they can.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phase {
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub dur_ns: u64,
}

impl Phase {
    /// An interval; an end before the start is clamped to an empty phase.
    pub fn new(name: &str, start_ns: u64, end_ns: u64) -> Phase {
        let end_ns = end_ns.max(start_ns);
        Phase {
            name: name.to_string(),
            start_ns,
            end_ns,
            dur_ns: end_ns - start_ns,
        }
    }
}
