//! `coldstart explain` end to end on real programs: the pyenv shim's exec chain,
//! a Go HTTP server (listen, first request), a forking target, the Chrome trace.

use crate::common::*;
use std::collections::HashMap;

fn explain(args: &[&str]) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("e.json");
    let mut all = vec!["explain", "--export-json", json.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = cs(&all).quiet().run();
    assert!(o.status.success(), "{}", stderr(&o));
    (json_file(&json), stdout(&o))
}

fn section(doc: &serde_json::Value, source: &str) -> serde_json::Value {
    doc["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == source)
        .cloned()
        .unwrap_or_else(|| panic!("no {source} section: {}", doc["sources"]))
}

/// A fact that is a count (`["imports", {"count": 78}]` in the JSON).
fn fact_num(section: &serde_json::Value, name: &str) -> u64 {
    let f = section["facts"].as_array().unwrap().iter().find(|f| f[0] == name);
    f.unwrap_or_else(|| panic!("no fact {name}: {section}"))[1]["count"]
        .as_u64()
        .unwrap_or_else(|| panic!("fact {name} is no count: {section}"))
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
fn shim_time_is_attributed_to_the_exec_chain() {
    let _turn = crate::common::beside();
    let Some(python) = testkit::python() else {
        return;
    };
    // A version manager's shim chain of our own (bash → bash → interpreter), so the
    // test means the same with or without pyenv on the machine.
    let shim = testkit::shim_chain(&python);
    let (doc, out) = explain(&[
        "--runs",
        "1",
        "--ready",
        "exit",
        "--",
        shim.to_str().unwrap(),
        "-c",
        "pass",
    ]);
    let chain = doc["timeline"]["exec_chain"].as_array().unwrap();
    assert!(chain.len() >= 3, "shim → shim-exec → interpreter: {chain:?}");
    let last = chain.last().unwrap()["path"].as_str().unwrap();
    assert_eq!(last, python.to_str().unwrap(), "final program is the interpreter");
    let (start, exec_chain) = phase(&doc, "exec-chain").unwrap();
    // The timeline counts from the spawn (its CLOCK_MONOTONIC time zero is t0_mono_ns).
    assert!(doc["timeline"]["t0_mono_ns"].as_u64().unwrap() > 0);
    assert_eq!(start, 0);
    let final_exec = chain.last().unwrap()["start_ns"].as_u64().unwrap();
    assert_eq!(
        exec_chain, final_exec,
        "everything before the interpreter's exec is exec-chain"
    );
    assert!(out.contains("exec chain") && out.contains("waterfall"), "{out}");
    // One run per arm: the ratio is one traced ÷ one untraced start, which a busy
    // machine can put anywhere (×0.4 seen at load 10), so only that it exists.
    let overhead = doc["overhead"].as_f64().expect("an overhead");
    assert!(overhead.is_finite() && overhead > 0.0, "{overhead}");
}

#[test]
fn go_server_listen_ready_and_first_request() {
    let _turn = crate::common::beside();
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
    // The Go adapter was picked from the final exec; its package inits are a section.
    assert_eq!(doc["adapters"], serde_json::json!(["go"]), "{doc}");
    let go = section(&doc, "go");
    assert!(fact_num(&go, "packages initialised") > 10, "{go}");
    assert!(go["spans"].as_array().unwrap().len() > 10, "{go}");

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
    let _turn = crate::common::beside();
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
    let _turn = crate::common::beside();
    let o = cs(&[
        "bench",
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
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("== explain: a") && out.contains("== explain: b"),
        "{out}"
    );
    // The section's heading (the headline's lines point to it by name too).
    assert_eq!(out.matches("\nwaterfall (").count(), 2, "{out}");
    // Each variant also gets an adapted run: the static no-op has no loader to
    // report, the dynamically linked sleeper gets the native adapter's section.
    assert_eq!(out.matches("Dynamic loader (LD_DEBUG").count(), 1, "{out}");
    assert!(!out.contains("adapted run failed"), "{out}");
}

/// A C program built with `-z now` that reports checkpoints through the C SDK and
/// prints a line for `--mark`: the adapted runs give the native loader's section
/// (BIND_NOW seen), the checkpoints in time order, and the adapters' overhead.
#[test]
fn adapted_runs_give_native_loader_and_checkpoint_sections() {
    let _turn = crate::common::beside();
    let Some(gcc) = testkit::tool("GCC", "gcc") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("app.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include \"coldstart_checkpoint.h\"\n\
         int main(void){coldstart_checkpoint(\"config-loaded\");\n\
         printf(\"cache warm\\n\"); fflush(stdout);\n\
         coldstart_checkpoint(\"db-connected\"); return 0;}\n",
    )
    .unwrap();
    let sdk = repo().join("sdk/c");
    let exe = dir.path().join("app");
    let ok = std::process::Command::new(gcc)
        .arg("-Wl,-z,now")
        .arg("-I")
        .arg(&sdk)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .arg(sdk.join("coldstart_checkpoint.c"))
        .status()
        .unwrap()
        .success();
    assert!(ok, "gcc failed");
    let trace = dir.path().join("t.json");
    let (doc, out) = explain(&[
        "--runs",
        "2",
        "--ready",
        "exit",
        "--mark",
        "warm=cache warm",
        "--export-trace",
        trace.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
    ]);
    assert_eq!(doc["adapters"], serde_json::json!(["native"]), "{doc}");
    assert!(doc["adapter_overhead"].as_f64().unwrap() > 0.0);
    let sources = doc["sources"].as_array().unwrap();
    let source = |name: &str| sources.iter().find(|s| s["source"] == name).cloned();
    let native = source("native").expect("a native section");
    let fact = |s: &serde_json::Value, k: &str| {
        s["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f[0] == k)
            .map(|f| f[1].as_str().unwrap().to_string())
    };
    assert!(fact(&native, "BIND_NOW").unwrap().starts_with("yes"), "{native}");
    assert!(fact(&native, "program").unwrap().ends_with("/app"), "{native}");
    let cps = source("checkpoints").expect("a checkpoints section");
    let names: Vec<&str> = cps["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    // SDK checkpoints carry the app's own timestamps; a log mark is when coldstart
    // read the line, which may come after later checkpoints.
    let pos = |n: &str| {
        names
            .iter()
            .position(|x| *x == n)
            .unwrap_or_else(|| panic!("{n} in {cps}"))
    };
    assert!(pos("config-loaded") < pos("db-connected"), "{cps}");
    assert_eq!(names.len(), 3, "{cps}");
    let at: Vec<u64> = cps["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["t_ns"].as_u64().unwrap())
        .collect();
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "in time order: {at:?}");
    assert!(
        out.contains("Dynamic loader") && out.contains("Checkpoints"),
        "{out}"
    );
    // The Chrome trace carries each source on its own track.
    let doc = json_file(&trace);
    let evs = doc["traceEvents"].as_array().unwrap();
    assert!(
        evs.iter()
            .any(|e| e["cat"] == "source" && e["name"] == "db-connected"),
        "checkpoint in the Chrome trace"
    );
}

#[test]
fn unknown_adapter_is_refused_before_any_run() {
    let _turn = crate::common::beside();
    let o = cs(&[
        "explain",
        "--adapter",
        "cobol",
        "--ready",
        "exit",
        "--",
        "/bin/true",
    ])
    .run();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("unknown adapter \"cobol\"") && err.contains("native"),
        "{err}"
    );
}

/// Python's importtime lines go to the target's stderr, where a log probe reads:
/// the adapted runs claim them, so the probe still fires on the app's own line,
/// `--mark` never sees them, and the imports section has them all.
#[test]
fn python_importtime_lines_never_reach_the_log_probe_or_marks() {
    let _turn = crate::common::beside();
    let py = python_exe();
    let script = "import sys, json, email.parser\nprint('READY', file=sys.stderr, flush=True)\n";
    let (doc, out) = explain(&[
        "--runs",
        "2",
        "--ready",
        "log:READY",
        "--mark",
        "leak=import time",
        "--",
        &py,
        "-c",
        script,
    ]);
    assert_eq!(doc["adapters"], serde_json::json!(["python"]), "{doc}");
    let sources = doc["sources"].as_array().unwrap();
    let python = sources
        .iter()
        .find(|s| s["source"] == "python")
        .expect("python section");
    let packages: Vec<&str> = python["table"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].as_str().unwrap())
        .collect();
    // email.parser pulls in ~15 modules: always among the top packages.
    assert!(packages.contains(&"email"), "{packages:?}");
    let imports = python["facts"][0][1]["count"].as_u64().unwrap();
    assert!(imports > 20, "{python}");
    assert!(
        !sources.iter().any(|s| s["source"] == "checkpoints"),
        "no --mark matched a claimed importtime line: {sources:?}"
    );
    assert!(out.contains("Python imports"), "{out}");
}

/// An unmodified program using the real OpenTelemetry Python SDK, configured only
/// by the environment: explain's OTLP receiver gets its spans, nested.
#[test]
fn opentelemetry_spans_become_a_nested_section() {
    let _turn = crate::common::beside();
    let sdk = repo().join("target/otel/python");
    if !sdk.join("opentelemetry").exists() {
        testkit::skip(
            "OTEL",
            "the Python OpenTelemetry SDK is missing: run tests/fixtures/otel-setup.sh",
        );
        return;
    }
    let script = repo().join("tests/fixtures/otel-python/nested_spans.py");
    let pythonpath = format!("PYTHONPATH={}", sdk.display());
    let (doc, out) = explain(&[
        "--runs",
        "1",
        "--adapter",
        "none",
        "--ready",
        "exit",
        "-e",
        &pythonpath,
        "--",
        &python_exe(),
        script.to_str().unwrap(),
    ]);
    let sources = doc["sources"].as_array().unwrap();
    let otlp = sources
        .iter()
        .find(|s| s["source"] == "otlp")
        .expect("an otlp section");
    let spans = otlp["spans"].as_array().unwrap();
    let span = |n: &str| {
        spans
            .iter()
            .find(|s| s["name"] == n)
            .unwrap_or_else(|| panic!("{n}: {otlp}"))
    };
    assert_eq!(span("init")["depth"], 0);
    assert_eq!(span("load-config")["depth"], 1);
    assert_eq!(span("connect-db")["depth"], 1);
    let at = |n: &str| span(n)["start_ns"].as_u64().unwrap();
    assert!(at("init") <= at("load-config") && at("load-config") <= at("connect-db"));
    let ready = doc["adapted_ms"]["max"].as_f64().unwrap() * 1e6;
    assert!((at("connect-db") as f64) < ready, "spans fall inside the run");
    assert!(out.contains("connect-db"), "{out}");
}

/// A Rust server (std only, dynamically linked against libc): the native adapter
/// reports its loader; a Node server: the require hook reports node:http.
#[test]
fn rust_and_node_servers_get_their_adapters() {
    let _turn = crate::common::beside();
    let port = free_port().to_string();
    let url = format!("http://127.0.0.1:{port}/health");
    let (doc, _) = explain(&[
        "--runs",
        "1",
        "--ready",
        &url,
        "--",
        &example("rust-server"),
        "--port",
        &port,
    ]);
    assert_eq!(doc["adapters"], serde_json::json!(["native"]), "{doc}");
    let native = section(&doc, "native");
    assert!(fact_num(&native, "libraries loaded") >= 1, "{native}");

    if testkit::tool("NODE", "node").is_none() {
        return;
    }
    let port = free_port().to_string();
    let url = format!("http://127.0.0.1:{port}/health");
    let server = repo().join("examples/node/server.js");
    let (doc, _) = explain(&[
        "--runs",
        "1",
        "--ready",
        &url,
        "--",
        "node",
        server.to_str().unwrap(),
        "--port",
        &port,
    ]);
    assert_eq!(doc["adapters"], serde_json::json!(["node"]), "{doc}");
    let node = section(&doc, "node");
    let rows = node["table"]["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r[0] == "node:http"), "{node}");
}
