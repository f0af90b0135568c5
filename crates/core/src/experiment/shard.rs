//! Which block of a sharded experiment this process runs: `--shard K/N`, or the index
//! an existing engine hands each copy it starts (a Kubernetes Indexed Job, GitLab's
//! `parallel:`, a Slurm job array). GitHub Actions has no index variable of its own:
//! its matrix passes `--shard ${{ matrix.shard }}/N`. Every shard runs every variant
//! and parameter point in shuffled interleaved rounds, as an unsharded experiment
//! does; shards differ by machine and by seed.

use anyhow::{bail, Context, Result};

/// One shard: block `index` (0-based) of `count`, and where that came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
    pub source: Source,
}

/// Who said which shard this is; the progress line and the store say it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `--shard K/N` on the command line.
    Flag,
    /// `JOB_COMPLETION_INDEX` (an Indexed Job's pod); the count comes from
    /// `COLDSTART_SHARDS` (bench has no `--shards`), since a pod is not told its
    /// Job's completions.
    Kubernetes,
    /// `CI_NODE_INDEX` / `CI_NODE_TOTAL` (GitLab `parallel:`; the index is 1-based).
    GitLab,
    /// `SLURM_ARRAY_TASK_ID` / `SLURM_ARRAY_TASK_COUNT` (ids may start above 0:
    /// `SLURM_ARRAY_TASK_MIN` is subtracted).
    Slurm,
}

impl Source {
    pub fn describe(self) -> &'static str {
        match self {
            Source::Flag => "--shard",
            Source::Kubernetes => "Kubernetes Indexed Job (JOB_COMPLETION_INDEX)",
            Source::GitLab => "GitLab parallel (CI_NODE_INDEX/CI_NODE_TOTAL)",
            Source::Slurm => "Slurm job array (SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT)",
        }
    }
}

/// `K/N` with 0 ≤ K < N.
pub fn parse(spec: &str) -> Result<Shard> {
    let bad = || format!("bad --shard '{spec}': write K/N with 0 ≤ K < N, e.g. --shard 0/4");
    let (k, n) = spec.split_once('/').with_context(bad)?;
    let index: u32 = k.trim().parse().with_context(bad)?;
    let count: u32 = n.trim().parse().with_context(bad)?;
    if count == 0 || index >= count {
        bail!(bad());
    }
    Ok(Shard {
        index,
        count,
        source: Source::Flag,
    })
}

/// The shard of this process: the flag when given, else the engine's variables
/// (`env` looks one up: `std::env::var` in the binary, a map in tests). None: not
/// sharded. An engine's variables that do not add up are an error, not "unsharded":
/// a shard that silently ran as a whole experiment would duplicate the others' runs.
pub fn detect(flag: Option<&str>, env: &impl Fn(&str) -> Option<String>) -> Result<Option<Shard>> {
    if let Some(spec) = flag {
        return parse(spec).map(Some);
    }
    let num = |name: &str| -> Result<Option<u32>> {
        env(name)
            .map(|v| {
                v.trim()
                    .parse::<u32>()
                    .with_context(|| format!("{name}='{v}' is not a shard number"))
            })
            .transpose()
    };
    let checked = |index: u32, count: u32, source: Source| -> Result<Option<Shard>> {
        if count == 0 || index >= count {
            bail!(
                "{} gives shard {index} of {count}: not a shard (pass --shard K/N to say which)",
                source.describe()
            );
        }
        Ok(Some(Shard { index, count, source }))
    };
    if let Some(index) = num("JOB_COMPLETION_INDEX")? {
        let Some(count) = num("COLDSTART_SHARDS")? else {
            bail!(
                "JOB_COMPLETION_INDEX={index} but no shard count: set COLDSTART_SHARDS to the Job's \
                 completions (or pass --shard {index}/N)"
            );
        };
        return checked(index, count, Source::Kubernetes);
    }
    // A Slurm task inherits its submitter's environment (sbatch exports it all), so
    // a job array submitted from a GitLab job also sees CI_NODE_INDEX: the engine
    // that started this process, Slurm, is asked first.
    if let Some(id) = num("SLURM_ARRAY_TASK_ID")? {
        let Some(count) = num("SLURM_ARRAY_TASK_COUNT")? else {
            bail!("SLURM_ARRAY_TASK_ID={id} without SLURM_ARRAY_TASK_COUNT: pass --shard K/N");
        };
        let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let Some(index) = id.checked_sub(min) else {
            bail!("SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}");
        };
        return checked(index, count, Source::Slurm);
    }
    if let (Some(index), Some(total)) = (num("CI_NODE_INDEX")?, num("CI_NODE_TOTAL")?) {
        if index == 0 {
            bail!("CI_NODE_INDEX=0: GitLab's index starts at 1 (pass --shard K/N to say which)");
        }
        return checked(index - 1, total, Source::GitLab);
    }
    Ok(None)
}

