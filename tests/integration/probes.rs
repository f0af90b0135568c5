//! Each readiness probe against a real target, including the failure paths.

use crate::common::*;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn exit_probe_measures_every_run_and_exports() {
    let _turn = crate::common::beside();
    let dir = tmp();
    let json = dir.path().join("r.json");
    let csv = dir.path().join("r.csv");
    let md = dir.path().join("r.md");
    let noop = example("noop");
    let o = cs(&[
        "bench",
        "--runs",
        "7",
        "--warmup",
        "2",
        "--export-json",
        json.to_str().unwrap(),
        "--export-csv",
        csv.to_str().unwrap(),
        "--export-markdown",
        md.to_str().unwrap(),
        "--",
        &noop,
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    assert_eq!(doc["schema"], "coldstart.bench/2");
    assert_eq!(ready_ns(&doc, 0).len(), 7);
    assert_eq!(
        doc["samples"].as_array().unwrap().len(),
        9,
        "warmups are kept as raw samples too"
    );
    assert_eq!(doc["variants"][0]["stats"]["ready_ms"]["n"], 7);
    assert_eq!(doc["samples"][0]["exit_status"]["code"], 0);
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), 1 + 9);
    assert!(rows.starts_with("variant,round,warmup,outcome,ready_ns"));
    let table = std::fs::read_to_string(&md).unwrap();
    assert!(table.contains("| variant | runs | min | p50 [95% CI]"), "{table}");
    let out = stdout(&o);
    assert!(out.contains("p50 [95% CI]") && out.contains("noop"), "{out}");
}

