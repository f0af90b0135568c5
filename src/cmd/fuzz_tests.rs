//! Property tests over the parsers and servers that take outside input: the
//! readiness grammar, coldstart.toml, the bench/lambda variant grammar, the Lambda
//! API server and the OTLP receiver (both real servers on loopback, fed arbitrary
//! requests). The property everywhere: no panic; bad input is a clean error (a
//! message, an HTTP status), never a crash or a dropped connection.
//!
//! proptest rather than cargo-fuzz: it runs inside `cargo test` on stable with a
//! fixed case budget. `PROPTEST_CASES=N` raises every target's budget for a longer
//! local session. Failures are not persisted to files; a found case becomes a
//! named regression test instead.

use proptest::prelude::*;
use proptest::test_runner::Config;
use std::io::{Read, Write};
use std::time::Duration;

/// The per-target case budget: `default`, or PROPTEST_CASES when set.
fn config(default: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Strings made of the grammar's own pieces and arbitrary text, so cases reach
/// past the first check.
fn spec_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("exit".to_string()),
        Just("listen".to_string()),
        Just("tcp:".to_string()),
        Just("http://".to_string()),
        Just("https://".to_string()),
        Just("http:".to_string()),
        Just("log:".to_string()),
        Just("file:".to_string()),
        Just("lambda:init".to_string()),
        Just("127.0.0.1".to_string()),
        Just("[::1]".to_string()),
        Just(":".to_string()),
        Just("/".to_string()),
        Just("(?P<port>\\d+)".to_string()),
        "[0-9]{1,8}",
        "\\PC{0,6}",
        any::<String>().prop_map(|s| s.chars().take(8).collect()),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|v| v.concat())
}

mod readiness {
    use super::*;
    use coldstart_core::target::Readiness;

    proptest! {
        #![proptest_config(config(512))]

        /// Any spec parses or fails with a message; what parses prints as a spec
        /// that parses to the same readiness.
        #[test]
        fn parse_never_panics_and_display_round_trips(spec in spec_text()) {
            match Readiness::parse(&spec) {
                Ok(r) => {
                    let shown = r.to_string();
                    let again = Readiness::parse(&shown);
                    prop_assert!(again.is_ok(), "{spec:?} → {shown:?} does not parse: {again:?}");
                    prop_assert_eq!(again.map(|r| r.to_string()).ok(), Some(shown));
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
    }
}

mod config_file {
    use super::*;

    fn toml_value() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9]{1,6}",
            "-[0-9]{1,3}",
            "[0-9]{1,3}\\.[0-9]{1,3}",
            Just("true".to_string()),
            "\"\\PC{0,12}\"".prop_map(|s| s.replace('\\', "/")),
            prop::collection::vec("\"[a-z./ -]{0,8}\"", 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
            "\\{ [A-Z_]{1,5} = \"[a-z]{0,4}\" \\}",
            "\\PC{0,10}",
        ]
    }

    fn toml_text() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            Just("command"),
            Just("ready"),
            Just("env"),
            Just("cwd"),
            Just("runs"),
            Just("warmup"),
            Just("timeout"),
            Just("requests"),
            Just("url"),
            Just("bogus"),
        ];
        let table = prop_oneof![
            Just("[store]".to_string()),
            "\\[targets\\.[a-z]{1,6}\\]",
            Just("[targets]".to_string()),
            "\\[\\PC{0,6}\\]",
        ];
        let line = prop_oneof![
            3 => (key, toml_value()).prop_map(|(k, v)| format!("{k} = {v}")),
            1 => table,
            1 => "\\PC{0,20}",
        ];
        prop::collection::vec(line, 0..12).prop_map(|l| l.join("\n"))
    }

    proptest! {
        #![proptest_config(config(256))]

        /// coldstart.toml: loads or fails naming the file; a loaded target's settings
        /// (with a timeout in the sane range: huge ones are the duration checks'
        /// business) make a plan or a clean error.
        #[test]
        fn load_and_plan_never_panic(text in toml_text()) {
            let dir = tempfile::tempdir_in(crate::testkit::fixtures_dir()).expect("tempdir");
            std::fs::write(dir.path().join(coldstart_core::config::FILE), &text).expect("write");
            match coldstart_core::config::load(dir.path()) {
                Err(e) => prop_assert!(e.to_string().contains("coldstart.toml"), "{e}"),
                Ok(None) => prop_assert!(false, "the file was written"),
                Ok(Some(cfg)) => {
                    for (name, t) in &cfg.targets {
                        if t.timeout.is_some_and(|s| !(0.0..=1e6).contains(&s)) {
                            continue;
                        }
                        let argv = ["coldstart", "bench", "--no-store", name.as_str()];
                        let crate::flags::Command::Bench(b) = crate::flags::parse(argv).expect("cli") else { unreachable!() };
                        if let Err(e) = crate::cmd::bench::plan(&b, Some(&cfg), dir.path()) {
                            prop_assert!(!e.to_string().is_empty());
                        }
                    }
                }
            }
        }
    }
}

