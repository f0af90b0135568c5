//! `coldstart lambda` with real Lambda clients written by others: a runtime built
//! on aws-lambda-go and one on the lambda_runtime crate, an extension built on the
//! lambda-extension crate (subscribed to the Telemetry API), and one written
//! against the raw HTTP API (Python). Each test checks what a user relies on: the
//! event order, the REPORT line, Init Duration against the extensions' own clocks,
//! the error paths, and that nothing is left running.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A built Lambda client, or None (a visible skip; a failure under
/// COLDSTART_REQUIRE_LAMBDA_CLIENTS) when examples/build.sh could not build it.
fn client(name: &str) -> Option<String> {
    let p = examples().join("lambda").join(name);
    testkit::need("LAMBDA_CLIENTS", p.exists().then_some(p), || {
        format!(
            "examples/lambda/{name} was not built (cargo or go missing or offline, see examples/build.sh)"
        )
    })
    .map(|p| p.display().to_string())
}

fn python_client(name: &str) -> PathBuf {
    repo().join("examples/lambda/python").join(name)
}

/// An extensions directory holding copies (the name an extension registers under
/// is its file name) of the given files.
fn extensions_dir(dir: &Path, files: &[(&str, &Path)]) -> PathBuf {
    let ext = dir.join("extensions");
    std::fs::create_dir_all(&ext).unwrap();
    for (name, src) in files {
        std::fs::copy(src, ext.join(name)).unwrap();
    }
    ext
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The tab-separated `Key: value` fields of a platform line (`KIND ` stripped).
fn fields(line: &str) -> Vec<(String, String)> {
    let body = line.split_once(' ').map_or(line, |(_, rest)| rest);
    body.split('\t')
        .filter_map(|f| f.split_once(": ").map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

fn ms_field(fields: &[(String, String)], key: &str) -> f64 {
    let v = &fields
        .iter()
        .find(|(k, _)| k == key)
        .unwrap_or_else(|| panic!("no {key}"))
        .1;
    v.strip_suffix(" ms")
        .or_else(|| v.strip_suffix(" MB"))
        .unwrap_or_else(|| panic!("{key}: {v}"))
        .parse()
        .unwrap()
}

/// The mark of this name in an exported sample.
fn mark<'a>(sample: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    sample["marks"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["name"] == name))
        .unwrap_or_else(|| panic!("no mark {name}: {}", sample["marks"]))
}

#[test]
fn go_runtime_with_two_extensions_init_invoke_shutdown() {
    let (Some(go), Some(telemetry_ext)) = (client("go-bootstrap"), client("rust-telemetry-extension")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ext = extensions_dir(
        dir.path(),
        &[
            ("rust-telemetry", Path::new(&telemetry_ext)),
            ("py-raw", &python_client("raw_extension.py")),
        ],
    );
    let ready = dir.path().join("ready");
    std::fs::create_dir(&ready).unwrap();
    let (telemetry, log, json, response, event) = (
        dir.path().join("telemetry.txt"),
        dir.path().join("lambda.log"),
        dir.path().join("out.json"),
        dir.path().join("response.json"),
        dir.path().join("event.json"),
    );
    std::fs::write(&event, r#"{"hello": "lambda"}"#).unwrap();
    let m = marker("lambda-go");
    let o = lambda_once()
        .args([
            "--memory",
            "1769",
            "--runtime",
            &go,
            "--extensions",
            ext.to_str().unwrap(),
            "--event",
            event.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--save-response",
            response.to_str().unwrap(),
            "--export-json",
            json.to_str().unwrap(),
            "--env",
            &m,
            "--env",
            &format!("CS_READY_DIR={}", ready.display()),
            "--env",
            &format!("CS_TELEMETRY_OUT={}", telemetry.display()),
            "--env",
            &format!("CS_TELEMETRY_PORT={}", free_port()),
        ])
        .run();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));

    // The event reached aws-lambda-go's handler and its response came back.
    let resp: serde_json::Value = serde_json::from_slice(&std::fs::read(&response).unwrap()).unwrap();
    assert_eq!(resp["runtime"], "aws-lambda-go");
    assert_eq!(resp["echo"]["hello"], "lambda");

    // The platform events, as the lambda-extension crate parsed them, in Lambda's order.
    let platform: Vec<String> = lines_of(&telemetry)
        .into_iter()
        .filter(|l| l.starts_with("platform."))
        .collect();
    assert_eq!(
        platform,
        [
            "platform.initStart",
            "platform.telemetrySubscription",
            "platform.initRuntimeDone",
            "platform.extension",
            "platform.extension",
            "platform.initReport",
            "platform.start",
            "platform.runtimeDone",
            "platform.report",
        ],
        "telemetry received by the extension"
    );

    // START / END / REPORT in production format, one request id.
    let lines = lines_of(&log);
    let start = lines
        .iter()
        .find(|l| l.starts_with("START "))
        .expect("START line");
    let id = start
        .strip_prefix("START RequestId: ")
        .and_then(|r| r.strip_suffix(" Version: $LATEST"))
        .expect("START format");
    assert!(lines.contains(&format!("END RequestId: {id}")));
    let report = lines
        .iter()
        .find(|l| l.starts_with("REPORT "))
        .expect("REPORT line");
    assert!(
        report.starts_with(&format!("REPORT RequestId: {id}\tDuration: ")),
        "{report}"
    );
    let f = fields(report);
    let keys: Vec<&str> = f.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "RequestId",
            "Duration",
            "Billed Duration",
            "Memory Size",
            "Max Memory Used",
            "Init Duration"
        ],
        "{report}"
    );
    let (duration, billed, init) = (
        ms_field(&f, "Duration"),
        ms_field(&f, "Billed Duration"),
        ms_field(&f, "Init Duration"),
    );
    // Billed Duration = ceil(Duration + Init Duration), as billed since 2025-08-01.
    assert_eq!(
        billed,
        (((duration * 100.0).round() + (init * 100.0).round()) / 100.0).ceil()
    );
    assert_eq!(ms_field(&f, "Memory Size"), 1769.0);
    assert!(ms_field(&f, "Max Memory Used") >= 1.0, "{report}");
    assert!(
        !lines.iter().any(|l| l.starts_with("INIT_REPORT")),
        "no INIT_REPORT on success"
    );

    // Init Duration ends no earlier than the slowest extension's own ready instant.
    let doc = json_file(&json);
    let sample = &doc["samples"][0];
    let t0 = sample["t0_mono_ns"].as_u64().unwrap();
    let init_ns = sample["ready_ns"].as_u64().unwrap();
    let mut slowest = 0;
    for name in ["rust-telemetry", "py-raw"] {
        let at: u64 = std::fs::read_to_string(ready.join(name))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(at > t0, "{name} was ready before T0");
        slowest = slowest.max(at);
        let seen = mark(sample, &format!("ext.{name}.ready"));
        assert_eq!(seen["source"], "lambda");
        assert!(
            seen["t_ns"].as_u64().unwrap() as f64 >= (at - t0) as f64 - 1e3,
            "{name}"
        );
    }
    assert!(
        t0 + init_ns >= slowest,
        "Init Duration ends before an extension was ready"
    );
    assert!(
        (init - init_ns as f64 / 1e6).abs() < 0.01,
        "REPORT and sample agree"
    );
    assert!(mark(sample, "runtime_ready")["t_ns"].as_u64().unwrap() <= init_ns);
    for key in ["invoke_ms", "post_runtime_ms", "max_memory_mb", "billed_ms"] {
        assert!(sample["metrics"][key].is_number(), "metric {key}");
    }
    assert_eq!(sample["metrics"]["billed_ms"].as_f64().unwrap(), billed);
    assert!(
        processes_with(&m).is_empty(),
        "left behind: {:?}",
        processes_with(&m)
    );
}

