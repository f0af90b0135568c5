//! Everything coldstart prints on stdout goes through here, so a closed stdout
//! (`coldstart show 1 | head -1`) is one decision in one place: the reader has
//! gone, so the rest of the output is dropped quietly and the command finishes
//! with the exit status it would have had (a `gate` that fails still exits 1).
//! Rust ignores SIGPIPE, so the write returns EPIPE instead of killing us; the
//! `print!` macros would panic on it. Other write errors (a full disk behind a
//! redirect) are real errors and are returned.
//!
//! When an export is written to stdout (`--export-json -`), stdout carries only
//! that document and the human report goes to stderr instead.

use anyhow::{Context, Result};
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);
static TAKEN: AtomicBool = AtomicBool::new(false);

/// Whether the reader of stdout has gone (later output is dropped).
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// Stdout carries an export document: reports go to stderr from now on.
pub fn reserve_stdout_for_export() {
    TAKEN.store(true, Ordering::Relaxed);
}

/// Write to stdout (flushed), treating a closed stdout as a quiet end of output.
pub fn bytes(b: &[u8]) -> Result<()> {
    if closed() {
        return Ok(());
    }
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(b).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(e).context("writing to stdout"),
    }
}

/// A report for people: stdout, or stderr while stdout carries an export. A closed
/// stderr is ignored too (there is nowhere left to say anything).
pub fn text(s: &str) -> Result<()> {
    if TAKEN.load(Ordering::Relaxed) {
        let mut stderr = std::io::stderr().lock();
        stderr.write_all(s.as_bytes()).ok();
        return Ok(());
    }
    bytes(s.as_bytes())
}

/// `print!` through [`text`]; evaluates to `anyhow::Result<()>`.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::out::text(&format!($($t)*)) };
}

/// `println!` through [`text`]; evaluates to `anyhow::Result<()>`.
#[macro_export]
macro_rules! outln {
    () => { $crate::out::text("\n") };
    ($($t:tt)*) => { $crate::out::text(&(format!($($t)*) + "\n")) };
}

/// A line on stderr (progress, notes, warnings) that never panics: `eprintln!`
/// panics when stderr is a pipe whose reader has gone (`coldstart … 2>&1 | head`).
pub fn err_line(s: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_all(s.as_bytes())
        .and_then(|()| stderr.write_all(b"\n"));
}

/// `eprintln!` through [`err_line`].
#[macro_export]
macro_rules! errln {
    ($($t:tt)*) => { $crate::out::err_line(&format!($($t)*)) };
}

// Exported at the crate root by #[macro_export]; named here too so callers
// write `out::outln!` as before.
pub use crate::{errln, out, outln};
