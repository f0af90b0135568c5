//! The OTLP/HTTP server on 127.0.0.1: its own thread and current-thread tokio
//! runtime, `POST /v1/traces` decoded and kept within [`Limits`], metrics and
//! logs accepted unread, and the clocks' offset sampled at start and finish.

use super::decode::{decode, decompress, flatten, Encoding};
use super::kept::{Limits, Received};
use super::section::{build_section, Clock};
use anyhow::{anyhow, Context, Result};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use coldstart_core::clock;
use coldstart_core::sample::Section;
use prost::Message;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::oneshot;

/// How long `finish` lets open requests complete before cutting them off (a target
/// that is still running may hold a connection open forever).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// A running OTLP/HTTP receiver.
pub struct Receiver {
    addr: SocketAddr,
    received: Arc<Mutex<Received>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC when serving began, ns.
    offset_start: i128,
}

impl Receiver {
    /// Binds 127.0.0.1:0 and serves `POST /v1/traces` on a background thread with
    /// its own current-thread tokio runtime. The socket listens before this returns,
    /// so a target spawned afterwards can connect at once.
    pub fn start() -> Result<Receiver> {
        Self::start_with(Limits::default())
    }

    /// A receiver that keeps no span (it counts them): for runs whose spans nobody
    /// reads, so the program exports as in the runs that do, at no memory cost.
    pub fn sink() -> Result<Receiver> {
        Self::start_with(Limits {
            spans: 0,
            bytes: 0,
            ..Limits::default()
        })
    }

    /// [`Receiver::start`] with other limits on what is kept.
    pub fn start_with(limits: Limits) -> Result<Receiver> {
        let offset_start = realtime_offset_ns();
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
            .context("binding the OTLP receiver on 127.0.0.1")?;
        let addr = listener
            .local_addr()
            .context("local address of the OTLP receiver")?;
        listener
            .set_nonblocking(true)
            .context("making the OTLP receiver's socket non-blocking")?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the OTLP receiver's runtime")?;
        // Registering the socket needs the runtime's reactor; doing it here keeps every
        // fallible step out of the thread, where an error could only be reported late.
        let listener = {
            let _inside = rt.enter();
            tokio::net::TcpListener::from_std(listener).context("registering the OTLP receiver's socket")?
        };
        let received = Arc::new(Mutex::new(Received {
            limits,
            ..Received::default()
        }));
        let app = axum::Router::new()
            .route("/v1/traces", post(traces))
            .route("/v1/metrics", post(other_signal))
            .route("/v1/logs", post(other_signal))
            .layer(DefaultBodyLimit::max(limits.body))
            .with_state(received.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("otlp-receiver".into())
            .spawn(move || {
                rt.block_on(async move {
                    let (drain, drained) = oneshot::channel::<()>();
                    let mut server = tokio::spawn(async move {
                        let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                            drained.await.ok();
                        });
                        if let Err(e) = serve.await {
                            coldstart_core::out::errln!("coldstart: OTLP receiver stopped: {e}");
                        }
                    });
                    // Stopped by `finish`, or by the Receiver being dropped.
                    stopped.await.ok();
                    drain.send(()).ok();
                    if tokio::time::timeout(SHUTDOWN_GRACE, &mut server).await.is_err() {
                        server.abort();
                    }
                })
            })
            .context("starting the OTLP receiver's thread")?;
        Ok(Receiver {
            addr,
            received,
            stop: Some(stop),
            thread: Some(thread),
            offset_start,
        })
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The environment that sends the target's spans here.
    ///
    /// The OTLP exporter spec has SDKs append `/v1/traces` to OTEL_EXPORTER_OTLP_ENDPOINT
    /// for OTLP/HTTP, and use OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as-is; the per-signal
    /// variable wins, so it is set too (a value inherited from the user's shell would
    /// otherwise divert the traces). The protocol is set because some SDKs and agents
    /// default to gRPC, which this receiver does not speak; http/protobuf is the spec's
    /// default and every SDK's HTTP exporter supports it. Exporter *selection*
    /// (OTEL_TRACES_EXPORTER) is left to the program: it may have none configured.
    pub fn env(&self) -> Vec<(String, String)> {
        let base = self.endpoint();
        [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", base.clone()),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", format!("{base}/v1/traces")),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf".to_string()),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Stop serving and turn the spans received into a Section (source "otlp"),
    /// times relative to `t0_mono_ns` (CLOCK_MONOTONIC ns at the target's spawn).
    pub fn finish(mut self, t0_mono_ns: u64) -> Result<Section> {
        self.shutdown()?;
        let offset_end = realtime_offset_ns();
        let received = std::mem::take(&mut *lock(&self.received));
        Ok(build_section(
            received,
            &Clock {
                offset_start: self.offset_start,
                offset_end,
                t0_mono_ns,
            },
        ))
    }

    fn shutdown(&mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
        if let Some(thread) = self.thread.take() {
            thread
                .join()
                .map_err(|_| anyhow!("the OTLP receiver's thread panicked"))?;
        }
        Ok(())
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        // A Receiver abandoned on an error path must not leave its port serving.
        self.shutdown().ok();
    }
}

/// A mutex poisoned by a panicking handler still holds consistent data (every
/// update is a single push or increment).
fn lock(m: &Mutex<Received>) -> MutexGuard<'_, Received> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC, ns: the realtime reading bracketed by two
/// monotonic ones, keeping the tightest of a few brackets (a preemption between
/// the reads would skew one sample by its length).
fn realtime_offset_ns() -> i128 {
    let mut best: Option<(u64, i128)> = None;
    for _ in 0..5 {
        let before = clock::now_ns();
        let real = realtime_ns();
        let after = clock::now_ns();
        let width = after.saturating_sub(before);
        let offset = real as i128 - (before as i128 + after as i128) / 2;
        if best.is_none_or(|(w, _)| width < w) {
            best = Some((width, offset));
        }
    }
    best.map_or(0, |(_, o)| o)
}

pub(super) fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_REALTIME always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `google.rpc.Status`, the body OTLP/HTTP puts on a 400.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub(super) code: i32,
    #[prost(string, tag = "2")]
    pub(super) message: String,
}

