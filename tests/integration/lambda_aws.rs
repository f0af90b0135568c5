//! `coldstart lambda --aws` against a third-party implementation of the Lambda
//! control plane: moto's server (pinned in tests/fixtures/moto, installed by
//! tests/fixtures/moto-setup.sh), started per test on a free port. moto cannot
//! run functions without Docker: its Invoke answers a function error and no log
//! tail, so these tests check the calls, their order, the state they leave and
//! the failures' wording, not a REPORT (crates/aws's unit tests parse real ones).
//! moto logs every request it serves (werkzeug's access log on stderr): the
//! sequence of calls is read from there.

use crate::common::*;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// moto's server on a free port; killed on drop.
struct Moto {
    child: Child,
    port: u16,
    log: PathBuf,
    site: PathBuf,
    python: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start moto (`env`: extra variables, e.g. IAM enforcement), or a skip under MOTO.
fn moto(env: &[(&str, &str)]) -> Option<Moto> {
    let site = repo().join("target/moto/python");
    if !site.join("moto").is_dir() {
        skip(
            "MOTO",
            "moto's server is missing: run tests/fixtures/moto-setup.sh",
        );
        return None;
    }
    let python = real_python().or_else(|| {
        skip("MOTO", "no python3 to run moto's server");
        None
    })?;
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("moto.log");
    let port = free_port();
    let child = Command::new(&python)
        .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
        .env("PYTHONPATH", &site)
        .env("PYTHONUNBUFFERED", "1")
        .envs(env.iter().copied())
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("moto log"))
        .spawn()
        .expect("starting moto's server");
    let m = Moto {
        child,
        port,
        log,
        site,
        python,
        _dir: dir,
    };
    // Ready when it accepts a connection (polled, with a deadline).
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "moto did not listen on {port}: {}",
            m.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(m)
}

impl Moto {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The Lambda API requests served so far: (method, path and query).
    fn requests(&self) -> Vec<(String, String)> {
        self.log_text()
            .lines()
            .filter_map(|l| {
                let req = l.split('"').nth(1)?;
                let mut w = req.split_whitespace();
                let (method, path) = (w.next()?, w.next()?);
                path.starts_with("/2015-03-31/")
                    .then(|| (method.to_string(), path.to_string()))
            })
            .collect()
    }

    /// The Lambda API requests moto received, in the order they arrived:
    /// (method, path and query, JSON body or Null), from moto's own request
    /// recorder (MOTO_ENABLE_RECORDING, written to `moto_recording` in its
    /// directory, one write per request). Unlike the access log, whose lines
    /// concurrent requests can run together, it holds every request whole.
    fn recorded(&self) -> Vec<(String, String, serde_json::Value)> {
        use base64::Engine;
        let text = std::fs::read_to_string(self._dir.path().join("moto_recording"))
            .expect("moto's recording (start it with MOTO_ENABLE_RECORDING)");
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a recorded request"))
            .filter_map(|r| {
                let url = r["url"].as_str()?;
                let path = &url[url.find("/2015-03-31/")?..];
                let body = r["body"].as_str().unwrap_or_default();
                let bytes = if r["body_encoded"] == true {
                    base64::engine::general_purpose::STANDARD
                        .decode(body)
                        .expect("a base64 body")
                } else {
                    body.as_bytes().to_vec()
                };
                let json = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
                Some((r["method"].as_str()?.to_string(), path.to_string(), json))
            })
            .collect()
    }

    /// The configuration updates of `function` moto received, their bodies in order.
    fn updates(&self, function: &str) -> Vec<serde_json::Value> {
        let path = format!("/2015-03-31/functions/{function}/configuration");
        self.recorded()
            .into_iter()
            .filter(|(method, p, _)| method == "PUT" && *p == path)
            .map(|(_, _, body)| body)
            .collect()
    }

