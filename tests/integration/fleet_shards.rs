//! Fleet experiments from the engines' side: shard processes started as each engine
//! starts them (its variables set on the shard's coldstart only) meet in one stored
//! experiment, a retried or killed shard replaces its block, refusals write nothing,
//! first shards racing make one experiment, a stale attempt stops storing, and the
//! comparison is blocked by shard. Every test runs against SQLite and, when
//! COLDSTART_TEST_POSTGRES names a server, against PostgreSQL (a database per test).
//!
//! The oracles are the store itself (read here, not through coldstart), `fleet
//! status --json`, `history --json` and the JSON export of `show NAME`.
//!
//! No test waits on a sleep: a shard that must be caught mid-run runs a gate script
//! whose second run blocks until the test creates a file, and the test waits for
//! the first stored run (polling the store) before it acts.

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Every variable of an engine that coldstart reads. Each shard's environment is
/// scrubbed of them first: the test process may itself run under one of these
/// engines (GitHub Actions sets GITHUB_RUN_ID), which would name another experiment.
const ENGINE_VARS: &[&str] = &[
    "JOB_COMPLETION_INDEX",
    "COLDSTART_SHARDS",
    "JOB_UID",
    "NODE_NAME",
    "CI_NODE_INDEX",
    "CI_NODE_TOTAL",
    "CI_PIPELINE_ID",
    "CI_RUNNER_DESCRIPTION",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_JOB_ID",
    "SLURMD_NODENAME",
    "GITHUB_RUN_ID",
    "RUNNER_NAME",
];

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// `coldstart bench --warmup 0 --store STORE ARGS` with no engine variable but `env`.
fn bench(store: &str, env: &[(&str, String)], args: &[String]) -> Cs {
    let mut c = cs(&["bench", "--warmup", "0", "--store", store]);
    for var in ENGINE_VARS {
        c.env_remove(var);
    }
    c.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    c.args(args);
    c
}

/// The engines, each starting shard K of N its own way.
#[derive(Debug, Clone, Copy)]
enum Engine {
    Kubernetes,
    GitHub,
    GitLab,
    Slurm,
}

impl Engine {
    /// The experiment the engine's run id names.
    fn experiment(self) -> &'static str {
        match self {
            Engine::Kubernetes => "k8s-5f0c2a9e-8d1b-4c7e-9f3a-2b6d8e1c4a70",
            Engine::GitHub => "github-9081726354",
            Engine::GitLab => "gitlab-424242",
            Engine::Slurm => "slurm-31337",
        }
    }

    /// What the join line and `fleet status` say the shard's index came from.
    fn source(self) -> &'static str {
        match self {
            Engine::Kubernetes => "Kubernetes Indexed Job (JOB_COMPLETION_INDEX)",
            // GitHub has no index variable: its matrix passes --shard.
            Engine::GitHub => "--shard",
            Engine::GitLab => "GitLab parallel (CI_NODE_INDEX/CI_NODE_TOTAL)",
            Engine::Slurm => "Slurm job array (SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT)",
        }
    }

    /// The engine's name for shard `k`'s node: the shard's machine label.
    fn node(self, k: u32) -> String {
        format!("{self:?}-node-{k}").to_lowercase()
    }

    /// The variables (and, for GitHub, the flag) the engine gives shard `k` of `n`.
    fn shard(self, k: u32, n: u32) -> (Vec<(&'static str, String)>, Vec<String>) {
        let id = |e: Engine| {
            e.experiment()
                .split_once('-')
                .map(|(_, id)| id.to_string())
                .unwrap_or_default()
        };
        let node = self.node(k);
        match self {
            Engine::Kubernetes => (
                vec![
                    ("JOB_COMPLETION_INDEX", k.to_string()),
                    ("COLDSTART_SHARDS", n.to_string()),
                    ("JOB_UID", id(self)),
                    ("NODE_NAME", node),
                ],
                vec![],
            ),
            Engine::GitHub => (
                vec![("GITHUB_RUN_ID", id(self)), ("RUNNER_NAME", node)],
                vec!["--shard".into(), format!("{k}/{n}")],
            ),
            Engine::GitLab => (
                vec![
                    ("CI_NODE_INDEX", (k + 1).to_string()),
                    ("CI_NODE_TOTAL", n.to_string()),
                    ("CI_PIPELINE_ID", id(self)),
                    ("CI_RUNNER_DESCRIPTION", node),
                ],
                vec![],
            ),
            // An array --array=10-12: ids start above 0.
            Engine::Slurm => (
                vec![
                    ("SLURM_ARRAY_TASK_ID", (10 + k).to_string()),
                    ("SLURM_ARRAY_TASK_COUNT", n.to_string()),
                    ("SLURM_ARRAY_TASK_MIN", "10".into()),
                    ("SLURM_ARRAY_JOB_ID", id(self)),
                    ("SLURMD_NODENAME", node),
                ],
                vec![],
            ),
        }
    }
}

