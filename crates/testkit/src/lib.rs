//! Test support for coldstart's crates, a dev-dependency of each: optional
//! toolchains found on PATH, fixtures built under the target directory, the one
//! way a test skips, and [`Cs`], a builder for runs of the coldstart binary with
//! the output's checks (as ripgrep's `TestCommand`).
//!
//! A test that needs an optional toolchain asks for it here. When it is missing,
//! the test says so on the real stderr (libtest captures `eprintln!` of passing
//! tests, so a plain note would be invisible in `cargo test`), and when
//! `COLDSTART_REQUIRE_<SWITCH>=1` is set (CI sets every switch in `.ci/run`) the
//! skip becomes a failure. Switches: PYTHON, NODE, JAVA, GO, GCC, ERLANG, STRACE,
//! OTEL, POSTGRES, LAMBDA_CLIENTS, LAMBDA_RIC (the managed runtimes' interface
//! clients, examples/lambda-ric/setup.sh), CGROUP, CHROMIUM, DENO, PERF (perf_event_open
//! allowed), MAVEN (mvn, and Maven Central for the Spring Boot fixture), CURL (the OTLP memory test),
//! KUBE_VALIDATE and JSONSCHEMA (fleet emit's validators), SLURM (a running cluster,
//! tests/fixtures/slurm/start.sh).

mod cmd;
mod procs;

pub use cmd::{Cs, Out};
pub use procs::{coldstart_cgroup_dirs, marker, processes_with};

use std::io::Write;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Every switch a test may name: `COLDSTART_REQUIRE_<one of these>`.
pub const SWITCHES: [&str; 26] = [
    "PYTHON",
    "NODE",
    "JAVA",
    "GO",
    "GCC",
    "ERLANG",
    "STRACE",
    "OTEL",
    "POSTGRES",
    "LAMBDA_CLIENTS",
    "LAMBDA_RIC",
    "CGROUP",
    "CHROMIUM",
    "DENO",
    "PERF",
    "SANDBOX",
    "MAVEN",
    "CURL",
    // The pinned validators of fleet emit's files (tests/fixtures/fleet-validate-setup.sh):
    // kubernetes-validate, and check-jsonschema with PyYAML.
    "KUBE_VALIDATE",
    "JSONSCHEMA",
    // A running Slurm cluster with a usable node (tests/fixtures/slurm/start.sh).
    "SLURM",
    // boto3, pinned (tests/fixtures/boto3-setup.sh): the SDK that drives `lambda serve`.
    "BOTO3",
    // moto's server, pinned (tests/fixtures/moto-setup.sh): `coldstart lambda --aws`'s control plane.
    "MOTO",
    // A JDK 25 runtime, pinned (tests/fixtures/jdk25-setup.sh): tune's AOT cache flow.
    "JDK25",
    // `chattr +i` (root, a filesystem with the flag): a file that cannot be replaced.
    "IMMUTABLE",
    // podman with runc, buildah and a local registry (docker-registry): `bench --image`.
    "PODMAN",
];

/// Whether `COLDSTART_REQUIRE_<switch>` asks for the toolchain (set, not "" or "0").
pub fn required(switch: &str) -> bool {
    assert!(
        SWITCHES.contains(&switch),
        "unknown switch {switch}: add it to SWITCHES"
    );
    std::env::var(format!("COLDSTART_REQUIRE_{switch}")).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The one way to skip: fails the test when the switch is set, otherwise writes a
/// visible line and lets the caller return.
pub fn skip(switch: &str, why: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    if required(switch) {
        panic!("{test}: {why}, and COLDSTART_REQUIRE_{switch} is set");
    }
    say(&format!(
        "SKIPPED {test}: {why} (COLDSTART_REQUIRE_{switch}=1 makes this a failure)"
    ));
}

/// A line on the process's real stderr, past libtest's output capture.
pub fn say(line: &str) {
    let written = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|mut f| writeln!(f, "{line}"));
    if written.is_err() {
        eprintln!("{line}");
    }
}

