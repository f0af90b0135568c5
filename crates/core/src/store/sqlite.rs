//! SQLite backend (bundled SQLite): WAL, a busy timeout so concurrent coldstart
//! processes queue rather than fail, and synchronous=NORMAL (durable at each
//! checkpoint; a crash of coldstart itself loses nothing committed).

use super::db::{Db, Dialect, Row, Value};
use anyhow::{Context, Result};
use rusqlite::types::ValueRef;
use std::path::Path;
use std::time::Duration;

pub struct Sqlite {
    conn: rusqlite::Connection,
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            ignore_store_dir(dir)?;
        }
        let conn = rusqlite::Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
        conn.busy_timeout(Duration::from_secs(30))?;
        // Switching a new database to WAL needs an exclusive lock, and SQLite does
        // not run the busy handler for it: retry while another coldstart holds it.
        let start = std::time::Instant::now();
        loop {
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Ok(()) => break,
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && start.elapsed() < Duration::from_secs(30) =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("{} is not a usable SQLite database", path.display()))
                }
            }
        }
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(Sqlite { conn })
    }
}

/// A project's `.coldstart/` holds only coldstart's database: a `.gitignore` of `*`
/// keeps it out of `git status` (and so out of the git-dirty flag) and out of commits.
/// An existing `.gitignore` is the user's and is left alone.
fn ignore_store_dir(dir: &Path) -> Result<()> {
    if dir.file_name() != Some(std::ffi::OsStr::new(".coldstart")) {
        return Ok(());
    }
    let ignore = dir.join(".gitignore");
    if ignore.exists() {
        return Ok(());
    }
    std::fs::write(&ignore, "*\n").with_context(|| format!("creating {}", ignore.display()))
}

/// `$1` → `?1` (SQLite reads `$1` as a named parameter).
fn placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(|n| n.is_ascii_digit()) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

fn to_sql(v: &Value) -> rusqlite::types::Value {
    match v {
        Value::Int(Some(i)) => rusqlite::types::Value::Integer(*i),
        Value::Text(Some(t)) => rusqlite::types::Value::Text(t.clone()),
        _ => rusqlite::types::Value::Null,
    }
}

impl Db for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        Ok(self.conn.execute_batch(sql)?)
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        let values: Vec<_> = params.iter().map(to_sql).collect();
        Ok(self
            .conn
            .execute(&placeholders(sql), rusqlite::params_from_iter(values))? as u64)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let values: Vec<_> = params.iter().map(to_sql).collect();
        let mut stmt = self.conn.prepare_cached(&placeholders(sql))?;
        let n = stmt.column_count();
        let mut rows = stmt.query(rusqlite::params_from_iter(values))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let mut r = Vec::with_capacity(n);
            for i in 0..n {
                r.push(match row.get_ref(i)? {
                    ValueRef::Null => Value::Int(None),
                    ValueRef::Integer(v) => Value::Int(Some(v)),
                    ValueRef::Real(f) => Value::Text(Some(f.to_string())),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Value::Text(Some(String::from_utf8_lossy(t).into()))
                    }
                });
            }
            out.push(r);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_are_rewritten() {
        assert_eq!(
            super::placeholders("a = $1 AND b = $12, '$'"),
            "a = ?1 AND b = ?12, '$'"
        );
    }
}
