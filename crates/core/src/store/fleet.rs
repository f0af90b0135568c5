//! Fleet experiments: many shard processes, on many machines, writing one stored
//! experiment with no coordinator but the database. The first shard to arrive
//! creates the experiment (its plan with it); the others join it if their plan is
//! the same; each shard's runs are filed under its index and attempt, and a shard
//! started again (an engine's retry) replaces the runs of its earlier attempt.

use super::db::{transaction, Db, Dialect, Value};
use super::meta::Metadata;
use super::now_unix_s;
use super::Store;
use crate::experiment::shard::{Fleet, FleetRecord, Host, ShardRecord};
use crate::experiment::{ExperimentSettings, Kind, StopReason, Variant};
use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;

/// Which of a shard's samples count: those of its current attempt (a retry's
/// `begin_shard` deletes the earlier ones, and this also drops a run that a
/// stale attempt committed after that). `s` is the samples table's alias.
pub(super) const CURRENT_ATTEMPT: &str = "(s.shard IS NULL OR s.shard_attempt = \
     (SELECT h.attempt FROM shards h WHERE h.experiment_id = s.experiment_id AND h.idx = s.shard))";

/// The shard this store writes for, once `begin_shard` has joined it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Writing {
    pub experiment: i64,
    pub index: u32,
    pub attempt: u32,
}

/// What joining a fleet experiment did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Joined {
    pub experiment: i64,
    /// True when this shard was the first and created the experiment.
    pub created: bool,
    pub attempt: u32,
    /// Runs of this shard's earlier attempt that were deleted.
    pub replaced_runs: u64,
}

/// What must be equal for two shards to be one experiment: its kind, settings
/// (the seed aside: each shard shuffles with its own) and variants (their
/// commands as typed, not where each machine's PATH finds the program). As JSON, so
/// the stored plan can be compared by a coldstart of another version.
fn plan_of<K: Serialize>(
    kind: Kind,
    settings: &ExperimentSettings<K>,
    variants: &[Variant],
) -> Result<serde_json::Value> {
    let mut settings = serde_json::to_value(settings)?;
    if let Some(m) = settings.as_object_mut() {
        m.remove("seed");
    }
    let variants: Vec<serde_json::Value> = variants
        .iter()
        .map(|v| {
            // The program's resolved path is each machine's own (PATH, module
            // trees): the command as typed is what shards must agree on.
            let mut target = serde_json::to_value(&v.target)?;
            if let Some(m) = target.as_object_mut() {
                m.remove("program");
            }
            Ok(serde_json::json!({
                "name": v.name,
                "target": target,
                "readiness": v.readiness,
                "params": v.params,
            }))
        })
        .collect::<Result<_>>()?;
    Ok(serde_json::json!({"kind": kind.as_str(), "settings": settings, "variants": variants}))
}

/// Where two plans first differ, for the refusal's one line.
fn first_difference(stored: &serde_json::Value, ours: &serde_json::Value) -> String {
    let (a, b) = (&stored["variants"], &ours["variants"]);
    if stored["kind"] != ours["kind"] {
        return format!("it is a {} experiment", stored["kind"].as_str().unwrap_or("?"));
    }
    if a.as_array().map(Vec::len) != b.as_array().map(Vec::len) {
        return format!(
            "it has {} variants, this shard {}",
            a.as_array().map_or(0, Vec::len),
            b.as_array().map_or(0, Vec::len)
        );
    }
    for (x, y) in a
        .as_array()
        .into_iter()
        .flatten()
        .zip(b.as_array().into_iter().flatten())
    {
        if x != y {
            let field = ["name", "target", "readiness", "params"]
                .into_iter()
                .find(|f| x[f] != y[f])
                .unwrap_or("variant");
            return format!(
                "variant '{}' differs in its {field}",
                x["name"].as_str().unwrap_or("?")
            );
        }
    }
    let (s, t) = (&stored["settings"], &ours["settings"]);
    let mut keys: Vec<&String> = s.as_object().into_iter().flat_map(|m| m.keys()).collect();
    keys.extend(t.as_object().into_iter().flat_map(|m| m.keys()));
    keys.sort();
    keys.dedup();
    match keys.into_iter().find(|k| s[k.as_str()] != t[k.as_str()]) {
        Some(k) => format!(
            "its setting '{k}' is {}, this shard's {}",
            s[k.as_str()],
            t[k.as_str()]
        ),
        None => "its plan differs".into(),
    }
}

