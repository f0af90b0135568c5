//! A run of the coldstart binary, built as ripgrep's `TestCommand` is: the
//! flags every test repeats are methods, and the output checks print both
//! streams when they fail.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// One run of the coldstart binary: `Cs::new(env!("CARGO_BIN_EXE_coldstart"))`
/// (the test binary knows where cargo built it), then arguments, the common
/// flags, environment and stdio as on a [`Command`], then [`Cs::run`] (or
/// [`Cs::ok`], [`Cs::fails`], [`Cs::spawn`]).
///
/// The first argument is the subcommand; [`Cs::quiet`] and [`Cs::no_store`] put
/// `-q` and `--no-store` right after it, wherever in the chain they are called.
/// The store defaults to a file under the fixtures directory, never the
/// repository's (tests that exercise the store pass `--store` themselves, or
/// `env_remove("COLDSTART_STORE")` to test the default).
pub struct Cs {
    cmd: Command,
    args: Vec<OsString>,
    quiet: bool,
    no_store: bool,
    started: bool,
}

impl Cs {
    /// A run of the binary at `bin` (pass `env!("CARGO_BIN_EXE_coldstart")`).
    pub fn new(bin: impl AsRef<OsStr>) -> Cs {
        let mut cmd = Command::new(bin);
        let db = crate::fixtures_dir().join(format!("default-store-{}.db", std::process::id()));
        cmd.env("COLDSTART_STORE", db);
        Cs {
            cmd,
            args: Vec::new(),
            quiet: false,
            no_store: false,
            started: false,
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Cs {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Cs
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// `-q`: no progress or table on stderr beyond what the test looks for.
    pub fn quiet(&mut self) -> &mut Cs {
        self.quiet = true;
        self
    }

    /// `--no-store`: the run records nothing.
    pub fn no_store(&mut self) -> &mut Cs {
        self.no_store = true;
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Cs {
        self.cmd.env(key, value);
        self
    }

    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Cs
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.cmd.envs(vars);
        self
    }

    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Cs {
        self.cmd.env_remove(key);
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Cs {
        self.cmd.current_dir(dir);
        self
    }

    pub fn stdin(&mut self, cfg: impl Into<Stdio>) -> &mut Cs {
        self.cmd.stdin(cfg);
        self
    }

    pub fn stdout(&mut self, cfg: impl Into<Stdio>) -> &mut Cs {
        self.cmd.stdout(cfg);
        self
    }

    pub fn stderr(&mut self, cfg: impl Into<Stdio>) -> &mut Cs {
        self.cmd.stderr(cfg);
        self
    }

    /// The argument list as the binary gets it.
    pub fn argv(&self) -> Vec<OsString> {
        let mut out = Vec::with_capacity(self.args.len() + 2);
        let mut rest = self.args.iter();
        if self.quiet || self.no_store {
            // The flags belong to the subcommand: after it, before its operands.
            let sub = rest
                .next()
                .unwrap_or_else(|| panic!("-q and --no-store need a subcommand first: {:?}", self.args));
            out.push(sub.clone());
            if self.quiet {
                out.push("-q".into());
            }
            if self.no_store {
                out.push("--no-store".into());
            }
        }
        out.extend(rest.cloned());
        out
    }

    /// The command line, for failure messages.
    pub fn line(&self) -> String {
        let mut line = PathBuf::from(self.cmd.get_program())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for a in self.argv() {
            line.push(' ');
            line.push_str(&a.to_string_lossy());
        }
        line
    }

    /// The configured [`Command`], for what this builder does not cover. A `Cs`
    /// starts once: its stdio settings move into the command.
    pub fn command(&mut self) -> &mut Command {
        assert!(!self.started, "a Cs runs once: {}", self.line());
        self.started = true;
        let argv = self.argv();
        self.cmd.args(argv);
        &mut self.cmd
    }

    /// Start the binary (panics when it cannot start).
    pub fn spawn(&mut self) -> Child {
        let line = self.line();
        self.command()
            .spawn()
            .unwrap_or_else(|e| panic!("starting {line}: {e}"))
    }

    /// Run to the end; the exit status is the test's to check.
    pub fn run(&mut self) -> Out {
        let line = self.line();
        let output = self
            .command()
            .output()
            .unwrap_or_else(|e| panic!("running {line}: {e}"));
        Out { output, line }
    }

    /// [`Cs::run`], and the run must succeed.
    pub fn ok(&mut self) -> Out {
        let out = self.run();
        out.assert_ok();
        out
    }

    /// [`Cs::run`], and the run must fail.
    pub fn fails(&mut self) -> Out {
        let out = self.run();
        out.assert_fails();
        out
    }
}

/// What a [`Cs`] run wrote and how it ended. Derefs to [`Output`], so
/// `o.status` and `stderr(&o)` read as they do on a plain output.
pub struct Out {
    output: Output,
    line: String,
}

impl std::ops::Deref for Out {
    type Target = Output;
    fn deref(&self) -> &Output {
        &self.output
    }
}

impl From<Out> for Output {
    fn from(o: Out) -> Output {
        o.output
    }
}

impl Out {
    /// Stdout as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    /// Stderr as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// The exit code (None when a signal ended the run).
    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    pub fn success(&self) -> bool {
        self.output.status.success()
    }

    /// Stdout parsed as one JSON document.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.output.stdout)
            .unwrap_or_else(|e| panic!("stdout of {} is not JSON: {e}\n{}", self.line, self.streams()))
    }

    /// Both streams, labelled, for failure messages.
    pub fn streams(&self) -> String {
        format!(
            "--- status: {}\n--- stdout:\n{}\n--- stderr:\n{}",
            self.output.status,
            self.stdout(),
            self.stderr()
        )
    }

    pub fn assert_ok(&self) -> &Out {
        assert!(self.success(), "{} failed\n{}", self.line, self.streams());
        self
    }

    pub fn assert_fails(&self) -> &Out {
        assert!(
            !self.success(),
            "{} succeeded, but should have failed\n{}",
            self.line,
            self.streams()
        );
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_and_no_store_follow_the_subcommand() {
        let mut c = Cs::new("coldstart");
        c.args(["bench", "--runs", "1", "--", "true"]).no_store().quiet();
        let argv: Vec<String> = c
            .argv()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(argv, ["bench", "-q", "--no-store", "--runs", "1", "--", "true"]);
        assert_eq!(c.line(), "coldstart bench -q --no-store --runs 1 -- true");
    }

    #[test]
    fn a_failed_check_prints_both_streams() {
        let mut c = Cs::new("sh");
        c.args(["-c", "echo out; echo err >&2; exit 3"]);
        let out = c.run();
        assert_eq!(out.code(), Some(3));
        let msg = std::panic::catch_unwind(|| {
            out.assert_ok();
        })
        .expect_err("a failed run fails assert_ok");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("sh -c") && msg.contains("out") && msg.contains("err"),
            "{msg}"
        );
        out.assert_fails();
    }
}
