//! From candidates to variants: the target each one runs as (flags after the
//! runtime's executable, variables), its set-up done once, untimed (a training
//! run of the program, a shell line with the hooks' machinery), the check run
//! that tells a broken candidate from a fast one, and the combination of winners.

use super::catalogue::{expand, Candidate, File};
use super::exec::Executor;
use anyhow::{bail, Context, Result};
use coldstart_core::run::{hooks, RunId, RunOptions, Spec};
use coldstart_core::sample::describe_untimed;
use coldstart_core::target::{Readiness, Target};
use coldstart_explain::adapter::append_option;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a candidate (or a set of them) adds to the baseline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Change {
    /// The whole command instead of the baseline's (flags still go after its argv[0]).
    pub argv: Option<Vec<String>>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub env_append: BTreeMap<String, String>,
}

impl Change {
    pub fn of(c: &Candidate, work: &Path) -> Change {
        Change {
            argv: c
                .argv
                .as_ref()
                .map(|argv| argv.iter().map(|a| expand(a, work)).collect()),
            args: c.args.iter().map(|a| expand(a, work)).collect(),
            env: c.env.iter().map(|(k, v)| (k.clone(), expand(v, work))).collect(),
            env_append: c
                .env_append
                .iter()
                .map(|(k, v)| (k.clone(), expand(v, work)))
                .collect(),
        }
    }

    /// Two changes together; None when both set a variable to different values.
    pub fn join(&self, other: &Change) -> Option<Change> {
        let mut out = self.clone();
        match (&out.argv, &other.argv) {
            (Some(a), Some(b)) if a != b => return None,
            (None, Some(b)) => out.argv = Some(b.clone()),
            _ => {}
        }
        out.args.extend(other.args.iter().cloned());
        for (k, v) in &other.env {
            match out.env.get(k) {
                Some(old) if old != v => return None,
                _ => {
                    out.env.insert(k.clone(), v.clone());
                }
            }
        }
        for (k, v) in &other.env_append {
            let sep = separator(k);
            out.env_append
                .entry(k.clone())
                .and_modify(|old| {
                    old.push(sep);
                    old.push_str(v);
                })
                .or_insert_with(|| v.clone());
        }
        Some(out)
    }
}

/// GODEBUG is comma-separated; the option lists (ERL_FLAGS, NODE_OPTIONS, …) take spaces.
fn separator(key: &str) -> char {
    if key == "GODEBUG" {
        ','
    } else {
        ' '
    }
}

/// The baseline with `change` applied: flags right after argv[0] when it is the
/// runtime's executable (the catalogue's `executable` regex on its file name),
/// else in the runtime's options variable (JAVA_TOOL_OPTIONS), else refused.
pub fn apply(base: &Target, file: &File, change: &Change) -> Result<Target> {
    let mut argv = change.argv.clone().unwrap_or_else(|| base.argv.clone());
    let mut env = base.env.clone();
    // A flag the command already gives changes nothing: measuring it would
    // only find noise (Lambda's java17 command has C1 only and SerialGC).
    if !change.args.is_empty() && change.args.iter().all(|a| argv.contains(a)) {
        bail!("the command already has {}", change.args.join(" "));
    }
    if !change.args.is_empty() {
        let name = Path::new(&argv[0])
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let direct = file
            .executable
            .as_deref()
            .and_then(|r| regex::Regex::new(r).ok())
            .is_some_and(|r| r.is_match(&name));
        if direct {
            argv.splice(1..1, change.args.iter().cloned());
        } else if let Some(var) = &file.options_env {
            env.push(append_option(&env, var, ' ', &change.args.join(" ")));
        } else {
            bail!(
                "its flags go after the {} executable, and the command starts with {} (a wrapper?): run the runtime directly to try it",
                file.runtime,
                argv[0]
            );
        }
    }
    for (k, v) in &change.env {
        env.push((k.clone(), v.clone()));
    }
    for (k, v) in &change.env_append {
        env.push(append_option(&env, k, separator(k), v));
    }
    Target::new(argv, env, base.cwd.clone())
}

/// A candidate ready to be measured, or why it is not.
#[derive(Debug)]
pub enum Prepared {
    Ready(Target),
    /// Set-up, training or the check run failed: the one-line reason and the failure.
    Broken(String),
    /// The command cannot take it (flags with a wrapper).
    NotApplicable(String),
}

