//! History and gate: the store round trip, the gate's thresholds, safety under
//! kill -9 and concurrent writers, refusing a newer schema, coldstart.toml.
//! Every test runs against SQLite and, when COLDSTART_TEST_POSTGRES names a server
//! (CI starts one), against PostgreSQL too.

use crate::common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A build without the `postgres` feature refuses a PostgreSQL store in one line
/// that names the feature (and does not echo the URL's password).
#[cfg(not(feature = "postgres"))]
#[test]
fn postgres_store_without_the_feature_is_one_clear_line() {
    let _turn = crate::common::beside();
    let o = cs(&["history", "--store", "postgres://u:secret@127.0.0.1/db"]).run();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("`postgres` feature") && !err.contains("secret"),
        "{err}"
    );
}

fn sleeper_variants(spec: &[(&str, u32)]) -> Vec<String> {
    let sleeper = example("sleeper");
    let mut v = Vec::new();
    for (name, ms) in spec {
        v.extend([
            "--name".to_string(),
            name.to_string(),
            "--env".into(),
            format!("COLDSTART_EXAMPLE_DELAY_MS={ms}"),
            "--".into(),
            sleeper.clone(),
        ]);
    }
    v
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn stored_id(out: &std::process::Output) -> String {
    let text = stdout(out);
    let line = text
        .lines()
        .find(|l| l.starts_with("stored as experiment"))
        .expect("stored line");
    line.split_whitespace().nth(3).unwrap().to_string()
}

#[test]
fn bench_store_compare_reproduces_bench_verdicts() {
    let _turn = crate::common::beside();
    for (dir, store) in stores("roundtrip") {
        let bench_json = dir.path().join("bench.json");
        let mut args = s(&[
            "bench",
            "--runs",
            "8",
            "--store",
            &store,
            "--export-json",
            bench_json.to_str().unwrap(),
        ]);
        // A wide gap: the verdict must be "slower" even when the shared VM is loaded.
        args.extend(sleeper_variants(&[("fast", 20), ("slow", 45)]));
        let o = cs(&args).quiet().run();
        assert!(o.status.success(), "{store}: {}", stderr(&o));
        let id = stored_id(&o);
        let bench = json_file(&bench_json);

        let cmp_json = dir.path().join("cmp.json");
        let o = cs(&[
            "compare",
            "--store",
            &store,
            &format!("{id}:fast"),
            &format!("{id}:slow"),
            "--export-json",
            cmp_json.to_str().unwrap(),
        ])
        .run();
        assert!(o.status.success(), "{store}: {}", stderr(&o));
        let cmp = json_file(&cmp_json);
        let from_bench = &bench["variants"][1]["stats"]["vs_baseline"];
        let from_store = &cmp["pairs"][0]["variants"][1]["vs_baseline"];
        assert_eq!(from_bench["verdict"], "slower");
        assert_eq!(
            from_bench, from_store,
            "{store}: stored samples give bench's exact statistics"
        );

        let show_json = dir.path().join("show.json");
        let o = cs(&[
            "show",
            "--store",
            &store,
            "latest",
            "--export-json",
            show_json.to_str().unwrap(),
        ])
        .run();
        assert!(o.status.success(), "{store}: {}", stderr(&o));
        let show = json_file(&show_json);
        assert_eq!(
            show["samples"], bench["samples"],
            "{store}: every raw sample round-trips"
        );
        assert_eq!(show["variants"][1]["stats"], bench["variants"][1]["stats"]);

        let o = cs(&["history", "--store", &store, "--json", "--target", "slow"]).run();
        let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 1);
        assert_eq!(listed[0]["runs"], 16);
        assert_eq!(listed[0]["stopped"], "completed");
    }
}

