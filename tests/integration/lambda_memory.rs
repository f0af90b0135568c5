//! `coldstart lambda`'s sandbox cgroups: what a user is told about them, and
//! Max Memory Used (read from them). (The sandbox's mount namespace is
//! tests/integration/lambda_sandbox.rs.)
//!
//! Max Memory Used is checked against an oracle the processes keep
//! themselves: each records its own VmHWM (peak resident set, from
//! /proc/self/status) during the invoke, after it allocated and wrote a known
//! amount during init.
//!
//! What the two figures count. The sandbox's memory cgroup charges the pages
//! the tree allocates (anonymous memory), kernel memory (page tables, kernel
//! stacks) and page cache the tree reads first. On a host whose page cache is
//! warm the runtime's binary and libraries are already cached, charged to
//! whoever read them first, so the cgroup alone misses them — in a fresh Lambda
//! microVM they are read in by the environment and count. VmHWM counts them
//! (RssFile), and so does Max Memory Used: coldstart adds the resident file
//! pages the tree maps that the cgroup did not charge (`lambda::mapped`).
//! Without that the runtime alone measured 0.89 of its VmHWM here (anonymous
//! memory only), the runtime and an extension 0.88 of the sum.
//!
//! Why the sum: VmHWM is per process and the cgroup is the whole tree. The
//! sum counts a file two processes map (the Python binary, ~9 MB here) twice,
//! Max Memory Used once, as the kernel caches it once; the extension allocates
//! as much as the runtime so that this stays well inside the 10 %. The peaks of
//! the two processes may fall at different instants; here both peak in init
//! and keep their memory, so the peak of the sum is the sum of the peaks.

use crate::common::*;
use std::path::Path;

/// Whether `coldstart lambda` can make its cgroups here (a visible skip if not).
fn sandboxes_available() -> bool {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let runtime = repo().join("examples/lambda/python/raw_runtime.py");
    let o = cs(&[
        "lambda",
        "--runs",
        "1",
        "--runtime",
        runtime.to_str().unwrap(),
        "--log",
        dir.path().join("log").to_str().unwrap(),
    ])
    .quiet()
    .no_store()
    .run();
    let missing = stderr(&o).contains("no cgroup with the cpu and memory controllers")
        || stderr(&o).contains("creating cgroup");
    if missing {
        testkit::skip(
            "CGROUP",
            &format!("lambda sandboxes need cgroups here: {}", stderr(&o).trim()),
        );
    }
    assert!(missing || o.status.success(), "{}", stderr(&o));
    !missing
}

/// The single REPORT's Max Memory Used (MB, as Lambda prints it).
fn max_memory_used(log: &Path) -> u64 {
    let text = std::fs::read_to_string(log).unwrap();
    let reports: Vec<&str> = text.lines().filter(|l| l.starts_with("REPORT ")).collect();
    assert_eq!(reports.len(), 1, "{text}");
    reports[0]
        .split('\t')
        .find_map(|f| f.strip_prefix("Max Memory Used: "))
        .and_then(|v| v.strip_suffix(" MB"))
        .unwrap_or_else(|| panic!("no Max Memory Used in {}", reports[0]))
        .parse()
        .unwrap()
}

fn kb_in(path: &Path) -> u64 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (the process did not record its VmHWM)", path.display()))
        .trim()
        .parse()
        .unwrap()
}

/// One cold start of the raw Python runtime allocating `rt_mb` during init, and
/// (with `ext_mb`) the raw Python extension allocating that much: (Max Memory
/// Used in MiB, the sum of the processes' VmHWM in MiB).
fn measure(rt_mb: u64, ext_mb: Option<u64>) -> (f64, f64) {
    measure_at(512, rt_mb, ext_mb, &[])
}

