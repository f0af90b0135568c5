//! Marks from inside a run: the Python SDK's checkpoints (from the target and a
//! child process it starts) and --mark log marks, all on the run's clock.

mod common;
use common::*;

#[test]
fn sdk_checkpoints_and_log_marks_become_marks() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let sdk = root().join("sdk/python/src").display().to_string();
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
    let py = real_python();
    let o = run(&[
        "bench",
        "-q",
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
    ]);
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
    // The variable names an open, writable descriptor in the target.
    let o = run(&[
        "bench",
        "-q",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--",
        "sh",
        "-c",
        "test -w /proc/self/fd/$COLDSTART_FD",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}
