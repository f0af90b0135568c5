//! `coldstart explain` on real multi-process targets: the service process (the
//! one the probe talks to) gives the phases; helpers, daemons and launchers are
//! lanes of their own. A start script whose helper listens first, an Erlang
//! node whose epmd listens first, a `#!/usr/bin/env bash` shim chain.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn explain(args: &[&str], env: &[(&str, &str)]) -> (Value, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("e.json");
    let chrome = dir.path().join("t.json");
    let mut all: Vec<String> = vec![
        "explain".into(),
        "--runs".into(),
        "1".into(),
        "--export-json".into(),
        json.to_str().unwrap().into(),
        "--export-trace".into(),
        chrome.to_str().unwrap().into(),
    ];
    for (k, v) in env {
        all.push("-e".into());
        all.push(format!("{k}={v}"));
    }
    all.extend(args.iter().map(|a| a.to_string()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let o = cs(&refs).quiet().run();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    (json_file(&json), stdout(&o), json_file(&chrome))
}

/// Write an executable file atomically (other test binaries may run it meanwhile).
fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
        return;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn fixtures(name: &str) -> PathBuf {
    testkit::fixtures_dir().join(name)
}

fn tl(doc: &Value) -> &Value {
    &doc["timeline"]
}

fn phase(doc: &Value, name: &str) -> Option<(u64, u64)> {
    tl(doc)["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .map(|p| (p["start_ns"].as_u64().unwrap(), p["end_ns"].as_u64().unwrap()))
}

fn process(doc: &Value, pid: i64) -> &Value {
    tl(doc)["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == pid)
        .unwrap_or_else(|| panic!("no process {pid}"))
}

fn processes<'a>(doc: &'a Value, pred: impl Fn(&Value) -> bool + 'a) -> Vec<&'a Value> {
    tl(doc)["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| pred(p))
        .collect()
}

fn argv_has(p: &Value, needle: &str) -> bool {
    p["argv"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x.as_str().is_some_and(|s| s.contains(needle))))
}

/// (pid, t_ns) of the listen on `port`.
fn listen_on(doc: &Value, port: u16) -> Option<(i64, u64)> {
    tl(doc)["listens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["addr"]["port"] == port)
        .map(|l| (l["pid"].as_i64().unwrap(), l["t_ns"].as_u64().unwrap()))
}

/// sh start.sh PYTHON HELPER_PORT SERVER_PORT exec|wait: a helper that listens
/// first (the script waits on a FIFO until it does), then the server, exec'd
/// or forked and waited on.
fn start_script() -> PathBuf {
    let path = fixtures("start-script/start.sh");
    write_exec(
        &path,
        r#"#!/bin/sh
# The helper listens first; the script goes on once it says so through a FIFO.
py="$1"
fifo="$(dirname "$0")/helper-up.$$"
rm -f "$fifo"
mkfifo "$fifo" || exit 1
"$py" -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
open(sys.argv[2], "w").write("up\n")
time.sleep(600)' "$2" "$fifo" &
read up < "$fifo"
rm -f "$fifo"
if [ "$4" = wait ]; then
    "$py" -m http.server --bind 127.0.0.1 "$3" &
    wait
else
    exec "$py" -m http.server --bind 127.0.0.1 "$3"
fi
"#,
    );
    path
}

fn other_port(than: u16) -> u16 {
    loop {
        let p = free_port();
        if p != than {
            return p;
        }
    }
}

/// Phases, lanes and adapter of a start script run; returns the doc and the
/// service and helper pids.
fn start_script_run(mode: &str) -> Option<(Value, String, Value, i64, i64)> {
    let python = testkit::python()?;
    let script = start_script();
    let (helper_port, server_port) = {
        let a = free_port();
        (a, other_port(a))
    };
    let ready = format!("tcp:127.0.0.1:{server_port}");
    let (hp, sp) = (helper_port.to_string(), server_port.to_string());
    let (doc, out, chrome) = explain(
        &[
            "--ready",
            &ready,
            "--",
            "sh",
            script.to_str().unwrap(),
            python.to_str().unwrap(),
            &hp,
            &sp,
            mode,
        ],
        &[],
    );
    let (helper_pid, helper_t) = listen_on(&doc, helper_port).expect("the helper's listen");
    let (server_pid, server_t) = listen_on(&doc, server_port).expect("the server's listen");
    assert!(helper_t < server_t, "the helper listens first");
    let service = &tl(&doc)["service"];
    assert_eq!(service["pid"], server_pid, "the server is the service: {service}");
    assert!(
        service["why"].as_str().unwrap().contains("probe's port"),
        "{service}"
    );
    assert_eq!(service["listen"]["addr"]["port"], server_port);
    // Its phases: init ends and listen→ready starts at the server's listen, not the helper's.
    let (_, init_end) = phase(&doc, "init").expect("init");
    assert_eq!(init_end, server_t);
    let (lr_start, _) = phase(&doc, "listen→ready").expect("listen→ready");
    assert_eq!(lr_start, server_t);
    // The server's exec is the last of the chain; the script is named, not /bin/sh.
    let chain = tl(&doc)["exec_chain"].as_array().unwrap();
    let last = chain.last().unwrap();
    assert_eq!(last["pid"], server_pid);
    assert!(argv_has(last, "http.server"), "{last}");
    assert!(
        chain
            .iter()
            .any(|s| s["script"].as_str().is_some_and(|s| s.ends_with("start.sh"))),
        "{chain:?}"
    );
    let (_, phase_chain_end) = phase(&doc, "exec-chain").unwrap();
    assert_eq!(phase_chain_end, last["start_ns"].as_u64().unwrap());
    // The helper: a lane of its own, with its argv, not on the path.
    let helper = process(&doc, helper_pid);
    assert_eq!(helper["role"], "helper", "{helper}");
    assert!(argv_has(helper, "socket"), "{helper}");
    assert_eq!(helper["blocked_ns"], 0, "it ran alongside: {helper}");
    // … overlapping the script's stretch (which waited for it to listen).
    assert!(helper["overlap_ns"].as_u64().unwrap() > 0, "{helper}");
    assert_eq!(process(&doc, server_pid)["role"], "service");
    // The adapter comes from the server's program, whatever the root ran.
    assert_eq!(
        doc["adapters"],
        serde_json::json!(["python"]),
        "{}",
        doc["adapters"]
    );
    assert!(out.contains("service process: pid"), "{out}");
    assert!(out.contains("start.sh"), "{out}");
    Some((doc, out, chrome, server_pid, helper_pid))
}

#[test]
fn start_script_whose_helper_listens_first_then_execs_the_server() {
    let _turn = crate::common::beside();
    let Some((doc, _out, chrome, server_pid, helper_pid)) = start_script_run("exec") else {
        return;
    };
    // exec'd: the root itself became the server.
    assert_eq!(server_pid, tl(&doc)["root_pid"].as_i64().unwrap());
    assert_ne!(server_pid, helper_pid);
    // Chrome trace: each process's track is named after what it ran.
    let names: Vec<String> = chrome["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n.contains(&format!("({helper_pid}, helper)")) && n.contains("socket")),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n.contains(&format!("({server_pid}, service)"))),
        "{names:?}"
    );
}

#[test]
fn start_script_that_forks_and_waits_on_the_server() {
    let _turn = crate::common::beside();
    let Some((doc, out, _chrome, server_pid, _helper)) = start_script_run("wait") else {
        return;
    };
    let root = tl(&doc)["root_pid"].as_i64().unwrap();
    assert_ne!(server_pid, root, "forked, not exec'd");
    assert_eq!(process(&doc, root)["role"], "launcher");
    assert_eq!(tl(&doc)["service"]["path"], serde_json::json!([root, server_pid]));
    assert!(out.contains("fork path:"), "{out}");
}

#[test]
fn erlang_node_epmd_is_a_lane_not_the_service() {
    let _turn = crate::common::beside();
    let Some(erl) = testkit::tool("ERLANG", "erl") else {
        return;
    };
    // A private epmd (its port from the environment), loopback only, and the
    // node's distribution listener on a port of ours: that is the probe's.
    let epmd_port = free_port();
    let dist_port = other_port(epmd_port);
    let (ep, dp) = (epmd_port.to_string(), dist_port.to_string());
    let sname = format!("coldstart{}", std::process::id());
    let ready = format!("tcp:127.0.0.1:{dist_port}");
    let (doc, out, chrome) = explain(
        &[
            "--ready",
            &ready,
            "--",
            erl.to_str().unwrap(),
            "-sname",
            &sname,
            "-noshell",
            "-kernel",
            "inet_dist_use_interface",
            "{127,0,0,1}",
            "-kernel",
            "inet_dist_listen_min",
            &dp,
            "-kernel",
            "inet_dist_listen_max",
            &dp,
        ],
        &[("ERL_EPMD_PORT", &ep), ("ERL_EPMD_ADDRESS", "127.0.0.1")],
    );
    let (epmd_pid, epmd_t) = listen_on(&doc, epmd_port).expect("epmd's listen");
    let (beam_pid, beam_t) = listen_on(&doc, dist_port).expect("the node's listen");
    assert!(epmd_t < beam_t, "epmd listens first");
    let epmd = process(&doc, epmd_pid);
    assert_eq!(epmd["role"], "helper", "{epmd}");
    assert!(argv_has(epmd, "epmd"), "{epmd}");
    let service = &tl(&doc)["service"];
    assert_eq!(service["pid"], beam_pid, "{service}");
    let last = tl(&doc)["exec_chain"].as_array().unwrap().last().unwrap().clone();
    assert!(last["exe"].as_str().unwrap().ends_with("beam.smp"), "{last}");
    assert_eq!(phase(&doc, "init").unwrap().1, beam_t);
    assert_eq!(phase(&doc, "listen→ready").unwrap().0, beam_t);
    // erlexec waits for `epmd -daemon` (system(3)) before it execs the VM:
    // that shell held the critical path, the daemon it left ran alongside.
    let held: Vec<&Value> = processes(&doc, |p| p["blocked_ns"].as_u64().unwrap_or(0) > 0);
    assert!(held.iter().any(|p| argv_has(p, "epmd")), "{held:?}");
    assert!(service["blocked_ns"].as_u64().unwrap() > 0, "{service}");
    assert_eq!(epmd["blocked_ns"], 0, "the daemon runs alongside: {epmd}");
    // The VM's threads, by the names it gave them.
    let threads = process(&doc, beam_pid)["thread_list"].as_array().unwrap().clone();
    assert!(
        threads
            .iter()
            .any(|t| t["name"].as_str().is_some_and(|n| n.contains("sched"))),
        "{threads:?}"
    );
    assert_eq!(doc["adapters"], serde_json::json!(["beam"]));
    assert!(out.contains("helper"), "{out}");
    // Its Chrome trace tracks carry the same thread names.
    let thread_tracks: Vec<&str> = chrome["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == beam_pid)
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(
        thread_tracks.iter().any(|n| n.contains("sched")),
        "{thread_tracks:?}"
    );
}

#[test]
fn env_bash_shim_chain_names_the_shims_and_the_root_is_the_service() {
    let _turn = crate::common::beside();
    let Some(python) = testkit::python() else {
        return;
    };
    // env(1) and bash are the shim's own requirements, as pyenv's.
    let env = testkit::which("env").expect("env(1) on PATH");
    testkit::which("bash").expect("bash on PATH");
    // As pyenv's: `#!/usr/bin/env bash` scripts, so the kernel runs env, env
    // execs bash, and the exec chain's paths say bash; the scripts are named.
    let dir = fixtures("env-shim");
    let inner = dir.join("pyenv-exec");
    let outer = dir.join("python3");
    write_exec(
        &inner,
        &format!("#!{} bash\nexec '{}' \"$@\"\n", env.display(), python.display()),
    );
    write_exec(
        &outer,
        &format!("#!{} bash\nexec '{}' \"$@\"\n", env.display(), inner.display()),
    );
    let (doc, out, _) = explain(
        &["--ready", "exit", "--", outer.to_str().unwrap(), "-c", "pass"],
        &[],
    );
    let t = tl(&doc);
    assert_eq!(t["service"]["pid"], t["root_pid"]);
    assert_eq!(process(&doc, t["root_pid"].as_i64().unwrap())["role"], "service");
    let chain = t["exec_chain"].as_array().unwrap();
    let scripts: Vec<&str> = chain.iter().filter_map(|s| s["script"].as_str()).collect();
    assert!(scripts.contains(&outer.to_str().unwrap()), "{chain:?}");
    assert!(scripts.contains(&inner.to_str().unwrap()), "{chain:?}");
    let last = chain.last().unwrap();
    assert_eq!(
        std::fs::canonicalize(last["exe"].as_str().unwrap()).ok(),
        std::fs::canonicalize(&python).ok(),
        "ends at the real interpreter: {last}"
    );
    // The report names the shims, never bare bash, in blame and the chain.
    let bash_lines: Vec<&str> = out
        .lines()
        .filter(|l| {
            l.trim_end().ends_with("/bash") || l.contains("exec /usr/bin/bash") || l.contains("bash (before")
        })
        .collect();
    assert!(bash_lines.is_empty(), "{bash_lines:?}\n{out}");
    assert!(
        out.contains(&format!("exec {} (before the next exec)", outer.display())),
        "{out}"
    );
}

/// A start script that runs a helper VM to completion (a boot check, as a
/// broker's scripts do) and then execs the node: one BEAM section per VM,
/// not one sum; the helper VM held the critical path, the node serves.
#[test]
fn two_beam_vms_get_a_section_each() {
    let _turn = crate::common::beside();
    let Some(erl) = testkit::tool("ERLANG", "erl") else {
        return;
    };
    let script = fixtures("beam-start/start.sh");
    write_exec(
        &script,
        "#!/bin/sh\nerl=\"$1\"; shift\n\"$erl\" -noshell -eval 'halt().'\nexec \"$erl\" \"$@\"\n",
    );
    let epmd_port = free_port();
    let dist_port = other_port(epmd_port);
    let (ep, dp) = (epmd_port.to_string(), dist_port.to_string());
    let sname = format!("coldstart2vm{}", std::process::id());
    let ready = format!("tcp:127.0.0.1:{dist_port}");
    let (doc, _out, _) = explain(
        &[
            "--ready",
            &ready,
            "--",
            "sh",
            script.to_str().unwrap(),
            erl.to_str().unwrap(),
            "-sname",
            &sname,
            "-noshell",
            "-kernel",
            "inet_dist_use_interface",
            "{127,0,0,1}",
            "-kernel",
            "inet_dist_listen_min",
            &dp,
            "-kernel",
            "inet_dist_listen_max",
            &dp,
        ],
        &[("ERL_EPMD_PORT", &ep), ("ERL_EPMD_ADDRESS", "127.0.0.1")],
    );
    let service = tl(&doc)["service"]["pid"].as_i64().unwrap();
    assert_eq!(doc["adapters"], serde_json::json!(["beam"]));
    let helper_vm = processes(&doc, |p| p["role"] == "helper" && argv_has(p, "halt()"))
        .into_iter()
        .find(|p| p["program"].as_str().is_some_and(|s| s.ends_with("beam.smp")))
        .unwrap_or_else(|| panic!("the helper VM: {}", tl(&doc)["processes"]))
        .clone();
    assert!(
        helper_vm["blocked_ns"].as_u64().unwrap() > 0,
        "the script waited on it: {helper_vm}"
    );
    let titles: Vec<String> = doc["sources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["source"] == "beam")
        .map(|s| s["title"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(titles.len(), 2, "{titles:?}");
    assert!(
        titles.iter().any(|t| t.ends_with(&format!("VM pid {service}"))),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|t| t.ends_with(&format!("VM pid {}", helper_vm["pid"]))),
        "{titles:?}"
    );
}

/// tests/fixtures/stamp.c, static: appends "<pid> <CLOCK_MONOTONIC ns>" to
/// argv[1] first thing in main (no loader runs before it).
fn stamp() -> Option<PathBuf> {
    let gcc = testkit::tool("GCC", "gcc")?;
    let src = testkit::repo().join("tests/fixtures/stamp.c");
    Some(testkit::built("stamp", &[&src], |out| {
        let mut c = std::process::Command::new(gcc);
        c.args(["-static", "-O2", "-o"]).arg(out).arg(&src);
        c
    }))
}

/// A wrapper that runs its program as a child and waits for it (pyenv's
/// `pip-rehash/pip` does) in front of a second wrapper that execs the real
/// program: with exit readiness the chain goes on past the first wrapper to the
/// real program, and the exec-chain phase covers both wrappers' time. Oracle:
/// the program's own record of its start (CLOCK_MONOTONIC, first thing in
/// main), with an injected 300 ms in the first wrapper before it forks.
#[test]
fn a_wrapper_that_forks_and_waits_is_part_of_the_exec_chain() {
    let _turn = crate::common::beside();
    let Some(stamp) = stamp() else {
        return;
    };
    const DELAY_NS: u64 = 300_000_000;
    let dir = tempfile::tempdir().unwrap();
    let (outer, inner) = (dir.path().join("wrapper"), dir.path().join("wrapper-exec"));
    write_exec(&inner, &format!("#!/bin/sh\nexec '{}' \"$@\"\n", stamp.display()));
    write_exec(
        &outer,
        &format!(
            "#!/bin/sh\nsleep {}\n'{}' \"$@\" || status=$?\nexit ${{status:-0}}\n",
            DELAY_NS as f64 / 1e9,
            inner.display()
        ),
    );
    let record = dir.path().join("started");
    let (doc, out, _) = explain(
        &[
            "--ready",
            "exit",
            "--",
            outer.to_str().unwrap(),
            record.to_str().unwrap(),
        ],
        &[],
    );
    let t = tl(&doc);
    let root = t["root_pid"].as_i64().unwrap();
    let service = t["service"]["pid"].as_i64().unwrap();
    assert_ne!(
        service, root,
        "the program is a child of the wrapper: {}",
        t["service"]
    );
    assert_eq!(process(&doc, root)["role"], "launcher");
    let chain = t["exec_chain"].as_array().unwrap();
    let last = chain.last().unwrap();
    assert_eq!(last["pid"], service, "{chain:?}");
    assert_eq!(
        std::fs::canonicalize(last["exe"].as_str().unwrap()).ok(),
        std::fs::canonicalize(&stamp).ok(),
        "the chain ends at the real program: {last}"
    );
    let scripts: Vec<&str> = chain.iter().filter_map(|s| s["script"].as_str()).collect();
    for w in [&outer, &inner] {
        assert!(scripts.contains(&w.to_str().unwrap()), "{w:?} in {chain:?}");
    }
    // The traced run's own record of its start, on the timeline's clock.
    let text = std::fs::read_to_string(&record).unwrap();
    let started = text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(pid, _)| pid.parse::<i64>().ok() == Some(service))
        .map(|(_, ns)| ns.parse::<u64>().unwrap() - t["t0_mono_ns"].as_u64().unwrap())
        .unwrap_or_else(|| panic!("no record of pid {service} in {text:?}"));
    let (from, to) = phase(&doc, "exec-chain").unwrap();
    assert_eq!((from, to), (0, last["start_ns"].as_u64().unwrap()));
    assert!(to <= started, "exec {to} ns, main at {started} ns");
    // Between the exec and main only the kernel's exec and the tracer's stops
    // (a static binary): far less than the wrapper's 300 ms, which the chain
    // must include (the old chain ended at the first wrapper, ~1 ms in).
    assert!(
        started - to < DELAY_NS / 2,
        "the exec-chain phase ends {} ms before the program started",
        (started - to) as f64 / 1e6
    );
    assert!(to >= DELAY_NS, "{to}");
    assert!(out.contains("the root's shell started and waited on"), "{out}");
}

/// The exec chain section of a real shim chain (two bash scripts in front of
/// a C program): each step's printed traced duration is its end − start in
/// the JSON export of the same explain, and its start and end are printed
/// beside it; the final program's row has no duration (loader and init follow).
#[test]
fn exec_chain_rows_print_each_steps_traced_duration() {
    let _turn = crate::common::beside();
    let Some(sleeper) = testkit::c_example("sleeper", &[]) else {
        return;
    };
    let shim = testkit::shim_chain(&sleeper);
    let (doc, out, _) = explain(&["--ready", "exit", "--", shim.to_str().unwrap()], &[]);
    let chain = tl(&doc)["exec_chain"].as_array().unwrap();
    assert_eq!(chain.len(), 3, "shim, shim-exec, sleeper: {chain:?}");
    let ms = |ns: u64| coldstart_report::format::ms(ns as f64 / 1e6);
    // The section's rows, in chain order, after its header (and the column
    // header when there are estimates).
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("exec chain ("))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.contains('→'))
        .collect();
    assert_eq!(rows.len(), chain.len(), "{out}");
    for (row, step) in rows.iter().zip(chain) {
        let start = step["start_ns"].as_u64().unwrap();
        let label = step["script"].as_str().or(step["path"].as_str()).unwrap();
        assert!(row.contains(&format!("  {label}")), "{row} for {step}");
        let tok: Vec<&str> = row.split_whitespace().collect();
        let value = |i: usize| tok.get(i..i + 2).map(|t| t.join(" "));
        assert_eq!(value(0), Some(ms(start)), "{row}");
        assert_eq!(tok.get(2), Some(&"→"), "{row}");
        match step["end_ns"].as_u64() {
            Some(end) => {
                assert_eq!(value(3), Some(ms(end)), "{row}");
                assert_eq!(
                    value(5),
                    Some(ms(end - start)),
                    "{row}: the duration is end − start"
                );
            }
            None => assert!(row.contains(&format!("{} → loader, init", ms(start))), "{row}"),
        }
    }
}

/// tests/fixtures/helper_wait.c: a process and one helper child, waited for
/// or not (see the source).
fn helper_wait() -> Option<PathBuf> {
    let gcc = testkit::tool("GCC", "gcc")?;
    let src = testkit::repo().join("tests/fixtures/helper_wait.c");
    Some(testkit::built("helper_wait", &[&src], |out| {
        let mut c = std::process::Command::new(gcc);
        c.args(["-O2", "-o"]).arg(out).arg(&src);
        c
    }))
}

/// The helper's lane and the report of `helper_wait MODE MS`.
fn helper_run(bin: &Path, mode: &str, ms: u64) -> (Value, Value, String) {
    let (doc, out, _) = explain(
        &[
            "--ready",
            "exit",
            "--",
            bin.to_str().unwrap(),
            mode,
            &ms.to_string(),
        ],
        &[],
    );
    let root = tl(&doc)["root_pid"].as_i64().unwrap();
    assert_eq!(tl(&doc)["service"]["pid"], root);
    let helpers = processes(&doc, |p| p["parent"] == root);
    assert_eq!(helpers.len(), 1, "{}", tl(&doc)["processes"]);
    let helper = helpers[0].clone();
    (doc, helper, out)
}

fn blame_line(out: &str, pid: i64) -> Option<&str> {
    out.lines()
        .skip_while(|l| !l.starts_with("blame"))
        .take_while(|l| !l.trim().is_empty())
        .find(|l| l.contains(&format!("(pid {pid}) on the critical path")))
}

/// A helper holds the critical path while the service process waits for it:
/// in waitpid or waitid (the helper sleeps 300 ms: it held at least the
/// sleep's half, the rest allowing for a parent that reached its wait late on a
/// busy machine, and at most its life), or reading its output until it ends
/// (as `$(helper)`; labelled as inferred).
#[test]
fn a_helper_the_service_waits_for_holds_the_critical_path() {
    let _turn = crate::common::beside();
    let Some(bin) = helper_wait() else {
        return;
    };
    const SLEEP_NS: u64 = 300_000_000;
    for (mode, how) in [("wait", "wait"), ("waitid", "wait"), ("pipe", "reaped")] {
        let (doc, helper, out) = helper_run(&bin, mode, SLEEP_NS / 1_000_000);
        let pid = helper["pid"].as_i64().unwrap();
        let blocked = helper["blocked_ns"].as_u64().unwrap();
        let life = helper["exit_ns"].as_u64().unwrap() - helper["start_ns"].as_u64().unwrap();
        assert_eq!(helper["waited"], how, "{mode}: {helper}");
        assert!(
            blocked >= SLEEP_NS / 2 && blocked <= life,
            "{mode}: held {blocked} ns of its {life} ns: {helper}"
        );
        assert_eq!(tl(&doc)["service"]["blocked_ns"], blocked, "{mode}");
        let line = blame_line(&out, pid).unwrap_or_else(|| panic!("{mode}: not blamed\n{out}"));
        let why = if how == "wait" {
            "waited for it"
        } else {
            "a heuristic"
        };
        assert!(line.contains(why), "{mode}: {line}");
    }
}

/// A helper that merely lives beside the service and ends with it (it reads a
/// pipe until the service exits, as a VM's port helper does) while the service
/// sleeps on its own: not on the critical path (the issue's `erl_child_setup
/// on the critical path`).
#[test]
fn a_helper_that_ends_with_its_parent_is_not_on_the_critical_path() {
    let _turn = crate::common::beside();
    let Some(bin) = helper_wait() else {
        return;
    };
    let (doc, helper, out) = helper_run(&bin, "beside", 300);
    let pid = helper["pid"].as_i64().unwrap();
    assert_eq!(helper["blocked_ns"], 0, "{helper}");
    assert!(helper["overlap_ns"].as_u64().unwrap() > 0, "{helper}");
    assert_eq!(tl(&doc)["service"]["blocked_ns"], 0);
    assert_eq!(blame_line(&out, pid), None, "{out}");
}

/// `erl -noshell -s init stop`: the VM's port helper `erl_child_setup` lives
/// as long as the VM and is never waited for: beside the path, not on it.
#[test]
fn erl_child_setup_is_not_on_the_critical_path() {
    let _turn = crate::common::beside();
    let Some(erl) = testkit::tool("ERLANG", "erl") else {
        return;
    };
    let (doc, out, _) = explain(
        &[
            "--ready",
            "exit",
            "--",
            erl.to_str().unwrap(),
            "-noshell",
            "-s",
            "init",
            "stop",
        ],
        &[],
    );
    let setup = processes(&doc, |p| argv_has(p, "erl_child_setup"));
    assert!(!setup.is_empty(), "{}", tl(&doc)["processes"]);
    for p in setup {
        assert_eq!(p["blocked_ns"], 0, "{p}");
        assert_eq!(blame_line(&out, p["pid"].as_i64().unwrap()), None, "{out}");
    }
}
