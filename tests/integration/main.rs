//! The command-line tests, in one binary: a module per topic (each was its own
//! test binary, and each binary linked the whole crate). Filter by module:
//! `cargo test --test integration lambda::`.
//!
//! Not here, each its own process (see Cargo.toml's `[[test]]` entries): engine
//! (runs on the main thread, harness = false), lab (its reaper takes every child
//! of the process), lab_absent (no Lab may be opened in its process),
//! probe_attempts (a counting global allocator), explain_otlp_memory (a child's
//! peak RSS, which a large parent would inflate).

mod architecture;
mod cleanup;
mod compare;
mod conditions;
mod containers;
mod explain;
mod explain_ab;
mod explain_estimate;
mod explain_headline;
mod explain_procs;
mod explain_store;
mod fleet;
mod fleet_scale;
mod fleet_shards;
mod fleet_stored;
mod html_report;
mod lambda;
mod lambda_aws;
mod lambda_managed;
mod lambda_memory;
mod lambda_sandbox;
mod lambda_serve;
mod lambda_setup;
mod limits;
mod marks;
mod pods;
mod probes;
mod profile;
mod robust;
mod slurm;
mod store;
mod stored_variants;
mod sweep;
mod terminal_width;
mod trust;
mod tune;
mod tune_spring;

/// What every module uses: the testkit, and the binary under test.
mod common {
    pub use coldstart_testkit as testkit;
    pub use coldstart_testkit::*;
    use std::ffi::OsStr;
    use std::sync::{Condvar, Mutex, PoisonError};

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

    /// The tests of this binary run in parallel (libtest's threads). A test whose
    /// assertions are times (a verdict, an attribution, a ratio of durations) runs
    /// only beside tests of its own module, as when each module was a binary of its
    /// own: a heavy neighbour from another module (a JVM build, a traced explain)
    /// would move its figures. Every other test runs beside any other untimed one.
    /// Tests are ordered by module, so both threads mostly take the same group.
    /// The gate holds which group has the turn (a module's file, or one test's
    /// place for [`alone`]) and how many of its tests are in.
    static GATE: Mutex<(Option<(&'static str, u32)>, usize)> = Mutex::new((None, 0));
    static TURN: Condvar = Condvar::new();

    /// Held for a test's length: its group's turn.
    pub struct Turn;

    impl Drop for Turn {
        fn drop(&mut self) {
            let mut g = GATE.lock().unwrap_or_else(PoisonError::into_inner);
            g.1 -= 1;
            if g.1 == 0 {
                g.0 = None;
                TURN.notify_all();
            }
        }
    }

    fn enter(group: (&'static str, u32)) -> Turn {
        // A test that failed in its turn poisons nothing the next one needs.
        let mut g = GATE.lock().unwrap_or_else(PoisonError::into_inner);
        while g.0.is_some_and(|current| current != group) {
            g = TURN.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
        g.0 = Some(group);
        g.1 += 1;
        Turn
    }

    /// For a test whose assertions are times: beside its own module's tests only.
    #[track_caller]
    pub fn timed() -> Turn {
        enter((std::panic::Location::caller().file(), 0))
    }

    /// For a timed test whose own runs load both cores (a JVM tune of several
    /// variants): beside no other test, not even its own module's. Two such tests
    /// side by side each slow the other's runs unevenly, and a verdict that 8 runs
    /// would decide on a quiet machine stays undecided (issue 38).
    #[track_caller]
    pub fn alone() -> Turn {
        let at = std::panic::Location::caller();
        enter((at.file(), at.line()))
    }

    /// For every other test: beside any other untimed test.
    pub fn beside() -> Turn {
        enter(("untimed", 0))
    }

    /// A fresh store per backend the binary was built with (see [`testkit::stores`]).
    pub fn stores(tag: &str) -> Vec<(tempfile::TempDir, String)> {
        testkit::stores(tag, cfg!(feature = "postgres"))
    }
}
