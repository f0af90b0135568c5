//! The untraced estimates against oracles measured without the tracer.
//!
//! * The pyenv shim: `python3` on PATH is a bash script that execs pyenv's
//!   scripts before the interpreter. Untraced, shim minus real interpreter is
//!   the shim's true cost (with its CI). The contract: whenever explain calls
//!   its estimates reliable, the shim's estimated exec chain range overlaps
//!   that truth; whenever it does not, it says so and shows traced figures only.
//! * Every example server: when reliable, the estimated total within 5 % of the
//!   untraced median (else it says why), the calibrated model's own error
//!   printed beside it.

use crate::common::*;
use std::path::PathBuf;
use std::process::Command;

fn explain_json(args: &[&str]) -> serde_json::Value {
    explain_out(args).0
}

/// The JSON and the printed report.
fn explain_out(args: &[&str]) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("e.json");
    let mut all = vec![
        "explain",
        "--adapter",
        "none",
        "--no-otlp",
        "--export-json",
        json.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let o = cs(&all).quiet().no_store().run();
    assert!(o.status.success(), "{}", stderr(&o));
    (json_file(&json), stdout(&o))
}

/// `python3` on PATH when it is a shim script in front of another interpreter.
fn python_shim() -> Option<(PathBuf, PathBuf)> {
    let shim = testkit::tool("PYTHON", "python3")?;
    let real = testkit::python()?;
    let script = std::fs::read(&shim).is_ok_and(|b| b.starts_with(b"#!"));
    let same = std::fs::canonicalize(&shim).ok() == std::fs::canonicalize(&real).ok();
    if !script || same {
        testkit::skip(
            "PYTHON",
            &format!(
                "python3 on PATH ({}) is not a shim script in front of the interpreter ({}): the shim oracle needs one",
                shim.display(),
                real.display()
            ),
        );
        return None;
    }
    Some((shim, real))
}

