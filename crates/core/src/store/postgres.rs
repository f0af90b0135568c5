//! PostgreSQL backend (a team store): the same schema and statements as SQLite.

use super::db::{Db, Dialect, Row, Value};
use anyhow::{anyhow, Result};
use postgres::error::SqlState;
use postgres::types::{ToSql, Type};

pub struct Postgres {
    client: postgres::Client,
}

impl Postgres {
    pub fn open(url: &str) -> Result<Self> {
        let client = postgres::Client::connect(url, postgres::NoTls).map_err(|e| {
            let full = e.code() == Some(&SqlState::TOO_MANY_CONNECTIONS);
            anyhow::Error::new(e).context(if full {
                // A fleet's shards each hold a connection for their whole run, so
                // a wide Job meets this first; the shard fails before its first run.
                format!(
                    "connecting to PostgreSQL at {}: the server is at its connection limit \
                     (max_connections, or the database's or role's CONNECTION LIMIT). Every \
                     coldstart shard holds one connection for its whole run: run fewer shards at \
                     once (a Job's parallelism, a matrix's max-parallel) or raise the limit; this \
                     shard stored nothing, so running it again is safe",
                    redact(url)
                )
            } else {
                format!("connecting to PostgreSQL at {}", redact(url))
            })
        })?;
        Ok(Postgres { client })
    }
}

/// The URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            u.set_password(Some("***")).ok();
            u.to_string()
        }
        _ => url.to_string(),
    }
}

impl Db for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        Ok(self.client.batch_execute(sql)?)
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        let owned = to_params(params);
        let refs: Vec<&(dyn ToSql + Sync)> = owned.iter().map(|b| b.as_ref()).collect();
        Ok(self.client.execute(sql, &refs)?)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let owned = to_params(params);
        let refs: Vec<&(dyn ToSql + Sync)> = owned.iter().map(|b| b.as_ref()).collect();
        let rows = self.client.query(sql, &refs)?;
        rows.iter()
            .map(|row| {
                (0..row.len())
                    .map(|i| {
                        let ty = row.columns()[i].type_();
                        Ok(if *ty == Type::INT8 {
                            Value::Int(row.try_get::<_, Option<i64>>(i)?)
                        } else if *ty == Type::INT4 {
                            Value::Int(row.try_get::<_, Option<i32>>(i)?.map(i64::from))
                        } else if *ty == Type::TEXT || *ty == Type::VARCHAR {
                            Value::Text(row.try_get::<_, Option<String>>(i)?)
                        } else {
                            return Err(anyhow!("unexpected column type {ty} in store query"));
                        })
                    })
                    .collect()
            })
            .collect()
    }
}

fn to_params(params: &[Value]) -> Vec<Box<dyn ToSql + Sync>> {
    params
        .iter()
        .map(|v| -> Box<dyn ToSql + Sync> {
            match v {
                Value::Int(i) => Box::new(*i),
                Value::Text(t) => Box::new(t.clone()),
            }
        })
        .collect()
}
