//! A known injected difference must be found: 150 ms vs 50 ms of init delay.

use crate::common::*;

#[test]
fn injected_delay_is_slower_by_about_the_delay() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let sleeper = example("sleeper");
    let o = cs(&[
        "bench",
        "--runs",
        "12",
        "--export-json",
        json.to_str().unwrap(),
        "--name",
        "fast",
        "--env",
        "COLDSTART_EXAMPLE_DELAY_MS=50",
        "--",
        &sleeper,
        "--name",
        "slow",
        "--env",
        "COLDSTART_EXAMPLE_DELAY_MS=150",
        "--",
        &sleeper,
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    let cmp = &doc["variants"][1]["stats"]["vs_baseline"];
    assert_eq!(cmp["verdict"], "slower", "{cmp}");
    let shift = cmp["shift"]["estimate"].as_f64().unwrap();
    assert!((60.0..=140.0).contains(&shift), "Hodges–Lehmann shift {shift} ms");
    let (lo, hi) = (
        cmp["shift"]["ci"][0].as_f64().unwrap(),
        cmp["shift"]["ci"][1].as_f64().unwrap(),
    );
    assert!(
        lo <= shift && shift <= hi && lo > 0.0,
        "CI [{lo}, {hi}] around {shift}"
    );
    assert!(cmp["ratio"].as_f64().unwrap() > 1.5);
    assert!(cmp["relative"]["ci"][0].as_f64().unwrap() > 0.01, "{cmp}");
    documented_types(&doc);
    assert!(cmp["mann_whitney"]["p_value"].as_f64().unwrap() < 0.05);
    assert!(
        doc["variants"][0]["stats"]["vs_baseline"].is_null(),
        "the baseline is not compared with itself"
    );
    let out = stdout(&o);
    assert!(out.contains("Δ slow vs fast: slower"), "{out}");
}

#[test]
fn interleaved_order_is_shuffled_per_round_and_sequential_is_not() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let noop = example("noop");
    let order = |mode: &str| {
        let json = dir.path().join(format!("{mode}.json"));
        let o = cs(&[
            "bench",
            "--runs",
            "12",
            "--warmup",
            "0",
            "--order",
            mode,
            "--seed",
            "7",
            "--export-json",
            json.to_str().unwrap(),
            "--name",
            "a",
            "--",
            &noop,
            "--name",
            "b",
            "--",
            &noop,
            "--name",
            "c",
            "--",
            &noop,
        ])
        .quiet()
        .run();
        assert!(o.status.success(), "{}", stderr(&o));
        let doc = json_file(&json);
        doc["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["variant"].as_u64().unwrap())
            .collect::<Vec<_>>()
    };
    let shuffled = order("shuffled");
    // Every round holds each variant once, and not every round is in the same order.
    let rounds: Vec<&[u64]> = shuffled.chunks(3).collect();
    assert_eq!(rounds.len(), 12);
    for r in &rounds {
        let mut sorted = r.to_vec();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2]);
    }
    assert!(
        rounds.iter().any(|r| *r != rounds[0]),
        "12 rounds all in one order: not shuffled"
    );
    let sequential = order("sequential");
    let expected: Vec<u64> = (0..3).flat_map(|v| std::iter::repeat_n(v, 12)).collect();
    assert_eq!(sequential, expected);
}

#[test]
fn adaptive_stop_respects_min_and_max() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    // A generous target: stops at min-runs; an impossible one: runs to max-runs.
    // A 20 ms sleeper keeps the relative CI narrow even when the machine is busy;
    // at 12 runs the median's exact 95 % CI is x(3)..x(10), so two stray outliers
    // (this VM is shared) cannot widen it (at 8 runs it is the whole range).
    let noop = example("noop");
    let sleeper = example("sleeper");
    let o = cs(&[
        "bench",
        "--env",
        "COLDSTART_EXAMPLE_DELAY_MS=20",
        "--target-ci",
        "50%",
        "--min-runs",
        "12",
        "--max-runs",
        "40",
        "--export-json",
        json.to_str().unwrap(),
        "--",
        &sleeper,
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    assert_eq!(ready_ns(&doc, 0).len(), 12);
    assert_eq!(doc["stopped"], "target-ci");
    let o = cs(&[
        "bench",
        "--target-ci",
        "0.000001ms",
        "--min-runs",
        "5",
        "--max-runs",
        "9",
        "--export-json",
        json.to_str().unwrap(),
        "--",
        &noop,
    ])
    .quiet()
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = json_file(&json);
    assert_eq!(ready_ns(&doc, 0).len(), 9);
    assert_eq!(doc["stopped"], "max-runs");
}

/// The documented comparison fields (docs/json-schema.md) keep their types: a
/// change of type must bump the schema (`vs_baseline.ratio` once changed from
/// `{estimate, ci}` to a number under the same id, breaking readers).
fn documented_types(doc: &serde_json::Value) {
    assert_eq!(
        doc["schema"], "coldstart.bench/2",
        "a type change bumps the schema: update this test and the docs' changes list"
    );
    let cmp = &doc["variants"][1]["stats"]["vs_baseline"];
    let number = |v: &serde_json::Value, what: &str| {
        assert!(v.is_f64() || v.is_i64() || v.is_u64(), "{what} is a number: {v}")
    };
    let interval = |v: &serde_json::Value, what: &str| {
        let a = v.as_array().unwrap_or_else(|| panic!("{what} is [lo, hi]: {v}"));
        assert_eq!(a.len(), 2, "{what}");
        number(&a[0], what);
        number(&a[1], what);
    };
    assert!(cmp["design"].is_string() && cmp["verdict"].is_string(), "{cmp}");
    number(&cmp["noise"], "noise");
    number(&cmp["ratio"], "ratio");
    number(&cmp["shift"]["estimate"], "shift.estimate");
    interval(&cmp["shift"]["ci"], "shift.ci");
    number(&cmp["relative"]["estimate"], "relative.estimate");
    interval(&cmp["relative"]["ci"], "relative.ci");
    assert!(
        cmp["relative"]["ci"][0].as_f64().unwrap() > -1.0,
        "a duration cannot shrink by more than 100 %"
    );
    for k in ["u", "z", "p_value"] {
        number(&cmp["mann_whitney"][k], k);
    }
    number(&cmp["detectable"]["shift"], "detectable.shift");
    number(&cmp["detectable"]["relative"], "detectable.relative");
}
