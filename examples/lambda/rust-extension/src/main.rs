//! An external extension built with the `lambda-extension` crate (the AWS client,
//! not ours), subscribed to the Telemetry API.
//!
//! Environment (all optional):
//! - CS_TELEMETRY_PORT: port of its telemetry listener (default 9003, the crate's).
//! - CS_TELEMETRY_OUT: append one line per telemetry record received: `<type>`.
//! - CS_READY_DIR: write `<extension name>` there holding the CLOCK_MONOTONIC ns
//!   instant right before the extension's first /event/next (after register and
//!   the telemetry subscription).
//! - CS_EXT_DELAY_MS: extra init work before that instant.

use lambda_extension::{
    service_fn, Error, Extension, LambdaEvent, LambdaTelemetry, NextEvent,
    SharedService,
};
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

#[tokio::main]
async fn main() -> Result<(), Error> {
    let name = std::env::args()
        .next()
        .and_then(|a| std::path::Path::new(&a).file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "rust-telemetry".into());
    let port: u16 = std::env::var("CS_TELEMETRY_PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(9003);
    let out = std::env::var("CS_TELEMETRY_OUT").ok();
    let telemetry = service_fn(move |batch: Vec<LambdaTelemetry>| {
        let out = out.clone();
        async move {
            if let Some(path) = out {
                let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
                for t in &batch {
                    writeln!(f, "{}", record_type(t))?;
                }
            }
            Ok::<(), Error>(())
        }
    });
    let events = service_fn(|event: LambdaEvent| async move {
        if let NextEvent::Shutdown(_) = event.next {
            std::process::exit(0);
        }
        Ok::<(), Error>(())
    });
    let registered = Extension::new()
        .with_extension_name(Box::leak(name.clone().into_boxed_str()))
        .with_events(&["INVOKE", "SHUTDOWN"])
        .with_events_processor(events)
        .with_telemetry_types(&["platform", "function", "extension"])
        .with_telemetry_port_number(port)
        .with_telemetry_processor(SharedService::new(telemetry))
        .register()
        .await?;
    if let Some(ms) = std::env::var("CS_EXT_DELAY_MS").ok().and_then(|v| v.parse::<u64>().ok()) {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    if let Ok(dir) = std::env::var("CS_READY_DIR") {
        std::fs::write(std::path::Path::new(&dir).join(&name), monotonic_ns().to_string())?;
    }
    registered.run().await
}
