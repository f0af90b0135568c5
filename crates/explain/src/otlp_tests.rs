//! The OTLP receiver: hand-built protobuf and OTLP/JSON bodies, then the real
//! OpenTelemetry SDKs (Python, Node) exporting through their own OTLP/HTTP
//! exporters, configured only by [`Receiver::env`].

use super::decode::{flatten, Got, JSON, PROTOBUF};
use super::kept::{Limits, Received};
use super::receiver::{realtime_ns, Receiver, RpcStatus, INVALID_ARGUMENT};
use super::section::{build_section, Clock, TABLE_ROWS};
use coldstart_core::clock;
use coldstart_core::sample::section::{Section, Span, Value};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{self as pb, ResourceSpans, ScopeSpans};
use prost::Message;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const MS: u64 = 1_000_000;
const TRACE_A: [u8; 16] = [0xaa; 16];
const TRACE_B: [u8; 16] = [0xbb; 16];

fn pb_span(trace: [u8; 16], id: u64, parent: Option<u64>, name: &str, start: u64, end: u64) -> pb::Span {
    pb::Span {
        trace_id: trace.to_vec(),
        span_id: id.to_be_bytes().to_vec(),
        parent_span_id: parent.map(|p| p.to_be_bytes().to_vec()).unwrap_or_default(),
        name: name.into(),
        kind: 1,
        start_time_unix_nano: start,
        end_time_unix_nano: end,
        ..Default::default()
    }
}

fn pb_request(service: &str, spans: Vec<pb::Span>) -> ExportTraceServiceRequest {
    let kv = KeyValue {
        key: "service.name".into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(service.into())),
        }),
        ..Default::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![kv],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

struct Reply {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

fn post(r: &Receiver, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut req = ureq::post(&format!("{}{path}", r.endpoint()));
    for (k, v) in headers {
        req = req.set(k, v);
    }
    // 4xx replies are answers here, not failures.
    let resp = match req.send_bytes(body) {
        Ok(resp) | Err(ureq::Error::Status(_, resp)) => resp,
        Err(e) => panic!("POST {path}: {e}"),
    };
    let status = resp.status();
    let content_type = resp.header("content-type").unwrap_or("").to_string();
    let mut body = Vec::new();
    resp.into_reader()
        .read_to_end(&mut body)
        .expect("reading the reply");
    Reply {
        status,
        content_type,
        body,
    }
}

fn names(s: &Section) -> Vec<(&str, usize)> {
    s.spans.iter().map(|sp| (sp.name.as_str(), sp.depth)).collect()
}

/// A fact of counts and text: a count's digits, a text as it is.
fn fact(s: &Section, key: &str) -> String {
    match s.facts.iter().find(|(k, _)| k == key) {
        Some((_, Value::Count(n))) => n.to_string(),
        Some((_, Value::Text(t))) => t.clone(),
        _ => panic!("no count or text fact {key:?} in {:?}", s.facts),
    }
}

fn span<'a>(s: &'a Section, name: &str) -> &'a Span {
    s.spans
        .iter()
        .find(|sp| sp.name == name)
        .unwrap_or_else(|| panic!("no span {name:?} in {:?}", names(s)))
}

fn arg<'a>(sp: &'a Span, key: &str) -> Option<&'a str> {
    sp.args
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.as_text())
}

