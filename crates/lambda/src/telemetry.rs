//! Telemetry API 2022-07-01 (and the older Logs API 2020-08-15, same shape):
//! subscriptions during init, buffering (maxItems / maxBytes / timeoutMs), and
//! delivery of JSON arrays by HTTP POST or NDJSON over TCP to a listener inside the
//! environment (`sandbox.localdomain` is loopback here).
//!
//! Records emitted before an extension subscribed (platform.initStart first) are
//! replayed to it when it subscribes, so every subscriber sees the whole init.

use super::server::{error, Env};
use crate::clock::now_ns;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::put;
use axum::Router;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

const TELEMETRY_SCHEMAS: [&str; 3] = ["2022-07-01", "2022-12-13", "2025-01-29"];
const LOGS_SCHEMAS: [&str; 2] = ["2020-08-15", "2021-03-18"];
/// How long one batch is retried while the destination refuses connections.
const RETRY_FOR: Duration = Duration::from_secs(3);

pub fn routes() -> Router<Arc<Env>> {
    Router::new()
        .route("/2022-07-01/telemetry", put(subscribe_telemetry))
        .route("/2020-08-15/logs", put(subscribe_logs))
}

#[derive(Debug, Clone, Copy)]
pub struct Buffering {
    pub max_items: usize,
    pub max_bytes: usize,
    pub timeout_ms: u64,
}

