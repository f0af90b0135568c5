//! The conditions around bench's runs: truly cold page caches (`--cache cold`,
//! `--drop-caches`), hooks (`--setup`, `--prepare`, `--conclude`, `--cleanup`),
//! command strings through a shell, and the hyperfine flags users bring along.

use crate::common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Tests that measure the page cache must not overlap (a drop of the whole
/// cache during a warm measurement would make it cold).
static CACHE: Mutex<()> = Mutex::new(());

/// 64 MiB: read from this machine's disk in 40–70 ms cold (more under load),
/// from the page cache in ~7 ms, so cold/warm is several times, not 1.3.
const BIG_MIB: usize = 64;

/// A file of `BIG_MIB` under the target directory (not /tmp, which may be
/// tmpfs: its pages can never be evicted), removed when dropped.
struct Big(PathBuf);

impl Drop for Big {
    fn drop(&mut self) {
        std::fs::remove_file(&self.0).ok();
    }
}

fn big_file(tag: &str) -> Big {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("big-{tag}-{}", std::process::id()));
    let mut f = std::fs::File::create(&path).expect("create the big file");
    // Not zeros: a file system could store a run of zeros sparsely.
    let chunk: Vec<u8> = (0..1 << 20)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    for _ in 0..BIG_MIB {
        f.write_all(&chunk).expect("write the big file");
    }
    f.sync_all().expect("sync the big file");
    Big(path)
}

fn bench_json(dir: &Path, args: &[&str]) -> (Out, serde_json::Value) {
    let json = dir.join("r.json");
    std::fs::remove_file(&json).ok();
    let o = cs(&["bench", "--export-json", json.to_str().unwrap()])
        .args(args)
        .quiet()
        .no_store()
        .ok();
    (o, json_file(&json))
}

fn median(mut v: Vec<u64>) -> f64 {
    assert!(!v.is_empty(), "no successful runs");
    v.sort_unstable();
    v[v.len() / 2] as f64
}

/// `metric` of every measured run of variant 0 (None where a run has none).
fn metric(doc: &serde_json::Value, name: &str) -> Vec<Option<f64>> {
    doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["variant"] == 0 && s["warmup"] == false)
        .map(|s| s["metrics"][name].as_f64())
        .collect()
}

#[test]
fn cold_runs_read_the_targets_files_from_disk_and_are_slower() {
    let _turn = crate::common::timed();
    let _serial = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let big = big_file("cold");
    let input = format!("if={}", big.0.display());
    // dd: a program whose start is reading the big file (coreutils, everywhere).
    let reader = ["--", "dd", input.as_str(), "of=/dev/null", "bs=1M"];
    let mut warm_args = vec!["--runs", "5", "--warmup", "1"];
    warm_args.extend(reader);
    let (warm_out, warm) = bench_json(dir.path(), &warm_args);
    let mut cold_args = vec!["--runs", "5", "--warmup", "0", "--cache", "cold"];
    cold_args.extend(reader);
    let (o, cold) = bench_json(dir.path(), &cold_args);

    let (w, c) = (median(ready_ns(&warm, 0)), median(ready_ns(&cold, 0)));
    eprintln!("warm median {:.1} ms, cold median {:.1} ms", w / 1e6, c / 1e6);
    assert!(
        c > 1.3 * w,
        "cold {c} ns vs warm {w} ns: eviction did not make it read from disk"
    );

    // Every cold run started with (at least) the big file out of the cache.
    let uncached = metric(&cold, "uncached_mib");
    assert_eq!(uncached.len(), 5, "{cold}");
    for mib in &uncached {
        let mib = mib.unwrap_or_else(|| panic!("a cold run without uncached_mib: {cold}"));
        assert!(
            mib >= BIG_MIB as f64 * 0.99,
            "only {mib} MiB were not cached at start: {cold}"
        );
    }
    assert!(
        metric(&warm, "uncached_mib").iter().all(Option::is_none),
        "warm runs learn no file set, so they have no such figure: {warm}"
    );
    let stats = &cold["variants"][0]["stats"]["metrics"]["uncached_mib"];
    assert_eq!(stats["n"], 5, "summarised per variant in the JSON: {cold}");
    let report = stdout(&o);
    assert!(
        report.contains("uncached_mib: median"),
        "and in the report: {report}"
    );
    // One line under the table says what eviction per file leaves warm and
    // where the full drop is; warm runs do not get it.
    let notes: Vec<&str> = report
        .lines()
        .filter(|l| l.contains("--cache cold evicted only"))
        .collect();
    assert_eq!(notes.len(), 1, "{report}");
    assert!(
        notes[0].contains("dentry and inode caches") && notes[0].contains("--drop-caches"),
        "{}",
        notes[0]
    );
    assert!(
        !stdout(&warm_out).contains("--cache cold evicted"),
        "{}",
        stdout(&warm_out)
    );
}