/// Each candidate's private directory under the tune work dir.
pub fn work_dir(root: &Path, id: &str) -> Result<PathBuf> {
    let dir = root.join(id);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// The program as the candidate's training run starts it; None without one.
pub fn trainee(c: &Candidate, work: &Path, base: &Target, file: &File) -> Result<Option<Target>> {
    let Some(train) = &c.train else { return Ok(None) };
    // On the candidate's own command (the extracted jar), so the class path matches;
    // a flag the command already has is not given twice.
    let argv = Change::of(c, work).argv;
    let has = argv.as_ref().unwrap_or(&base.argv).clone();
    let change = Change {
        argv,
        args: train
            .args
            .iter()
            .map(|a| expand(a, work))
            .filter(|a| !has.contains(a))
            .collect(),
        env: train
            .env
            .iter()
            .map(|(k, v)| (k.clone(), expand(v, work)))
            .collect(),
        env_append: BTreeMap::new(),
    };
    apply(base, file, &change).map(Some)
}

/// A candidate's set-up, once and untimed: its prepare line (Spring Boot's
/// extraction), its training run (the program with the training flags, waited for
/// ready, or for its exit when the training stops by itself, and stopped as every
/// run is, with a long grace so an archive written at exit is not cut short), its
/// shell line, then one check run of the candidate itself. Nothing here is measured.
pub fn prepare(
    c: &Candidate,
    work: &Path,
    base: &Spec,
    file: &File,
    opts: &RunOptions,
    target: &Target,
    exec: &dyn Executor,
) -> Result<Prepared> {
    let trainee = match trainee(c, work, &base.target, file) {
        Ok(t) => t,
        Err(e) => return Ok(Prepared::NotApplicable(format!("{e:#}"))),
    };
    if let Some(line) = &c.prepare {
        if let Some(broken) = shell("prepare", &expand(line, work), target, opts)? {
            return Ok(broken);
        }
    }
    if let Some(trainee) = trainee {
        let mut long = opts.clone();
        long.grace = long.grace.max(Duration::from_secs(60));
        let exits = c.train.as_ref().is_some_and(|t| t.exits);
        let readiness = if exits {
            Readiness::Exit
        } else {
            base.readiness.clone()
        };
        let s = exec.train(&trainee, &readiness, &long, untimed())?;
        if !s.ok() {
            return Ok(Prepared::Broken(format!(
                "training run `{}` failed: {}",
                trainee.display_command(),
                describe_untimed(&s)
            )));
        }
        if let Some(missing) = unwritten(c, work) {
            let tail: String = s.output_tail.iter().map(|l| format!("\n  | {l}")).collect();
            return Ok(Prepared::Broken(format!(
                "the training run ended well but wrote no {} (a JVM writes its archive as it exits; an error then does not fail the run){tail}",
                missing.display()
            )));
        }
    }
    if let Some(line) = &c.setup {
        if let Some(broken) = shell("setup", &expand(line, work), target, opts)? {
            return Ok(broken);
        }
    }
    check(target, &base.readiness, opts, file, exec)
}

/// The first file the training's flags name in the work directory (`…={work}/app.jsa`)
/// that the training run did not write.
fn unwritten(c: &Candidate, work: &Path) -> Option<PathBuf> {
    let train = c.train.as_ref()?;
    train
        .args
        .iter()
        .chain(train.env.values())
        .map(|a| expand(a, work))
        .filter_map(|a| a.split_once('=').map(|(_, v)| PathBuf::from(v)))
        .find(|p| p.starts_with(work) && !p.exists())
}

fn untimed() -> RunId {
    RunId {
        variant: 0,
        round: 0,
        warmup: true,
    }
}

/// A set-up shell line through the hooks' machinery: None when it succeeded.
fn shell(what: &str, line: &str, target: &Target, opts: &RunOptions) -> Result<Option<Prepared>> {
    Ok(
        match hooks::run(what, line, &["sh".to_string()], target, false, opts.tail_lines)? {
            Ok(()) => None,
            Err(f) => Some(Prepared::Broken(format!(
                "{what} `{line}` failed ({}){}",
                f.how,
                f.tail.iter().map(|l| format!("\n  | {l}")).collect::<String>()
            ))),
        },
    )
}

/// One run of the candidate: it must start as the baseline does (ready, exit 0,
/// its requests answered). A failure makes it broken, never fast. When its flags
/// map an archive (the catalogue's `archive_check`), this run adds the flags that
/// make the runtime refuse an archive it cannot use: a refusal is a failed set-up,
/// where the measured runs would have gone on without the archive, as no gain.
pub fn check(
    target: &Target,
    readiness: &Readiness,
    opts: &RunOptions,
    file: &File,
    exec: &dyn Executor,
) -> Result<Prepared> {
    let strict = match archive_check(target, file) {
        Some(args) => apply(
            target,
            file,
            &Change {
                args,
                ..Change::default()
            },
        )?,
        None => target.clone(),
    };
    let s = exec.once(&strict, readiness, opts, untimed())?;
    if s.ok() {
        return Ok(Prepared::Ready(target.clone()));
    }
    let failure = format!(
        "check run `{}` failed: {}",
        strict.display_command(),
        describe_untimed(&s)
    );
    Ok(Prepared::Broken(
        if strict.argv != target.argv || strict.env != target.env {
            refused(&failure, &strict, target)
        } else {
            failure
        },
    ))
}

/// The archive check's flags when `target` maps an archive (a check's flag in its
/// argv or options variable); None otherwise.
fn archive_check(target: &Target, file: &File) -> Option<Vec<String>> {
    let options = file
        .options_env
        .as_ref()
        .and_then(|var| target.env.iter().rev().find(|(k, _)| k == var))
        .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>())
        .unwrap_or_default();
    let words: Vec<&str> = target.argv.iter().map(String::as_str).chain(options).collect();
    let args: Vec<String> = file
        .archive_check
        .iter()
        .filter(|check| words.iter().any(|a| a.starts_with(check.flag.as_str())))
        .flat_map(|check| check.args.iter().cloned())
        .collect();
    (!args.is_empty()).then_some(args)
}

