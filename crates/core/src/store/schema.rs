//! Versioned schema. The version lives in the `meta` table on both backends;
//! a database newer than this coldstart is refused, never rewritten.

use super::db::{transaction, Db, Dialect, Value};
use crate::experiment::{Kind, Order};
use anyhow::{bail, Result};

pub const CURRENT: i64 = 13;

/// Migration N takes the schema from version N-1 to N (2: `explanations`, one
/// row per `coldstart explain`, its explanation as the JSON export has it; IF NOT
/// EXISTS, so a version number set back by hand does not wedge the store; 3: a
/// variant's sweep parameters, `variants.params_json`, a JSON object in parameter
/// order, NULL when nothing was swept; 4: how loaded the machine was during the
/// runs, `experiments.load_json`, NULL before; 5: which command made an
/// experiment, `experiments.kind` (`experiment::Kind`), and 6: its run order,
/// `experiments.run_order` (`experiment::Order`), both filled in for the rows
/// before them by `fill`; 7–12: fleet experiments, `store::fleet`: an
/// experiment's fleet name (unique), shard count and plan, each run's shard and
/// attempt, and a row per shard with its machine and times; 13: `aws_journal`,
/// what `coldstart lambda --aws` changed on a deployed function, written before
/// each change, so `--cleanup` can undo it after a SIGKILL: `store::journal`). Written for SQLite;
/// `sql_for` adapts the few words PostgreSQL spells differently.
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE experiments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_unix_s BIGINT NOT NULL,
    command_line TEXT NOT NULL,
    git_commit TEXT,
    git_dirty BIGINT,
    hostname TEXT,
    kernel TEXT,
    cpu_model TEXT,
    cores BIGINT,
    loadavg TEXT,
    coldstart_version TEXT NOT NULL,
    settings_json TEXT NOT NULL,
    stopped TEXT
);
CREATE TABLE variants (
    experiment_id BIGINT NOT NULL REFERENCES experiments(id),
    idx BIGINT NOT NULL,
    name TEXT NOT NULL,
    command TEXT NOT NULL,
    readiness TEXT NOT NULL,
    target_json TEXT NOT NULL,
    PRIMARY KEY (experiment_id, idx)
);
CREATE INDEX variants_name ON variants(name);
CREATE TABLE samples (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment_id BIGINT NOT NULL REFERENCES experiments(id),
    variant_idx BIGINT NOT NULL,
    round BIGINT NOT NULL,
    warmup BIGINT NOT NULL,
    outcome TEXT NOT NULL,
    ready_ns BIGINT,
    data_json TEXT NOT NULL
);
CREATE INDEX samples_experiment ON samples(experiment_id);
CREATE TABLE captures (
    sample_id BIGINT NOT NULL REFERENCES samples(id),
    name TEXT NOT NULL,
    value TEXT NOT NULL
);
CREATE INDEX captures_sample ON captures(sample_id);
",
    "
CREATE TABLE IF NOT EXISTS explanations (
    experiment_id BIGINT PRIMARY KEY REFERENCES experiments(id),
    data_json TEXT NOT NULL
);
",
    // Applied through `add_column` (SQLite has no ADD COLUMN IF NOT EXISTS).
    "ALTER TABLE variants ADD COLUMN params_json TEXT",
    "ALTER TABLE experiments ADD COLUMN load_json TEXT",
    "ALTER TABLE experiments ADD COLUMN kind TEXT",
    "ALTER TABLE experiments ADD COLUMN run_order TEXT",
    "ALTER TABLE experiments ADD COLUMN fleet TEXT",
    "ALTER TABLE experiments ADD COLUMN shard_count BIGINT",
    "ALTER TABLE experiments ADD COLUMN plan_json TEXT",
    "ALTER TABLE samples ADD COLUMN shard BIGINT",
    "ALTER TABLE samples ADD COLUMN shard_attempt BIGINT",
    "
