//! One shard's store writes, timed: what a fleet experiment costs its store per
//! run. bench/fleet_store.py starts W of these at once against one experiment.
//!
//! `fleet_store STORE EXPERIMENT K/N WRITES PACE_MS`: opens STORE, joins shard K
//! of N (`begin_shard`), prints `joined` and waits for a line on stdin (the
//! driver's start signal, sent when every writer has joined, so the writes of
//! all W overlap), then stores WRITES synthetic runs (`add_sample`, one
//! transaction each), PACE_MS apart (0: back to back; a real shard spends a cold
//! start between two), closes the shard, and prints one JSON line: the phases'
//! times and every write's latency.

use anyhow::{bail, Context, Result};
use coldstart_core::experiment::shard::Fleet;
use coldstart_core::experiment::{ExperimentSettings, Kind, Order, Runs, StopReason, Variant};
use coldstart_core::sample::{Outcome, RunId, Sample};
use coldstart_core::store::meta::Metadata;
use coldstart_core::store::{fleet::this_host, Store};
use coldstart_core::target::Target;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const VARIANTS: usize = 2;

fn unix_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [store, name, shard, writes, pace_ms] = args.as_slice() else {
        bail!("usage: fleet_store STORE EXPERIMENT K/N WRITES PACE_MS");
    };
    let writes: usize = writes.parse().context("WRITES")?;
    let pace = Duration::from_millis(pace_ms.parse().context("PACE_MS")?);
    let fleet = Fleet {
        name: name.clone(),
        named_by: "--experiment",
        shard: coldstart_core::experiment::shard::parse(shard)?,
    };
    // The same plan in every writer, as every shard of one experiment has.
    let variants: Vec<Variant> = ["A", "B"]
        .iter()
        .map(|n| -> Result<Variant> {
            Ok(Variant {
                name: n.to_string(),
                target: Target::new(vec!["true".into()], Vec::new(), None)?,
                readiness: "exit".into(),
                params: Vec::new(),
            })
        })
        .collect::<Result<_>>()?;
    let settings = ExperimentSettings {
        runs: Runs::Fixed(writes.div_ceil(VARIANTS)),
        warmup: 0,
        order: Order::Shuffled,
        timeout: Duration::from_secs(10),
        poll_interval: Duration::from_micros(200),
        requests: 0,
        seed: fleet.seed(None),
        noise: 0.01,
        sweep: None,
        of_kind: (),
    };
    let meta = Metadata {
        command_line: format!("fleet_store {}", args.join(" ")),
        ..Metadata::default()
    };
    let host = this_host(|k| std::env::var(k).ok());

    let t = Instant::now();
    let mut store = Store::open(store)?;
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let joined = store.begin_shard(&meta, Kind::Bench, &settings, &variants, &fleet, &host)?;
    let begin_ms = t.elapsed().as_secs_f64() * 1e3;

    println!("joined");
    std::io::stdout().flush()?;
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go)?;

    let start_ns = unix_ns();
    let mut write_us = Vec::with_capacity(writes);
    for i in 0..writes {
        let mut s = Sample::begin(
            &RunId {
                variant: i % VARIANTS,
                round: i / VARIANTS,
                warmup: false,
            },
            1_000,
        );
        s.outcome = Outcome::Ready;
        s.ready_ns = Some(5_000_000 + i as u64);
        let t = Instant::now();
        store.add_sample(joined.experiment, &s)?;
        write_us.push(t.elapsed().as_secs_f64() * 1e6);
        if !pace.is_zero() {
            std::thread::sleep(pace);
        }
    }
    let end_ns = unix_ns();
    let t = Instant::now();
    store.finish(joined.experiment, StopReason::Completed, None)?;
    let finish_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "{}",
        serde_json::json!({
            "open_ms": open_ms,
            "begin_ms": begin_ms,
            "created": joined.created,
            "finish_ms": finish_ms,
            "start_unix_ns": start_ns.to_string(),
            "end_unix_ns": end_ns.to_string(),
            "write_us": write_us,
        })
    );
    Ok(())
}