/// A check run with the archive check's flags (`strict`) failed: a refusal when the
/// runtime's output says so, else a failure of that run, saying which flags it had.
fn refused(failure: &str, strict: &Target, target: &Target) -> String {
    let added: Vec<&str> = strict
        .argv
        .iter()
        .filter(|a| !target.argv.contains(a))
        .map(String::as_str)
        .collect();
    let added = if added.is_empty() {
        "the archive check's flags".to_string()
    } else {
        added.join(" ")
    };
    let refusal = failure
        .lines()
        .map(|l| l.trim_start_matches("  | ").trim())
        .find(|l| l.contains("Unable to use shared archive") || l.contains("AOT cache"));
    match refusal {
        Some(r) => format!(
            "set-up failed: the runtime refused the archive the training run made: {r} (checked with {added}; without it the runs would go on without the archive, as no gain)\n{failure}"
        ),
        None => format!("set-up failed: the check run with {added} (the archive check) failed\n{failure}"),
    }
}

/// The winners that go together, best first: a candidate joins unless it
/// conflicts with one already in (declared, or the same variable set differently).
pub fn combine<'a>(winners: &[(&'a Candidate, PathBuf)]) -> (Vec<&'a Candidate>, Change) {
    let mut chosen: Vec<&Candidate> = Vec::new();
    let mut change = Change::default();
    for (c, work) in winners {
        let clash = chosen
            .iter()
            .any(|o| o.conflicts.contains(&c.id) || c.conflicts.contains(&o.id));
        if clash {
            continue;
        }
        if let Some(joined) = change.join(&Change::of(c, work)) {
            change = joined;
            chosen.push(c);
        }
    }
    (chosen, change)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(exe: Option<&str>, options_env: Option<&str>) -> File {
        File {
            runtime: "jvm".into(),
            executable: exe.map(str::to_string),
            options_env: options_env.map(str::to_string),
            ..File::default()
        }
    }

    fn target(argv: &[&str]) -> Target {
        Target::new(argv.iter().map(|s| s.to_string()).collect(), vec![], None).unwrap()
    }

    #[test]
    fn flags_go_after_the_runtime_or_into_its_options_variable() {
        let change = Change {
            args: vec!["-Xa".into(), "-Xb".into()],
            ..Change::default()
        };
        let t = apply(&target(&["sh", "-c", "true"]), &file(Some("^sh$"), None), &change).unwrap();
        assert_eq!(t.argv, ["sh", "-Xa", "-Xb", "-c", "true"]);
        let t = apply(&target(&["sh"]), &file(Some("^java$"), Some("OPTS")), &change).unwrap();
        assert_eq!(t.argv, ["sh"]);
        assert!(t.env.iter().any(|(k, v)| k == "OPTS" && v.ends_with("-Xa -Xb")));
        assert!(apply(&target(&["sh"]), &file(Some("^java$"), None), &change).is_err());
    }

    #[test]
    fn a_whole_command_replaces_argv_and_flags_follow_its_program() {
        let resolved = Change {
            argv: Some(vec!["sh".into(), "-c".into(), "true".into()]),
            ..Change::default()
        };
        let flags = Change {
            args: vec!["-e".into()],
            ..Change::default()
        };
        let both = resolved.join(&flags).unwrap();
        // The shim (here `true`) gives way to the resolved command, which takes the flags.
        let t = apply(&target(&["true"]), &file(Some("^sh$"), None), &both).unwrap();
        assert_eq!(t.argv, ["sh", "-e", "-c", "true"]);
        // Two different whole commands do not go together.
        let other = Change {
            argv: Some(vec!["sh".into()]),
            ..Change::default()
        };
        assert!(resolved.join(&other).is_none());
    }

    #[test]
    fn combining_skips_conflicts_and_clashing_variables() {
        let c = |id: &str, env: &[(&str, &str)], conflicts: &[&str]| Candidate {
            id: id.into(),
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            conflicts: conflicts.iter().map(|s| s.to_string()).collect(),
            ..Candidate::default()
        };
        let (a, b, d, e) = (
            c("a", &[("X", "1")], &[]),
            c("b", &[("X", "2")], &[]),
            c("d", &[("Y", "1")], &["e"]),
            c("e", &[("Z", "1")], &[]),
        );
        let w = PathBuf::from("/w");
        let (chosen, change) = combine(&[(&a, w.clone()), (&b, w.clone()), (&d, w.clone()), (&e, w)]);
        let ids: Vec<&str> = chosen.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "d"]);
        assert_eq!(change.env.len(), 2);
    }
}
