//! The explain headline against injected, known costs.
//!
//! * A Python server that sleeps 200 ms before it listens: the headline names
//!   the time off CPU in init, ≥ 80 % of the sleep and no more than the traced
//!   init, among its (at most) three first lines.
//! * A C program that sleeps a known time against one that spins as long: the
//!   sleep is off CPU, the spin is not.
//! * The Python shim: the headline names the exec chain with its share of the
//!   untraced total.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

/// `coldstart explain` with `env` set for the target: the exported explanation
/// and what it printed.
fn explain(env: &[(&str, &str)], args: &[&str]) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("e.json");
    let mut all = vec!["explain", "--runs", "5", "--export-json", json.to_str().unwrap()];
    all.extend_from_slice(args);
    let mut c = coldstart();
    c.args(&all).no_store().current_dir(dir.path());
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.run();
    assert!(o.status.success(), "{}", stderr(&o));
    (json_file(&json), stdout(&o))
}

fn items(e: &Value) -> &Vec<Value> {
    e["headline"]["items"].as_array().expect("a headline with items")
}

fn item<'a>(e: &'a Value, kind: &str) -> Option<&'a Value> {
    items(e).iter().find(|i| i["kind"] == kind)
}

fn traced_phase_ms(e: &Value, name: &str) -> f64 {
    e["timeline"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .map_or(0.0, |p| p["dur_ns"].as_f64().unwrap() / 1e6)
}

/// The headline's lines: the report's first lines, at most three.
fn headline_lines(out: &str) -> Vec<&str> {
    let lines: Vec<&str> = out.lines().take_while(|l| l.starts_with('▶')).collect();
    assert!(
        !lines.is_empty() && lines.len() <= 3,
        "the report starts with one to three headline lines:\n{out}"
    );
    lines
}

/// The off-CPU section's figures for init (the headline's `off_cpu`).
fn init_off_cpu<'a>(e: &'a Value, out: &str) -> &'a Value {
    e["headline"]["off_cpu"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["phase"] == "init")
        .unwrap_or_else(|| panic!("no off-CPU figures for init:\n{out}"))
}

/// The off-CPU item's figure, checked against an injected sleep of `sleep_ms`:
/// at least 80 % of it, and no more than the traced init it lies in.
fn assert_off_cpu(e: &Value, out: &str, sleep_ms: f64) {
    let init = traced_phase_ms(e, "init");
    let ms = item(e, "off-cpu").map(|off| {
        assert_eq!(off["section"], "off CPU");
        off["ms"].as_f64().unwrap()
    });
    if let Some(ms) = ms {
        assert!(
            ms <= init,
            "off CPU in init {ms:.1} ms > the traced init {init:.1} ms:\n{out}"
        );
    }
    if ms.is_none_or(|ms| ms < 0.8 * sleep_ms) {
        // Both ways (issue 38): the estimate takes the tracer's stops out at their
        // calibrated cost scaled to the untraced runs, and on a machine busy enough
        // that the program waits for a CPU most of its init, that scale also holds
        // time spent runnable: the estimate fell to 110 ms for a 200 ms sleep with
        // 516 ms runnable, and once to 84 ms, below the share the headline names
        // at all. Then the section's two figures, as measured (off CPU) and
        // estimated (less up to the held time), must bracket the sleep, and the
        // run must indeed have been that busy.
        let section = init_off_cpu(e, out);
        let f = |k: &str| section[k].as_f64().unwrap_or(f64::NAN);
        assert!(
            f("estimate_ms") <= sleep_ms && sleep_ms <= f("off_cpu_ms") && f("runqueue_ms") > f("on_cpu_ms"),
            "off CPU in init {ms:?} ms in the headline for a {sleep_ms} ms sleep, and the section does not bracket it on a busy machine: {section}\n{out}"
        );
        eprintln!(
            "off CPU: {ms:?} ms in the headline for a {sleep_ms} ms sleep on a busy machine: {section}"
        );
    } else {
        assert!(
            headline_lines(out).iter().any(|l| l.contains("off CPU in init")),
            "the off-CPU time is not among the first lines:\n{out}"
        );
    }
    assert!(
        out.contains("\noff CPU (the service's main thread"),
        "its section:\n{out}"
    );
}

