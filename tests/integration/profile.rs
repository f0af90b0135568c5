//! `coldstart explain --profile` end to end: the startup CPU profile of real
//! programs (a C program with a known hot function, a Node script, a Java
//! program and the example Java server), its exports, and the profiler's
//! overhead. Skipped (visibly) where perf_event_open is refused; COLDSTART_REQUIRE_PERF=1
//! makes that a failure.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Profiled {
    doc: serde_json::Value,
    stdout: String,
    folded: String,
    svg: String,
    speedscope: serde_json::Value,
}

/// `explain --profile` with every profile export; None (a skip) when the kernel
/// refuses the profiler here.
fn profile(runs: &str, ready: &str, command: &[&str]) -> Option<Profiled> {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (json, folded, svg, speedscope) = (p("e.json"), p("f.txt"), p("f.svg"), p("s.json"));
    let mut args = vec![
        "explain",
        "--profile",
        "--runs",
        runs,
        "--warmup",
        "0",
        "--adapter",
        "none",
        "--no-otlp",
        "--ready",
        ready,
        "--export-json",
        &json,
        "--export-folded",
        &folded,
        "--export-flamegraph",
        &svg,
        "--export-speedscope",
        &speedscope,
        "--",
    ];
    args.extend_from_slice(command);
    let o = cs(&args).quiet().no_store().run();
    if !o.status.success() && stderr(&o).contains("refuses perf_event_open") {
        testkit::skip("PERF", &format!("perf_event_open refused: {}", stderr(&o).trim()));
        return None;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    Some(Profiled {
        doc: json_file(Path::new(&json)),
        stdout: stdout(&o),
        folded: read(&folded),
        svg: read(&svg),
        speedscope: serde_json::from_str(&read(&speedscope)).unwrap(),
    })
}

/// Samples of the folded lines whose stack holds a frame `pred` accepts, and all samples.
fn share(folded: &str, pred: impl Fn(&str) -> bool) -> (u64, u64) {
    let (mut hit, mut all) = (0, 0);
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        all += n;
        if stack.split(';').any(&pred) {
            hit += n;
        }
    }
    (hit, all)
}

fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/profile").join(name)
}

