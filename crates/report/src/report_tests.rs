//! The renderers on one small experiment: terminal and Markdown tables keep their
//! columns, CSV has one row per run, and the JSON export carries every field
//! docs/json-schema.md documents.

use crate::{csv, json, markdown, terminal};
use coldstart_core::analysis::analyze;
use coldstart_core::experiment::ExperimentResult;
use coldstart_core::fixtures::{result, sample};
use coldstart_core::sample::{ExitStatus, Mark, MarkSource};
use std::collections::BTreeSet;

/// base: warmup + 12 ok runs + 1 timeout (exit code 3); cand ("c|d", a name with a
/// Markdown pipe): warmup + 12 ok runs, with a mark, a capture, a metric,
/// requests, a shutdown.
fn experiment() -> ExperimentResult {
    let mut samples = vec![sample(0, 0, true, Some(90.0)), sample(1, 0, true, Some(90.0))];
    for round in 0..12 {
        samples.push(sample(0, round, false, Some(20.0 + round as f64)));
        let mut c = sample(1, round, false, Some(10.0 + round as f64 / 2.0));
        c.marks = vec![Mark::new("config", MarkSource::Checkpoint, 4_000_000)];
        c.captures.insert("port".into(), "8080".into());
        c.metrics.insert("billed_ms".into(), 40.0 + (round % 2) as f64);
        c.requests_ns = vec![3_000_000, 1_000_000];
        c.shutdown_ns = Some(2_000_000);
        samples.push(c);
    }
    let mut failed = sample(0, 12, false, None);
    failed.exit_status = Some(ExitStatus {
        code: Some(3),
        signal: None,
    });
    failed.output_tail = vec!["boom".into()];
    samples.push(failed);
    let mut r = result(samples);
    r.variants[1].name = "c|d".into();
    r.variants[1].target.limits =
        coldstart_core::limits::Limits::parse(Some("0.5"), Some("0"), Some("256M")).expect("limits");
    r
}

fn settings() -> json::Settings {
    json::Settings {
        runs: coldstart_core::experiment::Runs::Fixed(12),
        warmup: 1,
        order: coldstart_core::experiment::Order::Shuffled,
        timeout: std::time::Duration::from_secs(30),
        poll_interval: std::time::Duration::from_micros(200),
        requests: 2,
        seed: 42,
        noise: 0.01,
        sweep: None,
        of_kind: json::KindSettings::default(),
    }
}

#[test]
fn terminal_table_has_a_row_per_variant_and_a_delta_line() {
    let r = experiment();
    let out = terminal::render(&r, &analyze(&r, 0.01));
    let header = out
        .lines()
        .find(|l| l.contains("p50 [95% CI]"))
        .expect("the ready table's header");
    for col in [
        "variant",
        "runs",
        "min",
        "p90",
        "p99",
        "max",
        "mean ± sd",
        "outliers",
    ] {
        assert!(header.contains(col), "{col} missing: {header}");
    }
    assert!(
        out.lines()
            .any(|l| l.contains("base") && l.contains("12 (1 failed)")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("c|d") && l.contains("10.0 ms")),
        "{out}"
    );
    assert_eq!(
        out.matches("Δ ").count(),
        1,
        "one comparison per non-baseline variant: {out}"
    );
    assert!(out.contains("Δ c|d vs base: "), "{out}");
    assert!(
        out.contains("config") && out.contains("12/12"),
        "the marks table: {out}"
    );
    assert!(out.contains("captured port: median 8080 (n = 12)"), "{out}");
    assert!(out.contains("  c|d: billed_ms: median 40.500 (n = 12)"), "{out}");
    assert!(out.contains("1st request") && out.contains("shutdown"), "{out}");
    assert!(
        !out.contains("stopped:"),
        "a completed experiment says nothing: {out}"
    );
    let mut stopped = r.clone();
    stopped.stopped = Some(coldstart_core::experiment::StopReason::Interrupted);
    assert!(terminal::render(&stopped, &analyze(&stopped, 0.01)).contains("stopped: interrupted"));
}

