//! `coldstart pods`: a cluster's pod start-ups from `kubectl get pods,events -o
//! json`. No Kubernetes cluster runs here: the input is written from the API
//! reference (tests/fixtures/pods/list.json), its figures worked out by hand.

use crate::common::*;

fn list() -> std::path::PathBuf {
    repo().join("tests/fixtures/pods/list.json")
}

#[test]
fn each_pod_its_phases_the_slo_and_the_probe_that_decided() {
    let _turn = crate::common::beside();
    let o = cs(&["pods"]).arg(list()).run();
    assert!(o.success(), "{}", o.streams());
    let out = o.stdout();
    // web-1: created 10:00:00, scheduled at once, a 1.5 s pull, started 10:00:03,
    // Ready 10:00:13 (its probe's 10 s delay after the start).
    let row = |pod: &str| {
        out.lines()
            .find(|l| l.contains(pod))
            .unwrap_or_else(|| panic!("no {pod}: {out}"))
    };
    let cells = |pod: &str| row(pod).split_whitespace().skip(1).collect::<Vec<_>>().join(" ");
    assert_eq!(cells("shop/web-1"), "0 µs 1.50 s 3.00 s 13.00 s 1.50 s");
    assert_eq!(cells("shop/web-2"), "1.00 s 0 µs 2.00 s 3.00 s 2.00 s");
    assert_eq!(cells("shop/web-3"), "— — — — —");
    assert!(out.contains("whole seconds: each figure ±1 s"), "{out}");
    assert!(
        out.contains("p99 of the SLI ≤ 5 s): p99 2.00 s* within it, from too few pods"),
        "{out}"
    );
    assert!(
        out.contains("shop/web-1: Ready 10.00 s after its containers started, the earliest its readinessProbe allows (app: initialDelaySeconds 10"),
        "{out}"
    );
    assert!(!out.contains("shop/web-2: Ready"), "{out}");

    // The same figures for machines.
    let o = cs(&["pods", "--json"]).arg(list()).run();
    assert!(o.success(), "{}", o.streams());
    let doc: serde_json::Value = serde_json::from_str(&o.stdout()).unwrap();
    assert_eq!(doc["schema"], "coldstart.pods/1");
    let web1 = &doc["pods"]["pods"][0];
    assert_eq!(web1["name"], "web-1");
    assert_eq!(web1["sli_ms"], 1500.0);
    assert_eq!(web1["probe_floor"]["initial_delay_s"], 10);
    assert_eq!(doc["pods"]["sli_ms"]["n"], 2);
}

#[test]
fn input_that_is_not_a_pod_list_is_one_line_and_writes_nothing() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("page.html");
    std::fs::write(&bad, "<html>not json</html>").unwrap();
    for (file, want) in [
        (bad.clone(), "not the JSON of `kubectl get pods,events -o json`"),
        (dir.path().join("missing.json"), "cannot read"),
    ] {
        let o = cs(&["pods"]).arg(&file).current_dir(dir.path()).run();
        assert_eq!(o.code(), Some(2), "{}", o.streams());
        assert!(o.stderr().contains(want), "{}", o.stderr());
        assert_eq!(o.stderr().trim().lines().count(), 1, "{}", o.stderr());
        assert_eq!(o.stdout(), "");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("page.html")]);
}
