//! Shared helpers for integration tests: the built binary, the bundled examples,
//! free ports, and finding processes by an environment marker.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Once;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The examples, built once per test binary by examples/build.sh.
pub fn examples() -> PathBuf {
    static BUILD: Once = Once::new();
    let out = root().join("target/examples");
    BUILD.call_once(|| {
        let status = Command::new("bash")
            .arg(root().join("examples/build.sh"))
            .arg(&out)
            .status()
            .expect("run examples/build.sh");
        assert!(status.success(), "examples/build.sh failed");
    });
    out
}

pub fn example(name: &str) -> String {
    let p = examples().join(name);
    assert!(p.exists(), "example {} was not built", p.display());
    p.display().to_string()
}

/// The binary, with its store pointed away from the repository (tests that
/// exercise the store pass --store themselves).
pub fn coldstart() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_coldstart"));
    let db = format!(
        "{}/default-store-{}.db",
        env!("CARGO_TARGET_TMPDIR"),
        std::process::id()
    );
    c.env("COLDSTART_STORE", db);
    c
}

/// `coldstart lambda` for one cold start, quietly and without the store: what
/// the Lambda tests put before their own flags.
pub const LAMBDA_ONCE: [&str; 7] = ["lambda", "-q", "--no-store", "--runs", "1", "--warmup", "0"];

/// Run `coldstart ARGS`, returning output (never panics on a non-zero exit).
pub fn run(args: &[&str]) -> Output {
    coldstart().args(args).output().expect("spawn coldstart")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// A loopback port nothing listens on, from 20000–32000: below the kernel's
/// ephemeral range (32768–60999), where a probe's own connect or a client's
/// source port could take the port from under the test's server. Random, so
/// tests running in parallel rarely collide; checked free by binding it.
#[allow(unused_imports)] // not every test binary starts a server
pub use testkit::free_port;

/// A free even port inside the ephemeral range: only for tests of the
/// self-connection a connect there can make (nothing may listen on it).
pub fn free_ephemeral_port() -> u16 {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .unwrap_or_else(|_| "32768 60999".into());
    let mut it = range.split_whitespace().filter_map(|n| n.parse::<u16>().ok());
    let (lo, hi) = (it.next().unwrap_or(32768), it.next().unwrap_or(60999));
    use rand::Rng;
    let mut rng = rand::thread_rng();
    for _ in 0..1000 {
        let port = rng.gen_range(lo..=hi) & !1;
        if port >= lo && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free even port in the ephemeral range {lo}–{hi}")
}

/// A unique marker to put in a target's environment.
pub fn marker(tag: &str) -> String {
    format!(
        "COLDSTART_TEST_MARKER={tag}-{}-{}",
        std::process::id(),
        rand_suffix()
    )
}

fn rand_suffix() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64 % 1_000_000_007
}

/// Live (non-zombie) processes whose environment holds `marker` (KEY=VALUE).
pub fn processes_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()) {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = state
                .rfind(')')
                .map(|i| state[i + 2..].starts_with('Z'))
                .unwrap_or(false);
            if !zombie {
                found.push(pid);
            }
        }
    }
    found
}

pub fn json_file(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read json")).expect("valid json")
}

/// Ready times (ns) of the measured, successful runs of variant `v` in a JSON export.
pub fn ready_ns(doc: &serde_json::Value, v: u64) -> Vec<u64> {
    doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["variant"] == v && s["warmup"] == false && s["outcome"]["kind"] == "ready")
        .map(|s| s["ready_ns"].as_u64().unwrap())
        .collect()
}

/// The real Python interpreter behind `python3` (on this machine `python3` is a
/// pyenv shim, a bash script that adds ~200 ms before Python starts).
pub fn real_python() -> String {
    testkit::real_python()
        .expect("python3 on PATH (COLDSTART_REQUIRE_PYTHON)")
        .display()
        .to_string()
}

/// Optional toolchains, fixtures and the one way to skip (shared with the unit tests).
#[path = "../../crates/core/src/testkit.rs"]
pub mod testkit;

/// A fresh store per backend: a SQLite file, and a new PostgreSQL database.
pub fn stores(tag: &str) -> Vec<(tempfile::TempDir, String)> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = dir.path().join("store.db").display().to_string();
    let mut out = vec![(dir, sqlite)];
    out.extend(postgres_store(tag));
    out
}

#[cfg(feature = "postgres")]
pub fn postgres_store(tag: &str) -> Option<(tempfile::TempDir, String)> {
    match std::env::var("COLDSTART_TEST_POSTGRES") {
        Ok(admin) if !admin.is_empty() => {
            let db = format!("cs_{tag}_{}", std::process::id());
            let mut client = postgres::Client::connect(&admin, postgres::NoTls)
                .expect("connect to COLDSTART_TEST_POSTGRES");
            client
                .batch_execute(&format!("DROP DATABASE IF EXISTS {db}"))
                .unwrap();
            client.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
            let mut url = url::Url::parse(&admin).unwrap();
            url.set_path(&db);
            Some((tempfile::tempdir().unwrap(), url.to_string()))
        }
        _ => {
            testkit::skip(
                "POSTGRES",
                "COLDSTART_TEST_POSTGRES is not set: tested against SQLite only",
            );
            None
        }
    }
}

#[cfg(not(feature = "postgres"))]
pub fn postgres_store(_tag: &str) -> Option<(tempfile::TempDir, String)> {
    testkit::skip(
        "POSTGRES",
        "built without the `postgres` feature: tested against SQLite only",
    );
    None
}

/// The cgroup directories coldstart made that a process is in, from that process's
/// /proc/PID/cgroup text (a `coldstart-…` component in the path), each with its
/// `coldstart-…` ancestors: resolved through the mount table, so the names are
/// the run's own.
pub fn coldstart_cgroup_dirs(own: &str) -> Vec<std::path::PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mut dirs = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if !path.contains("/coldstart-") {
            continue;
        }
        // The mount of this hierarchy: cgroup2 for "0::", else the v1 mount
        // whose options name one of the controllers.
        let mount = mountinfo.lines().find_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let pre: Vec<&str> = pre.split_whitespace().collect();
            let post: Vec<&str> = post.split_whitespace().collect();
            let fits = if ctrls.is_empty() {
                post.first() == Some(&"cgroup2")
            } else {
                post.first() == Some(&"cgroup")
                    && post
                        .get(2)
                        .is_some_and(|o| o.split(',').any(|c| ctrls.split(',').any(|x| x == c)))
            };
            fits.then(|| (pre[3].to_string(), pre[4].to_string()))
        });
        let Some((root, mp)) = mount else { continue };
        let rel = path
            .strip_prefix(root.as_str())
            .unwrap_or(path)
            .trim_start_matches('/');
        // The first coldstart-… directory and every one below it, down to the leaf.
        let comps: Vec<&str> = rel.split('/').collect();
        let Some(first) = comps.iter().position(|c| c.starts_with("coldstart-")) else {
            continue;
        };
        for end in first..comps.len() {
            let dir = std::path::Path::new(&mp).join(comps[..=end].join("/"));
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    dirs
}