#[test]
fn env_points_both_endpoints_and_the_protocol_at_the_receiver() {
    let r = Receiver::start().expect("receiver");
    let env: HashMap<String, String> = r.env().into_iter().collect();
    let base = &env["OTEL_EXPORTER_OTLP_ENDPOINT"];
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    assert_eq!(
        env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
        format!("{base}/v1/traces")
    );
    assert_eq!(env["OTEL_EXPORTER_OTLP_PROTOCOL"], "http/protobuf");
    assert_eq!(env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"], "http/protobuf");
    let s = r.finish(clock::now_ns()).expect("finish");
    assert_eq!(fact(&s, "spans"), "0");
    assert!(
        s.notes
            .iter()
            .filter_map(Value::as_text)
            .any(|n| n.starts_with("no spans arrived")),
        "{:?}",
        s.notes
    );
}

#[test]
fn protobuf_request_becomes_a_nested_section() {
    let r = Receiver::start().expect("receiver");
    let t0 = clock::now_ns();
    let wall = realtime_ns();
    // Sent children first: the tree does not depend on arrival order.
    let req = pb_request(
        "svc",
        vec![
            pb_span(TRACE_A, 2, Some(1), "load-config", wall + 2 * MS, wall + 5 * MS),
            pb_span(TRACE_A, 3, Some(1), "connect-db", wall + 6 * MS, wall + 16 * MS),
            pb_span(TRACE_A, 4, Some(3), "handshake", wall + 7 * MS, wall + 8 * MS),
            pb_span(TRACE_A, 1, None, "init", wall + MS, wall + 20 * MS),
        ],
    );
    let reply = post(
        &r,
        "/v1/traces",
        &[("Content-Type", PROTOBUF)],
        &req.encode_to_vec(),
    );
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_type, PROTOBUF);
    assert!(
        reply.body.is_empty(),
        "an empty ExportTraceServiceResponse is zero bytes"
    );
    let s = r.finish(t0).expect("finish");

    assert_eq!(s.source, "otlp");
    assert_eq!(
        names(&s),
        [
            ("init", 0),
            ("load-config", 1),
            ("connect-db", 1),
            ("handshake", 2)
        ]
    );
    // One offset converts every time, so durations and gaps are exact.
    let init = span(&s, "init");
    assert_eq!(init.dur_ns, 19 * MS);
    assert_eq!(span(&s, "load-config").start_ns - init.start_ns, MS);
    assert_eq!(span(&s, "handshake").dur_ns, MS);
    assert_eq!(arg(init, "service"), Some("svc"));
    assert_eq!(arg(init, "trace"), Some("aa".repeat(16).as_str()));
    assert_eq!(fact(&s, "spans"), "4");
    assert_eq!(fact(&s, "traces"), "1");
    assert_eq!(fact(&s, "services"), "svc");
    assert_eq!(fact(&s, "requests"), "1");
    assert_eq!(fact(&s, "encoding"), "protobuf");
    let first: Vec<&str> = s.table.rows.iter().filter_map(|r| r[0].as_text()).collect();
    assert_eq!(
        first,
        ["init", "connect-db", "load-config", "handshake"],
        "largest first"
    );
    assert_eq!(s.table.columns, ["span", "service", "duration", "start"]);
}

/// OTLP/JSON's quirks: hex ids, int64 as strings (or numbers), lowerCamelCase,
/// enums as integers (or, from lax senders, names), unknown fields ignored.
const JSON_BODY: &str = r#"{
  "resourceSpans": [{
    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "json-svc"}}]},
    "scopeSpans": [{
      "scope": {"name": "my.lib", "version": "1.0"},
      "spans": [
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
         "parentSpanId": "", "name": "root", "kind": 2,
         "startTimeUnixNano": "START_A", "endTimeUnixNano": "END_A",
         "attributes": [{"key": "answer", "value": {"intValue": "42"}},
                        {"key": "odd", "value": {"someFutureValue": 1, "boolValue": true}}],
         "status": {"code": "STATUS_CODE_ERROR", "message": "boom"},
         "aFieldFromTheFuture": {"x": 1}},
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b173",
         "parentSpanId": "eee19b7ec3c1b174", "name": "child", "kind": "SPAN_KIND_CLIENT",
         "startTimeUnixNano": START_B, "endTimeUnixNano": END_B,
         "events": [{"timeUnixNano": "EVENT", "name": "done"}]}
      ]
    }]
  }]
}"#;

fn json_body(wall: u64) -> String {
    JSON_BODY
        .replace("START_A", &(wall + MS).to_string())
        .replace("END_A", &(wall + 9 * MS).to_string())
        .replace("START_B", &(wall + 2 * MS).to_string())
        .replace("END_B", &(wall + 4 * MS).to_string())
        .replace("EVENT", &(wall + 3 * MS).to_string())
}