/// [`measure`] with a memory size of `memory_mb` and more `--env` settings.
fn measure_at(memory_mb: u64, rt_mb: u64, ext_mb: Option<u64>, more: &[String]) -> (f64, f64) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let runtime = repo().join("examples/lambda/python/raw_runtime.py");
    let log = dir.path().join("log");
    let (rt_hwm, ext_hwm) = (dir.path().join("rt.hwm"), dir.path().join("ext.hwm"));
    let mut args: Vec<String> = [
        "--memory",
        &memory_mb.to_string(),
        "--runtime",
        runtime.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]
    .map(|s| s.to_string())
    .to_vec();
    let env = [
        format!("CS_RT_ALLOC_MB={rt_mb}"),
        format!("CS_RT_HWM_FILE={}", rt_hwm.display()),
        format!("CS_EXT_ALLOC_MB={}", ext_mb.unwrap_or(0)),
        format!("CS_EXT_HWM_FILE={}", ext_hwm.display()),
    ];
    for e in env.iter().chain(more) {
        args.extend(["--env".to_string(), e.clone()]);
    }
    if ext_mb.is_some() {
        let ext = dir.path().join("extensions");
        std::fs::create_dir_all(&ext).unwrap();
        std::fs::copy(
            repo().join("examples/lambda/python/raw_extension.py"),
            ext.join("py-raw"),
        )
        .unwrap();
        args.extend(["--extensions".to_string(), ext.display().to_string()]);
    }
    let o = lambda_once().args(&args).run();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut hwm_kb = kb_in(&rt_hwm);
    if ext_mb.is_some() {
        hwm_kb += kb_in(&ext_hwm);
    }
    (max_memory_used(&log) as f64, hwm_kb as f64 / 1024.0)
}

/// Max Memory Used agrees with the tree's peak RSS within 10 %: the runtime
/// alone (where the two count the same pages), then with an extension.
#[test]
fn max_memory_used_agrees_with_the_trees_peak_rss() {
    let _turn = crate::common::beside();
    if !sandboxes_available() {
        return;
    }
    for (rt_mb, ext_mb) in [(60, None), (60, Some(60))] {
        let (used, hwm) = measure(rt_mb, ext_mb);
        let ratio = used / hwm;
        eprintln!(
            "runtime {rt_mb} MB, extension {ext_mb:?} MB: Max Memory Used {used} MB, sum of VmHWM {hwm:.1} MiB, ratio {ratio:.3}"
        );
        // Both were allocated and written: the figure can be no less.
        assert!(
            used >= (rt_mb + ext_mb.unwrap_or(0)) as f64,
            "Max Memory Used {used} MB is below the {rt_mb} + {ext_mb:?} MB written"
        );
        assert!(
            (0.9..=1.1).contains(&ratio),
            "runtime {rt_mb} MB, extension {ext_mb:?} MB: Max Memory Used {used} MB vs the processes' VmHWM {hwm:.1} MiB (ratio {ratio:.3})"
        );
    }
}

/// Near the limit: the runtime writes 90 MB and maps a 40 MB file this test
/// wrote (so its page cache is charged to the test, not the sandbox). Its own
/// VmHWM passes the 128 MB memory size; Max Memory Used stops at it, as
/// Lambda's does (a REPORT's Max Memory Used equal to its Memory Size is how
/// users spot a function at its limit): in Lambda those file pages would count
/// against the limit, and page cache is given back before the limit is passed.
#[test]
fn max_memory_used_stops_at_the_memory_size() {
    let _turn = crate::common::beside();
    if !sandboxes_available() {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("mapped.bin");
    std::fs::write(&file, vec![1u8; 40 << 20]).unwrap();
    let more = [format!("CS_RT_MAP_FILE={}", file.display())];
    let (used, hwm) = measure_at(128, 90, None, &more);
    eprintln!("128 MB, runtime 90 MB + a 40 MB mapped file: Max Memory Used {used} MB, VmHWM {hwm:.1} MiB");
    assert!(
        hwm > 128.0,
        "the runtime's VmHWM {hwm:.1} MiB did not pass 128 MB: nothing to stop"
    );
    assert!(
        used <= 128.0,
        "Max Memory Used {used} MB over the 128 MB memory size"
    );
    assert!(
        used >= 120.0,
        "Max Memory Used {used} MB: the mapped file is not counted"
    );
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.trim().is_empty()).collect()
}

