//! `coldstart fleet emit ENGINE --shards N -- BENCH ARGS`: the engine's file that
//! runs one experiment as N shards (crates/fleet writes it), to stdout or `-o`;
//! `coldstart fleet status [EXPERIMENT]`: how far its shards are.

use crate::flags::{raw::FleetStatusFlags, FleetEmitArgs};
use anyhow::{anyhow, bail, Result};

pub fn emit(args: &FleetEmitArgs) -> Result<i32> {
    let text = coldstart_fleet::emit(&args.recipe)?;
    match &args.output {
        None => coldstart_core::out::text(&text)?,
        Some(path) => {
            coldstart_report::export::write_new(path, text.as_bytes(), args.force)?;
            if path.as_os_str() != "-" {
                coldstart_core::out::errln!("wrote {}", path.display());
            }
        }
    }
    Ok(0)
}

pub fn status(args: &FleetStatusFlags) -> Result<i32> {
    let mut store = super::stored::open(&args.store)?;
    let id = match &args.experiment {
        Some(r) => store.resolve(r)?,
        None => store.latest_fleet()?.ok_or_else(|| {
            anyhow!(
                "no fleet experiment in {}: shards of `coldstart bench --shard K/N --experiment NAME` make one",
                store.location
            )
        })?,
    };
    let Some(record) = store.fleet(id)? else {
        bail!(
            "experiment {id} in {} was not sharded: `coldstart show {id}` shows it",
            store.location
        );
    };
    if args.json {
        let (done, running, missing) = record.tally();
        let json = serde_json::json!({
            "schema": "coldstart.fleet-status/1",
            "experiment": id,
            "name": record.name,
            "shards": record.count,
            "done": done,
            "running": running,
            "missing": missing,
            "by_shard": record.shards,
        });
        coldstart_core::out::outln!("{}", serde_json::to_string_pretty(&json)?)?;
    } else {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        coldstart_core::out::out!(
            "{}",
            coldstart_report::fleet::status(&record, id, &store.location, now)
        )?;
    }
    Ok(0)
}