#[test]
fn json_request_with_hex_ids_and_string_int64s() {
    let r = Receiver::start().expect("receiver");
    let t0 = clock::now_ns();
    let wall = realtime_ns();
    let reply = post(
        &r,
        "/v1/traces",
        &[("Content-Type", "application/json; charset=utf-8")],
        json_body(wall).as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(reply.content_type, JSON);
    assert_eq!(reply.body, b"{}");
    let s = r.finish(t0).expect("finish");

    assert_eq!(names(&s), [("root", 0), ("child", 1)]);
    let root = span(&s, "root");
    assert_eq!(root.dur_ns, 8 * MS);
    assert_eq!(span(&s, "child").start_ns - root.start_ns, MS);
    assert_eq!(arg(root, "trace"), Some("5b8efff798038103d269b633813fc60c"));
    assert_eq!(arg(root, "answer"), Some("42"));
    assert_eq!(arg(root, "kind"), Some("server"));
    assert_eq!(arg(root, "status"), Some("boom"));
    assert_eq!(arg(root, "scope"), Some("my.lib"));
    assert_eq!(arg(span(&s, "child"), "kind"), Some("client"));
    assert_eq!(fact(&s, "services"), "json-svc");
    assert_eq!(fact(&s, "encoding"), "OTLP/JSON");
    assert_eq!(s.marks.len(), 1);
    assert_eq!(s.marks[0].name, "child: done");
    assert_eq!(s.marks[0].t_ns - root.start_ns, 2 * MS);
    assert_eq!(s.marks[0].source, coldstart_core::sample::MarkSource::Otlp);
}

#[test]
fn gzip_and_deflate_bodies_are_inflated() {
    let r = Receiver::start().expect("receiver");
    let t0 = clock::now_ns();
    let wall = realtime_ns();
    let pb_body =
        pb_request("gz", vec![pb_span(TRACE_A, 1, None, "gzipped", wall, wall + MS)]).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&pb_body).expect("gzip");
    let gz = gz.finish().expect("gzip");
    let reply = post(
        &r,
        "/v1/traces",
        &[("Content-Type", PROTOBUF), ("Content-Encoding", "gzip")],
        &gz,
    );
    assert_eq!(reply.status, 200);

    // HTTP deflate is zlib-wrapped (what Python's exporter sends).
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(json_body(wall).as_bytes()).expect("zlib");
    let z = z.finish().expect("zlib");
    let reply = post(
        &r,
        "/v1/traces",
        &[("Content-Type", JSON), ("Content-Encoding", "deflate")],
        &z,
    );
    assert_eq!(reply.status, 200);
    let s = r.finish(t0).expect("finish");
    assert_eq!(fact(&s, "spans"), "3");
    assert_eq!(fact(&s, "traces"), "2");
    assert_eq!(fact(&s, "services"), "gz, json-svc");
    assert_eq!(fact(&s, "requests"), "2");
    assert_eq!(fact(&s, "encoding"), "OTLP/JSON+deflate, protobuf+gzip");
}

#[test]
fn bad_requests_are_refused_in_their_encoding_and_noted() {
    let r = Receiver::start().expect("receiver");
    let reply = post(&r, "/v1/traces", &[("Content-Type", "text/plain")], b"hello");
    assert_eq!(reply.status, 415);
    let reply = post(&r, "/v1/traces", &[("Content-Type", PROTOBUF)], b"\xff\xff\xff");
    assert_eq!(reply.status, 400);
    let status = RpcStatus::decode(&reply.body[..]).expect("a google.rpc.Status body");
    assert_eq!(status.code, INVALID_ARGUMENT);
    assert!(status.message.contains("protobuf"), "{}", status.message);
    let reply = post(
        &r,
        "/v1/traces",
        &[("Content-Type", JSON)],
        b"{\"resourceSpans\": 7}",
    );
    assert_eq!(reply.status, 400);
    let v: serde_json::Value = serde_json::from_slice(&reply.body).expect("a JSON Status body");
    assert_eq!(v["code"], INVALID_ARGUMENT);
    let reply = post(
        &r,
        "/v1/traces",
        &[("Content-Type", JSON), ("Content-Encoding", "br")],
        b"{}",
    );
    assert_eq!(reply.status, 415);
    // Other signals are accepted (so exporters do not retry) and not read.
    let reply = post(&r, "/v1/metrics", &[("Content-Type", PROTOBUF)], b"");
    assert_eq!(reply.status, 200);
    let reply = post(&r, "/v1/logs", &[("Content-Type", JSON)], b"{}");
    assert_eq!((reply.status, reply.body.as_slice()), (200, &b"{}"[..]));
    let s = r.finish(clock::now_ns()).expect("finish");
    assert_eq!(fact(&s, "requests"), "0");
    let refused = s
        .notes
        .iter()
        .filter_map(Value::as_text)
        .find(|n| n.contains("refused"))
        .expect("a refusal note");
    assert!(refused.starts_with("4 export requests were refused"), "{refused}");
    assert!(
        s.notes
            .iter()
            .filter_map(Value::as_text)
            .any(|n| n.starts_with("2 metrics/logs")),
        "{:?}",
        s.notes
    );
}