impl Default for Buffering {
    fn default() -> Self {
        Buffering {
            max_items: 10_000,
            max_bytes: 262_144,
            timeout_ms: 1_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Destination {
    /// POST a JSON array to this loopback URL.
    Http(String),
    /// NDJSON to this loopback port.
    Tcp(u16),
}

struct Item {
    category: &'static str,
    /// The record's `type` (platform.start, function, …).
    kind: String,
    json: String,
}

/// Platform records the Logs API delivers (AWS, "Using the Lambda Logs API": its
/// message types); the init records and telemetrySubscription are the Telemetry
/// API's only.
const LOGS_API_PLATFORM: [&str; 8] = [
    "platform.start",
    "platform.end",
    "platform.report",
    "platform.extension",
    "platform.logsSubscription",
    "platform.logsDropped",
    "platform.fault",
    "platform.runtimeDone",
];
/// Platform records only the Logs API has.
const LOGS_API_ONLY: [&str; 2] = ["platform.end", "platform.logsSubscription"];

/// Does a subscriber of `api` with these `types` get this record?
fn wants(api: &str, types: &[String], item: &Item) -> bool {
    if !types.iter().any(|t| t == item.category) {
        return false;
    }
    if item.category != "platform" {
        return true;
    }
    if api == "logs" {
        LOGS_API_PLATFORM.contains(&item.kind.as_str())
    } else {
        !LOGS_API_ONLY.contains(&item.kind.as_str())
    }
}

struct Subscriber {
    name: String,
    api: &'static str,
    types: Vec<String>,
    buffering: Buffering,
    destination: Destination,
    queue: VecDeque<Arc<Item>>,
    /// When the oldest queued item was queued.
    oldest_ns: u64,
    in_flight: bool,
    /// Batches the listener accepted / that failed (refused, unreachable, 4xx/5xx).
    delivered: usize,
    failed: usize,
}

#[derive(Default)]
struct BusState {
    replay: Vec<Arc<Item>>,
    subs: Vec<Subscriber>,
    closed: bool,
    flushing: bool,
}

/// Telemetry of one execution environment.
pub struct Bus {
    state: Mutex<BusState>,
    changed: watch::Sender<u64>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Default for Bus {
    fn default() -> Self {
        Bus {
            state: Mutex::default(),
            changed: watch::Sender::new(0),
            tasks: Mutex::default(),
        }
    }
}

/// What one subscriber was sent, in batches; a batch still queued or in flight
/// when the environment ended counts as failed (it never arrived).
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub extension: String,
    /// `telemetry` or `logs`.
    pub api: &'static str,
    pub destination: String,
    pub delivered_batches: usize,
    pub failed_batches: usize,
}

impl Bus {
    fn lock(&self) -> MutexGuard<'_, BusState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Emit one record (`type` e.g. `platform.initStart`, or `function` /
    /// `extension` for a log line) to every subscriber of its category.
    pub fn emit(&self, kind: &str, record: Value) {
        let category = match kind {
            "function" => "function",
            "extension" => "extension",
            _ => "platform",
        };
        let json = json!({"time": iso8601_now(), "type": kind, "record": record}).to_string();
        let item = Arc::new(Item {
            category,
            kind: kind.to_string(),
            json,
        });
        {
            let mut s = self.lock();
            if category == "platform" {
                s.replay.push(item.clone());
            }
            let now = now_ns();
            for sub in s.subs.iter_mut().filter(|x| wants(x.api, &x.types, &item)) {
                if sub.queue.is_empty() {
                    sub.oldest_ns = now;
                }
                sub.queue.push_back(item.clone());
            }
        }
        self.bump();
    }

    /// No more subscriptions (the end of init).
    pub fn close(&self) {
        self.lock().closed = true;
    }

    /// Deliver everything queued now, waiting at most until `deadline_ns`.
    pub async fn flush(&self, deadline_ns: u64) -> bool {
        self.lock().flushing = true;
        self.bump();
        let mut rx = self.changed.subscribe();
        let left = Duration::from_nanos(deadline_ns.saturating_sub(now_ns()));
        let done = tokio::time::timeout(
            left,
            rx.wait_for(|_| {
                self.lock()
                    .subs
                    .iter()
                    .all(|s| s.queue.is_empty() && !s.in_flight)
            }),
        )
        .await;
        self.lock().flushing = false;
        matches!(done, Ok(Ok(_)))
    }

    /// Stop every delivery task; returns what each subscriber was sent.
    pub fn stop(&self) -> Vec<Delivery> {
        for t in self.tasks.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
            t.abort();
        }
        self.lock()
            .subs
            .iter()
            .map(|s| Delivery {
                extension: s.name.clone(),
                api: s.api,
                destination: match &s.destination {
                    Destination::Http(u) => u.clone(),
                    Destination::Tcp(p) => format!("tcp 127.0.0.1:{p}"),
                },
                delivered_batches: s.delivered,
                failed_batches: s.failed + usize::from(s.in_flight) + usize::from(!s.queue.is_empty()),
            })
            .collect()
    }

    /// Deliver batches to subscriber `i` for as long as the environment lives.
    async fn deliver_loop(self: Arc<Self>, i: usize) {
        let mut rx = self.changed.subscribe();
        let mut tcp: Option<tokio::net::TcpStream> = None;
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(5)).build();
        loop {
            // Wait until a batch is due: full, flushed, or its oldest record timed out.
            let batch = loop {
                let due = {
                    let mut s = self.lock();
                    let flushing = s.flushing;
                    let sub = &mut s.subs[i];
                    let bytes: usize = sub.queue.iter().map(|x| x.json.len()).sum();
                    let age_ms = now_ns().saturating_sub(sub.oldest_ns) / 1_000_000;
                    let ready = !sub.queue.is_empty()
                        && (flushing
                            || sub.queue.len() >= sub.buffering.max_items
                            || bytes >= sub.buffering.max_bytes
                            || age_ms >= sub.buffering.timeout_ms);
                    if ready {
                        let mut batch = Vec::new();
                        let mut size = 0;
                        while let Some(x) = sub.queue.front() {
                            if !batch.is_empty()
                                && (batch.len() >= sub.buffering.max_items
                                    || size + x.json.len() > sub.buffering.max_bytes)
                            {
                                break;
                            }
                            size += x.json.len();
                            batch.extend(sub.queue.pop_front());
                        }
                        sub.oldest_ns = now_ns();
                        sub.in_flight = true;
                        Ok((batch, sub.destination.clone()))
                    } else if sub.queue.is_empty() {
                        Err(None)
                    } else {
                        Err(Some(sub.buffering.timeout_ms.saturating_sub(age_ms)))
                    }
                };
                match due {
                    Ok(b) => break b,
                    Err(wait_ms) => {
                        let wait = Duration::from_millis(wait_ms.unwrap_or(3_600_000).max(1));
                        let _ = tokio::time::timeout(wait, rx.changed()).await;
                    }
                }
            };
            let (items, destination) = batch;
            let ok = match &destination {
                Destination::Http(url) => post_batch(&agent, url, &items).await,
                Destination::Tcp(port) => send_ndjson(&mut tcp, *port, &items).await,
            };
            {
                let mut s = self.lock();
                let sub = &mut s.subs[i];
                sub.in_flight = false;
                if ok {
                    sub.delivered += 1;
                } else {
                    sub.failed += 1;
                }
            }
            self.bump();
        }
    }
}

async fn post_batch(agent: &ureq::Agent, url: &str, items: &[Arc<Item>]) -> bool {
    let body = format!(
        "[{}]",
        items
            .iter()
            .map(|x| x.json.as_str())
            .collect::<Vec<_>>()
            .join(",")
    );
    let (agent, url) = (agent.clone(), url.to_string());
    let sent = tokio::task::spawn_blocking(move || {
        let start = now_ns();
        let mut backoff = Duration::from_millis(5);
        loop {
            match agent
                .post(&url)
                .set("Content-Type", "application/json")
                .send_string(&body)
            {
                Ok(_) => return true,
                // The listener said no: Lambda does not resend a rejected batch.
                Err(ureq::Error::Status(..)) => return false,
                Err(ureq::Error::Transport(_)) if now_ns() - start < RETRY_FOR.as_nanos() as u64 => {
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_millis(200));
                }
                Err(_) => return false,
            }
        }
    })
    .await;
    sent.unwrap_or(false)
}

