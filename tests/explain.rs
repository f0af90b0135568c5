//! `coldstart explain` end to end on real programs: the pyenv shim's exec chain,
//! a Go HTTP server (listen, first request), a forking target, the Chrome trace.

mod common;
use common::*;
use std::collections::HashMap;

fn explain(args: &[&str]) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("e.json");
    let mut all = vec!["explain", "-q", "--export-json", json.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = run(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    (json_file(&json), stdout(&o))
}

fn phase(doc: &serde_json::Value, name: &str) -> Option<(u64, u64)> {
    doc["timeline"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .map(|p| (p["start_ns"].as_u64().unwrap(), p["dur_ns"].as_u64().unwrap()))
}

#[test]
fn pyenv_shim_time_is_attributed_to_the_exec_chain() {
    let shim = std::process::Command::new("sh")
        .args(["-c", "command -v python3"])
        .output()
        .unwrap();
    let shim = String::from_utf8_lossy(&shim.stdout).trim().to_string();
    if !shim.contains("/shims/") {
        eprintln!("skipped: python3 on PATH ({shim}) is not a pyenv shim");
        return;
    }
    let (doc, out) = explain(&["--runs", "1", "--ready", "exit", "--", "python3", "-c", "pass"]);
    let chain = doc["timeline"]["exec_chain"].as_array().unwrap();
    assert!(chain.len() >= 3, "shim → bash → … → interpreter: {chain:?}");
    let last = chain.last().unwrap()["path"].as_str().unwrap();
    assert!(
        last.contains("/versions/") && last.contains("python3"),
        "final program is the interpreter: {last}"
    );
    let (start, exec_chain) = phase(&doc, "exec-chain").unwrap();
    let t0 = doc["timeline"]["t0_ns"].as_u64().unwrap();
    assert_eq!(start, t0);
    let final_exec = chain.last().unwrap()["start_ns"].as_u64().unwrap() - t0;
    assert_eq!(
        exec_chain, final_exec,
        "everything before the interpreter's exec is exec-chain"
    );
    assert!(out.contains("exec chain") && out.contains("waterfall"), "{out}");
    assert!(doc["overhead"].as_f64().unwrap() > 0.5);
}

#[test]
fn go_server_listen_ready_and_first_request() {
    let port = free_port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    let url = format!("http://127.0.0.1:{port}/health");
    let (doc, out) = explain(&[
        "--runs",
        "2",
        "--ready",
        &url,
        "--export-trace",
        trace.to_str().unwrap(),
        "--",
        &example("go-server"),
        "--port",
        &port,
    ]);
    let listens = doc["timeline"]["listens"].as_array().unwrap();
    assert_eq!(listens.len(), 1);
    assert!(listens[0]["addr"].to_string().contains(&port), "{listens:?}");
    let (listen_at, _) = phase(&doc, "listen→ready").expect("listen→ready phase");
    let (init_start, init) = phase(&doc, "init").unwrap();
    assert_eq!(init_start + init, listen_at, "init ends at the first listen");
    assert!(
        phase(&doc, "first request").is_some(),
        "accept → first response seen while the probe asked"
    );
    assert!(out.contains("listen 127.0.0.1:"), "{out}");

    // Chrome Trace Event format: required fields, monotonic ts per track.
    let chrome = json_file(&trace);
    let events = chrome["traceEvents"].as_array().expect("traceEvents");
    assert!(events.len() > 5);
    let mut last: HashMap<(i64, i64), f64> = HashMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        assert!(e["pid"].is_i64() && e["name"].is_string(), "{e}");
        if ph == "M" {
            continue;
        }
        let ts = e["ts"].as_f64().expect("ts");
        if ph == "X" {
            assert!(e["dur"].as_f64().unwrap() >= 0.0);
        }
        let key = (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap_or(0));
        assert!(
            ts >= *last.get(&key).unwrap_or(&0.0),
            "ts goes back on track {key:?}"
        );
        last.insert(key, ts);
    }
}

#[test]
fn forking_target_is_followed_and_cleaned_up() {
    let m = marker("explain-forker");
    let (doc, _) = explain(&[
        "--runs",
        "1",
        "--env",
        &m,
        "--ready",
        "log:^ready",
        "--",
        &example("forker"),
    ]);
    let counts = &doc["timeline"]["counts"];
    assert!(counts["processes"].as_u64().unwrap() >= 4, "{counts}");
    assert!(counts["threads"].as_u64().unwrap() >= 2, "{counts}");
    assert!(
        processes_with(&m).is_empty(),
        "left behind: {:?}",
        processes_with(&m)
    );
}

#[test]
fn bench_explain_adds_one_traced_run_per_variant() {
    let o = run(&[
        "bench",
        "-q",
        "--runs",
        "2",
        "--explain",
        "--name",
        "a",
        "--",
        &example("noop"),
        "--name",
        "b",
        "--",
        &example("sleeper"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("== explain: a") && out.contains("== explain: b"),
        "{out}"
    );
    assert_eq!(out.matches("waterfall").count(), 2, "{out}");
}
