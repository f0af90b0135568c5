//! The little SQL surface the store needs, over SQLite and PostgreSQL alike.
//! SQL is written once with `$1`-style placeholders and BIGINT/TEXT columns;
//! each backend adapts placeholders and value types.

use anyhow::Result;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(Option<i64>),
    Text(Option<String>),
}

impl Value {
    pub fn int(&self) -> Option<i64> {
        match self {
            Value::Int(v) => *v,
            Value::Text(t) => t.as_deref().and_then(|s| s.parse().ok()),
        }
    }

    pub fn text(&self) -> Option<String> {
        match self {
            Value::Text(t) => t.clone(),
            Value::Int(v) => v.map(|i| i.to_string()),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(Some(v))
    }
}
impl From<Option<i64>> for Value {
    fn from(v: Option<i64>) -> Self {
        Value::Int(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(Some(v.to_string()))
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(Some(v))
    }
}
impl From<Option<String>> for Value {
    fn from(v: Option<String>) -> Self {
        Value::Text(v)
    }
}

pub type Row = Vec<Value>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // built only with the `postgres` feature
    Postgres,
}

pub trait Db {
    fn dialect(&self) -> Dialect;
    /// Several statements, no parameters (schema, BEGIN/COMMIT).
    fn batch(&mut self, sql: &str) -> Result<()>;
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64>;
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>>;
}

/// Run `f` inside a transaction; rolled back if it fails.
pub fn transaction<T>(db: &mut dyn Db, f: impl FnOnce(&mut dyn Db) -> Result<T>) -> Result<T> {
    // IMMEDIATE takes SQLite's write lock up front, so two writers queue on the
    // busy timeout instead of failing on a lock upgrade.
    db.batch(match db.dialect() {
        Dialect::Sqlite => "BEGIN IMMEDIATE",
        Dialect::Postgres => "BEGIN",
    })?;
    match f(db) {
        Ok(v) => {
            db.batch("COMMIT")?;
            Ok(v)
        }
        Err(e) => {
            db.batch("ROLLBACK").ok();
            Err(e)
        }
    }
}
