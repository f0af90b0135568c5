//! `coldstart lambda --aws`: the same experiment as `coldstart lambda`, on the
//! real AWS Lambda service (or any Lambda-compatible API at `--endpoint-url`),
//! through the official AWS SDK for Rust.
//!
//! Modules: `client` (the SDK client from the standard credential chain; the
//! service's errors in one line, a denial naming its IAM action), `calls` (each
//! Lambda API call the driver makes), `plan` (variants as deployed functions,
//! `--dry-run`'s plan, the cost estimate), `runner` (one forced cold start per
//! run, an `experiment::Runner`), `report` (the REPORT line of the log tail),
//! `undo` (the journal's rows undone: versions deleted, configurations restored).
//!
//! A separate crate so that the SDK (hundreds of crates) is built only with the
//! binary's `aws` feature, and the emulator (`coldstart-lambda`) never needs it.

pub mod calls;
pub mod client;
pub mod plan;
pub mod report;
pub mod runner;
pub mod undo;

pub use runner::{AwsColdStarts, Options};
