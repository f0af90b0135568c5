//! The target's own OpenTelemetry spans: an OTLP/HTTP receiver on loopback.
//!
//! [`Receiver::start`] binds 127.0.0.1 on a free port and serves `POST /v1/traces`
//! (protobuf or OTLP/JSON, optionally gzip/deflate) on its own thread and
//! current-thread tokio runtime; [`Receiver::env`] points the SDKs' default
//! exporters at it; [`Receiver::finish`] stops serving and turns what arrived into
//! a [`Section`] on the run's clock.
//!
//! OTLP times are wall clock (unix ns). They are moved onto CLOCK_MONOTONIC with
//! the offset CLOCK_REALTIME − CLOCK_MONOTONIC, sampled when the receiver starts
//! and when it finishes (the run lies between), so the alignment is as good as the
//! two clocks' agreement: NTP slewing during the run (ms-level at worst) is ignored.
//!
//! `/v1/metrics` and `/v1/logs` are accepted and dropped: `OTEL_EXPORTER_OTLP_ENDPOINT`
//! sends every signal here, and an exporter whose requests fail retries with
//! backoff, which would stretch the target's shutdown and so the measurement.

// Until explain wires sources into its runs, only the tests use the receiver.

use crate::clock;
use crate::sample::section::{ms_cell, Section, Span, Table};
use crate::sample::{Mark, MarkSource};
use anyhow::{anyhow, Context, Result};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use prost::Message;
use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::oneshot;

/// What one receiver keeps, so a chatty (or hostile) local sender cannot grow
/// coldstart's memory without bound: spans beyond these are counted and dropped,
/// and the section says so.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Spans kept per run.
    pub spans: usize,
    /// Estimated bytes of the spans kept (names, ids, attributes, events).
    pub bytes: usize,
    /// Largest request body, on the wire and after decompression (413 beyond).
    /// SDKs batch at most 512 spans per request by default, far below this.
    pub body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            spans: 100_000,
            bytes: 64 << 20,
            body: 16 << 20,
        }
    }
}
/// Rows kept in the section's table.
const TABLE_ROWS: usize = 20;
/// Span attributes copied into a span's args (the rest are counted).
const MAX_ARGS: usize = 12;
/// How long `finish` lets open requests complete before cutting them off (a target
/// that is still running may hold a connection open forever).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

const PROTOBUF: &str = "application/x-protobuf";
const JSON: &str = "application/json";

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
                            crate::out::errln!("coldstart: OTLP receiver stopped: {e}");
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

fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_REALTIME always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Everything the handlers saw, in arrival order.
#[derive(Debug, Default)]
struct Received {
    spans: Vec<Got>,
    /// Trace export requests decoded.
    requests: usize,
    /// How they came: "protobuf", "OTLP/JSON", with "+gzip"/"+deflate".
    encodings: BTreeSet<String>,
    /// Metrics/logs export requests (accepted, not read).
    other_signals: usize,
    /// Requests refused (bad body, unknown content type or encoding); the first few reasons.
    refused: usize,
    refusals: Vec<String>,
    limits: Limits,
    /// Estimated size of `spans`.
    kept_bytes: usize,
    /// Spans that arrived past `limits` and were not kept.
    dropped: usize,
}

impl Received {
    /// Keep spans while within the limits; count the rest.
    fn keep(&mut self, spans: Vec<Got>) {
        for g in spans {
            let size = g.approx_bytes();
            if self.spans.len() < self.limits.spans && self.kept_bytes + size <= self.limits.bytes {
                self.kept_bytes += size;
                self.spans.push(g);
            } else {
                self.dropped += 1;
            }
        }
    }

    fn refuse(&mut self, why: String) {
        self.refused += 1;
        if self.refusals.len() < 3 {
            self.refusals.push(why);
        }
    }
}

/// One span as received, reduced to what the section shows.
#[derive(Debug, Clone, PartialEq)]
struct Got {
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent_id: Vec<u8>,
    name: String,
    service: String,
    scope: String,
    start_unix_ns: u64,
    end_unix_ns: u64,
    args: Vec<(String, String)>,
    events: Vec<(String, u64)>,
}

