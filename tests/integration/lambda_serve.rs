//! `coldstart lambda serve`: the Lambda API over the emulator, driven by a real
//! SDK (boto3, pinned in tests/fixtures/boto3, installed by
//! tests/fixtures/boto3-setup.sh) and by plain HTTP. The function is a custom
//! runtime in shell + curl (tests/fixtures/lambda-serve/bootstrap), so no
//! runtime interface client is needed.
//!
//! The oracles: the function's own answers (its pid says which environment ran
//! an invoke: the same pid is a warm invoke, a new one a cold one), the REPORT
//! line parsed here against the emulator's own measure of that environment's
//! init (the `X-Coldstart-Init-Duration-Ns` header), the SDK's own parse of the
//! error shapes, and /proc after SIGINT (no process with the function's marker).

use crate::common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// How long `lambda serve` may take to say it listens, or to say anything the
/// test waits for (a debug build on a busy machine).
const SAYS_WITHIN: Duration = Duration::from_secs(60);

fn bootstrap() -> String {
    repo()
        .join("tests/fixtures/lambda-serve/bootstrap")
        .display()
        .to_string()
}

/// boto3 installed by tests/fixtures/boto3-setup.sh, or a skip under BOTO3.
fn boto3() -> Option<PathBuf> {
    let dir = repo().join("target/boto3/python");
    testkit::need("BOTO3", dir.join("boto3").is_dir().then_some(dir), || {
        "boto3 is not installed: run tests/fixtures/boto3-setup.sh".into()
    })
}

/// A running `coldstart lambda serve`, its stderr line by line.
struct Server {
    child: Child,
    url: String,
    lines: Receiver<String>,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let port = testkit::free_port().to_string();
        let mut all = vec!["lambda", "serve", "--port", &port];
        if !with_cgroups() {
            all.push("--no-cgroup");
        }
        all.extend_from_slice(args);
        let mut c = cs(&all);
        c.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = c.spawn();
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Server {
            child,
            url: String::new(),
            lines,
        };
        let said = server.wait_for("listening on http://");
        server.url = said
            .split("listening on ")
            .nth(1)
            .expect("the address")
            .trim()
            .to_string();
        server
    }

    /// The next stderr line containing `text` (the lines before it are skipped).
    fn wait_for(&mut self, text: &str) -> String {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(SAYS_WITHIN) {
                Ok(l) if l.contains(text) => return l,
                Ok(l) => seen.push(l),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("lambda serve did not say {text:?}; it said:\n{}", seen.join("\n"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "lambda serve ended before saying {text:?}; it said:\n{}",
                        seen.join("\n")
                    )
                }
            }
        }
    }

    /// SIGINT, then its exit code.
    fn interrupt(&mut self) -> Option<i32> {
        self.signal(libc::SIGINT)
    }

    /// `sig`, then its exit code.
    fn signal(&mut self, sig: i32) -> Option<i32> {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, sig) };
        self.child.wait().expect("waiting for lambda serve").code()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // A failed test must not leave the server running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environments' own cgroups (`lambda-…`, under coldstart's run cgroup) that