#[test]
fn tcp_probe_on_a_real_server() {
    let _turn = crate::common::beside();
    let port = free_port().to_string();
    let server = example("rust-server");
    let o = cs(&[
        "bench",
        "--runs",
        "3",
        "--ready",
        &format!("tcp:{port}"),
        "--",
        &server,
        "--port",
        &port,
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("shutdown"),
        "a server that is stopped reports its shutdown time"
    );
}

#[test]
fn http_probe_and_requests_after_ready() {
    let _turn = crate::common::beside();
    let dir = tmp();
    let json = dir.path().join("r.json");
    let port = free_port().to_string();
    let server = example("go-server");
    let url = format!("http://127.0.0.1:{port}/health");
    let o = cs(&[
        "bench",
        "--runs",
        "3",
        "--requests",
        "4",
        "--ready",
        &url,
        "--export-json",
        json.to_str().unwrap(),
        "--",
        &server,
        "--port",
        &port,
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    for s in doc["samples"].as_array().unwrap() {
        assert_eq!(s["requests_ns"].as_array().unwrap().len(), 4, "{s}");
        assert!(
            s["shutdown_ns"].as_u64().is_some(),
            "the Go server exits on SIGTERM: {s}"
        );
        assert_eq!(s["killed"], false);
    }
    assert!(doc["variants"][0]["stats"]["first_request_ms"]["n"].as_u64() == Some(3));
}

#[test]
fn http_probe_waits_for_a_2xx() {
    let _turn = crate::common::beside();
    // The server answers 404 on this path: never ready, so the run times out.
    let port = free_port().to_string();
    let server = example("rust-server");
    let url = format!("http://127.0.0.1:{port}/missing");
    let o = cs(&[
        "bench",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--timeout",
        "1",
        "--ready",
        &url,
        "--",
        &server,
        "--port",
        &port,
    ])
    .quiet()
    .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("not ready before --timeout"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn log_probe_captures_named_groups() {
    let _turn = crate::common::beside();
    let dir = tmp();
    let json = dir.path().join("r.json");
    let port = free_port().to_string();
    let script = repo().join("examples/node/server.js").display().to_string();
    let o = cs(&[
        "bench",
        "--runs",
        "3",
        "--ready",
        r"log:listening on 127\.0\.0\.1:(?P<port>\d+)",
        "--export-json",
        json.to_str().unwrap(),
        "--",
        "node",
        &script,
        "--port",
        &port,
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    for s in doc["samples"].as_array().unwrap() {
        assert_eq!(s["captures"]["port"], port.as_str());
    }
    assert!(stdout(&o).contains("captured port"), "{}", stdout(&o));
}

#[test]
fn file_probe_sees_the_file_and_removes_it_between_runs() {
    let _turn = crate::common::beside();
    let dir = tmp();
    let flag = dir.path().join("ready.flag");
    let script = format!("sleep 0.05; touch {}; sleep 30", flag.display());
    let o = cs(&[
        "bench",
        "--runs",
        "3",
        "--ready",
        &format!("file:{}", flag.display()),
        "--",
        "sh",
        "-c",
        &script,
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!flag.exists(), "the ready file is removed after each run");
}

#[test]
fn file_that_exists_before_spawn_is_refused() {
    let _turn = crate::common::beside();
    let dir = tmp();
    let flag = dir.path().join("stale.flag");
    std::fs::write(&flag, "").unwrap();
    let o = cs(&[
        "bench",
        "--ready",
        &format!("file:{}", flag.display()),
        "--",
        "true",
    ])
    .quiet()
    .run();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("already exists before the spawn"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn timeout_fails_with_output_tail_and_leaves_nothing() {
    let _turn = crate::common::beside();
    let m = marker("timeout");
    let port = free_port();
    let o = cs(&[
        "bench",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--timeout",
        "0.3",
        "--env",
        &m,
        "--ready",
        &format!("tcp:{port}"),
        "--",
        "sh",
        "-c",
        "echo still booting; sleep 30",
    ])
    .quiet()
    .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("not ready before --timeout"), "{err}");
    assert!(
        err.contains("still booting"),
        "last output lines are shown: {err}"
    );
    assert!(stdout(&o).contains("stopped: failure"), "{}", stdout(&o));
    assert!(processes_with(&m).is_empty(), "a timed-out target is killed");
}

#[test]
fn tcp_probe_never_takes_its_own_connection_for_a_listener() {
    let _turn = crate::common::beside();
    // Nothing listens on an even port of the ephemeral range; connecting there
    // again and again, Linux eventually picks that port as the source and the
    // socket "connects" to itself. Polled every microsecond for 4 s (several laps
    // of the range), the run must time out, not become ready.
    let port = free_ephemeral_port();
    let o = cs(&[
        "bench",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--timeout",
        "4",
        "--poll-interval",
        "1",
        "--ready",
        &format!("tcp:127.0.0.1:{port}"),
        "--",
        "sleep",
        "30",
    ])
    .quiet()
    .no_store()
    .run();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "port {port}: {err}");
    assert!(err.contains("not ready before --timeout"), "port {port}: {err}");
}

#[test]
fn early_exit_is_a_failed_run_with_status() {
    let _turn = crate::common::beside();
    let port = free_port();
    let o = cs(&[
        "bench",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--ready",
        &format!("tcp:{port}"),
        "--",
        "sh",
        "-c",
        "echo boom >&2; exit 3",
    ])
    .quiet()
    .run();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("exited before ready (exit code 3)") && err.contains("boom"),
        "{err}"
    );
}

#[test]
fn keep_going_runs_every_round_despite_failures() {
    let _turn = crate::common::beside();
    let dir = tmp();
    let json = dir.path().join("r.json");
    let port = free_port();
    let o = cs(&[
        "bench",
        "--runs",
        "4",
        "--warmup",
        "0",
        "--keep-going",
        "--ready",
        &format!("tcp:{port}"),
        "--export-json",
        json.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "exit 7",
    ])
    .quiet()
    .run();
    assert_eq!(o.status.code(), Some(1), "no successful run is still a failure");
    let doc = json_file(&json);
    assert_eq!(doc["samples"].as_array().unwrap().len(), 4);
    assert_eq!(doc["variants"][0]["stats"]["failed_runs"], 4);
}

#[test]
fn port_in_use_is_refused_before_spawn() {
    let _turn = crate::common::beside();
    let port = free_port();
    let _listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let m = marker("portinuse");
    let o = cs(&[
        "bench",
        "--env",
        &m,
        "--ready",
        &format!("tcp:{port}"),
        "--",
        "sleep",
        "30",
    ])
    .quiet()
    .run();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("port {port}")) && err.contains("already accepts connections"),
        "{err}"
    );
    assert!(processes_with(&m).is_empty(), "nothing was spawned");
}

#[test]
fn bad_input_gets_one_clear_line() {
    let _turn = crate::common::beside();
    let cases: &[(&[&str], &str)] = &[
        (
            &["bench", "--ready", "pigeon", "--", "true"],
            "unknown readiness 'pigeon'",
        ),
        (&["bench", "--ready", "log:(unclosed", "--", "true"], "bad regex"),
        (&["bench", "--ready", "http://", "--", "true"], "bad URL"),
        (&["bench", "--ready", "tcp:notaport", "--", "true"], "bad port"),
        (&["bench", "--", "./no/such/program"], "command not found"),
        (&["bench", "--", "no-such-program-anywhere"], "command not found"),
        (&["bench", "--runs", "3"], "no command to measure"),
        (&["bench", "--name", "a", "true"], "no `--`"),
        (
            &["bench", "--name", "a", "--runs", "3", "--", "true"],
            "--runs is not a per-variant option: options for all variants go before the first --name",
        ),
        (
            &["explain", "--name", "a", "--profile", "--", "true"],
            "--profile is not a per-variant option",
        ),
        (&["gate", "--export-json", "g.json"], "gate has no --export-json"),
        (&["bench", "--env", "NOEQUALS", "--", "true"], "write KEY=VALUE"),
        (&["bench", "--target-ci", "fast", "--", "true"], "bad --target-ci"),
        (
            &["bench", "--requests", "2", "--", "true"],
            "--requests needs a URL",
        ),
        (
            &["bench", "--export-json", "/no/such/dir/r.json", "--", "true"],
            "does not exist",
        ),
        (
            &["bench", "--name", "x", "--", "true", "--name", "x", "--", "true"],
            "two variants are named 'x'",
        ),
    ];
    for (args, expected) in cases {
        let o = cs(args).run();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(expected), "{args:?}: expected {expected:?} in {err}");
        assert!(
            err.trim().lines().count() <= 2,
            "{args:?}: one clear line, got {err}"
        );
    }
}

#[test]
fn help_teaches_the_grammar() {
    let _turn = crate::common::beside();
    let o = cs(&["bench", "--help"]).run();
    assert!(o.status.success());
    let out = stdout(&o);
    for needle in ["READINESS", "log:REGEX", "--name", "Hodges-Lehmann", "--warmup"] {
        assert!(out.contains(needle), "help lacks {needle}");
    }
}

#[test]
fn listen_probe_uses_the_preload_shim_instant() {
    let _turn = crate::common::beside();
    // lagprobe records CLOCK_MONOTONIC right before its listen(2); the shim's
    // instant (right after it) is the ready time: never before, with no polling.
    let dir = tmp();
    let json = dir.path().join("r.json");
    let marks = dir.path().join("marks.txt");
    let port = free_port().to_string();
    let o = cs(&[
        "bench",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--ready",
        "listen",
        "--export-json",
        json.to_str().unwrap(),
        "--",
        &example("lagprobe"),
        &port,
        marks.to_str().unwrap(),
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    let truth: Vec<u64> = std::fs::read_to_string(&marks)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("listen ").map(|n| n.parse().unwrap()))
        .collect();
    let samples = doc["samples"].as_array().unwrap();
    assert_eq!(truth.len(), samples.len());
    for (s, true_listen) in samples.iter().zip(truth) {
        let ready = s["t0_mono_ns"].as_u64().unwrap() + s["ready_ns"].as_u64().unwrap();
        assert!(
            ready >= true_listen,
            "ready {ready} before the listen call {true_listen}"
        );
        let mark = s["marks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "@listen")
            .expect("@listen mark");
        assert_eq!(mark["t_ns"], s["ready_ns"]);
    }
}

#[test]
fn listen_probe_falls_back_to_the_tracer_for_go() {
    let _turn = crate::common::beside();
    // Go makes raw syscalls, so LD_PRELOAD never sees its listen.
    let port = free_port().to_string();
    let o = cs(&[
        "bench",
        "--runs",
        "2",
        "--ready",
        "listen",
        "--",
        &example("go-server"),
        "--port",
        &port,
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
}