CREATE UNIQUE INDEX IF NOT EXISTS experiments_fleet ON experiments(fleet);
CREATE INDEX IF NOT EXISTS samples_shard ON samples(experiment_id, shard);
CREATE TABLE IF NOT EXISTS shards (
    experiment_id BIGINT NOT NULL REFERENCES experiments(id),
    idx BIGINT NOT NULL,
    attempt BIGINT NOT NULL,
    source TEXT NOT NULL,
    hostname TEXT NOT NULL,
    node TEXT,
    cpu_model TEXT NOT NULL,
    cores BIGINT NOT NULL,
    kernel TEXT NOT NULL,
    memory_bytes BIGINT,
    machine_id TEXT,
    seed BIGINT NOT NULL,
    started_unix_s BIGINT NOT NULL,
    ended_unix_s BIGINT,
    stopped TEXT,
    load_json TEXT,
    replaced_runs BIGINT NOT NULL,
    PRIMARY KEY (experiment_id, idx)
);
",
    "
CREATE TABLE IF NOT EXISTS aws_journal (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment_id BIGINT REFERENCES experiments(id),
    created_unix_s BIGINT NOT NULL,
    function TEXT NOT NULL,
    action TEXT NOT NULL,
    detail_json TEXT NOT NULL,
    done BIGINT NOT NULL
);
",
];

/// The names `coldstart explain` gave its arms (a fourth with `--profile`):
/// how an explain stored before schema 5 that stopped before its explanation is
/// told from a bench.
const EXPLAIN_ARMS: [&str; 3] = ["untraced", "traced", "adapted"];
const EXPLAIN_PROFILED_ARM: &str = "profiled";

