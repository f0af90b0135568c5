//! Telemetry API 2022-07-01 and Logs API 2020-08-15: an extension's
//! subscription (during init), checked and handed to the environment's
//! telemetry bus (`telemetry`), which buffers and delivers.

use super::api::{error, Env};
use super::telemetry::{Buffering, Destination, Refused};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::put;
use axum::Router;
use serde_json::{json, Value};
use std::sync::Arc;

const TELEMETRY_SCHEMAS: [&str; 3] = ["2022-07-01", "2022-12-13", "2025-01-29"];
const LOGS_SCHEMAS: [&str; 2] = ["2020-08-15", "2021-03-18"];

pub fn routes() -> Router<Arc<Env>> {
    Router::new()
        .route("/2022-07-01/telemetry", put(subscribe_telemetry))
        .route("/2020-08-15/logs", put(subscribe_logs))
}

async fn subscribe_telemetry(state: State<Arc<Env>>, headers: HeaderMap, body: Bytes) -> Response {
    subscribe(state, headers, body, "telemetry")
}

async fn subscribe_logs(state: State<Arc<Env>>, headers: HeaderMap, body: Bytes) -> Response {
    subscribe(state, headers, body, "logs")
}

fn invalid(message: &str) -> Response {
    error(StatusCode::BAD_REQUEST, "ValidationError", message)
}

fn subscribe(State(env): State<Arc<Env>>, headers: HeaderMap, body: Bytes, api: &'static str) -> Response {
    let prefix = if api == "logs" { "Logs" } else { "Telemetry" };
    let Some(id) = headers
        .get("Lambda-Extension-Identifier")
        .and_then(|v| v.to_str().ok())
    else {
        return error(
            StatusCode::FORBIDDEN,
            "Extension.MissingExtensionIdentifier",
            "missing Lambda-Extension-Identifier header",
        );
    };
    let Some(name) = env
        .shared
        .lock()
        .extensions
        .iter()
        .find(|e| e.id == id)
        .map(|e| e.name.clone())
    else {
        return error(
            StatusCode::FORBIDDEN,
            "Extension.UnknownExtensionIdentifier",
            "no extension is registered with this identifier",
        );
    };
    let req = match parse_subscription(&body, api) {
        Ok(r) => r,
        Err(msg) => return invalid(&msg),
    };
    let bus = &env.telemetry;
    match bus.subscribe(&name, api, req.0.clone(), req.1, req.2) {
        Ok(()) => {}
        Err(Refused::Closed) => {
            return error(
                StatusCode::FORBIDDEN,
                &format!("{prefix}.SubscriptionClosed"),
                "subscriptions are accepted only during init",
            )
        }
        Err(Refused::OtherApi) => {
            return invalid("the Telemetry API and the Logs API are mutually exclusive")
        }
    }
    env.shared.update(|s| {
        if let Some(e) = s.extensions.iter_mut().find(|e| e.name == name) {
            e.telemetry = Some(req.0.clone());
        }
    });
    let kind = if api == "telemetry" {
        "platform.telemetrySubscription"
    } else {
        "platform.logsSubscription"
    };
    bus.emit(kind, json!({"name": name, "state": "Subscribed", "types": req.0}));
    (StatusCode::OK, "OK").into_response()
}

