//! One module per command. Only these (and main.rs) know the command line
//! (`crate::flags`); everything they call is the `coldstart` library. A command
//! does not borrow another's parts (demo runs bench whole): what several share
//! (`stored`, `sweep`) is a module of its own.

pub mod bench;
#[cfg(test)]
mod bench_tests;
pub mod demo;
pub mod explain;
pub mod fleet;
#[cfg(test)]
mod fuzz_tests;
pub mod history;
pub mod lambda;
pub mod pods;
pub mod report;
pub mod shell;
pub mod stored;
pub mod sweep;
pub mod tune;
pub mod tuning;
