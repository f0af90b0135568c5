//! `coldstart lambda --sandbox`: each environment's private mount namespace, where
//! `sandbox` resolves to the APIs' loopback address, the layers are at /opt and the
//! code at /var/task. Checked with what the processes themselves saw and received:
//! the raw Python runtime writes what it sees; extensions on the lambda-extension
//! crate subscribe to the Telemetry API and to the Logs API (at
//! sandbox.localdomain; Lambda lets one extension use only one of them); a raw
//! Python extension listens on ("sandbox", PORT) as AWS's samples do. Records are
//! checked against docs/lambda.md's table "Records an extension receives". And the
//! host's mount table never changes, not even when coldstart is SIGKILLed.
//!
//! Needs root or user namespaces: otherwise a visible skip (a failure under
//! COLDSTART_REQUIRE_SANDBOX=1).

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn sandbox_available() -> bool {
    testkit::need("SANDBOX", coldstart_lambda::namespace::available().ok(), || {
        "no mount namespace can be made here (neither root nor user namespaces)".into()
    })
    .is_some()
}

fn python_client(name: &str) -> PathBuf {
    repo().join("examples/lambda/python").join(name)
}

/// A fixture directory under target/ (inside the sandbox it must not be under /opt).
fn fixture_dir() -> tempfile::TempDir {
    let base = repo().join("target/test-fixtures");
    std::fs::create_dir_all(&base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}

/// Copy `src` to `dst` (parents made), executable.
fn install(src: &Path, dst: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::fs::copy(src, dst).unwrap();
    std::fs::set_permissions(dst, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The host's mounts, less those a container engine makes for the container
/// tests that run beside these (their stores, run roots, network namespaces):
/// they come and go with those tests, not with the sandbox.
fn mount_table() -> BTreeSet<String> {
    let engines = |point: &str| {
        [
            "/var/lib/containers/",
            "/run/containers/",
            "/run/netns/",
            "/tmp/cs-podman-",
        ]
        .iter()
        .any(|p| point.starts_with(p))
            || point.contains("/test-fixtures/containers/")
    };
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| !l.split(' ').nth(4).is_some_and(engines))
        .map(str::to_string)
        .collect()
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// Processes whose mount namespace is `ns` (`mnt:[N]`), or that hold a
/// descriptor on it.
fn holders_of(ns: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if pid.parse::<u32>().is_err() {
            continue;
        }
        let dir = entry.path();
        if std::fs::read_link(dir.join("ns/mnt")).is_ok_and(|l| l.to_string_lossy() == ns) {
            found.push(format!("{pid} (in it)"));
        }
        for fd in std::fs::read_dir(dir.join("fd")).into_iter().flatten().flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy() == ns) {
                found.push(format!("{pid} (descriptor)"));
            }
        }
    }
    found
}

/// `coldstart lambda` with the raw Python runtime: (output, sample).
fn lambda(args: &[&str], marker_env: &str) -> (Out, Value) {
    let dir = fixture_dir();
    let json = dir.path().join("out.json");
    let o = lambda_once()
        .args(["--export-json", json.to_str().unwrap(), "--env", marker_env])
        .args(args)
        .run();
    assert!(
        processes_with(marker_env).is_empty(),
        "left behind: {:?}",
        processes_with(marker_env)
    );
    let sample = if json.exists() {
        json_file(&json)["samples"][0].clone()
    } else {
        Value::Null
    };
    (o, sample)
}

/// The value at a dotted path (`metrics.durationMs`).
fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(v, |v, k| v.get(k))
        .filter(|v| !v.is_null())
}

/// One row of docs/lambda.md's table "Records an extension receives": a record
/// type, the API(s) that deliver it, and its required fields (the optional ones,
/// marked `?` there, left out). Read from the document itself, so the spec the
/// docs state and the one the tests assert cannot drift apart.
struct SpecRow {
    kind: String,
    api: String,
    fields: Vec<String>,
}

