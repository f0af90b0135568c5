//! Starting a target and making sure nothing of it outlives its run.
//!
//! - `spawn`: build the command outside the timed region, spawn it in its own
//!   process group (std's posix_spawn path), capture its output.
//! - `tree`: find every descendant (including double-forked daemons, which the
//!   child-subreaper attribute brings back to us) and kill/reap them.
//! - `usage`: CPU, memory, faults, processes/threads from rusage or procfs.
//! - `signals`: Ctrl-C / SIGTERM of coldstart itself kills the running tree.
//! - `output`: the target's output lines (per stream), the last few kept, claimed ones set aside.
//! - `wait`: ppoll with ns timeouts and tight timer slack while probing.

pub mod output;
pub mod signals;
pub mod spawn;
pub mod tree;
pub mod usage;
pub mod wait;