#[test]
fn the_shims_estimated_exec_chain_holds_its_untraced_cost_whenever_called_reliable() {
    let _turn = crate::common::timed();
    let Some((shim, real)) = python_shim() else { return };
    // Both interleaved, untraced and traced: the untraced arms are the oracle
    // (shim − real, the Hodges–Lehmann shift with its CI), the traced ones the estimate.
    let (doc, out) = explain_out(&[
        "--runs",
        "15",
        "--ready",
        "exit",
        "--name",
        "shim",
        "--",
        shim.to_str().unwrap(),
        "-c",
        "pass",
        "--name",
        "real",
        "--",
        real.to_str().unwrap(),
        "-c",
        "pass",
    ]);
    let att = &doc["attribution"];
    let truth = -att["total_ms"].as_f64().expect("an untraced difference");
    let ci = att["total_ci_ms"]
        .as_array()
        .expect("a CI of the untraced difference");
    let (t_lo, t_hi) = (-ci[1].as_f64().unwrap(), -ci[0].as_f64().unwrap());
    let e = &doc["builds"]["shim"]["estimate"];
    let chain = e["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "exec-chain")
        .expect("an exec-chain phase");
    let (traced, estimated) = (
        chain["traced_ms"].as_f64().unwrap(),
        chain["estimate_ms"].as_f64().unwrap(),
    );
    assert!(truth > 0.0, "the shim costs something untraced: {truth} ms");
    assert!(
        estimated <= traced,
        "an estimate above its traced figure: {chain}"
    );
    if e["reliable"] == true {
        let range = chain["range_ms"]
            .as_array()
            .expect("a reliable estimate has a range");
        let (lo, hi) = (range[0].as_f64().unwrap(), range[1].as_f64().unwrap());
        testkit::say(&format!(
            "shim oracle: untraced shim − real {truth:.1} ms [{t_lo:.1}, {t_hi:.1}]; exec chain traced {traced:.1} ms, estimated {estimated:.1} ms [{lo:.1}, {hi:.1}] (reliable; scale ×{:.2} {})",
            e["scale"].as_f64().unwrap_or(f64::NAN),
            e["scale_ci"]
        ));
        assert!(
            lo <= t_hi && t_lo <= hi,
            "explain called its estimate reliable, but the shim's estimated exec chain {estimated:.1} ms [{lo:.1}, {hi:.1}] misses its untraced cost {truth:.1} ms [{t_lo:.1}, {t_hi:.1}] (traced {traced:.1} ms)"
        );
        assert!(out.contains("≈ "), "reliable estimates are printed: {out}");
    } else {
        testkit::say(&format!(
            "shim oracle: explain called its estimates not reliable ({}); untraced shim − real {truth:.1} ms; exec chain traced {traced:.1} ms",
            e["noise"]
        ));
        assert!(!e["noise"].as_array().unwrap().is_empty(), "{e}");
        assert_eq!(estimated, traced, "not reliable: the figure is the traced one");
        // The shim's own report (the real interpreter's follows it, and may be reliable).
        let shim_report = out
            .split("coldstart explain: ")
            .find(|r| r.starts_with(shim.to_str().unwrap()))
            .unwrap_or_else(|| panic!("the shim's report: {out}"));
        assert!(
            shim_report.contains("too noisy to estimate untraced times"),
            "{shim_report}"
        );
        assert!(
            !shim_report.contains(" untraced (±"),
            "no estimate is printed: {shim_report}"
        );
    }
}

/// The example servers that can run here: (name, argv before `--port N`).
fn servers() -> Vec<(&'static str, Vec<String>)> {
    let ex = testkit::repo().join("examples");
    let mut out = Vec::new();
    if let Some(py) = testkit::python() {
        out.push((
            "python",
            vec![
                py.display().to_string(),
                ex.join("python/server.py").display().to_string(),
            ],
        ));
    }
    if let Some(node) = testkit::tool("NODE", "node") {
        out.push((
            "node",
            vec![
                node.display().to_string(),
                ex.join("node/server.js").display().to_string(),
            ],
        ));
    }
    if let Some(go) = testkit::go_server() {
        out.push(("go", vec![go.display().to_string()]));
    }
    if let (Some(javac), Some(java)) = (testkit::tool("JAVA", "javac"), testkit::tool("JAVA", "java")) {
        let src = ex.join("java/Server.java");
        let dir = testkit::fixtures_dir().join(format!("java-server-{}", std::process::id()));
        let o = Command::new(javac)
            .arg("-d")
            .arg(&dir)
            .arg(&src)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "javac: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let class = dir.join("Server.class");
        out.push((
            "java",
            vec![
                java.display().to_string(),
                "-cp".into(),
                class.parent().unwrap().display().to_string(),
                "Server".into(),
            ],
        ));
    }
    if let Some(rustc) = testkit::which("rustc") {
        let src = ex.join("rust/src/main.rs");
        let bin = testkit::built("rust-server", &[&src], |out| {
            let mut c = Command::new(rustc);
            c.args(["-O", "--edition", "2021", "-o"]).arg(out).arg(&src);
            c
        });
        out.push(("rust", vec![bin.display().to_string()]));
    }
    out
}

#[test]
fn the_estimated_total_matches_the_untraced_median_on_every_example_server() {
    let _turn = crate::common::timed();
    let mut failures = Vec::new();
    for (name, argv) in servers() {
        let port = testkit::free_port().to_string();
        let url = format!("http://127.0.0.1:{port}/health");
        let mut args = vec!["--runs", "10", "--ready", &url, "--"];
        args.extend(argv.iter().map(String::as_str));
        args.extend(["--port", &port]);
        let doc = explain_json(&args);
        let est = &doc["estimate"];
        let total = est["total_ms"].as_f64().unwrap();
        let untraced = est["untraced_median_ms"].as_f64().unwrap();
        if est["reliable"] != true {
            // The contract's other half: it says why, and the total is traced.
            testkit::say(&format!("{name}: estimates not reliable here: {}", est["noise"]));
            assert!(!est["noise"].as_array().unwrap().is_empty(), "{name}: {est}");
            assert_eq!(total, doc["traced_ms"]["p50"].as_f64().unwrap(), "{name}");
            continue;
        }
        let err = (total - untraced) / untraced * 100.0;
        testkit::say(&format!(
            "{name}: untraced median {untraced:.1} ms, traced p50 {:.1} ms, estimated {total:.1} ms ({err:+.1} %); calibrated model {:.1} ms ({:+.1} %), scale ×{:.2}, {} stops",
            doc["traced_ms"]["p50"].as_f64().unwrap(),
            est["calibrated_total_ms"].as_f64().unwrap(),
            est["error_pct"].as_f64().unwrap(),
            est["scale"].as_f64().unwrap(),
            est["stops"]
        ));
        if err.abs() > 5.0 {
            failures.push(format!("{name}: estimated total {total:.1} ms is {err:+.1} % off the untraced median {untraced:.1} ms"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
