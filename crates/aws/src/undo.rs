//! Leaving nothing behind: what the driver journaled before each change, and
//! undoing it: the versions it published are deleted (only those: found by
//! number, or by their `COLDSTART_RUN` marker when coldstart died between the
//! publish and the journal's update), then each function's configuration is put
//! back as it was. At the end of every experiment (also after Ctrl-C/SIGTERM)
//! for its own rows, and by `coldstart lambda --aws --cleanup` for every row
//! still open after a SIGKILL or a lost network.

use crate::calls::{self, Configuration};
use crate::client::{self, Endpoint};
use anyhow::{anyhow, Result};
use coldstart_core::store::journal::Entry;
use coldstart_core::store::Store;
use serde::{Deserialize, Serialize};

/// Journal actions.
pub const CONFIGURATION: &str = "configuration";
pub const VERSION: &str = "version";

/// A `configuration` row: the function as it was before the first update.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Original {
    pub endpoint: Endpoint,
    pub configuration: Configuration,
}

/// A `version` row: written before the run's update; `version` once published.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Published {
    pub endpoint: Endpoint,
    pub marker: String,
    #[serde(default)]
    pub version: Option<String>,
}

/// Undo `rows` (versions first, then configurations) on `rt`, marking each
/// done once undone; what was done, one line each. A row that fails stays open
/// (said in its line) and the others go on. The store is written between the
/// calls, never inside the runtime: the PostgreSQL client blocks on a runtime of
/// its own, which cannot start inside another.
pub fn undo(
    rt: &tokio::runtime::Runtime,
    store: &mut Store,
    rows: &[Entry],
    reuse: Option<(&Endpoint, &aws_sdk_lambda::Client)>,
) -> Result<Vec<String>> {
    let mut said = Vec::new();
    let mut clients: Vec<(Endpoint, aws_sdk_lambda::Client)> = Vec::new();
    if let Some((e, c)) = reuse {
        clients.push((e.clone(), c.clone()));
    }
    let mut open = 0;
    let ordered = rows
        .iter()
        .filter(|r| r.action == VERSION)
        .chain(rows.iter().filter(|r| r.action == CONFIGURATION));
    for row in ordered {
        let endpoint: Endpoint = serde_json::from_value(row.detail["endpoint"].clone()).unwrap_or_default();
        let client = match clients.iter().find(|(e, _)| *e == endpoint) {
            Some((_, c)) => c.clone(),
            None => {
                let c = rt.block_on(client::connect(&endpoint))?;
                clients.push((endpoint.clone(), c.clone()));
                c
            }
        };
        match rt.block_on(undo_row(&client, row, &endpoint)) {
            Ok(line) => {
                store.journal_done(row.id)?;
                said.push(line);
            }
            Err(e) => {
                open += 1;
                said.push(format!(
                    "NOT undone (journal row {}, kept for --cleanup): {e:#}",
                    row.id
                ));
            }
        }
    }
    if open > 0 {
        said.push(format!(
            "{open} change(s) could not be undone: fix the cause and run `coldstart lambda --aws --cleanup`"
        ));
    }
    Ok(said)
}

async fn undo_row(client: &aws_sdk_lambda::Client, row: &Entry, at: &Endpoint) -> Result<String> {
    let f = &row.function;
    match row.action.as_str() {
        VERSION => {
            let p: Published = serde_json::from_value(row.detail.clone())
                .map_err(|e| anyhow!("journal row {}: {e}", row.id))?;
            let versions = match &p.version {
                Some(v) => vec![v.clone()],
                None => calls::versions_marked(client, f, &p.marker, at).await?,
            };
            for v in &versions {
                calls::delete_version(client, f, v, at).await?;
            }
            Ok(match versions.as_slice() {
                [] => format!("{f}: run {} published no version: nothing to delete", p.marker),
                vs => format!("{f}: deleted version {} (run {})", vs.join(", "), p.marker),
            })
        }
        CONFIGURATION => {
            let o: Original = serde_json::from_value(row.detail.clone())
                .map_err(|e| anyhow!("journal row {}: {e}", row.id))?;
            // An update of ours may still be in progress: a new one would be refused.
            calls::wait_updated(client, f, at).await?;
            calls::update(client, f, &o.configuration, at).await?;
            calls::wait_updated(client, f, at).await?;
            let c = &o.configuration;
            let snapstart = match c.snapstart {
                Some(true) => ", SnapStart on published versions",
                Some(false) => ", SnapStart off",
                None => "",
            };
            Ok(format!(
                "{f}: configuration restored (memory {} MB, {} layer(s), {} environment variable(s){snapstart})",
                c.memory_mb,
                c.layers.len(),
                c.env.len()
            ))
        }
        other => Err(anyhow!("journal row {}: unknown action {other}", row.id)),
    }
}
