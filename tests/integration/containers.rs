//! `bench --image`: a container image as a variant, through a real engine
//! (Debian's podman with runc), images built here by buildah from files the
//! tests make (static C programs in FROM scratch images), a real registry
//! (Debian's docker-registry on 127.0.0.1) for pull-cold runs. The engine's
//! state lives under the fixtures directory (its own containers.conf,
//! storage.conf and registries.conf), never in the machine's own store.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The label coldstart puts on each run's container (crates/core/src/container/reap.rs).
const OWNER_LABEL: &str = "io.coldstart.owner";

/// The engine's configuration for these tests, and the images built into it.
struct Podman {
    dir: PathBuf,
}

/// Images built once per process: the sleeper with a 1 ms and a 51 ms init
/// (both sleep, so both pay the same wake-up overshoot), and the HTTP server.
const SLEEP_A: &str = "localhost/coldstart-test/sleeper:a";
const SLEEP_B: &str = "localhost/coldstart-test/sleeper:b";
const HTTPD: &str = "localhost/coldstart-test/httpd:1";
/// The sleeper and PAD_BYTES of random padding in one layer of its own (no other
/// image shares it), for the pull-cold runs.
const PADDED: &str = "localhost/coldstart-test/padded:1";
const PAD_BYTES: usize = 4 << 20;

fn podman() -> Option<&'static Podman> {
    static P: OnceLock<Option<Podman>> = OnceLock::new();
    P.get_or_init(|| {
        for tool in ["podman", "runc", "buildah", "docker-registry", "gcc"] {
            testkit::tool("PODMAN", tool)?;
        }
        let dir = fixtures_dir().join("containers");
        std::fs::create_dir_all(&dir).unwrap();
        // This machine kind: runc (crun refuses the hybrid cgroup layout) and explicit
        // rlimits (runc may not raise podman's defaults); see DESIGN.md.
        std::fs::write(
            dir.join("containers.conf"),
            "[engine]\nruntime = \"runc\"\n[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n",
        )
        .unwrap();
        // The run root holds conmon's sockets, whose paths must fit sun_path (108 bytes):
        // under a long checkout's target/ every attached run waited out podman's 20 s
        // timeout. A short directory of its own, named for this fixtures directory.
        let runroot = std::env::temp_dir().join(format!("cs-podman-{:08x}", short_hash(&dir)));
        std::fs::write(
            dir.join("storage.conf"),
            format!(
                "[storage]\ndriver = \"overlay\"\ngraphroot = \"{}/storage\"\nrunroot = \"{}\"\n",
                dir.display(),
                runroot.display()
            ),
        )
        .unwrap();
        std::fs::write(dir.join("registries.conf"), "").unwrap();
        let p = Podman { dir };
        let ctx = p.dir.join("build");
        std::fs::create_dir_all(&ctx).unwrap();
        for (bin, src) in [
            ("sleeper", repo().join("examples/c/sleeper.c")),
            ("httpd", repo().join("tests/fixtures/containers/httpd.c")),
        ] {
            let o = Command::new("gcc")
                .args(["-O2", "-static", "-I"])
                .arg(repo().join("examples/c"))
                .arg("-o")
                .arg(ctx.join(bin))
                .arg(src)
                .output()
                .unwrap();
            assert!(o.status.success(), "gcc {bin}: {}", String::from_utf8_lossy(&o.stderr));
        }
        let pad: Vec<u8> = (0..PAD_BYTES).map(|_| rand::random::<u8>()).collect();
        std::fs::write(ctx.join("pad"), pad).unwrap();
        for (tag, file) in [
            (PADDED, "FROM scratch\nCOPY sleeper pad /\nENV COLDSTART_EXAMPLE_DELAY_MS=1\nENTRYPOINT [\"/sleeper\"]\n"),
            (SLEEP_A, "FROM scratch\nCOPY sleeper /sleeper\nENV COLDSTART_EXAMPLE_DELAY_MS=1\nENTRYPOINT [\"/sleeper\"]\n"),
            (SLEEP_B, "FROM scratch\nCOPY sleeper /sleeper\nENV COLDSTART_EXAMPLE_DELAY_MS=51\nENTRYPOINT [\"/sleeper\"]\n"),
            (HTTPD, "FROM scratch\nCOPY httpd /httpd\nENTRYPOINT [\"/httpd\"]\n"),
        ] {
            std::fs::write(ctx.join("Containerfile"), file).unwrap();
            p.ok("buildah", &["bud", "-q", "-f", ctx.join("Containerfile").to_str().unwrap(), "-t", tag, ctx.to_str().unwrap()]);
        }
        // A rebuilt tag leaves the image it had untagged: the store keeps only these.
        p.ok("podman", &["image", "prune", "-f"]);
        Some(p)
    })
    .as_ref()
}

