//! Stored variants of every kind load back, show and compare: a stored variant is
//! a description (name, command, readiness as text), never parsed back into a
//! probe, so `lambda:init` (no readiness of bench's) and readiness kinds this build
//! cannot probe (https:// without the `https` feature) still read. And the
//! `stopped` column keeps its words: NULL is "incomplete".

use crate::common::*;
use coldstart_core::experiment::{ExperimentSettings, Kind, StopReason, Variant};
use coldstart_core::sample::{Outcome, RunId, Sample};
use coldstart_core::store::{meta::Metadata, Store};
use coldstart_core::target::Target;

fn variant(name: &str, readiness: &str) -> Variant {
    Variant {
        name: name.into(),
        target: Target {
            argv: vec!["./bootstrap".into()],
            program: "/var/task/bootstrap".into(),
            env: vec![("MODE".into(), name.into())],
            cwd: None,
            limits: Default::default(),
            container: None,
        },
        readiness: readiness.into(),
        params: Vec::new(),
    }
}

fn meta() -> Metadata {
    Metadata {
        command_line: "coldstart lambda --runtime ./bootstrap".into(),
        git_commit: None,
        git_dirty: None,
        hostname: "test".into(),
        kernel: "6.1".into(),
        cpu_model: "cpu".into(),
        cores: 2,
        loadavg: "0.00".into(),
        coldstart_version: "0.0.0".into(),
    }
}

/// An experiment of two variants with `runs` ready runs each (variant 1 about
/// twice as slow), finished with `stopped` (None: left as a killed run leaves it).
fn store_experiment(
    store: &mut Store,
    variants: &[Variant],
    runs: usize,
    stopped: Option<StopReason>,
) -> i64 {
    let settings = r#"{"runs":"8","warmup":0,"order":"shuffled","timeout_ms":10000,"poll_interval_us":0,"requests":1,"seed":1,"noise":0.01}"#;
    let settings: ExperimentSettings = serde_json::from_str(settings).expect("settings");
    let kind = if variants[0].readiness == "lambda:init" {
        Kind::Lambda
    } else {
        Kind::Bench
    };
    let id = store.begin(&meta(), kind, &settings, variants).expect("begin");
    for round in 0..runs {
        for v in 0..variants.len() {
            let run = RunId {
                variant: v,
                round,
                warmup: false,
            };
            let mut s = Sample::begin(&run, 0);
            s.outcome = Outcome::Ready;
            s.ready_ns = Some(((v as u64 + 1) * 100 + round as u64) * 1_000_000);
            store.add_sample(id, &s).expect("add sample");
        }
    }
    if let Some(reason) = stopped {
        store.finish(id, reason, None).expect("finish");
    }
    id
}

#[test]
fn lambda_and_unprobeable_variants_load_show_and_compare() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let mut store = Store::open(&path).expect("open");
    let lambda = [variant("128MB", "lambda:init"), variant("1769MB", "lambda:init")];
    let https = [
        variant("a", "https://127.0.0.1:8443/health"),
        variant("b", "log:listening on (?P<port>\\d+)"),
    ];
    let lambda_id = store_experiment(&mut store, &lambda, 8, Some(StopReason::Completed));
    let https_id = store_experiment(&mut store, &https, 8, Some(StopReason::TargetCi));
    let killed_id = store_experiment(&mut store, &lambda, 3, None);

    for (id, variants, stopped) in [
        (lambda_id, &lambda, Some(StopReason::Completed)),
        (https_id, &https, Some(StopReason::TargetCi)),
        (killed_id, &lambda, None),
    ] {
        let loaded = store.load(id).expect("load");
        let readiness: Vec<&str> = loaded
            .result
            .variants
            .iter()
            .map(|v| v.readiness.as_str())
            .collect();
        let stored: Vec<&str> = variants.iter().map(|v| v.readiness.as_str()).collect();
        assert_eq!(readiness, stored, "experiment {id}");
        assert_eq!(loaded.result.stopped, stopped, "experiment {id}");
    }
    drop(store);

    let o = cs(&["show", "--store", &path, &lambda_id.to_string()]).run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("ready = lambda:init"), "{}", stdout(&o));
    assert!(
        !stdout(&o).contains("stopped:"),
        "completed says nothing: {}",
        stdout(&o)
    );

    let o = cs(&["show", "--store", &path, &https_id.to_string()]).run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("https://127.0.0.1:8443/health"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("stopped: target-ci"), "{}", stdout(&o));

    let o = cs(&["show", "--store", &path, &killed_id.to_string()]).run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("stopped: incomplete"), "{}", stdout(&o));

    let cmp_json = dir.path().join("cmp.json");
    let o = cs(&[
        "compare",
        "--store",
        &path,
        &format!("{lambda_id}:128MB"),
        &format!("{lambda_id}:1769MB"),
        "--export-json",
        cmp_json.to_str().unwrap(),
    ])
    .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let cmp = json_file(&cmp_json);
    assert_eq!(
        cmp["pairs"][0]["variants"][1]["vs_baseline"]["verdict"], "slower",
        "{cmp}"
    );

    let o = cs(&["history", "--store", &path, "--json"]).run();
    assert!(o.status.success(), "{}", stderr(&o));
    let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let stopped: Vec<&serde_json::Value> = listed.as_array().unwrap().iter().map(|e| &e["stopped"]).collect();
    // Newest first; the killed experiment's column is NULL.
    assert_eq!(
        stopped,
        [
            &serde_json::Value::Null,
            &serde_json::json!("target-ci"),
            &serde_json::json!("completed")
        ]
    );
}