#[test]
fn markdown_rows_keep_nine_columns_with_pipes_escaped() {
    let r = experiment();
    let md = markdown::render(&analyze(&r, 0.01));
    // The first table; the marks table follows the notes.
    let rows: Vec<&str> = md.lines().take_while(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 4, "header, alignment, two variants: {md}");
    for row in &rows {
        // Cells are separated by unescaped pipes.
        let cells = row.replace("\\|", "").matches('|').count() - 1;
        assert_eq!(cells, 9, "{row}");
    }
    assert!(rows[3].starts_with("| c\\|d | 12 |"), "{}", rows[3]);
    assert!(md.contains("- **c\\|d** vs base: "), "{md}");
    // The marks, as in the terminal: base has no `config` mark, so nothing to
    // compare it with (no Δ column).
    let marks: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("| variant | mark |"))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(marks.len(), 3, "header, alignment, one mark: {md}");
    assert!(
        marks[2].starts_with("| c\\|d | config | checkpoint | 4.00 ms"),
        "{}",
        marks[2]
    );
    let none = markdown::render(&analyze(&result(vec![sample(0, 0, false, None)]), 0.01));
    assert!(none.contains("| base | 0 | no successful run |"), "{none}");
}

#[test]
fn csv_has_one_row_per_run_including_warmups_and_failures() {
    let r = experiment();
    let bytes = csv::render(&r).expect("csv");
    let mut reader = ::csv::Reader::from_reader(bytes.as_slice());
    let header: Vec<String> = reader
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    let rows: Vec<::csv::StringRecord> = reader.records().map(|r| r.expect("a well-formed row")).collect();
    assert_eq!(rows.len(), r.samples.len(), "one row per run");
    assert!(rows.iter().all(|row| row.len() == header.len()));
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no {name} column"))
    };
    assert_eq!(rows.iter().filter(|row| &row[col("warmup")] == "true").count(), 2);
    let failed: Vec<&::csv::StringRecord> = rows
        .iter()
        .filter(|row| &row[col("outcome")] == "timeout")
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(&failed[0][col("exit_code")], "3");
    assert_eq!(&failed[0][col("ready_ns")], "", "no ready time for a failed run");
    let cand = rows
        .iter()
        .find(|row| &row[col("variant")] == "c|d" && &row[col("warmup")] == "false")
        .expect("a measured cand row");
    assert_eq!(&cand[col("marks")], "config=4000000");
    assert_eq!(&cand[col("captures")], "port=8080");
    assert!(
        ["billed_ms=40", "billed_ms=41"].contains(&&cand[col("metrics")]),
        "{:?}",
        &cand[col("metrics")]
    );
    assert_eq!(&cand[col("first_request_ns")], "3000000");
}

