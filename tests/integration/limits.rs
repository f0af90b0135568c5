//! --cpus/--cpuset/--memory on real processes: the limits hold for the whole
//! tree from its first instruction (a child forked before anything else is in
//! every limiting cgroup), CPU quotas slow a fixed amount of work in proportion,
//! the memory limit's OOM kill is the run's failure, and the cgroup's peak is
//! the tree's. Needs root or a delegated cgroup: without one these skip under
//! COLDSTART_REQUIRE_CGROUP, as the cleanup tests do.

use crate::common::{coldstart, coldstart_cgroup_dirs, stderr, stdout, testkit, Out};
use std::path::{Path, PathBuf};

/// tests/fixtures/limits_target.c, built under the target directory.
fn target() -> Option<PathBuf> {
    let gcc = testkit::tool("GCC", "gcc")?;
    let src = testkit::repo().join("tests/fixtures/limits_target.c");
    Some(testkit::built("limits_target", &[&src], |out| {
        let mut c = std::process::Command::new(gcc);
        c.args(["-O2", "-Wall", "-o"]).arg(out).arg(&src);
        c
    }))
}

/// One limited bench at a time in this binary: the CPU test's figures are
/// not another test's load.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn bench(env: &[(&str, &str)], args: &[&str]) -> Out {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = coldstart();
    c.args(["bench"]).quiet().no_store().args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.run()
}

/// Whether limited runs work here; a skip under CGROUP (naming what is
/// missing) when this machine gives coldstart no cgroup to limit in.
fn limits_available(test: &str, env: &[(&str, &str)]) -> bool {
    let o = bench(
        env,
        &[
            "-r", "1", "-w", "0", "--cpus", "1", "--memory", "256M", "--", "true",
        ],
    );
    if o.status.success() {
        return true;
    }
    let err = stderr(&o);
    assert!(
        err.contains("cgroup") || err.contains("controller"),
        "{test}: a limited run failed for another reason: {err}"
    );
    testkit::skip(
        "CGROUP",
        &format!("{test}: no cgroup to limit runs in: {}", err.trim()),
    );
    false
}

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("the JSON export parses")
}