/// FNV-1a of a path: a short, stable name for it.
fn short_hash(p: &Path) -> u32 {
    p.as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0x811c9dc5u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x01000193))
}

impl Podman {
    fn env(&self) -> [(&'static str, PathBuf); 3] {
        [
            ("CONTAINERS_CONF", self.dir.join("containers.conf")),
            ("CONTAINERS_STORAGE_CONF", self.dir.join("storage.conf")),
            ("CONTAINERS_REGISTRIES_CONF", self.dir.join("registries.conf")),
        ]
    }

    /// `tool ARGS` with this engine's configuration; its stdout, after success.
    fn ok(&self, tool: &str, args: &[&str]) -> String {
        let o = Command::new(tool)
            .args(args)
            .envs(self.env())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{tool} {args:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// `coldstart bench` with this engine's configuration.
    fn bench(&self, args: &[&str]) -> Cs {
        let mut c = cs(&["bench"]);
        c.args(args).envs(self.env()).no_store();
        c
    }

    /// The containers of coldstart's that exist now: (name, owner pid).
    fn ours(&self) -> Vec<(String, i32)> {
        self.labelled(&["ps", "-a"], ".Names")
    }

    /// What `list` shows of coldstart's (containers or pods): (name, owner pid).
    fn labelled(&self, list: &[&str], name: &str) -> Vec<(String, i32)> {
        let format = format!("{{{{{name}}}}} {{{{index .Labels \"{OWNER_LABEL}\"}}}}");
        let filter = format!("label={OWNER_LABEL}");
        let mut args = list.to_vec();
        args.extend(["--filter", &filter, "--format", &format]);
        self.ok("podman", &args)
            .lines()
            .filter_map(|l| {
                let (name, owner) = l.split_once(' ')?;
                Some((name.to_string(), owner.split(':').next()?.parse().ok()?))
            })
            .collect()
    }

    /// coldstart's containers whose coldstart has ended: what it left behind. (Tests
    /// beside this one may have live runs with containers of their own.)
    fn left_behind(&self) -> Vec<String> {
        self.ours()
            .into_iter()
            .filter(|(_, owner)| !Path::new(&format!("/proc/{owner}")).exists())
            .map(|(name, _)| name)
            .collect()
    }
}

fn export(dir: &Path) -> (PathBuf, String) {
    let json = dir.join("r.json");
    let arg = json.to_str().unwrap().to_string();
    (json, arg)
}

#[test]
fn an_images_known_init_sleep_is_measured_as_slower() {
    let _turn = crate::common::timed();
    let Some(p) = podman() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (json, arg) = export(dir.path());
    let o = p
        .bench(&[
            "--runs",
            "20",
            "--warmup",
            "1",
            "--export-json",
            &arg,
            "--name",
            "a",
            "--image",
            SLEEP_A,
            "--name",
            "b",
            "--image",
            SLEEP_B,
        ])
        .run();
    assert!(o.success(), "{}", o.streams());
    let doc = json_file(&json);
    assert_eq!(doc["variants"][1]["target"]["container"]["image"], SLEEP_B);
    let cmp = &doc["variants"][1]["stats"]["vs_baseline"];
    let ci = |i: usize| cmp["shift"]["ci"][i].as_f64().unwrap();
    let (lo, hi) = (ci(0), ci(1));
    // The contract both ways: `slower` with an interval that meets the 50 ms (20 ms
    // either side for the sleeps' overshoot), or a weaker verdict — `~` (no
    // significant difference) or within noise (real, but its interval reaches inside
    // ±--noise: +69 ms [6, 110] beside a build and the timed modules) — with an
    // interval that holds it; never faster, never a slower that excludes it.
    // A weak verdict whose interval misses the 50 ms is allowed only where the
    // tool said its figures are unreliable: the machine busy (a hunt beside a
    // parallel build and a fresh-clone CI: −11.7 ms [−65, +42], said busy). The
    // program phase below holds its contract either way.
    let busy = doc["load"]["busy"].as_bool().unwrap_or(false);
    match cmp["verdict"].as_str().unwrap() {
        "slower" => assert!(
            lo > 0.0 && lo <= 70.0 && hi >= 30.0,
            "slower, but its CI misses 50 ms: {cmp}"
        ),
        weak @ ("same" | "within_noise") => {
            assert!(
                (lo <= 50.0 && hi >= 50.0) || busy,
                "{weak}, and its CI excludes 50 ms on a machine not said to be busy: {cmp}"
            );
            eprintln!("{weak} for the 50 ms sleep (busy: {busy}): {cmp}");
        }
        other => panic!("{other} for a 50 ms longer init: {cmp}\n{}", o.streams()),
    }
    // The injected delay is the program's: its phase (the engine's start record →
    // the monitor's exit record) holds the same contract, and is the phase whose
    // shift is largest.
    assert_phases_cover(&doc);
    let program = &phase(&doc, 1, "program")["vs_baseline"];
    let pci = |i: usize| program["shift"]["ci"][i].as_f64().unwrap();
    // Its shift interval must meet the 50 ms whatever the verdict (never faster):
    // under load a's program phase is often 0 (its exit recorded before its start),
    // and a ratio of zeros has no interval, so the verdict can be "none" while the
    // shift is +49 ms [46, 50].
    assert_ne!(program["verdict"], "faster", "program phase: {program}");
    assert!(pci(0) <= 70.0 && pci(1) >= 30.0, "program phase: {program}");
    let shifts: Vec<(String, f64)> = doc["variants"][1]["stats"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["vs_baseline"]["shift"]["estimate"].as_f64().unwrap(),
            )
        })
        .collect();
    let largest = shifts.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    eprintln!("the shifts per phase (busy: {busy}): {shifts:?}");
    if !busy {
        assert_eq!(largest.0, "program", "the shifts per phase: {shifts:?}");
    }
    assert_eq!(p.left_behind(), Vec::<String>::new(), "containers left");
}

#[test]
fn a_published_servers_http_readiness_and_its_output() {
    let _turn = crate::common::beside();
    let Some(p) = podman() else { return };
    let port = free_port().to_string();
    let url = format!("http://127.0.0.1:{port}/");
    let publish = format!("{port}:8080");
    let dir = tempfile::tempdir().unwrap();
    let (json, arg) = export(dir.path());
    let o = p
        .bench(&[
            "--runs",
            "3",
            "--warmup",
            "0",
            "--requests",
            "2",
            "--export-json",
            &arg,
            "--image",
            HTTPD,
            "--publish",
            &publish,
            "--ready",
            &url,
        ])
        .run();
    assert!(o.success(), "{}", o.streams());
    let doc = json_file(&json);
    let samples = doc["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 3);
    for s in samples {
        assert_eq!(s["outcome"]["kind"], "ready", "{s}");
        assert_eq!(s["requests_ns"].as_array().unwrap().len(), 2, "{s}");
    }
    // The container's own output is the run's: a log probe sees its line.
    let o = p
        .bench(&[
            "--runs",
            "4",
            "--warmup",
            "0",
            "--image",
            HTTPD,
            "--publish",
            &publish,
            "--ready",
            "log:listening on 0\\.0\\.0\\.0:(?P<port>\\d+) \\(main at (?P<main>\\d+) ns\\)",
            "--export-json",
            &arg,
        ])
        .run();
    assert!(o.success(), "{}", o.streams());
    let doc = json_file(&json);
    // The engine's mark against the program's own first instant (same clock): the
    // container exists before its program runs, and that program ran before ready.
    for s in doc["samples"].as_array().unwrap() {
        assert_eq!(s["captures"]["port"], "8080", "{s}");
        let main = s["captures"]["main"].as_str().unwrap().parse::<u64>().unwrap()
            - s["t0_mono_ns"].as_u64().unwrap();
        let ready = s["ready_ns"].as_u64().unwrap();
        let created = s["marks"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["name"] == "container.created"))
            .unwrap_or_else(|| panic!("no container.created mark: {s}"));
        assert_eq!(created["source"], "engine");
        let created = created["t_ns"].as_u64().unwrap();
        // The engine's start record, when within the run: after the creation; its
        // distance from the program's main() is shown, not bounded (its recording
        // may lag on a busy machine).
        if let Some(started) = s["marks"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["name"] == "container.started"))
        {
            let started = started["t_ns"].as_u64().unwrap();
            assert!(
                created < started && started <= ready,
                "created {created} started {started} ready {ready}: {s}"
            );
            eprintln!(
                "container.started − main(): {:+.2} ms",
                (started as f64 - main as f64) / 1e6
            );
        }
        assert!(
            0 < created && created < main && main < ready,
            "created {created} main {main} ready {ready}: {s}"
        );
    }
    assert_eq!(p.left_behind(), Vec::<String>::new(), "containers left");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).is_err(),
        "the published port still answers after the runs"
    );
}