impl Got {
    /// Heap and inline bytes, roughly: what keeping this span costs.
    fn approx_bytes(&self) -> usize {
        std::mem::size_of::<Got>()
            + self.trace_id.len()
            + self.span_id.len()
            + self.parent_id.len()
            + self.name.len()
            + self.service.len()
            + self.scope.len()
            + self
                .args
                .iter()
                .map(|(k, v)| 48 + k.len() + v.len())
                .sum::<usize>()
            + self.events.iter().map(|(n, _)| 32 + n.len()).sum::<usize>()
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    fn of(headers: &HeaderMap) -> Result<Encoding, String> {
        let Some(ct) = headers.get(header::CONTENT_TYPE) else {
            return Err("no Content-Type".into());
        };
        let ct = ct.to_str().unwrap_or("");
        // Parameters (`; charset=utf-8`) do not change the encoding.
        let media = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        match media.as_str() {
            PROTOBUF | "application/protobuf" => Ok(Encoding::Protobuf),
            JSON => Ok(Encoding::Json),
            _ => Err(format!("unsupported Content-Type {ct:?}")),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Encoding::Protobuf => "protobuf",
            Encoding::Json => "OTLP/JSON",
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => PROTOBUF,
            Encoding::Json => JSON,
        }
    }
}

/// `google.rpc.Status`, the body OTLP/HTTP puts on a 400.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// gRPC's INVALID_ARGUMENT, the code the spec pairs with 400.
const INVALID_ARGUMENT: i32 = 3;

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

/// The body after its Content-Encoding (none, gzip or deflate: the encodings OTLP
/// exporters offer), at most `max_body` bytes, and "+CODING" when it was compressed.
fn decompress(
    headers: &HeaderMap,
    body: &Bytes,
    max_body: usize,
) -> Result<(Bytes, &'static str), (StatusCode, String)> {
    let coding = headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase())
        .unwrap_or_default();
    let inflate = |r: &mut dyn Read| -> Result<Bytes, (StatusCode, String)> {
        let mut out = Vec::new();
        r.take(max_body as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| (StatusCode::BAD_REQUEST, format!("bad {coding} body: {e}")))?;
        if out.len() > max_body {
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("body inflates past {max_body} bytes"),
            ));
        }
        Ok(Bytes::from(out))
    };
    match coding.as_str() {
        "" | "identity" => Ok((body.clone(), "")),
        "gzip" | "x-gzip" => inflate(&mut flate2::read::GzDecoder::new(&body[..])).map(|b| (b, "+gzip")),
        // HTTP's "deflate" is the zlib format (RFC 9110), which is what Python's
        // exporter sends; raw deflate is the common mistake, so accept it too.
        "deflate" => inflate(&mut flate2::read::ZlibDecoder::new(&body[..]))
            .or_else(|_| inflate(&mut flate2::read::DeflateDecoder::new(&body[..])))
            .map(|b| (b, "+deflate")),
        other => Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("unsupported Content-Encoding {other:?}"),
        )),
    }
}

fn decode(enc: Encoding, body: &[u8]) -> Result<ExportTraceServiceRequest> {
    match enc {
        Encoding::Protobuf => ExportTraceServiceRequest::decode(body)
            .context("decoding an ExportTraceServiceRequest (protobuf)"),
        Encoding::Json => {
            let mut value: serde_json::Value =
                serde_json::from_slice(body).context("parsing an OTLP/JSON body")?;
            normalize_json_enums(&mut value);
            // From a Value rather than the bytes: the generated AnyValue deserializer skips
            // unknown keys without consuming their values, which only a Value tolerates.
            serde_json::from_value(value).context("decoding an ExportTraceServiceRequest (OTLP/JSON)")
        }
    }
}