/// With its sandboxes, lambda says nothing about cgroups (it used to note "no
/// per-run cgroup (not set up)", though the sandbox held and cleaned the tree);
/// with --no-cgroup one line says what that costs and why.
#[test]
fn lambda_says_one_line_about_cgroups_only_without_them() {
    let _turn = crate::common::beside();
    if !sandboxes_available() {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let runtime = repo().join("examples/lambda/python/raw_runtime.py");
    let log = dir.path().join("log");
    let base = [
        "lambda",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--runtime",
        runtime.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ];
    let o = cs(&base).quiet().no_store().run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(lines(&stderr(&o)).is_empty(), "with cgroups: {}", stderr(&o));
    std::fs::remove_file(&log).unwrap();
    let mut args = base.to_vec();
    args.push("--no-cgroup");
    let o = cs(&args).quiet().no_store().run();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(lines(&err).len(), 1, "with --no-cgroup: {err}");
    assert!(err.contains("(--no-cgroup)"), "{err}");
    // Without the sandbox the figure is the tree's peak RSS, still reported.
    assert!(max_memory_used(&log) > 0);
}

/// Where coldstart may not make cgroups (here: as an unprivileged user), lambda
/// stops before starting anything, with one line naming the fix.
#[test]
fn lambda_without_cgroup_permission_says_one_line() {
    let _turn = crate::common::beside();
    // SAFETY: a plain query of our own credentials.
    let root_user = unsafe { libc::geteuid() } == 0;
    let Some(setpriv) = testkit::need("SETPRIV", testkit::which("setpriv").filter(|_| root_user), || {
        "needs root and setpriv on PATH to run coldstart as an unprivileged user".to_string()
    }) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let runtime = repo().join("examples/lambda/python/raw_runtime.py");
    let o = std::process::Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_coldstart"))
        .args(["lambda", "--no-store", "--runs", "1", "--runtime"])
        .arg(&runtime)
        .env("HOME", home.path())
        .current_dir(home.path())
        .output()
        .unwrap();
    let err = stderr(&o);
    if o.status.success() {
        // A machine that delegates cgroups to everyone: nothing to refuse.
        testkit::skip("SETPRIV", "an unprivileged user may make cgroups here");
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(lines(&err).len(), 1, "{err}");
    assert!(err.starts_with("coldstart: error: "), "{err}");
    assert!(err.contains("--no-cgroup") && err.contains("root"), "{err}");
}

/// The raw runtime at 128 MB with `alloc` (an `--env` setting that makes it
/// allocate 300 MB); the failed run's `--log` text. Nothing may be left running.
fn over_the_limit(alloc: &str, tag: &str) -> String {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let log = dir.path().join("lambda.log");
    let runtime = repo().join("examples/lambda/python/raw_runtime.py");
    let m = marker(tag);
    let o = lambda_once()
        .args([
            "--memory",
            "128",
            "--runtime",
            runtime.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--env",
            &m,
            "--env",
            alloc,
        ])
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(processes_with(&m).is_empty(), "left behind");
    std::fs::read_to_string(&log).unwrap()
}

/// A handler that allocates past the memory size is killed by the kernel's OOM
/// killer in the sandbox's cgroup: Lambda reports Runtime.OutOfMemory (with the
/// runtime's `signal: killed` line), not a plain Runtime.ExitError.
#[test]
fn out_of_memory_is_reported_as_lambda_does() {
    let _turn = crate::common::beside();
    if !sandboxes_available() {
        return;
    }
    let text = over_the_limit("CS_RT_INVOKE_ALLOC_MB=300", "lambda-oom");
    let report = text
        .lines()
        .find(|l| l.starts_with("REPORT "))
        .unwrap_or_else(|| panic!("no REPORT: {text}"));
    assert!(
        report.ends_with("\tStatus: error\tError Type: Runtime.OutOfMemory"),
        "{report}"
    );
    let lines: Vec<&str> = text.lines().collect();
    let killed = lines
        .iter()
        .position(|l| l.ends_with("Error: Runtime exited with error: signal: killed"))
        .unwrap_or_else(|| panic!("no exit line: {text}"));
    assert_eq!(lines.get(killed + 1), Some(&"Runtime.OutOfMemory"), "{text}");
}

/// The same during init: a runtime the memory limit kills while it initialises
/// fails init with Runtime.OutOfMemory, not Runtime.ExitError.
#[test]
fn out_of_memory_during_init_is_named() {
    let _turn = crate::common::beside();
    if !sandboxes_available() {
        return;
    }
    let text = over_the_limit("CS_RT_ALLOC_MB=300", "lambda-oom-init");
    let init_report = text
        .lines()
        .find(|l| l.starts_with("INIT_REPORT ") && l.contains("Phase: init"))
        .unwrap_or_else(|| panic!("no INIT_REPORT: {text}"));
    assert!(
        init_report.ends_with("\tStatus: error\tError Type: Runtime.OutOfMemory"),
        "{init_report}"
    );
}
