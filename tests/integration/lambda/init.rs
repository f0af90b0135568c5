//! Inits that fail, crash, hang or are interrupted: logged and reported as Lambda
//! does, and nothing left running.

use super::*;

#[test]
fn runtime_init_error_is_reported_as_lambda_does() {
    let _turn = crate::common::beside();
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
    let _turn = crate::common::beside();
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
    let _turn = crate::common::beside();
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
    let _turn = crate::common::beside();
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
    let _turn = crate::common::beside();
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
    let _turn = crate::common::beside();
    let (o, _log, sample) = failing("", Some("exit"), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(sample["outcome"]["error_type"], "Extension.Crash");
}

#[test]
fn ctrl_c_during_init_leaves_nothing() {
    let _turn = crate::common::beside();
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
