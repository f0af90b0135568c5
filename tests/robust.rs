//! Trust at the edges: the git-dirty flag, exports to special paths, a closed
//! stdout, huge numbers and runaway output (issue 10, items 6, 7, 8, 10, 11).

mod common;
use common::*;
use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .output()
        .expect("git on PATH");
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
}

/// `bench` in `dir` with the project's default store, then its git_dirty flag.
fn bench_dirty_flag(dir: &Path) -> serde_json::Value {
    let o = coldstart()
        .env_remove("COLDSTART_STORE")
        .current_dir(dir)
        .args(["bench", "-q", "-r", "1", "-w", "0", "--", "true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = coldstart()
        .env_remove("COLDSTART_STORE")
        .current_dir(dir)
        .args(["history", "--json", "-n", "1"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("history JSON");
    v[0]["git_dirty"].clone()
}

#[test]
fn a_clean_repository_is_recorded_clean() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.txt"), "x").unwrap();
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "app.txt"]);
    git(dir.path(), &["commit", "-q", "-m", "init"]);
    assert_eq!(
        bench_dirty_flag(dir.path()),
        false,
        "the store itself is not a change"
    );
    let ignore = std::fs::read_to_string(dir.path().join(".coldstart/.gitignore")).expect(".gitignore made");
    assert_eq!(ignore.trim(), "*");

    // A store made before .gitignore was written (here: the user's own, which
    // ignores nothing) must not count either.
    std::fs::write(dir.path().join(".coldstart/.gitignore"), "# mine\n").unwrap();
    assert_eq!(
        bench_dirty_flag(dir.path()),
        false,
        "the exclusion alone keeps it clean"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".coldstart/.gitignore")).unwrap(),
        "# mine\n",
        "a user's .gitignore is left alone"
    );

    // A real change still counts.
    std::fs::write(dir.path().join("app.txt"), "changed").unwrap();
    assert_eq!(bench_dirty_flag(dir.path()), true);
}

/// One clear line, exit 2, no panic, and the target never ran.
fn refused(o: &std::process::Output, flag: &str, ran: &Path) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains(flag), "names {flag}: {err}");
    assert!(!ran.exists(), "refused before any run");
}

#[test]
fn huge_durations_and_counts_are_refused_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let touch = ["--", "touch", ran.to_str().unwrap()];
    let cases: &[(&[&str], &str)] = &[
        (&["bench", "--no-store", "--timeout", "1e20"], "--timeout"),
        (&["bench", "--no-store", "--timeout", "18446744070"], "--timeout"),
        (&["bench", "--no-store", "--timeout", "inf"], "--timeout"),
        (&["bench", "--no-store", "--grace", "1e20"], "--grace"),
        (
            &["bench", "--no-store", "--runs", "18446744073709551615"],
            "--runs",
        ),
        (
            &["bench", "--no-store", "--warmup", "18446744073709551615"],
            "--warmup",
        ),
        (
            &["bench", "--no-store", "--poll-interval", "18446744073709551615"],
            "--poll-interval",
        ),
        (
            &[
                "bench",
                "--no-store",
                "--target-ci",
                "2%",
                "--max-runs",
                "18446744073709551615",
            ],
            "--max-runs",
        ),
        (&["bench", "--no-store", "--target-ci", "1e300ms"], "--target-ci"),
        (&["explain", "--timeout", "1e20"], "--timeout"),
        (&["explain", "--runs", "18446744073709551615"], "--runs"),
    ];
    for (args, flag) in cases {
        let o = run(&[args, &touch[..]].concat());
        refused(&o, flag, &ran);
    }
    for (args, flag) in [
        (["--timeout", "1e20"], "--timeout"),
        (["--init-timeout", "1e300"], "--init-timeout"),
        (["--warmup", "18446744073709551615"], "--warmup"),
    ] {
        let o = run(&[&["lambda", "--no-store", "--runtime", "/bin/true"][..], &args[..]].concat());
        refused(&o, flag, &ran);
    }
    std::fs::write(
        dir.path().join("coldstart.toml"),
        format!(
            "[targets.t]\ncommand = [\"touch\", \"{}\"]\ntimeout = 1e300\n",
            ran.display()
        ),
    )
    .unwrap();
    let o = coldstart()
        .current_dir(dir.path())
        .args(["bench", "--no-store", "t"])
        .output()
        .unwrap();
    refused(&o, "[targets.t] timeout", &ran);
}