fn numbered_spans(from: u64, n: u64, name_len: usize) -> Vec<pb::Span> {
    let wall = realtime_ns();
    (from..from + n)
        .map(|i| pb_span(TRACE_A, i + 1, None, &format!("{i:0name_len$}"), wall, wall + MS))
        .collect()
}

#[test]
fn spans_past_the_limits_are_dropped_counted_and_noted() {
    let limits = Limits {
        spans: 50,
        bytes: 64 << 20,
        body: 64 << 10,
    };
    let r = Receiver::start_with(limits).expect("receiver");
    for batch in 0..3 {
        let body = pb_request("svc", numbered_spans(batch * 40, 40, 8)).encode_to_vec();
        let reply = post(&r, "/v1/traces", &[("Content-Type", PROTOBUF)], &body);
        assert_eq!(
            reply.status, 200,
            "kept or dropped, the sender is not asked to retry"
        );
    }
    // A body over the limit is refused with 413, before it is read.
    let big = pb_request("svc", numbered_spans(0, 200, 400)).encode_to_vec();
    assert!(big.len() > limits.body);
    // The server answers 413 from the Content-Length and closes with the body unread:
    // the client sees the 413, or (when the close's reset overtakes the reply) a reset.
    match ureq::post(&format!("{}/v1/traces", r.endpoint()))
        .set("Content-Type", PROTOBUF)
        .send_bytes(&big)
    {
        Err(ureq::Error::Status(code, _)) => assert_eq!(code, 413),
        Ok(resp) => panic!("an oversized body was accepted: {}", resp.status()),
        Err(ureq::Error::Transport(t)) => {
            let io = t.to_string();
            assert!(
                io.contains("reset") || io.contains("Broken pipe") || io.contains("closed"),
                "not a refusal: {io}"
            );
        }
    }
    let s = r.finish(clock::now_ns()).expect("finish");
    assert_eq!(fact(&s, "spans"), "50", "the first 50 are kept");
    assert_eq!(fact(&s, "dropped"), "70");
    assert!(
        s.notes
            .iter()
            .filter_map(Value::as_text)
            .any(|n| n.starts_with("70 spans were dropped") && n.contains("at most 50 spans")),
        "{:?}",
        s.notes
    );

    // The byte budget binds first when spans are large.
    let mut probe = Received::default();
    probe.keep(flatten(pb_request("svc", numbered_spans(0, 1, 1000))));
    let per_span = probe.kept_bytes;
    let mut r = Received {
        limits: Limits {
            spans: 1000,
            bytes: per_span * 10,
            body: 1 << 20,
        },
        ..Received::default()
    };
    r.keep(flatten(pb_request("svc", numbered_spans(0, 25, 1000))));
    assert_eq!((r.spans.len(), r.dropped), (10, 15));
    assert!(r.kept_bytes <= per_span * 10);
}

fn got(trace: [u8; 16], id: u8, parent: Option<u8>, name: &str, start: u64, end: u64) -> Got {
    Got {
        trace_id: trace.to_vec(),
        span_id: vec![id; 8],
        parent_id: parent.map(|p| vec![p; 8]).unwrap_or_default(),
        name: name.into(),
        service: "s".into(),
        scope: String::new(),
        start_unix_ns: start,
        end_unix_ns: end,
        args: Vec::new(),
        events: Vec::new(),
    }
}

/// t0 at monotonic 1 s, wall = monotonic + 1000 s: unix 1001 s is the spawn.
fn clock_at_1001s() -> Clock {
    Clock {
        offset_start: 1_000_000 * MS as i128,
        offset_end: 1_000_000 * MS as i128,
        t0_mono_ns: 1000 * MS,
    }
}

