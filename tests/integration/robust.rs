//! Trust at the edges: the git-dirty flag, exports to special paths, a closed
//! stdout, huge numbers and runaway output (issue 10, items 6, 7, 8, 10, 11).

use crate::common::*;
use std::path::Path;
use std::process::{Command, Stdio};

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
        .args(["bench", "-r", "1", "-w", "0", "--", "true"])
        .quiet()
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = coldstart()
        .env_remove("COLDSTART_STORE")
        .current_dir(dir)
        .args(["history", "--json", "-n", "1"])
        .run();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("history JSON");
    v[0]["git_dirty"].clone()
}

#[test]
fn a_clean_repository_is_recorded_clean() {
    let _turn = crate::common::beside();
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
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let touch = ["--", "touch", ran.to_str().unwrap()];
    let cases: &[(&[&str], &str)] = &[
        (&["bench", "--timeout", "1e20"], "--timeout"),
        (&["bench", "--timeout", "18446744070"], "--timeout"),
        (&["bench", "--timeout", "inf"], "--timeout"),
        (&["bench", "--grace", "1e20"], "--grace"),
        (&["bench", "--runs", "18446744073709551615"], "--runs"),
        (&["bench", "--warmup", "18446744073709551615"], "--warmup"),
        (
            &["bench", "--poll-interval", "18446744073709551615"],
            "--poll-interval",
        ),
        (
            &["bench", "--target-ci", "2%", "--max-runs", "18446744073709551615"],
            "--max-runs",
        ),
        (&["bench", "--target-ci", "1e300ms"], "--target-ci"),
        (&["explain", "--timeout", "1e20"], "--timeout"),
        (&["explain", "--runs", "18446744073709551615"], "--runs"),
        // A negative number is a value to refuse, not clap's "use -- -1" tip (which
        // would make it the program's argument).
        (&["bench", "--timeout", "-1"], "--timeout"),
        (&["tune", "--budget", "-1"], "--budget"),
    ];
    for (args, flag) in cases {
        let mut c = cs(&[args, &touch[..]].concat());
        if args[0] == "bench" {
            c.no_store();
        }
        let o = c.run();
        refused(&o, flag, &ran);
    }
    for (args, flag) in [
        (["--timeout", "1e20"], "--timeout"),
        (["--init-timeout", "1e300"], "--init-timeout"),
        (["--warmup", "18446744073709551615"], "--warmup"),
        (["--init-boost-seconds", "1e300"], "--init-boost-seconds"),
        (["--init-cpus", "1e300"], "--init-cpus"),
        (["--invokes", "18446744073709551615"], "--invokes"),
    ] {
        let o = cs(&["lambda", "--runtime", "/bin/true"])
            .args(args)
            .no_store()
            .run();
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
        .args(["bench", "t"])
        .no_store()
        .run();
    refused(&o, "[targets.t] timeout", &ran);
}

/// `bench` of `touch RAN` (one run) with extra arguments.
fn bench_touch(ran: &Path, args: &[&str]) -> Out {
    let mut all = vec!["bench", "-r", "1", "-w", "0"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--", "touch", ran.to_str().unwrap()]);
    cs(&all).quiet().no_store().run()
}

fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v["schema"].is_string())
}