/// The engine's id of this run of the whole fleet, from which shards of one
/// experiment derive the same name: GitHub's run (a re-run keeps it), GitLab's pipeline,
/// Slurm's array job, a Kubernetes Job's uid (`JOB_UID`, from the manifest's
/// downward API). None: no engine is recognised, so `--experiment NAME` is needed.
pub fn engine_run_id(env: &impl Fn(&str) -> Option<String>) -> Option<String> {
    // The innermost engine first: a Slurm task or a pod may inherit a CI job's
    // variables (sbatch exports the submitter's environment), never the reverse.
    [
        ("SLURM_ARRAY_JOB_ID", "slurm"),
        ("JOB_UID", "k8s"),
        ("CI_PIPELINE_ID", "gitlab"),
        ("GITHUB_RUN_ID", "github"),
    ]
    .iter()
    .find_map(|(var, engine)| {
        env(var)
            .filter(|v| !v.trim().is_empty())
            .map(|v| format!("{engine}-{}", v.trim()))
    })
}

/// One sharded experiment as this process joins it: its name (all shards give
/// the same) and the shard this process runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fleet {
    pub name: String,
    /// Where the name came from: `--experiment`, or the engine's run id variable.
    pub named_by: &'static str,
    pub shard: Shard,
}

impl Fleet {
    /// The fleet this process belongs to, or None when it is not sharded. A shard
    /// needs a name every shard derives alike: `--experiment`, else the engine's
    /// run id; without either it is refused (each shard would start an experiment
    /// of its own).
    pub fn detect(
        shard_flag: Option<&str>,
        experiment_flag: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Fleet>> {
        let Some(shard) = detect(shard_flag, &env)? else {
            if experiment_flag.is_some() {
                bail!(
                    "--experiment names a sharded experiment, but this is no shard: add --shard K/N \
                     (or run it under an engine's index: JOB_COMPLETION_INDEX, CI_NODE_INDEX, \
                     SLURM_ARRAY_TASK_ID)"
                );
            }
            return Ok(None);
        };
        let (name, named_by) = match experiment_flag {
            Some(n) => (n.to_string(), "--experiment"),
            None => match engine_run_id(&env) {
                Some(id) => (id, "the engine's run id"),
                None => bail!(
                    "shard {}/{} has no experiment name: pass --experiment NAME (the same on every \
                     shard), or run it under an engine whose run id names it (GITHUB_RUN_ID, \
                     CI_PIPELINE_ID, SLURM_ARRAY_JOB_ID, JOB_UID)",
                    shard.index,
                    shard.count
                ),
            },
        };
        check_name(&name)?;
        Ok(Some(Fleet {
            name,
            named_by,
            shard,
        }))
    }

    /// This shard's seed: from `--seed` when given, else from the experiment's
    /// name, so every shard of one experiment (and a retried shard) agrees on it
    /// without talking to the others.
    pub fn seed(&self, given: Option<u64>) -> u64 {
        let base = given.unwrap_or_else(|| fnv1a(self.name.as_bytes()));
        self.shard.seed(base)
    }
}

/// A name a store reference can hold: not a number, `latest…`, or a variant part.
fn check_name(name: &str) -> Result<()> {
    let bad =
        |why: &str| anyhow::anyhow!("bad experiment name '{name}': {why} (use letters, digits and - _ . /)");
    if name.is_empty() || name.len() > 200 {
        return Err(bad("it must be 1 to 200 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
    {
        return Err(bad("it has a character other than those"));
    }
    if name.parse::<i64>().is_ok() || name.starts_with("latest") {
        return Err(bad("numbers and latest… already name stored experiments"));
    }
    Ok(())
}

/// FNV-1a: a stable hash of the name (std's hasher may change between builds).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The machine a shard ran on, as the store keeps it and the per-machine table
/// names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Host {
    pub hostname: String,
    /// The engine's name for the node (Kubernetes `NODE_NAME` from the downward
    /// API, `SLURMD_NODENAME`, GitHub's `RUNNER_NAME`, GitLab's
    /// `CI_RUNNER_DESCRIPTION`), when it says one.
    pub node: Option<String>,
    pub cpu_model: String,
    pub cores: i64,
    pub kernel: String,
    pub memory_bytes: Option<i64>,
    /// `/etc/machine-id`: tells two machines with one hostname apart.
    pub machine_id: Option<String>,
}

impl Host {
    /// What the per-machine table calls it: the engine's node name, else the hostname.
    pub fn label(&self) -> &str {
        self.node.as_deref().unwrap_or(&self.hostname)
    }
}

/// A stored shard: which block, which attempt, where and when it ran.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ShardRecord {
    pub index: u32,
    /// 1 for the first start; a retry replaces the earlier attempts' runs.
    pub attempt: u32,
    /// Who said which shard it is ([`Source::describe`]).
    pub source: String,
    pub host: Host,
    pub started_unix_s: i64,
    /// None while it runs (or when its coldstart was killed).
    pub ended_unix_s: Option<i64>,
    /// Why it stopped (a `StopReason` word), None while it runs.
    pub stopped: Option<String>,
    /// Measured runs of the current attempt (successful or not, warmups excluded).
    pub runs: u64,
    /// Runs of earlier attempts that the current one replaced.
    pub replaced_runs: u64,
}

/// A stored fleet experiment's shards.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FleetRecord {
    pub name: String,
    pub count: u32,
    /// The shards that started, by index (a missing index never started).
    pub shards: Vec<ShardRecord>,
}

impl FleetRecord {
    /// Shards that finished, that are still running (or died without a word),
    /// and indices that never started.
    pub fn tally(&self) -> (usize, usize, Vec<u32>) {
        let done = self.shards.iter().filter(|s| s.ended_unix_s.is_some()).count();
        let running = self.shards.len() - done;
        let missing = (0..self.count)
            .filter(|i| !self.shards.iter().any(|s| s.index == *i))
            .collect();
        (done, running, missing)
    }
}

impl Shard {
    /// The shard's own seed: the same experiment seed gives every shard a different
    /// shuffle, and a retried shard the same one it had.
    pub fn seed(&self, experiment_seed: u64) -> u64 {
        experiment_seed ^ (u64::from(self.index) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn the_flag_reads_k_of_n() {
        assert_eq!(
            parse("2/4").unwrap(),
            Shard {
                index: 2,
                count: 4,
                source: Source::Flag
            }
        );
        for bad in ["4/4", "1/0", "x/4", "3", "-1/4", ""] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("--shard") && e.contains("K/N"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_flag_wins_over_an_engines_variables() {
        let s = detect(
            Some("1/3"),
            &env(&[("CI_NODE_INDEX", "3"), ("CI_NODE_TOTAL", "3")]),
        )
        .unwrap();
        assert_eq!(s.map(|s| (s.index, s.source)), Some((1, Source::Flag)));
    }

    #[test]
    fn a_kubernetes_indexed_job_needs_its_count() {
        let e = env(&[("JOB_COMPLETION_INDEX", "3"), ("COLDSTART_SHARDS", "8")]);
        assert_eq!(
            detect(None, &e).unwrap(),
            Some(Shard {
                index: 3,
                count: 8,
                source: Source::Kubernetes
            })
        );
        let e = detect(None, &env(&[("JOB_COMPLETION_INDEX", "3")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("COLDSTART_SHARDS"), "{e}");
    }

    #[test]
    fn gitlab_counts_from_one() {
        let e = env(&[("CI_NODE_INDEX", "1"), ("CI_NODE_TOTAL", "5")]);
        assert_eq!(
            detect(None, &e).unwrap(),
            Some(Shard {
                index: 0,
                count: 5,
                source: Source::GitLab
            })
        );
        let e = env(&[("CI_NODE_INDEX", "5"), ("CI_NODE_TOTAL", "5")]);
        assert_eq!(detect(None, &e).unwrap().map(|s| s.index), Some(4));
        assert!(detect(None, &env(&[("CI_NODE_INDEX", "0"), ("CI_NODE_TOTAL", "5")])).is_err());
        assert!(detect(None, &env(&[("CI_NODE_INDEX", "6"), ("CI_NODE_TOTAL", "5")])).is_err());
    }

    #[test]
    fn a_slurm_array_may_start_above_zero() {
        let e = env(&[("SLURM_ARRAY_TASK_ID", "0"), ("SLURM_ARRAY_TASK_COUNT", "4")]);
        assert_eq!(
            detect(None, &e).unwrap(),
            Some(Shard {
                index: 0,
                count: 4,
                source: Source::Slurm
            })
        );
        let e = env(&[
            ("SLURM_ARRAY_TASK_ID", "12"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "10"),
        ]);
        assert_eq!(detect(None, &e).unwrap().map(|s| s.index), Some(2));
        let e = env(&[("SLURM_ARRAY_TASK_ID", "x"), ("SLURM_ARRAY_TASK_COUNT", "4")]);
        assert!(detect(None, &e)
            .unwrap_err()
            .to_string()
            .contains("SLURM_ARRAY_TASK_ID='x'"));
    }

    #[test]
    fn no_engine_is_not_sharded() {
        assert_eq!(detect(None, &env(&[("HOME", "/root")])).unwrap(), None);
    }

    #[test]
    fn shards_of_one_run_derive_one_name() {
        assert_eq!(
            engine_run_id(&env(&[("GITHUB_RUN_ID", "77")])).as_deref(),
            Some("github-77")
        );
        assert_eq!(
            engine_run_id(&env(&[("CI_PIPELINE_ID", "9")])).as_deref(),
            Some("gitlab-9")
        );
        assert_eq!(
            engine_run_id(&env(&[("SLURM_ARRAY_JOB_ID", "5")])).as_deref(),
            Some("slurm-5")
        );
        assert_eq!(engine_run_id(&env(&[])), None);
        // A job array submitted from a CI job: Slurm's index and Slurm's id.
        let nested = env(&[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_JOB_ID", "31"),
            ("CI_NODE_INDEX", "1"),
            ("CI_NODE_TOTAL", "3"),
            ("CI_PIPELINE_ID", "9"),
            ("GITHUB_RUN_ID", "77"),
        ]);
        assert_eq!(engine_run_id(&nested).as_deref(), Some("slurm-31"));
        assert_eq!(
            detect(None, &nested).unwrap().map(|s| (s.index, s.source)),
            Some((2, Source::Slurm))
        );
    }

    #[test]
    fn every_shard_shuffles_differently_and_a_retry_the_same() {
        let seeds: Vec<u64> = (0..64)
            .map(|index| {
                Shard {
                    index,
                    count: 64,
                    source: Source::Flag,
                }
                .seed(42)
            })
            .collect();
        let mut unique = seeds.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), seeds.len());
        assert_eq!(
            Shard {
                index: 3,
                count: 64,
                source: Source::Slurm
            }
            .seed(42),
            seeds[3]
        );
    }
}