/// Every key in the documented example object (the ```jsonc block) and every
/// field of the Sample table.
fn documented() -> (BTreeSet<String>, BTreeSet<String>) {
    let doc = std::fs::read_to_string(crate::testkit::repo().join("docs/json-schema.md"))
        .expect("read docs/json-schema.md");
    let block = doc
        .split("```jsonc")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the jsonc example");
    let key = regex::Regex::new(r#""([a-z_0-9]+)"\s*:"#).expect("regex");
    let keys = key.captures_iter(block).map(|c| c[1].to_string()).collect();
    let sample_table = doc
        .split("**Sample**")
        .nth(1)
        .and_then(|t| t.split("\n\n").find(|p| p.contains("| field |")))
        .expect("the Sample table");
    let field = regex::Regex::new(r"`([a-z_0-9]+)(?:\.[a-z_]+)?`").expect("regex");
    let fields = sample_table
        .lines()
        .skip(2)
        .filter_map(|l| l.split('|').nth(1))
        .flat_map(|cell| {
            field
                .captures_iter(cell)
                .map(|c| c[1].to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    (keys, fields)
}

fn keys_of(v: &serde_json::Value, into: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                into.insert(k.clone());
                keys_of(v, into);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| keys_of(v, into)),
        _ => {}
    }
}

/// The experiment's variants as a sweep of `heap` (a resource, compared
/// along): base at 64m/96m, cand at 64m/96m, from the same samples; its JSON export.
fn sweep_export() -> serde_json::Value {
    let mut samples = Vec::new();
    for round in 0..8 {
        for (v, ms) in [(0, 20.0), (1, 30.0), (2, 15.0), (3, 25.0)] {
            samples.push(sample(v, round, false, Some(ms + round as f64 * 0.01)));
        }
    }
    let mut r = result(samples);
    let v = r.variants[0].clone();
    r.variants = ["base", "cand"]
        .iter()
        .flat_map(|b| ["64m", "96m"].map(|h| (b.to_string(), h)))
        .map(|(b, h)| {
            let params = vec![("heap".to_string(), h.to_string())];
            coldstart_core::experiment::Variant {
                name: coldstart_core::experiment::sweep::point_name(&b, &params),
                params,
                ..v.clone()
            }
        })
        .collect();
    let sweep = coldstart_core::experiment::Sweep {
        params: vec![coldstart_core::experiment::Param {
            name: "heap".into(),
            values: vec!["64m".into(), "96m".into()],
            resource: true,
        }],
        compare_along: Some("heap".into()),
    };
    let settings = json::Settings {
        sweep: Some(sweep.clone()),
        ..settings()
    };
    let a = coldstart_core::analysis::analyze_sweep(&r, 0.01, Some(&sweep));
    // The sweep table too: a row per heap, a group per variant.
    let md = markdown::render(&a);
    assert!(md.contains("| heap | base p50 [95% CI] | base vs heap=64m | cand p50 [95% CI] | cand vs base | cand vs heap=64m |"), "{md}");
    assert!(md.contains("| 96m | 30.0 ms"), "{md}");
    let text = terminal::render(&r, &a);
    assert!(
        text.contains("best heap for base: 64m") && text.contains("best heap for cand: 64m"),
        "{text}"
    );
    let csv_text = String::from_utf8(csv::render(&r).expect("csv")).expect("utf-8");
    assert!(csv_text.starts_with("variant,heap,round,"), "{csv_text}");
    assert!(csv_text.contains("\ncand[heap=96m],96m,"), "{csv_text}");
    serde_json::from_str(&json::render(&r, &a, &settings).expect("json")).expect("valid JSON")
}

/// [`experiment`] as a fleet experiment: rounds 0–5 on shard 0 (node-0), 6–11 on
/// shard 1 (host-1, no node name), 3 shards planned.
fn fleet_export() -> serde_json::Value {
    use coldstart_core::experiment::shard::{FleetRecord, Host, ShardRecord};
    let mut r = experiment();
    for s in &mut r.samples {
        s.shard = Some(u32::from(s.round >= 6));
    }
    let shard = |k: u32, node: Option<&str>| ShardRecord {
        index: k,
        attempt: 1 + k,
        source: "JOB_COMPLETION_INDEX".into(),
        host: Host {
            hostname: format!("host-{k}"),
            node: node.map(str::to_string),
            cpu_model: "cpu".into(),
            cores: 4,
            kernel: "6.1.0".into(),
            memory_bytes: Some(8 << 30),
            machine_id: Some(format!("id{k}")),
        },
        started_unix_s: 100,
        ended_unix_s: Some(160),
        stopped: Some("completed".into()),
        runs: 13,
        replaced_runs: 2 * u64::from(k),
    };
    r.fleet = Some(FleetRecord {
        name: "t1".into(),
        count: 3,
        shards: vec![shard(0, Some("node-0")), shard(1, None)],
    });
    let a = analyze(&r, 0.01);
    let text = json::render(&r, &a, &settings()).expect("json");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    // Read back: the record as stored, each run's shard, the blocked comparison.
    let back = &doc["fleet"];
    assert_eq!(back["name"], "t1");
    assert_eq!(back["count"], 3);
    assert_eq!(back["shards"][0]["host"]["node"], "node-0");
    assert!(back["shards"][1]["host"]["node"].is_null());
    assert_eq!(back["shards"][1]["attempt"], 2);
    assert_eq!(back["shards"][1]["replaced_runs"], 2);
    assert_eq!(back["shards"][0]["host"]["memory_bytes"], 8u64 << 30);
    assert_eq!(back["shards"][1]["source"], "JOB_COMPLETION_INDEX");
    assert!(doc["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .all(|s| s["shard"] == u64::from(s["round"].as_u64() >= Some(6))));
    let by = &doc["variants"][1]["stats"]["by_shard"];
    assert_eq!(by["shards"], serde_json::json!([0, 1]));
    assert_eq!(by["machines"], serde_json::json!(["node-0", "host-1"]));
    let expected = a.variants[1]
        .by_shard
        .as_ref()
        .expect("blocked")
        .comparison
        .overall();
    assert_eq!(
        doc["variants"][1]["stats"]["vs_baseline"],
        serde_json::to_value(&expected).expect("json"),
        "vs_baseline is the pooled comparison"
    );
    // Not a fleet experiment: neither field.
    let plain = json::render(&experiment(), &analyze(&experiment(), 0.01), &settings()).expect("json");
    assert!(!plain.contains("\"fleet\"") && !plain.contains("\"by_shard\"") && !plain.contains("\"shard\""));
    doc
}

#[test]
fn json_export_has_every_documented_field() {
    let mut r = experiment();
    // As session::run records it (docs: load).
    let (busy, why) = coldstart_core::experiment::load::classify(
        2,
        &[coldstart_core::experiment::load::Reading {
            load1: 7.9,
            others_runnable: 3,
        }],
    );
    r.load = Some(coldstart_core::experiment::load::Load {
        cpus: 2,
        samples: 1,
        load1_before: 7.9,
        load1_after: 9.1,
        queued_share: 1.0,
        max_others_runnable: 3,
        machine_cpu_busy: Some(0.97),
        runs_cpu_over_wall: Some(0.02),
        busy,
        why,
    });
    let text = json::render(&r, &analyze(&r, 0.01), &settings()).expect("json");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let swept = sweep_export();
    assert_eq!(swept["variants"][3]["params"]["heap"], "96m");
    assert_eq!(swept["variants"][3]["stats"]["baseline"], "base[heap=96m]");
    assert_eq!(swept["variants"][3]["stats"]["first"], "cand[heap=64m]");
    assert_eq!(swept["settings"]["sweep"]["params"][0]["resource"], true);
    assert_eq!(doc["schema"], json::SCHEMA);
    assert_eq!(doc["settings"]["seed"], 42);
    assert_eq!(doc["samples"].as_array().map(Vec::len), Some(r.samples.len()));
    assert_eq!(doc["variants"].as_array().map(Vec::len), Some(2));
    // A tune experiment's settings carry its candidates (docs: settings.tune).
    let tuned = {
        use coldstart_tune::stored::{StoredCandidate, StoredRow, TuneSettings};
        let mut s = settings();
        s.of_kind.tune = Some(TuneSettings {
            runtime: "jvm".into(),
            version: Some("17".into()),
            executable: "/usr/bin/java".into(),
            app: Some("Spring Boot 3.5.7 fat jar app.jar".into()),
            candidates: vec![StoredCandidate {
                id: "appcds".into(),
                title: "AppCDS archive".into(),
                apply: "-XX:SharedArchiveFile=app.jsa".into(),
                shifts_work: true,
                command: "java -XX:SharedArchiveFile=app.jsa -jar app.jar".into(),
                setup: vec!["java -XX:ArchiveClassesAtExit=app.jsa -jar app.jar".into()],
                env: vec!["MALLOC_ARENA_MAX=2".into()],
                caveats: vec!["leave -Dspring.context.exit=onRefresh out".into()],
            }],
            unmeasured: vec![StoredRow {
                id: "bad".into(),
                title: "breaks it".into(),
                status: coldstart_tune::report::Status::Broken {
                    why: "exited 2".into(),
                },
            }],
            recommended_set: true,
        });
        let text = json::render(&r, &analyze(&r, 0.01), &s).expect("json");
        serde_json::from_str::<serde_json::Value>(&text).expect("valid JSON")
    };
    assert_eq!(tuned["settings"]["tune"]["candidates"][0]["id"], "appcds");
    // A lambda experiment's settings (docs: settings.lambda).
    let lambda = {
        use coldstart_lambda::settings::{InitBoost, LambdaSettings, LambdaVariant};
        let mut s = settings();
        s.of_kind.lambda = Some(LambdaSettings {
            function_timeout_ms: 3000,
            init_timeout_ms: 10_000,
            init_boost: Some(InitBoost {
                vcpus: 1.0,
                seconds: 10.0,
            }),
            cgroup: Some("v1".into()),
            invokes: 0,
            variants: vec![LambdaVariant {
                name: "py".into(),
                memory_mb: 512,
                runtime_version: "python:3.11.coldstart".into(),
                runtime: vec!["python3.11".into()],
                handler: "app.handler".into(),
                code: "/code".into(),
                layers: vec![],
                extensions: vec![],
                sandbox: true,
                bare: false,
            }],
        });
        let text = json::render(&r, &analyze(&r, 0.01), &s).expect("json");
        serde_json::from_str::<serde_json::Value>(&text).expect("valid JSON")
    };
    assert_eq!(lambda["settings"]["lambda"]["variants"][0]["memory_mb"], 512);
    // A lambda --aws experiment's settings (docs: settings.lambda_aws).
    let on_service = {
        use coldstart_lambda::settings::{AwsFunction, AwsSettings, AwsVariant};
        let mut s = settings();
        s.of_kind.lambda_aws = Some(AwsSettings {
            endpoint: "http://127.0.0.1:9001".into(),
            parallel: 1,
            functions: vec![AwsFunction {
                name: "fn".into(),
                architecture: "x86_64".into(),
                memory_mb: 128,
                timeout_s: 3,
                layers: vec![],
                env_keys: vec!["A".into()],
                snapstart: false,
            }],
            variants: vec![AwsVariant {
                name: "a".into(),
                function: "fn".into(),
                architecture: "x86_64".into(),
                memory_mb: 256,
                layers: vec![],
                snapstart: false,
                event_bytes: 2,
            }],
            marks: vec!["ready=after (?P<ms>[0-9]+)".into()],
        });
        let text = json::render(&r, &analyze(&r, 0.01), &s).expect("json");
        serde_json::from_str::<serde_json::Value>(&text).expect("valid JSON")
    };
    assert_eq!(
        on_service["settings"]["lambda_aws"]["variants"][0]["memory_mb"],
        256
    );
    let fleet = fleet_export();
    let mut present = BTreeSet::new();
    keys_of(&fleet, &mut present);
    keys_of(&lambda, &mut present);
    keys_of(&on_service, &mut present);
    keys_of(&doc, &mut present);
    keys_of(&swept, &mut present);
    keys_of(&tuned, &mut present);
    let (keys, sample_fields) = documented();
    assert!(keys.len() > 30, "the example was read: {keys:?}");
    let missing: Vec<&String> = keys.difference(&present).collect();
    // `port` is the example's capture name; ours is named the same on purpose.
    assert!(missing.is_empty(), "documented but not exported: {missing:?}");
    let failed = doc["samples"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["outcome"]["kind"] == "timeout"))
        .expect("the failed sample");
    let marked = doc["samples"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s.get("marks").is_some()))
        .expect("a sample with marks");
    for f in &sample_fields {
        assert!(
            failed.get(f).is_some() || marked.get(f).is_some(),
            "Sample field {f} is documented but not exported"
        );
    }
    assert!(
        sample_fields.len() >= 12,
        "the Sample table was read: {sample_fields:?}"
    );
    let stats = &doc["variants"][1]["stats"];
    for summary in ["ready_ms", "cpu_ms"] {
        for f in [
            "n",
            "min",
            "max",
            "mean",
            "sd",
            "p50",
            "p50_ci",
            "p90",
            "p99",
            "p90_reliable",
            "p99_reliable",
            "outliers",
            "outliers_low",
            "outliers_high",
        ] {
            assert!(stats[summary].get(f).is_some(), "Summary {summary}.{f}");
        }
    }
    assert_eq!(stats["metrics"]["billed_ms"]["n"], 12, "{stats}");
    assert!(
        doc["variants"][0]["stats"].get("metrics").is_none(),
        "omitted when no run measured any"
    );
    for f in ["ratio", "shift", "mann_whitney", "verdict"] {
        assert!(stats["vs_baseline"].get(f).is_some(), "Comparison.{f}");
    }
}

/// One variant swept over `memory` 128/512/1769 with these per-value times per
/// round; the best-value line it gets.
fn best_memory_line(times: impl Fn(usize, usize) -> f64) -> (String, coldstart_core::analysis::BestWhy) {
    best_memory_line_runs(6, times)
}

fn best_memory_line_runs(
    runs: usize,
    times: impl Fn(usize, usize) -> f64,
) -> (String, coldstart_core::analysis::BestWhy) {
    let mut samples = Vec::new();
    for round in 0..runs {
        for v in 0..3 {
            samples.push(sample(v, round, false, Some(times(v, round))));
        }
    }
    let mut r = result(samples);
    let v = r.variants[0].clone();
    let values = ["128", "512", "1769"];
    r.variants = values
        .iter()
        .map(|m| {
            let params = vec![("memory".to_string(), m.to_string())];
            coldstart_core::experiment::Variant {
                name: coldstart_core::experiment::sweep::point_name("fn", &params),
                params,
                ..v.clone()
            }
        })
        .collect();
    let sweep = coldstart_core::experiment::Sweep {
        params: vec![coldstart_core::experiment::Param {
            name: "memory".into(),
            values: values.iter().map(|s| s.to_string()).collect(),
            resource: true,
        }],
        compare_along: Some("memory".into()),
    };
    let a = coldstart_core::analysis::analyze_sweep(&r, 0.01, Some(&sweep));
    let text = terminal::render(&r, &a);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("best memory for fn: "))
        .unwrap_or_else(|| panic!("no best line:\n{text}"))
        .trim()
        .to_string();
    (line, a.best[0].why)
}

/// The best value is the cheapest the runs do not show to be slower: medians
/// 6 % apart with a spread of ±40 % cannot be told apart, so the cheapest wins
/// (a trial run named the dearest "the cheapest" here); clearly separated ones
/// leave the fastest.
#[test]
fn best_value_is_the_cheapest_not_measurably_slower() {
    use coldstart_core::analysis::BestWhy;
    let spread = [-80.0, 80.0, -40.0, 40.0, 0.0, 10.0];
    let (line, why) = best_memory_line(|v, round| [195.0, 189.0, 183.0][v] + spread[round]);
    assert_eq!(why, BestWhy::NotMeasurablySlower, "{line}");
    assert!(line.starts_with("best memory for fn: 128 "), "{line}");
    assert!(
        line.contains("not measurably slower than the fastest, 1769"),
        "{line}"
    );
    let (line, why) = best_memory_line(|v, round| [300.0, 150.0, 100.0][v] + round as f64 * 0.1);
    assert_eq!(why, BestWhy::Fastest, "{line}");
    assert!(line.starts_with("best memory for fn: 1769 "), "{line}");
    assert!(
        line.contains("every cheaper value is measurably slower"),
        "{line}"
    );
    // Three runs a point: no interval, so no verdict and no best value (it named
    // the dearest value "the fastest; every cheaper value is measurably slower").
    let (line, why) = best_memory_line_runs(3, |v, round| [300.0, 150.0, 100.0][v] + round as f64 * 0.1);
    assert_eq!(why, BestWhy::NoVerdict, "{line}");
    assert!(line.contains("none can be named yet"), "{line}");
    assert!(!line.contains("measurably slower"), "{line}");
}

/// A dagger in the resource table always has its footnote: a variant with no
/// successful run shows nothing there, not an unexplained "n/a †".
#[test]
fn no_dagger_without_its_footnote() {
    let samples = (0..3)
        .flat_map(|round| [sample(0, round, false, None), sample(1, round, false, None)])
        .collect();
    let r = result(samples);
    let text = terminal::render(&r, &analyze(&r, 0.01));
    assert!(
        !text.contains('†') || text.contains("† peak RSS not measurable"),
        "{text}"
    );
}