mod variant_grammar {
    use super::*;

    fn token() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => Just("--".to_string()),
            4 => Just("--name".to_string()),
            1 => "--name=[a-z]{0,3}",
            2 => Just("--env".to_string()),
            1 => Just("--ready".to_string()),
            1 => Just("--cwd".to_string()),
            1 => Just("--runs".to_string()),
            1 => Just("--memory".to_string()),
            1 => Just("--extensions".to_string()),
            1 => Just("--runtime".to_string()),
            2 => "[A-Z]{1,3}=[a-z0-9]{0,3}",
            3 => "[a-z0-9./]{1,6}",
            1 => "-[a-zA-Z-]{1,6}",
            1 => "\\PC{0,6}",
        ]
    }

    proptest! {
        #![proptest_config(config(1024))]

        #[test]
        fn bench_split_never_panics(args in prop::collection::vec(token(), 0..14)) {
            let is_name = |a: &String| a == "--name" || a.starts_with("--name=");
            match crate::flags::variants::split_bench_args(&args) {
                Err(e) => prop_assert!(!e.is_empty()),
                Ok((globals, specs)) => {
                    prop_assert_eq!(&args[..globals.len()], &globals[..], "globals are the leading arguments");
                    match specs.first() {
                        None => prop_assert_eq!(globals.len(), args.len()),
                        Some(first) if first.name.is_none() => {
                            prop_assert_eq!(specs.len(), 1);
                            prop_assert_eq!(&first.argv[..], &args[globals.len() + 1..], "verbatim after --");
                        }
                        Some(_) => {
                            for s in &specs {
                                prop_assert!(!s.argv.is_empty());
                                prop_assert!(!s.argv.iter().any(is_name), "{:?}", s.argv);
                            }
                        }
                    }
                    // What the grammar passed on, clap parses or refuses; no panic.
                    let argv = ["coldstart", "bench"].iter().map(|s| s.to_string()).chain(globals);
                    let _ = crate::flags::parse(argv);
                }
            }
        }

        #[test]
        fn lambda_split_never_panics(args in prop::collection::vec(token(), 0..14)) {
            match crate::flags::variants::split_lambda_args(&args) {
                Err(e) => prop_assert!(!e.is_empty()),
                Ok((globals, specs)) => {
                    prop_assert_eq!(&args[..globals.len()], &globals[..]);
                    prop_assert_eq!(specs.is_empty(), globals.len() == args.len());
                    let argv = ["coldstart", "lambda"].iter().map(|s| s.to_string()).chain(globals);
                    let _ = crate::flags::parse(argv);
                }
            }
        }
    }
}

