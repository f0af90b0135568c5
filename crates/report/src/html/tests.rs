//! The HTML report on synthetic models: sections appear exactly where their data
//! is, names are escaped, nothing points outside the file, and the size of a
//! 20-variant × 200-run experiment. The real experiments, in a real browser, are
//! tests/integration/html_report.rs.

use super::*;
use coldstart_core::analysis::analyze;
use coldstart_core::experiment::{StopReason, Variant};
use coldstart_core::fixtures::sample;
use coldstart_core::sample::{Mark, MarkSource};
use coldstart_core::target::Target;

fn variant(name: &str, readiness: &str) -> Variant {
    Variant {
        name: name.into(),
        target: Target::new(vec!["true".into(), "--port".into(), "8080".into()], vec![], None)
            .expect("true is on PATH"),
        readiness: readiness.into(),
        params: Vec::new(),
    }
}

/// `names.len()` variants × `runs` interleaved runs; variant i is ~ (10 + 3 i) ms.
fn model(names: &[&str], readiness: &str, runs: usize) -> ExperimentResult {
    let mut samples = Vec::new();
    for round in 0..runs {
        for (v, _) in names.iter().enumerate() {
            let wobble = ((round * 7919 + v * 104_729) % 97) as f64 / 97.0;
            let ms = 10.0 + 3.0 * v as f64 + wobble + if round == 3 { 9.0 } else { 0.0 };
            samples.push(sample(v, round, false, Some(ms)));
        }
    }
    ExperimentResult {
        variants: names.iter().map(|n| variant(n, readiness)).collect(),
        samples,
        stopped: Some(StopReason::Completed),
        design: coldstart_core::stats::Design::Interleaved,
        load: None,
        fleet: None,
    }
}

fn page(r: &ExperimentResult, a: &Analysis) -> String {
    render(&Report {
        title: "t".into(),
        experiments: vec![Experiment {
            heading: "Experiment 1".into(),
            id: Some(1),
            created_unix_s: Some(0),
            meta: None,
            settings: None,
            result: r,
            analysis: a,
            explanation: None,
            tuned: None,
        }],
        history: Vec::new(),
        gate: None,
    })
}

