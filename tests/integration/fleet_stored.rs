//! The commands over stored experiments on a fleet experiment (shards run as
//! local processes into one store): `history` marks it with its shards done/N,
//! `show --export-json` carries the fleet record and each comparison per shard,
//! `compare NAME:A NAME:B` makes the comparison blocked by shard (bench's own,
//! per machine), `gate` decides on the interval pooled over machines and says
//! so, and two separate experiments stay separate invocations (no verdict).
//! Every test runs against SQLite and, when COLDSTART_TEST_POSTGRES names a
//! server, against PostgreSQL too.

use crate::common::*;
use serde_json::Value;

/// `--name fast` (20 ms) and `--name slow` (45 ms) of the example sleeper: a
/// gap wide enough to be "slower" on a loaded shared VM.
fn variants() -> Vec<String> {
    let sleeper = example("sleeper");
    let mut v = Vec::new();
    for (name, ms) in [("fast", 20), ("slow", 45)] {
        v.extend([
            "--name".to_string(),
            name.to_string(),
            "--env".into(),
            format!("COLDSTART_EXAMPLE_DELAY_MS={ms}"),
            "--".into(),
            sleeper.clone(),
        ]);
    }
    v
}

/// Shards `shards` of N=4 of fleet experiment `name`, one process each, in turn.
fn run_shards(store: &str, name: &str, shards: &[u32]) {
    for k in shards {
        let shard = format!("{k}/4");
        cs(&[
            "bench",
            "--shard",
            &shard,
            "--experiment",
            name,
            "--store",
            store,
            "--runs",
            "6",
        ])
        .args(variants())
        .quiet()
        .ok();
    }
}

fn history_json(store: &str) -> Vec<Value> {
    let o = cs(&["history", "--store", store, "--json"]).ok();
    o.json().as_array().expect("a list").clone()
}

