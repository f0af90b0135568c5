//! Commands around a variant's runs, as hyperfine has them: `--setup` once
//! before its first run, `--prepare` before every run, `--conclude` after every
//! run, `--cleanup` once after its last. Each is one shell line, run with the
//! variant's environment and working directory, outside the timed interval.

use crate::target::Target;
use anyhow::{anyhow, bail, Context, Result};
use std::process::{Command, Stdio};

/// A variant's hook command lines (raw: a sweep may substitute into them first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hooks {
    pub setup: Option<String>,
    pub prepare: Option<String>,
    pub conclude: Option<String>,
    pub cleanup: Option<String>,
}

impl Hooks {
    pub fn is_empty(&self) -> bool {
        *self == Hooks::default()
    }
}

/// How a hook ran when it failed: one line naming it, and its last output lines.
#[derive(Debug, Clone)]
pub struct HookFailure {
    /// `--prepare 'LINE'`
    pub hook: String,
    /// `exit code 1`, `signal 9`
    pub how: String,
    pub tail: Vec<String>,
}

/// Run `line` through `shell` (`sh` → `sh -c LINE`) with the target's env and
/// cwd. `flag` names the option it came from, for the message. With `show`, its
/// output goes to our terminal; otherwise it is kept for a failure message.
pub fn run(
    flag: &str,
    line: &str,
    shell: &[String],
    target: &Target,
    show: bool,
    keep: usize,
) -> Result<std::result::Result<(), HookFailure>> {
    let mut cmd = command(flag, line, shell)?;
    let program = cmd.get_program().to_string_lossy().into_owned();
    cmd.envs(target.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null());
    if let Some(dir) = &target.cwd {
        cmd.current_dir(dir);
    }
    let (status, output) = if show {
        let status = cmd
            .status()
            .with_context(|| format!("cannot start {flag} '{line}' with {program}"))?;
        (status, Vec::new())
    } else {
        let out = cmd
            .output()
            .with_context(|| format!("cannot start {flag} '{line}' with {program}"))?;
        let mut text = out.stdout;
        text.extend_from_slice(&out.stderr);
        (out.status, text)
    };
    if status.success() {
        return Ok(Ok(()));
    }
    let how = match (
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(&status),
    ) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "an unknown status".to_string(),
    };
    let text = String::from_utf8_lossy(&output);
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let tail = lines[lines.len().saturating_sub(keep)..].to_vec();
    Ok(Err(HookFailure {
        hook: format!("{flag} '{line}'"),
        how,
        tail,
    }))
}

/// Shell builtins and keywords a hook line may start with (POSIX sh, plus the
/// common bash ones).
const SHELL_WORDS: &[&str] = &[
    ":", ".", "[", "[[", "!", "{", "alias", "bg", "break", "case", "cd", "command", "continue", "declare",
    "echo", "eval", "exec", "exit", "export", "false", "fc", "fg", "for", "function", "getopts", "hash",
    "if", "jobs", "kill", "let", "local", "printf", "pwd", "read", "readonly", "return", "set", "shift",
    "source", "test", "time", "times", "trap", "true", "type", "ulimit", "umask", "unalias", "unset",
    "until", "wait", "while",
];

/// Refuse, before any run, a hook whose command cannot start: its first word
/// is neither a shell builtin or keyword nor a program the target's PATH finds.
/// `coldstart bench python3 -c 'import json'` (no `--`) read `-c` as
/// `--cleanup 'import json'`, ran 21 bare python3s and only then failed.
pub fn check(flag: &str, line: &str, shell: &[String], target: &Target) -> Result<()> {
    let words = match argv(flag, line, &[]) {
        Ok(words) => words,
        // Unbalanced quotes: without a shell that is an error; with one, the shell says.
        Err(e) if shell.is_empty() => return Err(e),
        Err(_) => return Ok(()),
    };
    let Some(first) = words.first() else { return Ok(()) };
    // Expansions, assignments, redirections, groups: the shell decides.
    let shellish = first.chars().any(|c| "$`=(){}<>;|&*?~\\".contains(c));
    if !shell.is_empty() && (shellish || SHELL_WORDS.contains(&first.as_str())) {
        return Ok(());
    }
    let path = crate::target::effective_var(&target.env, "PATH").unwrap_or_default();
    if crate::target::resolve_program(first, &path, target.cwd.as_deref()).is_ok() {
        return Ok(());
    }
    // The target as the user wrote it: a quoted command string runs as `sh -c STRING`.
    let shown = match target.argv.as_slice() {
        [.., c, s] if c == "-c" => s.split_whitespace().next().unwrap_or(s),
        argv => argv.first().map_or("COMMAND", String::as_str),
    };
    bail!(
        "{flag} '{line}': `{first}` is not a command (no such program in PATH, not a shell builtin). If those words belong to the target, put its whole command after `--`: coldstart bench [OPTIONS] -- {shown} …"
    )
}

/// A failed hook that is not a run's (setup, cleanup): an error for the experiment.
pub fn require(result: std::result::Result<(), HookFailure>) -> Result<()> {
    result.map_err(|f| {
        let mut msg = format!("{} failed ({})", f.hook, f.how);
        for line in &f.tail {
            msg.push_str("\n  | ");
            msg.push_str(line);
        }
        anyhow!(msg)
    })
}

/// `shell -c line`, or with no shell (`-N`) the line split into words as a
/// POSIX shell would (quotes, backslashes) and run directly, as hyperfine does.
pub fn command(flag: &str, line: &str, shell: &[String]) -> Result<Command> {
    let argv = argv(flag, line, shell)?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    Ok(cmd)
}

/// The argv that runs `line`: `[shell..., "-c", line]`, or its words without a shell.
pub fn argv(flag: &str, line: &str, shell: &[String]) -> Result<Vec<String>> {
    if !shell.is_empty() {
        let mut argv = shell.to_vec();
        argv.push("-c".to_string());
        argv.push(line.to_string());
        return Ok(argv);
    }
    match shlex::split(line) {
        Some(words) if !words.is_empty() => Ok(words),
        _ => bail!("{flag} '{line}' is not a command line (unbalanced quotes, or empty) for -N/--shell=none"),
    }
}

/// `--shell`: `sh` by default; `none` (or `-N`) for no shell; else the
/// program and its options, split on whitespace (`bash --norc`).
pub fn parse_shell(spec: Option<&str>, none: bool) -> Result<Vec<String>> {
    match (spec, none) {
        (Some("none"), _) | (None, true) => Ok(Vec::new()),
        (Some(s), true) => bail!("give -N (no shell) or --shell {s}, not both"),
        (Some(s), false) => {
            let words: Vec<String> = s.split_whitespace().map(str::to_string).collect();
            if words.is_empty() {
                bail!("--shell is empty: name a shell (sh, bash) or `none`");
            }
            Ok(words)
        }
        (None, false) => Ok(vec!["sh".to_string()]),
    }
}