#[test]
fn a_python_servers_sleep_before_listen_is_named_as_time_off_cpu_in_init() {
    let _turn = crate::common::timed();
    let Some(python) = testkit::python() else { return };
    let server = repo().join("examples/python/server.py");
    let run = |delay: &str| {
        let port = free_port().to_string();
        let url = format!("http://127.0.0.1:{port}/health");
        explain(
            &[("COLDSTART_EXAMPLE_DELAY_MS", delay)],
            &[
                "--ready",
                &url,
                "--",
                python.to_str().unwrap(),
                server.to_str().unwrap(),
                "--port",
                &port,
            ],
        )
    };
    let (e, out) = run("200");
    assert_off_cpu(&e, &out, 200.0);
    // The control: without the sleep, init's time off CPU (the tracer's
    // stops taken out) is far below it, so the figure above is the sleep.
    let (e, out) = run("0");
    let init = init_off_cpu(&e, &out);
    let off = init["estimate_ms"].as_f64().unwrap();
    assert!(off < 0.2 * 200.0, "{off:.1} ms off CPU without the sleep:\n{out}");
}

#[test]
fn a_c_programs_sleep_is_off_cpu_and_its_spin_is_not() {
    let _turn = crate::common::timed();
    let (Some(sleeper), Some(spinner)) = (
        testkit::c_example("sleeper", &["-O2"]),
        testkit::c_example("spinner", &["-O2"]),
    ) else {
        return;
    };
    let run = |p: &Path| {
        explain(
            &[("COLDSTART_EXAMPLE_DELAY_MS", "150")],
            &[
                "--adapter",
                "none",
                "--no-otlp",
                "--ready",
                "exit",
                "--",
                p.to_str().unwrap(),
            ],
        )
    };
    let (e, out) = run(&sleeper);
    assert_off_cpu(&e, &out, 150.0);

    let (e, out) = run(&spinner);
    assert!(item(&e, "off-cpu").is_none(), "a spin named as off CPU:\n{out}");
    let init = init_off_cpu(&e, &out);
    // On a busy machine a spin waits for a CPU (runnable), it does not sleep.
    let off = init["off_cpu_ms"].as_f64().unwrap();
    assert!(off < 0.1 * 150.0, "the spin spent {off:.1} ms off CPU:\n{out}");
    let on = init["on_cpu_ms"].as_f64().unwrap() + init["runqueue_ms"].as_f64().unwrap();
    assert!(
        on >= 0.8 * 150.0,
        "the spin's on-CPU + runnable time {on:.1} ms:\n{out}"
    );
}

#[test]
fn the_python_shims_exec_chain_is_named_with_its_share() {
    let _turn = crate::common::timed();
    let Some(real) = testkit::python() else { return };
    // pyenv's `python3` on PATH when it is a shim script, else a chain of two
    // shell scripts in front of the interpreter (as a version manager's is).
    let shim = testkit::which("python3")
        .filter(|p| std::fs::read(p).is_ok_and(|b| b.starts_with(b"#!")))
        .unwrap_or_else(|| testkit::shim_chain(&real));
    let (e, out) = explain(
        &[],
        &[
            "--adapter",
            "none",
            "--no-otlp",
            "--ready",
            "exit",
            "--",
            shim.to_str().unwrap(),
            "-c",
            "pass",
        ],
    );
    let chain =
        item(&e, "exec-chain").unwrap_or_else(|| panic!("the exec chain is not in the headline:\n{out}"));
    let (ms, share) = (
        chain["ms"].as_f64().unwrap(),
        chain["share_pct"].as_f64().unwrap(),
    );
    // The figure is the exec chain's untraced estimate, its share of the
    // untraced median, when explain calls its estimates reliable; else the
    // traced figure, its share of the traced run shown.
    let phase = e["estimate"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "exec-chain")
        .unwrap()
        .clone();
    if e["estimate"]["reliable"] == true {
        let est = phase["estimate_ms"].as_f64().unwrap();
        let total = e["untraced_ms"]["p50"].as_f64().unwrap();
        assert!((ms - est).abs() < 1e-6 && chain["estimated"] == true, "{chain}");
        assert!((share - ms / total * 100.0).abs() < 1e-6, "{chain} of {total}");
    } else {
        let traced = traced_phase_ms(&e, "exec-chain");
        let total = e["ready_ms"].as_f64().unwrap();
        assert!(
            (ms - traced).abs() < 1e-6 && chain["estimated"] == false,
            "{chain} vs traced {traced}"
        );
        assert!((share - ms / total * 100.0).abs() < 1e-6, "{chain} of {total}");
    }
    let name = shim.file_name().unwrap().to_str().unwrap();
    let line = headline_lines(&out)
        .into_iter()
        .find(|l| l.contains("the exec chain to"))
        .unwrap_or_else(|| panic!("no exec chain line:\n{out}"));
    assert!(
        line.contains(name)
            && line.contains(&format!("({share:.0} %)"))
            && line.contains("see \"exec chain\""),
        "{line}"
    );
}
