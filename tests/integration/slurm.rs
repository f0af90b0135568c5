//! A real Slurm cluster: jobs submitted with `sbatch`, as `coldstart fleet emit slurm`'s
//! users submit its script. CI starts a single-node cluster from Debian's packages
//! (tests/fixtures/slurm/start.sh, run by .ci/run); without one the tests skip
//! visibly (a failure under COLDSTART_REQUIRE_SLURM=1).
//!
//! [`cluster`] and [`submit_and_wait`] are for every test that runs a job.

use crate::common::*;
use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a submitted job may take, queueing included, before the helper cancels it.
const JOB_TIMEOUT: Duration = Duration::from_secs(300);

/// Whether a Slurm cluster takes jobs here: `sbatch` is on PATH and `sinfo` shows a
/// node that can run one (idle or mixed). Otherwise a visible skip under SLURM.
pub fn cluster() -> bool {
    if tool("SLURM", "sbatch").is_none() {
        return false;
    }
    let states = Command::new("sinfo")
        .args(["-h", "-o", "%T"])
        .output()
        .map_err(|e| format!("sinfo did not run: {e}"))
        .and_then(|o| {
            if o.status.success() {
                Ok(stdout(&o))
            } else {
                Err(format!("sinfo failed: {}", stderr(&o).trim()))
            }
        });
    let why = match states {
        Ok(s) if s.lines().any(|l| matches!(l.trim(), "idle" | "mixed")) => return true,
        Ok(s) => format!(
            "no Slurm node is idle or mixed (sinfo: {:?}); run tests/fixtures/slurm/start.sh as root",
            s.trim()
        ),
        Err(e) => format!("{e}; run tests/fixtures/slurm/start.sh as root"),
    };
    skip("SLURM", &why);
    false
}

