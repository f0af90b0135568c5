//! The command-line tests, in one binary: a module per topic (each was its own
//! test binary, and each binary linked the whole crate). Filter by module:
//! `cargo test --test integration lambda::`.
//!
//! Not here, each its own process (see Cargo.toml's `[[test]]` entries): engine
//! (runs on the main thread, harness = false), lab (its reaper takes every child
//! of the process), lab_absent (no Lab may be opened in its process),
//! probe_attempts (a counting global allocator).

mod architecture;
mod cleanup;
mod compare;
mod conditions;
mod explain;
mod explain_ab;
mod explain_estimate;
mod explain_headline;
mod explain_otlp_memory;
mod explain_procs;
mod explain_store;
mod fleet;
mod html_report;
mod lambda;
mod lambda_managed;
mod lambda_memory;
mod lambda_sandbox;
mod limits;
mod marks;
mod probes;
mod profile;
mod robust;
mod store;
mod stored_variants;
mod sweep;
mod terminal_width;
mod trust;
mod tune;

/// What every module uses: the testkit, and the binary under test.
mod common {
    pub use coldstart_testkit as testkit;
    pub use coldstart_testkit::*;
    use std::ffi::OsStr;

    /// The binary cargo built for these tests, with no arguments yet.
    pub fn coldstart() -> Cs {
        Cs::new(env!("CARGO_BIN_EXE_coldstart"))
    }

    /// `coldstart ARGS` (the first is the subcommand), to run or configure further.
    pub fn cs<S: AsRef<OsStr>>(args: &[S]) -> Cs {
        let mut c = coldstart();
        c.args(args);
        c
    }

    /// `coldstart lambda` for one cold start, quietly and without the store: what
    /// the Lambda tests put before their own flags.
    pub fn lambda_once() -> Cs {
        let mut c = cs(&["lambda", "--runs", "1", "--warmup", "0"]);
        c.quiet().no_store();
        c
    }

    /// A fresh store per backend the binary was built with (see [`testkit::stores`]).
    pub fn stores(tag: &str) -> Vec<(tempfile::TempDir, String)> {
        testkit::stores(tag, cfg!(feature = "postgres"))
    }
}
