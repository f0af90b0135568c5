//! The telemetry of one environment, as the Telemetry API 2022-07-01 (and the
//! older Logs API 2020-08-15, same shape) delivers it: subscribers (added during
//! init through `telemetry_api`), buffering (maxItems / maxBytes / timeoutMs), and
//! delivery of JSON arrays by HTTP POST or NDJSON over TCP to a listener inside the
//! environment (`sandbox.localdomain` is loopback here).
//!
//! Records emitted before an extension subscribed (platform.initStart first) are
//! replayed to it when it subscribes, so every subscriber sees the whole init.

use coldstart_core::clock::now_ns;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long one batch is retried while the destination refuses connections.
const RETRY_FOR: Duration = Duration::from_secs(3);

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

/// Why a subscription was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Init is over: subscriptions are accepted only during init.
    Closed,
    /// The extension subscribed to the other API (Telemetry and Logs exclude each other).
    OtherApi,
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

    /// Subscribe extension `name` to `api` (`telemetry` or `logs`) for records
    /// of `types`, replaying the platform records emitted so far; a second
    /// subscription by the same extension replaces its first.
    pub fn subscribe(
        self: &Arc<Self>,
        name: &str,
        api: &'static str,
        types: Vec<String>,
        buffering: Buffering,
        destination: Destination,
    ) -> Result<(), Refused> {
        let index = {
            let mut s = self.lock();
            if s.closed {
                return Err(Refused::Closed);
            }
            if s.subs.iter().any(|x| x.name == name && x.api != api) {
                return Err(Refused::OtherApi);
            }
            if let Some(pos) = s.subs.iter().position(|x| x.name == name) {
                s.subs[pos].types = types;
                s.subs[pos].buffering = buffering;
                s.subs[pos].destination = destination;
                None
            } else {
                let queue: VecDeque<Arc<Item>> = s
                    .replay
                    .iter()
                    .filter(|x| wants(api, &types, x))
                    .cloned()
                    .collect();
                s.subs.push(Subscriber {
                    name: name.to_string(),
                    api,
                    types,
                    buffering,
                    destination,
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
            let task = tokio::spawn(self.clone().deliver_loop(i));
            self.tasks.lock().unwrap_or_else(|p| p.into_inner()).push(task);
        }
        Ok(())
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
    let date = coldstart_core::clock::utc(secs);
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
}