/// A shell script whose first run (of any shard) returns at once and whose later
/// runs wait for `go` in its directory: a shard started before `go` exists stores
/// exactly one run and then holds. The wait also ends when the directory is gone
/// (a failed test's tempdir), so no run outlives its test.
struct Gate {
    dir: tempfile::TempDir,
}

impl Gate {
    fn new() -> Gate {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = "d=$(dirname \"$0\")\n\
                      if [ -e \"$d/started\" ]; then\n\
                      \x20 while [ ! -e \"$d/go\" ] && [ -e \"$d/started\" ]; do sleep 0.005; done\n\
                      fi\n\
                      touch \"$d/started\"\n";
        std::fs::write(dir.path().join("gate.sh"), script).expect("write gate.sh");
        Gate { dir }
    }

    /// Two variants (so a run is told apart by variant and round) of the gate.
    fn plan(&self, runs: u32) -> Vec<String> {
        let script = self.dir.path().join("gate.sh").display().to_string();
        let mut a = strings(&["--runs", &runs.to_string()]);
        for name in ["A", "B"] {
            a.extend(strings(&["--name", name, "--", "sh", &script]));
        }
        a
    }

    fn open(&self) {
        std::fs::write(self.dir.path().join("go"), "").expect("write go");
    }
}

/// A spawned shard, killed (and reaped) if the test ends before it does.
struct Running(Option<Child>);

impl Running {
    fn take(mut self) -> Child {
        self.0.take().expect("a running child")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            c.kill().ok();
            c.wait().ok();
        }
    }
}

/// One number from the store itself (None while the store or its tables do not
/// exist yet).
fn count(store: &str, sql: &str) -> Option<i64> {
    #[cfg(feature = "postgres")]
    if store.contains("://") {
        let mut c = postgres::Client::connect(store, postgres::NoTls).ok()?;
        return c.query_one(sql, &[]).ok()?.try_get::<_, i64>(0).ok();
    }
    let c = rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    c.query_row(sql, [], |r| r.get(0)).ok()
}

