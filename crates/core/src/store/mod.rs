//! The store: every experiment, variant, run sample and capture, in SQLite by
//! default (`.coldstart/coldstart.db` in the project) or PostgreSQL for a team
//! (`--store postgres://…` or COLDSTART_STORE). Samples are committed one by one as
//! runs finish, so a coldstart killed mid-experiment leaves every finished run.

pub mod db;
pub mod fleet;
pub mod journal;
pub mod meta;
#[cfg(feature = "postgres")]
mod postgres;
pub mod reference;
pub mod schema;
mod sqlite;

use crate::experiment::{ExperimentResult, ExperimentSettings, Kind, Order, StopReason, Variant};
use crate::sample::Sample;
use crate::target::Target;
use anyhow::{anyhow, bail, Context, Result};
use db::{transaction, Db, Value};
use meta::Metadata;
use serde::Serialize;
use std::path::{Path, PathBuf};

pub struct Store {
    db: Box<dyn Db>,
    /// Where it is, for messages (passwords redacted).
    pub location: String,
    /// The shard this store files runs under (a fleet experiment's), once joined.
    writing: Option<fleet::Writing>,
}

/// One stored experiment, as listed by `history`.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub id: i64,
    pub created_unix_s: i64,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    /// Null while the experiment runs (or if its coldstart was killed).
    pub stopped: Option<String>,
    pub variants: Vec<String>,
    pub runs: i64,
    /// Median ready time per variant (ms), in variant order.
    pub p50_ms: Vec<Option<f64>>,
    /// "explain" for a `coldstart explain`, "tune" for a `coldstart tune`; null
    /// for bench's and lambda's (`history` marks the two kinds whose `show`
    /// differs).
    pub kind: Option<Kind>,
    /// What each variant measured, in variant order: its command, readiness and
    /// requests after ready, with the probed port written `{port}` (the demo and
    /// tests pick a free one per run). Equal strings measure the same thing.
    /// Not in `history --json` (its schema is documented; this is the report's).
    #[serde(skip)]
    pub measures: Vec<String>,
    /// A fleet experiment's name (its shards' `--experiment`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<String>,
}

pub struct Stored {
    pub id: i64,
    pub created_unix_s: i64,
    pub meta: Metadata,
    /// Which command made it (None: a kind this coldstart does not know).
    pub kind: Option<Kind>,
    /// Its settings as recorded (`ExperimentSettings` with its kind's part).
    pub settings_json: String,
    pub result: ExperimentResult,
}

#[derive(Debug, Default)]
pub struct Filter {
    pub target: Option<String>,
    pub commit: Option<String>,
    pub limit: Option<usize>,
}

/// What a variant measures (see [`Listed::measures`]).
fn measures(command: &str, readiness: &str, requests: u64) -> String {
    // The port a tcp or http probe waits on: `tcp:[HOST:]PORT`, `http://HOST:PORT/…`.
    let port = readiness
        .strip_prefix("tcp:")
        .map(|t| t.rsplit(':').next().unwrap_or(t))
        .or_else(|| {
            let rest = readiness.split_once("://")?.1;
            let host = rest.split('/').next()?;
            host.rsplit_once(':').map(|(_, p)| p)
        })
        .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    // Whole numbers only: port 80 must not rewrite 8080.
    let general = |s: &str| match (port, regex::Regex::new(r"\d+")) {
        (Some(p), Ok(digits)) => digits
            .replace_all(s, |m: &regex::Captures| {
                if &m[0] == p {
                    "{port}".to_string()
                } else {
                    m[0].to_string()
                }
            })
            .into_owned(),
        _ => s.to_string(),
    };
    format!(
        "{} | {} | {requests} requests",
        general(command),
        general(readiness)
    )
}

/// A variant's parameters as stored: NULL when nothing was swept.
fn params_json(params: &[(String, String)]) -> Result<Option<String>> {
    if params.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    crate::experiment::sweep::params_serde::serialize(params, &mut serde_json::Serializer::new(&mut out))?;
    Ok(Some(String::from_utf8(out)?))
}

/// The default store of a project: `.coldstart/coldstart.db` under its root.
pub fn default_location(project_root: &Path) -> PathBuf {
    project_root.join(".coldstart").join("coldstart.db")
}

