//! Runtime adapters: each turns on a runtime's own startup instrumentation
//! through the environment (no change to the program), then parses what the
//! runtime reported into a [`Section`].
//!
//! An adapter runs in the *adapted* runs of `coldstart explain`: untraced runs
//! with the adapters' switches on, interleaved with the plain and traced runs,
//! so each adapter's own cost is measured (adapted ÷ untraced ready time).
//!
//! Rules every adapter keeps:
//! * Its output goes to a file in its private directory where the runtime can
//!   do that. Where the runtime can only write to stdout/stderr (Python's
//!   importtime, Go's inittrace, the JVM's "Picked up JAVA_TOOL_OPTIONS"
//!   notice), the adapter *claims* those lines with [`Injection::claims`]: the run
//!   separates them from the target's output before the log probe, `--mark`
//!   regexes and the failure tail see it, and hands them to [`Adapter::collect`].
//! * It merges with the user's own settings (an existing NODE_OPTIONS or
//!   JAVA_TOOL_OPTIONS is kept, ours appended).
//! * It says what it could not see in [`Section::notes`].

pub mod beam;
pub mod deno;
pub mod go;
pub mod jvm;
mod label;
pub mod native;
pub mod node;
pub mod python;
pub mod v8;

use anyhow::Result;
use coldstart_core::sample::section::Section;
use coldstart_core::trace::Trace;
use regex::Regex;
use std::path::Path;

/// What an adapter adds to the target's launch.
#[derive(Debug, Default)]
pub struct Injection {
    /// Variables set for the target (already merged with the target's own).
    pub env: Vec<(String, String)>,
    /// Output lines (stdout or stderr) that the switch writes and the adapter reads.
    pub claims: Vec<Regex>,
}

/// What an adapted run hands back to its adapter.
pub struct Collected<'a> {
    /// The adapter's private directory (created before the run, removed after).
    pub dir: &'a Path,
    /// Claimed lines, in order, each with when coldstart read it (ns since time
    /// zero; an upper bound on when it was written).
    pub claimed: &'a [(u64, String)],
    /// Spawn → ready of this run, ns.
    pub ready_ns: u64,
    /// The traced run shown in the report, for adapters that read the tracer's
    /// events (BEAM's .beam opens) rather than switching anything on.
    pub trace: Option<&'a Trace>,
    /// Time zero of this run: CLOCK_MONOTONIC ns taken right before the spawn,
    /// for adapters whose runtime reports absolute monotonic instants (Node's
    /// `process.hrtime`).
    pub t0_mono_ns: u64,
}

/// The program that finally ran, as the tracer saw it.
pub struct FinalExec<'a> {
    /// The path exec'd (after PATH lookup and symlinks as passed to execve).
    pub path: &'a str,
    /// What the kernel ran (for a script: its interpreter).
    pub exe: &'a str,
}

impl<'a> FinalExec<'a> {
    /// The root process's last successful exec in `trace`: the program that
    /// finally ran, after shims and wrappers.
    pub fn of(trace: &'a Trace) -> Option<FinalExec<'a>> {
        trace.events.iter().rev().find_map(|e| match &e.event {
            coldstart_core::trace::Event::Exec { path, exe, .. } if e.pid == trace.root_pid => {
                Some(FinalExec { path, exe })
            }
            _ => None,
        })
    }

    /// Process `pid`'s last successful exec in `trace`.
    pub fn of_pid(trace: &'a Trace, pid: i32) -> Option<FinalExec<'a>> {
        trace.events.iter().rev().find_map(|e| match &e.event {
            coldstart_core::trace::Event::Exec { path, exe, .. } if e.pid == pid => {
                Some(FinalExec { path, exe })
            }
            _ => None,
        })
    }
}

/// Settings from the command line that shape what an adapter reports.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--class-depth N`: JVM packages rolled up to their first N parts.
    pub class_depth: Option<usize>,
}

pub trait Adapter {
    /// Stable name, used by `--adapter NAME` and as the section's `source`.
    fn name(&self) -> &'static str;
    /// Does this adapter apply to the program that finally ran?
    fn detect(&self, exec: &FinalExec) -> bool;
    /// The switch: environment for the target, lines to claim. `dir` is private
    /// to this adapter and run; `target_env` is the target's own additions.
    fn inject(&self, dir: &Path, target_env: &[(String, String)]) -> Result<Injection>;
    /// Take the command line's settings (most adapters have none).
    fn configure(&mut self, _opts: &Options) {}
    /// Parse what the runtime reported.
    fn collect(&self, got: &Collected) -> Result<Section>;
    /// Its sections: one, or one per VM/process where the runtime ran in
    /// several (two BEAM nodes' modules are not summed).
    fn collect_all(&self, got: &Collected) -> Result<Vec<Section>> {
        Ok(vec![self.collect(got)?])
    }
}

/// Every adapter, most specific first: auto-detection takes the first that
/// applies (`native` is the fallback for any dynamically linked program).
pub fn all() -> Vec<Box<dyn Adapter>> {
    vec![
        Box::new(python::Python),
        Box::new(node::Node),
        Box::new(deno::Deno),
        Box::new(jvm::Jvm::default()),
        Box::new(go::Go),
        Box::new(beam::Beam),
        Box::new(native::Native),
    ]
}

/// `--adapter auto|none|NAME[,NAME…]` → the adapters to use for this final exec.
pub fn select(spec: &str, exec: Option<&FinalExec>) -> Result<Vec<Box<dyn Adapter>>> {
    let spec = spec.trim();
    if spec == "none" {
        return Ok(Vec::new());
    }
    let mut all = all();
    if spec == "auto" {
        let Some(exec) = exec else { return Ok(Vec::new()) };
        return Ok(match all.iter().position(|a| a.detect(exec)) {
            Some(i) => vec![all.swap_remove(i)],
            None => Vec::new(),
        });
    }
    let mut chosen = Vec::new();
    for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let Some(i) = all.iter().position(|a| a.name() == name) else {
            let known: Vec<&str> = all.iter().map(|a| a.name()).collect();
            anyhow::bail!(
                "unknown adapter {name:?}: use auto, none, or a comma-separated list of {}",
                known.join(", ")
            );
        };
        chosen.push(all.swap_remove(i));
    }
    Ok(chosen)
}

/// Append `extra` to a list-valued variable (NODE_OPTIONS and JAVA_TOOL_OPTIONS
/// split on spaces, GODEBUG on commas), keeping what the target or our own
/// environment set: ours goes last, where a repeated setting wins.
pub fn append_option(target_env: &[(String, String)], key: &str, sep: char, extra: &str) -> (String, String) {
    let existing = coldstart_core::target::effective_var(target_env, key)
        .map(|v| v.trim().trim_end_matches(sep).to_string())
        .filter(|v| !v.is_empty());
    let value = match existing {
        Some(v) => format!("{v}{sep}{extra}"),
        None => extra.to_string(),
    };
    (key.to_string(), value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_option_keeps_the_targets_value() {
        let env = vec![("NODE_OPTIONS".to_string(), "--max-old-space-size=64".to_string())];
        assert_eq!(
            append_option(&env, "NODE_OPTIONS", ' ', "--require /x.js"),
            (
                "NODE_OPTIONS".to_string(),
                "--max-old-space-size=64 --require /x.js".to_string()
            )
        );
    }

    #[test]
    fn unknown_adapter_is_refused_with_the_list() {
        let err = select("cobol", None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("unknown adapter \"cobol\""), "{err}");
    }

    #[test]
    fn none_selects_nothing() {
        assert!(select("none", None).map(|v| v.is_empty()).unwrap_or(false));
    }
}