/// After migration `version`, the value of its new column for the rows stored
/// before it: read from what those rows kept (settings, variants, an
/// explanation), in Rust, so both backends fill alike.
fn fill(db: &mut dyn Db, version: i64) -> Result<()> {
    match version {
        5 => {
            for r in db.query(
                "SELECT e.id, e.settings_json, \
                 (SELECT COUNT(*) FROM explanations x WHERE x.experiment_id = e.id) \
                 FROM experiments e WHERE e.kind IS NULL",
                &[],
            )? {
                let id = r[0].int().unwrap_or(0);
                let variants: Vec<(String, String)> = db
                    .query(
                        "SELECT name, readiness FROM variants WHERE experiment_id = $1 ORDER BY idx",
                        &[id.into()],
                    )?
                    .into_iter()
                    .map(|v| (v[0].text().unwrap_or_default(), v[1].text().unwrap_or_default()))
                    .collect();
                let settings = settings_of(&r[1]);
                let kind = old_kind(r[2].int().unwrap_or(0) > 0, &variants, &settings);
                db.execute(
                    "UPDATE experiments SET kind = $1 WHERE id = $2",
                    &[kind.as_str().into(), id.into()],
                )?;
            }
        }
        6 => {
            for r in db.query(
                "SELECT id, settings_json FROM experiments WHERE run_order IS NULL",
                &[],
            )? {
                // Rows whose settings name no order stay NULL: read as shuffled.
                let order = settings_of(&r[1])
                    .get("order")
                    .and_then(serde_json::Value::as_str)
                    .and_then(Order::parse);
                if let Some(order) = order {
                    db.execute(
                        "UPDATE experiments SET run_order = $1 WHERE id = $2",
                        &[order.as_str().into(), r[0].int().unwrap_or(0).into()],
                    )?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// A stored row's settings as JSON; an unreadable one as none.
fn settings_of(column: &Value) -> serde_json::Value {
    column
        .text()
        .and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default()
}

/// The kind of an experiment stored before the `kind` column, as `history`
/// told it then: an explanation or explain's arms; tune's settings or `tune:`
/// candidates; lambda's settings or `lambda:init` readiness; else a bench.
fn old_kind(explained: bool, variants: &[(String, String)], settings: &serde_json::Value) -> Kind {
    let names: Vec<&str> = variants.iter().map(|(n, _)| n.as_str()).collect();
    let arms = names == EXPLAIN_ARMS
        || names
            .split_last()
            .is_some_and(|(last, arms)| *last == EXPLAIN_PROFILED_ARM && arms == EXPLAIN_ARMS);
    if explained || arms {
        Kind::Explain
    } else if settings.get("tune").is_some_and(|t| !t.is_null())
        || names.iter().any(|n| n.starts_with("tune:"))
    {
        Kind::Tune
    } else if settings.get("lambda").is_some_and(|l| !l.is_null())
        || variants.iter().any(|(_, readiness)| readiness == "lambda:init")
    {
        Kind::Lambda
    } else {
        Kind::Bench
    }
}

/// Whether `table` already has `column`: a migration that adds one is skipped
/// then, like the IF NOT EXISTS of the others (a version set back by hand).
fn has_column(db: &mut dyn Db, table: &str, column: &str) -> Result<bool> {
    let rows = match db.dialect() {
        Dialect::Sqlite => db.query(
            "SELECT COUNT(*) FROM pragma_table_info($1) WHERE name = $2",
            &[table.into(), column.into()],
        )?,
        Dialect::Postgres => db.query(
            "SELECT COUNT(*) FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name::text = $1::text AND column_name::text = $2::text",
            &[table.into(), column.into()],
        )?,
    };
    Ok(rows.first().and_then(|r| r[0].int()).unwrap_or(0) > 0)
}

/// Run one migration; an ALTER TABLE … ADD COLUMN only when the column is missing.
fn apply(db: &mut dyn Db, dialect: Dialect, step: &str) -> Result<()> {
    if let Some(rest) = step.strip_prefix("ALTER TABLE ") {
        let mut words = rest.split_whitespace();
        if let (Some(table), Some("ADD"), Some("COLUMN"), Some(column)) =
            (words.next(), words.next(), words.next(), words.next())
        {
            if has_column(db, table, column)? {
                return Ok(());
            }
        }
    }
    db.batch(&sql_for(dialect, step))
}

fn sql_for(dialect: Dialect, sql: &str) -> String {
    match dialect {
        Dialect::Sqlite => sql.to_string(),
        Dialect::Postgres => sql.replace("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY"),
    }
}

fn version(db: &mut dyn Db) -> Result<i64> {
    let rows = db.query("SELECT value FROM meta WHERE key = 'schema_version'", &[])?;
    Ok(rows.first().and_then(|r| r[0].int()).unwrap_or(0))
}

/// Bring the schema to CURRENT, or refuse a newer one. Safe when several
/// coldstart processes open a new database at once.
pub fn migrate(db: &mut dyn Db, name: &str) -> Result<()> {
    db.batch("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        .or_else(|e| {
            if db.dialect() == Dialect::Postgres {
                retry_create_meta(db, e)
            } else {
                Err(e)
            }
        })?;
    let dialect = db.dialect();
    transaction(db, |db| {
        if dialect == Dialect::Postgres {
            // Serialise concurrent migrations of one PostgreSQL database.
            db.query("SELECT pg_advisory_xact_lock(7352846101)::text", &[])?;
        }
        let have = version(db)?;
        if have > CURRENT {
            bail!(
                "{name} has schema version {have}, newer than this coldstart understands ({CURRENT}): \
                 upgrade coldstart (the database was left unchanged)"
            );
        }
        for (i, step) in MIGRATIONS.iter().enumerate().skip(have as usize) {
            apply(db, dialect, step)?;
            let v = (i + 1) as i64;
            fill(db, v)?;
            db.execute("DELETE FROM meta WHERE key = 'schema_version'", &[])?;
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', $1)",
                &[Value::from(v.to_string())],
            )?;
        }
        Ok(())
    })
}

/// Two first-time PostgreSQL clients can race on CREATE TABLE IF NOT EXISTS
/// (a unique violation in the catalog); the loser only has to look again.
fn retry_create_meta(db: &mut dyn Db, first: anyhow::Error) -> Result<()> {
    std::thread::sleep(std::time::Duration::from_millis(50));
    db.batch("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        .map_err(|_| first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{sqlite::Sqlite, Filter, Store};

    /// A store written by a coldstart of schema version 1 (before explains were
    /// stored) opens, gains the explanations table, and keeps its experiments.
    #[test]
    fn a_version_1_store_migrates_to_explanations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        {
            let mut db = Sqlite::open(&path).unwrap();
            db.batch("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                .unwrap();
            db.batch(MIGRATIONS[0]).unwrap();
            db.batch(
                "INSERT INTO meta VALUES ('schema_version', '1');
                 INSERT INTO experiments (created_unix_s, command_line, coldstart_version, settings_json, stopped)
                 VALUES (1, 'coldstart bench -- true', '0.1.0', '{}', 'completed');",
            )
            .unwrap();
        }
        let mut store = Store::open(path.to_str().unwrap()).unwrap();
        assert_eq!(version(store.db.as_mut()).unwrap(), CURRENT);
        let listed = store.list(&Filter::default()).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].kind, None, "a bench is not an explain");
        assert_eq!(store.explanation(1).unwrap(), None);

        store
            .add_explanation(1, r#"{"schema":"coldstart.explain/1"}"#)
            .unwrap();
        assert_eq!(
            store.explanation(1).unwrap().as_deref(),
            Some(r#"{"schema":"coldstart.explain/1"}"#)
        );
        assert_eq!(
            store.list(&Filter::default()).unwrap()[0].kind.map(Kind::as_str),
            Some("explain")
        );
        // One explanation per experiment.
        assert!(store.add_explanation(1, "{}").is_err());
        drop(store);
        // Opening again migrates nothing twice.
        let mut again = Store::open(path.to_str().unwrap()).unwrap();
        assert_eq!(
            again.explanation(1).unwrap().as_deref(),
            Some(r#"{"schema":"coldstart.explain/1"}"#)
        );
    }

    /// A store of schema version 2 (before sweeps) opens, gains
    /// `variants.params_json`, loads its old variants with no parameters, and
    /// stores and loads a sweep point's values in order.
    #[test]
    fn a_version_2_store_migrates_to_sweep_parameters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v2.db");
        {
            let mut db = Sqlite::open(&path).unwrap();
            db.batch("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                .unwrap();
            db.batch(MIGRATIONS[0]).unwrap();
            db.batch(MIGRATIONS[1]).unwrap();
            db.batch(
                r#"INSERT INTO meta VALUES ('schema_version', '2');
                 INSERT INTO experiments (created_unix_s, command_line, coldstart_version, settings_json, stopped)
                 VALUES (1, 'coldstart bench -- true', '0.1.0', '{"runs":"1","warmup":0,"order":"shuffled","timeout_ms":1,"poll_interval_us":1,"requests":0,"seed":1}', 'completed');
                 INSERT INTO variants (experiment_id, idx, name, command, readiness, target_json)
                 VALUES (1, 0, 'old', 'true', 'exit', '{"argv":["true"],"program":"/bin/true","env":[],"cwd":null}');"#,
            )
            .unwrap();
        }
        let mut store = Store::open(path.to_str().unwrap()).unwrap();
        assert_eq!(version(store.db.as_mut()).unwrap(), CURRENT);
        let old = store.load(1).unwrap();
        assert_eq!(old.result.variants[0].name, "old");
        assert!(old.result.variants[0].params.is_empty());

        let target = old.result.variants[0].target.clone();
        let params = vec![
            ("n".to_string(), "4".to_string()),
            ("heap".to_string(), "64m".to_string()),
        ];
        let point = crate::experiment::Variant {
            name: crate::experiment::sweep::point_name("agent", &params),
            target,
            readiness: "exit".into(),
            params: params.clone(),
        };
        let id = store
            .begin(
                &crate::store::meta::collect(),
                Kind::Bench,
                &crate::store::tests::settings(),
                &[point],
            )
            .unwrap();
        let back = store.load(id).unwrap();
        assert_eq!(
            back.result.variants[0].params, params,
            "values in parameter order"
        );
        assert_eq!(back.result.variants[0].base_name(), "agent");
        // history --target NAME finds the sweep points of NAME.
        let found = store
            .list(&Filter {
                target: Some("agent".into()),
                ..Filter::default()
            })
            .unwrap();
        assert_eq!(found.iter().map(|l| l.id).collect::<Vec<_>>(), [id]);
        drop(store);
        let mut again = Store::open(path.to_str().unwrap()).unwrap();
        assert_eq!(again.load(id).unwrap().result.variants[0].params, params);
    }

    /// A fresh database for a migration test: SQLite, and PostgreSQL when
    /// COLDSTART_TEST_POSTGRES names a server (as tests/integration/store.rs does).
    fn fresh_stores(dir: &std::path::Path, tag: &str) -> Vec<String> {
        let sqlite = dir.join(format!("{tag}.db")).display().to_string();
        std::iter::once(sqlite).chain(fresh_postgres(tag)).collect()
    }

    #[cfg(feature = "postgres")]
    fn fresh_postgres(tag: &str) -> Option<String> {
        let admin = std::env::var("COLDSTART_TEST_POSTGRES")
            .ok()
            .filter(|a| !a.is_empty())?;
        let db = format!("cs_{tag}_{}", std::process::id());
        let mut client = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
        client
            .batch_execute(&format!("DROP DATABASE IF EXISTS {db}"))
            .unwrap();
        client.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
        let mut url = url::Url::parse(&admin).unwrap();
        url.set_path(&db);
        Some(url.to_string())
    }

    #[cfg(not(feature = "postgres"))]
    fn fresh_postgres(_tag: &str) -> Option<String> {
        None
    }

    fn open_raw(spec: &str) -> Box<dyn Db> {
        #[cfg(feature = "postgres")]
        if spec.starts_with("postgres") {
            return Box::new(crate::store::postgres::Postgres::open(spec).unwrap());
        }
        Box::new(Sqlite::open(std::path::Path::new(spec)).unwrap())
    }

    /// A store of schema version 4 (before `kind` and `run_order`) gets each
    /// experiment's kind from what it kept, as `history` told it before, and
    /// its run order from its settings; on SQLite and PostgreSQL alike.
    #[test]
    fn a_version_4_store_migrates_to_kinds_and_run_orders() {
        let dir = tempfile::tempdir().unwrap();
        for spec in fresh_stores(dir.path(), "v4") {
            let mut ids = Vec::new();
            {
                let mut db = open_raw(&spec);
                let dialect = db.dialect();
                db.batch("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                    .unwrap();
                for step in &MIGRATIONS[..4] {
                    apply(db.as_mut(), dialect, step).unwrap();
                }
                db.batch("INSERT INTO meta VALUES ('schema_version', '4')")
                    .unwrap();
                let order = |o: &str| {
                    format!(
                        r#"{{"runs":"2","warmup":0,"order":"{o}","timeout_ms":1,"poll_interval_us":1,"requests":0,"seed":1}}"#
                    )
                };
                let rows: [(String, &[&str], &str); 6] = [
                    (order("sequential"), &["a", "b"], "exit"),
                    // An explain stopped before its explanation: its arms tell.
                    (order("shuffled"), &["untraced", "traced", "adapted", "profiled"], "exit"),
                    (order("shuffled"), &["untraced", "traced", "adapted"], "exit"),
                    (
                        r#"{"runs":"2","warmup":0,"order":"shuffled","timeout_ms":1,"poll_interval_us":1,"requests":0,"seed":1,"tune":{"runtime":"native","executable":"/bin/true","candidates":[]}}"#.into(),
                        &["baseline", "tune:bind-now"],
                        "exit",
                    ),
                    // An older lambda row: no order in its settings.
                    (r#"{"lambda":{"function_timeout_ms":3000}}"#.into(), &["128MB"], "lambda:init"),
                    ("not json".into(), &["x"], "exit"),
                ];
                for (settings, names, readiness) in rows {
                    let id = db
                        .query(
                            "INSERT INTO experiments (created_unix_s, command_line, coldstart_version, settings_json, stopped) \
                             VALUES (1, 'coldstart', '0.1.0', $1, 'completed') RETURNING id",
                            &[settings.into()],
                        )
                        .unwrap()[0][0]
                        .int()
                        .unwrap();
                    for (i, name) in names.iter().enumerate() {
                        db.execute(
                            "INSERT INTO variants (experiment_id, idx, name, command, readiness, target_json) \
                             VALUES ($1, $2, $3, 'true', $4, $5)",
                            &[
                                id.into(),
                                (i as i64).into(),
                                (*name).into(),
                                readiness.into(),
                                r#"{"argv":["true"],"program":"/bin/true","env":[],"cwd":null}"#.into(),
                            ],
                        )
                        .unwrap();
                    }
                    ids.push(id);
                }
                db.execute(
                    "INSERT INTO explanations (experiment_id, data_json) VALUES ($1, '{}')",
                    &[ids[2].into()],
                )
                .unwrap();
            }
            let mut store = Store::open(&spec).unwrap();
            assert_eq!(version(store.db.as_mut()).unwrap(), CURRENT, "{spec}");
            let kinds: Vec<Option<Kind>> = ids.iter().map(|id| store.load(*id).unwrap().kind).collect();
            assert_eq!(
                kinds,
                [
                    Kind::Bench,
                    Kind::Explain,
                    Kind::Explain,
                    Kind::Tune,
                    Kind::Lambda,
                    Kind::Bench
                ]
                .map(Some),
                "{spec}"
            );
            let designs: Vec<coldstart_stats::Design> = ids
                .iter()
                .map(|id| store.load(*id).unwrap().result.design)
                .collect();
            assert_eq!(
                designs,
                [
                    coldstart_stats::Design::Sequential,
                    coldstart_stats::Design::Interleaved,
                    coldstart_stats::Design::Interleaved,
                    coldstart_stats::Design::Interleaved,
                    coldstart_stats::Design::Interleaved,
                    coldstart_stats::Design::Interleaved,
                ],
                "{spec}"
            );
            // history lists explains and tunes as such, as it did.
            let mut listed = store.list(&Filter::default()).unwrap();
            listed.reverse();
            assert_eq!(
                listed.iter().map(|l| l.kind).collect::<Vec<_>>(),
                [
                    None,
                    Some(Kind::Explain),
                    Some(Kind::Explain),
                    Some(Kind::Tune),
                    None,
                    None
                ],
                "{spec}"
            );
        }
    }

    /// A version number set back by hand (to 2) does not wedge the store: the
    /// column migration 3 adds is there already, so it is skipped.
    #[test]
    fn a_version_set_back_reapplies_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("back.db");
        drop(Store::open(path.to_str().unwrap()).unwrap());
        {
            let mut db = Sqlite::open(&path).unwrap();
            db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'", &[])
                .unwrap();
        }
        let mut store = Store::open(path.to_str().unwrap()).unwrap();
        assert_eq!(version(store.db.as_mut()).unwrap(), CURRENT);
        assert!(has_column(store.db.as_mut(), "variants", "params_json").unwrap());
        assert!(!has_column(store.db.as_mut(), "variants", "no_such").unwrap());
    }
}