#[cfg(feature = "postgres")]
fn open_postgres(spec: &str) -> Result<(Box<dyn Db>, String)> {
    Ok((Box::new(postgres::Postgres::open(spec)?), postgres::redact(spec)))
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(_spec: &str) -> Result<(Box<dyn Db>, String)> {
    // The spec is not repeated: it may hold a password.
    bail!(
        "this coldstart was built without PostgreSQL support: rebuild it with the `postgres` \
         feature (`cargo build --features postgres`, on by default) or use a SQLite store path"
    )
}

/// Wall-clock seconds, as the store's *_unix_s columns hold them.
fn now_unix_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The experiment's row and its variants' (inside the caller's transaction).
fn insert_experiment(
    db: &mut dyn Db,
    meta: &Metadata,
    kind: Kind,
    settings_json: &str,
    order: Order,
    variants: &[Variant],
) -> Result<i64> {
    let created = now_unix_s();
    let rows = db.query(
        "INSERT INTO experiments (created_unix_s, command_line, git_commit, git_dirty, hostname, kernel, \
         cpu_model, cores, loadavg, coldstart_version, settings_json, kind, run_order) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id",
        &[
            created.into(),
            meta.command_line.clone().into(),
            meta.git_commit.clone().into(),
            meta.git_dirty.map(i64::from).into(),
            meta.hostname.clone().into(),
            meta.kernel.clone().into(),
            meta.cpu_model.clone().into(),
            meta.cores.into(),
            meta.loadavg.clone().into(),
            meta.coldstart_version.clone().into(),
            settings_json.into(),
            kind.as_str().into(),
            order.as_str().into(),
        ],
    )?;
    let id = rows
        .first()
        .and_then(|r| r[0].int())
        .ok_or_else(|| anyhow!("insert returned no id"))?;
    for (i, v) in variants.iter().enumerate() {
        db.execute(
            "INSERT INTO variants (experiment_id, idx, name, command, readiness, target_json, params_json) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                id.into(),
                (i as i64).into(),
                v.name.clone().into(),
                v.target.display_command().into(),
                v.readiness.clone().into(),
                serde_json::to_string(&v.target)?.into(),
                params_json(&v.params)?.into(),
            ],
        )?;
    }
    Ok(id)
}

impl Store {
    /// `postgres://…` / `postgresql://…`, `sqlite:PATH`, or a plain path.
    pub fn open(spec: &str) -> Result<Store> {
        let (mut db, location): (Box<dyn Db>, String) =
            if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
                open_postgres(spec)?
            } else {
                let path = PathBuf::from(spec.strip_prefix("sqlite:").unwrap_or(spec));
                (Box::new(sqlite::Sqlite::open(&path)?), path.display().to_string())
            };
        schema::migrate(db.as_mut(), &location)?;
        Ok(Store {
            db,
            location,
            writing: None,
        })
    }

    /// A new experiment of `kind`, run with `settings`, before its first run.
    pub fn begin<K: Serialize>(
        &mut self,
        meta: &Metadata,
        kind: Kind,
        settings: &ExperimentSettings<K>,
        variants: &[Variant],
    ) -> Result<i64> {
        let settings_json = serde_json::to_string(settings)?;
        transaction(self.db.as_mut(), |db| {
            insert_experiment(db, meta, kind, &settings_json, settings.order, variants)
        })
        .with_context(|| format!("storing a new experiment in {}", self.location))
    }

    /// One finished run, committed on its own.
    pub fn add_sample(&mut self, experiment: i64, s: &Sample) -> Result<()> {
        let outcome = serde_json::to_value(&s.outcome)?["kind"]
            .as_str()
            .unwrap_or("unknown")
            .to_string();
        let writing = self.writing.filter(|w| w.experiment == experiment);
        transaction(self.db.as_mut(), |db| {
            if let Some(w) = &writing {
                Store::check_attempt(db, w)?;
            }
            let rows = db.query(
                "INSERT INTO samples (experiment_id, variant_idx, round, warmup, outcome, ready_ns, data_json, \
                 shard, shard_attempt) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
                &[
                    experiment.into(),
                    (s.variant as i64).into(),
                    (s.round as i64).into(),
                    i64::from(s.warmup).into(),
                    outcome.clone().into(),
                    s.ready_ns.map(|n| n as i64).into(),
                    serde_json::to_string(s)?.into(),
                    writing.map(|w| i64::from(w.index)).into(),
                    writing.map(|w| i64::from(w.attempt)).into(),
                ],
            )?;
            let sample_id = rows.first().and_then(|r| r[0].int()).ok_or_else(|| anyhow!("insert returned no id"))?;
            for (name, value) in &s.captures {
                db.execute(
                    "INSERT INTO captures (sample_id, name, value) VALUES ($1, $2, $3)",
                    &[sample_id.into(), name.clone().into(), value.clone().into()],
                )?;
            }
            Ok(())
        })
        .with_context(|| format!("storing a run in {}", self.location))
    }

    /// Why it stopped, and how loaded the machine was during the runs.
    pub fn finish(
        &mut self,
        experiment: i64,
        stopped: StopReason,
        load: Option<&crate::experiment::load::Load>,
    ) -> Result<()> {
        let load_json = load.map(serde_json::to_string).transpose()?;
        if let Some(w) = self.writing.filter(|w| w.experiment == experiment) {
            return self.finish_shard(w, stopped, load_json);
        }
        self.db
            .execute(
                "UPDATE experiments SET stopped = $1, load_json = $2 WHERE id = $3",
                &[stopped.as_str().into(), load_json.into(), experiment.into()],
            )
            .with_context(|| format!("closing experiment {experiment} in {}", self.location))?;
        Ok(())
    }

    /// The explanation of a `coldstart explain` experiment (its JSON): what it
    /// explains is an explain, whatever it was stored as.
    pub fn add_explanation(&mut self, experiment: i64, json: &str) -> Result<()> {
        transaction(self.db.as_mut(), |db| {
            db.execute(
                "INSERT INTO explanations (experiment_id, data_json) VALUES ($1, $2)",
                &[experiment.into(), json.into()],
            )?;
            db.execute(
                "UPDATE experiments SET kind = $1 WHERE id = $2",
                &[Kind::Explain.as_str().into(), experiment.into()],
            )
        })
        .with_context(|| {
            format!(
                "storing the explanation of experiment {experiment} in {}",
                self.location
            )
        })?;
        Ok(())
    }

    /// The stored explanation's JSON, if `experiment` is an explain.
    pub fn explanation(&mut self, experiment: i64) -> Result<Option<String>> {
        let rows = self.db.query(
            "SELECT data_json FROM explanations WHERE experiment_id = $1",
            &[experiment.into()],
        )?;
        Ok(rows.first().and_then(|r| r[0].text()))
    }

    pub fn list(&mut self, filter: &Filter) -> Result<Vec<Listed>> {
        let mut sql = format!(
            "SELECT e.id, e.created_unix_s, e.git_commit, e.git_dirty, e.stopped, \
             (SELECT COUNT(*) FROM samples s WHERE s.experiment_id = e.id AND s.warmup = 0 AND s.outcome = 'ready' \
             AND {current}), e.kind, e.settings_json, e.fleet \
             FROM experiments e WHERE 1 = 1",
            current = fleet::CURRENT_ATTEMPT
        );
        let mut params: Vec<Value> = Vec::new();
        if let Some(t) = &filter.target {
            // A name matches itself and its sweep points (`NAME[...]`).
            params.push(t.clone().into());
            params.push(format!("{t}[").into());
            sql += &format!(
                " AND EXISTS (SELECT 1 FROM variants v WHERE v.experiment_id = e.id AND (v.name = ${} \
                 OR substr(v.name, 1, {}) = ${}))",
                params.len() - 1,
                t.chars().count() + 1,
                params.len()
            );
        }
        if let Some(c) = &filter.commit {
            params.push(format!("{c}%").into());
            sql += &format!(" AND e.git_commit LIKE ${}", params.len());
        }
        sql += " ORDER BY e.id DESC";
        if let Some(n) = filter.limit {
            sql += &format!(" LIMIT {n}");
        }
        let rows = self.db.query(&sql, &params)?;
        let mut out = Vec::new();
        for r in rows {
            let id = r[0].int().unwrap_or(0);
            let rows = self.db.query(
                "SELECT name, command, readiness FROM variants WHERE experiment_id = $1 ORDER BY idx",
                &[id.into()],
            )?;
            let requests = r[7]
                .text()
                .and_then(|j| serde_json::from_str::<serde_json::Value>(&j).ok())
                .and_then(|j| j["requests"].as_u64())
                .unwrap_or(0);
            let measures: Vec<String> = rows
                .iter()
                .map(|v| {
                    measures(
                        &v[1].text().unwrap_or_default(),
                        &v[2].text().unwrap_or_default(),
                        requests,
                    )
                })
                .collect();
            let variants: Vec<String> = rows.into_iter().filter_map(|v| v[0].text()).collect();
            let mut p50_ms = Vec::new();
            for i in 0..variants.len() {
                let mut xs: Vec<f64> = self
                    .db
                    .query(
                        &format!(
                            "SELECT ready_ns FROM samples s WHERE s.experiment_id = $1 AND s.variant_idx = $2 \
                             AND s.warmup = 0 AND s.outcome = 'ready' AND {}",
                            fleet::CURRENT_ATTEMPT
                        ),
                        &[id.into(), (i as i64).into()],
                    )?
                    .into_iter()
                    .filter_map(|v| v[0].int())
                    .map(|ns| ns as f64 / 1e6)
                    .collect();
                xs.sort_by(f64::total_cmp);
                p50_ms.push(coldstart_stats::summarize(&xs).map(|s| s.p50));
            }
            let kind = r[6]
                .text()
                .and_then(|k| Kind::parse(&k))
                .filter(|k| matches!(k, Kind::Explain | Kind::Tune));
            out.push(Listed {
                id,
                created_unix_s: r[1].int().unwrap_or(0),
                git_commit: r[2].text(),
                git_dirty: r[3].int().map(|d| d != 0),
                stopped: r[4].text(),
                variants,
                runs: r[5].int().unwrap_or(0),
                p50_ms,
                kind,
                measures,
                fleet: r[8].text(),
            });
        }
        Ok(out)
    }

    pub fn load(&mut self, id: i64) -> Result<Stored> {
        let rows = self.db.query(
            "SELECT created_unix_s, command_line, git_commit, git_dirty, hostname, kernel, cpu_model, cores, \
             loadavg, coldstart_version, settings_json, stopped, load_json, kind, run_order FROM experiments WHERE id = $1",
            &[id.into()],
        )?;
        let Some(r) = rows.first() else {
            bail!(
                "no experiment {id} in {}: `coldstart history` lists what is stored",
                self.location
            )
        };
        let meta = Metadata {
            command_line: r[1].text().unwrap_or_default(),
            git_commit: r[2].text(),
            git_dirty: r[3].int().map(|d| d != 0),
            hostname: r[4].text().unwrap_or_default(),
            kernel: r[5].text().unwrap_or_default(),
            cpu_model: r[6].text().unwrap_or_default(),
            cores: r[7].int().unwrap_or(0),
            loadavg: r[8].text().unwrap_or_default(),
            coldstart_version: r[9].text().unwrap_or_default(),
        };
        let mut variants = Vec::new();
        for v in self.db.query(
            "SELECT name, readiness, target_json, params_json FROM variants WHERE experiment_id = $1 ORDER BY idx",
            &[id.into()],
        )? {
            let target: Target = serde_json::from_str(&v[2].text().unwrap_or_default())
                .with_context(|| format!("experiment {id}: unreadable target"))?;
            // Readiness stays text: a stored variant is shown, never probed, so
            // every kind loads back (bench's probes and lambda's `lambda:init`).
            variants.push(Variant {
                name: v[0].text().unwrap_or_default(),
                target,
                readiness: v[1].text().unwrap_or_default(),
                params: match v[3].text() {
                    None => Vec::new(),
                    Some(json) => {
                        let mut d = serde_json::Deserializer::from_str(&json);
                        crate::experiment::sweep::params_serde::deserialize(&mut d)
                            .with_context(|| format!("experiment {id}: unreadable parameters"))?
                    }
                },
            });
        }
        let samples = self
            .db
            .query(
                &format!(
                    "SELECT s.data_json, s.shard FROM samples s WHERE s.experiment_id = $1 AND {} ORDER BY s.id",
                    fleet::CURRENT_ATTEMPT
                ),
                &[id.into()],
            )?
            .into_iter()
            .map(|r| {
                serde_json::from_str::<Sample>(&r[0].text().unwrap_or_default()).map(|mut s| {
                    s.shard = r[1].int().map(|i| i as u32);
                    s
                })
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .with_context(|| format!("experiment {id}: unreadable sample"))?;
        // The run order decides what comparison the samples support; rows whose
        // settings named no order (older lambda ones) were interleaved.
        let order = r[14]
            .text()
            .and_then(|o| Order::parse(&o))
            .unwrap_or(Order::Shuffled);
        let fleet = self.fleet(id)?;
        Ok(Stored {
            id,
            created_unix_s: r[0].int().unwrap_or(0),
            meta,
            kind: r[13].text().and_then(|k| Kind::parse(&k)),
            settings_json: r[10].text().unwrap_or_default(),
            result: ExperimentResult {
                variants,
                samples,
                stopped: match r[11].text() {
                    None => None,
                    Some(s) => Some(StopReason::parse(&s).ok_or_else(|| {
                        anyhow!(
                            "experiment {id}: unknown stopped reason '{s}' (written by a newer coldstart?)"
                        )
                    })?),
                },
                design: order.design(),
                // A record this coldstart cannot read is no reason to lose the runs.
                load: r[12].text().and_then(|j| serde_json::from_str(&j).ok()),
                fleet,
            },
        })
    }

    pub fn load_ref(&mut self, reference: &str) -> Result<Stored> {
        let id = self.resolve(reference)?;
        self.load(id)
    }

    /// An experiment reference: an id, `latest`, `latest~N`, or a git commit
    /// prefix (the newest experiment at that commit). A variant part
    /// (`:NAME`, `:NAME[heap=64m]`, see [`reference`]) is checked and left to the caller.
    pub fn resolve(&mut self, reference: &str) -> Result<i64> {
        let parsed = reference::Reference::parse(reference)?;
        let reference = parsed.experiment.as_str();
        if let Ok(id) = reference.parse::<i64>() {
            return Ok(id);
        }
        // A fleet experiment's name first: it may look like a commit prefix.
        if let Some(id) = self.fleet_id(reference)? {
            return Ok(id);
        }
        let back = match reference {
            "latest" => Some(0),
            r => r.strip_prefix("latest~").and_then(|n| n.parse::<usize>().ok()),
        };
        // `latest:NAME` counts only experiments that have a variant NAME (or
        // sweep points of it): the newest explain or tune has none of bench's.
        let named = parsed.variant.as_ref().and_then(|v| v.name.clone());
        let has_variant = "EXISTS (SELECT 1 FROM variants v WHERE v.experiment_id = experiments.id \
             AND (v.name = CAST($1 AS TEXT) OR substr(v.name, 1, length(CAST($1 AS TEXT)) + 1) = CAST($1 AS TEXT) || '['))";
        let found = if let Some(n) = back {
            match &named {
                Some(name) => self.db.query(
                    &format!(
                        "SELECT id FROM experiments WHERE {has_variant} ORDER BY id DESC LIMIT 1 OFFSET {n}"
                    ),
                    &[name.clone().into()],
                )?,
                None => self.db.query(
                    &format!("SELECT id FROM experiments ORDER BY id DESC LIMIT 1 OFFSET {n}"),
                    &[],
                )?,
            }
        } else if reference.len() >= 4 && reference.chars().all(|c| c.is_ascii_hexdigit()) {
            let commit = format!("{}%", reference.to_lowercase());
            match &named {
                Some(name) => self.db.query(
                    &format!(
                        "SELECT id FROM experiments WHERE git_commit LIKE $2 AND {has_variant} ORDER BY id DESC LIMIT 1"
                    ),
                    &[name.clone().into(), commit.into()],
                )?,
                None => self.db.query(
                    "SELECT id FROM experiments WHERE git_commit LIKE $1 ORDER BY id DESC LIMIT 1",
                    &[commit.into()],
                )?,
            }
        } else {
            bail!(
                "bad experiment reference '{reference}': no fleet experiment of that name in {}; give an id, \
                 latest, latest~N, a git commit (≥ 4 hex digits) or a fleet experiment's name",
                self.location
            )
        };
        found.first().and_then(|r| r[0].int()).ok_or_else(|| match &named {
            Some(name) => anyhow!(
                "no stored experiment matches '{reference}' with a variant '{name}' in {}: `coldstart history` lists what is stored",
                self.location
            ),
            None => anyhow!(
                "no stored experiment matches '{reference}' in {}: `coldstart history` lists what is stored",
                self.location
            ),
        })
    }
}

#[cfg(test)]
mod measures_tests {
    use super::measures;

    /// The probed port is a placeholder (each demo picks its own), and only as a
    /// whole number; readiness and requests tell measurements apart.
    #[test]
    fn the_probed_port_is_generalised_and_readiness_kept() {
        let a = measures("srv --port 28719", "http://127.0.0.1:28719/health", 3);
        let b = measures("srv --port 31000", "http://127.0.0.1:31000/health", 3);
        assert_eq!(a, b);
        assert_eq!(
            a,
            "srv --port {port} | http://127.0.0.1:{port}/health | 3 requests"
        );
        assert_ne!(a, measures("srv --port 31000", "tcp:31000", 0));
        assert_eq!(
            measures("srv --port 8080 --x 80", "tcp:127.0.0.1:80", 0),
            "srv --port 8080 --x {port} | tcp:127.0.0.1:{port} | 0 requests"
        );
        assert_eq!(measures("sleep 1", "exit", 0), "sleep 1 | exit | 0 requests");
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::experiment::{ExperimentSettings, Order, Runs};
    use std::time::Duration;

    /// Settings to store an experiment with in tests.
    pub fn settings() -> ExperimentSettings {
        ExperimentSettings {
            runs: Runs::Fixed(1),
            warmup: 0,
            order: Order::Shuffled,
            timeout: Duration::from_secs(1),
            poll_interval: Duration::from_micros(200),
            requests: 0,
            seed: 1,
            noise: 0.01,
            sweep: None,
            of_kind: (),
        }
    }
}