/// gRPC's INVALID_ARGUMENT, the code the spec pairs with 400.
pub(super) const INVALID_ARGUMENT: i32 = 3;

/// 200 with an empty Export*ServiceResponse: every signal's response message is
/// empty on full success, which encodes as zero bytes in protobuf and `{}` in JSON.
fn ok_empty(enc: Encoding) -> Response {
    let body: &'static [u8] = match enc {
        Encoding::Protobuf => b"",
        Encoding::Json => b"{}",
    };
    (StatusCode::OK, [(header::CONTENT_TYPE, enc.content_type())], body).into_response()
}

fn bad_request(enc: Encoding, message: String) -> Response {
    let status = RpcStatus {
        code: INVALID_ARGUMENT,
        message,
    };
    let body = match enc {
        Encoding::Protobuf => status.encode_to_vec(),
        Encoding::Json => serde_json::json!({"code": status.code, "message": status.message})
            .to_string()
            .into_bytes(),
    };
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, enc.content_type())],
        body,
    )
        .into_response()
}

async fn traces(State(received): State<Arc<Mutex<Received>>>, headers: HeaderMap, body: Bytes) -> Response {
    let enc = match Encoding::of(&headers) {
        Ok(enc) => enc,
        Err(why) => {
            lock(&received).refuse(format!("/v1/traces: {why}"));
            return (StatusCode::UNSUPPORTED_MEDIA_TYPE, why).into_response();
        }
    };
    let max_body = lock(&received).limits.body;
    let (body, coding) = match decompress(&headers, &body, max_body) {
        Ok(b) => b,
        Err((status, why)) => {
            lock(&received).refuse(format!("/v1/traces: {why}"));
            return match status {
                StatusCode::BAD_REQUEST => bad_request(enc, why),
                _ => (status, why).into_response(),
            };
        }
    };
    match decode(enc, &body) {
        Ok(req) => {
            let spans = flatten(req);
            let mut r = lock(&received);
            r.requests += 1;
            r.encodings.insert(format!("{}{coding}", enc.name()));
            r.keep(spans);
            drop(r);
            ok_empty(enc)
        }
        Err(e) => {
            let why = format!("{e:#}");
            lock(&received).refuse(format!("/v1/traces: {why}"));
            bad_request(enc, why)
        }
    }
}

async fn other_signal(State(received): State<Arc<Mutex<Received>>>, headers: HeaderMap) -> Response {
    match Encoding::of(&headers) {
        Ok(enc) => {
            lock(&received).other_signals += 1;
            ok_empty(enc)
        }
        Err(why) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, why).into_response(),
    }
}