/// Run `sql` on the store itself (as a racing writer would have).
fn execute(store: &str, sql: &str) {
    #[cfg(feature = "postgres")]
    if store.contains("://") {
        let mut c = postgres::Client::connect(store, postgres::NoTls).expect("connect to the store");
        c.batch_execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        return;
    }
    let c = rusqlite::Connection::open(store).expect("open the store");
    c.execute_batch(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Wait (polling the store) until `sql` counts at least `want`.
fn wait_for(store: &str, sql: &str, want: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(store, sql).unwrap_or(0) < want {
        assert!(Instant::now() < deadline, "{store}: `{sql}` never reached {want}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn status(store: &str, name: &str) -> Value {
    let v = cs(&["fleet", "status", name, "--json", "--store", store])
        .ok()
        .json();
    assert_eq!(v["schema"], "coldstart.fleet-status/1", "{v}");
    v
}

/// The stored experiment `name` as `show NAME --export-json` writes it.
fn export(store: &str, name: &str, dir: &Path) -> Value {
    let path = dir.join(format!("{}.json", name.replace('/', "_")));
    cs(&["show", name, "--store", store, "--export-json"])
        .arg(&path)
        .ok();
    json_file(&path)
}

/// `history --json`: every stored experiment.
fn history(store: &str) -> Vec<Value> {
    cs(&["history", "--json", "--store", store])
        .ok()
        .json()
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The measured runs of an export, each (shard, variant, round) once: the runs of
/// every shard's current attempt, no earlier attempt's left beside them.
fn runs_by_shard(doc: &Value) -> Vec<(u64, u64, u64)> {
    let runs: Vec<(u64, u64, u64)> = doc["samples"]
        .as_array()
        .expect("samples in the export")
        .iter()
        .filter(|s| s["warmup"] == false)
        .map(|s| {
            let n = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k} of a sample: {s}"));
            (n("shard"), n("variant"), n("round"))
        })
        .collect();
    let unique: BTreeSet<_> = runs.iter().collect();
    assert_eq!(unique.len(), runs.len(), "a run stored twice: {runs:?}");
    runs
}

/// Shard `k` of `n` under `engine`, to run to the end.
fn engine_shard(engine: Engine, store: &str, gate: &Gate, k: u32, n: u32) -> Cs {
    let (env, args) = engine.shard(k, n);
    let mut all = args;
    all.extend(gate.plan(RUNS));
    bench(store, &env, &all)
}

/// Runs per variant per shard in the engine tests (two variants: 2 × RUNS a shard).
const RUNS: u32 = 3;

/// One engine's contract: N shard processes land in one experiment named by the
/// engine's run id; a shard killed mid-run and run again, and a finished shard run
/// again, each replace their block (attempt 2).
fn engine_contract(engine: Engine, tag: &str) {
    const N: u32 = 3;
    let per_shard = i64::from(2 * RUNS);
    let name = engine.experiment();
    for (dir, store) in stores(tag) {
        let gate = Gate::new();
        // Shard 1 first: it creates the experiment, stores one run, holds on the
        // gate, and is killed there (SIGKILL: no chance to close its shard).
        let mut first = engine_shard(engine, &store, &gate, 1, N);
        first.stdout(Stdio::null()).stderr(Stdio::piped());
        let killed = Running(Some(first.spawn()));
        wait_for(
            &store,
            "SELECT COUNT(*) FROM samples WHERE shard = 1 AND warmup = 0",
            1,
        );
        // Reaped before the gate opens (its held run could end and be stored
        // otherwise), its stderr read after (the held run may share the pipe).
        let mut child = killed.take();
        let mut pipe = child.stderr.take().expect("the shard's stderr");
        child.kill().expect("SIGKILL the shard");
        child.wait().expect("reap the killed shard");
        gate.open();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut pipe, &mut err).expect("the killed shard's stderr");
        assert!(
            err.contains(&format!(
                "shard 1/{N} (from {}) of fleet experiment '{name}' (named by the engine's run id): created",
                engine.source()
            )),
            "{store}: {err}"
        );
        let partial = status(&store, name);
        assert_eq!(
            partial["running"], 1,
            "{store}: the killed shard never ended: {partial}"
        );
        assert_eq!(partial["by_shard"][0]["runs"], 1, "{store}: {partial}");

        for k in [0, 2] {
            let o = engine_shard(engine, &store, &gate, k, N).ok();
            let want = format!(
                "shard {k}/{N} (from {}) of fleet experiment '{name}' (named by the engine's run id): joined, experiment",
                engine.source()
            );
            assert!(o.stderr().contains(&want), "{store}: {}", o.streams());
        }
        // The engine's retries: the killed shard (1 run stored), and a finished one.
        for (k, earlier) in [(1, 1), (0, per_shard)] {
            let o = engine_shard(engine, &store, &gate, k, N).ok();
            let want = format!("joined, started again (attempt 2: its {earlier} earlier runs are replaced)");
            assert!(o.stderr().contains(&want), "{store}: {}", o.streams());
        }

        let s = status(&store, name);
        assert_eq!(s["name"], name, "{s}");
        assert_eq!(
            (&s["shards"], &s["done"], &s["running"]),
            (&N.into(), &N.into(), &0.into()),
            "{s}"
        );
        assert_eq!(s["missing"], serde_json::json!([]), "{s}");
        let shards = s["by_shard"].as_array().expect("by_shard");
        let got: Vec<(u64, u64, u64, i64)> = shards
            .iter()
            .map(|h| {
                assert_eq!(h["source"], engine.source(), "{h}");
                assert_eq!(h["stopped"], "completed", "{h}");
                let k = h["index"].as_u64().expect("index");
                assert_eq!(h["host"]["node"], engine.node(k as u32), "{h}");
                (
                    k,
                    h["attempt"].as_u64().expect("attempt"),
                    h["replaced_runs"].as_u64().expect("replaced"),
                    h["runs"].as_i64().expect("runs"),
                )
            })
            .collect();
        let ps = per_shard as u64;
        assert_eq!(
            got,
            [(0, 2, ps, per_shard), (1, 2, 1, per_shard), (2, 1, 0, per_shard)],
            "{store}: (index, attempt, replaced_runs, runs): {s}"
        );

        // Exactly N blocks of 2 × RUNS runs, in the export and in the store's rows:
        // the earlier attempts' runs were deleted, not only hidden.
        let doc = export(&store, name, dir.path());
        let by = &doc["variants"][1]["stats"]["by_shard"];
        let nodes: Vec<String> = (0..N).map(|k| engine.node(k)).collect();
        assert_eq!(
            by["machines"],
            serde_json::json!(nodes),
            "{store}: the machine labels: {by}"
        );
        let runs = runs_by_shard(&doc);
        assert_eq!(runs.len() as i64, i64::from(N) * per_shard, "{store}: {runs:?}");
        for k in 0..u64::from(N) {
            let block: BTreeSet<(u64, u64)> = runs.iter().filter(|r| r.0 == k).map(|r| (r.1, r.2)).collect();
            let want: BTreeSet<(u64, u64)> = (0..2)
                .flat_map(|v| (0..u64::from(RUNS)).map(move |r| (v, r)))
                .collect();
            assert_eq!(block, want, "{store}: shard {k}'s runs");
        }
        assert_eq!(
            count(&store, "SELECT COUNT(*) FROM samples"),
            Some(i64::from(N) * per_shard),
            "{store}"
        );
        let h = history(&store);
        assert_eq!(h.len(), 1, "{store}: one experiment: {h:?}");
        assert_eq!(
            (&h[0]["fleet"], &h[0]["stopped"]),
            (&name.into(), &"completed".into()),
            "{h:?}"
        );
        assert_eq!(h[0]["runs"], i64::from(N) * per_shard, "{h:?}");
    }
}

#[test]
fn kubernetes_indexed_job_shards_meet_in_one_experiment() {
    let _turn = beside();
    engine_contract(Engine::Kubernetes, "shards_k8s");
}

#[test]
fn github_matrix_shards_meet_in_one_experiment() {
    let _turn = beside();
    engine_contract(Engine::GitHub, "shards_github");
}

#[test]
fn gitlab_parallel_shards_meet_in_one_experiment() {
    let _turn = beside();
    engine_contract(Engine::GitLab, "shards_gitlab");
}

#[test]
fn slurm_array_shards_meet_in_one_experiment() {
    let _turn = beside();
    engine_contract(Engine::Slurm, "shards_slurm");
}

/// What a refusal must leave as it was: the stored experiments, the fleet's
/// shards (attempts, runs, times) and the store's rows.
fn snapshot(store: &str) -> (Vec<Value>, Value, Option<i64>, Option<i64>) {
    (
        history(store),
        status(store, "refused"),
        count(store, "SELECT COUNT(*) FROM samples"),
        count(store, "SELECT COUNT(*) FROM shards"),
    )
}

/// A refused shard: what differs, its engine variables, its arguments, and what
/// its one line must say.
type Refusal = (
    &'static str,
    Vec<(&'static str, String)>,
    Vec<String>,
    &'static str,
);

#[test]
fn refusals_are_one_line_and_write_nothing() {
    let _turn = beside();
    for (_dir, store) in stores("shards_refuse") {
        let plan = |runs: &str, b: &str| {
            strings(&[
                "--runs", runs, "--name", "A", "--", "true", "--name", "B", "--", b,
            ])
        };
        let with = |extra: &[&str], plan: Vec<String>| {
            let mut a = strings(extra);
            a.extend(plan);
            a
        };
        bench(
            &store,
            &[],
            &with(&["--shard", "0/2", "--experiment", "refused"], plan("2", "true")),
        )
        .quiet()
        .ok();
        let before = snapshot(&store);
        assert_eq!(before.0.len(), 1, "{before:?}");
        let cases: Vec<Refusal> = vec![
            (
                "other --runs",
                vec![],
                with(&["--shard", "1/2", "--experiment", "refused"], plan("3", "true")),
                "was started with another plan (its setting 'runs'",
            ),
            (
                "other --runs, of a shard already stored",
                vec![],
                with(&["--shard", "0/2", "--experiment", "refused"], plan("3", "true")),
                "was started with another plan (its setting 'runs'",
            ),
            (
                "other command",
                vec![],
                with(&["--shard", "1/2", "--experiment", "refused"], plan("2", "false")),
                "was started with another plan (variant 'B' differs in its target)",
            ),
            (
                "other shard count",
                vec![],
                with(&["--shard", "1/3", "--experiment", "refused"], plan("2", "true")),
                "experiment 'refused' has 2 shards, this shard says 3",
            ),
            (
                "--experiment without a shard",
                vec![],
                with(&["--experiment", "refused"], plan("2", "true")),
                "--experiment names a sharded experiment, but this is no shard",
            ),
            (
                "a shard without a name",
                vec![],
                with(&["--shard", "1/2"], plan("2", "true")),
                "shard 1/2 has no experiment name",
            ),
            (
                "K = N",
                vec![],
                with(&["--shard", "2/2", "--experiment", "refused"], plan("2", "true")),
                "bad --shard '2/2'",
            ),
            (
                "N = 0",
                vec![],
                with(&["--shard", "0/0", "--experiment", "refused"], plan("2", "true")),
                "bad --shard '0/0'",
            ),
            (
                "no N",
                vec![],
                with(&["--shard", "1", "--experiment", "refused"], plan("2", "true")),
                "bad --shard '1'",
            ),
            (
                "CI_NODE_INDEX=0",
                vec![
                    ("CI_NODE_INDEX", "0".into()),
                    ("CI_NODE_TOTAL", "2".into()),
                    ("CI_PIPELINE_ID", "1".into()),
                ],
                plan("2", "true"),
                "CI_NODE_INDEX=0: GitLab's index starts at 1",
            ),
            (
                "JOB_COMPLETION_INDEX without COLDSTART_SHARDS",
                vec![("JOB_COMPLETION_INDEX", "1".into()), ("JOB_UID", "u".into())],
                plan("2", "true"),
                "JOB_COMPLETION_INDEX=1 but no shard count: set COLDSTART_SHARDS",
            ),
            (
                "--shard with --no-store",
                vec![],
                with(
                    &["--no-store", "--shard", "1/2", "--experiment", "refused"],
                    plan("2", "true"),
                ),
                "a shard's runs meet the others' in the store: drop --no-store",
            ),
        ];
        for (what, env, args, want) in cases {
            let o = bench(&store, &env, &args).quiet().run();
            assert_eq!(o.code(), Some(2), "{what}: {}", o.streams());
            let err = o.stderr();
            assert_eq!(err.trim().lines().count(), 1, "{what}: one line: {err}");
            assert!(err.contains(want), "{what}: want '{want}' in: {err}");
            assert_eq!(snapshot(&store), before, "{what}: {store} changed");
        }
    }
}

/// `sh -c 'read _; exec coldstart ARGS'`: started now, past the barrier when
/// stdin closes.
fn behind_barrier(args: &[String]) -> Child {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("read _ ; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_coldstart"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for var in ENGINE_VARS {
        c.env_remove(var);
    }
    c.spawn().expect("start a shard behind the barrier")
}

#[test]
fn eight_first_shards_racing_make_one_experiment() {
    let _turn = beside();
    const N: u32 = 8;
    for (_dir, store) in stores("shards_race") {
        let mut children: Vec<Child> = (0..N)
            .map(|k| {
                behind_barrier(&strings(&[
                    "bench",
                    "--warmup",
                    "0",
                    "--runs",
                    "1",
                    "--store",
                    &store,
                    "--shard",
                    &format!("{k}/{N}"),
                    "--experiment",
                    "race",
                    "--",
                    "true",
                ]))
            })
            .collect();
        // The barrier: every shard is waiting; close their stdins at once.
        for c in &mut children {
            drop(c.stdin.take());
        }
        let mut created = 0;
        for c in children {
            let out = c.wait_with_output().expect("a racing shard");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{store}: {err}");
            if err.contains("of fleet experiment 'race' (named by --experiment): created") {
                created += 1;
            } else {
                assert!(err.contains("(named by --experiment): joined"), "{store}: {err}");
            }
        }
        assert_eq!(created, 1, "{store}: one shard creates the experiment");
        let h = history(&store);
        assert_eq!(h.len(), 1, "{store}: {h:?}");
        let s = status(&store, "race");
        assert_eq!(
            (&s["done"], &s["missing"]),
            (&N.into(), &serde_json::json!([])),
            "{s}"
        );
        let shards: Vec<(u64, u64, u64)> = s["by_shard"]
            .as_array()
            .expect("by_shard")
            .iter()
            .map(|h| {
                (
                    h["index"].as_u64().unwrap_or(99),
                    h["attempt"].as_u64().unwrap_or(0),
                    h["runs"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(
            shards,
            (0..u64::from(N)).map(|k| (k, 1, 1)).collect::<Vec<_>>(),
            "{s}"
        );
    }
}

/// One shard index started four times at once (an engine that started a
/// replacement while the first copy still ran, a job submitted twice): the starts
/// are serialised, each gets an attempt of its own, and the experiment keeps one
/// attempt's runs of that shard, none twice.
#[test]
fn one_shard_started_four_times_at_once_keeps_one_attempts_runs() {
    let _turn = beside();
    const STARTS: u64 = 4;
    for (dir, store) in stores("shards_same_index") {
        let shard = |k: &str| {
            strings(&[
                "--runs",
                "3",
                "--shard",
                k,
                "--experiment",
                "twice",
                "--name",
                "A",
                "--",
                "true",
                "--name",
                "B",
                "--",
                "true",
            ])
        };
        // The experiment exists (shard 1 made it): the starts race on shard 0's row only.
        bench(&store, &[], &shard("1/2")).quiet().ok();
        let mut argv = strings(&["bench", "-q", "--warmup", "0", "--store", &store]);
        argv.extend(shard("0/2"));
        let mut children: Vec<Child> = (0..STARTS).map(|_| behind_barrier(&argv)).collect();
        for c in &mut children {
            drop(c.stdin.take());
        }
        for c in children {
            let out = c.wait_with_output().expect("a copy of shard 0");
            let err = String::from_utf8_lossy(&out.stderr);
            // A copy ends well, or, superseded while it still stored, says so.
            assert!(
                out.status.success() || err.contains("shard 0 was started again"),
                "{store}: {err}"
            );
        }
        let s = status(&store, "twice");
        let h = &s["by_shard"][0];
        assert_eq!(
            (&h["index"], &h["attempt"], &h["runs"]),
            (&0.into(), &STARTS.into(), &6.into()),
            "{store}: {s}"
        );
        let runs = runs_by_shard(&export(&store, "twice", dir.path()));
        assert_eq!(runs.iter().filter(|r| r.0 == 0).count(), 6, "{store}: {runs:?}");
    }
}

#[test]
fn a_stale_attempt_stops_storing_when_its_shard_starts_again() {
    let _turn = beside();
    for (dir, store) in stores("shards_stale") {
        let gate = Gate::new();
        let shard0 = || {
            let mut a = strings(&["--shard", "0/2", "--experiment", "stale"]);
            a.extend(gate.plan(RUNS));
            bench(&store, &[], &a)
        };
        // Attempt 1 stores one run and holds on the gate.
        let mut one = shard0();
        one.stdout(Stdio::null()).stderr(Stdio::piped());
        let attempt1 = Running(Some(one.spawn()));
        wait_for(&store, "SELECT COUNT(*) FROM samples WHERE shard = 0", 1);
        // Attempt 2 starts (the engine retried the shard elsewhere); once it has
        // joined, both go on.
        let mut two = shard0();
        two.stdout(Stdio::null()).stderr(Stdio::piped());
        let attempt2 = Running(Some(two.spawn()));
        wait_for(
            &store,
            "SELECT COUNT(*) FROM shards WHERE idx = 0 AND attempt = 2",
            1,
        );
        gate.open();
        let out1 = attempt1.take().wait_with_output().expect("attempt 1");
        let out2 = attempt2.take().wait_with_output().expect("attempt 2");
        let (err1, err2) = (
            String::from_utf8_lossy(&out1.stderr),
            String::from_utf8_lossy(&out2.stderr),
        );
        assert!(!out1.status.success(), "{store}: attempt 1 succeeded: {err1}");
        assert!(
            err1.contains("shard 0 was started again (attempt 2) while this attempt (1) ran"),
            "{store}: {err1}"
        );
        assert!(out2.status.success(), "{store}: {err2}");
        assert!(
            err2.contains("joined, started again (attempt 2: its 1 earlier runs are replaced)"),
            "{store}: {err2}"
        );
        let per_shard = i64::from(2 * RUNS);
        let s = status(&store, "stale");
        let h = &s["by_shard"][0];
        assert_eq!(
            (
                &h["index"],
                &h["attempt"],
                &h["runs"],
                &h["replaced_runs"],
                &h["stopped"]
            ),
            (
                &0.into(),
                &2.into(),
                &per_shard.into(),
                &1.into(),
                &"completed".into()
            ),
            "{store}: {s}"
        );
        assert_eq!(s["missing"], serde_json::json!([1]), "{s}");
        // Only attempt 2's runs, in the export and in the store's rows.
        assert_eq!(
            runs_by_shard(&export(&store, "stale", dir.path())).len() as i64,
            per_shard
        );
        assert_eq!(
            count(&store, "SELECT COUNT(*) FROM samples"),
            Some(per_shard),
            "{store}"
        );
        assert_eq!(
            count(&store, "SELECT COUNT(*) FROM samples WHERE shard_attempt = 2"),
            Some(per_shard),
            "{store}"
        );
        // On PostgreSQL a stale attempt's run can commit just after the retry
        // deleted its block (its attempt check read the old row): such a row is
        // left out wherever runs are read.
        execute(
            &store,
            "INSERT INTO samples (experiment_id, variant_idx, round, warmup, outcome, ready_ns, data_json, \
             shard, shard_attempt) SELECT experiment_id, variant_idx, round, warmup, outcome, ready_ns, \
             data_json, shard, 1 FROM samples WHERE shard_attempt = 2 ORDER BY id LIMIT 1",
        );
        let doc = export(&store, "stale", dir.path());
        assert_eq!(
            runs_by_shard(&doc).len() as i64,
            per_shard,
            "{store}: the stale run is read"
        );
        for v in 0..2 {
            assert_eq!(doc["variants"][v]["stats"]["ok_runs"], RUNS, "{store}");
        }
        assert_eq!(
            status(&store, "stale")["by_shard"][0]["runs"],
            per_shard,
            "{store}"
        );
        assert_eq!(history(&store)[0]["runs"], per_shard, "{store}");
    }
}

/// Three shards of `--name A -- sleep A --name B -- sleep B`, one after another
/// (shards side by side on two cores would slow each other), and the export.
fn three_shards(store: &str, name: &str, a: &str, b: &str, dir: &Path) -> Value {
    for k in 0..3 {
        let args = strings(&[
            "--shard",
            &format!("{k}/3"),
            "--experiment",
            name,
            "--runs",
            "10",
            "--name",
            "A",
            "--",
            "sleep",
            a,
            "--name",
            "B",
            "--",
            "sleep",
            b,
        ]);
        bench(store, &[], &args).quiet().ok();
    }
    export(store, name, dir)
}

#[test]
fn a_fleet_comparison_is_blocked_by_shard() {
    let _turn = timed();
    for (dir, store) in stores("shards_blocked") {
        // B sleeps 10 ms longer than A on every machine.
        let doc = three_shards(&store, "shifted", "0.01", "0.02", dir.path());
        let b = &doc["variants"][1]["stats"];
        let by = &b["by_shard"];
        assert_eq!(by["shards"], serde_json::json!([0, 1, 2]), "{by}");
        assert_eq!(
            by["comparison"]["blocks"].as_array().map(Vec::len),
            Some(3),
            "{by}"
        );
        assert_eq!(b["vs_baseline"]["verdict"], "slower", "{store}: {b}");
        assert_eq!(by["comparison"]["verdict"], "slower", "{store}: {by}");
        let shift = &by["comparison"]["shift"];
        let (lo, hi) = (
            shift["ci"][0].as_f64().expect("pooled shift CI"),
            shift["ci"][1].as_f64().expect("pooled shift CI"),
        );
        // `sleep` asks for 10 ms more, not exactly 10.000 ms more: the timer's slack
        // moves the true difference by about 0.1 ms (CI [10.009, 10.214] once at
        // load ~10), so the interval must meet 10 ms ± 0.5 ms.
        assert!(
            lo <= 10.5 && 9.5 <= hi,
            "{store}: pooled shift {shift} misses 10 ± 0.5 ms"
        );
        assert_eq!(shift["blocks"], 3, "{shift}");

        // A/A: the same command on both sides gives no direction.
        let doc = three_shards(&store, "same", "0.01", "0.01", dir.path());
        let b = &doc["variants"][1]["stats"];
        assert_eq!(
            b["by_shard"]["comparison"]["blocks"].as_array().map(Vec::len),
            Some(3)
        );
        let verdict = b["vs_baseline"]["verdict"].as_str().unwrap_or("?");
        assert!(
            !["faster", "slower"].contains(&verdict),
            "{store}: A/A says {verdict}: {b}"
        );
    }
}

/// `coldstart lambda` shards the same way: GitLab's variables put two shards of a
/// Lambda cold-start experiment (the raw Python runtime) into one experiment, and
/// a retried shard replaces its block.
#[test]
fn lambda_shards_meet_in_one_experiment() {
    let _turn = beside();
    if python().is_none() {
        return;
    }
    let runtime = repo().join("examples/lambda/python/raw_runtime.py");
    for (dir, store) in stores("shards_lambda") {
        let shard = |k: u32| {
            let mut c = cs(&[
                "lambda",
                "--warmup",
                "0",
                "--runs",
                "2",
                "--store",
                &store,
                "--runtime",
            ]);
            c.arg(&runtime);
            for var in ENGINE_VARS {
                c.env_remove(var);
            }
            c.envs([
                ("CI_NODE_INDEX", (k + 1).to_string()),
                ("CI_NODE_TOTAL", "2".into()),
                ("CI_PIPELINE_ID", "7070".into()),
            ]);
            c.ok()
        };
        for (k, what) in [
            (0, "created"),
            (1, "joined"),
            (
                0,
                "joined, started again (attempt 2: its 2 earlier runs are replaced)",
            ),
        ] {
            let o = shard(k);
            let want = format!(
                "shard {k}/2 (from {}) of fleet experiment 'gitlab-7070' (named by the engine's run id): {what}",
                Engine::GitLab.source()
            );
            assert!(o.stderr().contains(&want), "{store}: {}", o.streams());
        }
        let s = status(&store, "gitlab-7070");
        assert_eq!((&s["done"], &s["running"]), (&2.into(), &0.into()), "{s}");
        let got: Vec<(u64, u64, u64)> = s["by_shard"]
            .as_array()
            .expect("by_shard")
            .iter()
            .map(|h| {
                (
                    h["index"].as_u64().unwrap_or(99),
                    h["attempt"].as_u64().unwrap_or(0),
                    h["runs"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(got, [(0, 2, 2), (1, 1, 2)], "{store}: {s}");
        let h = history(&store);
        assert_eq!((h.len(), &h[0]["runs"]), (1, &4.into()), "{store}: {h:?}");
        assert_eq!(
            count(
                &store,
                "SELECT COUNT(*) FROM experiments WHERE kind = 'lambda' AND fleet = 'gitlab-7070'"
            ),
            Some(1),
            "{store}: stored as a lambda experiment"
        );
        assert_eq!(
            runs_by_shard(&export(&store, "gitlab-7070", dir.path())).len(),
            4,
            "{store}"
        );
    }
}