/// This machine as a shard's row records it; `env` looks up the engine's
/// variables (`std::env::var` in the binary).
pub fn this_host(env: impl Fn(&str) -> Option<String>) -> Host {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let meta = super::meta::collect();
    Host {
        hostname: meta.hostname,
        node: [
            "NODE_NAME",
            "SLURMD_NODENAME",
            "RUNNER_NAME",
            "CI_RUNNER_DESCRIPTION",
        ]
        .iter()
        .find_map(|v| env(v).filter(|s| !s.trim().is_empty())),
        cpu_model: meta.cpu_model,
        cores: meta.cores,
        kernel: meta.kernel,
        memory_bytes: read("/proc/meminfo").and_then(|m| mem_total(&m)),
        machine_id: read("/etc/machine-id").or_else(|| read("/var/lib/dbus/machine-id")),
    }
}

fn mem_total(meminfo: &str) -> Option<i64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// What serialises the joins and ends of one experiment's shards on PostgreSQL:
/// a lock on the experiment's row that other shards' runs (whose foreign key
/// takes a key-share lock on it) do not wait for. SQLite's IMMEDIATE
/// transactions already serialise every writer.
fn row_lock(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => " FOR NO KEY UPDATE",
        Dialect::Sqlite => "",
    }
}

/// A database's unique-index refusal: two first shards created the experiment at
/// once, and this one lost.
fn lost_the_race(e: &anyhow::Error) -> bool {
    let text = format!("{e:#}").to_lowercase();
    text.contains("unique") || text.contains("duplicate key")
}