#[test]
fn exports_write_through_devices_symlinks_and_fifos() {
    let _turn = crate::common::beside();
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");

    // A character device: our own null device where we may make one (root), else
    // /dev/null itself (which a non-root coldstart could not replace anyway).
    let own_null = dir.path().join("null");
    let dev = match nix::sys::stat::mknod(
        &own_null,
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(1, 3),
    ) {
        Ok(()) => own_null,
        Err(e) => {
            eprintln!("robust: mknod not permitted ({e}): exporting to /dev/null itself");
            "/dev/null".into()
        }
    };
    let o = bench_touch(&ran, &["--export-csv", dev.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        std::fs::metadata(&dev).unwrap().file_type().is_char_device(),
        "{} is still a character device",
        dev.display()
    );

    // A symlink stays a symlink; its target gets the export.
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    let o = bench_touch(&ran, &["--export-json", link.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(is_json(
        &std::fs::read_to_string(dir.path().join("real.json")).unwrap()
    ));

    // A FIFO gets the export, read by another thread.
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let o = bench_touch(&ran, &["--export-json", fifo.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Checked before joining: had the FIFO been replaced, the reader would wait forever.
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(is_json(&reader.join().unwrap()), "the reader got the JSON");

    // `-`: stdout carries the JSON alone; the table goes to stderr.
    let o = bench_touch(&ran, &["--export-json", "-"]);
    json_out_table_err(&o, "-");
}

/// The export alone on stdout, the table on stderr (as for `-`).
fn json_out_table_err(o: &std::process::Output, path: &str) {
    assert!(o.status.success(), "{path}: {}", stderr(o));
    assert!(
        is_json(&stdout(o)),
        "{path}: the JSON alone on stdout: {}",
        stdout(o)
    );
    assert!(
        stderr(o).contains("p50"),
        "{path}: the table went to stderr: {}",
        stderr(o)
    );
}

/// An export path that is our own stdout (`/dev/stdout`, `/proc/self/fd/1`,
/// or the very file stdout is appended to) is written in place: the JSON
/// alone on stdout (the table on stderr), and an appended file keeps what it
/// had (it used to be renamed over: `>> log.txt` lost log.txt).
#[test]
fn an_export_to_our_own_stdout_is_written_in_place() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    for path in ["/dev/stdout", "/proc/self/fd/1"] {
        json_out_table_err(&bench_touch(&ran, &["--export-json", path]), path);
    }
    // `coldstart bench … --export-json log.txt >> log.txt`.
    let log = dir.path().join("log.txt");
    std::fs::write(&log, "earlier line\n").unwrap();
    let appended = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before = inode(&log);
    let o = coldstart()
        .args(["bench", "-r", "1", "-w", "0", "--export-json"])
        .quiet()
        .no_store()
        .arg(&log)
        .args(["--", "touch", ran.to_str().unwrap()])
        .stdout(appended)
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(inode(&log), before, "log.txt was replaced, not appended to");
    let rest = text
        .strip_prefix("earlier line\n")
        .unwrap_or_else(|| panic!("the earlier contents are lost: {text}"));
    assert!(is_json(rest), "the JSON alone after them: {rest}");
    assert!(
        stderr(&o).contains("p50"),
        "the table went to stderr: {}",
        stderr(&o)
    );
}

/// `coldstart bench python3 -c 'import json'` (no `--`): clap reads `-c` as
/// `--cleanup 'import json'`. A hook whose command cannot start is refused
/// before any run, naming the fix (it ran 21 bare targets, then failed).
#[test]
fn a_hook_that_cannot_start_is_refused_before_any_run() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let target = format!("touch {}", ran.display());
    let o = cs(&["bench", &target, "-c", "import json"])
        .quiet()
        .no_store()
        .run();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--cleanup 'import json'") && err.contains("`import` is not a command"),
        "{err}"
    );
    assert!(err.contains("after `--`") && err.contains("-- touch"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(!ran.exists(), "no run before the refusal");
    // Builtins, assignments and programs on PATH are fine; -N needs a program.
    let o = cs(&[
        "bench",
        "-r",
        "1",
        "-w",
        "0",
        "--setup",
        "cd /",
        "--prepare",
        "FOO=1 true",
        "--conclude",
        "[ -e / ]",
        "--cleanup",
        "true",
        "--",
        "true",
    ])
    .quiet()
    .no_store()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = cs(&["bench", "-N", "--prepare", "cd /", "--", "true"])
        .quiet()
        .no_store()
        .run();
    assert_eq!(
        o.status.code(),
        Some(2),
        "-N runs no shell, so `cd` cannot start: {}",
        stderr(&o)
    );
}

/// `coldstart report` without `--output` writes ./coldstart-report.html and
/// says where (it was refused for want of --output).
#[test]
fn report_defaults_to_a_file_in_the_current_directory() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let ran = dir.path().join("ran");
    let o = cs(&[
        "bench",
        "-r",
        "2",
        "-w",
        "0",
        "--store",
        store.to_str().unwrap(),
        "--",
        "touch",
        ran.to_str().unwrap(),
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = coldstart()
        .args(["report", "--store", store.to_str().unwrap()])
        .current_dir(dir.path())
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let page = dir.path().join("coldstart-report.html");
    assert!(
        std::fs::read_to_string(&page).unwrap().contains("<html"),
        "the report is written"
    );
    assert!(
        stderr(&o).contains("coldstart-report.html"),
        "it says where: {}",
        stderr(&o)
    );
}

/// `compare` across two invocations gives no verdict and says why once (the
/// Δ line and the sentence under it both printed the paragraph).
#[test]
fn compare_across_invocations_says_why_no_verdict_once() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    for _ in 0..2 {
        let o = cs(&[
            "bench",
            "-r",
            "3",
            "-w",
            "0",
            "--store",
            store.to_str().unwrap(),
            "--",
            "true",
        ])
        .quiet()
        .run();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = cs(&["compare", "--store", store.to_str().unwrap(), "1", "2"]).run();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.matches("separate invocations").count(), 1, "{out}");
    assert!(out.contains("no verdict"), "{out}");
}

#[test]
fn unwritable_export_paths_fail_before_any_run() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let missing = dir.path().join("no/such/dir/r.json");
    for path in [
        missing.to_str().unwrap(),
        dir.path().to_str().unwrap(),
        // Nobody, root included, creates files in /proc.
        "/proc/coldstart-export.json",
    ] {
        let o = bench_touch(&ran, &["--export-json", path]);
        refused(&o, path, &ran);
    }
    let o = bench_touch(&ran, &["--export-json", "-", "--export-csv", "-"]);
    refused(&o, "stdout", &ran);
}

/// A pipe whose read end is already closed, as stdout for a child.
fn closed_pipe() -> Stdio {
    let (read, write) = nix::unistd::pipe().unwrap();
    drop(read);
    Stdio::from(write)
}

#[test]
fn a_closed_stdout_is_a_quiet_exit_and_exports_come_first() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let json = dir.path().join("r.json");
    let o = coldstart()
        .args(["bench", "-r", "2", "-w", "0", "--store", store.to_str().unwrap()])
        .quiet()
        .args(["--export-json", json.to_str().unwrap(), "--", "true"])
        .stdout(closed_pipe())
        .run();
    assert_eq!(
        o.status.code(),
        Some(0),
        "as if printing had succeeded: {}",
        stderr(&o)
    );
    assert!(stderr(&o).is_empty(), "nothing said: {}", stderr(&o));
    assert!(is_json(&std::fs::read_to_string(&json).expect("r.json written")));
    // A second experiment for `compare` (comparing one with itself is refused).
    let o = coldstart()
        .args([
            "bench",
            "-r",
            "2",
            "-w",
            "0",
            "--store",
            store.to_str().unwrap(),
            "--",
            "true",
        ])
        .quiet()
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    for args in [&["show", "1"][..], &["history"], &["compare", "1", "2"]] {
        let o = coldstart()
            .args(args)
            .args(["--store", store.to_str().unwrap()])
            .stdout(closed_pipe())
            .run();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).is_empty(), "{args:?}: {}", stderr(&o));
    }
}