fn spec() -> Vec<SpecRow> {
    let doc = std::fs::read_to_string(repo().join("docs/lambda.md")).unwrap();
    let table = doc
        .split("### Records an extension receives")
        .nth(1)
        .expect("docs/lambda.md has the table \"Records an extension receives\"");
    let ticked = |cell: &str| -> Vec<String> {
        // `name` or `name`? : the backticked words, and whether a `?` follows.
        let mut out = Vec::new();
        let mut rest = cell;
        while let Some(open) = rest.find('`') {
            let after = &rest[open + 1..];
            let Some(close) = after.find('`') else { break };
            let optional = after[close + 1..].starts_with('?');
            if !optional {
                out.push(after[..close].to_string());
            }
            rest = &after[close + 1..];
        }
        out
    };
    let rows: Vec<SpecRow> = table
        .lines()
        .skip_while(|l| !l.starts_with("| type |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            SpecRow {
                kind: ticked(cells[0]).remove(0),
                api: cells[1].to_string(),
                fields: ticked(cells[2]),
            }
        })
        .collect();
    assert!(rows.len() >= 10, "the spec table parsed to {} rows", rows.len());
    rows
}

/// The types one API delivers (besides `function`, checked on its own).
fn types_of(api: &str) -> Vec<String> {
    spec()
        .into_iter()
        .filter(|r| (r.api == api || r.api == "both") && r.kind != "function")
        .map(|r| r.kind)
        .collect()
}

/// Every record of `types` is there, each with the spec's fields (minus
/// `unknown_to_parser`: fields the client library drops when it parses), a time,
/// and `function` records are strings.
fn assert_spec<T: AsRef<str>>(recs: &[Value], types: &[T], unknown_to_parser: &[&str]) {
    let spec = spec();
    for t in types.iter().map(AsRef::as_ref) {
        let of: Vec<&Value> = recs.iter().filter(|r| r["type"] == t).collect();
        assert!(!of.is_empty(), "no {t} in {recs:?}");
        let row = spec
            .iter()
            .find(|r| r.kind == t)
            .unwrap_or_else(|| panic!("{t} is not in docs/lambda.md's spec table"));
        for r in of {
            assert!(r["time"].as_str().is_some_and(|s| s.contains('T')), "time: {r}");
            if t == "function" {
                assert!(r["record"].is_string(), "{r}");
            }
            for f in row
                .fields
                .iter()
                .filter(|f| !unknown_to_parser.contains(&f.as_str()))
            {
                assert!(at(&r["record"], f).is_some(), "{t} without {f}: {r}");
            }
        }
    }
}

