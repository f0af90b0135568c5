//! `coldstart tune`: try the known cold-start optimizations of the program's
//! runtime and keep what helps. The runtime is detected from one traced run
//! (explain's adapters on the final exec); the candidates come from the
//! catalogue (data, `catalogue/*.toml` plus the user's files); each applicable
//! one is set up once, untimed (`plan`), checked by one run, then measured as a
//! variant of one interleaved experiment against the unchanged baseline (the
//! session machinery bench uses); `report` turns the comparisons into the table.

pub mod catalogue;
pub mod exec;
pub mod jar;
pub mod plan;
pub mod report;
pub mod session;
pub mod sets;
pub mod show;
pub mod spring;
pub mod stored;

use anyhow::Result;
use coldstart_core::run::{RunId, RunOptions};
use coldstart_core::target::{Readiness, Target};
use coldstart_explain::adapter::{self, FinalExec};
use std::path::{Path, PathBuf};

/// The runtime that finally ran, as the tracer saw it.
#[derive(Debug, Clone)]
pub struct Runtime {
    /// An adapter name: jvm, python, node, go, beam, native.
    pub name: String,
    /// The executable that finally ran (after shims).
    pub exe: PathBuf,
    /// Its version, when the catalogue says how to ask and the answer parses.
    pub version: Option<String>,
    /// argv[0] is a shim script (a version manager's) that execs this program in the end.
    pub shim: Option<Shim>,
    /// What the command runs on it, when tune recognises it (`Spring Boot 3.5.7 fat jar app.jar`).
    pub app: Option<String>,
}

/// A version manager's shim (pyenv, rbenv, asdf, nvm, sdkman, jenv, mise…), as the
/// traced run saw it: the script the command starts, and the command that finally ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Shim {
    /// The script argv[0] named (the service process's first exec).
    pub script: String,
    /// The service process's final exec: its path, then its arguments.
    pub resolved: Vec<String>,
}

/// The id of the candidate that runs the shim's resolved command directly.
pub const BYPASS_SHIM: &str = "bypass-shim";

fn is_script(path: &str) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| &magic == b"#!")
}

/// The shim in `trace`: the service (root) process first exec'd a `#!` script and
/// finally a program that is not one (the real interpreter); None otherwise (a
/// plain program, a symlink, a wrapper binary such as env). Read off the trace,
/// never guessed from PATH or the version manager's files.
pub fn shim_of(trace: &coldstart_core::trace::Trace) -> Option<Shim> {
    let first = trace.events.iter().find_map(|e| match &e.event {
        coldstart_core::trace::Event::Exec { path, .. } if e.pid == trace.root_pid => Some(path.as_str()),
        _ => None,
    })?;
    let last = trace.events.iter().rev().find_map(|e| match &e.event {
        coldstart_core::trace::Event::Exec { path, argv, .. } if e.pid == trace.root_pid => {
            Some((path, argv))
        }
        _ => None,
    })?;
    let (path, argv) = last;
    if path == first || !is_script(first) || is_script(path) || !Path::new(path).is_absolute() {
        return None;
    }
    let mut resolved = vec![path.clone()];
    resolved.extend(argv.iter().skip(1).cloned());
    Some(Shim {
        script: first.to_string(),
        resolved,
    })
}

/// The candidate that runs the shim's resolved command instead of the shim; its
/// apply line is that exact command.
pub fn bypass(shim: &Shim) -> catalogue::Candidate {
    let command = coldstart_core::target::shell_join(&shim.resolved);
    catalogue::Candidate {
        id: BYPASS_SHIM.to_string(),
        title: "bypass the version-manager shim".to_string(),
        what: format!(
            "run {} directly instead of the shim {} that finally execs it",
            shim.resolved[0], shim.script
        ),
        why: "A version manager's shim (pyenv, rbenv, asdf, nvm, sdkman, jenv, mise…) starts a shell and works out the version, often with helper processes, on every start before the real program runs.".to_string(),
        risks: "The command is pinned to this version (change it when the project's version changes); the shim's own additions (pyenv puts the version's bin directory first on PATH) are not made, so a child that runs the bare name still goes through the shim.".to_string(),
        apply: command,
        source: "https://github.com/pyenv/pyenv#understanding-shims".to_string(),
        argv: Some(shim.resolved.clone()),
        ..catalogue::Candidate::default()
    }
}

/// One traced run of the baseline (it must become ready) and the runtime its
/// final exec is; `native` when no adapter claims it (a static program too).
pub fn detect(target: &Target, readiness: &Readiness, opts: &RunOptions) -> Result<Runtime> {
    let id = RunId {
        variant: 0,
        round: 0,
        warmup: true,
    };
    let mut s = coldstart_core::run::run_traced(target, readiness, opts, id)?;
    let trace = match (s.ok(), s.trace.take()) {
        (true, Some(t)) => t,
        _ => anyhow::bail!(
            "the unchanged program must start before anything is tuned, and its traced run ({}) failed: {}",
            target.display_command(),
            coldstart_core::sample::describe_untimed(&s)
        ),
    };
    let shim = shim_of(&trace);
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
        shim,
        app: None,
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