#[test]
fn rust_runtime_invoke_and_memory_sweep() {
    let Some(rust) = client("rust-bootstrap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ext = extensions_dir(dir.path(), &[("py-raw", &python_client("raw_extension.py"))]);
    let (log, response, json) = (
        dir.path().join("lambda.log"),
        dir.path().join("response.json"),
        dir.path().join("out.json"),
    );
    let m = marker("lambda-rust");
    let o = lambda_once()
        .args([
            "--memory",
            "256,1024",
            "--runtime",
            &rust,
            "--extensions",
            ext.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--save-response",
            response.to_str().unwrap(),
            "--export-json",
            json.to_str().unwrap(),
            "--env",
            &m,
        ])
        .run();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let resp: serde_json::Value = serde_json::from_slice(&std::fs::read(&response).unwrap()).unwrap();
    assert_eq!(resp["runtime"], "lambda_runtime");
    let sizes: Vec<f64> = lines_of(&log)
        .iter()
        .filter(|l| l.starts_with("REPORT "))
        .map(|l| ms_field(&fields(l), "Memory Size"))
        .collect();
    assert_eq!(sizes.len(), 2);
    assert!(sizes.contains(&256.0) && sizes.contains(&1024.0), "{sizes:?}");
    let doc = json_file(&json);
    let names: Vec<&str> = doc["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    // A memory sweep: one variant per size, `memory` a parameter (a resource),
    // each size compared with the first.
    assert_eq!(
        names,
        [format!("{rust}[memory=256]"), format!("{rust}[memory=1024]")]
    );
    assert_eq!(doc["variants"][1]["params"]["memory"], "1024");
    // What the function ran with, per variant, in the settings.
    let lambda = &doc["settings"]["lambda"];
    let recorded: Vec<(String, u64)> = lambda["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_string(),
                v["memory_mb"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        recorded,
        [
            (format!("{rust}[memory=256]"), 256),
            (format!("{rust}[memory=1024]"), 1024)
        ],
        "{lambda}"
    );
    assert_eq!(lambda["init_boost"]["vcpus"], 1.0, "{lambda}");
    assert_eq!(lambda["function_timeout_ms"], 3000, "{lambda}");
    assert_eq!(
        lambda["variants"][0]["extensions"][0]
            .as_str()
            .map(|e| e.ends_with("py-raw")),
        Some(true),
        "{lambda}"
    );
    assert_eq!(
        doc["variants"][1]["stats"]["first"],
        format!("{rust}[memory=256]")
    );
    assert!(
        stdout(&o).contains(&format!("{rust} vs memory=256")),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains(&format!("best memory for {rust}: ")),
        "{}",
        stdout(&o)
    );
    assert!(
        processes_with(&m).is_empty(),
        "left behind: {:?}",
        processes_with(&m)
    );
}

/// The runtime and each extension get COLDSTART_FD (a pipe each); the Python SDK's
/// checkpoints come back as marks in the process that wrote them, ordered with the
/// APIs' instants and with the clock instants the processes record themselves.
#[test]
fn runtime_and_extension_checkpoints_become_marks() {
    let dir = tempfile::tempdir().unwrap();
    let ext_py = python_client("raw_extension.py");
    let ext = extensions_dir(dir.path(), &[("py-a", &ext_py), ("py-b", &ext_py)]);
    let ready = dir.path().join("ready");
    std::fs::create_dir(&ready).unwrap();
    let json = dir.path().join("out.json");
    let m = marker("lambda-checkpoints");
    let rt = python_client("raw_runtime.py");
    let o = cs(&[
        "lambda",
        "--no-cgroup",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--runtime",
        rt.to_str().unwrap(),
        "--extensions",
        ext.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
        "--env",
        &m,
        "--env",
        &format!("CS_READY_DIR={}", ready.display()),
        "--env",
        &format!("CS_CHECKPOINT_SDK={}", repo().join("sdk/python/src").display()),
    ])
    .quiet()
    .no_store()
    .run();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let doc = json_file(&json);
    let sample = &doc["samples"][0];
    let t0 = sample["t0_mono_ns"].as_u64().unwrap();
    let init_ns = sample["ready_ns"].as_u64().unwrap();
    let at = |name: &str| mark(sample, name)["t_ns"].as_u64().unwrap();
    let pid = |name: &str| {
        mark(sample, name)["pid"]
            .as_i64()
            .unwrap_or_else(|| panic!("{name}: no pid"))
    };
    let own_clock = |file: &str| -> u64 {
        std::fs::read_to_string(ready.join(file))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let times: Vec<u64> = sample["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["t_ns"].as_u64().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "marks in time order: {times:?}"
    );

    // The runtime: started after every extension registered, its checkpoints
    // before its own clock's instant, before its first /next, inside Init Duration.
    for name in ["rt.start", "rt.before-next"] {
        assert_eq!(mark(sample, name)["source"], "checkpoint");
        assert_eq!(
            pid(name),
            pid("runtime_ready"),
            "{name} came through the runtime's pipe"
        );
    }
    assert!(at("rt.start") < at("rt.before-next"));
    assert!(t0 + at("rt.before-next") <= own_clock("runtime"));
    assert!(at("rt.before-next") <= at("runtime_ready"));
    assert!(at("runtime_ready") <= init_ns);
    for x in ["py-a", "py-b"] {
        let (start, before) = (format!("{x}.start"), format!("{x}.before-next"));
        let (register, ready) = (format!("ext.{x}.register"), format!("ext.{x}.ready"));
        assert_eq!(mark(sample, &register)["source"], "lambda");
        // Each extension's checkpoints came through its own pipe.
        assert_eq!(pid(&start), pid(&register), "{x}");
        assert_eq!(pid(&before), pid(&register), "{x}");
        assert_ne!(pid(&start), pid("runtime_ready"), "{x}");
        // Emitted before registering; the runtime starts only after registration.
        assert!(at(&start) < at(&register), "{x}");
        assert!(at(&register) < at("rt.start"), "{x}");
        assert!(at(&before) < at(&ready), "{x}");
        assert!(
            t0 + at(&before) <= own_clock(x),
            "{x}: after its own clock's instant"
        );
        assert!(at(&ready) <= init_ns, "{x}");
    }
    assert_ne!(pid("py-a.start"), pid("py-b.start"));
    // The marks table shows both kinds.
    let out = stdout(&o);
    assert!(
        out.contains("rt.before-next") && out.contains("runtime_ready"),
        "{out}"
    );
    assert!(
        processes_with(&m).is_empty(),
        "left behind: {:?}",
        processes_with(&m)
    );
}

/// --bare (no emulator) passes COLDSTART_FD too, so its checkpoints compare with
/// an emulated run's.
#[test]
fn bare_runtime_checkpoints_become_marks() {
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready");
    std::fs::create_dir(&ready).unwrap();
    let json = dir.path().join("out.json");
    let m = marker("lambda-bare-checkpoints");
    let rt = python_client("raw_runtime.py");
    let o = cs(&[
        "lambda",
        "--bare",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--runtime",
        rt.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
        "--env",
        &m,
        "--env",
        &format!("CS_READY_DIR={}", ready.display()),
        "--env",
        &format!("CS_CHECKPOINT_SDK={}", repo().join("sdk/python/src").display()),
    ])
    .quiet()
    .no_store()
    .run();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let doc = json_file(&json);
    let sample = &doc["samples"][0];
    let t0 = sample["t0_mono_ns"].as_u64().unwrap();
    let at = |name: &str| mark(sample, name)["t_ns"].as_u64().unwrap();
    let own: u64 = std::fs::read_to_string(ready.join("runtime"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(at("rt.start") < at("rt.before-next"));
    assert!(t0 + at("rt.before-next") <= own);
    assert!(at("rt.before-next") <= sample["ready_ns"].as_u64().unwrap());
    assert_eq!(
        mark(sample, "rt.start")["pid"],
        mark(sample, "rt.before-next")["pid"]
    );
    assert!(
        processes_with(&m).is_empty(),
        "left behind: {:?}",
        processes_with(&m)
    );
}

/// Run the raw Python runtime in a failing mode; returns (output, log lines, sample).
fn failing(
    runtime_mode: &str,
    ext_mode: Option<&str>,
    extra: &[&str],
) -> (Out, Vec<String>, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let (log, json) = (dir.path().join("lambda.log"), dir.path().join("out.json"));
    let m = marker("lambda-fail");
    let rt = python_client("raw_runtime.py");
    let mut args: Vec<String> = [
        "lambda",
        "--no-cgroup",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--runtime",
        rt.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
        "--env",
        &m,
        "--env",
        &format!("CS_RT_MODE={runtime_mode}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(mode) = ext_mode {
        let ext = extensions_dir(dir.path(), &[("py-raw", &python_client("raw_extension.py"))]);
        args.extend(["--extensions".into(), ext.display().to_string()]);
        args.extend(["--env".into(), format!("CS_EXT_MODE={mode}")]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let o = coldstart().args(&args).quiet().no_store().run();
    assert!(
        processes_with(&m).is_empty(),
        "left behind: {:?}",
        processes_with(&m)
    );
    let doc = json_file(&json);
    (o, lines_of(&log), doc["samples"][0].clone())
}

#[test]
fn runtime_init_error_is_reported_as_lambda_does() {
    let (o, log, sample) = failing("init-error", None, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(sample["outcome"]["kind"], "failed");
    assert_eq!(sample["outcome"]["error_type"], "Runtime.ImportModuleError");
    let first = log
        .iter()
        .find(|l| l.starts_with("INIT_REPORT"))
        .expect("INIT_REPORT");
    assert!(
        first.ends_with("\tPhase: init\tStatus: error\tError Type: Runtime.ImportModuleError"),
        "{first}"
    );
    // Lambda retries the init inside the first invoke (a suppressed init).
    assert!(log
        .iter()
        .any(|l| l.starts_with("INIT_REPORT") && l.contains("\tPhase: invoke\t")));
    let after = after_suppressed_init(&log);
    assert_invoke_sequence(
        &after,
        &["Unknown application error occurred", "Runtime.ImportModuleError"],
        "\tStatus: error\tError Type: Runtime.ImportModuleError",
    );
}

/// The log after the suppressed init's INIT_REPORT (Phase: invoke).
fn after_suppressed_init(log: &[String]) -> Vec<String> {
    let at = log
        .iter()
        .position(|l| l.starts_with("INIT_REPORT") && l.contains("\tPhase: invoke"))
        .unwrap_or_else(|| panic!("no INIT_REPORT of phase invoke: {log:?}"));
    log[at + 1..].to_vec()
}

/// START, the error lines, END, and a billed REPORT ending with `report_tail`,
/// all for one request id: what Lambda logs for the invoke of a failed init.
fn assert_invoke_sequence(after: &[String], error_lines: &[&str], report_tail: &str) {
    let start = after
        .iter()
        .position(|l| l.starts_with("START RequestId: "))
        .unwrap_or_else(|| panic!("no START after the failed init: {after:?}"));
    let id = after[start]["START RequestId: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    let rest = &after[start + 1..];
    let end = rest
        .iter()
        .position(|l| *l == format!("END RequestId: {id}"))
        .unwrap_or_else(|| panic!("no END for {id}: {after:?}"));
    let between = rest[..end].join("\n");
    for e in error_lines {
        assert!(between.contains(e), "no `{e}` between START and END: {after:?}");
    }
    let report = rest[end + 1..]
        .iter()
        .find(|l| l.starts_with(&format!("REPORT RequestId: {id}\t")))
        .unwrap_or_else(|| panic!("no REPORT for {id}: {after:?}"));
    assert!(report.ends_with(report_tail), "{report}");
    let f = fields(report);
    assert!(
        ms_field(&f, "Billed Duration") >= ms_field(&f, "Duration"),
        "{report}"
    );
}

#[test]
fn runtime_exit_during_init_is_logged_as_lambda_does() {
    let (o, log, sample) = failing("exit", None, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(sample["outcome"]["error_type"], "Runtime.ExitError");
    assert_invoke_sequence(
        &after_suppressed_init(&log),
        &[
            "Error: Runtime exited with error: exit status 7",
            "Runtime.ExitError",
        ],
        "\tStatus: error\tError Type: Runtime.ExitError",
    );
}

#[test]
fn init_timeout_inside_the_invoke_is_logged_as_lambda_does() {
    let (_, log, _) = failing("hang", None, &["--init-timeout", "0.5", "--timeout", "1"]);
    assert_invoke_sequence(
        &after_suppressed_init(&log),
        &["Task timed out after 1.00 seconds"],
        "\tStatus: timeout",
    );
}

/// A hanging init is cut at --init-timeout: checked against the run itself and
/// against a second run with twice the limit, never against a wall-clock window.
#[test]
fn init_timeout_is_configurable() {
    let hang = |limit_s: &str| {
        let started = Instant::now();
        let (o, log, sample) = failing("hang", None, &["--init-timeout", limit_s, "--timeout", "1"]);
        let wall_ms = started.elapsed().as_secs_f64() * 1e3;
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert_eq!(sample["outcome"]["kind"], "timeout");
        let first = log
            .iter()
            .find(|l| l.starts_with("INIT_REPORT"))
            .expect("INIT_REPORT")
            .clone();
        // AWS's example: `INIT_REPORT Init Duration: 1236.04 ms Phase: init
        // Status: timeout`, no Error Type.
        assert!(first.ends_with("\tPhase: init\tStatus: timeout"), "{first}");
        let init = ms_field(&fields(&first), "Init Duration");
        let limit_ms: f64 = limit_s.parse::<f64>().unwrap() * 1e3;
        // Not before the limit, and inside the run that reported it.
        assert!(init >= limit_ms, "cut before the limit: {first}");
        assert!(
            init <= wall_ms,
            "{first} outlasts the whole run ({wall_ms:.0} ms)"
        );
        (init, wall_ms)
    };
    let (one, _) = hang("1");
    let (two, _) = hang("2");
    // Were the limit ignored (Lambda's 10 s default), both inits would be the same
    // length; honoured, the second is (2 s + overhead) / (1 s + overhead) longer.
    assert!(
        two / one > 1.25,
        "Init Duration {two:.0} ms with --init-timeout 2 vs {one:.0} ms with 1"
    );
}

#[test]
fn extension_init_error_fails_init() {
    let (o, log, sample) = failing("", Some("init-error"), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(sample["outcome"]["error_type"], "Extension.InitError");
    assert!(
        log.iter()
            .any(|l| l.starts_with("INIT_REPORT") && l.ends_with("Error Type: Extension.InitError")),
        "{log:?}"
    );
}

#[test]
fn extension_crash_during_init_fails_init() {
    let (o, _log, sample) = failing("", Some("exit"), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(sample["outcome"]["error_type"], "Extension.Crash");
}

#[test]
fn ctrl_c_during_init_leaves_nothing() {
    let m = marker("lambda-sigint");
    let dir = tempfile::tempdir().unwrap();
    let ext = extensions_dir(dir.path(), &[("py-raw", &python_client("raw_extension.py"))]);
    let (log, records) = (dir.path().join("lambda.log"), dir.path().join("records.jsonl"));
    let port = free_port().to_string();
    let child = coldstart()
        .args(["lambda", "--runs", "3", "--init-timeout", "60", "--runtime"])
        .quiet()
        .no_store()
        .arg(python_client("raw_runtime.py"))
        .args([
            "--extensions",
            ext.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
            "--env",
            &m,
            "--env",
            "CS_RT_MODE=hang",
            // A telemetry subscriber: its batches are cut off by the interrupt.
            "--env",
            "CS_EXT_SUBSCRIBE=telemetry",
            "--env",
            "CS_EXT_DEST_HOST=127.0.0.1",
            "--env",
            &format!("CS_EXT_LISTEN_PORT={port}"),
            "--env",
            &format!("CS_EXT_RECORDS={}", records.display()),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let start = Instant::now();
    // The extension and the hanging runtime both run, and telemetry flows.
    while processes_with(&m).len() < 2 || !records.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "environment never started"
        );
        std::thread::yield_now();
    }
    // SAFETY: signalling the coldstart we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        processes_with(&m).is_empty(),
        "left behind: {:?}",
        processes_with(&m)
    );
    // An interrupt is not the extension crashing, and what it cut off is not
    // a subscriber's fault.
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!logged.contains("Error Type"), "{logged}");
    assert!(!err.contains("not delivered"), "{err}");
}

#[test]
fn bad_input_names_the_fix() {
    let o = cs(&["lambda", "--memory", "64", "--runtime", "/bin/true"])
        .no_store()
        .run();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("128 to 10240 MB"), "{}", stderr(&o));
    let o = cs(&["lambda"]).no_store().run();
    assert!(stderr(&o).contains("--runtime"), "{}", stderr(&o));
    let o = cs(&["lambda", "--runtime", "/bin/true", "--env", "AWS_REGION=x"])
        .no_store()
        .run();
    assert!(stderr(&o).contains("reserved"), "{}", stderr(&o));
}

/// Each mistake a new user made gets one line naming it and the fix.
#[test]
fn input_mistakes_are_named_in_one_line() {
    let rt = python_client("raw_runtime.py");
    let rt = rt.to_str().unwrap();
    for (args, want, not) in [
        (
            vec!["--runtime", rt, "--memory", "128,128"],
            "--memory 128 is given twice",
            "two variants",
        ),
        (
            vec!["--runtime", "./nope-coldstart"],
            "--runtime ./nope-coldstart: no such file",
            "after `--`",
        ),
        (
            vec!["--runtime", rt, "--extensions", "nonexistent-coldstart-ext"],
            "extension executables",
            "unpacked zip",
        ),
        (
            vec!["--runtime", rt, "--name", "a", "--runs", "1"],
            "--runs is not a per-variant option: options for all variants go before the first --name",
            "error: error:",
        ),
    ] {
        let mut full = vec!["lambda", "--no-cgroup"];
        full.extend(args.iter().copied());
        let o = cs(&full).no_store().run();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want) && !err.contains(not), "{args:?}: {err}");
    }
}

/// Paths and limits a run would only find wrong after its runs: said first.
#[test]
fn save_response_dir_and_timeout_are_checked_up_front() {
    let rt = python_client("raw_runtime.py");
    let base = ["lambda", "--no-cgroup", "--runs", "1", "--warmup", "0"];
    let with = |extra: &[&str]| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(["--runtime", rt.to_str().unwrap()]);
        args.extend(extra);
        cs(&args).no_store().run()
    };
    let o = with(&["--save-response", "/nonexistent-coldstart-dir/r.json"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--save-response /nonexistent-coldstart-dir/r.json") && err.contains("does not exist"),
        "{err}"
    );
    let o = with(&["--timeout", "901"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--timeout 901") && err.contains("900"), "{err}");
}

/// Median of a per-variant figure over the exported samples, by variant name.
fn median_by_variant(
    doc: &serde_json::Value,
    figure: impl Fn(&serde_json::Value) -> f64,
) -> Vec<(String, f64)> {
    let names: Vec<String> = doc["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_string())
        .collect();
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut xs: Vec<f64> = doc["samples"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["variant"] == i && s["warmup"] == false)
                .map(&figure)
                .collect();
            assert!(!xs.is_empty(), "no samples of {name}");
            xs.sort_by(f64::total_cmp);
            (name.clone(), xs[xs.len() / 2])
        })
        .collect()
}

/// A CPU-bound init (a fixed number of loop iterations in the raw runtime) at
/// 128, 512 and 1769 MB: with the default init boost (1 vCPU during an on-demand
/// init, as AWS documents) Init Duration is nearly flat; with --no-init-boost it
/// grows as memory shrinks (CPU = memory/1769 vCPU). The invoke's CPU-bound work
/// is ∝ 1/memory either way.
#[test]
fn init_boost_flattens_init_but_not_invoke() {
    let rt = python_client("raw_runtime.py");
    let sweep = |extra: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("out.json");
        let m = marker("lambda-boost");
        let mut args = vec![
            "lambda",
            "--runs",
            "3",
            "--warmup",
            "0",
            "--memory",
            "128,512,1769",
            "--timeout",
            "30",
            "--runtime",
            rt.to_str().unwrap(),
            "--env",
            "CS_RT_INIT_WORK=1500000",
            "--env",
            "CS_RT_INVOKE_WORK=1500000",
            "--env",
            &m,
            "--export-json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = cs(&args).quiet().no_store().run();
        assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
        assert!(processes_with(&m).is_empty(), "left behind");
        let doc = json_file(&json);
        let init = median_by_variant(&doc, |s| s["ready_ns"].as_f64().unwrap() / 1e6);
        let invoke = median_by_variant(&doc, |s| s["metrics"]["invoke_ms"].as_f64().unwrap());
        let at = |xs: &[(String, f64)], mb: &str| {
            xs.iter()
                .find(|(n, _)| n.ends_with(&format!("[memory={mb}]")))
                .unwrap_or_else(|| panic!("no memory={mb} in {xs:?}"))
                .1
        };
        let f = |xs: &[(String, f64)]| [at(xs, "128"), at(xs, "512"), at(xs, "1769")];
        (f(&init), f(&invoke))
    };
    let (init, invoke) = sweep(&[]);
    let boosted_128 = init[0];
    eprintln!("boosted: init ms {init:?}, invoke ms {invoke:?}");
    assert!(init[0] / init[2] < 1.5, "boosted init not flat: {init:?}");
    assert!(invoke[0] / invoke[2] > 3.0, "invoke not ∝ 1/memory: {invoke:?}");
    // 128 MB against 512 MB only: their quotas (0.07 and 0.29 vCPU) bind even
    // on a busy 2-core machine, while 1769 MB's whole vCPU does not exist at
    // load 7+ (there 512 and 1769 MB ran alike, and the order flipped).
    assert!(invoke[0] > invoke[1], "{invoke:?}");
    let (init, invoke) = sweep(&["--no-init-boost"]);
    eprintln!("no boost: init ms {init:?}, invoke ms {invoke:?}");
    assert!(init[0] / init[2] > 3.0, "unboosted init not ∝ 1/memory: {init:?}");
    assert!(init[0] > init[1], "{init:?}");
    assert!(invoke[0] / invoke[2] > 3.0, "invoke not ∝ 1/memory: {invoke:?}");
    // The boost ends after --init-boost-seconds even while init still runs.
    let (init, _) = sweep(&["--init-boost-seconds", "0.05"]);
    eprintln!("boost for 50 ms: init ms {init:?}");
    assert!(
        init[0] / boosted_128 > 2.0,
        "boost did not end: {init:?} vs boosted {boosted_128}"
    );
}

/// Lambda keeps only `Runtime.X` / `Function.X` error types; a runtime posting
/// `ValueError` is reported as `Runtime.Unknown` (RIE's
/// GetValidRuntimeOrFunctionErrorType).
#[test]
fn invoke_error_types_are_mapped_as_lambda_does() {
    let (o, log, sample) = failing("error-type", None, &["--env", "CS_RT_ERROR_TYPE=ValueError"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(sample["outcome"]["error_type"], "Runtime.Unknown", "{log:?}");
    let (_, _, sample) = failing(
        "error-type",
        None,
        &["--env", "CS_RT_ERROR_TYPE=Function.HandlerFailed"],
    );
    assert_eq!(sample["outcome"]["error_type"], "Function.HandlerFailed");
}

/// Output left without a newline (`sys.stdout.write(x); flush()`) is the
/// invoke's: in the log before END and REPORT, not after them.
#[test]
fn a_partial_line_is_logged_before_the_report() {
    let (o, log, _) = failing("", None, &["--env", "CS_RT_PARTIAL=partial-no-newline"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let at = |p: &str| log.iter().position(|l| l.starts_with(p));
    let partial = log
        .iter()
        .position(|l| l == "partial-no-newline")
        .unwrap_or_else(|| panic!("the partial line is its own log line: {log:?}"));
    assert!(at("START ").expect("START") < partial, "{log:?}");
    assert!(partial < at("END ").expect("END"), "{log:?}");
}

/// A response over 6 MB ends the invoke with Function.ResponseSizeTooLarge: the
/// runtime gets 413, and a later small response finds the request answered.
#[test]
fn oversized_response_ends_the_invoke() {
    let (o, log, sample) = failing("big-response", None, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        sample["outcome"]["error_type"], "Function.ResponseSizeTooLarge",
        "{log:?}"
    );
    // Before, the 413 left the request open and the small response that follows
    // succeeded; now the REPORT carries the function error.
    assert!(
        log.iter().any(|l| l.starts_with("REPORT ")
            && l.ends_with("\tStatus: error\tError Type: Function.ResponseSizeTooLarge")),
        "{log:?}"
    );
    // What the runtime says after the 413 (as awslambdaric's "Failed to post
    // handler success response") reaches the log before shutdown kills it.
    assert!(
        log.iter().any(|l| l == "big-response statuses: 413 403"),
        "{log:?}"
    );
}

/// An event over Lambda's 6,291,456-byte synchronous limit is refused before any run.
#[test]
fn oversized_event_is_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let event = dir.path().join("event.json");
    std::fs::write(&event, format!("\"{}\"", "x".repeat(6 * 1024 * 1024))).unwrap();
    let rt = python_client("raw_runtime.py");
    let o = cs(&[
        "lambda",
        "--no-cgroup",
        "--runtime",
        rt.to_str().unwrap(),
        "--event",
        event.to_str().unwrap(),
    ])
    .quiet()
    .no_store()
    .run();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("6291456"), "{err}");
}

/// The records an extension subscribed at http://sandbox:PORT (as extensions
/// written for Lambda do) receives, checked against the Telemetry API schema
/// (docs/lambda.md's spec table).
#[test]
fn telemetry_records_match_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records.jsonl");
    let port = free_port().to_string();
    let (o, log, sample) = failing(
        "",
        Some(""),
        &[
            "--env",
            "CS_EXT_SUBSCRIBE=telemetry",
            "--env",
            &format!("CS_EXT_LISTEN_PORT={port}"),
            "--env",
            &format!("CS_EXT_RECORDS={}", records.display()),
        ],
    );
    assert!(o.status.success(), "{}\n{log:?}", stderr(&o));
    let recs: Vec<serde_json::Value> = lines_of(&records)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |t: &str| {
        recs.iter()
            .find(|r| r["type"] == t)
            .unwrap_or_else(|| panic!("no {t} in {recs:?}"))
    };
    let init_start = &of("platform.initStart")["record"];
    assert!(
        init_start["instanceId"].as_str().is_some_and(|s| !s.is_empty()),
        "{init_start}"
    );
    assert_eq!(of("platform.runtimeDone")["record"]["status"], "success");
    // platform.end and platform.logsSubscription are the Logs API's.
    assert!(recs
        .iter()
        .all(|r| r["type"] != "platform.end" && r["type"] != "platform.logsSubscription"));
    for r in &recs {
        assert!(
            r["record"].get("errorType").is_none(),
            "errorType on a successful record: {r}"
        );
    }
    assert!(
        sample["metrics"]["telemetry.py-raw.delivered_batches"]
            .as_f64()
            .is_some_and(|n| n >= 1.0),
        "{}",
        sample["metrics"]
    );
    assert_eq!(sample["metrics"]["telemetry.py-raw.failed_batches"], 0.0);
}

/// An extension subscribed where nothing listens gets nothing: the run says so
/// (stderr) and counts the failed batches per subscriber in the JSON, instead of
/// a quiet success.
#[test]
fn undelivered_telemetry_is_reported() {
    let port = free_port().to_string();
    let (o, log, sample) = failing(
        "",
        Some(""),
        &[
            "--env",
            "CS_EXT_SUBSCRIBE=telemetry",
            "--env",
            &format!("CS_EXT_LISTEN_PORT={port}"),
        ],
    );
    assert!(o.status.success(), "{}\n{log:?}", stderr(&o));
    let failed = sample["metrics"]["telemetry.py-raw.failed_batches"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(failed >= 1.0, "{}", sample["metrics"]);
    assert_eq!(sample["metrics"]["telemetry.py-raw.delivered_batches"], 0.0);
    assert!(
        stderr(&o).contains("batches to extension py-raw at http://127.0.0.1:"),
        "{}",
        stderr(&o)
    );
}

/// The Logs API (2020-08-15) delivers its own stream: platform.start, .end,
/// .report, .logsSubscription and function records, none of the Telemetry API's
/// init records (AWS, "Using the Lambda Logs API").
#[test]
fn logs_api_delivers_the_logs_api_stream() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records.jsonl");
    let port = free_port().to_string();
    let (o, log, _) = failing(
        "",
        Some(""),
        &[
            "--env",
            "CS_EXT_SUBSCRIBE=logs",
            "--env",
            &format!("CS_EXT_LISTEN_PORT={port}"),
            "--env",
            &format!("CS_EXT_RECORDS={}", records.display()),
            "--env",
            "CS_RT_SAY=hello from the function",
        ],
    );
    assert!(o.status.success(), "{}\n{log:?}", stderr(&o));
    let recs: Vec<serde_json::Value> = lines_of(&records)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = recs.iter().filter_map(|r| r["type"].as_str()).collect();
    for t in [
        "platform.logsSubscription",
        "platform.start",
        "platform.end",
        "platform.report",
        "function",
    ] {
        assert!(types.contains(&t), "no {t} in {types:?}");
    }
    for t in [
        "platform.initStart",
        "platform.initRuntimeDone",
        "platform.initReport",
        "platform.telemetrySubscription",
    ] {
        assert!(!types.contains(&t), "the Telemetry API's {t} in {types:?}");
    }
    assert!(recs.iter().any(|r| r["type"] == "function"
        && r["record"]
            .as_str()
            .is_some_and(|l| l.contains("hello from the function"))));
}

/// `--invokes 3`: the cold invoke, then three warm ones in the same environment
/// (runtime and extension stay up), each with its own REPORT; only the first
/// shows Init Duration; the results carry them as the 1st and later requests.
#[test]
fn warm_invokes_each_get_a_report() {
    let (o, log, sample) = failing("", Some(""), &["--invokes", "3"]);
    assert!(o.status.success(), "{}\n{log:?}", stderr(&o));
    let reports: Vec<&String> = log.iter().filter(|l| l.starts_with("REPORT ")).collect();
    assert_eq!(reports.len(), 4, "{log:?}");
    assert!(reports[0].contains("\tInit Duration: "), "{}", reports[0]);
    for r in &reports[1..] {
        assert!(!r.contains("Init Duration"), "{r}");
    }
    let mut ids: Vec<String> = reports
        .iter()
        .map(|r| fields(r).first().map(|(_, v)| v.clone()).unwrap_or_default())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "request ids repeat: {reports:?}");
    // One INIT_START: the same environment served all four.
    assert_eq!(log.iter().filter(|l| l.starts_with("INIT_START")).count(), 1);
    assert_eq!(sample["requests_ns"].as_array().map(Vec::len), Some(4));
}

/// An error type header of any size is shortened before it reaches the log, the
/// terminal and the results.
#[test]
fn a_huge_error_type_header_is_shortened() {
    let huge = format!("CS_RT_ERROR_TYPE=Runtime.{}", "A".repeat(20_000));
    let (o, log, sample) = failing("error-type", None, &["--env", &huge]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let t = sample["outcome"]["error_type"].as_str().unwrap();
    assert!(
        t.starts_with("Runtime.AAA") && t.chars().count() <= 200,
        "{} chars",
        t.len()
    );
    let longest = |text: &str| text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(
        longest(&stdout(&o)) < 2_000,
        "stdout has a {}-char line",
        longest(&stdout(&o))
    );
    assert!(
        longest(&stderr(&o)) < 2_000,
        "stderr has a {}-char line",
        longest(&stderr(&o))
    );
    assert!(
        log.iter()
            .filter(|l| l.starts_with("REPORT "))
            .all(|l| l.len() < 2_000),
        "{log:?}"
    );
}

/// The REPORT lines' Durations (ms), in order.
fn report_durations(log: &[String]) -> Vec<f64> {
    log.iter()
        .filter(|l| l.starts_with("REPORT "))
        .map(|l| ms_field(&fields(l), "Duration"))
        .collect()
}

/// `--invokes`: a runtime that works 200 ms after posting each response (before
/// its next /next) is charged for it in no invoke; each Duration lies within the
/// runtime's own record of that invoke (CLOCK_MONOTONIC: from after its /next
/// returned to before its post, at least; from before its /next to after its post,
/// at most). What it prints after the last response still reaches the log.
#[test]
fn work_after_a_response_is_in_no_invokes_duration() {
    let dir = tempfile::tempdir().unwrap();
    let times = dir.path().join("times.txt");
    let (o, log, _) = failing(
        "",
        None,
        &[
            "--invokes",
            "3",
            "--env",
            "CS_RT_AFTER_MS=200",
            "--env",
            "CS_RT_AFTER_SAY=after-response",
            "--env",
            &format!("CS_RT_TIMES={}", times.display()),
        ],
    );
    assert!(o.status.success(), "{}\n{log:?}", stderr(&o));
    let durations = report_durations(&log);
    let record: Vec<Vec<u64>> = lines_of(&times)
        .iter()
        .map(|l| l.split(' ').map(|n| n.parse().unwrap()).collect())
        .collect();
    assert_eq!(durations.len(), 4, "{log:?}");
    assert_eq!(record.len(), 4, "{record:?}");
    // REPORT rounds to 0.01 ms.
    let ms = |ns: u64| ns as f64 / 1e6;
    for (i, (d, r)) in durations.iter().zip(&record).enumerate() {
        let (next, got, post, posted) = (r[0], r[1], r[2], r[3]);
        let (low, high) = (ms(post - got) - 0.01, ms(posted - next) + 0.01);
        assert!(
            (low..=high).contains(d),
            "invoke {}: Duration {d} ms, the runtime's own record allows [{low:.2}, {high:.2}]: {durations:?}",
            i + 1
        );
    }
    // Printed 200 ms after the fourth response, right before its /next.
    assert!(
        log.iter().any(|l| l == "after-response 4"),
        "the line printed after the last response is lost: {log:?}"
    );
}

/// A handler that sleeps past `--timeout 1` gets Duration = the timeout (as
/// Lambda's REPORT shows it), however late coldstart woke up.
#[test]
fn a_timed_out_invoke_lasts_the_timeout() {
    let (o, log, sample) = failing(
        "",
        None,
        &["--timeout", "1", "--env", "CS_RT_INVOKE_SLEEP_MS=3000"],
    );
    assert_eq!(o.status.code(), Some(1), "{}\n{log:?}", stderr(&o));
    let report = log
        .iter()
        .find(|l| l.starts_with("REPORT "))
        .unwrap_or_else(|| panic!("no REPORT: {log:?}"));
    assert!(report.contains("\tStatus: timeout"), "{report}");
    let d = ms_field(&fields(report), "Duration");
    // The cap is exact; the lower side allows the timer's rounding.
    assert!(
        (999.0..=1000.0).contains(&d),
        "Duration {d} ms at --timeout 1: {report}"
    );
    let first = sample["requests_ns"][0].as_f64().unwrap() / 1e6;
    assert!((999.0..=1000.0).contains(&first), "1st request {first} ms");
}

/// An extension A/B (the lambda-extension crate's extension, B's sleeping 100 ms
/// before its first /event/next): its ready mark gets the comparison Init
/// Duration gets, in the terminal's marks table and in the Markdown export. B
/// is slower by the injected 100 ms, its CI above 0.
#[test]
fn extension_ready_is_compared_like_init_duration() {
    let (Some(rt), Some(ext_bin)) = (client("rust-bootstrap"), client("rust-telemetry-extension")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ext = extensions_dir(dir.path(), &[("rust-ext", Path::new(&ext_bin))]);
    let (md, json) = (dir.path().join("ab.md"), dir.path().join("ab.json"));
    let m = marker("lambda-ext-ab");
    let port = format!("CS_TELEMETRY_PORT={}", free_port());
    let o = cs(&[
        "lambda",
        "--no-cgroup",
        "--runs",
        "12",
        "--warmup",
        "1",
        "--export-markdown",
        md.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
        "--runtime",
        &rt,
        "--extensions",
        ext.to_str().unwrap(),
        "--env",
        &m,
        "--env",
        &port,
        "--name",
        "A",
        "--name",
        "B",
        "--env",
        "CS_EXT_DELAY_MS=100",
    ])
    .no_store()
    .run();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(processes_with(&m).is_empty(), "left behind");
    let doc = json_file(&json);
    let mark_of = |v: usize, name: &str| {
        doc["variants"][v]["stats"]["marks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in variant {v}: {}", doc["variants"][v]["stats"]))
            .clone()
    };
    assert!(mark_of(0, "ext.rust-ext.ready").get("vs_baseline").is_none());
    let c = &mark_of(1, "ext.rust-ext.ready")["vs_baseline"];
    assert_eq!(c["verdict"], "slower", "{c}");
    let shift = c["shift"]["estimate"].as_f64().unwrap();
    let (lo, hi) = (
        c["shift"]["ci"][0].as_f64().unwrap(),
        c["shift"]["ci"][1].as_f64().unwrap(),
    );
    assert!(lo > 0.0, "the CI includes 0: [{lo}, {hi}]");
    // The injected 100 ms (a tokio sleep: 100 ms and a timer tick at most), give or
    // take the runs' own spread: half the CI's width, and 20 ms.
    let slack = 20.0 + (hi - lo) / 2.0;
    assert!(
        (shift - 100.0).abs() <= slack,
        "shift {shift:.1} ms [{lo:.1}, {hi:.1}] for an injected 100 ms"
    );
    // The same row in the terminal and in the Markdown: B's ready mark, vs A, slower.
    let row = |text: &str| {
        text.lines()
            .find(|l| l.contains(" B ") && l.contains("ext.rust-ext.ready"))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no B ext.rust-ext.ready row:\n{text}"))
    };
    let terminal = row(&stdout(&o));
    assert!(terminal.contains("vs A: slower, shift +"), "{terminal}");
    let markdown = std::fs::read_to_string(&md).unwrap();
    let md_row = row(&markdown);
    assert!(
        md_row.starts_with("| B | ext.rust-ext.ready | lambda |"),
        "{md_row}"
    );
    assert!(md_row.contains("vs A: slower, shift +"), "{md_row}");
    assert!(markdown.contains("| variant | mark | source |"), "{markdown}");
}
