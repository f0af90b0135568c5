//! One module per command. Only these (and main.rs) know the command line
//! (`crate::flags`); everything they call is the `coldstart` library.

pub mod bench;
#[cfg(test)]
mod bench_tests;
pub mod demo;
pub mod explain;
#[cfg(test)]
mod fuzz_tests;
pub mod history;
pub mod lambda;
pub mod report;
pub mod shell;
pub mod sweep;
pub mod tune;
