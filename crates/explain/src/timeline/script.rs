//! The script a process interprets: `bash start.sh` runs start.sh, a `#!`
//! script's kernel-built argv is `[interpreter, (shebang arg), script, …]`,
//! `python3 app.py` runs app.py. What a report names instead of /usr/bin/bash.

use super::files::basename;

/// Interpreters whose first operand is the program they run.
fn is_interpreter(name: &str) -> bool {
    let name = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(
        name,
        "sh" | "bash"
            | "dash"
            | "zsh"
            | "ksh"
            | "mksh"
            | "ash"
            | "busybox"
            | "python"
            | "pypy"
            | "perl"
            | "ruby"
            | "node"
            | "nodejs"
            | "php"
            | "lua"
            | "luajit"
            | "Rscript"
            | "tclsh"
            | "escript"
    )
}

/// Whether the program is a POSIX-style shell (a launcher, not a runtime).
pub(super) fn is_shell(path: &str) -> bool {
    matches!(
        basename(path),
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "busybox"
    )
}

/// Options that take the next argument as their value, per interpreter family.
fn takes_value(interp: &str, opt: &str) -> bool {
    if interp.starts_with("python") || interp.starts_with("pypy") {
        return matches!(opt, "-W" | "-X" | "--check-hash-based-pycs");
    }
    if interp.starts_with("node") {
        return matches!(
            opt,
            "-r" | "--require" | "--import" | "--loader" | "--conditions" | "-C"
        );
    }
    if interp.starts_with("ruby") || interp.starts_with("perl") {
        return matches!(opt, "-I" | "-r" | "-C");
    }
    // Shells: `-o option`, `+o option`, `-O shopt`.
    matches!(opt, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file")
}

/// Options after which the program text comes from the command line or a
/// module name (no script file to name).
fn inline_program(exe: &str, interp: &str, opt: &str) -> bool {
    if is_shell(exe) {
        // `-c`, also inside a cluster (`sh -ec '…'`).
        return !opt.starts_with("--") && opt.starts_with('-') && opt.contains('c');
    }
    if interp.starts_with("python") || interp.starts_with("pypy") {
        return matches!(opt, "-c" | "-m");
    }
    matches!(opt, "-e" | "-E" | "--eval" | "-p" | "--print")
}

/// The script `argv` makes `exe` run, if `exe` is an interpreter and a script
/// operand is there; `None` for `-c`/`-e` programs, modules and non-interpreters.
pub fn script(exe: &str, argv: &[String]) -> Option<String> {
    let interp = basename(exe);
    if !is_interpreter(interp) {
        return None;
    }
    let mut args = argv.iter().skip(1);
    while let Some(a) = args.next() {
        if a == "--" || a == "-" {
            return args.next().cloned().filter(|_| a == "--");
        }
        if a.starts_with('-') || (a.starts_with('+') && a.len() > 1 && is_shell(exe)) {
            if inline_program(exe, interp, a) {
                return None;
            }
            if takes_value(interp, a) {
                args.next();
            }
            continue;
        }
        return Some(a.clone());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::script;

    fn s(exe: &str, argv: &[&str]) -> Option<String> {
        script(exe, &argv.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn names_the_script_an_interpreter_runs() {
        assert_eq!(
            s("/usr/bin/bash", &["bash", "start.sh", "x"]).as_deref(),
            Some("start.sh")
        );
        // A `#!/usr/bin/env bash` shim: the kernel's argv for the interpreter.
        assert_eq!(
            s(
                "/usr/bin/bash",
                &["bash", "/opt/fixture/.pyenv/shims/python3", "-c", "pass"]
            )
            .as_deref(),
            Some("/opt/fixture/.pyenv/shims/python3")
        );
        assert_eq!(
            s("/usr/bin/dash", &["/bin/sh", "-e", "./run.sh"]).as_deref(),
            Some("./run.sh")
        );
        assert_eq!(s("/usr/bin/dash", &["sh", "-ec", "exec server"]), None);
        assert_eq!(s("/usr/bin/perl", &["perl", "-e", "1"]), None);
        assert_eq!(
            s("/usr/bin/dash", &["sh", "-x", "./run.sh"]).as_deref(),
            Some("./run.sh")
        );
        assert_eq!(
            s(
                "/usr/bin/python3.11",
                &["python3", "-u", "-W", "ignore", "app.py"]
            )
            .as_deref(),
            Some("app.py")
        );
        assert_eq!(s("/usr/bin/python3.11", &["python3", "-m", "http.server"]), None);
        assert_eq!(s("/usr/bin/python3.11", &["python3", "-c", "pass"]), None);
        assert_eq!(
            s("/usr/bin/node", &["node", "-r", "./hook.js", "server.js"]).as_deref(),
            Some("server.js")
        );
        assert_eq!(
            s("/usr/bin/bash", &["bash", "-o", "pipefail", "x.sh"]).as_deref(),
            Some("x.sh")
        );
        assert_eq!(s("/usr/bin/bash", &["bash"]), None);
        assert_eq!(
            s("/srv/app/server", &["server", "config.toml"]),
            None,
            "not an interpreter"
        );
    }
}
