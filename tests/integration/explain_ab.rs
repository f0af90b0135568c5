//! `coldstart explain --name A -- … --name B -- …` on two builds of one C HTTP
//! server that differ in one known cost: build A reads and parses a data file
//! at start (several ms), build B has the same numbers compiled in. The
//! attribution must put the measured (untraced) difference in `init` and name
//! the data file as opened by A only; `compare` on two stored explains must
//! attribute the same way.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Numbers in the data file: enough that parsing them is a clearly measurable
/// part of A's start (~5–15 ms here), far above run-to-run noise of a C server.
const COUNT: usize = 400_000;

/// Runs per arm: this machine's noise (a loaded 2-core VM) needs more than the default.
const RUNS: &str = "40";

fn value(i: usize) -> u64 {
    (i as u64 * 7919) % 1_000_003
}

/// Write `name` under the fixtures directory once (atomically).
fn fixture_file(name: &str, contents: impl FnOnce() -> String) -> PathBuf {
    let dest = testkit::fixtures_dir().join(name);
    if !dest.exists() {
        let tmp = testkit::fixtures_dir().join(format!(".{name}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, contents()).unwrap();
        std::fs::rename(&tmp, &dest).unwrap();
    }
    dest
}

/// The two builds and A's data file, or None (skipped: no gcc).
fn builds() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let gcc = testkit::tool("GCC", "gcc")?;
    let src = testkit::repo().join("tests/fixtures/ab_server.c");
    let data = fixture_file(&format!("ab_data_{COUNT}.txt"), || {
        (0..COUNT).map(|i| format!("{}\n", value(i))).collect()
    });
    let header = fixture_file(&format!("ab_data_{COUNT}.h"), || {
        let mut h = format!("#define AB_COUNT {COUNT}L\nstatic const long ab_data[] = {{\n");
        for i in 0..COUNT {
            h += &format!("{},\n", value(i));
        }
        h + "};\n"
    });
    // The generated header is included as "ab_data.h": give gcc a directory
    // holding it under that name.
    let inc = testkit::fixtures_dir().join("ab_include");
    std::fs::create_dir_all(&inc).unwrap();
    let link = inc.join("ab_data.h");
    if !link.exists() {
        std::fs::copy(&header, &link).unwrap();
    }
    let a = testkit::built("ab_server_parse", &[&src], |out| {
        let mut c = Command::new(&gcc);
        c.args(["-O2", "-o"]).arg(out).arg(&src);
        c
    });
    let b = testkit::built("ab_server_embedded", &[&src, &header], |out| {
        let mut c = Command::new(&gcc);
        c.args(["-O2", "-DEMBEDDED", "-I"])
            .arg(&inc)
            .arg("-o")
            .arg(out)
            .arg(&src);
        c
    });
    Some((a, b, data))
}

fn explain_ab(a: &Path, b: &Path, data: &Path, port: u16, extra: &[&str]) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ab.json");
    let url = format!("http://127.0.0.1:{port}/");
    let port = port.to_string();
    let mut args = vec![
        "explain",
        "--adapter",
        "none",
        "--no-otlp",
        "--runs",
        RUNS,
        "--ready",
        &url,
        "--export-json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend([
        "--name",
        "parse",
        "--",
        a.to_str().unwrap(),
        &port,
        data.to_str().unwrap(),
        "--name",
        "embedded",
        "--",
        b.to_str().unwrap(),
        &port,
    ]);
    let o = cs(&args).quiet().run();
    assert!(o.status.success(), "{}", stderr(&o));
    (json_file(&json), stdout(&o))
}

/// The measured total, init's shift, and its share (None: no share of a total
/// whose CI holds 0).
fn init_share(att: &serde_json::Value) -> (f64, f64, Option<f64>) {
    let total = att["total_ms"].as_f64().expect("a measured total difference");
    let phases = att["phases"].as_array().unwrap();
    let init = phases.iter().find(|p| p["name"] == "init").expect("an init row");
    (
        total,
        init["diff_ms"].as_f64().unwrap(),
        init["share_pct"].as_f64(),
    )
}

