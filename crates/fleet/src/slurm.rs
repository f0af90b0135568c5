//! Slurm: an sbatch script for a job array, one whole node per shard.

use super::{comment, provenance, Recipe, JOB};
use coldstart_core::target::{shell_join, shell_quote};
use std::fmt::Write;

pub(super) fn script(recipe: &Recipe) -> String {
    let n = recipe.shards;
    let mut s = String::from("#!/bin/bash\n");
    // sbatch reads #SBATCH lines only before the first command: they come first.
    let _ = writeln!(s, "#SBATCH --job-name={JOB}");
    // `%P`: at most P tasks at once (each holds a store connection).
    let limit = recipe.parallelism.map_or_else(String::new, |p| format!("%{p}"));
    let _ = writeln!(s, "#SBATCH --array=0-{}{limit}", n - 1);
    // A whole node per shard: no other job's work beside the measured starts.
    let _ = writeln!(s, "#SBATCH --exclusive");
    let _ = writeln!(s, "#SBATCH --nodes=1");
    let _ = writeln!(s, "#SBATCH --ntasks=1");
    let _ = writeln!(s, "#SBATCH --output={JOB}-%A_%a.out");
    for line in provenance(recipe) {
        let _ = writeln!(s, "{}", comment(&line));
    }
    s.push_str(
        "#\n\
         # Task K of the array runs shard K (SLURM_ARRAY_TASK_ID); --exclusive gives each a\n\
         # whole node. Submit: sbatch FILE (the array's limit is the cluster's MaxArraySize).\n",
    );
    s.push_str("set -euo pipefail\n");
    match &recipe.store_secret {
        Some(file) => {
            let _ = writeln!(s, "# The store's DSN, from a file only its owner reads.");
            let _ = writeln!(s, "COLDSTART_STORE=$(cat {})", shell_quote(file));
            s.push_str("export COLDSTART_STORE\n");
        }
        None => s.push_str(
            "# The store's DSN: sbatch passes the submitting shell's environment on.\n\
             : \"${COLDSTART_STORE:?export COLDSTART_STORE=postgres://… before sbatch}\"\n",
        ),
    }
    let experiment = match &recipe.experiment {
        Some(name) => shell_quote(name),
        // The array's job id: one for all its tasks, kept when a task is requeued.
        None => "\"slurm-$SLURM_ARRAY_JOB_ID\"".to_string(),
    };
    let _ = writeln!(
        s,
        "exec coldstart bench --shard \"$SLURM_ARRAY_TASK_ID/{n}\" --experiment {experiment} {}",
        shell_join(&recipe.bench)
    );
    s
}