#[test]
fn drop_caches_needs_root_and_empties_the_cache_with_it() {
    let _turn = crate::common::timed();
    let _serial = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let big = big_file("drop");
    let input = format!("if={}", big.0.display());
    let args = [
        "bench",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--drop-caches",
        "--",
        "dd",
        &input,
        "of=/dev/null",
        "bs=1M",
    ];
    let writable = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")
        .is_ok();
    // Without root: one clear line, before any run.
    let refused = |o: std::process::Output| {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("--drop-caches needs root"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    };
    if !writable {
        refused(cs(&args).quiet().no_store().run().into());
        return;
    }
    // As root, the refusal is still checked: the same command as nobody.
    if let Some(setpriv) = testkit::tool("SANDBOX", "setpriv") {
        let o = std::process::Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_coldstart"))
            .args(cs(&args).quiet().no_store().argv())
            .env("COLDSTART_STORE", dir.path().join("nobody.db"))
            .current_dir(std::env::temp_dir())
            .output()
            .expect("spawn setpriv");
        refused(o);
    }
    let json = dir.path().join("d.json");
    let mut with_export: Vec<&str> = args.to_vec();
    with_export.splice(1..1, ["--export-json", json.to_str().unwrap()]);
    // The file was just written and synced: resident until the drop.
    let o = cs(&with_export).quiet().no_store().run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    let mib = metric(&doc, "uncached_mib")[0].expect("uncached_mib with --drop-caches");
    assert!(
        mib >= BIG_MIB as f64 * 0.99,
        "{mib} MiB uncached after a drop: {doc}"
    );
}

#[test]
fn hyperfine_invocations_work_as_typed() {
    let _turn = crate::common::timed();
    // No clap tip ("to pass '-N' as a value, use '-- -N'"), no config lookup.
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["bench", "-N", "sleep 0.01"][..],
        &["bench", "--prepare", "true", "sleep 0.01"][..],
        &["bench", "--show-output", "--", "echo", "hi"][..],
    ] {
        let mut all = vec![args[0], "--runs", "2", "--warmup", "1"];
        all.extend(&args[1..]);
        let o = cs(&all).no_store().current_dir(dir.path()).run();
        let (out, err) = (stdout(&o), stderr(&o));
        assert!(o.status.success(), "{all:?}: {out}{err}");
        assert!(!err.contains("tip:") && !err.contains("-- -N"), "{all:?}: {err}");
        assert!(!err.contains("coldstart.toml"), "{all:?}: {err}");
        if args.contains(&"--show-output") {
            assert_eq!(
                out.lines().filter(|l| *l == "hi").count(),
                3,
                "warmup + 2 runs shown: {out}"
            );
        } else {
            assert!(
                out.contains("sleep 0.01"),
                "the variant is named by its command: {out}"
            );
        }
    }
}

#[test]
fn show_output_also_when_a_probe_reads_the_output() {
    let _turn = crate::common::timed();
    // log readiness needs pipes: what is read is copied to our stdout/stderr.
    let o = cs(&[
        "bench",
        "-r",
        "2",
        "-w",
        "0",
        "--show-output",
        "--ready",
        "log:^up$",
        "--",
        "sh",
        "-c",
        "echo to-err >&2; echo up; sleep 0.2",
    ])
    .quiet()
    .no_store()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).lines().filter(|l| *l == "up").count(),
        2,
        "{}",
        stdout(&o)
    );
    assert_eq!(
        stderr(&o).lines().filter(|l| *l == "to-err").count(),
        2,
        "{}",
        stderr(&o)
    );
    let o = cs(&["bench", "--show-output", "--export-json", "-", "--", "true"])
        .quiet()
        .no_store()
        .run();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--show-output writes the target's output to stdout"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_command_string_runs_through_the_shell_and_n_splits_it() {
    let _turn = crate::common::timed();
    let dir = tempfile::tempdir().unwrap();
    let line = "test x$COLDSTART_TEST_UNSET_VAR = x";
    let code = |extra: &[&str]| {
        let mut args = vec!["-r", "1", "-w", "0", "-i"];
        args.extend(extra);
        args.push(line);
        let (_, doc) = bench_json(dir.path(), &args);
        assert_eq!(
            doc["variants"][0]["name"], line,
            "named by the command string: {doc}"
        );
        doc["samples"][0]["exit_status"]["code"].clone()
    };
    // Through `sh -c` the unset variable expands to nothing: x = x.
    assert_eq!(code(&[]), 0);
    assert_eq!(code(&["--shell", "bash"]), 0);
    // -N (and --shell=none): the words run directly, `$…` stays literal: x$… ≠ x.
    assert_eq!(code(&["-N"]), 1);
    assert_eq!(code(&["--shell=none"]), 1);
    // Shell syntax in a string is the shell's.
    let (_, doc) = bench_json(dir.path(), &["-r", "2", "-w", "0", "exit 0; false"]);
    assert_eq!(ready_ns(&doc, 0).len(), 2, "{doc}");
}

