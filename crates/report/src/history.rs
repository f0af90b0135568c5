//! The `history` table and one-line descriptions of stored experiments.

use super::format::ms;
/// Dates are the clock's: lambda's telemetry writes them too.
pub use coldstart_core::clock::utc;
use coldstart_core::experiment::shard::FleetRecord;
use coldstart_core::store::{Listed, Stored};
use comfy_table::{presets, Table};
use serde::Serialize;

/// Where a fleet experiment's shards are: `history` shows it beside the name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetShards {
    /// The shards it was planned with (N of `--shard K/N`).
    pub count: u32,
    /// Shards that finished, that started and did not finish (running, or died
    /// without a word), and indices that never started.
    pub done: usize,
    pub running: usize,
    pub missing: Vec<u32>,
}

impl FleetShards {
    pub fn of(record: &FleetRecord) -> FleetShards {
        let (done, running, missing) = record.tally();
        FleetShards {
            count: record.count,
            done,
            running,
            missing,
        }
    }

    /// "3 of 4 shards done, shard 3 never started".
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("{} of {} shards done", self.done, self.count)];
        if self.running > 0 {
            parts.push(format!(
                "{} started and not finished (running, or died)",
                self.running
            ));
        }
        if !self.missing.is_empty() {
            let which: Vec<String> = self.missing.iter().map(u32::to_string).collect();
            parts.push(format!(
                "shard{} {} never started",
                if which.len() == 1 { "" } else { "s" },
                which.join(", ")
            ));
        }
        parts.join(", ")
    }
}

/// One `history --json` entry: the stored experiment's listing and, for a
/// fleet experiment, its shards (`fleet_shards`).
#[derive(Serialize)]
pub struct Entry<'a> {
    #[serde(flatten)]
    pub listed: &'a Listed,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet_shards: Option<&'a FleetShards>,
}

/// `history --json`: `shards[i]` belongs to `listed[i]`.
pub fn json(listed: &[Listed], shards: &[Option<FleetShards>]) -> serde_json::Result<String> {
    let entries: Vec<Entry> = listed
        .iter()
        .enumerate()
        .map(|(i, l)| Entry {
            listed: l,
            fleet_shards: shards.get(i).and_then(Option::as_ref),
        })
        .collect();
    serde_json::to_string_pretty(&entries)
}

/// The id column: a stored kind and a fleet experiment's name and shards are
/// marked beside the id (`3 (fleet t1, 2/3 shards)`).
fn id_cell(e: &Listed, shards: Option<&FleetShards>) -> String {
    let mut marks = Vec::new();
    if let Some(kind) = &e.kind {
        marks.push(kind.to_string());
    }
    if let Some(name) = &e.fleet {
        marks.push(match shards {
            Some(s) => format!("fleet {name}, {}/{} shards", s.done, s.count),
            None => format!("fleet {name}"),
        });
    }
    if marks.is_empty() {
        e.id.to_string()
    } else {
        format!("{} ({})", e.id, marks.join("; "))
    }
}

/// The table; `shards[i]` belongs to `listed[i]` (None: not a fleet experiment).
pub fn render(listed: &[Listed], shards: &[Option<FleetShards>]) -> String {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_HORIZONTAL_ONLY);
    t.set_header(["id", "when (UTC)", "commit", "variants: p50", "runs", "stopped"]);
    for (i, e) in listed.iter().enumerate() {
        let variants = e
            .variants
            .iter()
            .zip(&e.p50_ms)
            .map(|(n, p)| format!("{n}: {}", p.map(ms).unwrap_or_else(|| "—".into())))
            .collect::<Vec<_>>()
            .join("\n");
        t.add_row(vec![
            id_cell(e, shards.get(i).and_then(Option::as_ref)),
            utc(e.created_unix_s),
            commit(&e.git_commit, e.git_dirty),
            variants,
            e.runs.to_string(),
            e.stopped.clone().unwrap_or_else(|| "incomplete".into()),
        ]);
    }
    super::width::fit_table(&mut t, &[]);
    format!("{t}\n")
}

pub fn describe(s: &Stored) -> String {
    format!(
        "{}, commit {}, {} on {}",
        utc(s.created_unix_s),
        commit(&s.meta.git_commit, s.meta.git_dirty),
        s.meta.command_line,
        s.meta.hostname
    )
}

pub fn commit(c: &Option<String>, dirty: Option<bool>) -> String {
    match c {
        Some(c) => format!(
            "{}{}",
            &c[..c.len().min(10)],
            if dirty == Some(true) { "+dirty" } else { "" }
        ),
        None => "—".into(),
    }
}