#[test]
fn orphans_cycles_duplicates_and_colliding_ids_across_traces() {
    let t = 1_001_000 * MS;
    let received = Received {
        spans: vec![
            got(TRACE_A, 1, None, "a-root", t + 10 * MS, t + 50 * MS),
            got(TRACE_A, 2, Some(1), "a-child", t + 20 * MS, t + 30 * MS),
            // Same span id as a-child but another trace: not a-root's child.
            got(TRACE_B, 2, Some(1), "b-orphan", t + 5 * MS, t + 6 * MS),
            // The same span again (a retried batch).
            got(TRACE_A, 2, Some(1), "a-child", t + 20 * MS, t + 30 * MS),
            // A parent cycle 7 → 8 → 7, malformed but must not loop or vanish.
            got(TRACE_B, 7, Some(8), "cycle-7", t + 40 * MS, t + 41 * MS),
            got(TRACE_B, 8, Some(7), "cycle-8", t + 42 * MS, t + 43 * MS),
            // Its own parent.
            got(TRACE_B, 9, Some(9), "selfish", t + 44 * MS, t + 45 * MS),
        ],
        requests: 2,
        ..Default::default()
    };
    let s = build_section(received, &clock_at_1001s());
    let got_names = names(&s);
    assert_eq!(
        &got_names[..3],
        [("b-orphan", 0), ("a-root", 0), ("a-child", 1)],
        "roots by start, children under them: {got_names:?}"
    );
    assert_eq!(s.spans.len(), 6, "every span once: {got_names:?}");
    for n in ["cycle-7", "cycle-8", "selfish"] {
        assert!(got_names.iter().any(|(m, _)| *m == n), "{n} kept: {got_names:?}");
    }
    assert_eq!(span(&s, "b-orphan").start_ns, 5 * MS);
    assert_eq!(fact(&s, "spans"), "6");
    assert_eq!(fact(&s, "traces"), "2");
    assert!(
        s.notes
            .iter()
            .filter_map(Value::as_text)
            .any(|n| n.starts_with("1 spans arrived twice")),
        "{:?}",
        s.notes
    );
    assert!(
        s.notes
            .iter()
            .filter_map(Value::as_text)
            .any(|n| n.starts_with("1 spans name a parent")),
        "{:?}",
        s.notes
    );
}

#[test]
fn spans_before_the_spawn_are_clamped_and_inverted_ones_have_no_length() {
    let t = 1_001_000 * MS;
    let received = Received {
        spans: vec![
            got(TRACE_A, 1, None, "early", t - 3 * MS, t + 2 * MS),
            got(TRACE_A, 2, None, "backwards", t + 9 * MS, t + 8 * MS),
        ],
        ..Default::default()
    };
    let s = build_section(received, &clock_at_1001s());
    let early = span(&s, "early");
    assert_eq!((early.start_ns, early.dur_ns), (0, 5 * MS));
    assert_eq!(span(&s, "backwards").dur_ns, 0);
    assert!(
        s.notes
            .iter()
            .filter_map(Value::as_text)
            .any(|n| n.starts_with("1 spans start before the spawn")),
        "{:?}",
        s.notes
    );
    assert!(
        s.notes
            .iter()
            .filter_map(Value::as_text)
            .any(|n| n.starts_with("1 spans end before")),
        "{:?}",
        s.notes
    );
}

#[test]
fn the_table_keeps_the_largest_twenty() {
    let t = 1_001_000 * MS;
    let spans = (0..25u8)
        .map(|i| got(TRACE_A, i + 1, None, &format!("s{i}"), t, t + u64::from(i) * MS))
        .collect();
    let s = build_section(
        Received {
            spans,
            ..Default::default()
        },
        &clock_at_1001s(),
    );
    assert_eq!(s.table.rows.len(), TABLE_ROWS);
    assert_eq!(s.table.omitted, 5);
    assert_eq!(s.table.rows[0][0], "s24".into());
    assert_eq!(s.spans.len(), 25, "the timeline keeps every span");
}

// ---- The real SDKs -------------------------------------------------------------

fn repo() -> PathBuf {
    crate::testkit::repo()
}

/// A missing SDK: a visible skip or, with COLDSTART_REQUIRE_OTEL set (as CI sets
/// it), a failure.
fn missing(what: &str, why: &str) {
    crate::testkit::skip(
        "OTEL",
        &format!("{what}: {why}; install with `bash tests/fixtures/otel-setup.sh`"),
    );
}