fn sections(html: &str) -> Vec<String> {
    html.split("data-section=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next().map(str::to_string))
        .collect()
}

#[test]
fn one_variant_has_no_comparison_sweep_lambda_or_waterfall() {
    let r = model(&["only"], "exit", 12);
    let html = page(&r, &analyze(&r, 0.01));
    assert_eq!(sections(&html), ["settings", "distribution", "runs"]);
}

#[test]
fn ab_has_a_comparison_in_words_and_the_outlier_is_marked() {
    let r = model(&["a", "b"], "exit", 30);
    let html = page(&r, &analyze(&r, 0.01));
    assert_eq!(
        sections(&html),
        ["settings", "distribution", "runs", "comparisons"]
    );
    assert!(html.contains("b starts 3.0"), "the verdict in words");
    assert!(html.contains("slower than a; 95 % CI "));
    // Round 3 is 9 ms slow in both variants: an outlier dot each in the strip and the runs chart.
    assert!(html.matches("class=\"out\"").count() >= 2, "outliers marked");
}

#[test]
fn lambda_memory_sizes_are_a_sweep_and_lanes_come_from_marks() {
    let mut r = model(&["fn@128MB", "fn@512MB", "fn@1024MB"], "lambda:init", 8);
    for s in &mut r.samples {
        s.marks = vec![
            Mark::new("ext.logs.register", MarkSource::Lambda, 1_000_000),
            Mark::new("runtime_ready", MarkSource::Lambda, 6_000_000),
            Mark::new("ext.logs.ready", MarkSource::Lambda, 4_000_000),
        ];
    }
    let html = page(&r, &analyze(&r, 0.01));
    let s = sections(&html);
    assert!(
        s.contains(&"sweep".to_string()) && s.contains(&"lambda".to_string()),
        "{s:?}"
    );
    assert!(html.contains("Init Duration per memory size"));
    assert!(html.contains("memory (MB)") && html.contains(">1024<"));
    assert!(html.contains("extension logs"), "a lane per extension");
}

#[test]
fn a_parameter_sweep_draws_one_line_per_group() {
    // What bench's sweeps give: variants carrying (name, value) lists.
    let r = model(&["a1", "a2", "a4", "b1", "b2", "b4"], "exit", 10);
    let a = analyze(&r, 0.01);
    let params: Vec<(String, Vec<(String, String)>)> = ["a", "b"]
        .iter()
        .flat_map(|g| ["1", "2", "4"].map(|t| (g.to_string(), vec![("threads".to_string(), t.to_string())])))
        .collect();
    let sweeps = sweep::from_params(&params, &a);
    assert_eq!(sweeps.len(), 1);
    assert!(sweeps[0].numeric);
    assert_eq!(sweeps[0].lines.len(), 2);
    assert_eq!(sweeps[0].lines[0].points.len(), 3);
    let html = sweep::render("e", &sweeps, false).into_string();
    assert!(html.contains("data-section=\"sweep\"") && html.contains("against threads"));
    assert_eq!(html.matches("<polygon").count(), 2, "a CI band per line");
    // One value only is no sweep.
    let flat: Vec<_> = params
        .iter()
        .map(|(g, _)| (g.clone(), vec![("threads".to_string(), "1".to_string())]))
        .collect();
    assert!(sweep::from_params(&flat, &a).is_empty());
}

#[test]
fn names_are_escaped_and_nothing_points_outside_the_file() {
    let r = model(&["<script>alert(1)</script>", "b\"&"], "exit", 12);
    let html = page(&r, &analyze(&r, 0.01));
    assert!(!html.contains("<script>alert"), "escaped");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_eq!(html.matches("<script").count(), 1, "only our own inline script");
    assert!(html.contains("Content-Security-Policy"));
    for bad in ["src=", "<link", "url(", "@import", "https://"] {
        assert!(!html.contains(bad), "{bad} in the page");
    }
    // The only http:// is the SVG namespace name (an identifier, never fetched).
    assert_eq!(
        html.matches("http://").count(),
        html.matches("http://www.w3.org/2000/svg").count()
    );
    assert!(
        html.split("href=\"").skip(1).all(|h| h.starts_with('#')),
        "links stay inside the page"
    );
}

#[test]
fn size_of_a_20_variant_200_run_experiment() {
    let names: Vec<String> = (0..20).map(|i| format!("variant-{i:02}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let r = model(&refs, "exit", 200);
    let html = page(&r, &analyze(&r, 0.01));
    assert!(html.matches("<circle").count() >= 4000, "a dot per run");
    eprintln!(
        "20 variants × 200 runs: {} bytes ({} KiB)",
        html.len(),
        html.len() / 1024
    );
    assert!(html.len() < 1_500_000, "{} bytes", html.len());
}

#[test]
fn a_tune_experiment_has_its_table_from_the_settings() {
    // settings.tune as docs/json-schema.md documents it.
    let settings: Settings = serde_json::from_str(
        r#"{"runs":"6","warmup":0,"order":"shuffled","timeout_ms":1000,"poll_interval_us":200,
            "requests":0,"seed":1,"noise":0.01,
            "tune":{"runtime":"native","executable":"/bin/true",
                    "candidates":[{"id":"slow","title":"Slow <flag>","apply":"SLOW=1 ./app"}],
                    "unmeasured":[{"id":"bad","title":"Breaks it","status":{"kind":"broken","why":"exited 2\n  | boom"}}]}}"#,
    )
    .expect("the documented settings.tune parses");
    let r = model(&["baseline", "tune:slow"], "exit", 30);
    let a = analyze(&r, 0.01);
    let html = render(&Report {
        title: "t".into(),
        experiments: vec![Experiment {
            heading: "Experiment 1".into(),
            id: Some(1),
            created_unix_s: Some(0),
            meta: None,
            settings: Some(&settings),
            result: &r,
            analysis: &a,
            explanation: None,
            // The table is tune's model, drawn by the renderer.
            tuned: settings
                .of_kind
                .tune
                .as_ref()
                .and_then(|t| coldstart_tune::stored::tuned(t, &r, &a, settings.noise)),
        }],
        history: Vec::new(),
        gate: None,
    });
    assert_eq!(
        sections(&html),
        ["settings", "distribution", "runs", "comparisons", "tune"]
    );
    let tune = &html[html.find("data-section=\"tune\"").unwrap()..];
    // +3 ms of ~11 ms: slower, with its effect and CI; the broken one after it.
    let slow = tune.find("data-status=\"slower\"").expect("the slower row");
    let broken = tune.find("data-status=\"broken\"").expect("the broken row");
    assert!(slow < broken, "{tune}");
    assert!(tune.contains("Slow &lt;flag&gt;"), "escaped title: {tune}");
    assert!(tune.contains("❌") && tune.contains("💥"), "{tune}");
    assert!(tune.contains("broken: exited 2"), "{tune}");
    assert!(tune.contains(" %] ") || tune.contains(" %]<"), "a CI: {tune}");
    // Only a winner's apply line is shown, as in the terminal.
    assert!(!tune.contains("SLOW=1 ./app"), "{tune}");
}

/// A fleet experiment: `effect_ms[k]` is b's shift against a on shard k (shard k's
/// machine is 10 ms × (k + 1) slower than the first), 12 rounds per shard.
fn fleet_model(effect_ms: &[f64]) -> ExperimentResult {
    use coldstart_core::experiment::shard::{FleetRecord, Host, ShardRecord};
    let mut r = model(&["a", "b"], "exit", 0);
    for (k, effect) in effect_ms.iter().enumerate() {
        for round in 0..12 {
            for v in 0..2 {
                let wobble = ((round * 7919 + v * 104_729 + k * 31) % 97) as f64 / 97.0;
                let ms = 10.0 * (k + 1) as f64 + wobble + if v == 1 { *effect } else { 0.0 };
                let mut s = sample(v, round, false, Some(ms));
                s.shard = Some(k as u32);
                r.samples.push(s);
            }
        }
    }
    r.fleet = Some(FleetRecord {
        name: "t1".into(),
        count: effect_ms.len() as u32 + 1,
        shards: (0..effect_ms.len())
            .map(|k| ShardRecord {
                index: k as u32,
                attempt: 1,
                source: "--shard".into(),
                host: Host {
                    hostname: format!("host-{k}"),
                    node: Some(format!("node-{k}")),
                    cpu_model: "cpu".into(),
                    cores: 2,
                    kernel: "6.1".into(),
                    memory_bytes: None,
                    machine_id: None,
                },
                started_unix_s: 0,
                ended_unix_s: Some(1),
                stopped: Some("completed".into()),
                runs: 24,
                replaced_runs: 0,
            })
            .collect(),
    });
    r
}

#[test]
fn a_fleet_experiment_has_a_per_machine_section() {
    let r = fleet_model(&[3.0, 3.0, 3.0]);
    let a = analyze(&r, 0.01);
    let html = page(&r, &a);
    assert_eq!(
        sections(&html),
        ["settings", "distribution", "runs", "comparisons", "machines"]
    );
    let m = &html[html.find("data-section=\"machines\"").expect("the section")..];
    assert!(
        m.contains("3 of 4 shards of fleet experiment 't1', run on node-0, node-1, node-2"),
        "{m}"
    );
    // A row per shard, named by its machine, then the pooled row.
    for k in 0..3 {
        assert!(m.contains(&format!("data-shard=\"{k}\"")), "shard {k}");
        assert!(m.contains(&format!(">node-{k}<")), "node-{k}");
    }
    assert_eq!(m.matches("<tr data-shard=").count(), 3);
    assert!(m.contains("pooled over 3 machines"));
    assert!(
        m.contains("12 / 12") && m.contains("36 / 36"),
        "runs per shard and pooled"
    );
    // The forest plot: a square per shard, the pooled diamond.
    assert_eq!(m.matches("class=\"shard\"").count(), 3);
    assert_eq!(m.matches("<polygon class=\"pooled\"").count(), 1);
    assert!(m.contains("van Elteren") && m.contains("I² = ") && m.contains("Cochran's Q"));
    assert!(!m.contains("Machines disagree"));
    // The pooled row says what the analysis pooled.
    let pooled = a.variants[1]
        .by_shard
        .as_ref()
        .expect("blocked")
        .comparison
        .overall();
    assert!(m.contains(&crate::fleet::interval(&pooled)));
    // Without shards, no such section.
    let plain = model(&["a", "b"], "exit", 12);
    assert!(!sections(&page(&plain, &analyze(&plain, 0.01))).contains(&"machines".to_string()));
}

#[test]
fn machines_that_disagree_are_said_in_a_sentence() {
    let r = fleet_model(&[-3.0, 3.0]);
    let html = page(&r, &analyze(&r, 0.01));
    assert!(
        html.contains("Machines disagree: b is faster than a on node-0 and slower on node-1."),
        "{html}"
    );
}