#[test]
fn the_parse_at_start_is_attributed_to_init_and_its_file_named_also_by_compare() {
    let _turn = crate::common::timed();
    let Some((a, b, data)) = builds() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db").display().to_string();
    let (doc, out) = explain_ab(&a, &b, &data, testkit::free_port(), &["--store", &store]);
    let att = &doc["attribution"];
    let (total, init, share) = init_share(att);
    testkit::say(&format!(
        "explain A vs B: measured embedded − parse {total:.3} ms, init {init:.3} ms ({share:?} %)"
    ));
    assert!(total < 0.0, "the embedded build starts faster: {att:#}");
    let share = share.expect("a clear total has shares");
    // The contract, not a lucky margin: init holds ≥ 80 % of the measured
    // difference, or lies inside that difference's own interval (both are
    // measurements; at load 4–9 the share came out 77 % once).
    let (lo, hi) = (
        att["total_ci_ms"][0].as_f64().unwrap(),
        att["total_ci_ms"][1].as_f64().unwrap(),
    );
    assert!(
        share >= 80.0 || (lo <= init && init <= hi),
        "init {init:.3} ms is {share:.0} % of the measured {total:.3} ms [{lo:.3}, {hi:.3}] ({att:#})"
    );
    // The largest contribution comes first, and it is init.
    assert_eq!(att["phases"][0]["name"], "init", "{att:#}");
    let data_path = data.display().to_string();
    let only_a: Vec<&str> = att["only_a"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    assert!(only_a.contains(&data_path.as_str()), "{only_a:?}");
    assert!(
        !att["only_b"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == data_path.as_str()),
        "{att:#}"
    );
    // The report says it in words, with the file.
    assert!(
        out.contains("embedded is ") && out.contains(" faster than parse"),
        "{out}"
    );
    assert!(out.contains("opened only by parse"), "{out}");
    assert!(out.contains(data.file_name().unwrap().to_str().unwrap()), "{out}");
    // Each build has its own explanation, with untraced estimates.
    assert!(
        doc["builds"]["parse"]["estimate"]["runs"]
            .as_array()
            .unwrap()
            .len()
            >= 4
    );
    assert!(
        doc["builds"]["embedded"]["estimate"]["runs"]
            .as_array()
            .unwrap()
            .len()
            >= 4
    );
    // `show` prints the stored A vs B as it printed, and exports its document.
    let shown = dir.path().join("shown.json");
    let o = cs(&[
        "show",
        "--store",
        &store,
        "1",
        "--export-json",
        shown.to_str().unwrap(),
    ])
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(" faster than parse"), "{}", stdout(&o));
    assert_eq!(json_file(&shown)["attribution"], doc["attribution"]);
    compare_on_two_stored_explains_attributes_the_same_way(&a, &b, &data, &store, (total, lo, hi));
}

