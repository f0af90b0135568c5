//! No confident wrong answers: a crash is a failed run, not a fast start; designs
//! that cannot support a verdict give none; the gate refuses what it cannot judge.

use crate::common::*;
use std::path::Path;

fn s(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

fn both(o: &std::process::Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

/// `bench --keep-going` of two shell variants; returns the output and the JSON export.
fn bench_sh(dir: &Path, extra: &[&str], a: &str, b: &str) -> (Out, serde_json::Value) {
    let json = dir.join(format!("r{}.json", rand_name()));
    let mut args = s(&["bench", "--runs", "4", "--warmup", "0"]);
    args.extend(s(extra));
    args.extend(s(&["--export-json", json.to_str().unwrap()]));
    args.extend(s(&[
        "--name", "a", "--", "sh", "-c", a, "--name", "b", "--", "sh", "-c", b,
    ]));
    let o = cs(&args).quiet().no_store().run();
    let doc = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    (o, doc)
}

fn rand_name() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn outcomes(doc: &serde_json::Value, v: u64) -> Vec<String> {
    doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["variant"] == v)
        .map(|x| x["outcome"]["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_crash_is_a_failed_run_not_a_fast_start() {
    let _turn = crate::common::timed();
    let dir = tempfile::tempdir().unwrap();
    // Without --keep-going the first failure stops the experiment, with its status and output.
    let (o, _) = bench_sh(dir.path(), &[], "exit 0", "echo oops >&2; exit 1");
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    let err = stderr(&o);
    assert!(err.contains("exited with exit code 1"), "{err}");
    assert!(err.contains("| oops"), "the output tail is shown: {err}");

    // With --keep-going: every run of the crashing variant failed, so it gets no verdict
    // (not `~`, and certainly not `faster`), and the command still fails.
    let (o, doc) = bench_sh(dir.path(), &["--keep-going"], "exit 0", "kill -SEGV $$");
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    assert!(outcomes(&doc, 1).iter().all(|k| k == "exit_failure"), "{doc}");
    assert!(outcomes(&doc, 0).iter().all(|k| k == "ready"), "{doc}");
    let signal = doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["variant"] == 1)
        .unwrap()["exit_status"]["signal"]
        .clone();
    assert_eq!(signal, 11, "death by SIGSEGV is recorded: {doc}");
    let cmp = &doc["variants"][1]["stats"]["vs_baseline"];
    assert_eq!(cmp["verdict"], "none", "{cmp}");
    assert!(
        stdout(&o).contains("no verdict: this variant has no successful run"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn ignore_failure_and_success_exit_codes_opt_in() {
    let _turn = crate::common::timed();
    let dir = tempfile::tempdir().unwrap();
    let (o, doc) = bench_sh(dir.path(), &["-i"], "exit 0", "exit 7");
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    assert!(outcomes(&doc, 1).iter().all(|k| k == "ready"), "{doc}");

    let (o, doc) = bench_sh(dir.path(), &["--success-exit-codes", "0,3"], "exit 0", "exit 3");
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    assert!(outcomes(&doc, 1).iter().all(|k| k == "ready"), "{doc}");

    let (o, _) = bench_sh(dir.path(), &["--success-exit-codes", "0,3"], "exit 0", "exit 4");
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));

    let (o, _) = bench_sh(dir.path(), &["--success-exit-codes", "zero"], "exit 0", "exit 0");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--success-exit-codes"), "{}", stderr(&o));
}

fn sleeper_bench(extra: &[&str], delays: &[(&str, u32)], store: Option<&str>) -> (Out, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut c = cs(&["bench", "--runs", "12", "--export-json", json.to_str().unwrap()]);
    c.quiet();
    let mut args = Vec::new();
    match store {
        Some(st) => args.extend(s(&["--store", st])),
        None => {
            c.no_store();
        }
    }
    args.extend(s(extra));
    let sleeper = example("sleeper");
    for (name, ms) in delays {
        args.extend(s(&["--name", name, "--env"]));
        args.push(format!("COLDSTART_EXAMPLE_DELAY_MS={ms}"));
        args.extend(s(&["--", &sleeper]));
    }
    let o = c.args(&args).run();
    let doc = json_file(&json);
    (o, doc)
}

#[test]
fn sequential_runs_give_no_verdict_and_say_why() {
    let _turn = crate::common::timed();
    // A real 40 ms difference: interleaved it is `slower`; sequential gives no verdict.
    let (o, doc) = sleeper_bench(&["--order", "sequential"], &[("a", 20), ("b", 60)], None);
    assert!(o.status.success(), "{}", both(&o));
    let cmp = &doc["variants"][1]["stats"]["vs_baseline"];
    assert_eq!(cmp["verdict"], "none", "{cmp}");
    assert_eq!(cmp["design"], "sequential");
    assert!(
        cmp["shift"]["ci"].is_null() && cmp["mann_whitney"].is_null(),
        "{cmp}"
    );
    let est = cmp["shift"]["estimate"].as_f64().unwrap();
    assert!(est > 20.0, "the estimate is still given: {est}");
    assert!(
        stdout(&o).contains("no verdict: the runs were sequential"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn noise_threshold_and_power_line() {
    let _turn = crate::common::timed();
    // A real 10 % difference, judged against a 20 % noise threshold: within noise.
    let (o, doc) = sleeper_bench(&["--noise", "20%"], &[("a", 50), ("b", 55)], None);
    assert!(o.status.success(), "{}", both(&o));
    let cmp = &doc["variants"][1]["stats"]["vs_baseline"];
    assert_eq!(cmp["verdict"], "within_noise", "{cmp}");
    assert_eq!(cmp["noise"], 0.2);
    let out = stdout(&o);
    assert!(out.contains("~ within the ±20 % noise threshold"), "{out}");
    assert!(out.contains("could detect ≥"), "the power line: {out}");
    let d = cmp["detectable"]["relative"].as_f64().unwrap();
    assert!(d > 0.2, "nothing under the threshold is detectable: {d}");
}

#[test]
fn compare_across_invocations_gives_no_verdict_and_gate_refuses_itself() {
    let _turn = crate::common::timed();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let store = store.to_str().unwrap();
    for _ in 0..2 {
        let (o, _) = sleeper_bench(&[], &[("a", 20)], Some(store));
        assert!(o.status.success(), "{}", both(&o));
    }
    let o = cs(&["compare", "--store", store, "latest~1", "latest"]).run();
    assert!(o.status.success(), "{}", both(&o));
    let out = stdout(&o);
    assert!(
        out.contains("no verdict: the two sides come from separate invocations"),
        "{out}"
    );
    assert!(out.contains("(estimate only)"), "{out}");
    assert!(!out.contains("faster") && !out.contains("slower"), "{out}");

    // The same runs on both sides would always pass: refused.
    for args in [
        s(&[
            "gate",
            "--store",
            store,
            "--baseline",
            "latest",
            "--max-regression",
            "5%",
        ]),
        s(&["compare", "--store", store, "latest", "latest"]),
    ] {
        let o = cs(&args).run();
        assert_eq!(o.status.code(), Some(2), "{}", both(&o));
        assert!(stderr(&o).contains("the same runs"), "{}", stderr(&o));
    }

    // Across invocations a relative limit is refused by default; opted in, the gate
    // decides on the estimate and says so.
    let o = cs(&[
        "gate",
        "--store",
        store,
        "--baseline",
        "latest~1",
        "--max-regression",
        "50%",
    ])
    .run();
    assert_eq!(o.status.code(), Some(2), "{}", both(&o));
    assert!(stderr(&o).contains("cannot be judged"), "{}", stderr(&o));
    let o = cs(&[
        "gate",
        "--store",
        store,
        "--baseline",
        "latest~1",
        "--max-regression",
        "50%",
        "--across-invocations",
    ])
    .run();
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    assert!(
        stdout(&o).contains("separate invocations: decided on the shift estimate"),
        "{}",
        stdout(&o)
    );

    // Absolute limits: a 20 ms start against 1 ms and 10 s.
    let o = cs(&["gate", "--store", store, "--baseline", "latest~1", "--max", "1ms"]).run();
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    assert!(stdout(&o).contains("exceeds --max 1.00 ms"), "{}", stdout(&o));
    let o = cs(&["gate", "--store", store, "--baseline", "latest~1", "--max", "10s"]).run();
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));

    // No limit at all is bad input, not a silent pass.
    let o = cs(&["gate", "--store", store, "--baseline", "latest~1"]).run();
    assert_eq!(o.status.code(), Some(2), "{}", both(&o));
    assert!(stderr(&o).contains("no limit for target"), "{}", stderr(&o));
}

#[test]
fn gate_fails_on_a_variant_without_successful_runs_and_on_ms_regressions() {
    let _turn = crate::common::timed();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let store = store.to_str().unwrap();
    let o = cs(&[
        "bench",
        "--runs",
        "6",
        "--warmup",
        "0",
        "--keep-going",
        "--store",
        store,
        "--name",
        "ok",
        "--",
        "sh",
        "-c",
        "exit 0",
        "--name",
        "broken",
        "--",
        "sh",
        "-c",
        "exit 1",
    ])
    .quiet()
    .run();
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    let o = cs(&[
        "gate",
        "--store",
        store,
        "--baseline",
        "latest:ok",
        "--candidate",
        "latest:broken",
        "--max-regression",
        "50%",
    ])
    .run();
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    assert!(stdout(&o).contains("has no successful run"), "{}", stdout(&o));

    // +40 ms interleaved: fails a 10 ms limit, passes a 100 ms one.
    let (o, _) = sleeper_bench(&[], &[("base", 20), ("slow", 60)], Some(store));
    assert!(o.status.success(), "{}", both(&o));
    let gate = |limit: &str| {
        cs(&[
            "gate",
            "--store",
            store,
            "--baseline",
            "latest:base",
            "--candidate",
            "latest:slow",
            "--max-regression",
            limit,
        ])
        .run()
    };
    let o = gate("10ms");
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    assert!(stdout(&o).contains("beyond the +10.0 ms limit"), "{}", stdout(&o));
    let o = gate("100ms");
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
}

#[test]
fn gate_says_when_a_side_is_incomplete() {
    let _turn = crate::common::timed();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let store = store.to_str().unwrap();
    let sleeper = example("sleeper");
    let mut child = coldstart()
        .args([
            "bench", "--runs", "100", "--warmup", "0", "--store", store, "--name", "sleeper", "--env",
        ])
        .quiet()
        .arg("COLDSTART_EXAMPLE_DELAY_MS=50")
        .args(["--", &sleeper])
        .stdout(std::process::Stdio::null())
        .spawn();
    // Wait until two runs are stored, then kill coldstart outright.
    let start = std::time::Instant::now();
    loop {
        let o = cs(&["history", "--store", store, "--json"]).run();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        if v[0]["runs"].as_i64().unwrap_or(0) >= 2 {
            break;
        }
        assert!(start.elapsed().as_secs() < 60, "runs never reached the store");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let (o, _) = sleeper_bench(&[], &[("sleeper", 50)], Some(store));
    assert!(o.status.success(), "{}", both(&o));
    let o = cs(&["gate", "--store", store, "--baseline", "latest~1", "--max", "10s"]).run();
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    assert!(stdout(&o).contains("is incomplete"), "{}", stdout(&o));
}

#[test]
fn adaptive_stop_can_target_the_comparison() {
    let _turn = crate::common::timed();
    // 50 ms vs 60 ms (+20 %): the relative interval, as printed, narrows to ±10 points
    // well before 120 runs, even on a busy machine.
    let (o, doc) = sleeper_bench(
        &[
            "--target-ci",
            "10%",
            "--target-ci-of",
            "shift",
            "--min-runs",
            "6",
            "--max-runs",
            "120",
        ],
        &[("a", 50), ("b", 60)],
        None,
    );
    assert!(o.status.success(), "{}", both(&o));
    assert_eq!(doc["stopped"], "target-ci", "{}", doc["stopped"]);
    let (lo, hi) = (
        doc["variants"][1]["stats"]["vs_baseline"]["relative"]["ci"][0]
            .as_f64()
            .unwrap(),
        doc["variants"][1]["stats"]["vs_baseline"]["relative"]["ci"][1]
            .as_f64()
            .unwrap(),
    );
    // Both ends of the printed interval within the target of its estimate.
    let est = doc["variants"][1]["stats"]["vs_baseline"]["relative"]["estimate"]
        .as_f64()
        .unwrap();
    assert!(
        est - lo <= 0.10 + 1e-9 && hi - est <= 0.10 + 1e-9,
        "{est} [{lo}, {hi}]"
    );
    // Sequential runs give no CI of the shift to narrow: refused before any run.
    let (o, _) = bench_sh(
        tempfile::tempdir().unwrap().path(),
        &[
            "--target-ci",
            "5%",
            "--target-ci-of",
            "shift",
            "--order",
            "sequential",
        ],
        "exit 0",
        "exit 0",
    );
    assert_eq!(o.status.code(), Some(2), "{}", both(&o));
    assert!(stderr(&o).contains("needs interleaved runs"), "{}", stderr(&o));
}

#[test]
fn gate_takes_per_target_limits_from_coldstart_toml() {
    let _turn = crate::common::timed();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let store = store.to_str().unwrap();
    let sleeper = example("sleeper");
    std::fs::write(
        dir.path().join("coldstart.toml"),
        format!("[targets.sleeper]\ncommand = [\"{sleeper}\"]\nmax = \"1ms\"\n"),
    )
    .unwrap();
    for _ in 0..2 {
        let (o, _) = sleeper_bench(&[], &[("sleeper", 20)], Some(store));
        assert!(o.status.success(), "{}", both(&o));
    }
    let gate = |extra: &[&str]| {
        coldstart()
            .current_dir(dir.path())
            .args(["gate", "--store", store, "--baseline", "latest~1"])
            .args(extra)
            .run()
    };
    // The file's limit applies: a 20 ms start against max = "1ms".
    let o = gate(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    assert!(stdout(&o).contains("exceeds --max 1.00 ms"), "{}", stdout(&o));
    // A flag wins over the file.
    let o = gate(&["--max", "10s"]);
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
}

/// CPU hogs this test starts: busy loops, killed (and reaped) when dropped.
struct Hogs(Vec<std::process::Child>);

impl Hogs {
    fn start(n: usize) -> Hogs {
        let hogs = Hogs(
            (0..n)
                .map(|_| {
                    std::process::Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .expect("spawn a busy loop")
                })
                .collect(),
        );
        // Wait until every one has used CPU: then they are in the run queue.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        for h in &hogs.0 {
            loop {
                let stat = std::fs::read_to_string(format!("/proc/{}/stat", h.id())).unwrap_or_default();
                // utime is field 14; the comm before it is in parentheses.
                let utime: u64 = stat
                    .rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split_whitespace().nth(11)?.parse().ok())
                    .unwrap_or(0);
                if utime > 0 {
                    break;
                }
                assert!(std::time::Instant::now() < deadline, "a busy loop never ran");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        hogs
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for h in &mut self.0 {
            h.kill().ok();
            h.wait().ok();
        }
    }
}

/// A bench beside more busy loops than CPUs says the machine was busy, in one line,
/// and records it in the stored experiment and the JSON export. (That a quiet
/// machine gets no warning is the classifier's unit test on recorded readings:
/// this shared machine is never reliably quiet.)
#[test]
fn a_bench_beside_cpu_hogs_warns_that_the_machine_was_busy() {
    let _turn = crate::common::timed();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store.db");
    let store = store.to_str().expect("utf-8 path");
    let export = dir.path().join("bench.json");
    let o = {
        let _hogs = Hogs::start(cpus + 1);
        cs(&[
            "bench",
            "--runs",
            "5",
            "--warmup",
            "0",
            "--store",
            store,
            "--export-json",
            export.to_str().expect("utf-8 path"),
            "--",
            "true",
        ])
        .quiet()
        .run()
    };
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let warnings: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("warning: the machine was busy during the runs"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning line: {out}");
    let doc = json_file(&export);
    let load = &doc["load"];
    assert_eq!(load["busy"], true, "{load}");
    assert_eq!(load["cpus"], cpus);
    // The oracle: our own hogs were runnable at every reading between runs.
    assert!(
        load["max_others_runnable"].as_u64().unwrap_or(0) > cpus as u64,
        "{load}"
    );
    assert!(load["queued_share"].as_f64().unwrap_or(0.0) >= 0.25, "{load}");
    assert_eq!(
        load["samples"], 7,
        "before, after each of 5 runs, after the last: {load}"
    );

    // Stored: `show` reads it back into the report and the export.
    let shown = dir.path().join("show.json");
    let o = cs(&[
        "show",
        "latest",
        "--store",
        store,
        "--export-json",
        shown.to_str().expect("utf-8 path"),
    ])
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("warning: the machine was busy during the runs"),
        "{}",
        stdout(&o)
    );
    assert_eq!(json_file(&shown)["load"], doc["load"]);
}
