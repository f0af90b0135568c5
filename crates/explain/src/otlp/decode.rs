//! A trace export request's body → spans: Content-Type (protobuf or OTLP/JSON),
//! Content-Encoding (gzip, deflate), the message, and each span reduced to what
//! the section shows.

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::http::{header, HeaderMap, StatusCode};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use prost::Message;
use std::io::Read;

/// Span attributes copied into a span's args (the rest are counted).
const MAX_ARGS: usize = 12;

pub(super) const PROTOBUF: &str = "application/x-protobuf";
pub(super) const JSON: &str = "application/json";

/// One span as received, reduced to what the section shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Got {
    pub(super) trace_id: Vec<u8>,
    pub(super) span_id: Vec<u8>,
    pub(super) parent_id: Vec<u8>,
    pub(super) name: String,
    pub(super) service: String,
    pub(super) scope: String,
    pub(super) start_unix_ns: u64,
    pub(super) end_unix_ns: u64,
    pub(super) args: Vec<(String, String)>,
    pub(super) events: Vec<(String, u64)>,
}

impl Got {
    /// What keeping this span costs in memory: its inline size and every heap
    /// block as the allocator hands it out (a header, 16-byte steps, 32 bytes at
    /// least), which for a span's many short strings is about twice their length.
    /// The section made from it costs about as much again (plus the trace id in
    /// hex), so the receiver's byte limit bounds a run's memory, not a guess at it.
    pub(super) fn approx_bytes(&self) -> usize {
        fn block(len: usize) -> usize {
            if len == 0 {
                0
            } else {
                (len + 8).div_ceil(16).max(2) * 16
            }
        }
        std::mem::size_of::<Got>()
            + block(self.trace_id.len())
            + block(self.span_id.len())
            + block(self.parent_id.len())
            + block(self.name.len())
            + block(self.service.len())
            + block(self.scope.len())
            + block(self.args.capacity() * std::mem::size_of::<(String, String)>())
            + self
                .args
                .iter()
                .map(|(k, v)| block(k.len()) + block(v.len()))
                .sum::<usize>()
            + block(self.events.capacity() * std::mem::size_of::<(String, u64)>())
            + self.events.iter().map(|(n, _)| block(n.len())).sum::<usize>()
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    pub(super) fn of(headers: &HeaderMap) -> Result<Encoding, String> {
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

    pub(super) fn name(self) -> &'static str {
        match self {
            Encoding::Protobuf => "protobuf",
            Encoding::Json => "OTLP/JSON",
        }
    }

    pub(super) fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => PROTOBUF,
            Encoding::Json => JSON,
        }
    }
}

/// The body after its Content-Encoding (none, gzip or deflate: the encodings OTLP
/// exporters offer), at most `max_body` bytes, and "+CODING" when it was compressed.
pub(super) fn decompress(
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

pub(super) fn decode(enc: Encoding, body: &[u8]) -> Result<ExportTraceServiceRequest> {
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

/// The request's spans with their resource's service and their scope, one at a
/// time: a receiver that is full drops each as it comes instead of holding a
/// copy of the whole request beside the decoded message.
pub(super) fn flatten(req: ExportTraceServiceRequest) -> impl Iterator<Item = Got> {
    req.resource_spans.into_iter().flat_map(|rs| {
        let service = rs
            .resource
            .as_ref()
            .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
            .and_then(|kv| kv.value.as_ref())
            .map(value_text)
            .unwrap_or_else(|| "unknown_service".to_string());
        rs.scope_spans.into_iter().flat_map(move |ss| {
            let scope = ss.scope.map(|s| s.name).unwrap_or_default();
            let service = service.clone();
            ss.spans.into_iter().map(move |sp| got(sp, &service, &scope))
        })
    })
}

fn got(sp: opentelemetry_proto::tonic::trace::v1::Span, service: &str, scope: &str) -> Got {
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
    Got {
        trace_id: sp.trace_id,
        span_id: sp.span_id,
        parent_id: sp.parent_span_id,
        name: sp.name,
        service: service.to_string(),
        scope: scope.to_string(),
        start_unix_ns: sp.start_time_unix_nano,
        end_unix_ns: sp.end_time_unix_nano,
        args,
        events: sp
            .events
            .into_iter()
            .map(|e| (e.name, e.time_unix_nano))
            .collect(),
    }
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