/// the live processes carrying `marker` are in; none without cgroups.
fn env_cgroups(marker: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for pid in processes_with(marker) {
        let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
        for d in coldstart_cgroup_dirs(&own) {
            let named = d
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("lambda-"));
            if named && !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    dirs
}

/// Whether coldstart makes cgroups in these tests (as root; `--no-cgroup` otherwise).
fn with_cgroups() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The tab-separated `Key: value` fields of a REPORT line.
fn report_fields(line: &str) -> Vec<(String, String)> {
    line.strip_prefix("REPORT ")
        .unwrap_or_else(|| panic!("not a REPORT line: {line}"))
        .split('\t')
        .filter_map(|f| f.split_once(": ").map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// The REPORT line that ends a log tail.
fn report_of(log: &str) -> Vec<(String, String)> {
    let last = log.trim_end().lines().last().unwrap_or_default();
    report_fields(last)
}

fn field<'a>(fields: &'a [(String, String)], key: &str) -> Option<&'a str> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn init_ms(fields: &[(String, String)]) -> Option<f64> {
    field(fields, "Init Duration").map(|v| {
        v.strip_suffix(" ms")
            .unwrap_or_else(|| panic!("Init Duration: {v}"))
            .parse()
            .unwrap()
    })
}

/// A cold invoke's REPORT shows Init Duration equal (to its two printed
/// decimals) to what the emulator measured for that environment.
fn assert_cold(name: &str, inv: &Value) {
    let log = inv["log"].as_str().unwrap();
    let fields = report_of(log);
    let shown =
        init_ms(&fields).unwrap_or_else(|| panic!("{name}: no Init Duration in a cold REPORT:\n{log}"));
    let measured_ns: f64 = inv["init_ns"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: no measured init: {inv}"))
        .parse()
        .unwrap();
    let measured_ms = measured_ns / 1e6;
    assert!(
        (shown - measured_ms).abs() <= 0.005 + 1e-9,
        "{name}: REPORT says Init Duration {shown} ms, the emulator measured {measured_ms} ms"
    );
    assert!(shown > 0.0, "{name}: {shown}");
}

fn assert_warm(name: &str, inv: &Value) {
    let log = inv["log"].as_str().unwrap();
    assert_eq!(
        init_ms(&report_of(log)),
        None,
        "{name}: a warm REPORT has no Init Duration:\n{log}"
    );
    assert!(inv["init_ns"].is_null(), "{name}: {inv}");
}

fn error(doc: &Value, key: &str) -> (String, u64) {
    let e = &doc[key];
    (
        e["code"]
            .as_str()
            .unwrap_or_else(|| panic!("{key}: no error: {doc}"))
            .to_string(),
        e["status"].as_u64().unwrap(),
    )
}

/// boto3, pointed at `lambda serve` with endpoint_url: Invoke with LogType Tail
/// (cold, then warm, a handled error that keeps the environment), a
/// configuration update and its waiter, PublishVersion (cold, then warm, at the
/// new memory size), $LATEST cold again, GetFunctionConfiguration, GetFunction,
/// ListVersionsByFunction, DeleteFunction with a qualifier, and the errors as
/// boto3 parses them. Then SIGINT: nothing of the function is left running.
#[test]
fn boto3_drives_lambda_serve() {
    let _turn = crate::common::beside();
    let (Some(python), Some(_curl), Some(sdk)) = (testkit::python(), testkit::tool("CURL", "curl"), boto3())
    else {
        return;
    };
    let marker = testkit::marker("lambda-serve");
    let bootstrap = bootstrap();
    // A second function, first in the alphabet but second on the command line.
    let mut server = Server::start(&[
        "--name",
        "hello",
        "--runtime",
        &bootstrap,
        "--memory",
        "256",
        "--env",
        &marker,
        "--name",
        "aaa-second",
        "--runtime",
        &bootstrap,
        "--memory",
        "128",
    ]);
    let out = std::process::Command::new(&python)
        .arg(repo().join("tests/fixtures/boto3/drive_serve.py"))
        .args([&server.url, "hello", &marker])
        .env("PYTHONPATH", &sdk)
        // No instance metadata or config files are looked for: the keys are given.
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .output()
        .expect("running the boto3 driver");
    assert!(out.status.success(), "boto3 driver failed:\n{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));

    let (cold, warm) = (&doc["cold"], &doc["warm"]);
    assert_eq!(cold["status"], 200);
    assert_eq!(cold["payload"]["event"], serde_json::json!({"n": 1}), "{cold}");
    assert_eq!(cold["executed_version"], "$LATEST");
    let log = cold["log"].as_str().unwrap();
    let request_id = field(&report_of(log), "RequestId").unwrap().to_string();
    assert!(
        log.contains(&format!("START RequestId: {request_id} Version: $LATEST")),
        "{log}"
    );
    assert!(log.contains(&format!("END RequestId: {request_id}")), "{log}");
    assert!(
        log.contains("bootstrap handling"),
        "the function's own output: {log}"
    );
    assert_eq!(field(&report_of(log), "Memory Size"), Some("256 MB"));
    assert_cold("cold", cold);
    assert_warm("warm", warm);
    assert_eq!(
        warm["payload"]["pid"], cold["payload"]["pid"],
        "a warm invoke reuses the environment"
    );

    let failed = &doc["failed"];
    assert_eq!(failed["function_error"], "Unhandled", "{failed}");
    assert_eq!(failed["payload"]["errorType"], "Fail", "{failed}");
    assert_eq!(
        doc["after_failure"]["payload"]["pid"], cold["payload"]["pid"],
        "a handled error keeps the environment"
    );

    let updated = &doc["updated"];
    assert_eq!(updated["MemorySize"], 512);
    assert_eq!(updated["Environment"]["Variables"]["COLDSTART_RUN"], "run-1");
    assert_eq!(updated["LastUpdateStatus"], "Successful");
    assert_eq!(updated["State"], "Active");
    assert_eq!(doc["published"]["Version"], "1");

    let (vcold, vwarm) = (&doc["version_cold"], &doc["version_warm"]);
    assert_eq!(vcold["executed_version"], "1");
    assert_cold("version_cold", vcold);
    assert_warm("version_warm", vwarm);
    assert_eq!(vcold["payload"]["memory"], "512");
    assert_eq!(vcold["payload"]["version"], "1");
    assert_eq!(vcold["payload"]["run"], "run-1");
    assert_ne!(vcold["payload"]["pid"], cold["payload"]["pid"]);
    assert_eq!(vwarm["payload"]["pid"], vcold["payload"]["pid"]);
    let vlog = vcold["log"].as_str().unwrap();
    assert!(vlog.contains("Version: 1"), "{vlog}");
    assert_eq!(field(&report_of(vlog), "Memory Size"), Some("512 MB"));

    let latest = &doc["latest_after_update"];
    assert_cold("latest_after_update", latest);
    assert_eq!(latest["payload"]["memory"], "512");
    assert_ne!(latest["payload"]["pid"], cold["payload"]["pid"]);

    let conf = &doc["configuration"];
    assert_eq!(conf["Version"], "1");
    assert_eq!(conf["MemorySize"], 512);
    assert!(
        conf["FunctionArn"]
            .as_str()
            .unwrap()
            .ends_with(":function:hello:1"),
        "{conf}"
    );
    assert_eq!(doc["function"]["FunctionName"], "hello");
    assert_eq!(doc["versions"], serde_json::json!(["$LATEST", "1"]));
    assert_eq!(doc["versions_after_delete"], serde_json::json!(["$LATEST"]));
    assert_eq!(
        error(&doc, "deleted_version"),
        ("ResourceNotFoundException".into(), 404)
    );
    assert_eq!(
        error(&doc, "unknown_function"),
        ("ResourceNotFoundException".into(), 404)
    );
    assert_eq!(
        error(&doc, "unknown_invoke"),
        ("ResourceNotFoundException".into(), 404)
    );
    assert_eq!(
        error(&doc, "bad_memory"),
        ("InvalidParameterValueException".into(), 400)
    );
    assert_eq!(
        error(&doc, "delete_latest"),
        ("ResourceConflictException".into(), 409)
    );
    // The runtime interface emulator's `function`: the command line's first (hello,
    // now 512 MB), not the alphabet's.
    assert_eq!(doc["rie_memory"], "512");
    // ListFunctions and GetAccountSettings, the usual first smoke tests.
    assert_eq!(doc["listed"], serde_json::json!(["hello", "aaa-second"]));
    assert!(
        doc["listed_request_id"].as_str().is_some_and(|r| r.len() == 36),
        "{doc}"
    );
    assert_eq!(doc["account_concurrency"], 1000);
    // Operations not served: the service's error shape naming the operation.
    for (key, op) in [
        ("create_function", "CreateFunction"),
        ("update_code", "UpdateFunctionCode"),
        ("list_aliases", "ListAliases"),
    ] {
        assert_eq!(
            error(&doc, key),
            ("UnsupportedOperationException".into(), 501),
            "{key}"
        );
        let message = doc[key]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("does not serve {op}")),
            "{key}: {message}"
        );
        assert!(
            doc[key]["request_id"].as_str().is_some_and(|r| !r.is_empty()),
            "{key}: {doc}"
        );
    }
    // A payload over the service's 6 MB: its error, not a plain-text 413.
    assert_eq!(
        error(&doc, "too_large"),
        ("RequestEntityTooLargeException".into(), 413)
    );

    // The $LATEST environment is alive (the check below can see the function)...
    assert!(
        !processes_with(&marker).is_empty(),
        "no live process carries {marker}"
    );
    let cgroups = env_cgroups(&marker);
    assert_eq!(cgroups.is_empty(), !with_cgroups(), "{cgroups:?}");
    assert_eq!(server.interrupt(), Some(130));
    // ...and after SIGINT nothing of it is: no process, no cgroup.
    assert_eq!(
        processes_with(&marker),
        Vec::<i32>::new(),
        "left running after SIGINT"
    );
    let left: Vec<&PathBuf> = cgroups.iter().filter(|d| d.exists()).collect();
    assert!(left.is_empty(), "cgroups left after SIGINT: {left:?}");
}

/// An invoke that outlives the function's timeout: the service's message, with
/// the timeout in it, and the environment replaced.
#[test]
fn a_timed_out_invoke_says_after_how_many_seconds() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("block");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let bootstrap = bootstrap();
    let block = format!("BLOCK_FIFO={}", fifo.display());
    let mut server = Server::start(&[
        "--timeout",
        "1",
        "--name",
        "slow",
        "--runtime",
        &bootstrap,
        "--env",
        &block,
    ]);
    let (status, headers, body) = invoke(
        &server.url,
        "/2015-03-31/functions/slow/invocations",
        r#"{"block": true}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        header(&headers, "x-amz-function-error"),
        Some("Unhandled"),
        "{headers:?}"
    );
    let doc: Value = serde_json::from_str(&body).unwrap();
    let message = doc["errorMessage"].as_str().unwrap_or_default();
    let id = header(&headers, "x-amzn-requestid").unwrap_or_default();
    assert!(
        message.ends_with(&format!("{id} Task timed out after 1.00 seconds")),
        "{message}"
    );
    assert_eq!(server.interrupt(), Some(130));
}