/// The SDK's site directory and the real interpreter (pyenv's `python3` shim is a
/// slow bash script).
fn python_sdk() -> Option<(PathBuf, PathBuf)> {
    let python = crate::testkit::python()?;
    let site = repo().join("target/otel/python");
    if site
        .join("opentelemetry/exporter/otlp/proto/http/trace_exporter")
        .is_dir()
    {
        return Some((site, python));
    }
    missing(
        "the OpenTelemetry Python SDK test",
        &format!("{} has no opentelemetry-exporter-otlp-proto-http", site.display()),
    );
    None
}

fn node_fixture() -> Option<PathBuf> {
    let dir = repo().join("tests/fixtures/otel-node");
    crate::testkit::tool("NODE", "node")?;
    for pkg in [
        "exporter-trace-otlp-http",
        "exporter-trace-otlp-proto",
        "sdk-trace-base",
    ] {
        if !dir.join("node_modules/@opentelemetry").join(pkg).is_dir() {
            missing(
                "the OpenTelemetry JS SDK test",
                &format!("@opentelemetry/{pkg} is not in {}/node_modules", dir.display()),
            );
            return None;
        }
    }
    Some(dir)
}

/// Run the fixture with the receiver's environment (minus `drop_env`, plus
/// `extra`), wait for it to exit, and return the section with the exit time.
fn run_fixture(mut cmd: Command, drop_env: &[&str], extra: &[(&str, &str)]) -> (Section, u64, String) {
    let r = Receiver::start().expect("receiver");
    for (k, v) in r.env() {
        if !drop_env.contains(&k.as_str()) {
            cmd.env(k, v);
        }
    }
    // Nothing inherited may redirect the exporter.
    for k in drop_env {
        cmd.env_remove(k);
    }
    cmd.envs(extra.iter().copied());
    let t0 = clock::now_ns();
    let out = cmd.output().expect("running the SDK fixture");
    let exited = clock::now_ns() - t0;
    assert!(
        out.status.success(),
        "fixture failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let s = r.finish(t0).expect("finish");
    // An exporter that failed logs it and still exits 0: show its output on failure.
    assert_eq!(
        fact(&s, "spans"),
        "3",
        "notes: {:?}\nstderr: {}",
        s.notes,
        String::from_utf8_lossy(&out.stderr)
    );
    (s, exited, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The SDK's own stamps as the Node fixture prints them: `span NAME START END`
/// (epoch ns, from the SDK's span objects after they ended).
fn sdk_stamps(stdout: &str) -> Vec<(String, i128, i128)> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("span ")?.split(' ');
            let (name, start, end) = (w.next()?, w.next()?.parse().ok()?, w.next()?.parse().ok()?);
            Some((name.to_string(), start, end))
        })
        .collect()
}

/// The spans' times relative to init's agree with the SDK's own stamps to the
/// microsecond: one offset converts them all, so nothing of the nesting the SDK
/// recorded is lost or invented (the JS SDK's own stamps may put a child a little
/// past its parent: Date.now() starts plus performance.now() lengths, and a
/// preemption between the two reads in its Span constructor shifts an end).
fn check_against_sdk(s: &Section, stamps: &[(String, i128, i128)]) {
    assert_eq!(stamps.len(), 3, "the fixture printed its stamps: {stamps:?}");
    let (_, init_start, _) = stamps.iter().find(|(n, ..)| n == "init").expect("init's stamps");
    let init = span(s, "init");
    for (name, start, end) in stamps {
        let sp = span(s, name);
        let ours = (
            sp.start_ns as i128 - init.start_ns as i128,
            (sp.start_ns + sp.dur_ns) as i128 - init.start_ns as i128,
        );
        let sdk = (start - init_start, end - init_start);
        assert!(
            (ours.0 - sdk.0).abs() <= 1_000 && (ours.1 - sdk.1).abs() <= 1_000,
            "{name}: ours {ours:?} vs the SDK's {sdk:?} (ns from init's start)"
        );
    }
}