/// The runtime sees the code at /var/task (its cwd and LAMBDA_TASK_ROOT), the
/// layers merged at /opt with the later layer winning, the layers' and
/// --extensions' extensions at /opt/extensions (both started), `sandbox` at
/// 127.0.0.1; the host's mount table gains nothing and the namespace is gone
/// after the run. Without the sandbox the same function sees the host's paths.
#[test]
fn the_runtime_sees_code_layers_and_names_in_the_sandbox() {
    let _turn = crate::common::beside();
    if !sandbox_available() {
        return;
    }
    let dir = fixture_dir();
    let d = dir.path();
    install(&python_client("raw_runtime.py"), &d.join("code/bootstrap"));
    write(&d.join("code/handler.txt"), "h");
    write(&d.join("l1/a"), "one\n");
    write(&d.join("l1/b"), "b\n");
    install(&python_client("raw_extension.py"), &d.join("l1/extensions/lext"));
    write(&d.join("l2/a"), "two\n");
    install(&python_client("raw_extension.py"), &d.join("ext/xext"));
    let seen_path = d.join("seen.json");
    let see = format!("CS_RT_SEE={}", seen_path.display());
    let s = |p: &str| d.join(p).display().to_string();
    let (code, l1, l2, ext) = (s("code"), s("l1"), s("l2"), s("ext"));
    let bootstrap = s("code/bootstrap");
    let m = marker("lambda-sandbox");
    let mut args = vec![
        "--runtime",
        &bootstrap,
        "--code",
        &code,
        "--layer",
        &l1,
        "--layer",
        &l2,
        "--extensions",
        &ext,
        "--env",
        &see,
    ];
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        args.push("--no-cgroup");
    }
    let before = mount_table();
    let (o, sample) = lambda(&[&args[..], &["--sandbox"]].concat(), &m);
    assert!(o.status.success(), "{}", stderr(&o));
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(&seen_path).unwrap()).unwrap();
    assert_eq!(seen["cwd"], "/var/task", "{seen}");
    assert_eq!(seen["task_root"], "/var/task", "{seen}");
    assert_eq!(
        seen["var_task"],
        serde_json::json!(["bootstrap", "handler.txt"]),
        "{seen}"
    );
    assert_eq!(
        seen["opt"],
        serde_json::json!(["a", "b", "extensions/lext", "extensions/xext"]),
        "{seen}"
    );
    assert_eq!(seen["opt_a"], "two\n", "the later layer wins: {seen}");
    assert_eq!(seen["sandbox"], "127.0.0.1", "{seen}");
    assert_eq!(seen["sandbox.localdomain"], "127.0.0.1", "{seen}");
    let own = std::fs::read_link("/proc/self/ns/mnt").unwrap();
    let ns = seen["mnt_ns"].as_str().unwrap();
    assert_ne!(
        ns,
        own.to_string_lossy(),
        "the runtime ran in coldstart's own namespace"
    );
    let marks: Vec<&str> = sample["marks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert!(
        marks.contains(&"ext.lext.ready") && marks.contains(&"ext.xext.ready"),
        "{marks:?}"
    );
    assert_eq!(mount_table(), before, "the host's mount table changed");
    assert!(
        holders_of(ns).is_empty(),
        "the namespace outlived the run: {:?}",
        holders_of(ns)
    );
    assert!(std::fs::read_to_string("/etc/hosts")
        .unwrap()
        .lines()
        .all(|l| !l.contains("sandbox.localdomain")));

    std::fs::remove_file(&seen_path).unwrap();
    let (o, _) = lambda(&[&args[..], &["--no-sandbox"]].concat(), &m);
    assert!(o.status.success(), "{}", stderr(&o));
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(&seen_path).unwrap()).unwrap();
    assert_eq!(seen["task_root"].as_str(), Some(code.as_str()), "{seen}");
    assert_eq!(seen["mnt_ns"].as_str(), Some(&*own.to_string_lossy()), "{seen}");

    // --bare runs in the same namespace as the emulated variant it is compared with.
    std::fs::remove_file(&seen_path).unwrap();
    let (o, _) = lambda(&[&args[..], &["--sandbox", "--bare"]].concat(), &m);
    assert!(o.status.success(), "{}", stderr(&o));
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(&seen_path).unwrap()).unwrap();
    assert_eq!(seen["task_root"], "/var/task", "{seen}");
    assert_eq!(seen["opt_a"], "two\n", "{seen}");
    assert_eq!(mount_table(), before, "the host's mount table changed");
}