/// (types, buffering, destination) from a subscription body, or what is wrong.
fn parse_subscription(body: &[u8], api: &str) -> Result<(Vec<String>, Buffering, Destination), String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("body is not JSON: {e}"))?;
    let schemas: &[&str] = if api == "logs" {
        &LOGS_SCHEMAS
    } else {
        &TELEMETRY_SCHEMAS
    };
    let schema = v
        .get("schemaVersion")
        .and_then(Value::as_str)
        .unwrap_or(schemas[0]);
    if !schemas.contains(&schema) {
        return Err(format!(
            "schemaVersion {schema} is not one of {}",
            schemas.join(", ")
        ));
    }
    let types: Vec<String> = v
        .get("types")
        .and_then(Value::as_array)
        .ok_or("types must be a list, e.g. [\"platform\", \"function\"]")?
        .iter()
        .map(|t| t.as_str().map(str::to_string).ok_or("types must be strings"))
        .collect::<Result<_, _>>()?;
    if types.is_empty() {
        return Err("types must not be empty".into());
    }
    if let Some(t) = types
        .iter()
        .find(|t| !["platform", "function", "extension"].contains(&t.as_str()))
    {
        return Err(format!("unknown type {t}: use platform, function or extension"));
    }
    let mut buffering = Buffering::default();
    if let Some(b) = v.get("buffering") {
        let field = |name: &str, lo: u64, hi: u64, default: u64| -> Result<u64, String> {
            match b.get(name) {
                None | Some(Value::Null) => Ok(default),
                Some(x) => x
                    .as_u64()
                    .filter(|n| (lo..=hi).contains(n))
                    .ok_or(format!("buffering.{name} must be an integer in {lo}..={hi}")),
            }
        };
        buffering.max_items = field("maxItems", 1_000, 10_000, 10_000)? as usize;
        buffering.max_bytes = field("maxBytes", 262_144, 1_048_576, 262_144)? as usize;
        buffering.timeout_ms = field("timeoutMs", 25, 30_000, 1_000)?;
    }
    let d = v.get("destination").ok_or("destination is required")?;
    let destination = match d.get("protocol").and_then(Value::as_str) {
        Some("HTTP") => {
            let uri = d
                .get("URI")
                .and_then(Value::as_str)
                .ok_or("destination.URI is required for HTTP")?;
            Destination::Http(loopback_url(uri)?)
        }
        Some("TCP") => Destination::Tcp(
            d.get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .filter(|p| *p > 0)
                .ok_or("destination.port must be a TCP port")?,
        ),
        _ => return Err("destination.protocol must be HTTP or TCP".into()),
    };
    Ok((types, buffering, destination))
}

/// The destination must be inside the environment: sandbox.localdomain (as on
/// Lambda) or a loopback name; it is delivered to 127.0.0.1.
fn loopback_url(uri: &str) -> Result<String, String> {
    let mut url = url::Url::parse(uri).map_err(|e| format!("destination.URI {uri}: {e}"))?;
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    if !["sandbox.localdomain", "sandbox", "localhost", "127.0.0.1"].contains(&host.as_str()) {
        return Err(format!(
            "destination.URI {uri} is outside the execution environment: use http://sandbox.localdomain:PORT"
        ));
    }
    if url.port().is_none() {
        return Err(format!("destination.URI {uri} has no port"));
    }
    url.set_host(Some("127.0.0.1"))
        .map_err(|e| format!("destination.URI {uri}: {e}"))?;
    Ok(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscription_validation() {
        let ok = br#"{"schemaVersion":"2022-07-01","types":["platform","function"],
            "buffering":{"maxItems":1000,"maxBytes":262144,"timeoutMs":25},
            "destination":{"protocol":"HTTP","URI":"http://sandbox.localdomain:8080/x"}}"#;
        let (types, b, d) = parse_subscription(ok, "telemetry").unwrap();
        assert_eq!(types, ["platform", "function"]);
        assert_eq!((b.max_items, b.timeout_ms), (1000, 25));
        assert_eq!(d, Destination::Http("http://127.0.0.1:8080/x".into()));
        let tcp = br#"{"types":["platform"],"destination":{"protocol":"TCP","port":9999}}"#;
        assert_eq!(
            parse_subscription(tcp, "telemetry").unwrap().2,
            Destination::Tcp(9999)
        );
        for bad in [
            &br#"{"types":["platform"],"buffering":{"timeoutMs":5},"destination":{"protocol":"TCP","port":1}}"#[..],
            br#"{"types":["kernel"],"destination":{"protocol":"TCP","port":1}}"#,
            br#"{"types":["platform"],"destination":{"protocol":"HTTP","URI":"http://example.com:80/"}}"#,
            br#"{"schemaVersion":"1999-01-01","types":["platform"],"destination":{"protocol":"TCP","port":1}}"#,
        ] {
            assert!(parse_subscription(bad, "telemetry").is_err());
        }
    }
}
