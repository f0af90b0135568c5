//! The OTLP receiver's memory over a whole explain: a target that exports
//! 100,000 spans per run over OTLP/HTTP (protobuf request bodies made with the
//! opentelemetry-proto messages, posted by one curl to the endpoint coldstart
//! gives it, in batches as an SDK sends them), five runs of each arm. coldstart's peak resident memory stays bounded
//! however many runs there are. A run fills the receiver's limits (16 MiB of spans,
//! about 22,000) well before its 100,000th span and counts the rest as dropped: twice
//! as many spans would test nothing more, and decoding them in an unoptimised build
//! made this the suite's longest test (98 s with 200,000).
//!
//! Its own test binary: the peak is the child's ru_maxrss, and a child's exec
//! records the high-water RSS of the address space it leaves, which is its
//! parent's (the test process's) when it was forked or vforked from it. Beside
//! two hundred other tests in one process that parent is large, and its peak
//! would be charged to coldstart.

use coldstart_testkit::{self as testkit, json_file, Cs};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

const SPANS_PER_RUN: usize = 100_000;
/// 500 spans a request, about what the SDKs' batch span processors send (512 by
/// default): 200 requests a run.
const REQUESTS_PER_RUN: usize = 200;
/// The bound the receiver promises for the whole coldstart process.
const PEAK_LIMIT_KB: i64 = 128 * 1024;

fn kv(key: &str, v: String) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v)),
        }),
        ..KeyValue::default()
    }
}

/// One export request of `n` spans (a root per 100, the rest its children), as an
/// instrumented service's batch processor would send: ids, times, attributes.
fn request(batch: usize, n: usize) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let spans = (0..n)
        .map(|i| {
            let id = (batch * n + i) as u64 + 1;
            let root = id - id % 100 + 1;
            let mut trace_id = [0u8; 16];
            trace_id[..8].copy_from_slice(&root.to_be_bytes());
            Span {
                trace_id: trace_id.to_vec(),
                span_id: id.to_be_bytes().to_vec(),
                parent_span_id: if id == root {
                    Vec::new()
                } else {
                    root.to_be_bytes().to_vec()
                },
                name: format!("handle-request-{}", i % 50),
                start_time_unix_nano: now + i as u64 * 1_000,
                end_time_unix_nano: now + i as u64 * 1_000 + 900,
                attributes: vec![
                    kv("http.route", format!("/items/{}", i % 37)),
                    kv("db.statement", format!("SELECT * FROM items WHERE id = {id}")),
                    kv("worker", format!("w{}", i % 8)),
                ],
                ..Span::default()
            }
        })
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![kv("service.name", "span-flood".into())],
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "coldstart-test".into(),
                    ..InstrumentationScope::default()
                }),
                spans,
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    }
    .encode_to_vec()
}

/// Run `coldstart ARGS` and return its output and its peak resident memory (kB):
/// wait4's ru_maxrss, which covers coldstart and every descendant it reaped (the
/// targets are small), so it bounds coldstart's own peak from above.
fn run_measured(cmd: &mut Cs, stdout_to: &Path) -> (std::process::ExitStatus, i64) {
    let out = std::fs::File::create(stdout_to).unwrap();
    let child = cmd.stdout(out.try_clone().unwrap()).stderr(out).spawn();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own unreaped child; both pointers are to locals we own.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4: {}", std::io::Error::last_os_error());
    std::mem::forget(child);
    (std::process::ExitStatus::from_raw(status), usage.ru_maxrss)
}

#[test]
fn receiver_memory_stays_bounded_over_runs() {
    let Some(curl) = testkit::tool("CURL", "curl") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bodies = dir.path().join("bodies");
    std::fs::create_dir(&bodies).unwrap();
    for b in 0..REQUESTS_PER_RUN {
        let body = request(b, SPANS_PER_RUN / REQUESTS_PER_RUN);
        std::fs::write(bodies.join(format!("{b:04}.pb")), body).unwrap();
    }
    // One curl posts every body in turn (a config on stdin, one block per
    // request); every request must be accepted (fail, fail-early), or the run fails.
    let script = r#"first=1
for f in "$1"/*.pb; do
  [ "$first" = 1 ] || echo next
  first=0
  printf 'url = "%s"\ndata-binary = "@%s"\nheader = "Content-Type: application/x-protobuf"\noutput = "/dev/null"\nfail\n' "$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" "$f"
done | "$0" -sS --fail-early -K -"#;
    let (json, log) = (dir.path().join("e.json"), dir.path().join("out.txt"));
    let (status, peak_kb) = run_measured(
        Cs::new(env!("CARGO_BIN_EXE_coldstart"))
            .args([
                "explain",
                "--runs",
                "5",
                "--adapter",
                "none",
                "--ready",
                "exit",
                "--export-json",
                json.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                script,
                curl.to_str().unwrap(),
                bodies.to_str().unwrap(),
            ])
            .quiet()
            .no_store(),
        &log,
    );
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "{status}: {output}");
    // The spans still arrive and are shown: the first ones of the run, up to the
    // receiver's limits, the rest counted as dropped.
    let doc = json_file(&json);
    let otlp = doc["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "otlp")
        .unwrap_or_else(|| panic!("no otlp section: {}", doc["sources"]))
        .clone();
    let fact = |name: &str| -> u64 {
        otlp["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f[0] == name)
            .and_then(|f| f[1]["count"].as_u64())
            .unwrap_or_else(|| panic!("no fact {name}: {}", otlp["facts"]))
    };
    let kept = fact("spans");
    assert_eq!(kept + fact("dropped"), SPANS_PER_RUN as u64, "{}", otlp["facts"]);
    assert!(kept >= 10_000, "only {kept} spans kept: {}", otlp["facts"]);
    assert_eq!(otlp["spans"].as_array().map(Vec::len), Some(kept as usize));
    testkit::say(&format!(
        "explain --runs 5 of a 100k-span target: peak RSS {} MiB, {kept} spans kept a run",
        peak_kb / 1024
    ));
    assert!(
        peak_kb <= PEAK_LIMIT_KB,
        "coldstart's peak RSS was {} MiB over 5 runs (bound: {} MiB)",
        peak_kb / 1024,
        PEAK_LIMIT_KB / 1024
    );
}