#[test]
fn a_hot_init_function_has_its_share_of_the_startup_flame_graph() {
    let _turn = crate::common::beside();
    let Some(gcc) = testkit::tool("GCC", "gcc") else {
        return;
    };
    let src = fixture("hot.c");
    let bin = testkit::built("profile-hot", &[&src], |out| {
        let mut c = Command::new(&gcc);
        c.args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
            .arg(out)
            .arg(&src);
        c
    });
    let Some(p) = profile("3", "exit", &[bin.to_str().unwrap()]) else {
        return;
    };
    let (hot, all) = share(&p.folded, |f| f == "hot_init");
    let (cold, _) = share(&p.folded, |f| f == "cold_init");
    assert!(all >= 30, "too few samples to judge: {all}\n{}", p.folded);
    // hot_init does 80 % of the program's work.
    assert!(
        hot * 100 >= all * 70,
        "hot_init in {hot} of {all} samples\n{}",
        p.folded
    );
    assert!(cold > 0 && cold < hot, "cold_init {cold}, hot_init {hot}");
    // Callers come from the frame-pointer walk: main → hot_init → spin.
    assert!(p.folded.contains(";main;hot_init;spin"), "{}", p.folded);
    // The JSON's profile is the same data: counts and the phases of the timeline.
    let prof = &p.doc["profile"];
    assert_eq!(prof["samples"].as_u64(), Some(all));
    assert_eq!(prof["runs"].as_u64(), Some(3));
    assert_eq!(prof["callchains"], "frame pointers");
    assert!(["cycles", "cpu-clock"].contains(&prof["event"].as_str().unwrap()));
    let phases: Vec<&str> = prof["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ph| ph["name"].as_str().unwrap())
        .collect();
    assert!(
        phases.starts_with(&["exec-chain", "loader", "init"]),
        "{phases:?}"
    );
    // Most samples are after the program's own code took over: the init phase.
    let init = prof["phases"][2]["samples"].as_u64().unwrap();
    assert!(init * 2 > all, "init {init} of {all}");
    // Folded lines start with the phase, then the thread's name.
    assert!(
        p.folded
            .lines()
            .all(|l| phases.iter().any(|ph| l.starts_with(&format!("{ph};")))),
        "{}",
        p.folded
    );
    assert!(p.folded.contains("init;profile-hot;"), "{}", p.folded);
    // The SVG is inferno's interactive flame graph with the function in it.
    assert!(
        p.svg.contains("<svg") && p.svg.contains("<script"),
        "not an interactive SVG"
    );
    assert!(p.svg.contains("hot_init"), "no hot_init frame in the SVG");
    // speedscope: one sampled profile per phase, weights adding up.
    let profiles = p.speedscope["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), phases.len());
    let weights: u64 = profiles
        .iter()
        .flat_map(|pr| pr["weights"].as_array().unwrap())
        .map(|w| w.as_u64().unwrap())
        .sum();
    assert_eq!(weights, all);
    assert!(p.speedscope["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["name"] == "hot_init"));
    // The terminal report lists it among the hottest functions.
    assert!(
        p.stdout.contains("startup CPU profile") && p.stdout.contains("hot_init"),
        "{}",
        p.stdout
    );
}

#[test]
fn the_profiler_overhead_is_reported_as_a_ratio_to_untraced_runs() {
    let _turn = crate::common::beside();
    let Some(gcc) = testkit::tool("GCC", "gcc") else {
        return;
    };
    let src = fixture("hot.c");
    let bin = testkit::built("profile-hot", &[&src], |out| {
        let mut c = Command::new(&gcc);
        c.args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
            .arg(out)
            .arg(&src);
        c
    });
    let Some(p) = profile("4", "exit", &[bin.to_str().unwrap()]) else {
        return;
    };
    let prof = &p.doc["profile"];
    assert_eq!(prof["profiled_ms"]["n"].as_u64(), Some(4));
    let ratio = prof["overhead"].as_f64().expect("an overhead ratio");
    let (lo, hi) = (
        prof["overhead_ci"][0].as_f64().expect("a CI with 4 runs each"),
        prof["overhead_ci"][1].as_f64().unwrap(),
    );
    assert!(ratio > 0.0 && lo <= ratio && ratio <= hi, "{ratio} [{lo}, {hi}]");
    assert!(p.stdout.contains("profiler overhead ×"), "{}", p.stdout);
}

#[test]
fn node_js_functions_are_named_from_v8_s_perf_map() {
    let _turn = crate::common::beside();
    let Some(node) = testkit::tool("NODE", "node") else {
        return;
    };
    let script = fixture("startup.js");
    let Some(p) = profile("1", "exit", &[node.to_str().unwrap(), script.to_str().unwrap()]) else {
        return;
    };
    let (js, all) = share(&p.folded, |f| {
        f.contains("fibonacciStartupWork") && f.ends_with("_[j]")
    });
    assert!(
        js > 0,
        "no sample in the named JS function among {all}\n{}",
        p.folded
    );
    let notes = p.doc["profile"]["runtimes"].to_string();
    assert!(notes.contains("node") && notes.contains("perf map"), "{notes}");
    // What the switches cost, said where the overhead is read.
    assert!(notes.contains("code cache is rejected"), "{notes}");
    // The perf maps the run's processes wrote were read and removed.
    let pids_left = std::fs::read_dir("/tmp")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("perf-")
                && e.metadata().is_ok_and(|m| {
                    m.modified()
                        .is_ok_and(|t| t.elapsed().is_ok_and(|d| d.as_secs() < 2))
                })
        })
        .count();
    assert_eq!(pids_left, 0, "a fresh /tmp/perf-*.map was left behind");
}

#[test]
fn java_methods_are_named_from_the_jvm_s_perf_map() {
    let _turn = crate::common::beside();
    let (Some(javac), Some(java)) = (testkit::tool("JAVA", "javac"), testkit::tool("JAVA", "java")) else {
        return;
    };
    let src = fixture("Startup.java");
    let classes = testkit::built("profile-java", &[&src], |out| {
        let mut c = Command::new(&javac);
        c.arg("-d").arg(out).arg(&src);
        c
    });
    let Some(p) = profile(
        "1",
        "exit",
        &[
            java.to_str().unwrap(),
            "-cp",
            classes.to_str().unwrap(),
            "Startup",
        ],
    ) else {
        return;
    };
    let (method, all) = share(&p.folded, |f| {
        f.contains("Startup.startupWork") && f.ends_with("_[j]")
    });
    assert!(
        method > 0,
        "no sample in the named Java method among {all}\n{}",
        p.folded
    );
    let notes = p.doc["profile"]["runtimes"].to_string();
    assert!(notes.contains("jvm") && notes.contains("perf map"), "{notes}");
    // Interpreted methods cannot be named from a perf map: said, with their
    // share, which is the folded stacks' own share of `Interpreter` frames …
    let (interpreted, _) = share(&p.folded, |f| f == "Interpreter_[j]");
    let pct = format!(
        "{:.0}% of samples are in interpreted Java code",
        100.0 * interpreted as f64 / all as f64
    );
    assert!(
        notes.contains(&pct) && notes.contains("cannot tell them apart"),
        "{pct}: {notes}"
    );
    // … and a tower of them is one frame.
    assert!(
        !p.folded.contains("Interpreter_[j];Interpreter_[j]"),
        "{}",
        p.folded
    );
}

#[test]
fn a_java_server_that_does_not_exit_is_asked_for_its_perf_map_at_ready() {
    let _turn = crate::common::beside();
    let Some(java) = testkit::tool("JAVA", "java") else {
        return;
    };
    let port = free_port().to_string();
    let url = format!("http://127.0.0.1:{port}/health");
    let classes = examples().join("java");
    // -Xrs: SIGTERM ends this JVM without its orderly shutdown, so it never
    // writes the map at exit (checked by hand: no /tmp/perf-PID.map after a
    // TERM); StartAttachListener lets jcmd in without the SIGQUIT -Xrs gives up.
    // Only the jcmd at ready can name its frames.
    let Some(p) = profile(
        "1",
        &url,
        &[
            java.to_str().unwrap(),
            "-Xrs",
            "-XX:+StartAttachListener",
            "-cp",
            classes.to_str().unwrap(),
            "Server",
            "--port",
            &port,
        ],
    ) else {
        return;
    };
    // Without the map every JIT/interpreter frame would be [unknown].
    let (named, all) = share(&p.folded, |f| f.ends_with("_[j]"));
    assert!(named > 0, "no JVM-named frame among {all} samples\n{}", p.folded);
    let notes = p.doc["profile"]["runtimes"].to_string();
    assert!(notes.contains("jvm") && notes.contains("1 of 1"), "{notes}");
}

#[test]
fn the_profile_exports_need_profile() {
    let _turn = crate::common::beside();
    let o = cs(&["explain", "--export-flamegraph", "x.svg", "--", "true"]).run();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--profile"), "{}", stderr(&o));
}

#[test]
fn a_run_that_fails_only_when_profiled_is_named_as_the_profiled_arm() {
    let _turn = crate::common::beside();
    // PYTHONPERFSUPPORT is set in the profiled arm's environment only.
    let o = cs(&[
        "explain",
        "--profile",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--adapter",
        "none",
        "--no-otlp",
        "--ready",
        "exit",
        "--",
        "sh",
        "-c",
        "test -z \"$PYTHONPERFSUPPORT\"",
    ])
    .quiet()
    .no_store()
    .run();
    if stderr(&o).contains("refuses perf_event_open") {
        testkit::skip("PERF", &stderr(&o));
        return;
    }
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("profiled run failed"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

#[test]
fn a_stored_explain_shows_its_profile_again() {
    let _turn = crate::common::beside();
    let Some(gcc) = testkit::tool("GCC", "gcc") else {
        return;
    };
    let src = fixture("hot.c");
    let bin = testkit::built("profile-hot", &[&src], |out| {
        let mut c = Command::new(&gcc);
        c.args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
            .arg(out)
            .arg(&src);
        c
    });
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let db = db.to_str().unwrap();
    let o = cs(&[
        "explain",
        "--profile",
        "--store",
        db,
        "--runs",
        "1",
        "--warmup",
        "0",
        "--adapter",
        "none",
        "--no-otlp",
        "--ready",
        "exit",
        "--",
        bin.to_str().unwrap(),
    ])
    .quiet()
    .run();
    if stderr(&o).contains("refuses perf_event_open") {
        testkit::skip("PERF", &stderr(&o));
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = cs(&["show", "--store", db, "latest"]).run();
    assert!(shown.status.success(), "{}", stderr(&shown));
    let out = stdout(&shown);
    assert!(
        out.contains("startup CPU profile") && out.contains("hot_init"),
        "{out}"
    );
    assert!(out.contains("profiler overhead"), "{out}");
    let history = stdout(&cs(&["history", "--store", db]).run());
    assert!(
        history.contains("(explain)") && history.contains("profiled"),
        "{history}"
    );
}

#[test]
fn listen_readiness_of_a_go_program_is_refused_with_profile_before_any_run() {
    let _turn = crate::common::beside();
    let Some(server) = testkit::go_server() else {
        return;
    };
    let o = cs(&[
        "explain",
        "--profile",
        "--runs",
        "1",
        "--ready",
        "listen",
        "--",
        server.to_str().unwrap(),
        "--port",
        "0",
    ])
    .quiet()
    .no_store()
    .run();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--ready listen") && err.contains("tcp:PORT"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

#[test]
fn python_frames_are_named_by_the_perf_trampoline_where_the_interpreter_has_one() {
    let _turn = crate::common::beside();
    let Some(python) = testkit::python() else {
        return;
    };
    let version = Command::new(&python)
        .args(["-c", "import sys; print(sys.version_info >= (3, 12))"])
        .output()
        .unwrap();
    let has_trampoline = String::from_utf8_lossy(&version.stdout).trim() == "True";
    let code = "def startup_work(n):\n    return sum(i * i for i in range(n))\nstartup_work(3_000_000)\n";
    let Some(p) = profile("1", "exit", &[python.to_str().unwrap(), "-c", code]) else {
        return;
    };
    let notes = p.doc["profile"]["runtimes"].to_string();
    if has_trampoline {
        let (named, all) = share(&p.folded, |f| f.contains("startup_work") && f.ends_with("_[j]"));
        assert!(
            named > 0,
            "no sample in the named Python function among {all}\n{}",
            p.folded
        );
    } else {
        // Python ≤ 3.11 has no perf trampoline: said, not pretended.
        assert!(notes.contains("needs Python ≥ 3.12"), "{notes}");
        assert!(p.folded.contains("_PyEval_EvalFrameDefault"), "{}", p.folded);
    }
}

#[test]
fn a_profiled_node_server_leaves_nothing_in_its_directory_nor_a_perf_map_in_tmp() {
    let _turn = crate::common::beside();
    let Some(node) = testkit::tool("NODE", "node") else {
        return;
    };
    // The user's directory: explain runs there and must leave it as it found it.
    let cwd = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let pids = out.path().join("pids");
    let json = out.path().join("e.json");
    let port = free_port().to_string();
    let url = format!("http://127.0.0.1:{port}/health");
    let server = repo().join("examples/node/server.js");
    // Each run writes its own pid, which `exec` hands on to node: the oracle
    // for which perf maps the runs could have written.
    let o = coldstart()
        .current_dir(cwd.path())
        .args([
            "explain",
            "--profile",
            "--runs",
            "2",
            "--warmup",
            "1",
            "--ready",
            &url,
            "--export-json",
            json.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo $$ >> \"$1\"; shift; exec \"$@\"",
            "sh",
            pids.to_str().unwrap(),
            node.to_str().unwrap(),
            server.to_str().unwrap(),
            "--port",
            &port,
        ])
        .quiet()
        .no_store()
        .run();
    if !o.status.success() && stderr(&o).contains("refuses perf_event_open") {
        testkit::skip("PERF", &format!("perf_event_open refused: {}", stderr(&o).trim()));
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    // V8 did write a perf map (so the check below is not vacuous) …
    let notes = json_file(&json)["profile"]["runtimes"].to_string();
    assert!(notes.contains("node") && notes.contains("perf map"), "{notes}");
    // … and nothing was left in the working directory (V8's isolate-…-v8.log) …
    let left: Vec<_> = std::fs::read_dir(cwd.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left in the working directory: {left:?}");
    // … nor any run's /tmp/perf-PID.map, the warmups' included.
    let pids = std::fs::read_to_string(&pids).unwrap();
    let pids: Vec<&str> = pids.split_whitespace().collect();
    // 4 arms × (1 warmup + 2 runs), plus any unrecorded traced run.
    assert!(pids.len() >= 12, "{pids:?}");
    let maps: Vec<String> = pids
        .iter()
        .map(|p| format!("/tmp/perf-{p}.map"))
        .filter(|p| Path::new(p).exists())
        .collect();
    assert!(maps.is_empty(), "perf maps left behind: {maps:?}");
}