impl Store {
    /// Join (or create) the fleet experiment `fleet.name` as shard
    /// `fleet.shard`: refuse a plan or shard count that differs from the stored
    /// one; a shard seen before is started again, its earlier runs deleted.
    pub fn begin_shard<K: Serialize>(
        &mut self,
        meta: &Metadata,
        kind: Kind,
        settings: &ExperimentSettings<K>,
        variants: &[Variant],
        fleet: &Fleet,
        host: &Host,
    ) -> Result<Joined> {
        let plan = plan_of(kind, settings, variants)?;
        // Two first shards may both find no experiment and both create it; the
        // unique name lets one win, and the other joins what it made.
        let mut tries = 0;
        loop {
            tries += 1;
            match self.try_begin_shard(meta, kind, settings, variants, fleet, host, &plan) {
                Err(e) if tries < 3 && lost_the_race(&e) => continue,
                other => {
                    let joined = other.with_context(|| {
                        format!(
                            "joining shard {}/{} to experiment '{}' in {}",
                            fleet.shard.index, fleet.shard.count, fleet.name, self.location
                        )
                    })?;
                    self.writing = Some(Writing {
                        experiment: joined.experiment,
                        index: fleet.shard.index,
                        attempt: joined.attempt,
                    });
                    return Ok(joined);
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn try_begin_shard<K: Serialize>(
        &mut self,
        meta: &Metadata,
        kind: Kind,
        settings: &ExperimentSettings<K>,
        variants: &[Variant],
        fleet: &Fleet,
        host: &Host,
        plan: &serde_json::Value,
    ) -> Result<Joined> {
        let plan_text = serde_json::to_string(plan)?;
        let settings_json = serde_json::to_string(settings)?;
        transaction(self.db.as_mut(), |db| {
            // Two starts of one shard at once (a replacement started while the first
            // copy still ran) would both read attempt k and both file runs under
            // k + 1: joins are serialised on the experiment's row, the lock taken
            // first (as finish_shard does) so the two never wait on each other.
            let found = db.query(
                &format!(
                    "SELECT id, plan_json, shard_count FROM experiments WHERE fleet = $1{}",
                    row_lock(db.dialect())
                ),
                &[fleet.name.clone().into()],
            )?;
            let (experiment, created) = match found.first() {
                Some(r) => {
                    let id = r[0].int().ok_or_else(|| anyhow!("experiment without an id"))?;
                    let stored: serde_json::Value =
                        r[1].text()
                            .and_then(|t| serde_json::from_str(&t).ok())
                            .ok_or_else(|| anyhow!("experiment '{}' has no readable plan", fleet.name))?;
                    if stored != *plan {
                        bail!(
                            "experiment '{}' was started with another plan ({}): every shard must run the \
                             same variants and settings; give this one another --experiment name",
                            fleet.name,
                            first_difference(&stored, plan)
                        );
                    }
                    let count = r[2].int().unwrap_or(0);
                    if count != i64::from(fleet.shard.count) {
                        bail!(
                            "experiment '{}' has {count} shards, this shard says {}: every shard must \
                             give the same N in K/N",
                            fleet.name,
                            fleet.shard.count
                        );
                    }
                    (id, false)
                }
                None => {
                    let id =
                        super::insert_experiment(db, meta, kind, &settings_json, settings.order, variants)?;
                    db.execute(
                        "UPDATE experiments SET fleet = $1, shard_count = $2, plan_json = $3 WHERE id = $4",
                        &[
                            fleet.name.clone().into(),
                            i64::from(fleet.shard.count).into(),
                            plan_text.clone().into(),
                            id.into(),
                        ],
                    )?;
                    (id, true)
                }
            };
            let (attempt, replaced_runs) = start_shard(db, experiment, fleet, host, settings.seed)?;
            Ok(Joined {
                experiment,
                created,
                attempt,
                replaced_runs,
            })
        })
    }

    /// A shard's run, filed under its attempt; refused when the shard was started
    /// again since (the engine retried it elsewhere while this one still ran).
    pub(super) fn check_attempt(db: &mut dyn Db, w: &Writing) -> Result<()> {
        let rows = db.query(
            "SELECT attempt FROM shards WHERE experiment_id = $1 AND idx = $2",
            &[w.experiment.into(), i64::from(w.index).into()],
        )?;
        let now = rows.first().and_then(|r| r[0].int()).unwrap_or(0);
        if now != i64::from(w.attempt) {
            bail!(
                "shard {} was started again (attempt {now}) while this attempt ({}) ran: its runs \
                 replace this one's, so this one stops storing",
                w.index,
                w.attempt
            );
        }
        Ok(())
    }

    /// The shard ended (`stopped`); when every shard has, so has the experiment:
    /// completed if all completed, else the first other reason.
    pub(super) fn finish_shard(
        &mut self,
        w: Writing,
        stopped: StopReason,
        load_json: Option<String>,
    ) -> Result<()> {
        transaction(self.db.as_mut(), |db| {
            // Two last shards ending at once: each must see the other's end, so the
            // experiment's row is locked before the shards are counted (SQLite's
            // IMMEDIATE transaction already serialises writers). First, before this
            // shard's row, in the order begin_shard takes them.
            let count = db
                .query(
                    &format!(
                        "SELECT shard_count FROM experiments WHERE id = $1{}",
                        row_lock(db.dialect())
                    ),
                    &[w.experiment.into()],
                )?
                .first()
                .and_then(|r| r[0].int())
                .unwrap_or(0);
            db.execute(
                "UPDATE shards SET ended_unix_s = $1, stopped = $2, load_json = $3 \
                 WHERE experiment_id = $4 AND idx = $5 AND attempt = $6",
                &[
                    now_unix_s().into(),
                    stopped.as_str().into(),
                    load_json.into(),
                    w.experiment.into(),
                    i64::from(w.index).into(),
                    i64::from(w.attempt).into(),
                ],
            )?;
            let ended: Vec<String> = db
                .query(
                    "SELECT stopped FROM shards WHERE experiment_id = $1 AND ended_unix_s IS NOT NULL ORDER BY idx",
                    &[w.experiment.into()],
                )?
                .into_iter()
                .filter_map(|r| r[0].text())
                .collect();
            if ended.len() as i64 >= count {
                let all = ended
                    .iter()
                    .find(|s| s.as_str() != StopReason::Completed.as_str())
                    .cloned()
                    .unwrap_or_else(|| StopReason::Completed.as_str().to_string());
                db.execute(
                    "UPDATE experiments SET stopped = $1 WHERE id = $2",
                    &[all.into(), w.experiment.into()],
                )?;
            }
            Ok(())
        })
        .with_context(|| format!("closing shard {} in {}", w.index, self.location))
    }

    /// A stored experiment's fleet: its name, shard count and shards (None when
    /// it was not sharded).
    pub fn fleet(&mut self, experiment: i64) -> Result<Option<FleetRecord>> {
        let rows = self.db.query(
            "SELECT fleet, shard_count FROM experiments WHERE id = $1",
            &[experiment.into()],
        )?;
        let Some((name, count)) = rows.first().and_then(|r| Some((r[0].text()?, r[1].int()?))) else {
            return Ok(None);
        };
        let shards = self
            .db
            .query(
                "SELECT h.idx, h.attempt, h.source, h.hostname, h.node, h.cpu_model, h.cores, h.kernel, \
                 h.memory_bytes, h.machine_id, h.started_unix_s, h.ended_unix_s, h.stopped, h.replaced_runs, \
                 (SELECT COUNT(*) FROM samples s WHERE s.experiment_id = h.experiment_id AND s.shard = h.idx \
                  AND s.shard_attempt = h.attempt AND s.warmup = 0) \
                 FROM shards h WHERE h.experiment_id = $1 ORDER BY h.idx",
                &[experiment.into()],
            )?
            .into_iter()
            .map(|r| ShardRecord {
                index: r[0].int().unwrap_or(0) as u32,
                attempt: r[1].int().unwrap_or(0) as u32,
                source: r[2].text().unwrap_or_default(),
                host: Host {
                    hostname: r[3].text().unwrap_or_default(),
                    node: r[4].text(),
                    cpu_model: r[5].text().unwrap_or_default(),
                    cores: r[6].int().unwrap_or(0),
                    kernel: r[7].text().unwrap_or_default(),
                    memory_bytes: r[8].int(),
                    machine_id: r[9].text(),
                },
                started_unix_s: r[10].int().unwrap_or(0),
                ended_unix_s: r[11].int(),
                stopped: r[12].text(),
                replaced_runs: r[13].int().unwrap_or(0) as u64,
                runs: r[14].int().unwrap_or(0) as u64,
            })
            .collect();
        Ok(Some(FleetRecord {
            name,
            count: count as u32,
            shards,
        }))
    }

    /// The newest fleet experiment's id.
    pub fn latest_fleet(&mut self) -> Result<Option<i64>> {
        let rows = self.db.query(
            "SELECT id FROM experiments WHERE fleet IS NOT NULL ORDER BY id DESC LIMIT 1",
            &[],
        )?;
        Ok(rows.first().and_then(|r| r[0].int()))
    }

    /// The id of the fleet experiment called `name`, if one is stored.
    pub fn fleet_id(&mut self, name: &str) -> Result<Option<i64>> {
        let rows = self
            .db
            .query("SELECT id FROM experiments WHERE fleet = $1", &[name.into()])?;
        Ok(rows.first().and_then(|r| r[0].int()))
    }
}

/// This shard's row: new (attempt 1), or started again (attempt + 1, host and
/// times replaced, its earlier runs deleted). The experiment is open again until
/// this shard ends.
fn start_shard(
    db: &mut dyn Db,
    experiment: i64,
    fleet: &Fleet,
    host: &Host,
    seed: u64,
) -> Result<(u32, u64)> {
    let index = i64::from(fleet.shard.index);
    let before = db
        .query(
            "SELECT attempt FROM shards WHERE experiment_id = $1 AND idx = $2",
            &[experiment.into(), index.into()],
        )?
        .first()
        .and_then(|r| r[0].int());
    let mut replaced = 0;
    if before.is_some() {
        let sample_ids = "SELECT id FROM samples WHERE experiment_id = $1 AND shard = $2";
        replaced = db
            .query(
                "SELECT COUNT(*) FROM samples WHERE experiment_id = $1 AND shard = $2 AND warmup = 0",
                &[experiment.into(), index.into()],
            )?
            .first()
            .and_then(|r| r[0].int())
            .unwrap_or(0);
        db.execute(
            &format!("DELETE FROM captures WHERE sample_id IN ({sample_ids})"),
            &[experiment.into(), index.into()],
        )?;
        db.execute(
            "DELETE FROM samples WHERE experiment_id = $1 AND shard = $2",
            &[experiment.into(), index.into()],
        )?;
        db.execute(
            "DELETE FROM shards WHERE experiment_id = $1 AND idx = $2",
            &[experiment.into(), index.into()],
        )?;
    }
    let attempt = before.unwrap_or(0) + 1;
    let values: Vec<Value> = vec![
        experiment.into(),
        index.into(),
        attempt.into(),
        fleet.shard.source.describe().into(),
        host.hostname.clone().into(),
        host.node.clone().into(),
        host.cpu_model.clone().into(),
        host.cores.into(),
        host.kernel.clone().into(),
        host.memory_bytes.into(),
        host.machine_id.clone().into(),
        now_unix_s().into(),
        replaced.into(),
        // The seed's bits, as the signed 64-bit integer both databases hold.
        (seed as i64).into(),
    ];
    db.execute(
        "INSERT INTO shards (experiment_id, idx, attempt, source, hostname, node, cpu_model, cores, kernel, \
         memory_bytes, machine_id, started_unix_s, replaced_runs, seed) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        &values,
    )?;
    db.execute(
        "UPDATE experiments SET stopped = NULL WHERE id = $1",
        &[experiment.into()],
    )?;
    Ok((attempt as u32, replaced as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::shard::{Shard, Source};
    use crate::fixtures::{sample, variants};

    fn fleet(name: &str, index: u32, count: u32) -> Fleet {
        Fleet {
            name: name.into(),
            named_by: "--experiment",
            shard: Shard {
                index,
                count,
                source: Source::Flag,
            },
        }
    }

    fn host(name: &str) -> Host {
        Host {
            hostname: name.into(),
            ..Host::default()
        }
    }

    fn join(store: &mut Store, f: &Fleet, runs: usize) -> Result<Joined> {
        let mut settings = crate::store::tests::settings();
        settings.runs = crate::experiment::Runs::Fixed(runs);
        // Each shard's own seed: not part of the plan.
        settings.seed = u64::from(f.shard.index) * 7919;
        store.begin_shard(
            &crate::store::meta::collect(),
            Kind::Bench,
            &settings,
            &variants(),
            f,
            &host(&format!("m{}", f.shard.index)),
        )
    }

    fn write(store: &mut Store, id: i64, rounds: usize) -> Result<()> {
        for r in 0..rounds {
            for v in 0..2 {
                store.add_sample(id, &sample(v, r, false, Some(10.0 + v as f64)))?;
            }
        }
        Ok(())
    }

    #[test]
    fn shards_meet_in_one_experiment_and_a_retry_replaces_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.db").display().to_string();
        let (mut a, mut b) = (Store::open(&path).unwrap(), Store::open(&path).unwrap());
        let first = join(&mut a, &fleet("exp", 0, 2), 3).unwrap();
        assert!(first.created && first.attempt == 1);
        let second = join(&mut b, &fleet("exp", 1, 2), 3).unwrap();
        assert_eq!((second.experiment, second.created), (first.experiment, false));
        let id = first.experiment;
        write(&mut a, id, 3).unwrap();
        write(&mut b, id, 2).unwrap();
        a.finish(id, StopReason::Completed, None).unwrap();
        assert_eq!(a.load(id).unwrap().result.stopped, None, "shard 1 still runs");

        // Shard 0 again (an engine's retry): its 6 runs go, 2 new ones come.
        let mut retry = Store::open(&path).unwrap();
        let again = join(&mut retry, &fleet("exp", 0, 2), 3).unwrap();
        assert_eq!((again.attempt, again.replaced_runs), (2, 6));
        write(&mut retry, id, 1).unwrap();
        // The first attempt, still running somewhere, may no longer store.
        let e = write(&mut a, id, 1).unwrap_err();
        assert!(format!("{e:#}").contains("was started again"), "{e:#}");
        retry.finish(id, StopReason::Completed, None).unwrap();
        b.finish(id, StopReason::Completed, None).unwrap();

        let stored = retry.load(id).unwrap();
        let by_shard = |k| {
            stored
                .result
                .samples
                .iter()
                .filter(|s| s.shard == Some(k))
                .count()
        };
        assert_eq!((by_shard(0), by_shard(1)), (2, 4));
        assert_eq!(stored.result.stopped, Some(StopReason::Completed));
        let record = stored.result.fleet.unwrap();
        assert_eq!(record.tally(), (2, 0, vec![]));
        assert_eq!(record.shards[0].attempt, 2);
        assert_eq!(record.shards[0].runs, 2);
        assert_eq!(record.shards[0].host.hostname, "m0");
        assert_eq!(record.shards[1].runs, 4);
        assert_eq!(retry.resolve("exp").unwrap(), id);
    }

    #[test]
    fn a_shard_with_another_plan_or_count_is_refused_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.db").display().to_string();
        let mut s = Store::open(&path).unwrap();
        let id = join(&mut s, &fleet("exp", 0, 2), 3).unwrap().experiment;
        let e = join(&mut s, &fleet("exp", 1, 2), 4).unwrap_err();
        assert!(
            format!("{e:#}").contains("its setting 'runs' is \"3\", this shard's \"4\""),
            "{e:#}"
        );
        let e = join(&mut s, &fleet("exp", 1, 3), 3).unwrap_err();
        assert!(
            format!("{e:#}").contains("has 2 shards, this shard says 3"),
            "{e:#}"
        );
        let record = s.fleet(id).unwrap().unwrap();
        assert_eq!(record.tally(), (0, 1, vec![1]));
    }

    /// Machines whose PATH finds the program elsewhere run the same command.
    #[test]
    fn a_program_found_elsewhere_is_the_same_plan() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("f.db").display().to_string()).unwrap();
        let id = join(&mut s, &fleet("exp", 0, 2), 3).unwrap().experiment;
        let mut elsewhere = variants();
        for v in &mut elsewhere {
            v.target.program = "/opt/other/bin/true".into();
        }
        let mut settings = crate::store::tests::settings();
        settings.runs = crate::experiment::Runs::Fixed(3);
        let joined = s
            .begin_shard(
                &crate::store::meta::collect(),
                Kind::Bench,
                &settings,
                &elsewhere,
                &fleet("exp", 1, 2),
                &host("m1"),
            )
            .unwrap();
        assert_eq!(joined.experiment, id);
    }

    #[test]
    fn an_unsharded_experiment_has_no_fleet() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("f.db").display().to_string()).unwrap();
        let id = s
            .begin(
                &crate::store::meta::collect(),
                Kind::Bench,
                &crate::store::tests::settings(),
                &variants(),
            )
            .unwrap();
        assert!(s.fleet(id).unwrap().is_none());
        assert!(s.latest_fleet().unwrap().is_none());
    }
}