/// Bytes held by coldstart's exit-mode output capture, if it has one open.
fn capture_held(pid: u32) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten() {
        let link = std::fs::read_link(fd.path()).unwrap_or_default();
        if link.to_string_lossy().starts_with("/memfd:coldstart-output") {
            return std::fs::metadata(fd.path()).ok().map(|m| m.blocks() * 512);
        }
    }
    None
}

#[test]
fn runaway_exit_mode_output_is_bounded_and_the_drop_is_said() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let (written, release, json) = (
        dir.path().join("written"),
        dir.path().join("release"),
        dir.path().join("r.json"),
    );
    // 300 MB to stdout, then wait (for the test's look) and exit before ready: a
    // failed run, whose output tail is exported.
    let script = format!(
        "head -c 300000000 /dev/zero; echo; echo the-last-line; : > {w}; while [ ! -e {r} ]; do sleep 0.01; done",
        w = written.display(),
        r = release.display()
    );
    let never = dir.path().join("never");
    let mut child = coldstart()
        .args(["bench", "-r", "1", "-w", "0", "--timeout", "120"])
        .quiet()
        .no_store()
        .args(["--ready", &format!("file:{}", never.display())])
        .args(["--export-json", json.to_str().unwrap(), "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .spawn();
    let pid = child.id();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !written.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the target never finished writing"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // The watcher trims within one interval (100 ms); allow far more.
    let bound = 32 << 20;
    let mut held = capture_held(pid).expect("coldstart holds the target's output capture");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while held > bound && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        held = capture_held(pid).unwrap_or(0);
    }
    std::fs::write(&release, "").unwrap();
    let status = child.wait().unwrap();
    assert!(
        held <= bound,
        "coldstart held {} MiB of the target's 300 MB",
        held >> 20
    );
    assert_eq!(status.code(), Some(1), "the run failed (exited before ready)");
    let doc = json_file(&json);
    let tail: Vec<&str> = doc["samples"][0]["output_tail"]
        .as_array()
        .expect("the failed run's output tail")
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert!(
        tail.first()
            .is_some_and(|l| l.starts_with("[coldstart: the first ") && l.contains("dropped")),
        "{:?}",
        tail.iter().map(|l| &l[..l.len().min(120)]).collect::<Vec<_>>()
    );
    assert_eq!(tail.last(), Some(&"the-last-line"));
}

#[test]
fn export_to_dev_stdout_through_a_pipe_writes_into_the_pipe() {
    let _turn = crate::common::beside();
    // /dev/stdout → /proc/self/fd/1 → "pipe:[…]": a magic link, not a path to resolve.
    let o = coldstart()
        .args([
            "bench",
            "-r",
            "2",
            "-w",
            "0",
            "--export-json",
            "/dev/stdout",
            "--",
            "true",
        ])
        .quiet()
        .no_store()
        .run();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let end = out.find("spawn →").unwrap_or(out.len());
    let doc: serde_json::Value = serde_json::from_str(&out[..end]).expect("the export comes first, whole");
    assert_eq!(doc["schema"], "coldstart.bench/2");
    assert!(std::fs::symlink_metadata("/dev/stdout")
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn progress_into_a_closed_pipe_is_not_a_panic() {
    let _turn = crate::common::beside();
    // `coldstart bench … 2>&1 | head -1`: stderr's reader is gone too.
    let o = coldstart()
        .args(["bench", "-r", "30", "-w", "0", "--", "true"])
        .no_store()
        .stdout(closed_pipe())
        .stderr(closed_pipe())
        .run()
        .status;
    assert_eq!(o.code(), Some(0), "a panic exits 101");
}
