//! An external extension built with the `lambda-extension` crate (the AWS client,
//! not ours), subscribed to the Telemetry API, or to the Logs API when it runs
//! under the name CS_LOGS_EXTENSION (Lambda lets one extension use only one of
//! the two). The crate subscribes at http://sandbox.localdomain:PORT.
//!
//! Environment (all optional):
//! - CS_TELEMETRY_PORT: port of its telemetry listener (default 9003, the crate's).
//! - CS_TELEMETRY_OUT: append one line per telemetry record received: `<type>`.
//! - CS_TELEMETRY_RECORDS: append each telemetry record as the crate parsed it,
//!   one JSON object per line (`{"time", "type", "record"}`).
//! - CS_LOGS_EXTENSION: the name under which it subscribes to the Logs API
//!   (platform, function, extension) instead, with a listener on CS_LOGS_PORT
//!   (default 9002, the crate's); CS_LOGS_RECORDS: append each Logs API record as
//!   the crate parsed it, one JSON object per line.
//! - CS_READY_DIR: write `<extension name>` there holding the CLOCK_MONOTONIC ns
//!   instant right before the extension's first /event/next (after register and
//!   the telemetry subscription).
//! - CS_EXT_DELAY_MS: extra init work before that instant.

use lambda_extension::{
    service_fn, Error, Extension, LambdaEvent, LambdaLog, LambdaLogRecord, LambdaTelemetry,
    NextEvent, SharedService,
};
use serde_json::{json, Value};
use std::io::Write;

fn monotonic_ns() -> u128 {
    // Same clock as coldstart (CLOCK_MONOTONIC); std's Instant does not expose it.
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: clock_gettime writes into the struct we own; CLOCK_MONOTONIC is 1 on Linux.
    unsafe { clock_gettime(1, &mut ts) };
    ts.sec as u128 * 1_000_000_000 + ts.nsec as u128
}

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

unsafe extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// The record's `type` as the crate parsed it (e.g. `platform.initStart`).
fn record_type(t: &LambdaTelemetry) -> String {
    serde_json::to_value(t)
        .ok()
        .and_then(|v| v.get("type")?.as_str().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// A Logs API record as the crate parsed it (LambdaLog is not Serialize).
fn log_json(l: &LambdaLog) -> Value {
    let (kind, record) = match &l.record {
        LambdaLogRecord::Function(s) => ("function", json!(s)),
        LambdaLogRecord::Extension(s) => ("extension", json!(s)),
        LambdaLogRecord::PlatformStart { request_id } => ("platform.start", json!({"requestId": request_id})),
        LambdaLogRecord::PlatformEnd { request_id } => ("platform.end", json!({"requestId": request_id})),
        LambdaLogRecord::PlatformReport { request_id, metrics } => (
            "platform.report",
            json!({"requestId": request_id, "metrics": {
                "durationMs": metrics.duration_ms,
                "billedDurationMs": metrics.billed_duration_ms,
                "memorySizeMB": metrics.memory_size_mb,
                "maxMemoryUsedMB": metrics.max_memory_used_mb,
                "initDurationMs": metrics.init_duration_ms,
            }}),
        ),
        LambdaLogRecord::PlatformFault(s) => ("platform.fault", json!(s)),
        LambdaLogRecord::PlatformExtension { name, state, events } => (
            "platform.extension",
            json!({"name": name, "state": state, "events": events}),
        ),
        LambdaLogRecord::PlatformLogsSubscription { name, state, types } => (
            "platform.logsSubscription",
            json!({"name": name, "state": state, "types": types}),
        ),
        LambdaLogRecord::PlatformLogsDropped { reason, dropped_records, dropped_bytes } => (
            "platform.logsDropped",
            json!({"reason": reason, "droppedRecords": dropped_records, "droppedBytes": dropped_bytes}),
        ),
        LambdaLogRecord::PlatformRuntimeDone { request_id, status } => (
            "platform.runtimeDone",
            json!({"requestId": request_id, "status": status}),
        ),
    };
    json!({"time": l.time.to_rfc3339(), "type": kind, "record": record})
}

fn append(path: &Option<String>, lines: impl Iterator<Item = String>) -> Result<(), Error> {
    if let Some(path) = path {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        for l in lines {
            writeln!(f, "{l}")?;
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let name = std::env::args()
        .next()
        .and_then(|a| std::path::Path::new(&a).file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "rust-telemetry".into());
    let port: u16 = std::env::var("CS_TELEMETRY_PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(9003);
    let out = std::env::var("CS_TELEMETRY_OUT").ok();
    let records = std::env::var("CS_TELEMETRY_RECORDS").ok();
    let telemetry = service_fn(move |batch: Vec<LambdaTelemetry>| {
        let (out, records) = (out.clone(), records.clone());
        async move {
            append(&out, batch.iter().map(record_type))?;
            append(
                &records,
                batch.iter().map(|t| serde_json::to_string(t).unwrap_or_default()),
            )?;
            Ok::<(), Error>(())
        }
    });
    let logs_port: Option<u16> = (std::env::var("CS_LOGS_EXTENSION").ok().as_deref() == Some(name.as_str()))
        .then(|| std::env::var("CS_LOGS_PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(9002));
    let log_records = std::env::var("CS_LOGS_RECORDS").ok();
    let logs = service_fn(move |batch: Vec<LambdaLog>| {
        let records = log_records.clone();
        async move {
            append(&records, batch.iter().map(|l| log_json(l).to_string()))?;
            Ok::<(), Error>(())
        }
    });
    let events = service_fn(|event: LambdaEvent| async move {
        if let NextEvent::Shutdown(_) = event.next {
            std::process::exit(0);
        }
        Ok::<(), Error>(())
    });
    let extension = Extension::new()
        .with_extension_name(Box::leak(name.clone().into_boxed_str()))
        .with_events(&["INVOKE", "SHUTDOWN"])
        .with_events_processor(events);
    // The builder's type changes with the processor: two paths.
    match logs_port {
        Some(logs_port) => {
            let registered = extension
                .with_log_types(&["platform", "function", "extension"])
                .with_log_port_number(logs_port)
                .with_logs_processor(SharedService::new(logs))
                .register()
                .await?;
            ready(&name).await?;
            registered.run().await
        }
        None => {
            let registered = extension
                .with_telemetry_types(&["platform", "function", "extension"])
                .with_telemetry_port_number(port)
                .with_telemetry_processor(SharedService::new(telemetry))
                .register()
                .await?;
            ready(&name).await?;
            registered.run().await
        }
    }
}

/// The optional init work, then the ready instant (CS_READY_DIR).
async fn ready(name: &str) -> Result<(), Error> {
    if let Some(ms) = std::env::var("CS_EXT_DELAY_MS").ok().and_then(|v| v.parse::<u64>().ok()) {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    if let Ok(dir) = std::env::var("CS_READY_DIR") {
        std::fs::write(std::path::Path::new(&dir).join(name), monotonic_ns().to_string())?;
    }
    Ok(())
}
