//! What subscribed extensions receive: the Telemetry API's records, the Logs API's
//! stream, and batches that could not be delivered.

use super::*;

/// The records an extension subscribed at http://sandbox:PORT (as extensions
/// written for Lambda do) receives, checked against the Telemetry API schema
/// (docs/lambda.md's spec table).
#[test]
fn telemetry_records_match_the_schema() {
    let _turn = crate::common::beside();
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
    let _turn = crate::common::beside();
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
    let _turn = crate::common::beside();
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