/// `gate --max` needs no baseline, as its help says (it was refused for want
/// of `--baseline`): the candidate's median against the limit alone.
#[test]
fn gate_max_alone_needs_no_baseline() {
    let _turn = crate::common::beside();
    for (_dir, store) in stores("gatealone") {
        let mut args = s(&["bench", "--runs", "6", "--store", &store]);
        args.extend(sleeper_variants(&[("slow", 60)]));
        let o = cs(&args).quiet().run();
        assert!(o.status.success(), "{store}: {}", stderr(&o));
        let gate = |extra: &[&str]| {
            let mut a = s(&["gate", "--store", &store, "--candidate", "latest:slow"]);
            a.extend(s(extra));
            cs(&a).run()
        };
        let o = gate(&["--max", "30s"]);
        assert_eq!(o.status.code(), Some(0), "{store}: {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("no baseline"), "{}", stdout(&o));
        // 60 ms of init cannot be under 10 ms, whatever the machine.
        let o = gate(&["--max", "10ms"]);
        assert_eq!(o.status.code(), Some(1), "{store}: {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("exceeds --max 10.0"), "{}", stdout(&o));
        // A comparison needs a baseline: refused in one line.
        let o = gate(&["--max-regression", "5%"]);
        assert_eq!(o.status.code(), Some(2), "{store}: {}", stderr(&o));
        assert!(stderr(&o).contains("give --baseline REF"), "{}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    }
}

#[test]
fn gate_fails_warns_and_passes_by_threshold() {
    let _turn = crate::common::beside();
    for (_dir, store) in stores("gate") {
        // A real 30 % regression (100 ms vs 130 ms of init) and an A/A pair, interleaved:
        // wide enough to be conclusive on a loaded 2-core machine.
        let mut args = s(&["bench", "--runs", "20", "--store", &store]);
        args.extend(sleeper_variants(&[("base", 100), ("slow", 130), ("same", 100)]));
        let o = cs(&args).quiet().run();
        assert!(o.status.success(), "{store}: {}", stderr(&o));
        let gate = |cand: &str, max: &str, warn: Option<&str>| {
            let mut a = s(&[
                "gate",
                "--store",
                &store,
                "--baseline",
                "latest:base",
                "--candidate",
                cand,
                "--max-regression",
                max,
            ]);
            if let Some(w) = warn {
                a.extend(s(&["--warn", w]));
            }
            cs(&a).run()
        };
        let o = gate("latest:slow", "5%", None);
        assert_eq!(o.status.code(), Some(1), "{store}: {}{}", stdout(&o), stderr(&o));
        assert!(
            stdout(&o).contains("❌ fail") && stdout(&o).contains("| base → slow |"),
            "{}",
            stdout(&o)
        );
        let o = gate("latest:slow", "60%", None);
        assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
        assert!(stdout(&o).contains("✅ pass"));
        let o = gate("latest:slow", "60%", Some("3%"));
        assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
        assert!(stdout(&o).contains("⚠️ warn"), "{}", stdout(&o));
        let o = gate("latest:same", "5%", None);
        assert_eq!(o.status.code(), Some(0), "A/A passes: {}", stdout(&o));
        let o = gate("latest:slow", "5%", Some("6%"));
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("must be below --max-regression"));
    }
}

/// A flaky build fails the gate: a real candidate that exits 1 on every third of its
/// runs (a counter file it keeps itself: deterministic, 7 of 20) beside a clean baseline
/// doing the same work, through `bench --keep-going`, the store and `gate`.
#[test]
fn a_flaky_candidate_fails_the_gate_unless_its_failures_are_allowed() {
    let _turn = crate::common::beside();
    for (dir, store) in stores("flaky") {
        let counter = |name: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, "0\n").unwrap();
            p.to_str().unwrap().to_string()
        };
        // Shell builtins only, so both sides cost the same; the candidate fails when the
        // run number is 1 mod 3: runs 1, 4, …, 19 = 7 of 20.
        let work = r#"read n < "$C"; n=$((n + 1)); echo $n > "$C""#;
        let flaky = format!(r#"{work}; [ $((n % 3)) -ne 1 ] || exit 1"#);
        let args = vec![
            "bench".to_string(),
            "--keep-going".into(),
            "--runs".into(),
            "20".into(),
            "--warmup".into(),
            "0".into(),
            "--store".into(),
            store.clone(),
            "--export-markdown".into(),
            dir.path().join("bench.md").to_str().unwrap().into(),
            "--name".into(),
            "base".into(),
            "--env".into(),
            format!("C={}", counter("base")),
            "--".into(),
            "sh".into(),
            "-c".into(),
            work.into(),
            "--name".into(),
            "flaky".into(),
            "--env".into(),
            format!("C={}", counter("flaky")),
            "--".into(),
            "sh".into(),
            "-c".into(),
            flaky,
        ];
        let o = cs(&args).quiet().run();
        // --keep-going with some successful runs: the experiment itself completes.
        let text = stdout(&o);
        assert!(
            text.contains("Δ flaky vs base: fails 7 of 20 runs (baseline 0 of 20"),
            "{store}: bench's verdict line names the failures first: {text}{}",
            stderr(&o)
        );
        let md = std::fs::read_to_string(dir.path().join("bench.md")).unwrap();
        assert!(
            md.contains("**flaky** vs base: fails 7 of 20 runs (baseline 0 of 20"),
            "{md}"
        );
        let gate = |extra: &[&str]| {
            let mut a = s(&[
                "gate",
                "--store",
                &store,
                "--baseline",
                "latest:base",
                "--candidate",
                "latest:flaky",
            ]);
            a.extend(s(extra));
            cs(&a).run()
        };
        // A generous speed limit: only the failures can fail it.
        for limit in [&["--max-regression", "500%"][..], &["--max", "1s"][..]] {
            let o = gate(limit);
            let out = stdout(&o);
            assert_eq!(o.status.code(), Some(1), "{store} {limit:?}: {out}{}", stderr(&o));
            assert!(out.contains("❌ fail"), "{out}");
            assert!(
                out.contains("fails 7 of 20 runs") && out.contains("Fisher's exact test"),
                "the output names the failures and the rule: {out}"
            );
        }
        for allow in ["7", "35%"] {
            let o = gate(&["--max", "1s", "--max-failures", allow]);
            let out = stdout(&o);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{store} --max-failures {allow}: {out}{}",
                stderr(&o)
            );
            assert!(out.contains("accepted by --max-failures"), "{out}");
        }
        let o = gate(&["--max", "1s", "--max-failures", "6"]);
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        let o = gate(&["--max", "1s", "--max-failures", "seven"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("--max-failures"), "{}", stderr(&o));
    }
}

/// Wait (polling the store through the CLI) until `n` finished runs are stored.
fn wait_for_runs(store: &str, n: i64) {
    let start = Instant::now();
    loop {
        let o = cs(&["history", "--store", store, "--json"]).run();
        if o.status.success() {
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
            if v[0]["runs"].as_i64().unwrap_or(0) >= n {
                return;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "runs never reached the store"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn kill_9_mid_experiment_keeps_every_finished_run() {
    let _turn = crate::common::beside();
    for (_dir, store) in stores("kill9") {
        let sleeper = example("sleeper");
        let mut child = coldstart()
            .args([
                "bench",
                "--runs",
                "2000",
                "--store",
                &store,
                "--env",
                "COLDSTART_EXAMPLE_DELAY_MS=5",
                "--",
                &sleeper,
            ])
            .quiet()
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        wait_for_runs(&store, 5);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        if !store.contains("://") {
            let conn = rusqlite::Connection::open(&store).unwrap();
            let check: String = conn
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(check, "ok");
        }
        let o = cs(&["history", "--store", &store, "--json"]).run();
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v[0]["runs"].as_i64().unwrap() >= 5);
        assert!(
            v[0]["stopped"].is_null(),
            "a killed experiment is marked incomplete"
        );
        let o = cs(&["show", "--store", &store, "latest"]).run();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("stopped: incomplete"), "{}", stdout(&o));
        // The store still takes new experiments.
        let o = cs(&["bench", "--runs", "2", "--store", &store, "--", &sleeper])
            .quiet()
            .run();
        assert!(o.status.success(), "{}", stderr(&o));
    }
}

#[test]
fn concurrent_writers_both_succeed() {
    let _turn = crate::common::beside();
    for (_dir, store) in stores("concurrent") {
        let noop = example("noop");
        let spawn = || {
            coldstart()
                .args(["bench", "--runs", "25", "--store", &store, "--", &noop])
                .quiet()
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
        };
        let (a, b) = (spawn(), spawn());
        for child in [a, b] {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{store}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let o = cs(&["history", "--store", &store, "--json"]).run();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let runs: Vec<i64> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["runs"].as_i64().unwrap())
            .collect();
        assert_eq!(runs, [25, 25], "{store}");
    }
}

fn set_schema_version(store: &str, v: &str) {
    let sql = format!("UPDATE meta SET value = '{v}' WHERE key = 'schema_version'");
    #[cfg(feature = "postgres")]
    if store.contains("://") {
        postgres::Client::connect(store, postgres::NoTls)
            .unwrap()
            .batch_execute(&sql)
            .unwrap();
        return;
    }
    rusqlite::Connection::open(store)
        .unwrap()
        .execute_batch(&sql)
        .unwrap();
}

#[test]
fn newer_schema_is_refused_and_left_unchanged() {
    let _turn = crate::common::beside();
    for (_dir, store) in stores("schema") {
        let noop = example("noop");
        let o = cs(&["bench", "--runs", "2", "--store", &store, "--", &noop])
            .quiet()
            .run();
        assert!(o.status.success(), "{}", stderr(&o));
        set_schema_version(&store, "999");
        let o = cs(&["bench", "--runs", "2", "--store", &store, "--", &noop])
            .quiet()
            .run();
        assert_eq!(o.status.code(), Some(2));
        let err = stderr(&o);
        assert!(
            err.contains("schema version 999") && err.contains("upgrade coldstart"),
            "{err}"
        );
        let o = cs(&["history", "--store", &store]).run();
        assert_eq!(o.status.code(), Some(2), "reading is refused too");
        set_schema_version(&store, "1");
        let o = cs(&["history", "--store", &store, "--json"]).run();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(
            v.as_array().unwrap().len(),
            1,
            "nothing was written while refused"
        );
    }
}

#[test]
fn config_targets_run_by_name_and_store_in_the_project() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let sleeper = example("sleeper");
    std::fs::write(
        dir.path().join("coldstart.toml"),
        format!(
            "[targets.quick]\ncommand = [\"{sleeper}\"]\nenv = {{ COLDSTART_EXAMPLE_DELAY_MS = \"5\" }}\nruns = 4\nwarmup = 0\n\n\
             [targets.slower]\ncommand = [\"{sleeper}\"]\nenv = {{ COLDSTART_EXAMPLE_DELAY_MS = \"40\" }}\n"
        ),
    )
    .unwrap();
    let o = coldstart()
        .env_remove("COLDSTART_STORE")
        .current_dir(dir.path())
        .args(["bench", "quick", "slower"])
        .quiet()
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Δ slower vs quick: slower"), "{out}");
    assert!(
        dir.path().join(".coldstart/coldstart.db").exists(),
        "default store under the project root"
    );
    let o = coldstart()
        .env_remove("COLDSTART_STORE")
        .current_dir(dir.path())
        .args(["history", "--json"])
        .run();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["runs"], 8, "runs = 4 from the config, per variant");
    let o = coldstart()
        .current_dir(dir.path())
        .args(["bench", "nosuch"])
        .run();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no target 'nosuch'") && stderr(&o).contains("quick"),
        "{}",
        stderr(&o)
    );
}
