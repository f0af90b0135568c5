//! Marks from inside a run: the Python SDK's checkpoints (from the target and a
//! child process it starts) and --mark log marks, all on the run's clock.

use crate::common::*;

#[test]
fn sdk_checkpoints_and_log_marks_become_marks() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let sdk = repo().join("sdk/python/src").display().to_string();
    let script = "\
import os, subprocess, sys, time
from coldstart_checkpoint import checkpoint
checkpoint('imports-done')
time.sleep(0.03)
print('hello from the app', flush=True)
subprocess.run([sys.executable, '-c', 'from coldstart_checkpoint import checkpoint; checkpoint(\"in-child\")'], check=True,
               pass_fds=[int(os.environ['COLDSTART_FD'])])  # subprocess closes other fds by default
checkpoint('config-loaded')
";
    let py = python_exe();
    let o = cs(&[
        "bench",
        "--runs",
        "3",
        "--env",
        &format!("PYTHONPATH={sdk}"),
        "--mark",
        "greeted=^hello",
        "--export-json",
        json.to_str().unwrap(),
        "--",
        &py,
        "-c",
        script,
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    for s in doc["samples"].as_array().unwrap() {
        let marks: Vec<(String, String, u64)> = s["marks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["name"].as_str().unwrap().into(),
                    m["source"].as_str().unwrap().into(),
                    m["t_ns"].as_u64().unwrap(),
                )
            })
            .collect();
        let names: Vec<&str> = marks.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(
            names,
            ["imports-done", "greeted", "in-child", "config-loaded"],
            "{marks:?}"
        );
        assert_eq!(marks[1].1, "log");
        assert_eq!(marks[0].1, "checkpoint");
        assert!(
            marks[1].2 - marks[0].2 >= 25_000_000,
            "the 30 ms sleep lies between: {marks:?}"
        );
        let ready = s["ready_ns"].as_u64().unwrap();
        assert!(
            marks[3].2 <= ready,
            "marks fall inside spawn → exit: {marks:?} ready {ready}"
        );
    }
    let stats = &doc["variants"][0]["stats"]["marks"];
    assert_eq!(stats.as_array().unwrap().len(), 4);
    assert_eq!(stats[0]["name"], "imports-done");
    assert_eq!(stats[0]["runs"], 3);
    let out = stdout(&o);
    assert!(
        out.contains("config-loaded") && out.contains("checkpoint"),
        "{out}"
    );
}

#[test]
fn targets_without_the_sdk_get_an_fd_they_can_ignore() {
    let _turn = crate::common::beside();
    // The variable names an open, writable descriptor in the target.
    let o = cs(&[
        "bench",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--",
        "sh",
        "-c",
        "test -w /proc/self/fd/$COLDSTART_FD",
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A loopback HTTP server that answers every GET with 200, except connection
/// number SLOW (1 = the first GET it accepts): for that one it prints
/// "handling slow request", then waits 200 ms before answering.
const SLOW_SERVER: &str = r#"
import socket, sys, time
port, slow = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(64)
n = 0
while True:
    c, _ = s.accept()
    n += 1
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = c.recv(4096)
        if not chunk:
            break
        data += chunk
    if n == slow:
        print("handling slow request", flush=True)
        time.sleep(0.2)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
    c.close()
"#;

/// Runs of the slow server with `--mark handling=…`; the samples' JSON.
fn slow_server_runs(slow: &str, extra: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let port = free_port().to_string();
    let url = format!("http://127.0.0.1:{port}/");
    let py = python_exe();
    let mut args = vec![
        "bench",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--ready",
        &url,
        "--mark",
        "handling=^handling slow request",
        "--export-json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", &py, "-c", SLOW_SERVER, &port, slow]);
    let o = cs(&args).quiet().no_store().run();
    assert!(o.status.success(), "{}", stderr(&o));
    json_file(&json)
}

fn mark_ns(sample: &serde_json::Value, name: &str) -> u64 {
    sample["marks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no {name} mark in {sample}"))["t_ns"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_line_printed_while_the_http_probe_waits_is_stamped_when_printed() {
    let _turn = crate::common::beside();
    // The server prints, then answers the probe's GET 200 ms later: the mark must
    // come ~200 ms before ready, not when the response arrived.
    let doc = slow_server_runs("1", &[]);
    for s in doc["samples"].as_array().unwrap() {
        let ready = s["ready_ns"].as_u64().unwrap();
        let mark = mark_ns(s, "handling");
        assert!(mark < ready, "mark {mark} not before ready {ready}");
        let gap = ready - mark;
        assert!(
            (150_000_000..2_000_000_000).contains(&gap),
            "ready − mark = {gap} ns, expected ≈ 200 ms"
        );
    }
}

#[test]
fn a_line_printed_while_a_request_waits_is_stamped_before_its_response() {
    let _turn = crate::common::beside();
    // Connection 1 is the probe's GET (answered at once), connection 2 the first
    // of --requests: printed at its start, answered 200 ms later.
    let doc = slow_server_runs("2", &["--requests", "2"]);
    for s in doc["samples"].as_array().unwrap() {
        let ready = s["ready_ns"].as_u64().unwrap();
        let first = s["requests_ns"][0].as_u64().unwrap();
        let mark = mark_ns(s, "handling");
        assert!(mark >= ready, "printed after ready: mark {mark}, ready {ready}");
        // The request starts after ready, so it ends at ready + first or later;
        // the line was printed ~200 ms before that end.
        assert!(
            mark + 150_000_000 <= ready + first,
            "mark {mark} not ≥ 150 ms before the request's end (ready {ready} + {first})"
        );
    }
}