/// A registry on 127.0.0.1 (Debian's docker-registry), its storage and access
/// log in `dir`; killed when dropped.
struct Registry {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Registry {
    fn start(p: &Podman, dir: &Path) -> Registry {
        let port = free_port();
        let config = dir.join("registry.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
                dir.join("blobs").display()
            ),
        )
        .unwrap();
        let log = dir.join("registry.log");
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::from(
                std::fs::File::create(dir.join("registry.err")).unwrap(),
            ))
            .spawn()
            .unwrap();
        let r = Registry { child, port, log };
        // Ready when its API answers (the event, not a sleep).
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the registry did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Plain HTTP on loopback: the engine must be told this registry is insecure.
        std::fs::write(
            p.dir.join("registries.conf"),
            format!("[[registry]]\nlocation = \"127.0.0.1:{port}\"\ninsecure = true\n"),
        )
        .unwrap();
        r
    }

    /// Sizes of the blobs the registry served (its access log: the oracle for pulls).
    fn blobs_served(&self) -> Vec<u64> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"GET /v2/") && l.contains("/blobs/sha256:"))
            .filter_map(|l| {
                // … "GET /v2/NAME/blobs/sha256:… HTTP/1.1" 200 BYTES "" "AGENT"
                let after = l.split("HTTP/1.1\" ").nth(1)?;
                let mut f = after.split_whitespace();
                (f.next()? == "200").then_some(())?;
                f.next()?.parse().ok()
            })
            .collect()
    }

    /// How many times the padded layer was served.
    fn padded_layer_pulls(&self) -> usize {
        self.blobs_served()
            .iter()
            .filter(|b| **b >= PAD_BYTES as u64)
            .count()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn pull_cold_runs_pull_the_image_every_time_and_warm_runs_do_not() {
    let _turn = crate::common::beside();
    let Some(p) = podman() else { return };
    let dir = tempfile::tempdir().unwrap();
    let reg = Registry::start(p, dir.path());
    let remote = format!("127.0.0.1:{}/coldstart-test/padded:1", reg.port);
    let _untag = Untag(p, vec![remote.clone()]);
    let push = [
        "push",
        "-q",
        "--tls-verify=false",
        PADDED,
        &format!("docker://{remote}"),
    ];
    p.ok("podman", &push);
    // Its layer now exists in the registry only: a run that lacks the image must pull it.
    p.ok("podman", &["rmi", "-f", PADDED]);
    assert_eq!(reg.padded_layer_pulls(), 0);

    let (json, arg) = export(dir.path());
    let o = p
        .bench(&[
            "--runs",
            "3",
            "--warmup",
            "0",
            "--cache",
            "cold",
            "--image",
            &remote,
            "--export-json",
            &arg,
        ])
        .run();
    assert!(o.success(), "{}", o.streams());
    assert!(
        o.stderr().contains("each run pulls"),
        "what stays warm is said: {}",
        o.stderr()
    );
    let doc = json_file(&json);
    assert_eq!(doc["samples"].as_array().unwrap().len(), 3, "{doc}");
    // The registry served the padded layer once per pull-cold run.
    assert_eq!(
        reg.padded_layer_pulls(),
        3,
        "served: {:?}\n{}",
        reg.blobs_served(),
        o.streams()
    );

    let o = p
        .bench(&[
            "--runs",
            "3",
            "--warmup",
            "1",
            "--image",
            &remote,
            "--export-json",
            &arg,
        ])
        .run();
    assert!(o.success(), "{}", o.streams());
    assert_eq!(
        reg.padded_layer_pulls(),
        3,
        "warm runs pulled: {:?}",
        reg.blobs_served()
    );
    p.ok("podman", &["rmi", "-f", &remote]);
    assert_eq!(p.left_behind(), Vec::<String>::new(), "containers left");
}

#[test]
fn sigkilled_coldstarts_containers_are_reaped_by_the_next_one() {
    // Alone: what a killed coldstart leaves is, until reaped, left behind for any
    // test beside this one that checks nothing is.
    let _turn = crate::common::alone();
    let Some(p) = podman() else { return };
    let trials: usize = std::env::var("COLDSTART_CONTAINER_KILL_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let port = free_port().to_string();
    let url = format!("http://127.0.0.1:{port}/");
    let publish = format!("{port}:8080");
    let mut left_at_kill = 0;
    for trial in 0..trials {
        let mut c = p.bench(&[
            "--runs",
            "100",
            "--warmup",
            "0",
            "--image",
            HTTPD,
            "--publish",
            &publish,
            "--ready",
            &url,
        ]);
        let mut child = c.stdout(Stdio::null()).stderr(Stdio::null()).spawn();
        // Kill once a container of this run exists, at a point that moves from trial to
        // trial (right away, or while later runs start and stop).
        let deadline = Instant::now() + Duration::from_secs(60);
        while !p.ours().iter().any(|(_, owner)| *owner == child.id() as i32) {
            assert!(
                Instant::now() < deadline,
                "no container appeared in trial {trial}"
            );
            assert!(
                child.try_wait().unwrap().is_none(),
                "coldstart ended early in trial {trial}"
            );
        }
        std::thread::sleep(Duration::from_millis(150 * (trial % 5) as u64));
        child.kill().unwrap();
        child.wait().unwrap();
        left_at_kill += p.left_behind().len();
    }
    // The next coldstart that starts containers removes what the killed ones left.
    let o = p
        .bench(&["--runs", "1", "--warmup", "0", "--image", SLEEP_A])
        .run();
    assert!(o.success(), "{}", o.streams());
    let left = p.left_behind();
    assert!(
        left.is_empty(),
        "after {trials} SIGKILLs, left: {left:?}\nthe next run said:\n{}",
        o.stderr()
    );
    // (The removal is announced by whichever coldstart made it: a test beside this one may.)
    eprintln!("{trials} SIGKILL trials: {left_at_kill} container(s) found right after the kills, 0 after the next run");
}

#[test]
fn container_options_are_checked_before_any_run() {
    let _turn = crate::common::beside();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--pod", "pod.yaml", "--image", "x"],
            "--image and --pod in one variant",
        ),
        (
            &["--read-set", "--", "true"],
            "--read-set is for container images: give --image IMG",
        ),
        (
            &["--publish", "8080", "--", "true"],
            "--engine and --publish are for a container: add --image IMAGE",
        ),
        (
            &["--image", "x", "--engine", "lxc"],
            "unknown --engine 'lxc': use podman, docker or nerdctl",
        ),
        (&["--image", "x", "--publish", "99999"], "bad --publish '99999'"),
    ];
    for (args, want) in cases {
        let o = cs(&["bench"]).args(args).no_store().run();
        assert!(!o.success(), "{args:?} succeeded: {}", o.streams());
        assert!(o.stderr().contains(want), "{args:?}: {}", o.stderr());
        assert_eq!(o.stderr().trim().lines().count(), 1, "one line: {}", o.stderr());
    }
    if podman().is_some() {
        let o = podman()
            .unwrap()
            .bench(&["--image", SLEEP_A, "--ready", "listen"])
            .run();
        assert!(
            o.stderr()
                .contains("--ready listen cannot see inside a container"),
            "{}",
            o.streams()
        );
        let o = podman()
            .unwrap()
            .bench(&["--image", SLEEP_A, "--read-set", "--cache", "cold"])
            .run();
        assert!(
            o.stderr()
                .contains("--read-set needs the image in the store before each run"),
            "{}",
            o.streams()
        );
    }
}

