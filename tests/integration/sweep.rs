//! A sweep of a real JVM: the Java example server at three -Xmx values × two
//! variants (C2, and C1 only with -XX:TieredStopAtLevel=1), interleaved. Checks
//! the sweep table's shape, that each variant is compared with the baseline at
//! the same heap (and along the heap with --compare-along), the parameters in the
//! JSON and CSV exports, and that stored sweep points are addressed as
//! `latest:c1[heap=96m]` by compare, gate, show and history (SQLite, and
//! PostgreSQL when COLDSTART_TEST_POSTGRES is set).

use crate::common::*;
use std::process::Command;

const HEAPS: [&str; 3] = ["64m", "96m", "128m"];

/// The example server's classes, compiled once under target/.
fn server_classes() -> Option<String> {
    let javac = testkit::tool("JAVA", "javac")?;
    testkit::tool("JAVA", "java")?;
    let src = repo().join("examples/java/Server.java");
    let dir = testkit::built("sweep-java-server", &[&src], |out| {
        let mut c = Command::new(&javac);
        c.arg("-d").arg(out).arg(&src);
        c
    });
    Some(dir.display().to_string())
}

#[test]
fn a_heap_sweep_of_a_jvm_is_compared_per_heap_and_stored_as_points() {
    let _turn = crate::common::beside();
    let Some(classes) = server_classes() else {
        return;
    };
    for (dir, store) in stores("sweep") {
        let json = dir.path().join("sweep.json");
        let csv = dir.path().join("sweep.csv");
        let md = dir.path().join("sweep.md");
        let o = cs(&[
            "bench",
            "--store",
            &store,
            "--runs",
            "3",
            "--warmup",
            "1",
            "--param",
            &format!("heap={}", HEAPS.join(",")),
            "--resource",
            "heap",
            "--compare-along",
            "heap",
            "--env",
            "PORT=0",
            "--ready",
            "log:^listening on",
            "--timeout",
            "60",
            "--export-json",
            json.to_str().unwrap(),
            "--export-csv",
            csv.to_str().unwrap(),
            "--export-markdown",
            md.to_str().unwrap(),
            "--name",
            "c2",
            "--",
            "java",
            "-Xmx{heap}",
            "-cp",
            &classes,
            "Server",
            "--name",
            "c1",
            "--",
            "java",
            "-Xmx{heap}",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            &classes,
            "Server",
        ])
        .run();
        let text = stdout(&o);
        assert!(o.status.success(), "{text}\n{}", stderr(&o));

        // The sweep table: a header naming the parameter and both column groups,
        // then exactly one row per heap, in the order given.
        let lines: Vec<&str> = text.lines().collect();
        let head = lines
            .iter()
            .position(|l| l.contains("c2 p50 [95% CI]"))
            .unwrap_or_else(|| panic!("no sweep table:\n{text}"));
        let header = lines[head];
        let groups = [
            "heap",
            "c2 p50 [95% CI]",
            "c2 vs heap=64m",
            "c1 p50 [95% CI]",
            "c1 vs c2",
            "c1 vs heap=64m",
        ];
        let at: Vec<usize> = groups
            .iter()
            .map(|g| {
                header
                    .find(g)
                    .unwrap_or_else(|| panic!("no column '{g}' in {header}"))
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "column order: {header}");
        let rows: Vec<&str> = lines[head + 1..]
            .iter()
            .take_while(|l| !l.trim().is_empty() && !l.trim_start().starts_with("best"))
            .filter(|l| l.trim_start().chars().next().is_some_and(|c| c.is_ascii_digit()))
            .copied()
            .collect();
        let first_cells: Vec<&str> = rows.iter().filter_map(|r| r.split_whitespace().next()).collect();
        assert_eq!(first_cells, HEAPS, "one row per heap:\n{text}");
        // The first heap is where "along" starts; the others are compared with it.
        assert_eq!(rows[0].matches("first").count(), 2, "{}", rows[0]);
        for r in &rows[1..] {
            assert!(!r.contains("first"), "{r}");
        }
        // Per-heap comparisons, never across heaps.
        for h in HEAPS {
            assert!(
                text.contains(&format!("Δ c1[heap={h}] vs c2[heap={h}]: ")),
                "{h}:\n{text}"
            );
        }
        assert_eq!(text.matches("Δ c1[").count(), 3, "{text}");
        for v in ["c2", "c1"] {
            let best = lines
                .iter()
                .find(|l| l.trim_start().starts_with(&format!("best heap for {v}: ")))
                .unwrap_or_else(|| panic!("no best line for {v}:\n{text}"));
            // A heap is named best only with verdicts between the heaps (≥ 4
            // runs a point give an interval; on a busy machine the medians
            // alone do not decide); else it says none can be named yet.
            assert!(
                HEAPS.iter().any(|h| best.contains(&format!(": {h} ")))
                    || best.contains("none can be named yet"),
                "{best}"
            );
        }

        // JSON: the parameters as data, the baseline each point was compared with.
        let doc = json_file(&json);
        let variants = doc["variants"].as_array().unwrap();
        assert_eq!(variants.len(), 6);
        for v in variants {
            let name = v["name"].as_str().unwrap();
            let heap = v["params"]["heap"].as_str().unwrap();
            assert!(name.ends_with(&format!("[heap={heap}]")), "{name}");
            let argv: Vec<&str> = v["target"]["argv"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect();
            assert!(argv.contains(&format!("-Xmx{heap}").as_str()), "{argv:?}");
            if name.starts_with("c1") {
                assert_eq!(v["stats"]["baseline"], format!("c2[heap={heap}]"));
                assert!(v["stats"]["vs_baseline"]["verdict"].is_string());
            } else {
                assert!(v["stats"]["vs_baseline"].is_null(), "{name} is a baseline");
            }
        }
        assert_eq!(doc["settings"]["sweep"]["params"][0]["name"], "heap");
        assert_eq!(doc["settings"]["sweep"]["params"][0]["resource"], true);
        assert_eq!(doc["best"].as_array().map(Vec::len), Some(2));
        // CSV: a `heap` column beside the variant.
        let csv_text = std::fs::read_to_string(&csv).unwrap();
        let mut csv_lines = csv_text.lines();
        assert!(csv_lines.next().unwrap().starts_with("variant,heap,round,"));
        assert!(csv_lines.all(|l| HEAPS.iter().any(|h| l.contains(&format!("[heap={h}],{h},")))));
        let md_text = std::fs::read_to_string(&md).unwrap();
        assert!(md_text.contains("| heap | c2 p50 [95% CI] |"), "{md_text}");

        // Stored points, by reference.
        let o = cs(&[
            "compare",
            "--store",
            &store,
            "latest:c2[heap=96m]",
            "latest:c1[heap=96m]",
        ])
        .run();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("c2[heap=96m]@") && stdout(&o).contains("c1[heap=96m]@"));
        // Every variant at one heap against the same variant at another.
        let o = cs(&[
            "compare",
            "--store",
            &store,
            "latest:[heap=64m]",
            "latest:[heap=128m]",
        ])
        .run();
        assert!(o.status.success(), "{}", stderr(&o));
        for v in ["c2", "c1"] {
            assert!(
                stdout(&o).contains(&format!("Δ {v}[heap=128m]@")),
                "{}",
                stdout(&o)
            );
        }
        let o = cs(&[
            "gate",
            "--store",
            &store,
            "--baseline",
            "latest:c2[heap=128m]",
            "--candidate",
            "latest:c1[heap=128m]",
            "--max",
            "600s",
        ])
        .run();
        assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
        assert!(
            stdout(&o).contains("c2[heap=128m] → c1[heap=128m]"),
            "{}",
            stdout(&o)
        );
        let o = cs(&["show", "--store", &store, "latest:[heap=64m]"]).run();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("c1[heap=64m]") && !stdout(&o).contains("heap=96m"));
        let o = cs(&["history", "--store", &store, "--target", "c1[heap=64m]", "--json"]).run();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&stdout(&o))
                .unwrap()
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        let o = cs(&[
            "compare",
            "--store",
            &store,
            "latest:c1[heap=1g]",
            "latest:c2[heap=64m]",
        ])
        .run();
        assert_eq!(o.status.code(), Some(2));
        assert!(
            stderr(&o).contains("no variant 'c1[heap=1g]' (it has: c2[heap=64m]"),
            "{}",
            stderr(&o)
        );
    }
}

/// Bad sweeps fail before anything runs, in one line.
#[test]
fn sweep_mistakes_fail_before_any_run() {
    let _turn = crate::common::beside();
    let marker = marker("sweep-mistake");
    for (args, says) in [
        (
            vec!["--param", "heap=64m", "--", "sh", "-c", "true"],
            "--param heap is used nowhere",
        ),
        (
            vec!["--param", "heap=64m", "--", "echo", "-Xmx{hepa}"],
            "unknown parameter {hepa}",
        ),
    ] {
        let mut full = vec!["bench", "--env", &marker];
        full.extend(args);
        let o = cs(&full).no_store().run();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
        assert_eq!(stderr(&o).trim_end().lines().count(), 1, "{}", stderr(&o));
        assert!(stdout(&o).is_empty());
    }
}