/// OTLP/JSON requires enums as integers, but the protobuf JSON mapping also allows
/// their names, and some senders use them: turn `kind` and `status.code` names into
/// integers so one such span does not fail its whole request.
fn normalize_json_enums(v: &mut serde_json::Value) {
    use serde_json::Value;
    fn number(names: &[&str], s: &str) -> Option<Value> {
        names.iter().position(|n| *n == s).map(|i| Value::from(i as i64))
    }
    const KINDS: [&str; 6] = [
        "SPAN_KIND_UNSPECIFIED",
        "SPAN_KIND_INTERNAL",
        "SPAN_KIND_SERVER",
        "SPAN_KIND_CLIENT",
        "SPAN_KIND_PRODUCER",
        "SPAN_KIND_CONSUMER",
    ];
    const CODES: [&str; 3] = ["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"];
    let Some(resource_spans) = v.get_mut("resourceSpans").and_then(Value::as_array_mut) else {
        return;
    };
    let spans = resource_spans
        .iter_mut()
        .filter_map(|rs| rs.get_mut("scopeSpans").and_then(Value::as_array_mut))
        .flatten()
        .filter_map(|ss| ss.get_mut("spans").and_then(Value::as_array_mut))
        .flatten();
    for span in spans {
        if let Some(kind) = span.get_mut("kind") {
            if let Some(n) = kind.as_str().and_then(|s| number(&KINDS, s)) {
                *kind = n;
            }
        }
        if let Some(code) = span.get_mut("status").and_then(|s| s.get_mut("code")) {
            if let Some(n) = code.as_str().and_then(|s| number(&CODES, s)) {
                *code = n;
            }
        }
    }
}

/// The request's spans with their resource's service and their scope.
fn flatten(req: ExportTraceServiceRequest) -> Vec<Got> {
    let mut out = Vec::new();
    for rs in req.resource_spans {
        let service = rs
            .resource
            .as_ref()
            .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
            .and_then(|kv| kv.value.as_ref())
            .map(value_text)
            .unwrap_or_else(|| "unknown_service".to_string());
        for ss in rs.scope_spans {
            let scope = ss.scope.map(|s| s.name).unwrap_or_default();
            for sp in ss.spans {
                let mut args = span_args(&sp.attributes);
                // Kind 1 is INTERNAL, the default; 0 is unspecified.
                const KINDS: [&str; 6] = ["", "", "server", "client", "producer", "consumer"];
                if let Some(kind) = usize::try_from(sp.kind).ok().and_then(|k| KINDS.get(k)) {
                    if !kind.is_empty() {
                        args.insert(0, ("kind".into(), kind.to_string()));
                    }
                }
                // Status code 2 is ERROR.
                if let Some(st) = sp.status.as_ref().filter(|s| s.code == 2) {
                    let msg = if st.message.is_empty() {
                        "error"
                    } else {
                        &st.message
                    };
                    args.insert(0, ("status".into(), msg.to_string()));
                }
                out.push(Got {
                    trace_id: sp.trace_id,
                    span_id: sp.span_id,
                    parent_id: sp.parent_span_id,
                    name: sp.name,
                    service: service.clone(),
                    scope: scope.clone(),
                    start_unix_ns: sp.start_time_unix_nano,
                    end_unix_ns: sp.end_time_unix_nano,
                    args,
                    events: sp
                        .events
                        .into_iter()
                        .map(|e| (e.name, e.time_unix_nano))
                        .collect(),
                });
            }
        }
    }
    out
}

fn span_args(attrs: &[KeyValue]) -> Vec<(String, String)> {
    let mut args: Vec<(String, String)> = attrs
        .iter()
        .take(MAX_ARGS)
        .map(|kv| {
            (
                kv.key.clone(),
                kv.value.as_ref().map(value_text).unwrap_or_default(),
            )
        })
        .collect();
    if attrs.len() > MAX_ARGS {
        args.push(("…".into(), format!("{} more attributes", attrs.len() - MAX_ARGS)));
    }
    args
}

fn value_text(v: &AnyValue) -> String {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(any_value::Value::BytesValue(b)) => format!("{} bytes", b.len()),
        Some(any_value::Value::ArrayValue(a)) => {
            let items: Vec<String> = a.values.iter().map(value_text).collect();
            format!("[{}]", items.join(", "))
        }
        Some(any_value::Value::KvlistValue(kv)) => {
            let items: Vec<String> = kv
                .values
                .iter()
                .map(|kv| {
                    format!(
                        "{}={}",
                        kv.key,
                        kv.value.as_ref().map(value_text).unwrap_or_default()
                    )
                })
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        // A string-keyed reference into a dictionary this receiver does not keep.
        Some(_) | None => String::new(),
    }
}