    /// boto3 through tests/fixtures/moto/lambda_fn.py.
    fn boto(&self, what: &str, name: &str) -> String {
        let out = Command::new(&self.python)
            .arg(repo().join("tests/fixtures/moto/lambda_fn.py"))
            .args([&self.port.to_string(), what, name])
            .env("PYTHONPATH", &self.site)
            .output()
            .expect("running lambda_fn.py");
        assert!(
            out.status.success(),
            "lambda_fn.py {what} {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn show(&self, name: &str) -> serde_json::Value {
        serde_json::from_str(&self.boto("show", name)).expect("show's JSON")
    }
}

/// `coldstart lambda --aws` at this moto, with test credentials and a store.
fn aws(m: &Moto, store: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Cs {
    let mut c = cs(&[
        "lambda",
        "--aws",
        "--endpoint-url",
        &m.url(),
        "--region",
        "us-east-1",
    ]);
    c.arg("--store").arg(store);
    c.args(args);
    c.env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env_remove("AWS_PROFILE")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null");
    c
}

/// The function as the test created it: nothing coldstart changed remains.
fn assert_untouched(m: &Moto, name: &str) {
    let s = m.show(name);
    assert_eq!(s["versions"], serde_json::json!(["$LATEST"]), "{s}");
    assert_eq!(s["memory"], 128, "{s}");
    assert_eq!(s["env"], serde_json::json!({"A": "1"}), "{s}");
    assert_eq!(s["layers"], serde_json::json!([]), "{s}");
}

fn open_journal_rows(store: &Path) -> i64 {
    let db = rusqlite::Connection::open(store).expect("open store");
    db.query_row("SELECT COUNT(*) FROM aws_journal WHERE done = 0", [], |r| {
        r.get(0)
    })
    .expect("count")
}

/// Two variants × 2 runs: per run UpdateFunctionConfiguration → the waiter's
/// GetFunction → PublishVersion → Invoke of that version; then every version
/// deleted (and only those) and the configuration restored. moto's Invoke gives
/// no REPORT: every run fails saying so, and nothing is left behind.
#[test]
fn each_run_updates_waits_publishes_invokes_and_everything_is_undone() {
    let _turn = beside();
    let Some(m) = moto(&[]) else { return };
    let layer = m.boto("layer", "ext");
    let layer = layer.trim();
    m.boto("create", "fn");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let started = Instant::now();
    let out = aws(
        &m,
        &store,
        &[
            "--runs",
            "2",
            "--warmup",
            "0",
            "--keep-going",
            "--name",
            "a",
            "--function",
            "fn",
            "--memory",
            "256",
            "--name",
            "b",
            "--function",
            "fn",
            "--memory",
            "512",
            "--env",
            "X=1",
            "--layer-arn",
            layer,
        ],
    )
    .run();
    let took = started.elapsed();
    assert_eq!(out.code(), Some(1), "failed runs: exit 1\n{}", out.streams());
    let err = out.stderr();
    assert_eq!(
        err.matches("failed with function error Handled and no log tail (no REPORT)")
            .count(),
        4,
        "{err}"
    );
    let calls = m.requests();
    // (The layer's publish is under the 2018-10-31 API, not listed.)
    assert_eq!(
        calls[0],
        ("POST".into(), "/2015-03-31/functions".into()),
        "{calls:?}"
    );
    assert_eq!(
        calls[1],
        ("GET".into(), "/2015-03-31/functions/fn".into()),
        "one GetFunction first: {calls:?}"
    );
    let reads = 2;
    let mut expected: Vec<(String, String)> = Vec::new();
    for v in 1..=4 {
        expected.push(("PUT".into(), "/2015-03-31/functions/fn/configuration".into()));
        expected.push(("GET".into(), "/2015-03-31/functions/fn".into()));
        expected.push(("POST".into(), "/2015-03-31/functions/fn/versions".into()));
        expected.push((
            "POST".into(),
            format!("/2015-03-31/functions/fn/invocations?Qualifier={v}"),
        ));
    }
    for v in 1..=4 {
        expected.push(("DELETE".into(), format!("/2015-03-31/functions/fn?Qualifier={v}")));
    }
    expected.push(("GET".into(), "/2015-03-31/functions/fn".into()));
    expected.push(("PUT".into(), "/2015-03-31/functions/fn/configuration".into()));
    expected.push(("GET".into(), "/2015-03-31/functions/fn".into()));
    assert_eq!(calls[reads..], expected[..], "the calls in order");
    assert!(err.contains("fn: deleted version 4"), "{err}");
    assert!(
        err.contains("fn: configuration restored (memory 128 MB, 0 layer(s), 1 environment variable(s))"),
        "{err}"
    );
    assert_untouched(&m, "fn");
    assert_eq!(open_journal_rows(&store), 0);
    say(&format!(
        "lambda_aws: 4 runs (4 calls each) + cleanup against moto in {:.0} ms, {:.0} ms per run",
        took.as_secs_f64() * 1e3,
        took.as_secs_f64() * 1e3 / 4.0
    ));
}

/// `--dry-run` reads the function and prints the plan and its cost; it changes
/// nothing. `--max-cost` under the estimate refuses before any change.
#[test]
fn dry_run_and_max_cost_change_nothing() {
    let _turn = beside();
    let Some(m) = moto(&[]) else { return };
    m.boto("create", "fn");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let plan = &[
        "--runs",
        "3",
        "--warmup",
        "1",
        "--seed",
        "7",
        "--name",
        "a",
        "--function",
        "fn",
        "--memory",
        "1024",
    ];
    let out = aws(&m, &store, &[&["--dry-run"][..], plan].concat()).ok();
    let text = out.stdout();
    for want in [
        "the plan (a dry run: nothing was changed)",
        "fn: x86_64, 128 MB, timeout 3 s, 0 layer(s), 1 variable(s)",
        "a: fn, memory 1024 MB, its 0 layer(s)",
        "runs: 4: 4 configuration updates, 4 versions published, 4 invokes; afterwards the 4 versions are deleted and 1 configuration(s) restored",
        "order (seed 7; give --seed 7 to run this order):",
        "1. a (round 1 warmup)",
        "4. a (round 3)",
        // 4 invokes × 1 GB × (10 s + 3 s) = 52 GB-s.
        "cost, an estimate: at most $0.0009 (4 invokes, 52.0 GB-s",
        "as of 2026-05",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let out = aws(&m, &store, &[&["--max-cost", "0.0001"][..], plan].concat()).fails();
    assert!(
        out.stderr()
            .contains("--max-cost 0.0001: the runs could cost up to $0.0009"),
        "{}",
        out.streams()
    );
    let calls = m.requests();
    assert!(
        calls.iter().skip(1).all(|(method, _)| method == "GET"),
        "after CreateFunction, only reads: {calls:?}"
    );
    assert_untouched(&m, "fn");
}

/// Wait until moto has published a version (its log says so), polled.
fn until_published(m: &Moto) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !m
        .requests()
        .iter()
        .any(|(method, path)| method == "POST" && path.ends_with("/versions"))
    {
        assert!(
            Instant::now() < deadline,
            "no version was published: {}",
            m.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn long_run(m: &Moto, store: &str) -> Child {
    aws(
        m,
        store,
        &[
            "-q",
            "--runs",
            "500",
            "--warmup",
            "0",
            "--keep-going",
            "--name",
            "a",
            "--function",
            "fn",
            "--memory",
            "256",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
}

/// SIGKILL after the first version exists: the journal keeps what was changed
/// (a new experiment on the function is refused until it is undone),
/// `--cleanup` deletes the versions and restores the configuration and says
/// so; a second `--cleanup` has nothing to do. On SQLite and PostgreSQL.
#[test]
fn cleanup_after_sigkill_undoes_what_the_journal_holds() {
    let _turn = beside();
    for (_dir, store) in stores("lambda_aws") {
        let Some(m) = moto(&[]) else { return };
        m.boto("create", "fn");
        let mut child = long_run(&m, &store);
        until_published(&m);
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        let changed = m.show("fn");
        assert_ne!(changed["versions"], serde_json::json!(["$LATEST"]), "{changed}");

        let refused = aws(&m, &store, &["--runs", "1", "--function", "fn"]).fails();
        assert!(
            refused.stderr().contains("fn: the journal in")
                && refused
                    .stderr()
                    .contains("run `coldstart lambda --aws --cleanup` first"),
            "{}",
            refused.streams()
        );

        let out = aws(&m, &store, &["--cleanup"]).ok();
        let text = out.stdout();
        assert!(
            text.contains("coldstart lambda --aws --cleanup: fn: deleted version 1"),
            "{text}"
        );
        assert!(
            text.contains("coldstart lambda --aws --cleanup: fn: configuration restored (memory 128 MB"),
            "{text}"
        );
        assert_untouched(&m, "fn");
        let again = aws(&m, &store, &["--cleanup"]).ok();
        assert!(
            again.stdout().contains("nothing to undo"),
            "{store}: {}",
            again.streams()
        );
    }
}

/// Ctrl-C (SIGINT) and SIGTERM mid-experiment: coldstart undoes its changes
/// itself before it exits (128 + the signal).
#[test]
fn an_interrupt_undoes_the_changes_before_exiting() {
    let _turn = beside();
    for (signal, code) in [
        (nix::sys::signal::Signal::SIGINT, 130),
        (nix::sys::signal::Signal::SIGTERM, 143),
    ] {
        let Some(m) = moto(&[]) else { return };
        m.boto("create", "fn");
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("s.db");
        let mut child = long_run(&m, store.to_str().expect("utf-8 path"));
        until_published(&m);
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).expect("signal");
        let stderr = child.stderr.take().expect("stderr");
        let lines: Vec<String> = BufReader::new(stderr).lines().map_while(Result::ok).collect();
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(code), "{signal}: {lines:?}");
        assert!(
            lines.iter().any(|l| l.contains("fn: configuration restored")),
            "{signal}: {lines:?}"
        );
        assert_untouched(&m, "fn");
        assert_eq!(open_journal_rows(&store), 0, "{signal}");
    }
}

/// A request the service refuses before anything changed (here moto with IAM
/// enforced, through INITIAL_NO_AUTH_ACTION_COUNT: the first calls set up the
/// function and a user) stops coldstart with one line and no change. moto checks
/// a signature by signing the request again with all its headers, as botocore
/// does, so it refuses every request of the Rust SDK (which signs fewer): the
/// AccessDenied wording, naming the IAM action, is unit-tested in
/// crates/aws/src/client.rs instead.
#[test]
fn a_refused_request_stops_before_any_change_in_one_line() {
    let _turn = beside();
    // create: CreateRole + CreateFunction; restrict: CreateUser + PutUserPolicy + CreateAccessKey.
    let Some(m) = moto(&[("INITIAL_NO_AUTH_ACTION_COUNT", "5")]) else {
        return;
    };
    m.boto("create", "fn");
    let key = m.boto("restrict", "fn");
    let mut key = key.split_whitespace();
    let (id, secret) = (key.next().expect("key id"), key.next().expect("secret"));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = aws(
        &m,
        &store,
        &[
            "--runs",
            "1",
            "--warmup",
            "0",
            "--function",
            "fn",
            "--memory",
            "256",
        ],
    )
    .env("AWS_ACCESS_KEY_ID", id)
    .env("AWS_SECRET_ACCESS_KEY", secret)
    .fails();
    let err = out.stderr();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("coldstart: error: lambda:GetFunction on fn: the credentials were refused (SignatureDoesNotMatch: "),
        "{err}"
    );
    let calls = m.requests();
    assert!(
        calls
            .iter()
            .all(|(method, _)| method == "GET" || method == "POST" && path_is_setup(&calls)),
        "{calls:?}"
    );
}

fn path_is_setup(calls: &[(String, String)]) -> bool {
    calls
        .iter()
        .filter(|(method, _)| method != "GET")
        .all(|(_, p)| p == "/2015-03-31/functions")
}

/// A configuration update the service refuses (a layer that does not exist)
/// fails the run with the service's words, and the function is left as it was.
#[test]
fn a_refused_update_fails_the_run_with_the_service_message() {
    let _turn = beside();
    let Some(m) = moto(&[]) else { return };
    m.boto("create", "fn");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = aws(
        &m,
        &store,
        &[
            "--runs",
            "1",
            "--warmup",
            "0",
            "--function",
            "fn",
            "--layer-arn",
            "arn:aws:lambda:us-east-1:123456789012:layer:nope:1",
        ],
    )
    .run();
    assert_eq!(out.code(), Some(1), "{}", out.streams());
    assert!(
        out.stderr().contains(
            "failed with lambda:UpdateFunctionConfiguration on fn: ResourceNotFoundException: One or more LayerVersion does not exist"
        ),
        "{}",
        out.streams()
    );
    assert!(
        out.stderr()
            .contains("fn: run 1-1 published no version: nothing to delete"),
        "{}",
        out.streams()
    );
    assert_untouched(&m, "fn");
    assert_eq!(open_journal_rows(&store), 0);
}

/// The flags of the service are refused where they cannot mean anything: a
/// variant's own --event and --snapstart with the emulator, and all of them in
/// `lambda serve` (its callers choose per request). Nothing runs.
#[test]
fn aws_only_flags_are_refused_without_aws() {
    let dir = tempfile::tempdir().unwrap();
    let event = dir.path().join("e.json");
    std::fs::write(&event, "{}").unwrap();
    let event = event.display().to_string();
    let cases: [(&[&str], &str); 5] = [
        (
            &["lambda", "--runtime", "./b", "--name", "a", "--event", &event],
            "--event per variant is for --aws: the emulator invokes every variant with one --event, given before the first --name",
        ),
        (
            &["lambda", "--runtime", "./b", "--name", "a", "--snapstart"],
            "--snapstart is SnapStart on the service: give --aws with it",
        ),
        (
            &["lambda", "serve", "--name", "f", "--runtime", "./b", "--event", &event],
            "--event, --snapstart, --function, --layer-arn and --architecture are flags of `coldstart lambda --aws`",
        ),
        (
            &["lambda", "--runtime", "./b", "--architecture", "arm64"],
            "--architecture arm64: it checks a deployed function's: give --aws with it",
        ),
        (
            &["lambda", "--runtime", "./b", "--mark", "a=(?P<ms>1)"],
            "--aws",
        ),
    ];
    for (args, want) in cases {
        let out = cs(args).run();
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.streams());
        assert!(out.stderr().contains(want), "{args:?}: {}", out.streams());
    }
}

/// `--snapstart`: the variant's updates turn SnapStart on (ApplyOn
/// PublishedVersions), the other variant's on the same function off again, and
/// the restore puts the original setting back; a function no variant asks
/// SnapStart of never gets the field. moto accepts the field and keeps nothing
/// of it, so the bodies are read from moto's own request recorder. A SnapStart
/// version is invoked once Active. The journal row holds the original setting.
#[test]
fn snapstart_is_set_per_variant_and_restored() {
    let _turn = beside();
    let Some(m) = moto(&[("MOTO_ENABLE_RECORDING", "True")]) else {
        return;
    };
    m.boto("create", "fn");
    m.boto("create", "plain");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = aws(
        &m,
        &store,
        &[
            "--runs",
            "2",
            "--warmup",
            "0",
            "--keep-going",
            "--name",
            "off",
            "--function",
            "fn",
            "--memory",
            "256",
            "--name",
            "on",
            "--function",
            "fn",
            "--memory",
            "512",
            "--snapstart",
            "--name",
            "plain",
            "--function",
            "plain",
        ],
    )
    .run();
    assert_eq!(out.code(), Some(1), "moto's invokes fail: {}", out.streams());
    let apply_on = |u: &serde_json::Value| u["SnapStart"]["ApplyOn"].as_str().map(str::to_string);
    let updates = m.updates("fn");
    assert_eq!(updates.len(), 5, "4 runs and the restore: {updates:?}");
    for u in &updates[..4] {
        let want = if u["MemorySize"] == 512 {
            "PublishedVersions"
        } else {
            "None"
        };
        assert_eq!(apply_on(u).as_deref(), Some(want), "{u}");
    }
    // A SnapStart version is waited for until Active (GetFunction of it) before
    // its invoke; the other runs' versions are invoked at once.
    let calls = m.requests();
    let waited: Vec<&(String, String)> = calls
        .iter()
        .filter(|(method, p)| method == "GET" && p.starts_with("/2015-03-31/functions/fn?Qualifier="))
        .collect();
    assert_eq!(waited.len(), 2, "one wait per SnapStart run: {calls:?}");
    for (_, p) in waited {
        let invoke = (
            "POST".to_string(),
            format!(
                "/2015-03-31/functions/fn/invocations{}",
                &p["/2015-03-31/functions/fn".len()..]
            ),
        );
        let at = calls.iter().position(|c| c == &invoke);
        let wait = calls.iter().position(|c| &c.1 == p);
        assert!(wait < at && at.is_some(), "waited before the invoke: {calls:?}");
    }
    let restore = &updates[4];
    assert_eq!(restore["MemorySize"], 128, "{restore}");
    assert_eq!(apply_on(restore).as_deref(), Some("None"), "{restore}");
    let plain = m.updates("plain");
    assert_eq!(plain.len(), 3, "{plain:?}");
    assert!(plain.iter().all(|u| u.get("SnapStart").is_none()), "{plain:?}");
    assert!(
        out.stderr()
            .contains("fn: configuration restored (memory 128 MB, 0 layer(s), 1 environment variable(s), SnapStart off)"),
        "{}",
        out.streams()
    );
    let db = rusqlite::Connection::open(&store).expect("open store");
    let detail: String = db
        .query_row(
            "SELECT detail_json FROM aws_journal WHERE function = 'fn' AND action = 'configuration'",
            [],
            |r| r.get(0),
        )
        .expect("the configuration row");
    let detail: serde_json::Value = serde_json::from_str(&detail).expect("JSON");
    assert_eq!(detail["configuration"]["snapstart"], false, "{detail}");
    assert_untouched(&m, "fn");
    assert_untouched(&m, "plain");
    assert_eq!(open_journal_rows(&store), 0);
}

/// `--parallel N`: versions are made ahead, at most N runs prepared or waiting
/// for their invoke at a time, and the invokes keep the scheduler's order (the
/// one `--dry-run` prints for the seed), one at a time. moto's invokes fail:
/// without --keep-going the experiment stops after its first run, and the run
/// prepared ahead of it was made all the same (2 publishes for 1 invoke),
/// then deleted like the others. The requests are read from moto's recorder:
/// concurrent ones can run together in its access log.
#[test]
fn parallel_prepares_versions_ahead_and_invokes_in_the_scheduler_s_order() {
    let _turn = beside();
    let Some(m) = moto(&[("MOTO_ENABLE_RECORDING", "True")]) else {
        return;
    };
    let calls_of = |m: &Moto| -> Vec<(String, String)> {
        m.recorded()
            .into_iter()
            .map(|(method, path, _)| (method, path))
            .collect()
    };
    m.boto("create", "fn");
    m.boto("create", "g");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let variants = [
        "--runs",
        "3",
        "--warmup",
        "0",
        "--seed",
        "7",
        "--name",
        "a",
        "--function",
        "fn",
        "--name",
        "b",
        "--function",
        "g",
    ];
    let count = |calls: &[(String, String)], method: &str, part: &str| {
        calls
            .iter()
            .filter(|(m, p)| m == method && p.contains(part))
            .count()
    };

    // Stopped by the first failed run: the second run's version was made ahead.
    let out = aws(&m, &store, &[&["--parallel", "2"][..], &variants].concat()).run();
    assert_eq!(out.code(), Some(1), "{}", out.streams());
    let calls = calls_of(&m);
    assert_eq!(count(&calls, "POST", "/invocations"), 1, "{calls:?}");
    assert_eq!(count(&calls, "POST", "/versions"), 2, "{calls:?}");
    assert_eq!(count(&calls, "DELETE", "?Qualifier="), 2, "{calls:?}");
    assert_untouched(&m, "fn");
    assert_untouched(&m, "g");
    assert_eq!(open_journal_rows(&store), 0);

    // Every run, --parallel 3: the invokes in the dry run's order, and never
    // more than 3 versions made and not yet invoked.
    let plan = aws(
        &m,
        &store,
        &[&["--dry-run", "--parallel", "3"][..], &variants].concat(),
    )
    .ok();
    let text = plan.stdout();
    assert!(
        text.contains("prepared ahead: up to 3 runs' versions made or waiting at a time (--parallel 3)"),
        "{text}"
    );
    let order: Vec<&str> = text
        .split_whitespace()
        .zip(text.split_whitespace().skip(1))
        .filter(|(n, _)| n.ends_with('.') && n.trim_end_matches('.').parse::<u32>().is_ok())
        .map(|(_, v)| if v == "a" { "fn" } else { "g" })
        .collect();
    assert_eq!(order.len(), 6, "{text}");
    let before = calls_of(&m).len();
    let out = aws(
        &m,
        &store,
        &[&["--parallel", "3", "--keep-going"][..], &variants].concat(),
    )
    .run();
    assert_eq!(out.code(), Some(1), "moto's invokes fail: {}", out.streams());
    let calls = calls_of(&m)[before..].to_vec();
    let invoked: Vec<&str> = calls
        .iter()
        .filter(|(m, p)| m == "POST" && p.contains("/invocations"))
        .filter_map(|(_, p)| p.strip_prefix("/2015-03-31/functions/")?.split('/').next())
        .collect();
    assert_eq!(invoked, order, "the invokes in the scheduler's order");
    let mut made = 0i32;
    for (method, path) in &calls {
        if method == "POST" && path.ends_with("/versions") {
            made += 1;
        } else if method == "POST" && path.contains("/invocations") {
            made -= 1;
        }
        assert!(made <= 3, "more than --parallel 3 versions ahead: {calls:?}");
    }
    assert_eq!(count(&calls, "POST", "/versions"), 6, "{calls:?}");
    assert_eq!(count(&calls, "DELETE", "?Qualifier="), 6, "{calls:?}");
    assert_untouched(&m, "fn");
    assert_untouched(&m, "g");
    assert_eq!(open_journal_rows(&store), 0);
}
