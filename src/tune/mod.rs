//! `coldstart tune`: try the known cold-start optimizations of the program's
//! runtime and keep what helps. The runtime is detected from one traced run
//! (explain's adapters on the final exec); the candidates come from the
//! catalogue (data, `catalogue/*.toml` plus the user's files); each applicable
//! one is set up once, untimed (`plan`), checked by one run, then measured as a
//! variant of one interleaved experiment against the unchanged baseline (the
//! session machinery bench uses); `report` turns the comparisons into the table.

pub mod catalogue;
pub mod plan;
pub mod report;
pub mod show;
pub mod stored;

use crate::explain::adapter::{self, FinalExec};
use crate::run::{RunId, RunOptions};
use crate::target::{Readiness, Target};
use anyhow::Result;
use std::path::PathBuf;

/// The runtime that finally ran, as the tracer saw it.
#[derive(Debug, Clone)]
pub struct Runtime {
    /// An adapter name: jvm, python, node, go, beam, native.
    pub name: String,
    /// The executable that finally ran (after shims).
    pub exe: PathBuf,
    /// Its version, when the catalogue says how to ask and the answer parses.
    pub version: Option<String>,
}

/// One traced run of the baseline (it must become ready) and the runtime its
/// final exec is; `native` when no adapter claims it (a static program too).
pub fn detect(target: &Target, readiness: &Readiness, opts: &RunOptions) -> Result<Runtime> {
    let id = RunId {
        variant: 0,
        round: 0,
        warmup: true,
    };
    let mut s = crate::run::run_traced(target, readiness, opts, id)?;
    let trace = match (s.ok(), s.trace.take()) {
        (true, Some(t)) => t,
        _ => anyhow::bail!(
            "the unchanged program must start before anything is tuned, and its traced run failed:\n{}",
            crate::sample::describe_failure(&target.display_command(), &s)
        ),
    };
    let exec = FinalExec::of(&trace);
    let name = exec
        .as_ref()
        .and_then(|e| adapter::all().into_iter().find(|a| a.detect(e)))
        .map_or("native", |a| a.name())
        .to_string();
    let exe = exec.map_or_else(|| target.program.clone(), |e| PathBuf::from(e.exe));
    Ok(Runtime {
        name,
        exe,
        version: None,
    })
}

/// The runtime's version from `exe VERSION_ARGS` (stdout and stderr) and the
/// catalogue's regex; None when it has neither or the answer does not match.
pub fn version(rt: &Runtime, file: &catalogue::File) -> Option<String> {
    let re = regex::Regex::new(file.version_regex.as_deref()?).ok()?;
    if file.version_args.is_empty() {
        return None;
    }
    let out = std::process::Command::new(&rt.exe)
        .args(&file.version_args)
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Some(re.captures(&text)?.get(1)?.as_str().to_string())
}