/// Without privileges the sandbox is made through a user namespace: as root, this
/// runs coldstart as nobody (setpriv) with a shell bootstrap that writes what it
/// sees and exits (a failed init, but inside the namespace).
#[test]
fn an_unprivileged_user_gets_the_sandbox_through_a_user_namespace() {
    let _turn = crate::common::beside();
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: not root, so the other tests already ran through a user namespace");
        return;
    }
    let Some(setpriv) = testkit::tool("SANDBOX", "setpriv") else {
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    let dir = fixture_dir();
    let d = dir.path();
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    let seen = d.join("seen.txt");
    write(
        &d.join("code/bootstrap"),
        &format!(
            "#!/bin/sh\n{{ pwd; echo \"$LAMBDA_TASK_ROOT\"; cat /opt/a; getent hosts sandbox; id -u; }} > {} 2>&1\nexit 3\n",
            seen.display()
        ),
    );
    write(&d.join("layer/a"), "from the layer\n");
    for p in ["code", "layer", "code/bootstrap", "layer/a"] {
        std::fs::set_permissions(d.join(p), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let before = mount_table();
    let o = std::process::Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_coldstart"))
        .args([
            "lambda",
            "-q",
            "--no-store",
            "--no-cgroup",
            "--sandbox",
            "--runs",
            "1",
            "--warmup",
            "0",
        ])
        .arg("--runtime")
        .arg(d.join("code/bootstrap"))
        .arg("--layer")
        .arg(d.join("layer"))
        .env("HOME", d)
        .current_dir(d)
        .output()
        .unwrap();
    let err = stderr(&o);
    if err.contains("--sandbox: neither root nor a user namespace") {
        testkit::skip(
            "SANDBOX",
            "user namespaces are not available to unprivileged users here",
        );
        return;
    }
    let text = std::fs::read_to_string(&seen).unwrap_or_else(|_| panic!("the bootstrap never ran: {err}"));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "/var/task", "{text}");
    assert_eq!(lines[1], "/var/task", "{text}");
    assert_eq!(lines[2], "from the layer", "{text}");
    assert!(
        lines[3].starts_with("127.0.0.1") && lines[3].contains("sandbox"),
        "{text}"
    );
    assert_eq!(lines[4], "0", "uid 0 inside the user namespace: {text}");
    assert!(err.contains("Runtime.ExitError"), "{err}");
    assert_eq!(mount_table(), before, "the host's mount table changed");
}

/// An extension written for Lambda that listens on ("sandbox", PORT) and
/// subscribes at http://sandbox:PORT crashes on the host (the name does not
/// resolve) and works unchanged in the sandbox, where it receives the Telemetry
/// API's records with the spec's fields (raw JSON, as delivered).
#[test]
fn an_extension_listening_on_sandbox_needs_the_sandbox() {
    let _turn = crate::common::beside();
    if !sandbox_available() {
        return;
    }
    let dir = fixture_dir();
    let ext = dir.path().join("ext");
    install(&python_client("raw_extension.py"), &ext.join("py-sandbox"));
    let recs_path = dir.path().join("records.jsonl");
    let rt = python_client("raw_runtime.py");
    let envs = [
        "CS_EXT_SUBSCRIBE=telemetry".to_string(),
        "CS_EXT_LISTEN_HOST=sandbox".to_string(),
        format!("CS_EXT_LISTEN_PORT={}", free_port()),
        format!("CS_EXT_RECORDS={}", recs_path.display()),
        "CS_RT_SAY=hello from the function".to_string(),
    ];
    let mut args: Vec<&str> = vec![
        "--no-cgroup",
        "--runtime",
        rt.to_str().unwrap(),
        "--extensions",
        ext.to_str().unwrap(),
    ];
    for e in &envs {
        args.extend(["--env", e]);
    }
    let m = marker("lambda-sandbox-name");
    let (o, sample) = lambda(&[&args[..], &["--no-sandbox"]].concat(), &m);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(sample["outcome"]["error_type"], "Extension.Crash", "{sample}");
    assert!(records(&recs_path).is_empty());

    let (o, sample) = lambda(&[&args[..], &["--sandbox"]].concat(), &m);
    assert!(o.status.success(), "{}", stderr(&o));
    let recs = records(&recs_path);
    assert_spec(&recs, &types_of("Telemetry"), &[]);
    assert_spec(&recs, &["function"], &[]);
    assert!(recs
        .iter()
        .any(|r| r["type"] == "function" && r["record"] == "hello from the function"));
    let sub = recs
        .iter()
        .find(|r| r["type"] == "platform.telemetrySubscription")
        .unwrap();
    assert_eq!(sub["record"]["name"], "py-sandbox");
    assert_eq!(sample["metrics"]["telemetry.py-sandbox.failed_batches"], 0.0);
}

/// The lambda-extension crate's example, built by examples/build.sh (a visible
/// skip when it is not).
fn crate_extension() -> Option<PathBuf> {
    testkit::need(
        "LAMBDA_CLIENTS",
        Some(examples().join("lambda/rust-telemetry-extension")).filter(|p| p.exists()),
        || "examples/lambda/rust-extension was not built (see examples/build.sh)".into(),
    )
}

/// Two copies of the crate's extension in `dir`: `rust-tel` on the Telemetry API,
/// `rust-logs` on the Logs API, each writing what it received under `out`.
struct CrateExtensions {
    env: Vec<String>,
    telemetry: PathBuf,
    logs: PathBuf,
}

impl CrateExtensions {
    fn install(client: &Path, dir: &Path, out: &Path) -> Self {
        install(client, &dir.join("rust-tel"));
        install(client, &dir.join("rust-logs"));
        let (telemetry, logs) = (out.join("telemetry.jsonl"), out.join("logs.jsonl"));
        let (p1, mut p2) = (free_port(), free_port());
        while p2 == p1 {
            p2 = free_port();
        }
        let env = vec![
            format!("CS_TELEMETRY_PORT={p1}"),
            "CS_LOGS_EXTENSION=rust-logs".to_string(),
            format!("CS_LOGS_PORT={p2}"),
            format!("CS_TELEMETRY_RECORDS={}", telemetry.display()),
            format!("CS_LOGS_RECORDS={}", logs.display()),
        ];
        CrateExtensions { env, telemetry, logs }
    }

    /// Each API's records with the spec's fields, as the crate parsed them (its
    /// typed records drop instanceId, instanceMaxMemory and the function's name
    /// and version of initStart, and the Logs API's platform.start version: the
    /// raw extension's test checks those), and every batch delivered.
    fn check(&self, sample: &Value) -> (Vec<Value>, Vec<Value>) {
        let tel = records(&self.telemetry);
        assert_spec(
            &tel,
            &types_of("Telemetry"),
            &[
                "instanceId",
                "instanceMaxMemory",
                "functionName",
                "functionVersion",
            ],
        );
        let logs = records(&self.logs);
        assert_spec(&logs, &types_of("Logs"), &["version"]);
        for (api, name) in [("telemetry", "rust-tel"), ("logs", "rust-logs")] {
            assert!(
                sample["metrics"][format!("{api}.{name}.delivered_batches")]
                    .as_f64()
                    .is_some_and(|n| n >= 1.0),
                "{}",
                sample["metrics"]
            );
            assert_eq!(sample["metrics"][format!("{api}.{name}.failed_batches")], 0.0);
        }
        (tel, logs)
    }
}

/// Two extensions on the lambda-extension crate, one subscribed to the Telemetry
/// API and one to the Logs API (both at http://sandbox.localdomain:PORT, the
/// crate's choice; AWS: "after subscribing using one of these APIs, any attempt to
/// subscribe using the other API returns an error"), get each API's records with
/// the spec's fields, as the crate parsed them.
#[test]
fn lambda_extension_crate_gets_telemetry_and_logs_in_the_sandbox() {
    let _turn = crate::common::beside();
    if !sandbox_available() {
        return;
    }
    let Some(client) = crate_extension() else {
        return;
    };
    let dir = fixture_dir();
    let ext = dir.path().join("ext");
    let crates = CrateExtensions::install(&client, &ext, dir.path());
    let rt = python_client("raw_runtime.py");
    let mut args: Vec<&str> = vec![
        "--no-cgroup",
        "--sandbox",
        "--runtime",
        rt.to_str().unwrap(),
        "--extensions",
        ext.to_str().unwrap(),
        "--env",
        "CS_RT_SAY=hello from the function",
    ];
    for e in &crates.env {
        args.extend(["--env", e]);
    }
    let (o, sample) = lambda(&args, &marker("lambda-sandbox-crate"));
    assert!(o.status.success(), "{}", stderr(&o));
    let (tel_recs, log_recs) = crates.check(&sample);
    assert_spec(&tel_recs, &["function"], &[]);
    assert_spec(&log_recs, &["function"], &[]);
    assert!(log_recs
        .iter()
        .any(|r| r["type"] == "function" && r["record"] == "hello from the function"));
    let request = |recs: &[Value], t: &str| {
        recs.iter()
            .find(|r| r["type"] == t)
            .map(|r| r["record"]["requestId"].clone())
            .unwrap()
    };
    assert_eq!(
        request(&log_recs, "platform.start"),
        request(&log_recs, "platform.end")
    );
    assert_eq!(
        request(&log_recs, "platform.start"),
        request(&tel_recs, "platform.report")
    );
}

/// SIGKILL of coldstart in the middle of an init in the sandbox: the host's mount
/// table is unchanged (nothing was ever mounted in it).
#[test]
fn sigkill_of_coldstart_leaves_no_mounts() {
    let _turn = crate::common::beside();
    if !sandbox_available() {
        return;
    }
    let dir = fixture_dir();
    let seen_path = dir.path().join("seen.json");
    let rt = python_client("raw_runtime.py");
    let m = marker("lambda-sandbox-kill");
    let before = mount_table();
    let mut child = coldstart()
        .args([
            "lambda",
            "--no-cgroup",
            "--sandbox",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--init-timeout",
            "60",
            "--runtime",
            rt.to_str().unwrap(),
            "--env",
            &m,
            "--env",
            "CS_RT_MODE=hang",
            "--env",
            &format!("CS_RT_SEE={}", seen_path.display()),
        ])
        .quiet()
        .no_store()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    // The runtime writes the file inside the namespace, then hangs in init.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !seen_path.exists() {
        assert!(Instant::now() < deadline, "the runtime never started");
        assert!(child.try_wait().unwrap().is_none(), "coldstart ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(mount_table(), before, "the host's mount table changed");
    // What the kill left running (the watchdog's business, not this test's) goes.
    for pid in processes_with(&m) {
        // SAFETY: a plain kill(2) of a process of this test's run.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(&seen_path).unwrap()).unwrap();
    let ns = seen["mnt_ns"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !holders_of(ns).is_empty() {
        assert!(Instant::now() < deadline, "still held: {:?}", holders_of(ns));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(mount_table(), before);
}

/// The table itself reads as the docs state it: optional fields (`?`) left out,
/// the API column kept.
#[test]
fn the_spec_table_is_read_from_the_docs() {
    let _turn = crate::common::beside();
    let spec = spec();
    let row = |k: &str| spec.iter().find(|r| r.kind == k).unwrap();
    let init = row("platform.initStart");
    assert!(init.fields.iter().any(|f| f == "instanceId"), "{:?}", init.fields);
    assert!(!init.fields.iter().any(|f| f == "runtimeVersion"), "optional");
    assert_eq!(row("platform.end").api, "Logs");
    assert!(types_of("Logs").iter().any(|t| t == "platform.logsSubscription"));
    assert!(!types_of("Logs").iter().any(|t| t == "platform.runtimeDone"));
}

/// The whole case in one run: AWS's own Python runtime interface client
/// (awslambdaric) runs a zip's handler at /var/task, and two extensions built on
/// the lambda-extension crate, shipped in a layer's extensions/ (so started from
/// /opt/extensions), subscribe at sandbox.localdomain to the Telemetry API and
/// the Logs API. What they received is checked against the docs' spec table, and
/// the handler's own print reaches both as a `function` record.
#[test]
fn awslambdaric_handler_with_crate_extensions_from_a_layer() {
    let _turn = crate::common::beside();
    if !sandbox_available() {
        return;
    }
    let Some(client) = crate_extension() else {
        return;
    };
    let ric = repo().join("target/lambda-ric");
    if testkit::need(
        "LAMBDA_RIC",
        Some(()).filter(|_| ric.join("python/awslambdaric/__main__.py").is_file()),
        || "awslambdaric is not installed (run `bash examples/lambda-ric/setup.sh`)".into(),
    )
    .is_none()
    {
        return;
    }
    let dir = fixture_dir();
    let (code, layer) = (dir.path().join("code"), dir.path().join("layer"));
    write(
        &code.join("app.py"),
        "import os\n\ndef handler(event, context):\n    print('hello from the handler', flush=True)\n    return {'cwd': os.getcwd(), 'ext': sorted(os.listdir('/opt/extensions'))}\n",
    );
    let crates = CrateExtensions::install(&client, &layer.join("extensions"), dir.path());
    let response = dir.path().join("response.json");
    let mut args: Vec<&str> = vec![
        "--sandbox",
        "--runtime",
        "python3.11",
        "--code",
        code.to_str().unwrap(),
        "--handler",
        "app.handler",
        "--layer",
        layer.to_str().unwrap(),
        "--save-response",
        response.to_str().unwrap(),
    ];
    for e in &crates.env {
        args.extend(["--env", e]);
    }
    let (o, sample) = lambda(&args, &marker("lambda-sandbox-ric"));
    assert!(o.status.success(), "{}", stderr(&o));
    // The handler's own view: /var/task, and the layer's extensions at /opt.
    let resp: Value = serde_json::from_slice(&std::fs::read(&response).unwrap()).unwrap();
    assert_eq!(resp["cwd"], "/var/task");
    assert_eq!(resp["ext"], serde_json::json!(["rust-logs", "rust-tel"]));
    let (tel_recs, log_recs) = crates.check(&sample);
    for recs in [&tel_recs, &log_recs] {
        assert!(
            recs.iter()
                .any(|r| r["type"] == "function" && r["record"] == "hello from the handler"),
            "{recs:?}"
        );
    }
    let runtime_done = tel_recs
        .iter()
        .find(|r| r["type"] == "platform.runtimeDone")
        .unwrap();
    assert_eq!(runtime_done["record"]["status"], "success", "{runtime_done}");
}