/// One raw HTTP/1.1 exchange over loopback: the status, or None when no response
/// came within `wait` (a long poll) — a closed connection without a status is a
/// crash in the handler and fails the caller.
fn exchange(addr: std::net::SocketAddr, request: &[u8], wait: Duration) -> Result<Option<u16>, String> {
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(wait)).map_err(|e| e.to_string())?;
    // The server may answer (400) and close before reading everything: not an error.
    let _ = s.write_all(request);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if got.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if got.is_empty() {
                    return Ok(None);
                }
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !got.is_empty() => break,
            Err(e) => return Err(format!("read: {e} after {} bytes", got.len())),
        }
    }
    let head = String::from_utf8_lossy(&got);
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|c| (100..600).contains(c));
    status
        .map(Some)
        .ok_or_else(|| format!("no valid status line: {:?}", head.lines().next()))
}

fn http_request(method: &str, path: &str, headers: &[(String, String)], body: &[u8]) -> Vec<u8> {
    let mut r = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = r.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("POST".to_string()),
        3 => Just("GET".to_string()),
        2 => Just("PUT".to_string()),
        1 => Just("DELETE".to_string()),
        1 => Just("HEAD".to_string()),
        1 => Just("OPTIONS".to_string()),
        1 => "[A-Z]{1,8}",
    ]
}

fn header_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ -~]{0,40}".prop_map(|s| s.trim().to_string()),
        Just("application/json".to_string()),
        Just("application/x-protobuf".to_string()),
        Just("gzip".to_string()),
        Just("deflate".to_string()),
        "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
    ]
}

mod lambda_api {
    use super::*;
    use coldstart_lambda::{api, env::Function, server, state::Shared, telemetry::Bus};
    use std::sync::{Arc, OnceLock};

    /// One real Lambda API server (Runtime, Extensions, Telemetry, Logs) for every case.
    fn server() -> std::net::SocketAddr {
        static SERVER: OnceLock<(tokio::runtime::Runtime, server::Server)> = OnceLock::new();
        SERVER
            .get_or_init(|| {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("runtime");
                let env = Arc::new(api::Env {
                    shared: Arc::new(Shared::default()),
                    telemetry: Arc::new(Bus::default()),
                    function: Function {
                        name: "fuzz".into(),
                        version: "$LATEST".into(),
                        handler: "h".into(),
                        memory_mb: 128,
                        region: "us-east-1".into(),
                        account_id: "000000000000".into(),
                        task_root: "/task".into(),
                        log_stream: "s".into(),
                    },
                    external_names: vec!["ext".into()],
                });
                env.shared.update(|s| s.registration_open = true);
                let srv = rt
                    .block_on(server::Server::start(env))
                    .expect("start the API server");
                (rt, srv)
            })
            .1
            .addr
    }

    const NEXT: [&str; 2] = [
        "/2018-06-01/runtime/invocation/next",
        "/2020-01-01/extension/event/next",
    ];

    fn path() -> impl Strategy<Value = String> {
        let known = prop_oneof![
            Just("/2018-06-01/runtime/invocation/next".to_string()),
            "/2018-06-01/runtime/invocation/[a-z0-9%.-]{0,40}/response",
            "/2018-06-01/runtime/invocation/[a-z0-9%.-]{0,40}/error",
            Just("/2018-06-01/runtime/init/error".to_string()),
            Just("/2020-01-01/extension/register".to_string()),
            Just("/2020-01-01/extension/event/next".to_string()),
            Just("/2020-01-01/extension/init/error".to_string()),
            Just("/2020-01-01/extension/exit/error".to_string()),
            Just("/2022-07-01/telemetry".to_string()),
            Just("/2020-08-15/logs".to_string()),
        ];
        prop_oneof![
            6 => (known, prop::option::of("\\?[a-z=&%0-9]{0,12}")).prop_map(|(p, q)| p + &q.unwrap_or_default()),
            1 => "/[!-~]{0,60}",
        ]
    }

    fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
        let name = prop_oneof![
            Just("Content-Type".to_string()),
            Just("Lambda-Extension-Name".to_string()),
            Just("Lambda-Extension-Identifier".to_string()),
            Just("Lambda-Extension-Accept-Feature".to_string()),
            Just("Lambda-Runtime-Function-Error-Type".to_string()),
            Just("Lambda-Runtime-Function-XRay-Error-Cause".to_string()),
            "X-[A-Za-z-]{1,10}",
        ];
        prop::collection::vec((name, header_value()), 0..5)
    }

    fn body() -> impl Strategy<Value = Vec<u8>> {
        let json = prop_oneof![
            Just(r#"{"events":["INVOKE","SHUTDOWN"]}"#.to_string()),
            Just(r#"{"events":["BOGUS"]}"#.to_string()),
            Just(r#"{"errorMessage":"x","errorType":"T"}"#.to_string()),
            Just(r#"{"schemaVersion":"2022-07-01","types":["platform","function"],"buffering":{"maxItems":1000,"maxBytes":262144,"timeoutMs":25},"destination":{"protocol":"HTTP","URI":"http://sandbox.localdomain:1/x"}}"#.to_string()),
            Just(r#"{"types":["platform"],"buffering":{"maxItems":-1,"timeoutMs":18446744073709551615},"destination":{"protocol":"TCP","port":70000}}"#.to_string()),
            "\\{\"(events|types|destination|buffering|schemaVersion)\": ?(\\[\\]|null|1e999|-1|\"\\PC{0,8}\"|\\{\\})\\}",
        ];
        prop_oneof![
            3 => json.prop_map(String::into_bytes),
            2 => prop::collection::vec(any::<u8>(), 0..256),
            1 => Just(Vec::new()),
        ]
    }

    proptest! {
        #![proptest_config(config(256))]

        /// Every request gets an HTTP status (the long polls may also just wait).
        #[test]
        fn every_request_gets_a_status(m in method(), p in path(), h in headers(), b in body()) {
            let addr = server();
            // axum answers HEAD with the GET handler: a long poll too.
            let long_poll = (m == "GET" || m == "HEAD") && NEXT.iter().any(|n| p.split('?').next() == Some(n));
            let wait = if long_poll { Duration::from_millis(50) } else { Duration::from_secs(10) };
            let got = exchange(addr, &http_request(&m, &p, &h, &b), wait);
            match got {
                Ok(Some(_)) => {}
                Ok(None) => prop_assert!(long_poll, "{m} {p}: no response"),
                Err(e) => prop_assert!(false, "{m} {p} {h:?}: {e}"),
            }
        }

        /// Bytes that are not HTTP at all get a 400 or a closed connection, and the
        /// server keeps serving.
        #[test]
        fn garbage_on_the_socket_is_refused(bytes in prop::collection::vec(any::<u8>(), 1..512)) {
            let addr = server();
            let _ = exchange(addr, &bytes, Duration::from_millis(200));
            let after = exchange(addr, &http_request("GET", "/no-such-api", &[], b""), Duration::from_secs(10));
            prop_assert!(matches!(after, Ok(Some(404))), "{after:?}");
        }
    }
}

mod otlp_receiver {
    use super::*;
    use coldstart_explain::otlp::Receiver;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    use prost::Message;

    fn id(max: usize) -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..max),
            prop::collection::vec(0u8..3, 8..9),
        ]
    }

    fn time() -> impl Strategy<Value = u64> {
        prop_oneof![
            Just(0u64),
            Just(u64::MAX),
            any::<u64>(),
            // Around now, so spans land inside the receiver's window.
            (0u64..5_000_000_000).prop_map(|d| {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0);
                now.saturating_sub(d)
            }),
        ]
    }

    fn value() -> impl Strategy<Value = Option<AnyValue>> {
        let v = prop_oneof![
            "\\PC{0,10}".prop_map(any_value::Value::StringValue),
            any::<i64>().prop_map(any_value::Value::IntValue),
            any::<f64>().prop_map(any_value::Value::DoubleValue),
            any::<bool>().prop_map(any_value::Value::BoolValue),
            prop::collection::vec(any::<u8>(), 0..8).prop_map(any_value::Value::BytesValue),
        ];
        prop::option::of(prop::option::of(v).prop_map(|value| AnyValue { value }))
    }

    fn span() -> impl Strategy<Value = Span> {
        (
            id(20),
            id(12),
            id(12),
            "\\PC{0,12}",
            time(),
            time(),
            prop::collection::vec(("[a-z.]{0,8}", value()), 0..4),
        )
            .prop_map(
                |(trace_id, span_id, parent_span_id, name, start, end, attrs)| Span {
                    trace_id,
                    span_id,
                    parent_span_id,
                    name,
                    start_time_unix_nano: start,
                    end_time_unix_nano: end,
                    attributes: attrs
                        .into_iter()
                        .map(|(key, value)| KeyValue {
                            key,
                            value,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                },
            )
    }

    fn request() -> impl Strategy<Value = ExportTraceServiceRequest> {
        prop::collection::vec(prop::collection::vec(span(), 0..6), 0..3).prop_map(|groups| {
            ExportTraceServiceRequest {
                resource_spans: groups
                    .into_iter()
                    .map(|spans| ResourceSpans {
                        scope_spans: vec![ScopeSpans {
                            spans,
                            ..Default::default()
                        }],
                        ..Default::default()
                    })
                    .collect(),
            }
        })
    }

    /// (content type, body): a real request, as protobuf or OTLP/JSON.
    fn encoded() -> impl Strategy<Value = (Option<String>, Vec<u8>)> {
        (request(), any::<bool>()).prop_map(|(r, json)| {
            if json {
                (
                    Some("application/json".to_string()),
                    serde_json::to_vec(&r).unwrap_or_default(),
                )
            } else {
                (Some("application/x-protobuf".to_string()), r.encode_to_vec())
            }
        })
    }

    /// (content type, content encoding, body)
    fn post() -> impl Strategy<Value = (Option<String>, Option<String>, Vec<u8>)> {
        let mangled = (encoded(), any::<usize>(), any::<u8>()).prop_map(|((t, mut b), at, x)| {
            if !b.is_empty() {
                let i = at % b.len();
                b[i] ^= x | 1;
                b.truncate(b.len() - at % 3);
            }
            (t, b)
        });
        let raw = (
            prop::option::of(header_value()),
            prop::collection::vec(any::<u8>(), 0..300),
        );
        let body = prop_oneof![3 => encoded(), 2 => mangled, 2 => raw];
        let compression = prop_oneof![
            3 => Just(None),
            1 => Just(Some("gzip".to_string())),
            1 => Just(Some("deflate".to_string())),
            1 => prop::option::of(header_value()),
        ];
        (body, compression, any::<bool>()).prop_map(
            |((ctype, body), enc, compress): ((Option<String>, Vec<u8>), Option<String>, bool)| {
                let body = match (enc.as_deref(), compress) {
                    (Some("gzip"), true) => {
                        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                        e.write_all(&body).ok();
                        e.finish().unwrap_or_default()
                    }
                    (Some("deflate"), true) => {
                        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
                        e.write_all(&body).ok();
                        e.finish().unwrap_or_default()
                    }
                    _ => body,
                };
                (ctype, enc, body)
            },
        )
    }

    proptest! {
        #![proptest_config(config(128))]

        /// Each post gets a status; whatever arrived becomes a section or a clean error.
        #[test]
        fn any_posts_give_statuses_and_a_section(
            posts in prop::collection::vec((prop_oneof![4 => Just("/v1/traces"), 1 => Just("/v1/logs"), 1 => Just("/v1/x")], post()), 1..4)
        ) {
            let r = Receiver::start().expect("receiver");
            let addr: std::net::SocketAddr = r
                .endpoint()
                .trim_start_matches("http://")
                .parse()
                .expect("the receiver's address");
            let t0 = coldstart_core::clock::now_ns();
            for (path, (ctype, enc, body)) in &posts {
                let mut headers = Vec::new();
                if let Some(t) = ctype {
                    headers.push(("Content-Type".to_string(), t.clone()));
                }
                if let Some(e) = enc {
                    headers.push(("Content-Encoding".to_string(), e.clone()));
                }
                let got = exchange(addr, &http_request("POST", path, &headers, body), Duration::from_secs(10));
                prop_assert!(matches!(got, Ok(Some(_))), "{path} {headers:?}: {got:?}");
            }
            if let Err(e) = r.finish(t0) {
                prop_assert!(!e.to_string().is_empty());
            }
        }
    }
}

/// `--param` specs, `{name}` templates and `REF:NAME[k=v]` references: no panic,
/// errors are one line, ranges ascend, and substitution puts in exactly the value.
mod sweep_grammar {
    use super::*;
    use coldstart_core::experiment::sweep::{self, MAX_VALUES};
    use coldstart_core::store::reference::Reference;

    fn text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("n".to_string()),
            Just("heap".to_string()),
            Just("=".to_string()),
            Just(",".to_string()),
            Just("..".to_string()),
            Just(":".to_string()),
            Just(":x".to_string()),
            Just("{".to_string()),
            Just("}".to_string()),
            Just("{{".to_string()),
            Just("[".to_string()),
            Just("]".to_string()),
            Just("latest".to_string()),
            "-?[0-9]{1,6}(\\.[0-9]{1,3})?",
            "[a-z]{1,4}",
            any::<String>().prop_map(|s| s.chars().take(6).collect()),
        ];
        prop::collection::vec(piece, 0..8).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(config(1024))]

        #[test]
        fn param_specs(spec in text()) {
            match sweep::parse_param(&spec) {
                Ok(p) => {
                    prop_assert!(!p.values.is_empty() && p.values.len() <= MAX_VALUES);
                    prop_assert!(p.values.iter().all(|v| !v.is_empty() && !v.contains([']', '['])));
                    if spec[p.name.len() + 1..].contains("..") {
                        let xs: Vec<f64> = p.values.iter().map(|v| v.parse().unwrap()).collect();
                        prop_assert!(xs.windows(2).all(|w| w[0] < w[1]), "{spec}: {xs:?}");
                    }
                }
                Err(e) => prop_assert!(!e.contains('\n'), "{e}"),
            }
        }

        #[test]
        fn substitution(template in text(), value in "[a-z0-9.]{1,5}") {
            let point = vec![("n".to_string(), value.clone())];
            let mut used = std::collections::BTreeSet::new();
            match sweep::substitute(&template, &point, &mut used) {
                Ok(out) => {
                    if !template.contains('{') {
                        prop_assert_eq!(&out, &template);
                    }
                    // The literal escape and a placeholder round-trip.
                    let wrapped = format!("<{{n}}|{{{{n}}}}|{template}>");
                    if let Ok(w) = sweep::substitute(&wrapped, &point, &mut used) {
                        let want = format!("<{value}|{{n}}|");
                        prop_assert!(w.starts_with(&want), "{w}");
                    }
                }
                Err(e) => prop_assert!(e.contains("unknown parameter") && !e.contains('\n'), "{e}"),
            }
        }

        /// A point's name reads back as a selector that picks exactly it.
        #[test]
        fn point_names_read_back(
            base in "[a-z][a-z0-9 ./'-]{0,8}",
            pt in prop::collection::btree_map("[a-z_][a-z0-9_-]{0,4}", "[A-Za-z0-9.:=/%-]{1,6}", 1..4),
        ) {
            let pt: Vec<(String, String)> = pt.into_iter().collect();
            let name = sweep::point_name(&base, &pt);
            let sel = coldstart_core::store::reference::Selector::parse(&name).unwrap();
            prop_assert_eq!(sel.name.as_deref(), Some(base.as_str()));
            prop_assert_eq!(&sel.params, &pt);
            prop_assert!(sel.matches_name(&name));
            let r = Reference::parse(&format!("latest:{name}")).unwrap();
            prop_assert_eq!(r.experiment, "latest");
            prop_assert_eq!(r.variant, Some(sel));
        }

        #[test]
        fn references(r in text()) {
            if let Err(e) = Reference::parse(&r) {
                prop_assert!(!e.to_string().contains('\n'));
            }
        }
    }
}