/// Submit `script` from `dir` with `env` added to the submitter's environment (sbatch
/// exports it all to the job), wait until the job (every task of an array) has ended,
/// and return its id. The job runs in `dir`, so relative output files (Slurm's default
/// `slurm-%A_%a.out` too) land there. Fails when any task failed, or, after cancelling
/// the job, when it has not ended within [`JOB_TIMEOUT`].
pub fn submit_and_wait(script: &Path, dir: &Path, env: &[(&str, &str)]) -> Result<String> {
    let mut sbatch = Command::new("sbatch")
        .args(["--wait", "--parsable", "--chdir"])
        .arg(dir)
        .arg(script)
        .current_dir(dir)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting sbatch")?;
    // --parsable prints "<id>[;<cluster>]" when the job is queued, long before --wait
    // returns: read it on the side, so that a timeout can cancel the job.
    let mut out = sbatch.stdout.take().context("sbatch's stdout")?;
    let mut err = sbatch.stderr.take().context("sbatch's stderr")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    // sbatch --wait has no timeout of its own: poll its exit against a deadline.
    let deadline = Instant::now() + JOB_TIMEOUT;
    let status = loop {
        if let Some(status) = sbatch.try_wait().context("waiting for sbatch")? {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let Some(status) = status else {
        // The job id is printed at submission; cancelling makes sbatch --wait return.
        let _ = sbatch.kill();
        let _ = sbatch.wait();
        let printed = reader.join().unwrap_or_default();
        let id = job_id(&printed);
        if let Some(id) = &id {
            let _ = Command::new("scancel").arg(id).status();
        }
        bail!(
            "job {} of {} did not end within {JOB_TIMEOUT:?} (cancelled); squeue:\n{}",
            id.as_deref().unwrap_or("(no id printed)"),
            script.display(),
            squeue()
        );
    };
    let printed = reader.join().unwrap_or_default();
    let errors = err_reader.join().unwrap_or_default();
    let id = job_id(&printed).with_context(|| {
        format!(
            "sbatch {} printed no job id ({status}); stdout {printed:?}, stderr {errors:?}",
            script.display()
        )
    })?;
    if !status.success() {
        // With --wait, sbatch exits with the highest exit code among the job's tasks.
        bail!(
            "job {id} of {} failed: sbatch --wait {status}; stderr {errors:?}",
            script.display()
        );
    }
    Ok(id)
}

/// The job id in `sbatch --parsable`'s output: `<id>` or `<id>;<cluster>`.
fn job_id(printed: &str) -> Option<String> {
    let id = printed.lines().next()?.split(';').next()?.trim();
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then(|| id.to_string())
}

/// The queue, for failure messages.
fn squeue() -> String {
    Command::new("squeue")
        .output()
        .map(|o| format!("{}{}", stdout(&o), stderr(&o)))
        .unwrap_or_else(|e| format!("squeue did not run: {e}"))
}

/// An exclusive 4-task array, as `fleet emit slurm --shards 4` writes: every task ran
/// once, with its own index, the array's size and id, and the submitter's environment;
/// its output went to the submission directory.
#[test]
fn an_exclusive_array_job_runs_every_task_with_the_submitters_environment() {
    let _turn = beside();
    if !cluster() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("array.sbatch");
    // Each task writes one line into its own file; the file name comes from the task,
    // so a task that ran twice or under another index shows.
    std::fs::write(
        &script,
        "#!/bin/bash\n\
         #SBATCH --array=0-3\n\
         #SBATCH --exclusive\n\
         #SBATCH --nodes=1 --ntasks=1\n\
         #SBATCH --job-name=coldstart-slurm-test\n\
         set -eu\n\
         echo \"$SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT $SLURM_ARRAY_JOB_ID \
         $COLDSTART_SLURM_TEST_VALUE\" >\"task-$SLURM_ARRAY_TASK_ID.txt\"\n",
    )
    .expect("write the job script");
    let value = format!("from-the-submitter-{}", std::process::id());
    let id = submit_and_wait(
        &script,
        dir.path(),
        &[("COLDSTART_SLURM_TEST_VALUE", value.as_str())],
    )
    .unwrap_or_else(|e| panic!("{e:#}"));

    let mut seen = BTreeSet::new();
    for entry in std::fs::read_dir(dir.path()).expect("read the job directory") {
        let name = entry.expect("directory entry").file_name();
        let name = name.to_string_lossy();
        let Some(task) = name.strip_prefix("task-").and_then(|n| n.strip_suffix(".txt")) else {
            continue;
        };
        let text = std::fs::read_to_string(dir.path().join(name.as_ref())).expect("read a task's file");
        assert_eq!(
            text,
            format!("{task} 4 {id} {value}\n"),
            "task file {name}: index, count, array job id, submitter's variable"
        );
        seen.insert(task.to_string());
    }
    let all: BTreeSet<String> = (0..4).map(|i| i.to_string()).collect();
    assert_eq!(seen, all, "every task of the array ran once");
    // Slurm's default output files, one per task, in the submission directory: not
    // in the test's working directory.
    for task in 0..4 {
        let out = format!("slurm-{id}_{task}.out");
        assert!(
            dir.path().join(&out).is_file(),
            "{out} is in the submission directory"
        );
        assert!(
            !Path::new(&out).exists(),
            "{out} was written to the working directory"
        );
    }
}

/// A task that fails makes the helper fail (sbatch --wait exits with the highest exit
/// code among the tasks), naming the job, so a test cannot pass on a job that broke.
#[test]
fn a_failed_task_fails_the_submission() {
    let _turn = beside();
    if !cluster() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("fails.sbatch");
    std::fs::write(
        &script,
        "#!/bin/bash\n\
         #SBATCH --array=0-1\n\
         #SBATCH --job-name=coldstart-slurm-test\n\
         exit $((SLURM_ARRAY_TASK_ID * 3))\n",
    )
    .expect("write the job script");
    let err = submit_and_wait(&script, dir.path(), &[]).expect_err("task 1 exits with 3");
    let text = format!("{err:#}");
    assert!(
        text.contains("failed") && text.contains("exit status: 3"),
        "{text}"
    );
}

/// Issue 24's end to end: the script `coldstart fleet emit slurm --shards 4` writes,
/// submitted to a real cluster, runs four shards of a two-variant bench (B sleeps
/// 10 ms longer than A) into one experiment in PostgreSQL; `fleet status` counts 4/4
/// and the comparison, blocked by shard, calls B slower by about 10 ms.
#[test]
fn the_emitted_slurm_array_runs_one_fleet_experiment_into_postgres() {
    let _turn = timed();
    if !cluster() {
        return;
    }
    let Some((_pg_dir, store)) = testkit::postgres_store("slurmfleet", cfg!(feature = "postgres")) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("fleet.sbatch");
    let script_arg = script.display().to_string();
    cs(&["fleet", "emit", "slurm", "--shards", "4", "-o", &script_arg, "--"])
        .args([
            "--runs", "8", "-q", "--name", "A", "--", "sleep", "0.05", "--name", "B", "--", "sleep", "0.06",
        ])
        .ok();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_coldstart"))
        .parent()
        .expect("the binary's directory")
        .display()
        .to_string();
    let path = format!("{bin_dir}:{}", std::env::var("PATH").unwrap_or_default());
    let id = submit_and_wait(
        &script,
        dir.path(),
        &[("PATH", path.as_str()), ("COLDSTART_STORE", store.as_str())],
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    let name = format!("slurm-{id}");

    let status = cs(&["fleet", "status", &name, "--json", "--store", &store]).ok();
    let status: serde_json::Value = serde_json::from_str(&stdout(&status)).expect("fleet status --json");
    assert_eq!(status["name"], name.as_str(), "{status}");
    assert_eq!(
        (status["shards"].as_u64(), status["done"].as_u64()),
        (Some(4), Some(4)),
        "{status}"
    );
    assert_eq!(status["missing"], serde_json::json!([]), "{status}");
    let shards = status["by_shard"].as_array().expect("by_shard");
    for (k, s) in shards.iter().enumerate() {
        assert_eq!(s["index"].as_u64(), Some(k as u64), "{s}");
        assert_eq!(s["runs"].as_u64(), Some(16), "8 runs of each variant: {s}");
        assert_eq!(s["stopped"], "completed", "{s}");
        assert_eq!(s["attempt"].as_u64(), Some(1), "{s}");
        // The job's node, as Slurm names it to the task.
        assert!(s["host"]["node"].as_str().is_some_and(|n| !n.is_empty()), "{s}");
    }

    let json = dir.path().join("fleet.json");
    cs(&["show", &name, "--store", &store, "--export-json"])
        .arg(&json)
        .ok();
    let doc = json_file(&json);
    let b = &doc["variants"][1]["stats"];
    let blocks = b["by_shard"]["comparison"]["blocks"]
        .as_array()
        .expect("by_shard blocks");
    assert_eq!(blocks.len(), 4, "one block per shard: {b}");
    assert_eq!(b["vs_baseline"]["verdict"], "slower", "{b}");
    let shift = b["vs_baseline"]["shift"]["estimate"]
        .as_f64()
        .expect("pooled shift");
    assert!(
        (8.0..=12.0).contains(&shift),
        "pooled shift {shift} ms for a 10 ms difference"
    );
    for dir_entry in std::fs::read_dir(dir.path()).expect("the job directory") {
        let name = dir_entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        if name.starts_with("coldstart-fleet-") {
            let text = std::fs::read_to_string(dir.path().join(&name)).unwrap_or_default();
            assert!(!text.contains("error"), "{name}: {text}");
        }
    }
}