/// `found`, or a skip (see [`skip`]) naming what is missing.
pub fn need<T>(switch: &str, found: Option<T>, what: impl FnOnce() -> String) -> Option<T> {
    if found.is_none() {
        skip(switch, &what());
    }
    found
}

/// An executable file named `name` in a PATH directory (not resolved further).
pub fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// A program from PATH, or a skip under `switch`.
pub fn tool(switch: &str, name: &str) -> Option<PathBuf> {
    need(switch, which(name), || format!("{name} is not on PATH"))
}

/// The real Python interpreter behind `python3` on PATH. A version manager's
/// `python3` is often a shim (pyenv's is a bash script that adds ~200 ms and several
/// execs before Python starts), so ask the interpreter where it is.
pub fn real_python() -> Option<PathBuf> {
    static REAL: OnceLock<Option<PathBuf>> = OnceLock::new();
    REAL.get_or_init(|| {
        let shim = which("python3")?;
        let out = Command::new(shim)
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()?;
        let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
        (out.status.success() && path.is_absolute() && path.is_file()).then_some(path)
    })
    .clone()
}

/// [`real_python`], or a skip under PYTHON.
pub fn python() -> Option<PathBuf> {
    need("PYTHON", real_python(), || {
        "no working python3 on PATH (`python3 -c 'import sys; print(sys.executable)'` failed)".into()
    })
}

/// A directory for fixtures under the target directory (never a machine path),
/// next to the test binary: target/<profile>/deps/… → target/<profile>/test-fixtures,
/// shared by the unit and integration tests of every crate.
pub fn fixtures_dir() -> PathBuf {
    let dir = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("test-fixtures")))
        .unwrap_or_else(|| std::env::temp_dir().join("coldstart-test-fixtures"));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

/// Build `name` into the fixtures directory once per process with `build(out)`,
/// which writes `out`; the result is renamed into place, so test binaries running
/// at the same time never see a half-written file. Rebuilt when any of `sources`
/// is newer.
pub fn built(name: &str, sources: &[&Path], build: impl FnOnce(&Path) -> Command) -> PathBuf {
    // One build at a time in this process (tests run on parallel threads); across
    // processes the rename keeps every reader's view whole.
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = BUILDING.lock().unwrap_or_else(|p| p.into_inner());
    let dest = fixtures_dir().join(name);
    let fresh = dest.metadata().and_then(|m| m.modified()).is_ok_and(|built_at| {
        sources.iter().all(|s| {
            s.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t <= built_at)
        })
    });
    if fresh {
        return dest;
    }
    let tmp = fixtures_dir().join(format!(".{name}.{}.tmp", std::process::id()));
    let mut cmd = build(&tmp);
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("building fixture {name}: {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "building fixture {name} failed: {cmd:?}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&tmp, &dest).unwrap_or_else(|e| panic!("renaming fixture {name}: {e}"));
    dest
}

/// The repository root: the nearest directory above this crate's manifest that
/// holds `.ci/`.
pub fn repo() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|d| d.join(".ci").is_dir())
        .map(Path::to_path_buf)
        .unwrap_or(manifest)
}