/// A phase of a variant in the exported analysis: its summary.
fn phase<'a>(doc: &'a serde_json::Value, variant: usize, name: &str) -> &'a serde_json::Value {
    doc["variants"][variant]["stats"]["phases"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| {
            panic!(
                "no phase {name} in variant {variant}: {}",
                doc["variants"][variant]["stats"]
            )
        })
}

/// Every variant has phases, and their medians make up its median spawn → ready.
/// In each run they add up to it exactly; medians of parts need not add up to the
/// median of the whole (0.92 of it in 3 runs here), but a phase counted twice or
/// a gap between phases would take them far off.
fn assert_phases_cover(doc: &serde_json::Value) {
    for v in doc["variants"].as_array().unwrap() {
        let cover = v["stats"]["phases_cover"]
            .as_f64()
            .unwrap_or_else(|| panic!("no phases: {}", v["stats"]));
        assert!(
            (0.8..=1.2).contains(&cover),
            "phases cover {cover}: {}",
            v["stats"]
        );
        eprintln!(
            "{}: phases cover {:.3} of the median spawn → ready",
            v["name"], cover
        );
    }
}

const PAD_200: usize = 200 << 20;

/// 200 MiB that no compressor shrinks (xorshift64*), fast enough in a debug build.
fn incompressible(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

#[test]
fn a_never_read_200_mib_pad_grows_the_pull_and_not_the_read_set() {
    // Alone: 200 MiB pulled three times is disk and CPU the timed tests beside it would feel.
    let _turn = crate::common::alone();
    let Some(p) = podman() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Images: the reader (it reads /data/config to its end and exits) with a file it
    // never reads, and the same plus a 200 MiB pad; one layer each, so neither
    // image's pull finds the other's layer in the store.
    let ctx = p.dir.join("build-reader");
    let padded_ctx = p.dir.join("build-reader-padded");
    for c in [&ctx, &padded_ctx] {
        // Only these files: the context is the image's whole content.
        let _ = std::fs::remove_dir_all(c);
        std::fs::create_dir_all(c.join("data")).unwrap();
        let o = Command::new("gcc")
            .args(["-O2", "-static", "-o"])
            .arg(c.join("reader"))
            .arg(repo().join("tests/fixtures/containers/reader.c"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "gcc reader: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::fs::write(c.join("data/config"), incompressible(96 << 10)).unwrap();
        std::fs::write(c.join("data/unused"), incompressible(96 << 10)).unwrap();
    }
    std::fs::write(padded_ctx.join("pad"), incompressible(PAD_200)).unwrap();
    let reg = Registry::start(p, dir.path());
    let slim = format!("127.0.0.1:{}/coldstart-test/reader:slim", reg.port);
    let padded = format!("127.0.0.1:{}/coldstart-test/reader:padded", reg.port);
    // 200 MiB stays in the store if a check below fails, unless removed on the way out.
    let _untag = Untag(p, vec![slim.clone(), padded.clone()]);
    let file = "FROM scratch\nCOPY . /\nENTRYPOINT [\"/reader\"]\n";
    for (tag, c) in [(&slim, &ctx), (&padded, &padded_ctx)] {
        let containerfile = dir.path().join("Containerfile");
        std::fs::write(&containerfile, file).unwrap();
        p.ok(
            "buildah",
            &[
                "bud",
                "-q",
                "-f",
                containerfile.to_str().unwrap(),
                "-t",
                tag,
                c.to_str().unwrap(),
            ],
        );
        p.ok("podman", &["push", "-q", "--tls-verify=false", tag]);
        p.ok("podman", &["rmi", "-f", tag]);
    }
    std::fs::remove_file(padded_ctx.join("pad")).unwrap();

    // Pull-cold: every run pulls its image from the registry.
    let (json, arg) = export(dir.path());
    assert_eq!(reg.blobs_served(), Vec::<u64>::new(), "pulled before the runs");
    // slim and padded, interleaved, 3 runs each, exported, with `how` (pull-cold, or read sets).
    let both = |how: &[&str]| {
        let mut args = vec!["--runs", "3", "--warmup", "0", "--export-json", &arg];
        args.extend_from_slice(how);
        args.extend([
            "--name", "slim", "--image", &slim, "--name", "padded", "--image", &padded,
        ]);
        p.bench(&args).run()
    };
    let o = both(&["--cache", "cold"]);
    assert!(o.success(), "{}", o.streams());
    eprintln!("{}", o.stdout());
    let doc = json_file(&json);
    assert_phases_cover(&doc);
    // The oracle for the pulls: the registry's access log. The pad's layer (gzip
    // cannot shrink it) was served once per padded run; every layer blob it served
    // is what the runs say they pulled (the store's compressed sizes), byte for byte.
    let big: Vec<u64> = reg
        .blobs_served()
        .into_iter()
        .filter(|b| *b >= PAD_200 as u64)
        .collect();
    assert_eq!(big.len(), 3, "pad layers served: {:?}", reg.blobs_served());
    let pulled: f64 = doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s["metrics"]["pulled_mib"]
                .as_f64()
                .unwrap_or_else(|| panic!("no pulled_mib: {s}"))
        })
        .sum();
    // Image configurations are blobs too (under 4 KiB here); layers are not that small.
    let served_layers: u64 = reg.blobs_served().iter().filter(|b| **b > 4096).sum();
    assert_eq!(
        served_layers,
        (pulled * 1024.0 * 1024.0).round() as u64,
        "served {:?}",
        reg.blobs_served()
    );
    let p50 = |v: usize, name: &str| phase(&doc, v, name)["ms"]["p50"].as_f64().unwrap();
    let pull = |v: usize| p50(v, "fetch") + p50(v, "unpack");
    // 200 MiB through gunzip and onto disk: no machine does that in 200 ms, and the
    // pad is in the pull, not in the container's creation after it.
    assert!(
        pull(1) - pull(0) > 200.0,
        "fetch + unpack: slim {} ms, padded {} ms\n{}",
        pull(0),
        pull(1),
        o.stdout()
    );
    assert!(
        (p50(1, "create") - p50(0, "create")).abs() < (pull(1) - pull(0)) / 4.0,
        "create slim {} ms, padded {} ms; pull {} vs {}",
        p50(0, "create"),
        p50(1, "create"),
        pull(0),
        pull(1)
    );

    // The read set, the images now in the store: the same files read from both, the
    // entrypoint's file among them, the unread file and the pad never.
    let o = both(&["--read-set"]);
    assert!(o.success(), "{}", o.streams());
    eprintln!("{}", o.stdout());
    assert!(
        o.stdout().contains("never read: /pad 200.0 MiB"),
        "{}",
        o.stdout()
    );
    let doc = json_file(&json);
    assert_phases_cover(&doc);
    let mut sets = Vec::new();
    for s in doc["samples"].as_array().unwrap() {
        let r = &s["read_set"];
        let files: Vec<(String, u64)> = r["files"]
            .as_array()
            .unwrap_or_else(|| panic!("no read set: {s}"))
            .iter()
            .map(|f| {
                (
                    f["path"].as_str().unwrap().to_string(),
                    f["read_bytes"].as_u64().unwrap(),
                )
            })
            .collect();
        let paths: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
        assert!(
            paths.contains(&"/data/config"),
            "the entrypoint's file is not in {paths:?}"
        );
        assert!(paths.contains(&"/reader"), "the entrypoint is not in {paths:?}");
        assert!(
            !paths.contains(&"/pad") && !paths.contains(&"/data/unused"),
            "unread files in {paths:?}"
        );
        let config = files.iter().find(|f| f.0 == "/data/config").unwrap().1;
        assert_eq!(config, 96 << 10, "read to its end: {s}");
        let variant = s["variant"].as_u64().unwrap();
        let image = r["image_bytes"].as_u64().unwrap();
        sets.push((variant, files, image));
    }
    // Unchanged by the pad: the same files and bytes read; the image grew by exactly it.
    let of = |v: u64| sets.iter().find(|s| s.0 == v).unwrap();
    assert_eq!(of(0).1, of(1).1, "read sets differ");
    assert_eq!(of(1).2 - of(0).2, PAD_200 as u64);
    assert_eq!(p.left_behind(), Vec::<String>::new(), "containers left");
}

/// Images a test made, removed from the store when it ends, passed or failed.
struct Untag<'a>(&'a Podman, Vec<String>);