fn scratch(name: &str) -> PathBuf {
    let dir = testkit::fixtures_dir().join(format!("limits-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn cpu_quota_slows_fixed_work_in_proportion() {
    let _turn = crate::common::beside();
    let Some(exe) = target() else { return };
    if !limits_available("cpu_quota", &[]) {
        return;
    }
    let exe = exe.display().to_string();
    let out = scratch("cpu").join("run.json");
    // ~300 ms of CPU: at 0.25 CPUs a dozen 100 ms periods of throttling, so the
    // quota a run may find unspent at its start is a small part of its time.
    let o = bench(
        &[],
        &[
            "-r",
            "3",
            "-w",
            "0",
            "--export-json",
            out.to_str().expect("utf-8 path"),
            "--name",
            "quarter",
            "--cpus",
            "0.25",
            "--",
            &exe,
            "spin",
            "600",
            "--name",
            "half",
            "--cpus",
            "0.5",
            "--",
            &exe,
            "spin",
            "600",
            "--name",
            "one",
            "--cpus",
            "1",
            "--",
            &exe,
            "spin",
            "600",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json(&out);
    let p50 = |i: usize| {
        doc["variants"][i]["stats"]["ready_ms"]["p50"]
            .as_f64()
            .expect("a median")
    };
    let (quarter, half, one) = (p50(0), p50(1), p50(2));
    // The CPU a run got per wall-clock second: the quota caps it whatever else
    // the machine runs (the cap is the kernel's; the floor depends on load).
    let share = |i: usize| {
        let mut shares: Vec<f64> = doc["samples"]
            .as_array()
            .expect("samples")
            .iter()
            .filter(|s| s["variant"] == i && s["warmup"] == false)
            .map(|s| {
                s["usage"]["cpu_total_us"].as_f64().expect("cpu") * 1e3
                    / s["ready_ns"].as_f64().expect("ready")
            })
            .collect();
        shares.sort_by(f64::total_cmp);
        shares[shares.len() / 2]
    };
    for (i, cpus) in [(0, 0.25), (1, 0.5)] {
        let got = share(i);
        assert!(
            got <= cpus * 1.3,
            "--cpus {cpus}: the tree got {got:.2} CPUs (the quota did not hold)"
        );
    }
    // How the medians compare depends on what the machine gives the run the
    // quota does not hold back: checked as far as that allows.
    let unthrottled = share(2);
    let ratio = quarter / one;
    let medians = format!("0.25 → {quarter:.0} ms, 0.5 → {half:.0} ms, 1 → {one:.0} ms");
    if unthrottled >= 0.8 {
        assert!(
            quarter > half && half > one,
            "medians not ordered by quota: {medians}"
        );
        assert!(
            (2.0..=8.0).contains(&ratio),
            "t(0.25)/t(1) = {ratio:.2} (expected about 4): {medians}"
        );
    } else if unthrottled >= 0.45 {
        assert!(quarter > one, "--cpus 0.25 not slower than --cpus 1: {medians}");
    } else {
        // Other load took the CPU --cpus 0.5 and 1 allow: their times say nothing
        // about the quota.
        testkit::say(&format!(
            "NOTE cpu_quota_slows_fixed_work_in_proportion: the machine gave --cpus 1 only {unthrottled:.2} CPUs; medians ({medians}) not compared (the caps were checked)"
        ));
    }
    assert_eq!(doc["variants"][0]["target"]["limits"]["cpus"], 0.25);
}

#[test]
fn a_run_past_its_memory_limit_fails_out_of_memory() {
    let _turn = crate::common::beside();
    let Some(exe) = target() else { return };
    if !limits_available("oom", &[]) {
        return;
    }
    let exe = exe.display().to_string();
    let o = bench(
        &[],
        &[
            "-r", "1", "-w", "0", "--memory", "64M", "--", &exe, "alloc", "128",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("run 1 failed: out of memory (limit 64 MiB)"),
        "{}",
        stderr(&o)
    );
    // Under the limit the same program is fine: the limit, not the program, failed it.
    let o = bench(
        &[],
        &[
            "-r", "1", "-w", "0", "--memory", "256M", "--", &exe, "alloc", "128",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A shell that survives its child's OOM kill and exits 0 has not done what it was
/// asked to: the kill inside the tree (the cgroup's `oom_kill` count) fails the run,
/// `-i` accepts it with a note, and no cgroup of the run is left.
#[test]
fn an_oom_kill_inside_the_tree_fails_the_run_though_the_root_exits_0() {
    let _turn = crate::common::beside();
    let Some(exe) = target() else { return };
    if !limits_available("oom-tree", &[]) {
        return;
    }
    let dir = scratch("oom-tree");
    // The shell records its cgroups (to check they are removed), runs the allocator
    // (128 MiB touched page by page, past the 64 MiB limit), and goes on.
    let script = format!(
        "cat /proc/self/cgroup > '{}'/cgroup.$$; '{}' alloc 128; echo survived; exit 0",
        dir.display(),
        exe.display()
    );
    let run = |extra: &[&str]| {
        let mut args = vec!["-r", "2", "-w", "0", "--memory", "64M", "--ready", "exit"];
        args.extend(extra);
        args.extend(["--", "sh", "-c", &script]);
        bench(&[], &args)
    };
    let o = run(&[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "run 1 failed: out of memory (limit 64 MiB): a process in its tree was killed by the memory limit (1 kill)"
        ),
        "{err}"
    );
    // The independent witness: the shell saw its child die by SIGKILL, and went on.
    assert!(err.contains("| Killed") && err.contains("| survived"), "{err}");

    let export = dir.join("accepted.json");
    let o = run(&["-i", "--export-json", export.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            "in 2 of 2 successful runs a process in its tree was killed by the memory limit (2 kills); accepted by -i/--ignore-failure"
        ),
        "{out}"
    );
    let doc = json(&export);
    let samples = doc["samples"].as_array().expect("samples");
    assert_eq!(samples.len(), 2);
    for s in samples {
        assert_eq!(s["outcome"]["kind"], "ready", "{s}");
        assert_eq!(s["metrics"]["oom_kills"], 1.0, "{s}");
    }

    // Under a limit it fits in, the same tree has no kill and no note.
    let o = bench(
        &[],
        &[
            "-r", "1", "-w", "0", "--memory", "256M", "--ready", "exit", "--", "sh", "-c", &script,
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !stdout(&o).contains("killed by the memory limit"),
        "{}",
        stdout(&o)
    );

    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("scratch dir") {
        let path = entry.expect("entry").path();
        if !path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("cgroup."))
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("cgroup record");
        let dirs = coldstart_cgroup_dirs(&text);
        assert!(!dirs.is_empty(), "the run was in no coldstart cgroup:\n{text}");
        for d in dirs {
            seen += 1;
            let is_run = d
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("run-"));
            if is_run {
                // coldstart removes a run's cgroups after the run.
                assert!(!d.exists(), "{} is left after its run", d.display());
            } else {
                // The invocation's parent goes when its watchdog sees coldstart gone.
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
                while d.exists() && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                assert!(!d.exists(), "{} is left 20 s after coldstart exited", d.display());
            }
        }
    }
    assert!(seen > 0);
    std::fs::remove_dir_all(&dir).ok();
}

/// The `run-<n>` cgroup a process is in, per hierarchy line of /proc/PID/cgroup
/// (`4:memory:/…/coldstart-runs-…/run-3` → ("memory", "run-3")).
fn run_cgroups(record: &str) -> Vec<(String, String)> {
    record
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
            let (_, run) = path.rsplit_once('/')?;
            (path.contains("/coldstart-runs-") && run.starts_with("run-")).then(|| {
                let name = if ctrls.is_empty() { "v2" } else { ctrls };
                (name.to_string(), run.to_string())
            })
        })
        .collect()
}

/// Runs `tree 0 DIR` (a fork before anything else) limited, and returns each
/// process's record, per run.
fn forked_records(env: &[(&str, &str)], name: &str, runs: usize) -> Vec<String> {
    let exe = target().expect("checked by the caller").display().to_string();
    let dir = scratch(name);
    let d = dir.to_str().expect("utf-8 path");
    let r = runs.to_string();
    let o = bench(
        env,
        &[
            "-r", &r, "-w", "0", "--cpus", "1", "--memory", "256M", "--", &exe, "tree", "0", d,
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let records: Vec<String> = std::fs::read_dir(&dir)
        .expect("records")
        .map(|e| std::fs::read_to_string(e.expect("entry").path()).expect("a record"))
        .collect();
    assert_eq!(records.len(), 2 * runs, "a parent and a child per run");
    records
}

/// Every process of a forking tree — the child forked as the target's first
/// act, before a late move could have caught it — is in the run's cgroup of
/// each of `hierarchies`.
fn assert_all_placed(records: &[String], hierarchies: &[&str]) {
    for rec in records {
        let placed = run_cgroups(rec);
        for h in hierarchies {
            assert!(
                placed.iter().any(|(name, _)| name.split(',').any(|c| c == *h)),
                "a process is not in a run cgroup of {h}:\n{rec}"
            );
        }
        let runs: std::collections::HashSet<&String> = placed.iter().map(|(_, r)| r).collect();
        assert_eq!(runs.len(), 1, "one run's cgroups in every hierarchy:\n{rec}");
    }
}

#[test]
fn a_child_forked_at_once_is_limited_on_cgroup_v1() {
    let _turn = crate::common::beside();
    if target().is_none() {
        return;
    }
    let env = [("COLDSTART_CGROUP", "v1")];
    if !limits_available("forked_v1", &env) {
        return;
    }
    let records = forked_records(&env, "v1", 10);
    assert_all_placed(&records, &["freezer", "cpu", "memory"]);
}

#[test]
fn a_child_forked_at_once_is_in_the_v2_run_cgroup() {
    let _turn = crate::common::beside();
    if target().is_none() {
        return;
    }
    let env = [("COLDSTART_CGROUP", "v2")];
    let o = bench(&env, &["-r", "1", "-w", "0", "--cpus", "1", "--", "true"]);
    if !o.status.success() && stderr(&o).contains("controller in the cgroup v2 hierarchy") {
        // A hybrid machine: the cpu and memory controllers are bound to v1, so
        // v2 cannot offer them (the v1 test covers the limits here). Placement
        // in the v2 run cgroup is still checked below, with the limits on v1.
        testkit::say(&format!(
            "NOTE a_child_forked_at_once_is_in_the_v2_run_cgroup: no cpu/memory controller in the v2 hierarchy here ({}); limits checked on v1, placement on v2",
            stderr(&o).trim()
        ));
        if !limits_available("forked_v2", &[]) {
            return;
        }
        let records = forked_records(&[], "v2", 10);
        assert_all_placed(&records, &["v2", "cpu", "memory"]);
        return;
    }
    if !limits_available("forked_v2", &env) {
        return;
    }
    let records = forked_records(&env, "v2", 10);
    assert_all_placed(&records, &["v2"]);
}

#[test]
fn peak_memory_from_the_cgroup_is_the_trees() {
    let _turn = crate::common::beside();
    let Some(exe) = target() else { return };
    if !limits_available("peak", &[]) {
        return;
    }
    let exe = exe.display().to_string();
    let dir = scratch("peak");
    let out = dir.join("run.json");
    let records = dir.join("records");
    std::fs::create_dir_all(&records).expect("records dir");
    // Two processes, 48 MiB each, at their peak together: about 96 MiB.
    let o = bench(
        &[],
        &[
            "-r",
            "1",
            "-w",
            "0",
            "--memory",
            "512M",
            "--export-json",
            out.to_str().expect("utf-8 path"),
            "--",
            &exe,
            "tree",
            "48",
            records.to_str().expect("utf-8 path"),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let tree_kb: u64 = std::fs::read_dir(&records)
        .expect("records")
        .map(|e| {
            let rec = std::fs::read_to_string(e.expect("entry").path()).expect("a record");
            rec.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                .expect("a VmHWM line")
        })
        .sum();
    let doc = json(&out);
    let peak_mb = doc["samples"][0]["metrics"]["memory_peak_mb"]
        .as_f64()
        .expect("the run's memory_peak_mb");
    let tree_mb = tree_kb as f64 / 1024.0;
    let ratio = peak_mb / tree_mb;
    assert!(
        (0.7..=1.5).contains(&ratio),
        "cgroup peak {peak_mb:.1} MiB vs the tree's VmHWM sum {tree_mb:.1} MiB"
    );
    let table = crate::common::stdout(&o);
    assert!(table.contains("peak mem (cgroup)"), "{table}");
}

#[test]
fn bad_limits_are_one_line_before_any_run() {
    let _turn = crate::common::beside();
    for (flag, value, expect) in [
        ("--cpus", "0", "bad --cpus '0'"),
        ("--cpuset", "1-0", "bad --cpuset '1-0'"),
        ("--memory", "64", "give a unit"),
    ] {
        let o = bench(&[], &["-r", "1", flag, value, "--", "true"]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(expect) && err.trim().lines().count() == 1, "{err}");
    }
}

/// coldstart lambda's runtime and extensions enter the sandbox's cgroups before
/// their exec, as bench's limited runs do: a bootstrap that forks as its first
/// act has its child in the sandbox (moved in after the spawn, it escaped).
#[test]
fn lambda_processes_forked_at_once_are_in_the_sandbox() {
    let _turn = crate::common::beside();
    let Some(python) = testkit::python() else { return };
    if !limits_available("lambda_sandbox", &[]) {
        return;
    }
    let dir = scratch("lambda");
    let records = dir.join("records");
    std::fs::create_dir_all(&records).expect("records dir");
    let runtime = testkit::repo().join("examples/lambda/python/raw_runtime.py");
    let bootstrap = dir.join("bootstrap");
    std::fs::write(
        &bootstrap,
        format!(
            "#!/bin/sh\nsh -c 'cat /proc/self/cgroup > \"$CS_RECORDS/child.$$\"' &\ncat /proc/self/cgroup > \"$CS_RECORDS/runtime.$$\"\nwait\nexec '{}' '{}'\n",
            python.display(),
            runtime.display()
        ),
    )
    .expect("bootstrap");
    std::fs::set_permissions(&bootstrap, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod bootstrap");
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let o = coldstart()
        .args([
            "lambda",
            "--runs",
            "5",
            "--warmup",
            "0",
            "--memory",
            "512",
            "--runtime",
        ])
        .quiet()
        .no_store()
        .arg(&bootstrap)
        .args(["--env", &format!("CS_RECORDS={}", records.display())])
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut seen = 0;
    for e in std::fs::read_dir(&records).expect("records") {
        let path = e.expect("entry").path();
        let rec = std::fs::read_to_string(&path).expect("a record");
        for ctrl in ["cpu", "memory"] {
            let line = rec
                .lines()
                .find(|l| {
                    l.split(':')
                        .nth(1)
                        .is_some_and(|c| c.split(',').any(|c| c == ctrl))
                })
                .or_else(|| rec.lines().find(|l| l.starts_with("0::")))
                .unwrap_or_default();
            assert!(
                // The sandbox: `lambda-…` under the invocation's directory.
                line.contains("/coldstart-runs-") && line.contains("/lambda-"),
                "{} is not in the sandbox's {ctrl} cgroup:\n{rec}",
                path.display()
            );
        }
        seen += 1;
    }
    assert_eq!(seen, 10, "a runtime and a child record per run");
}