/// One test, two steps run one after the other: timing tests in parallel
/// would disturb each other on a small machine.
fn compare_on_two_stored_explains_attributes_the_same_way(
    a: &Path,
    b: &Path,
    data: &Path,
    store: &str,
    (measured_in_run, run_lo, run_hi): (f64, f64, f64),
) {
    let dir = tempfile::tempdir().unwrap();
    let port = testkit::free_port();
    let one = |program: &Path, args: &[&str]| {
        let url = format!("http://127.0.0.1:{port}/");
        let port = port.to_string();
        let mut all = vec![
            "explain",
            "--adapter",
            "none",
            "--no-otlp",
            "--runs",
            RUNS,
            "--ready",
            &url,
            "--store",
            &store,
            "--",
        ];
        let program = program.to_str().unwrap();
        all.push(program);
        all.push(&port);
        all.extend_from_slice(args);
        let o = cs(&all).quiet().run();
        assert!(o.status.success(), "{}", stderr(&o));
    };
    one(a, &[data.to_str().unwrap()]);
    one(b, &[]);
    let json = dir.path().join("cmp.json");
    let o = cs(&[
        "compare",
        "--store",
        store,
        "2",
        "3",
        "--export-json",
        json.to_str().unwrap(),
    ])
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    let att = &doc["attribution"];
    let (total, init, share) = init_share(att);
    testkit::say(&format!(
        "compare of two stored explains: measured {total:.3} ms, init {init:.3} ms ({share:?} %)"
    ));
    assert!(total < 0.0, "{att:#}");
    // Two separate invocations: their untraced totals differ by the machine's
    // drift between them too (−28.9 ms here against −17.9 ms interleaved), so
    // the share of that total is no test of the attribution. Init must recover
    // the parse's cost as the interleaved explain measured it: ≥ 80 % of it, or
    // init's own interval meets that measurement's interval (both are
    // measurements; at load ~10 the interleaved total came out −25.5 ms
    // [its CI] against init's −16.1 ms [−18.6, −15.8]).
    let init_phase = att["phases"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "init"))
        .unwrap_or_else(|| panic!("an init phase: {att:#}"));
    let (init_lo, init_hi) = (
        init_phase["ci_ms"][0].as_f64().unwrap_or(init),
        init_phase["ci_ms"][1].as_f64().unwrap_or(init),
    );
    assert!(
        init <= 0.8 * measured_in_run || (init_lo <= run_hi && run_lo <= init_hi),
        "init {init:.3} ms [{init_lo:.3}, {init_hi:.3}] recovers neither ≥ 80 % of the interleaved \
         explain's measured {measured_in_run:.3} ms [{run_lo:.3}, {run_hi:.3}] nor meets its interval ({att:#})"
    );
    let data_path = data.display().to_string();
    assert!(
        att["only_a"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == data_path.as_str()),
        "{att:#}"
    );
    assert!(stdout(&o).contains("faster than @2"), "{}", stdout(&o));
}

/// `explain --requests N`: every run (traced ones too) sends N GETs after
/// ready; each becomes a phase `request k` (accept → first response write)
/// with its untraced estimate.
#[test]
fn requests_after_ready_are_phases_with_estimates() {
    let _turn = crate::common::timed();
    let Some((_, b, _)) = builds() else { return };
    let port = testkit::free_port();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = format!("http://127.0.0.1:{port}/");
    let o = cs(&[
        "explain",
        "--adapter",
        "none",
        "--no-otlp",
        "--runs",
        "3",
        "--requests",
        "3",
        "--ready",
        &url,
        "--export-json",
        json.to_str().unwrap(),
        "--",
        b.to_str().unwrap(),
        &port.to_string(),
    ])
    .quiet()
    .no_store()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    let phases = doc["timeline"]["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().filter_map(|p| p["name"].as_str()).collect();
    for k in 1..=3 {
        assert!(names.contains(&format!("request {k}").as_str()), "{names:?}");
    }
    assert!(!names.contains(&"request 4"), "{names:?}");
    let ready_ns = (doc["ready_ms"].as_f64().unwrap() * 1e6) as u64;
    let r1 = phases.iter().find(|p| p["name"] == "request 1").unwrap();
    assert!(r1["start_ns"].as_u64().unwrap() >= ready_ns, "after ready: {r1}");
    let est: Vec<&str> = doc["estimate"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        est.contains(&"request 1") && est.contains(&"request 3"),
        "{est:?}"
    );
    assert!(stdout(&o).contains("request 1"), "{}", stdout(&o));
}

/// `explain --name A -- BIN [--port] PORT --name B [--env …] -- BIN [--port] PORT`,
/// the same binary as both builds: the JSON and the report.
fn explain_same_binary(
    bin: &Path,
    port_flag: Option<&str>,
    b_env: &[&str],
    runs: &str,
) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ab.json");
    let port = testkit::free_port().to_string();
    let url = format!("http://127.0.0.1:{port}/");
    let bin = bin.to_str().unwrap();
    let mut args = vec![
        "explain",
        "--adapter",
        "none",
        "--no-otlp",
        "--runs",
        runs,
        "--ready",
        &url,
        "--export-json",
        json.to_str().unwrap(),
        "--name",
        "A",
        "--",
        bin,
    ];
    args.extend(port_flag);
    args.extend([port.as_str(), "--name", "B"]);
    for e in b_env {
        args.extend(["--env", e]);
    }
    args.extend(["--", bin]);
    args.extend(port_flag);
    args.push(&port);
    let o = cs(&args).quiet().no_store().run();
    assert!(o.status.success(), "{}", stderr(&o));
    (json_file(&json), stdout(&o))
}