async fn send_ndjson(stream: &mut Option<tokio::net::TcpStream>, port: u16, items: &[Arc<Item>]) -> bool {
    let mut text = String::new();
    for x in items {
        text.push_str(&x.json);
        text.push('\n');
    }
    let start = now_ns();
    let mut backoff = Duration::from_millis(5);
    loop {
        if stream.is_none() {
            match tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
                Ok(s) => *stream = Some(s),
                Err(_) if now_ns() - start < RETRY_FOR.as_nanos() as u64 => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(200));
                    continue;
                }
                Err(_) => return false,
            }
        }
        if let Some(s) = stream.as_mut() {
            if s.write_all(text.as_bytes()).await.is_ok() {
                return true;
            }
        }
        *stream = None;
        if now_ns() - start >= RETRY_FOR.as_nanos() as u64 {
            return false;
        }
    }
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
    let bus = env.telemetry.clone();
    let index = {
        let mut s = bus.lock();
        if s.closed {
            return error(
                StatusCode::FORBIDDEN,
                &format!("{prefix}.SubscriptionClosed"),
                "subscriptions are accepted only during init",
            );
        }
        if s.subs.iter().any(|x| x.name == name && x.api != api) {
            return invalid("the Telemetry API and the Logs API are mutually exclusive");
        }
        // A second subscription by the same extension replaces the first.
        if let Some(pos) = s.subs.iter().position(|x| x.name == name) {
            s.subs[pos].types = req.0.clone();
            s.subs[pos].buffering = req.1;
            s.subs[pos].destination = req.2.clone();
            None
        } else {
            let queue: VecDeque<Arc<Item>> = s
                .replay
                .iter()
                .filter(|x| wants(api, &req.0, x))
                .cloned()
                .collect();
            s.subs.push(Subscriber {
                name: name.clone(),
                api,
                types: req.0.clone(),
                buffering: req.1,
                destination: req.2,
                queue,
                oldest_ns: now_ns(),
                in_flight: false,
                delivered: 0,
                failed: 0,
            });
            Some(s.subs.len() - 1)
        }
    };
    if let Some(i) = index {
        let task = tokio::spawn(bus.clone().deliver_loop(i));
        bus.tasks.lock().unwrap_or_else(|p| p.into_inner()).push(task);
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

/// `2026-11-22T02:57:49.123Z`, the timestamp format of telemetry records.
pub fn iso8601_now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    iso8601(now.as_millis() as i64)
}

pub fn iso8601(unix_ms: i64) -> String {
    let secs = unix_ms.div_euclid(1000);
    let ms = unix_ms.rem_euclid(1000);
    let date = coldstart_report::history::utc(secs);
    let (day, hm) = date.split_once(' ').unwrap_or((&date, "00:00"));
    format!("{day}T{hm}:{:02}.{ms:03}Z", secs.rem_euclid(60))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_795_000_000_999), "2026-11-18T11:06:40.999Z");
    }

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