#[test]
fn history_show_compare_and_gate_of_a_fleet_experiment() {
    let _turn = crate::common::beside();
    for (dir, store) in stores("fleetview") {
        // Three of four shards: the fourth never started.
        run_shards(&store, "fv", &[0, 1, 2]);

        // history: the fleet's name and shards done/N, in the table and --json.
        let o = cs(&["history", "--store", &store]).ok();
        assert!(
            o.stdout().contains("(fleet fv, 3/4 shards)"),
            "{store}: {}",
            o.stdout()
        );
        let listed = history_json(&store);
        let fv = listed
            .iter()
            .find(|l| l["fleet"] == "fv")
            .expect("the fleet experiment");
        assert_eq!(
            fv["fleet_shards"],
            serde_json::json!({ "count": 4, "done": 3, "running": 0, "missing": [3] }),
            "{store}"
        );

        // show --export-json: the fleet record read back, and the comparison per shard.
        let show_json = dir.path().join("show.json");
        cs(&["show", "--store", &store, "fv", "--export-json"])
            .arg(&show_json)
            .ok();
        let show = json_file(&show_json);
        let fleet = &show["fleet"];
        assert_eq!(fleet["name"], "fv", "{store}: {fleet}");
        assert_eq!(fleet["count"], 4);
        let shards = fleet["shards"].as_array().expect("shards");
        let indices: Vec<u64> = shards.iter().filter_map(|s| s["index"].as_u64()).collect();
        assert_eq!(indices, [0, 1, 2]);
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        for s in shards {
            assert_eq!(s["attempt"], 1);
            assert_eq!(s["stopped"], "completed");
            assert_eq!(s["runs"], 12, "6 runs of each variant: {s}");
            assert_eq!(s["host"]["hostname"], hostname.trim(), "{s}");
            assert!(s["host"]["cores"].as_u64().is_some_and(|c| c >= 1), "{s}");
            assert!(s["started_unix_s"].is_i64() && s["ended_unix_s"].is_i64(), "{s}");
        }
        for s in show["samples"].as_array().expect("samples") {
            assert!(s["shard"].as_u64().is_some_and(|k| k < 3), "{s}");
        }
        let stats = &show["variants"][1]["stats"];
        let by = &stats["by_shard"];
        assert_eq!(by["shards"], serde_json::json!([0, 1, 2]), "{by}");
        assert_eq!(by["machines"].as_array().map(Vec::len), Some(3));
        assert_eq!(by["comparison"]["blocks"].as_array().map(Vec::len), Some(3));
        assert!(by["comparison"]["van_elteren"]["p_value"].is_f64(), "{by}");
        assert!(by["comparison"]["heterogeneity"]["i2"].is_number(), "{by}");
        // vs_baseline is the pooled comparison.
        let vs = &stats["vs_baseline"];
        assert_eq!(vs["verdict"], "slower", "{store}: {vs}");
        assert_eq!(vs["verdict"], by["comparison"]["verdict"]);
        assert_eq!(
            vs["relative"]["estimate"],
            by["comparison"]["relative"]["estimate"]
        );
        assert_eq!(vs["relative"]["ci"], by["comparison"]["relative"]["ci"]);
        assert!(vs["mann_whitney"].is_null(), "pooled: the test is van Elteren's");

        // compare NAME:A NAME:B: bench's blocked comparison, machines named.
        let cmp_json = dir.path().join("cmp.json");
        let o = cs(&[
            "compare",
            "--store",
            &store,
            "fv:fast",
            "fv:slow",
            "--export-json",
        ])
        .arg(&cmp_json)
        .ok();
        assert!(
            o.stdout().contains("per machine (shard): pooled slower"),
            "{}",
            o.stdout()
        );
        let cmp = json_file(&cmp_json);
        let pair = &cmp["pairs"][0]["variants"][1];
        assert_eq!(
            pair["vs_baseline"], *vs,
            "{store}: the stored experiment's own comparison"
        );
        assert_eq!(pair["by_shard"]["comparison"], by["comparison"]);
        assert_eq!(
            pair["by_shard"]["machines"], by["machines"],
            "machines named, not unknown"
        );

        // gate: decided on the pooled interval, which it names.
        let gate = |limit: &str| {
            cs(&[
                "gate",
                "--store",
                &store,
                "--baseline",
                "fv:fast",
                "--candidate",
                "fv:slow",
                "--max-regression",
                limit,
            ])
            .run()
        };
        let o = gate("10%");
        assert_eq!(o.code(), Some(1), "{store}: {}", o.streams());
        let md = o.stdout();
        assert!(
            md.contains("❌ fail") && md.contains("(pooled over 3 machines)"),
            "{md}"
        );
        assert!(
            md.contains("with the whole 95% CI") && md.contains("beyond the +10 % limit"),
            "{md}"
        );
        assert!(
            md.contains("decided on the 95% interval pooled over 3 machines (shards 0, 1, 2"),
            "{md}"
        );
        // The table's interval is the pooled one.
        let (lo, hi) = (
            vs["relative"]["ci"][0].as_f64().unwrap(),
            vs["relative"]["ci"][1].as_f64().unwrap(),
        );
        // As the report writes a signed percentage (crates/report/src/format.rs).
        let pct = |f: f64| {
            let p = f * 100.0;
            let d = if p.abs() >= 10.0 { 0 } else { 1 };
            if p >= 0.0 {
                format!("+{p:.d$} %")
            } else {
                format!("−{:.d$} %", -p)
            }
        };
        assert!(
            md.contains(&format!("[{}, {}]", pct(lo), pct(hi))),
            "{md}\n{lo} {hi}"
        );
        // Incomplete while shard 3 never started, and it says so.
        let o = gate("400%");
        assert_eq!(o.code(), Some(1), "{store}: {}", o.streams());
        assert!(
            o.stdout().contains(
                "is incomplete: it is a fleet experiment with 3 of 4 shards done, shard 3 never started"
            ),
            "{}",
            o.stdout()
        );
        run_shards(&store, "fv", &[3]);
        let o = gate("400%");
        assert_eq!(o.code(), Some(0), "{store}: {}", o.streams());
        assert!(o.stdout().contains("pooled over 4 machines"), "{}", o.stdout());

        // A second, plain experiment: against the fleet one, separate invocations.
        cs(&["bench", "--store", &store, "--runs", "6"])
            .args(variants())
            .quiet()
            .ok();
        let sep_json = dir.path().join("sep.json");
        let o = cs(&[
            "compare",
            "--store",
            &store,
            "fv:slow",
            "latest:slow",
            "--export-json",
        ])
        .arg(&sep_json)
        .ok();
        assert!(!o.stdout().contains("per machine"), "{}", o.stdout());
        let sep = json_file(&sep_json);
        let c = &sep["pairs"][0]["variants"][1];
        assert!(c.get("by_shard").is_none(), "{c}");
        assert_eq!(c["vs_baseline"]["design"], "separate");
        assert_eq!(c["vs_baseline"]["verdict"], "none");
        let o = cs(&[
            "gate",
            "--store",
            &store,
            "--baseline",
            "fv:slow",
            "--candidate",
            "latest:slow",
            "--max-regression",
            "10%",
        ])
        .run();
        assert_eq!(o.code(), Some(2), "refused across invocations: {}", o.streams());
    }
}