fn holds_zero(p: &serde_json::Value) -> bool {
    let ci = p["ci_ms"].as_array();
    ci.is_some_and(|c| c[0].as_f64().unwrap() <= 0.0 && 0.0 <= c[1].as_f64().unwrap())
}

/// One real A/A: the same binary twice — the Go example server, on which the
/// per-build scales invented `init −261 µs [−392, −132] (10866 % of it)` and
/// the like in 3 of 3 tries before. The intervals are family-wise at 95 %, so
/// a correct tool still shows a clear phase in up to 5 % of tries: a second
/// try on failure makes a false alarm ≤ 0.25 % (the rate itself is the
/// simulation's, in crates/explain/src/attribution_tests.rs).
#[test]
fn an_aa_explain_shows_no_phase_difference_and_no_shares() {
    let _turn = crate::common::timed();
    let Some(go) = testkit::go_server() else { return };
    let mut last = String::new();
    for attempt in 1..=2 {
        let (doc, out) = explain_same_binary(&go, Some("--port"), &[], "20");
        let att = &doc["attribution"];
        let phases = att["phases"].as_array().unwrap();
        let clear: Vec<String> = phases
            .iter()
            .filter(|p| !holds_zero(p))
            .map(|p| format!("{} {} {}", p["name"], p["diff_ms"], p["ci_ms"]))
            .collect();
        let total_holds = att["total_ci_ms"]
            .as_array()
            .is_some_and(|c| c[0].as_f64().unwrap() <= 0.0 && 0.0 <= c[1].as_f64().unwrap());
        testkit::say(&format!(
            "A/A explain (try {attempt}): total {} {}, phases with a clear CI: {clear:?}",
            att["total_ms"], att["total_ci_ms"]
        ));
        // A share of a total that may be 0 is never printed.
        if total_holds {
            assert!(phases.iter().all(|p| p["share_pct"].is_null()), "{att:#}");
            assert!(!out.contains("% of it"), "{out}");
        }
        if clear.is_empty() {
            assert!(
                !out.contains("% of it") || !total_holds,
                "no share of an unclear total: {out}"
            );
            return;
        }
        last = format!("{clear:?}\n{out}");
    }
    panic!("A/A: a phase differs clearly in two tries out of two: {last}");
}

/// A known delay in one phase of B (the same binary, a sleep by environment)
/// is attributed to that phase with ≥ 80 % of it, a CI clear of 0, and the
/// headline names it.
#[test]
fn a_delay_injected_into_one_phase_of_b_is_attributed_to_that_phase() {
    let _turn = crate::common::timed();
    let Some((_, b, _)) = builds() else { return };
    for (var, phase) in [
        ("AB_SLEEP_BEFORE_LISTEN_MS=20", "init"),
        ("AB_SLEEP_AFTER_LISTEN_MS=20", "listen→ready"),
    ] {
        let (doc, out) = explain_same_binary(&b, None, &[var], "12");
        let att = &doc["attribution"];
        let p = att["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == phase)
            .unwrap_or_else(|| panic!("a {phase} row: {att:#}"));
        let diff = p["diff_ms"].as_f64().unwrap();
        testkit::say(&format!(
            "{var}: {phase} {diff:.2} ms {} (total {} {})",
            p["ci_ms"], att["total_ms"], att["total_ci_ms"]
        ));
        assert!(
            diff >= 16.0,
            "≥ 80 % of the injected 20 ms in {phase}: {diff} ({att:#})"
        );
        assert!(!holds_zero(p), "{phase}: its CI is clear of 0: {p}");
        assert_eq!(att["phases"][0]["name"], phase, "the largest first: {att:#}");
        assert!(
            out.contains(&format!(": {phase} +")),
            "the headline names {phase}: {out}"
        );
    }
}