/// Invoke over plain HTTP: (status, headers, body).
fn invoke(url: &str, path: &str, body: &str) -> (u16, Vec<(String, String)>, String) {
    let r = ureq::post(&format!("{url}{path}"))
        .set("X-Amz-Log-Type", "Tail")
        .send_string(body);
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("POST {path}: {e}"),
    };
    let status = resp.status();
    let headers = resp
        .headers_names()
        .into_iter()
        .map(|h| {
            (
                h.to_ascii_lowercase(),
                resp.header(&h).unwrap_or_default().to_string(),
            )
        })
        .collect();
    (status, headers, resp.into_string().unwrap_or_default())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// One environment per version and no scale-out: a second invoke while the
/// first runs is TooManyRequestsException (429, in X-Amzn-ErrorType). The
/// runtime interface emulator's path reaches the function. An environment idle
/// for --idle-timeout is shut down (with a process it started in a session of
/// its own), and the next invoke is cold again. SIGTERM stops the server.
#[test]
fn busy_environment_throttles_and_idle_one_ends() {
    let _turn = crate::common::beside();
    let Some(_curl) = testkit::tool("CURL", "curl") else {
        return;
    };
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let fifo = dir.path().join("block");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo creates a file.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let marker = testkit::marker("lambda-serve-busy");
    let block = format!("BLOCK_FIFO={}", fifo.display());
    let bootstrap = bootstrap();
    let mut server = Server::start(&[
        "--idle-timeout",
        "0.5",
        "--name",
        "f",
        "--runtime",
        &bootstrap,
        "--env",
        &marker,
        "--env",
        &block,
    ]);
    let path = "/2015-03-31/functions/function/invocations";
    let (status, headers, body) = invoke(&server.url, path, "{}");
    assert_eq!(status, 200, "{body}");
    assert!(
        header(&headers, "x-coldstart-init-duration-ns").is_some(),
        "the first invoke is cold"
    );

    let url = server.url.clone();
    let first = std::thread::spawn(move || invoke(&url, path, r#"{"block": 1}"#));
    // Opening the FIFO for writing returns once the function opened it to read:
    // the first invoke is running then.
    let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let (status, headers, body) = invoke(&server.url, "/2015-03-31/functions/f/invocations", "{}");
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        header(&headers, "x-amzn-errortype"),
        Some("TooManyRequestsException")
    );
    use std::io::Write;
    writeln!(w, "go").unwrap();
    drop(w);
    let (status, _, body) = first.join().unwrap();
    assert_eq!(status, 200);
    assert_eq!(body, r#"{"unblocked":true}"#);

    // A process out of the runtime's group and session: the idle environment's
    // end must take it too.
    let (status, _, body) = invoke(&server.url, path, r#"{"daemon": 1}"#);
    assert_eq!(status, 200, "{body}");
    let daemon: Value = serde_json::from_str(&body).unwrap();
    let daemon = daemon["daemon"].as_i64().unwrap() as i32;
    assert!(
        processes_with(&marker).contains(&daemon),
        "the daemon {daemon} is not running"
    );
    let cgroups = env_cgroups(&marker);
    assert_eq!(cgroups.is_empty(), !with_cgroups(), "{cgroups:?}");
    server.wait_for("f:$LATEST idle for 0.5 s: environment shut down");
    assert_eq!(
        processes_with(&marker),
        Vec::<i32>::new(),
        "the idle environment's processes"
    );
    let left: Vec<&PathBuf> = cgroups.iter().filter(|d| d.exists()).collect();
    assert!(left.is_empty(), "the idle environment's cgroups: {left:?}");
    let (status, headers, _) = invoke(&server.url, path, "{}");
    assert_eq!(status, 200);
    assert!(
        header(&headers, "x-coldstart-init-duration-ns").is_some(),
        "cold again after the idle timeout"
    );
    // SIGTERM ends it as SIGINT does (128 + 15).
    assert_eq!(server.signal(libc::SIGTERM), Some(143));
    assert_eq!(processes_with(&marker), Vec::<i32>::new());
}

/// What the command refuses before serving: a non-loopback bind without
/// --allow-remote; and its help says requests are not verified.
#[test]
fn serve_refuses_a_remote_bind_and_says_signatures_are_not_verified() {
    let _turn = crate::common::beside();
    let o = cs(&["lambda", "serve", "--bind", "0.0.0.0", "--runtime", &bootstrap()]).run();
    assert_eq!(o.code(), Some(2), "{}", o.streams());
    assert!(o.stderr().contains("--allow-remote"), "{}", o.stderr());
    let help = cs(&["lambda", "serve", "--help"]).run();
    assert!(help.success(), "{}", help.streams());
    let text = help.stdout();
    assert!(text.contains("not verified"), "{text}");
    assert!(text.contains("coldstart lambda serve"), "{text}");
}

/// A control-plane call over plain HTTP: (status, X-Amzn-ErrorType, JSON body).
fn call(method: &str, url: &str, body: Option<&str>) -> (u16, Option<String>, Value) {
    let req = ureq::request(method, url);
    let r = match body {
        Some(b) => req.send_string(b),
        None => req.call(),
    };
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    let kind = resp.header("X-Amzn-ErrorType").map(str::to_string);
    let text = resp.into_string().unwrap_or_default();
    (status, kind, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The control plane's edges, no invoke: names as ARNs and `name:qualifier`,
/// layers by their listed ARN or a directory's path (an unknown one is 400),
/// PublishVersion of an unchanged $LATEST returns the same version, a stale
/// RevisionId is 412, reserved environment variables are 400. A runtime that
/// exits during init makes each invoke a function error with the init's log.
#[test]
fn control_plane_names_layers_revisions_and_versions() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (one, two) = (dir.path().join("otel"), dir.path().join("other"));
    std::fs::create_dir_all(&one).unwrap();
    std::fs::create_dir_all(&two).unwrap();
    let bootstrap = bootstrap();
    // A runtime that exits during its init.
    let broken = dir.path().join("broken");
    std::fs::write(&broken, "#!/bin/sh\necho dying in init\nexit 3\n").unwrap();
    std::fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let server = Server::start(&[
        "--region",
        "eu-west-1",
        "--name",
        "g",
        "--runtime",
        &bootstrap,
        "--layer",
        one.to_str().unwrap(),
        "--name",
        "broken",
        "--runtime",
        broken.to_str().unwrap(),
    ]);
    // A failed init is the invoke's function error, with the init's log.
    for _ in 0..2 {
        let (status, headers, body) = invoke(&server.url, "/2015-03-31/functions/broken/invocations", "{}");
        assert_eq!(status, 200, "{body}");
        assert_eq!(header(&headers, "x-amz-function-error"), Some("Unhandled"));
        let doc: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(doc["errorType"], "Runtime.ExitError", "{doc}");
        use base64::Engine;
        let log = base64::engine::general_purpose::STANDARD
            .decode(header(&headers, "x-amz-log-result").unwrap())
            .unwrap();
        let log = String::from_utf8_lossy(&log);
        assert!(log.contains("dying in init"), "{log}");
        assert!(
            log.trim_end().lines().last().unwrap().starts_with("INIT_REPORT"),
            "{log}"
        );
    }
    let base = format!("{}/2015-03-31/functions", server.url);
    let arn = "arn:aws:lambda:eu-west-1:000000000000:function:g";
    let (status, _, conf) = call("GET", &format!("{base}/{arn}/configuration"), None);
    assert_eq!(status, 200, "{conf}");
    assert_eq!(conf["FunctionArn"], arn);
    let layer_arn = "arn:aws:lambda:eu-west-1:000000000000:layer:otel:1";
    assert_eq!(conf["Layers"][0]["Arn"], layer_arn, "{conf}");
    assert_eq!(conf["MemorySize"], 1769);

    // A layer by a directory's path gets its ARN; an unknown name is refused.
    let update = format!(r#"{{"Layers": ["{layer_arn}", "{}"]}}"#, two.display());
    let (status, _, conf) = call("PUT", &format!("{base}/g/configuration"), Some(&update));
    assert_eq!(status, 200, "{conf}");
    assert_eq!(
        conf["Layers"][1]["Arn"],
        "arn:aws:lambda:eu-west-1:000000000000:layer:other:1"
    );
    let (status, kind, _) = call(
        "PUT",
        &format!("{base}/g/configuration"),
        Some(r#"{"Layers": ["arn:aws:lambda:eu-west-1:1:layer:nope:3"]}"#),
    );
    assert_eq!(
        (status, kind.as_deref()),
        (400, Some("InvalidParameterValueException"))
    );
    let (status, kind, _) = call(
        "PUT",
        &format!("{base}/g/configuration"),
        Some(r#"{"Environment": {"Variables": {"AWS_REGION": "x"}}}"#),
    );
    assert_eq!(
        (status, kind.as_deref()),
        (400, Some("InvalidParameterValueException"))
    );
    let (status, kind, _) = call(
        "PUT",
        &format!("{base}/g/configuration"),
        Some(r#"{"MemorySize": 256, "RevisionId": "stale"}"#),
    );
    assert_eq!(
        (status, kind.as_deref()),
        (412, Some("PreconditionFailedException"))
    );

    // Publishing an unchanged $LATEST again returns the version it made.
    let (status, _, v1) = call("POST", &format!("{base}/g/versions"), Some("{}"));
    assert_eq!(status, 201, "{v1}");
    assert_eq!(v1["Version"], "1");
    let (_, _, again) = call("POST", &format!("{base}/g/versions"), Some("{}"));
    assert_eq!(again["Version"], "1");
    assert_eq!(again["RevisionId"], v1["RevisionId"]);
    let (_, _, conf) = call(
        "PUT",
        &format!("{base}/g/configuration"),
        Some(r#"{"MemorySize": 256}"#),
    );
    let (_, _, v2) = call("POST", &format!("{base}/g/versions"), Some("{}"));
    assert_eq!(v2["Version"], "2");
    assert_eq!(v2["MemorySize"], 256);
    assert_ne!(
        v2["RevisionId"], conf["RevisionId"],
        "a version has a revision of its own"
    );
    // `name:qualifier` and the qualifier in an ARN name a version.
    let (status, _, c) = call("GET", &format!("{base}/g:1/configuration"), None);
    assert_eq!((status, c["MemorySize"].clone()), (200, Value::from(1769)));
    let (status, _, c) = call("GET", &format!("{base}/{arn}:2/configuration"), None);
    assert_eq!((status, c["Version"].clone()), (200, Value::from("2")));
    let (status, kind, _) = call("GET", &format!("{base}/g:1/configuration?Qualifier=2"), None);
    assert_eq!(
        (status, kind.as_deref()),
        (400, Some("InvalidParameterValueException"))
    );
    let (status, kind, _) = call("GET", &format!("{base}/g/configuration?Qualifier=7"), None);
    assert_eq!(
        (status, kind.as_deref()),
        (404, Some("ResourceNotFoundException"))
    );
    // Deleted versions' numbers are not reused.
    let (status, _, _) = call("DELETE", &format!("{base}/g?Qualifier=2"), None);
    assert_eq!(status, 204);
    let (_, _, conf) = call(
        "PUT",
        &format!("{base}/g/configuration"),
        Some(r#"{"MemorySize": 512}"#),
    );
    assert_eq!(conf["MemorySize"], 512);
    let (_, _, v3) = call("POST", &format!("{base}/g/versions"), Some("{}"));
    assert_eq!(v3["Version"], "3");
    let (_, _, list) = call("GET", &format!("{base}/g/versions"), None);
    let versions: Vec<&str> = list["Versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["Version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["$LATEST", "1", "3"]);
}

/// Issue 23's end to end: `coldstart lambda --aws` driving `coldstart lambda serve`
/// through the official AWS SDK, 2 variants × 2 memory sizes, up to 3 versions
/// prepared ahead (`--parallel 3`). Every run is a real
/// cold start: each run's Init Duration, parsed by the driver from the invoke's log
/// tail, is one that the server's own log (an independent parse here) reports for
/// a new environment; the verdicts and the store work; afterwards no published
/// version and no changed configuration remain.
#[test]
fn lambda_aws_drives_lambda_serve_with_forced_cold_starts_and_undoes_everything() {
    let _turn = beside();
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("serve.log");
    let log_arg = log.display().to_string();
    let boot = bootstrap();
    let server = Server::start(&[
        "--log",
        &log_arg,
        "--name",
        "hello",
        "--runtime",
        &boot,
        "--memory",
        "128",
        "--env",
        "A=1",
    ]);
    let config = format!("{}/2015-03-31/functions/hello/configuration", server.url);
    let (_, _, before) = call("GET", &config, None);

    let store = dir.path().join("store.db");
    let json = dir.path().join("aws.json");
    let o = aws_at(&server)
        .args([
            "--runs",
            "3",
            "--warmup",
            "0",
            "--memory",
            "256,512",
            // Versions made ahead (the next run's while this one's invoke runs):
            // each is still a new environment's cold start.
            "--parallel",
            "3",
        ])
        .arg("--store")
        .arg(&store)
        .arg("--export-json")
        .arg(&json)
        .args([
            "--name",
            "a",
            "--function",
            "hello",
            "--name",
            "b",
            "--function",
            "hello",
            "--env",
            "B=1",
        ])
        .run();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let doc = json_file(&json);
    let variants = doc["variants"].as_array().expect("variants");
    assert_eq!(variants.len(), 4, "2 variants × 2 memory sizes: {doc}");

    // The server's log, read on its own: one REPORT with Init Duration per cold
    // environment (`Init Duration: X ms`).
    let text = std::fs::read_to_string(&log).expect("the server's log");
    let mut cold: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("REPORT "))
        .filter_map(|l| {
            l.split('\t')
                .find_map(|f| f.trim().strip_prefix("Init Duration: "))
                .and_then(|v| v.trim_end_matches(" ms").parse().ok())
        })
        .collect();
    let mut measured: Vec<f64> = (0..4u64)
        .flat_map(|v| testkit::ready_ns(&doc, v))
        .map(|ns| ns as f64 / 1e6)
        .collect();
    assert_eq!(measured.len(), 12, "3 cold starts of each of 4 variants: {doc}");
    cold.sort_by(f64::total_cmp);
    measured.sort_by(f64::total_cmp);
    assert_eq!(cold.len(), measured.len(), "every invoke was cold:\n{text}");
    for (m, c) in measured.iter().zip(&cold) {
        assert!(
            (m - c).abs() < 0.006,
            "run's Init Duration {m} ms vs the server's {c} ms"
        );
    }
    // Memory size as configured per variant, in each run's REPORT.
    for (i, v) in variants.iter().enumerate() {
        let want = if v["name"].as_str().is_some_and(|n| n.contains("512")) {
            512.0
        } else {
            256.0
        };
        let got = v["stats"]["metrics"]["memory_size_mb"]["p50"].as_f64();
        assert_eq!(got, Some(want), "variant {i}: {v}");
    }
    // Stored, with a verdict for b against a at each size.
    assert!(
        err.contains("stored as experiment") || stdout(&o).contains("stored as experiment"),
        "{err}"
    );
    for v in variants
        .iter()
        .filter(|v| v["name"].as_str().is_some_and(|n| n.starts_with("b[")))
    {
        let vs = &v["stats"]["vs_baseline"];
        assert!(
            vs["verdict"].is_string() && vs["shift"]["estimate"].is_number(),
            "{v}"
        );
    }

    // Nothing left: only $LATEST, and the configuration as it was.
    assert_untouched(&server, "hello", &before, "after the runs");
}

/// `--event` per variant with `--aws`: each variant's invokes carry its own
/// payload (a shared `--event` before the first `--name` is the others'
/// default). The fixture's bootstrap logs the event it got with its memory
/// size; the variants differ in memory, so the server's log says which
/// configuration was invoked with which event. Variant b also asks for
/// SnapStart: the server keeps no snapshot (its GetFunction says SnapStart is
/// off), but the driver's path for it (the update with SnapStart, waiting for
/// the version to be Active, the restore) runs through the SDK here too.
#[test]
fn lambda_aws_invokes_each_variant_with_its_own_event() {
    let _turn = beside();
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("serve.log");
    let log_arg = log.display().to_string();
    let boot = bootstrap();
    let server = Server::start(&[
        "--log",
        &log_arg,
        "--name",
        "hello",
        "--runtime",
        &boot,
        "--memory",
        "128",
    ]);
    let shared = dir.path().join("shared.json");
    let own = dir.path().join("own.json");
    std::fs::write(&shared, r#"{"from": "shared"}"#).expect("write event");
    std::fs::write(&own, "{\n  \"from\": \"b's own\"\n}\n").expect("write event");
    let o = aws_at(&server)
        .args(["--runs", "2", "--warmup", "0"])
        .arg("--store")
        .arg(dir.path().join("store.db"))
        .arg("--event")
        .arg(&shared)
        .args(["--name", "a", "--function", "hello", "--memory", "256"])
        .args([
            "--name",
            "b",
            "--function",
            "hello",
            "--memory",
            "512",
            "--snapstart",
            "--event",
        ])
        .arg(&own)
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&log).expect("the server's log");
    let got: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("bootstrap memory "))
        .filter_map(|l| l.split_once(" event: "))
        .collect();
    let of = |mb: &str| -> Vec<Value> {
        got.iter()
            .filter(|(m, _)| *m == mb)
            .map(|(_, e)| serde_json::from_str(e).unwrap_or_else(|err| panic!("{err}: {e}")))
            .collect()
    };
    let a = serde_json::json!({"from": "shared"});
    let b = serde_json::json!({"from": "b's own"});
    assert_eq!(of("256"), [a.clone(), a], "variant a, the shared event:\n{text}");
    assert_eq!(of("512"), [b.clone(), b], "variant b, its own event:\n{text}");
    assert_eq!(got.len(), 4, "{text}");
    assert!(
        stderr(&o).contains("hello: configuration restored (memory 128 MB, 0 layer(s), 0 environment variable(s), SnapStart off)"),
        "{}",
        stderr(&o)
    );
}

/// A warm invoke of a new version (a service that reused an environment, made
/// with `lambda serve --reuse-environments`) is a failed run "not cold", never a
/// fast cold start; the first run, cold, counts; everything is undone.
#[test]
fn lambda_aws_fails_a_warm_reuse_as_not_cold() {
    let _turn = beside();
    let dir = tempfile::tempdir().expect("tempdir");
    let boot = bootstrap();
    let server = Server::start(&["--reuse-environments", "--name", "hello", "--runtime", &boot]);
    let json = dir.path().join("aws.json");
    let o = aws_at(&server)
        .args([
            "--runs",
            "3",
            "--warmup",
            "0",
            "--keep-going",
            "--function",
            "hello",
        ])
        .arg("--store")
        .arg(dir.path().join("store.db"))
        .arg("--export-json")
        .arg(&json)
        .run();
    let doc = json_file(&json);
    let samples = doc["samples"].as_array().expect("samples");
    let kinds: Vec<&str> = samples
        .iter()
        .filter_map(|s| s["outcome"]["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["ready", "failed", "failed"], "{}\n{doc}", stderr(&o));
    for s in &samples[1..] {
        let text = s["outcome"].to_string();
        assert!(text.contains("not cold"), "{text}");
        assert!(s["ready_ns"].is_null(), "a warm run has no time to ready: {s}");
    }
    // --keep-going: the failures are counted in the table (the exit code is 0 while
    // every variant has a successful run, as documented).
    assert!(stdout(&o).contains("1 (2 failed)"), "{}", stdout(&o));
    let (_, _, listed) = call(
        "GET",
        &format!("{}/2015-03-31/functions/hello/versions", server.url),
        None,
    );
    let left = listed["Versions"].as_array().map_or(0, Vec::len);
    assert_eq!(left, 1, "only $LATEST: {listed}");
}

/// Marks from the log tail: the function's SDK checkpoint lines (timed from the
/// first) and a `--mark` line carrying its own milliseconds (the fixture prints
/// known values, so the oracle is exact); `--architecture` the function has
/// passes; the settings record the API, the function and the variant.
#[test]
fn lambda_aws_reads_marks_from_the_log_tail_and_records_what_it_ran_against() {
    let _turn = beside();
    let dir = tempfile::tempdir().expect("tempdir");
    let boot = bootstrap();
    let server = Server::start(&["--name", "hello", "--runtime", &boot, "--env", "SECRET=s3cr3t"]);
    let json = dir.path().join("aws.json");
    let o = aws_at(&server)
        .args([
            "--runs",
            "2",
            "--warmup",
            "0",
            "--function",
            "hello",
            "--env",
            "MARKS=1",
        ])
        .args(["--architecture", "x86_64"])
        .args(["--mark", r"ready=ready after (?P<ms>[0-9.]+) ms"])
        .arg("--store")
        .arg(dir.path().join("store.db"))
        .arg("--export-json")
        .arg(&json)
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    let samples = doc["samples"].as_array().expect("samples");
    assert_eq!(samples.len(), 2, "{doc}");
    for s in samples {
        let marks: Vec<(&str, &str, u64)> = s["marks"]
            .as_array()
            .expect("marks")
            .iter()
            .filter_map(|m| Some((m["name"].as_str()?, m["source"].as_str()?, m["t_ns"].as_u64()?)))
            .collect();
        assert_eq!(
            marks,
            [
                ("start", "checkpoint", 0),
                ("ready", "log", 7_250_000),
                ("config loaded", "checkpoint", 12_500_000)
            ],
            "{s}"
        );
    }
    let text = doc["settings"].to_string();
    let aws = &doc["settings"]["lambda_aws"];
    assert_eq!(aws["endpoint"].as_str(), Some(server.url.as_str()), "{text}");
    assert_eq!(aws["functions"][0]["name"], "hello", "{text}");
    assert_eq!(aws["functions"][0]["architecture"], "x86_64", "{text}");
    assert_eq!(
        aws["functions"][0]["env_keys"],
        serde_json::json!(["SECRET"]),
        "{text}"
    );
    assert!(
        !text.contains("s3cr3t"),
        "a function's variable values are not recorded: {text}"
    );
    assert_eq!(aws["variants"][0]["memory_mb"], 1769, "{text}");
    assert_eq!(aws["marks"][0], r"ready=ready after (?P<ms>[0-9.]+) ms", "{text}");
}

/// The comparison's oracle, an injected delay: variant b's configuration makes
/// the runtime sleep 50 ms in its init, so b is slower and the shift's interval
/// meets 50 ms (plus at most the `sleep` process's own start and the timer's
/// slack); without the delay (an A/A) the interval stays near 0.
#[test]
fn lambda_aws_finds_an_injected_init_delay_and_no_difference_in_an_a_a() {
    let _turn = crate::common::timed();
    let dir = tempfile::tempdir().expect("tempdir");
    let boot = bootstrap();
    let server = Server::start(&["--name", "hello", "--runtime", &boot]);
    let run = |b_env: &str, json: &std::path::Path| {
        let o = aws_at(&server)
            .args(["-q", "--runs", "10", "--warmup", "1"])
            .arg("--store")
            .arg(dir.path().join("store.db"))
            .arg("--export-json")
            .arg(json)
            .args(["--name", "a", "--function", "hello"])
            .args(["--name", "b", "--function", "hello", "--env", b_env])
            .run();
        assert!(o.status.success(), "{}", stderr(&o));
        json_file(json)["variants"][1]["stats"]["vs_baseline"].clone()
    };
    let vs = run("INIT_SLEEP=0.05", &dir.path().join("ab.json"));
    assert_eq!(vs["verdict"], "slower", "{vs}");
    let ci = &vs["shift"]["ci"];
    let (lo, hi) = (ci[0].as_f64().expect("lo"), ci[1].as_f64().expect("hi"));
    assert!(
        lo <= 50.0 + 15.0 && hi >= 50.0,
        "shift CI [{lo}, {hi}] ms vs 50 ms injected: {vs}"
    );
    // A/A: a single experiment may call 5 % of A/As different, so the contract
    // is the interval's: far from the injected 50 ms, around 0.
    let vs = run("SAME=1", &dir.path().join("aa.json"));
    let ci = &vs["shift"]["ci"];
    let (lo, hi) = (ci[0].as_f64().expect("lo"), ci[1].as_f64().expect("hi"));
    assert!(lo > -15.0 && hi < 15.0, "A/A shift CI [{lo}, {hi}] ms: {vs}");
}

/// `compare` of the emulator's experiment with the service's for the same
/// function is a calibration: said so, with the shift and no verdict.
#[test]
fn compare_of_the_emulator_with_the_service_is_a_calibration() {
    let _turn = beside();
    let dir = tempfile::tempdir().expect("tempdir");
    let boot = bootstrap();
    let server = Server::start(&["--name", "hello", "--runtime", &boot]);
    let store = dir.path().join("store.db");
    let mut local = cs(&["lambda", "-q", "--runs", "3", "--warmup", "0", "--runtime", &boot]);
    if !with_cgroups() {
        local.arg("--no-cgroup");
    }
    local.arg("--store").arg(&store).ok();
    aws_at(&server)
        .args(["-q", "--runs", "3", "--warmup", "0", "--function", "hello"])
        .arg("--store")
        .arg(&store)
        .ok();
    let json = dir.path().join("compare.json");
    let o = cs(&["compare", "1", "2"])
        .arg("--store")
        .arg(&store)
        .arg("--export-json")
        .arg(&json)
        .ok();
    let text = o.stdout();
    assert!(
        text.contains("calibration: the emulator (") && text.contains("against the service (hello@2)"),
        "{text}"
    );
    assert!(!text.contains("ran different commands"), "{text}");
    let doc = json_file(&json);
    assert_eq!(doc["pairs"][0]["calibration"], true, "{doc}");
    let vs = &doc["pairs"][0]["variants"][1]["vs_baseline"];
    assert_eq!(vs["verdict"], "none", "measured apart: {vs}");
    assert!(vs["shift"]["estimate"].is_number(), "{vs}");
}

/// `--architecture` the function is not built for, and a `--mark` without the
/// `ms` group that times it: refused in one line before any change.
#[test]
fn lambda_aws_refuses_another_architecture_and_an_untimed_mark_before_any_change() {
    let _turn = beside();
    let dir = tempfile::tempdir().expect("tempdir");
    let boot = bootstrap();
    let server = Server::start(&["--name", "hello", "--runtime", &boot]);
    let config = format!("{}/2015-03-31/functions/hello/configuration", server.url);
    let (_, _, before) = call("GET", &config, None);
    let store = dir.path().join("store.db");
    let o = aws_at(&server)
        .args(["--runs", "1", "--function", "hello", "--architecture", "arm64"])
        .arg("--store")
        .arg(&store)
        .fails();
    let err = o.stderr();
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--architecture arm64, but function hello is built for x86_64"),
        "{err}"
    );
    let o = aws_at(&server)
        .args([
            "--runs",
            "1",
            "--function",
            "hello",
            "--mark",
            "ready=ready after",
        ])
        .arg("--store")
        .arg(&store)
        .fails();
    let err = o.stderr();
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("(?P<ms>"), "{err}");
    let (_, _, after) = call("GET", &config, None);
    assert_eq!(after, before, "nothing changed");
    let versions = format!("{}/2015-03-31/functions/hello/versions", server.url);
    let (_, _, listed) = call("GET", &versions, None);
    assert_eq!(listed["Versions"].as_array().map_or(0, Vec::len), 1, "{listed}");
}

/// Only `$LATEST` of `function` is left, its configuration as `before` had it.
fn assert_untouched(server: &Server, function: &str, before: &Value, what: &str) {
    let base = format!("{}/2015-03-31/functions/{function}", server.url);
    let (_, _, listed) = call("GET", &format!("{base}/versions"), None);
    let names: Vec<&str> = listed["Versions"]
        .as_array()
        .expect("versions")
        .iter()
        .filter_map(|v| v["Version"].as_str())
        .collect();
    assert_eq!(names, ["$LATEST"], "{what}: {listed}");
    let (_, _, after) = call("GET", &format!("{base}/configuration"), None);
    for key in ["MemorySize", "Environment", "Layers"] {
        assert_eq!(after[key], before[key], "{what}: {key}: {after}");
    }
}

/// Wait until the server holds a published version of `function`.
fn until_published(server: &Server, function: &str) {
    let versions = format!("{}/2015-03-31/functions/{function}/versions", server.url);
    let deadline = std::time::Instant::now() + SAYS_WITHIN;
    loop {
        let (_, _, listed) = call("GET", &versions, None);
        if listed["Versions"].as_array().map_or(0, Vec::len) > 1 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no version was published: {listed}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ctrl-C mid-experiment, then SIGKILL + `--cleanup`, against `lambda serve`:
/// afterwards no published version and no changed configuration remain.
#[test]
fn lambda_aws_leaves_nothing_after_sigint_or_sigkill_and_cleanup() {
    let _turn = beside();
    let dir = tempfile::tempdir().expect("tempdir");
    let boot = bootstrap();
    let server = Server::start(&["--name", "hello", "--runtime", &boot, "--memory", "128"]);
    let config = format!("{}/2015-03-31/functions/hello/configuration", server.url);
    let (_, _, before) = call("GET", &config, None);
    let untouched = |what: &str| assert_untouched(&server, "hello", &before, what);
    let store = dir.path().join("store.db");
    let long = || {
        let mut c = aws_at(&server);
        c.args(["-q", "--runs", "500", "--warmup", "0", "--keep-going"])
            .args(["--function", "hello", "--memory", "256"])
            .arg("--store")
            .arg(&store)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        c.spawn()
    };

    let mut child = long();
    until_published(&server, "hello");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let stderr = child.stderr.take().expect("stderr");
    let lines: Vec<String> = BufReader::new(stderr).lines().map_while(Result::ok).collect();
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.contains("hello: configuration restored")),
        "{lines:?}"
    );
    untouched("after SIGINT");

    let mut child = long();
    until_published(&server, "hello");
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let o = aws_at(&server).arg("--cleanup").arg("--store").arg(&store).ok();
    let text = o.stdout();
    assert!(text.contains("hello: deleted version"), "{text}");
    assert!(
        text.contains("hello: configuration restored (memory 128 MB"),
        "{text}"
    );
    untouched("after SIGKILL and --cleanup");
    let again = aws_at(&server).arg("--cleanup").arg("--store").arg(&store).ok();
    assert!(again.stdout().contains("nothing to undo"), "{}", again.streams());
}

/// `coldstart lambda --aws` at this `lambda serve`, with test credentials (no
/// profile or config file of the machine's is read).
fn aws_at(server: &Server) -> Cs {
    let mut c = cs(&[
        "lambda",
        "--aws",
        "--endpoint-url",
        &server.url,
        "--region",
        "us-east-1",
    ]);
    c.env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env_remove("AWS_PROFILE")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null");
    c
}