/// How wall-clock span times map onto the run's clock.
struct Clock {
    offset_start: i128,
    offset_end: i128,
    t0_mono_ns: u64,
}

impl Clock {
    /// The offset used: the mean of the two samples.
    fn offset(&self) -> i128 {
        (self.offset_start + self.offset_end) / 2
    }

    /// Unix ns → ns since t0; negative when before the spawn.
    fn since_t0(&self, unix_ns: u64) -> i128 {
        unix_ns as i128 - self.offset() - self.t0_mono_ns as i128
    }
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

fn build_section(received: Received, clock: &Clock) -> Section {
    let mut notes = Vec::new();
    let drift = (clock.offset_end - clock.offset_start).abs();
    notes.push(format!(
        "span times are wall clock (CLOCK_REALTIME), moved onto the run's monotonic clock with an offset \
         sampled before and after the run (they differ by {}); the alignment is as good as the two clocks' \
         agreement (NTP slewing during the run, ms-level at worst, is ignored)",
        ms_cell(drift.min(u64::MAX as i128) as u64)
    ));

    // Keep the first copy of a span sent twice (an exporter retrying a batch whose
    // response it lost).
    let total = received.spans.len();
    let mut seen = std::collections::HashSet::new();
    let spans: Vec<Got> = received
        .spans
        .into_iter()
        .filter(|g| g.span_id.is_empty() || seen.insert((g.trace_id.clone(), g.span_id.clone())))
        .collect();
    if spans.len() < total {
        notes.push(format!(
            "{} spans arrived twice and are counted once",
            total - spans.len()
        ));
    }

    let (order, orphans) = tree_order(&spans);
    if orphans > 0 {
        notes.push(format!(
            "{orphans} spans name a parent that never arrived (another process's, or not yet exported) \
             and are shown as roots"
        ));
    }

    let mut clamped = 0usize;
    let mut inverted = 0usize;
    let mut out_spans = Vec::with_capacity(spans.len());
    let mut marks = Vec::new();
    let mut rows: Vec<(u64, Vec<String>)> = Vec::with_capacity(spans.len());
    for (i, depth) in order {
        let g = &spans[i];
        let start = clock.since_t0(g.start_unix_ns);
        let end = clock.since_t0(g.end_unix_ns);
        if end < start {
            inverted += 1;
        }
        let dur_ns = (end - start).clamp(0, u64::MAX as i128) as u64;
        let start_ns = if start < 0 {
            clamped += 1;
            0
        } else {
            start.min(u64::MAX as i128) as u64
        };
        let mut args = vec![("service".to_string(), g.service.clone())];
        if !g.scope.is_empty() {
            args.push(("scope".into(), g.scope.clone()));
        }
        args.push(("trace".into(), hex(&g.trace_id)));
        args.extend(g.args.iter().cloned());
        for (name, at) in &g.events {
            marks.push(Mark::new(
                format!("{}: {name}", g.name),
                MarkSource::Otlp,
                clock.since_t0(*at).clamp(0, u64::MAX as i128) as u64,
            ));
        }
        rows.push((
            dur_ns,
            vec![
                g.name.clone(),
                g.service.clone(),
                ms_cell(dur_ns),
                ms_cell(start_ns),
            ],
        ));
        out_spans.push(Span {
            name: g.name.clone(),
            start_ns,
            dur_ns,
            depth,
            args,
        });
    }
    if clamped > 0 {
        notes.push(format!(
            "{clamped} spans start before the spawn by the clocks' reckoning (clock skew, or a \
             start time the program set itself) and are drawn from 0, keeping their length"
        ));
    }
    if inverted > 0 {
        notes.push(format!(
            "{inverted} spans end before they start and are shown with no duration"
        ));
    }
    marks.sort_by_key(|m| m.t_ns);

    // Largest first; ties in tree order (the sort is stable).
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut table = Table::new(&["span", "service", "duration", "start"]);
    table.rows = rows.into_iter().map(|(_, r)| r).collect();
    table.truncate(TABLE_ROWS);

    let traces: BTreeSet<&[u8]> = spans.iter().map(|g| g.trace_id.as_slice()).collect();
    let services: BTreeSet<&str> = spans.iter().map(|g| g.service.as_str()).collect();
    let services_cell = if services.is_empty() {
        "none".to_string()
    } else {
        services.iter().copied().collect::<Vec<_>>().join(", ")
    };

    let encodings_cell = if received.encodings.is_empty() {
        "none".to_string()
    } else {
        received.encodings.iter().cloned().collect::<Vec<_>>().join(", ")
    };

    if spans.is_empty() {
        notes.push(
            "no spans arrived: the program exported none over OTLP/HTTP (no exporter configured, a \
             gRPC-only exporter, or spans still buffered when it was stopped: batch processors \
             export every few seconds and at shutdown)"
                .to_string(),
        );
    }
    if received.refused > 0 {
        notes.push(format!(
            "{} export requests were refused: {}",
            received.refused,
            received.refusals.join("; ")
        ));
    }
    if received.dropped > 0 {
        notes.push(format!(
            "{} spans were dropped: the receiver keeps at most {} spans and {} MiB of them per run \
             (the first that arrived are shown)",
            received.dropped,
            received.limits.spans,
            received.limits.bytes >> 20
        ));
    }
    if received.other_signals > 0 {
        notes.push(format!(
            "{} metrics/logs export requests were accepted and not read",
            received.other_signals
        ));
    }

    Section {
        source: "otlp".into(),
        title: "OpenTelemetry spans (OTLP/HTTP)".into(),
        facts: vec![
            ("spans".into(), spans.len().to_string()),
            ("traces".into(), traces.len().to_string()),
            ("services".into(), services_cell),
            ("requests".into(), received.requests.to_string()),
            ("encoding".into(), encodings_cell),
            ("dropped".into(), received.dropped.to_string()),
        ],
        table,
        spans: out_spans,
        marks,
        notes,
    }
}

/// Depth-first order of the span forest: (index, depth), every parent before its
/// children, roots and siblings by start time. A span is a child when its parent
/// arrived in the same trace; the others are roots (the count of those that named
/// a missing parent is returned). Spans caught in a parent cycle (malformed input)
/// are rooted where the walk first meets them, so every span appears exactly once.
fn tree_order(spans: &[Got]) -> (Vec<(usize, usize)>, usize) {
    let mut by_id: HashMap<(&[u8], &[u8]), usize> = HashMap::new();
    for (i, g) in spans.iter().enumerate() {
        if !g.span_id.is_empty() {
            by_id
                .entry((g.trace_id.as_slice(), g.span_id.as_slice()))
                .or_insert(i);
        }
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); spans.len()];
    let mut roots = Vec::new();
    let mut orphans = 0;
    for (i, g) in spans.iter().enumerate() {
        let parent = if g.parent_id.is_empty() {
            None
        } else {
            let p = by_id
                .get(&(g.trace_id.as_slice(), g.parent_id.as_slice()))
                .copied();
            if p.is_none() {
                orphans += 1;
            }
            p.filter(|&p| p != i)
        };
        match parent {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    let by_start = |a: &usize, b: &usize| spans[*a].start_unix_ns.cmp(&spans[*b].start_unix_ns);
    for c in &mut children {
        c.sort_by(by_start);
    }
    roots.sort_by(by_start);
    // Cycle members are unreachable from the roots: after the roots, start from them.
    let rest: Vec<usize> = (0..spans.len()).collect();

    let mut order = Vec::with_capacity(spans.len());
    let mut visited = vec![false; spans.len()];
    for start in roots.into_iter().chain(rest) {
        if visited[start] {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        while let Some((i, depth)) = stack.pop() {
            if visited[i] {
                continue;
            }
            visited[i] = true;
            order.push((i, depth));
            // Reversed so the earliest child is popped first.
            for &c in children[i].iter().rev() {
                if !visited[c] {
                    stack.push((c, depth + 1));
                }
            }
        }
    }
    (order, orphans)
}

#[cfg(test)]
#[path = "otlp_tests.rs"]
mod tests;