#[test]
fn prepare_resets_state_a_target_needs_fresh() {
    let _turn = crate::common::timed();
    let dir = tempfile::tempdir().unwrap();
    // A "database" that refuses to start on a used data directory, and uses it.
    let target = "test -z \"$(ls -A data)\" || { echo data dir not empty >&2; exit 1; }; touch data/used";
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let cwd = dir.path().to_str().unwrap();
    // Without a reset, the second run fails.
    let o = cs(&["bench", "-r", "3", "-w", "0", "--cwd", cwd, target])
        .quiet()
        .no_store()
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("data dir not empty"), "{}", stderr(&o));
    // One --prepare makes every run start fresh.
    let (_, doc) = bench_json(
        dir.path(),
        &[
            "-r",
            "3",
            "-w",
            "1",
            "--cwd",
            cwd,
            "--prepare",
            "rm -rf data && mkdir data",
            target,
        ],
    );
    assert_eq!(ready_ns(&doc, 0).len(), 3, "{doc}");
}

#[test]
fn a_failed_prepare_fails_its_run_with_its_output() {
    let _turn = crate::common::timed();
    let dir = tempfile::tempdir().unwrap();
    let o = cs(&[
        "bench",
        "-r",
        "2",
        "-w",
        "0",
        "--cwd",
        dir.path().to_str().unwrap(),
        "--prepare",
        "echo no database >&2; exit 4",
        "--",
        "true",
    ])
    .quiet()
    .no_store()
    .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("run 1 failed: failed with --prepare 'echo no database >&2; exit 4' (exit code 4)"),
        "{err}"
    );
    assert!(err.contains("| no database"), "{err}");
}

#[test]
fn hooks_run_once_per_variant_or_once_per_run() {
    let _turn = crate::common::timed();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let log = |tag: &str| format!("echo {tag} >> log");
    let (a_setup, a_prep, b_prep, conc, clean) = (
        log("setup-a"),
        log("prep-a"),
        log("prep-b"),
        log("conclude"),
        log("cleanup"),
    );
    // Global --conclude/--cleanup for both; --setup and --prepare per variant.
    bench_json(
        dir.path(),
        &[
            "-r",
            "3",
            "-w",
            "1",
            "--cwd",
            cwd,
            "--conclude",
            &conc,
            "--cleanup",
            &clean,
            "--name",
            "a",
            "--setup",
            &a_setup,
            "--prepare",
            &a_prep,
            "--",
            "true",
            "--name",
            "b",
            "--prepare",
            &b_prep,
            "--",
            "true",
        ],
    );
    let text = std::fs::read_to_string(dir.path().join("log")).unwrap();
    let count = |l: &str| text.lines().filter(|x| *x == l).count();
    assert_eq!(count("setup-a"), 1, "{text}");
    assert_eq!(count("prep-a"), 4, "warmup + 3 runs: {text}");
    assert_eq!(count("prep-b"), 4, "{text}");
    assert_eq!(count("conclude"), 8, "{text}");
    assert_eq!(count("cleanup"), 2, "once per variant: {text}");
    let first_a = text.lines().position(|l| l == "prep-a").unwrap();
    assert!(
        text.lines().position(|l| l == "setup-a").unwrap() < first_a,
        "setup before the first run: {text}"
    );
    assert!(
        text.lines().rev().take(2).all(|l| l == "cleanup"),
        "cleanup after the last: {text}"
    );

    // hyperfine's rule: one --prepare per command string, in order.
    std::fs::remove_file(dir.path().join("log")).unwrap();
    bench_json(
        dir.path(),
        &[
            "-r",
            "2",
            "-w",
            "0",
            "--cwd",
            cwd,
            "--prepare",
            &log("p1"),
            "--prepare",
            &log("p2"),
            "true",
            "true ",
        ],
    );
    let text = std::fs::read_to_string(dir.path().join("log")).unwrap();
    assert_eq!(
        (text.matches("p1").count(), text.matches("p2").count()),
        (2, 2),
        "{text}"
    );
    let o = cs(&[
        "bench",
        "--prepare",
        "true",
        "--prepare",
        "true",
        "--prepare",
        "true",
        "true",
        "true ",
    ])
    .no_store()
    .run();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--prepare is given 3 times for 2 variants"),
        "{}",
        stderr(&o)
    );
}
