//! The journal of changes made outside the store (`aws_journal`, migration 13):
//! `coldstart lambda --aws` writes a row *before* each change it makes to a
//! deployed function (the original configuration before the first update, each
//! version before it is published), marks it done once it has been undone, and
//! `--cleanup` replays the rows not done after a coldstart that could not undo
//! its changes itself (SIGKILL, a lost network). The store only keeps the rows;
//! what an action means is the executor's.

use super::db::{transaction, Value};
use super::now_unix_s;
use super::Store;
use anyhow::{anyhow, Context, Result};

/// One journaled change.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: i64,
    /// The experiment whose runs made it (None if it was made before one was stored).
    pub experiment_id: Option<i64>,
    pub created_unix_s: i64,
    /// The function (name or ARN, as given).
    pub function: String,
    /// What was (or is about to be) changed, in the executor's words.
    pub action: String,
    /// What undoing it needs.
    pub detail: serde_json::Value,
    /// Undone (or found to need no undoing).
    pub done: bool,
}

impl Store {
    /// Journal a change before making it; its row's id.
    pub fn journal_add(
        &mut self,
        experiment: Option<i64>,
        function: &str,
        action: &str,
        detail: &serde_json::Value,
    ) -> Result<i64> {
        let detail = serde_json::to_string(detail)?;
        let location = self.location.clone();
        transaction(self.db.as_mut(), |db| {
            let rows = db.query(
                "INSERT INTO aws_journal (experiment_id, created_unix_s, function, action, detail_json, done) \
                 VALUES ($1, $2, $3, $4, $5, 0) RETURNING id",
                &[
                    experiment.into(),
                    now_unix_s().into(),
                    function.into(),
                    action.into(),
                    detail.clone().into(),
                ],
            )?;
            rows.first()
                .and_then(|r| r[0].int())
                .ok_or_else(|| anyhow!("insert returned no id"))
        })
        .with_context(|| format!("journaling a change to {function} in {location}"))
    }

    /// Replace a row's detail (e.g. the version number a publish returned).
    pub fn journal_update(&mut self, id: i64, detail: &serde_json::Value) -> Result<()> {
        let detail = serde_json::to_string(detail)?;
        self.db
            .execute(
                "UPDATE aws_journal SET detail_json = $1 WHERE id = $2",
                &[detail.into(), id.into()],
            )
            .with_context(|| format!("updating journal row {id} in {}", self.location))?;
        Ok(())
    }

    /// The change of row `id` was undone (or needed no undoing).
    pub fn journal_done(&mut self, id: i64) -> Result<()> {
        self.db
            .execute("UPDATE aws_journal SET done = 1 WHERE id = $1", &[id.into()])
            .with_context(|| format!("closing journal row {id} in {}", self.location))?;
        Ok(())
    }

    /// Every row not done yet, oldest first.
    pub fn journal_pending(&mut self) -> Result<Vec<Entry>> {
        let rows = self
            .db
            .query(
                "SELECT id, experiment_id, created_unix_s, function, action, detail_json, done \
                 FROM aws_journal WHERE done = 0 ORDER BY id",
                &[],
            )
            .with_context(|| format!("reading the journal in {}", self.location))?;
        rows.iter().map(|r| entry(r)).collect()
    }
}

fn entry(r: &[Value]) -> Result<Entry> {
    let text = r[5].text().unwrap_or_default();
    Ok(Entry {
        id: r[0].int().ok_or_else(|| anyhow!("a journal row without an id"))?,
        experiment_id: r[1].int(),
        created_unix_s: r[2].int().unwrap_or(0),
        function: r[3].text().unwrap_or_default(),
        action: r[4].text().unwrap_or_default(),
        detail: serde_json::from_str(&text)
            .with_context(|| format!("journal row {}: detail {text}", r[0].int().unwrap_or(0)))?,
        done: r[6].int().unwrap_or(0) != 0,
    })
}

#[cfg(test)]
mod tests {
    use crate::store::Store;

    /// Rows come back in the order written, with their detail; done rows are left out.
    #[test]
    fn journal_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.db");
        let mut store = Store::open(path.to_str().unwrap()).unwrap();
        let a = store
            .journal_add(None, "fn", "restore", &serde_json::json!({"memory": 128}))
            .unwrap();
        let b = store
            .journal_add(None, "fn", "publish", &serde_json::json!({"marker": "x-1"}))
            .unwrap();
        store
            .journal_update(b, &serde_json::json!({"marker": "x-1", "version": "3"}))
            .unwrap();
        let pending = store.journal_pending().unwrap();
        assert_eq!(pending.len(), 2);
        assert_eq!(pending[0].id, a);
        assert_eq!(pending[1].detail["version"], "3");
        store.journal_done(a).unwrap();
        let pending = store.journal_pending().unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].action, "publish");
        assert!(!pending[0].done);
    }
}
