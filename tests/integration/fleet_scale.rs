//! Many shard writers into one PostgreSQL experiment at once, with no
//! coordinator but the database: none of their runs is lost or stored twice.
//! Not a timing test (bench/fleet_store.py measures the cost per run). Built
//! with the `postgres` feature only: without it there is no shared store to
//! scale (store.rs tests that such a binary refuses a PostgreSQL spec), and the
//! database itself is the oracle here. Without a server the tests say SKIPPED.
#![cfg(feature = "postgres")]

use crate::common::*;
use std::collections::BTreeMap;
use std::process::Stdio;

const SHARDS: u32 = 64;
const RUNS: u32 = 3;
const VARIANTS: u32 = 2;

#[test]
fn sixty_four_shard_processes_lose_and_duplicate_no_run() {
    let _turn = beside();
    let Some((_dir, dsn)) = testkit::postgres_store("fleet_scale", true) else {
        return;
    };
    let name = format!("scale-{}", std::process::id());
    // All started before any is waited for: the first shards race to create the
    // experiment while the others join it and write their runs beside them.
    let children: Vec<_> = (0..SHARDS)
        .map(|k| {
            let mut c = shard(k, SHARDS, RUNS, &name, &dsn);
            c.stdout(Stdio::piped()).stderr(Stdio::piped());
            (k, c.spawn())
        })
        .collect();
    for (k, child) in children {
        let out = child.wait_with_output().expect("wait for a shard");
        assert!(
            out.status.success(),
            "shard {k}/{SHARDS} failed:\n{}{}",
            stdout(&out),
            stderr(&out)
        );
    }

    let status = cs(&["fleet", "status", &name, "--json", "--store", &dsn])
        .ok()
        .json();
    assert_eq!(status["shards"], SHARDS, "{status:#}");
    assert_eq!(status["done"], SHARDS, "{status:#}");
    assert_eq!(status["running"], 0, "{status:#}");
    assert_eq!(status["missing"], serde_json::json!([]), "{status:#}");

    // The database itself is the oracle: every row of the experiment, counted by
    // (shard, variant, round), not coldstart's own reading of them.
    let mut db = postgres::Client::connect(&dsn, postgres::NoTls).expect("connect to the test store");
    let rows = db
        .query(
            "SELECT s.shard, s.variant_idx, s.round, s.shard_attempt, COUNT(*) FROM samples s \
             JOIN experiments e ON e.id = s.experiment_id WHERE e.fleet = $1 AND s.warmup = 0 \
             GROUP BY s.shard, s.variant_idx, s.round, s.shard_attempt",
            &[&name],
        )
        .expect("count the stored runs");
    let mut seen: BTreeMap<(i64, i64, i64), i64> = BTreeMap::new();
    for r in &rows {
        let shard: Option<i64> = r.get(0);
        let attempt: Option<i64> = r.get(3);
        assert_eq!(attempt, Some(1), "a shard ran twice: {r:?}");
        let key = (
            shard.expect("every run of a fleet experiment has its shard"),
            r.get(1),
            r.get(2),
        );
        *seen.entry(key).or_default() += r.get::<_, i64>(4);
    }
    let dupes: Vec<_> = seen.iter().filter(|(_, n)| **n != 1).collect();
    assert!(dupes.is_empty(), "stored more than once: {dupes:?}");
    // Rounds count from 0 within each shard.
    let mut missing = Vec::new();
    for shard in 0..i64::from(SHARDS) {
        for variant in 0..i64::from(VARIANTS) {
            for round in 0..i64::from(RUNS) {
                if !seen.contains_key(&(shard, variant, round)) {
                    missing.push((shard, variant, round));
                }
            }
        }
    }
    assert!(missing.is_empty(), "lost: {missing:?}");
    // Nothing beside them either (a stray shard, variant or round).
    assert_eq!(seen.len() as u32, SHARDS * VARIANTS * RUNS, "{seen:?}");
    let experiments: i64 = db
        .query_one("SELECT COUNT(*) FROM experiments WHERE fleet = $1", &[&name])
        .expect("count experiments")
        .get(0);
    assert_eq!(experiments, 1, "the shards made more than one experiment");
    // The last shards ended together, and one of them closed the experiment.
    let stopped: Option<String> = db
        .query_one("SELECT stopped FROM experiments WHERE fleet = $1", &[&name])
        .expect("read the experiment")
        .get(0);
    assert_eq!(stopped.as_deref(), Some("completed"), "every shard ended");
}

/// `bench --shard K/N` of a two-variant experiment of `true`, `runs` runs each.
fn shard(k: u32, n: u32, runs: u32, name: &str, store: &str) -> Cs {
    let mut c = cs(&["bench", "--shard", &format!("{k}/{n}")]);
    c.args(["--experiment", name, "--store", store])
        .args(["--runs", &runs.to_string(), "--warmup", "0"])
        .args(["--name", "A", "--", "true", "--name", "B", "--", "true"])
        .quiet();
    c
}

/// A wide fleet meets the server's connection limit first (each shard holds a
/// connection for its whole run): the shard says so, stores nothing, and runs
/// again cleanly. A role with CONNECTION LIMIT 0 is refused with the same error
/// as a full server (SQLSTATE 53300), without filling the shared test server.
#[test]
fn a_full_server_is_named_and_the_refused_shard_can_run_again() {
    let _turn = beside();
    let Some((_dir, dsn)) = testkit::postgres_store("fleet_full", true) else {
        return;
    };
    let role = format!("cs_full_{}", std::process::id());
    let mut db = postgres::Client::connect(&dsn, postgres::NoTls).expect("connect to the test store");
    db.batch_execute(&format!(
        "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN PASSWORD 'full' CONNECTION LIMIT 0"
    ))
    .expect("create a role that may not connect");
    let mut limited = url::Url::parse(&dsn).expect("the store is a URL");
    limited.set_username(&role).expect("a user");
    limited.set_password(Some("full")).expect("a password");

    shard(1, 2, 1, "full", &dsn).ok();
    let out = shard(0, 2, 1, "full", limited.as_str()).fails();
    let err = stderr(&out);
    db.batch_execute(&format!("DROP ROLE {role}"))
        .expect("drop the role");
    assert!(err.contains("connection limit"), "{err}");
    assert!(err.contains("max_connections"), "{err}");
    assert!(
        err.contains("53300") || err.contains("too many connections"),
        "{err}"
    );
    assert!(
        !err.contains("'full'") && !err.contains(":full@"),
        "the password leaked: {err}"
    );
    let stored: i64 = db
        .query_one("SELECT COUNT(*) FROM samples WHERE shard = 0", &[])
        .expect("count shard 0's runs")
        .get(0);
    assert_eq!(stored, 0, "the refused shard stored runs");

    // Run again (the engine's retry), it joins and the fleet is whole.
    shard(0, 2, 1, "full", &dsn).ok();
    let status = cs(&["fleet", "status", "full", "--json", "--store", &dsn])
        .ok()
        .json();
    assert_eq!(status["done"], 2, "{status:#}");
    let runs: Vec<u64> = status["by_shard"]
        .as_array()
        .expect("by_shard")
        .iter()
        .map(|s| s["runs"].as_u64().expect("runs"))
        .collect();
    assert_eq!(runs, [2, 2], "{status:#}");
}