/// A loopback port nothing listens on, from 20000–32000 (below the ephemeral
/// range, so no outgoing connection can be holding it or take it meanwhile).
pub fn free_port() -> u16 {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    for _ in 0..1000 {
        let port = rng.gen_range(20000..32000);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in 20000–32000 after 1000 tries")
}

/// A C example (examples/c/NAME.c) compiled with gcc, or a skip under GCC.
pub fn c_example(name: &str, flags: &[&str]) -> Option<PathBuf> {
    let gcc = tool("GCC", "gcc")?;
    let src = repo().join(format!("examples/c/{name}.c"));
    let header = repo().join("examples/c/common.h");
    let flags: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    Some(built(name, &[&src, &header], |out| {
        let mut c = Command::new(gcc);
        c.args(&flags).arg("-o").arg(out).arg(&src);
        c
    }))
}

/// examples/go (the Go HTTP server), or a skip under GO.
pub fn go_server() -> Option<PathBuf> {
    let go = tool("GO", "go")?;
    let dir = repo().join("examples/go");
    Some(built(
        "go-server",
        &[&dir.join("main.go"), &dir.join("go.mod")],
        |out| {
            let mut c = Command::new(go);
            c.args(["build", "-o"])
                .arg(out)
                .arg(".")
                .current_dir(&dir)
                .env("GOTOOLCHAIN", "local")
                .env("GOFLAGS", "-buildvcs=false");
            c
        },
    ))
}

/// A chain of two shell scripts in front of `program`, as a version manager's
/// shim is (pyenv: bash `shims/python3` → `pyenv exec` → the interpreter), under
/// the fixtures directory. Returns the outer script; argv after it reaches `program`.
pub fn shim_chain(program: &Path) -> PathBuf {
    let bash = which("bash").unwrap_or_else(|| PathBuf::from("/bin/bash"));
    let dir = fixtures_dir().join("shim-chain");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    let inner = dir.join("shim-exec");
    let outer = dir.join("shim");
    write_script(
        &inner,
        &format!("#!{}\nexec {} \"$@\"\n", bash.display(), quote(program)),
    );
    write_script(
        &outer,
        &format!("#!{}\nexec {} \"$@\"\n", bash.display(), quote(&inner)),
    );
    outer
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// Write an executable script atomically (other test binaries may run it meanwhile).
fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
        return;
    }
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).unwrap_or_else(|e| panic!("writing {}: {e}", tmp.display()));
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", tmp.display()));
    std::fs::rename(&tmp, path).unwrap_or_else(|e| panic!("renaming into {}: {e}", path.display()));
}

/// The bundled examples, built once per test process by examples/build.sh into
/// target/examples.
pub fn examples() -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    let out = repo().join("target/examples");
    BUILD.call_once(|| {
        let status = Command::new("bash")
            .arg(repo().join("examples/build.sh"))
            .arg(&out)
            .status()
            .expect("run examples/build.sh");
        assert!(status.success(), "examples/build.sh failed");
    });
    out
}

/// One built example (see [`examples`]), as an argument.
pub fn example(name: &str) -> String {
    let p = examples().join(name);
    assert!(p.exists(), "example {} was not built", p.display());
    p.display().to_string()
}

/// A child's stdout as text.
pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// A child's stderr as text.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

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

/// A JSON file, parsed.
pub fn json_file(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Ready times (ns) of the measured, successful runs of variant `v` in a JSON export.
pub fn ready_ns(doc: &serde_json::Value, v: u64) -> Vec<u64> {
    doc["samples"]
        .as_array()
        .expect("samples in the export")
        .iter()
        .filter(|s| s["variant"] == v && s["warmup"] == false && s["outcome"]["kind"] == "ready")
        .map(|s| s["ready_ns"].as_u64().expect("ready_ns of a ready run"))
        .collect()
}

/// [`real_python`] as an argument, for tests that cannot run without it.
pub fn python_exe() -> String {
    real_python()
        .expect("python3 on PATH (COLDSTART_REQUIRE_PYTHON)")
        .display()
        .to_string()
}

/// A fresh store per backend: a SQLite file, and a new PostgreSQL database when
/// `binary_has_postgres` (the binary's `postgres` feature) and COLDSTART_TEST_POSTGRES
/// names a server (else a skip under POSTGRES).
pub fn stores(tag: &str, binary_has_postgres: bool) -> Vec<(tempfile::TempDir, String)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = dir.path().join("store.db").display().to_string();
    let mut out = vec![(dir, sqlite)];
    out.extend(postgres_store(tag, binary_has_postgres));
    out
}