/// init > load-config, init > connect-db, through a real exporter.
fn check_nested(s: &Section, exited_ns: u64, encoding: &str) {
    check_shape(s, exited_ns, encoding);
    let init = span(s, "init");
    // The Python SDK stamps every start and end with time_ns(): its nesting is
    // exact, and one offset converts every span, so it stays exact here.
    for child in ["load-config", "connect-db"] {
        let c = span(s, child);
        assert!(c.start_ns >= init.start_ns, "{child} starts inside init");
        assert!(
            c.start_ns + c.dur_ns <= init.start_ns + init.dur_ns,
            "{child} ends inside init"
        );
    }
}

/// What every SDK's export must show, whatever its clock.
fn check_shape(s: &Section, exited_ns: u64, encoding: &str) {
    assert_eq!(s.source, "otlp");
    assert_eq!(
        fact(s, "encoding"),
        encoding,
        "the SDK sent what the test meant to exercise"
    );
    assert_eq!(names(s), [("init", 0), ("load-config", 1), ("connect-db", 1)]);
    assert_eq!(fact(s, "traces"), "1");
    assert!(s
        .facts
        .iter()
        .any(|(k, v)| k == "requests" && v.as_count().is_some_and(|n| n >= 1)));
    let init = span(s, "init");
    for child in ["load-config", "connect-db"] {
        assert!(span(s, child).dur_ns > 0, "{child} has a length");
    }
    assert!(span(s, "load-config").start_ns <= span(s, "connect-db").start_ns);
    // A sanity bound on the clock conversion (a wrong sign or unit is off by years):
    // the spans lie within the process's life, give or take a second of clock skew.
    assert!(
        init.start_ns + init.dur_ns <= exited_ns + 1_000 * MS,
        "{init:?} vs exit at {exited_ns}"
    );
    assert!(
        !s.notes
            .iter()
            .filter_map(Value::as_text)
            .any(|n| n.contains("refused") || n.contains("parent that never")),
        "{:?}",
        s.notes
    );
    assert_eq!(arg(span(s, "load-config"), "config.files"), Some("3"));
    assert_eq!(arg(init, "scope"), Some("coldstart-fixture"));
    assert!(
        s.marks.iter().any(|m| m.name == "connect-db: connected"),
        "{:?}",
        s.marks
    );
}

fn python_fixture((site, python): &(PathBuf, PathBuf)) -> Command {
    let mut cmd = Command::new(python);
    cmd.arg(repo().join("tests/fixtures/otel-python/nested_spans.py"))
        .env("PYTHONPATH", site)
        .env("OTEL_SERVICE_NAME", "py-fixture");
    cmd
}

#[test]
fn python_sdk_exports_protobuf() {
    let Some(sdk) = python_sdk() else { return };
    let (s, exited, _) = run_fixture(python_fixture(&sdk), &[], &[]);
    check_nested(&s, exited, "protobuf");
    assert_eq!(fact(&s, "services"), "py-fixture");
}

#[test]
fn python_sdk_exports_deflated_protobuf_to_the_base_endpoint() {
    let Some(sdk) = python_sdk() else { return };
    // Only the base endpoint: the SDK must append /v1/traces itself, per the spec.
    let (s, exited, _) = run_fixture(
        python_fixture(&sdk),
        &["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
        &[("OTEL_EXPORTER_OTLP_COMPRESSION", "deflate")],
    );
    check_nested(&s, exited, "protobuf+deflate");
}

fn node_fixture_cmd(dir: &Path, which: &str) -> Command {
    let mut cmd = Command::new("node");
    cmd.arg(dir.join("nested_spans.js")).arg(which).current_dir(dir);
    cmd
}

#[test]
fn node_sdk_exports_json_to_the_base_endpoint() {
    let Some(dir) = node_fixture() else { return };
    // The JSON exporter ignores the protocol variable; only the base endpoint is
    // given, so the SDK's own /v1/traces derivation is what reaches us.
    let (s, exited, stdout) = run_fixture(
        node_fixture_cmd(&dir, "json"),
        &["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
        &[],
    );
    check_shape(&s, exited, "OTLP/JSON");
    check_against_sdk(&s, &sdk_stamps(&stdout));
}

#[test]
fn node_sdk_exports_gzipped_protobuf() {
    let Some(dir) = node_fixture() else { return };
    let (s, exited, stdout) = run_fixture(
        node_fixture_cmd(&dir, "proto"),
        &[],
        &[("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")],
    );
    check_shape(&s, exited, "protobuf+gzip");
    check_against_sdk(&s, &sdk_stamps(&stdout));
}
