//! `coldstart explain` as a stored experiment: its three arms and its
//! explanation go to the store; `history` lists it as an explain, `show`
//! prints the report again, `compare` pairs two explains arm by arm and sets
//! their overheads (with CIs) side by side.

use crate::common::*;

fn store_in(dir: &tempfile::TempDir) -> String {
    dir.path().join("explain.db").display().to_string()
}

/// One explain of the dynamically linked sleeper (the native adapter applies),
/// stored in `store`; (stdout, stderr).
fn explain(store: &str, extra: &[&str]) -> (String, String) {
    let sleeper = example("sleeper");
    let mut args = vec![
        "explain", "--store", store, "--runs", "5", "--seed", "7", "--ready", "exit",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", &sleeper]);
    let o = cs(&args).run();
    assert!(o.status.success(), "{}", stderr(&o));
    (stdout(&o), stderr(&o))
}

/// The report without the trailing "stored as …" line.
fn report(out: &str) -> String {
    out.lines()
        .filter(|l| !l.starts_with("stored as experiment"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// An overhead's estimate and 95 % CI from the JSON (`estimate`, `[lo, hi]`):
/// the estimate lies inside, and the report prints it as
/// `×1.234 (HL ratio; 95% CI ×1.100–×1.400)`.
fn overhead(estimate: &serde_json::Value, ci: &serde_json::Value) -> String {
    let (est, lo, hi) = (
        estimate
            .as_f64()
            .unwrap_or_else(|| panic!("no estimate: {estimate}")),
        ci[0].as_f64().unwrap_or_else(|| panic!("no CI: {ci}")),
        ci[1].as_f64().unwrap_or_else(|| panic!("no CI: {ci}")),
    );
    assert!(lo <= est && est <= hi, "{est} outside [{lo}, {hi}]");
    format!("×{est:.3} (HL ratio; 95% CI ×{lo:.3}–×{hi:.3})")
}

#[test]
fn explain_is_stored_listed_and_shown_again() {
    let _turn = crate::common::beside();
    // SQLite, and PostgreSQL when CI provides one.
    for (dir, store) in stores("explain_shown") {
        let json = dir.path().join("e.json");
        let (out, err) = explain(
            &store,
            &["--warmup", "2", "--export-json", json.to_str().unwrap()],
        );
        assert!(out.contains("stored as experiment 1 in"), "{out}");
        assert!(err.contains("adapters: native"), "{err}");

        // Overheads carry a 95% CI around their estimate, in the JSON and as
        // the report prints them.
        let doc = json_file(&json);
        for (label, key) in [
            ("tracer overhead ", "overhead"),
            ("adapters' overhead ", "adapter_overhead"),
        ] {
            let shown = overhead(&doc[key], &doc[format!("{key}_ci")]);
            assert!(
                out.contains(&format!("{label}{shown}")),
                "{label}{shown} in {out}"
            );
        }
        let o = doc["overhead"].as_f64().unwrap();
        assert!(o > 1.0, "tracing a run does not make it faster: {o}");

        // History lists it as an explain with its three arms, every run stored.
        let o = cs(&["history", "--store", &store, "--json"]).run();
        assert!(o.status.success(), "{}", stderr(&o));
        let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(listed[0]["id"], 1);
        assert_eq!(listed[0]["kind"], "explain", "{listed}");
        assert_eq!(
            listed[0]["variants"],
            serde_json::json!(["untraced", "traced", "adapted"])
        );
        assert_eq!(listed[0]["runs"], 15, "5 measured runs of each arm: {listed}");
        assert_eq!(listed[0]["stopped"], "completed");
        let o = cs(&["history", "--store", &store]).run();
        assert!(stdout(&o).contains("1 (explain)"), "{}", stdout(&o));

        // Every run, warmups included: 2 warmup rounds + 5 rounds of 3 arms.
        let o = cs(&["show", "1", "--store", &store, "--export-csv", "-"]).run();
        assert!(o.status.success(), "{}", stderr(&o));
        let csv = stdout(&o);
        let rows = csv.lines().skip(1).count();
        assert_eq!(rows, 21, "{csv}");

        // show re-exports the explanation the run exported (not bench's schema).
        let again = dir.path().join("again.json");
        let o = cs(&[
            "show",
            "1",
            "--store",
            &store,
            "--export-json",
            again.to_str().unwrap(),
        ])
        .run();
        assert!(o.status.success(), "{}", stderr(&o));
        let again = json_file(&again);
        assert_eq!(again["schema"], doc["schema"]);
        assert_eq!(again["timeline"], doc["timeline"]);
        assert_eq!(again["overhead_ci"], doc["overhead_ci"]);

        // show prints the explanation exactly as the run did.
        let o = cs(&["show", "latest", "--store", &store]).run();
        assert!(o.status.success(), "{}", stderr(&o));
        let shown = stdout(&o);
        let (first, rest) = shown.split_once('\n').unwrap();
        assert!(first.starts_with("experiment 1 ("), "{shown}");
        assert_eq!(rest, report(&out));
        assert!(
            rest.contains("waterfall") && rest.contains("Dynamic loader"),
            "{rest}"
        );
    }
}

#[test]
fn two_explains_compare_arm_by_arm_with_their_overheads() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    let (first, _) = explain(&store, &["-q"]);
    let (second, _) = explain(&store, &["-q", "--adapter", "none"]);
    let o = cs(&["compare", "1", "2", "--store", &store]).run();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for arm in ["untraced", "traced", "adapted"] {
        assert!(
            out.contains(&format!("{arm}@1")) && out.contains(&format!("{arm}@2")),
            "{arm}: {out}"
        );
        assert!(out.contains(&format!("Δ {arm}@2 vs {arm}@1")), "{out}");
    }
    // Two invocations' arms get no CI for their shift (drift between invocations),
    // but each explain's overheads (from its own interleaved runs) carry theirs:
    // exactly those it printed.
    let line = out
        .lines()
        .find(|l| l.contains("tracer overhead:"))
        .unwrap_or_else(|| panic!("{out}"));
    let printed = |report: &str| {
        let l = report.lines().find(|l| l.contains("tracer overhead ")).unwrap();
        l[l.find("tracer overhead ").unwrap() + "tracer overhead ".len()..].to_string()
    };
    assert!(
        line.contains(&format!("{} @1 → {} @2", printed(&first), printed(&second))),
        "{line}\n{first}\n{second}"
    );

    // The JSON export carries the overheads too, each with its CI: those printed.
    let json = dir.path().join("c.json");
    let o = cs(&[
        "compare",
        "1",
        "2",
        "--store",
        &store,
        "--export-json",
        json.to_str().unwrap(),
    ])
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    assert_eq!(doc["pairs"].as_array().unwrap().len(), 3, "{doc}");
    let adapted = &doc["overheads"]["adapted"];
    let shown = |r: &serde_json::Value| overhead(&r["estimate"], &r["ci"]);
    let line = format!(
        "adapters' overhead: {} @1 → {} @2",
        shown(&adapted["baseline"]),
        shown(&adapted["candidate"])
    );
    assert!(out.contains(&line), "{line} in {out}");
    let traced = &doc["overheads"]["traced"]["candidate"];
    assert!(
        traced["ci"][0].as_f64().unwrap() <= traced["estimate"].as_f64().unwrap(),
        "{doc}"
    );

    // The Markdown export carries them as well; the same command gets no note.
    assert!(!out.contains("ran different commands"), "{out}");
    let o = cs(&["compare", "1", "2", "--store", &store, "--export-markdown", "-"]).run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("tracer overhead:"), "{}", stdout(&o));

    // A gate over two explains judges the program (untraced), not the tracer.
    let o = cs(&[
        "gate",
        "--store",
        &store,
        "--baseline",
        "1",
        "--candidate",
        "2",
        "--max",
        "60s",
    ])
    .run();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let md = stdout(&o);
    assert!(md.contains("untraced"), "{md}");
    assert!(!md.contains("adapted") && !md.contains("| traced"), "{md}");

    // Two explains of different programs: compared, but said so.
    let noop = example("noop");
    let o = cs(&[
        "explain", "--store", &store, "--runs", "4", "--ready", "exit", "--", &noop,
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = cs(&["compare", "1", "3", "--store", &store]).run();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("note: the two sides ran different commands:"),
        "{out}"
    );
    assert!(out.contains(&noop), "{out}");
}

#[test]
fn explain_with_no_store_records_nothing() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    let (out, _) = explain(&store, &["-q", "--no-store"]);
    assert!(!out.contains("stored as"), "{out}");
    assert!(!std::path::Path::new(&store).exists(), "no store created");
}

#[test]
fn an_explain_that_stopped_early_is_still_listed_as_an_explain() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    // `false` fails its first run: the explain stops (exit 1) with no explanation.
    let o = cs(&["explain", "--store", &store, "--ready", "exit", "--", "false"])
        .quiet()
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = cs(&["history", "--store", &store, "--json"]).run();
    assert!(o.status.success(), "{}", stderr(&o));
    let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(listed[0]["kind"], "explain", "{listed}");
    assert_eq!(listed[0]["stopped"], "failure", "{listed}");
}