/// A new PostgreSQL database (see [`stores`]), or a skip under POSTGRES.
pub fn postgres_store(tag: &str, binary_has_postgres: bool) -> Option<(tempfile::TempDir, String)> {
    if !binary_has_postgres {
        skip(
            "POSTGRES",
            "built without the `postgres` feature: tested against SQLite only",
        );
        return None;
    }
    match std::env::var("COLDSTART_TEST_POSTGRES") {
        Ok(admin) if !admin.is_empty() => Some(postgres_database(tag, &admin)),
        _ => {
            skip(
                "POSTGRES",
                "COLDSTART_TEST_POSTGRES is not set: tested against SQLite only",
            );
            None
        }
    }
}

#[cfg(feature = "postgres")]
fn postgres_database(tag: &str, admin: &str) -> (tempfile::TempDir, String) {
    let db = format!("cs_{tag}_{}", std::process::id());
    let mut client =
        postgres::Client::connect(admin, postgres::NoTls).expect("connect to COLDSTART_TEST_POSTGRES");
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {db}"))
        .expect("drop the test database");
    client
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .expect("create the test database");
    let mut url = url::Url::parse(admin).expect("COLDSTART_TEST_POSTGRES is a URL");
    url.set_path(&db);
    (tempfile::tempdir().expect("tempdir"), url.to_string())
}

#[cfg(not(feature = "postgres"))]
fn postgres_database(_tag: &str, _admin: &str) -> (tempfile::TempDir, String) {
    panic!("coldstart-testkit was built without its `postgres` feature: enable it beside the binary's")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CI must turn every skip into a failure: each switch is exported by .ci/run.
    #[test]
    fn ci_sets_every_switch() {
        let ci = std::fs::read_to_string(repo().join(".ci/run")).expect("read .ci/run");
        let line = ci
            .lines()
            .find(|l| l.trim_start().starts_with("for switch in "))
            .expect(".ci/run exports the switches in a `for switch in …` loop");
        let set: Vec<&str> = line
            .split_whitespace()
            .skip(3)
            .take_while(|w| *w != "do")
            .map(|w| w.trim_end_matches(';'))
            .collect();
        for s in SWITCHES {
            assert!(set.contains(&s), "{s} is not set by .ci/run: {line}");
        }
    }

    #[test]
    fn which_finds_only_executables_on_path() {
        let sh = which("sh").expect("sh is on every PATH");
        assert!(sh.is_absolute());
        assert_eq!(which("coldstart-no-such-program"), None);
    }

    #[test]
    fn a_skip_under_its_switch_fails() {
        // Run in a child test process: the switch is read from the environment.
        if std::env::var_os("COLDSTART_TESTKIT_CHILD").is_some() {
            skip("GCC", "simulated");
            return;
        }
        let exe = std::env::current_exe().expect("test binary");
        // Test names leave out the crate: `tests::…`.
        let module = module_path!().split_once("::").map_or("", |(_, m)| m);
        let name = format!("{module}::a_skip_under_its_switch_fails");
        let run = |require: &str| {
            Command::new(&exe)
                .args(["--exact", &name, "--nocapture"])
                .env("COLDSTART_TESTKIT_CHILD", "1")
                .env("COLDSTART_REQUIRE_GCC", require)
                .output()
                .expect("run the test binary")
        };
        let skipped = run("0");
        assert!(skipped.status.success());
        let err = String::from_utf8_lossy(&skipped.stderr);
        assert!(
            err.contains("SKIPPED") && err.contains("COLDSTART_REQUIRE_GCC=1"),
            "{err}"
        );
        let failed = run("1");
        assert!(
            !failed.status.success(),
            "the switch turns the skip into a failure"
        );
        assert!(String::from_utf8_lossy(&failed.stderr).contains("COLDSTART_REQUIRE_GCC is set"));
    }
}
