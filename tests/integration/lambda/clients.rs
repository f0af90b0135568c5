//! Runtimes and extensions built on real Lambda clients (aws-lambda-go, the
//! lambda_runtime and lambda-extension crates, the raw HTTP API): the event order,
//! the REPORT line, Init Duration, and checkpoints that become marks.

use super::*;

#[test]
fn go_runtime_with_two_extensions_init_invoke_shutdown() {
    let _turn = crate::common::beside();
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
    let _turn = crate::common::beside();
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
    let _turn = crate::common::beside();
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
    let _turn = crate::common::beside();
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