impl Drop for Untag<'_> {
    fn drop(&mut self) {
        for tag in &self.1 {
            let _ = Command::new("podman")
                .args(["rmi", "-f", tag])
                .envs(self.0.env())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// A Pod manifest serving the test server on `port` (a hostPort), with `probes`.
fn pod_manifest(dir: &Path, name: &str, port: u16, probes: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: web\n    image: {HTTPD}\n    ports:\n    - containerPort: 8080\n      hostPort: {port}\n{probes}"
        ),
    )
    .unwrap();
    path
}

/// coldstart's pods whose coldstart has ended.
fn pods_left_behind(p: &Podman) -> Vec<String> {
    p.labelled(&["pod", "ps"], ".Name")
        .into_iter()
        .filter(|(_, owner)| !Path::new(&format!("/proc/{owner}")).exists())
        .map(|(name, _)| name)
        .collect()
}

#[test]
fn a_pods_slow_readiness_probe_costs_seconds_and_a_startup_probe_does_not() {
    let _turn = crate::common::alone();
    let Some(p) = podman() else { return };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let slow = pod_manifest(
        dir.path(),
        "slow",
        port,
        "    readinessProbe:\n      httpGet: {path: /, port: 8080}\n      initialDelaySeconds: 10\n      periodSeconds: 10\n",
    );
    let startup = pod_manifest(
        dir.path(),
        "startup",
        port,
        "    startupProbe:\n      httpGet: {path: /, port: 8080}\n      periodSeconds: 1\n      failureThreshold: 30\n    readinessProbe:\n      httpGet: {path: /, port: 8080}\n      periodSeconds: 10\n",
    );
    let (json, arg) = export(dir.path());
    let url = format!("http://127.0.0.1:{port}/");
    let (slow_arg, startup_arg) = (slow.to_str().unwrap(), startup.to_str().unwrap());
    let o = p
        .bench(&[
            "--runs",
            "3",
            "--warmup",
            "0",
            "--ready",
            &url,
            "--export-json",
            &arg,
            "--name",
            "slow",
            "--pod",
            slow_arg,
            "--name",
            "startup",
            "--pod",
            startup_arg,
        ])
        .run();
    assert!(o.success(), "{}", o.streams());
    eprintln!("{}", o.stdout());
    let doc = json_file(&json);
    // The oracle: the kubelet's rules applied by this test to each run's own ready
    // time (probes at 0, P, 2P… ignored before the initial delay; a startup probe's
    // pass lets the readiness probe run at once).
    for s in doc["samples"].as_array().unwrap() {
        let ready_s = s["ready_ns"].as_f64().unwrap() / 1e9;
        let want = match s["variant"].as_u64().unwrap() {
            0 => 10.0 * (ready_s.max(10.0) / 10.0).ceil(),
            _ => ready_s.ceil(),
        };
        assert_eq!(
            s["metrics"]["kubelet_ready_ms"].as_f64().unwrap(),
            want * 1000.0,
            "{s}"
        );
    }
    let kubelet = |v: usize| {
        doc["variants"][v]["stats"]["metrics"]["kubelet_ready_ms"]["p50"]
            .as_f64()
            .unwrap()
    };
    assert!(
        kubelet(1) < kubelet(0),
        "the startupProbe variant is not faster: {} vs {}",
        kubelet(1),
        kubelet(0)
    );
    let ready = doc["variants"][0]["stats"]["ready_ms"]["p50"].as_f64().unwrap();
    let lost = (10_000.0 - ready) / 1000.0;
    let line = o
        .stdout()
        .lines()
        .find(|l| l.contains("slow: ready at"))
        .unwrap_or_default()
        .to_string();
    assert!(
        line.contains("would mark it Ready by 10.00 s")
            && line.contains(&format!("{lost:.2} s lost per start")),
        "{line}\n{}",
        o.stdout()
    );
    assert!(o.stdout().contains("startup: ready at"), "{}", o.stdout());

    // A killed coldstart's pod is removed by the next coldstart.
    let mut c = p.bench(&[
        "--runs", "50", "--warmup", "0", "--ready", &url, "--pod", slow_arg,
    ]);
    let mut child = c.stdout(Stdio::null()).stderr(Stdio::null()).spawn();
    let deadline = Instant::now() + Duration::from_secs(60);
    let filter = format!("label={OWNER_LABEL}");
    while p
        .ok("podman", &["pod", "ps", "-q", "--filter", &filter])
        .trim()
        .is_empty()
    {
        assert!(Instant::now() < deadline, "no pod appeared");
        assert!(child.try_wait().unwrap().is_none(), "coldstart ended early");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(pods_left_behind(p).len(), 1, "the killed run's pod");
    let o = p
        .bench(&["--runs", "1", "--warmup", "0", "--ready", &url, "--pod", slow_arg])
        .run();
    assert!(o.success(), "{}", o.streams());
    assert!(o.stderr().contains("a killed coldstart left"), "{}", o.stderr());
    assert_eq!(pods_left_behind(p), Vec::<String>::new());
    assert_eq!(p.left_behind(), Vec::<String>::new(), "containers left");
}
