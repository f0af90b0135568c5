//! The CI engines: a GitHub Actions workflow with a shard matrix, a GitLab CI job
//! with `parallel:`. Each shard's command is a shell line, its words quoted.

use super::{ordered, provenance, with_header, yaml, Recipe, Yaml, JOB};
use anyhow::Result;
use coldstart_core::target::{shell_join, shell_quote};
use serde_json::json;

/// The shard's command line: the index and the experiment from the environment
/// (set by the engine's file), bench's own words quoted for the shell.
fn bench_line(recipe: &Recipe, shard: &str, experiment: &str) -> String {
    format!(
        "coldstart bench --shard \"{shard}/{}\" --experiment {experiment} {}",
        recipe.shards,
        shell_join(&recipe.bench)
    )
}

pub(super) fn github(recipe: &Recipe) -> Result<String> {
    let n = recipe.shards;
    let experiment = recipe
        .experiment
        .clone()
        // The run's id: the same for a re-run of failed jobs, so a retried shard
        // lands in (and replaces its block of) the same experiment.
        .unwrap_or_else(|| "github-${{ github.run_id }}".to_string());
    let mut job: Vec<(&str, Yaml)> = Vec::new();
    job.push(("runs-on", yaml(json!("ubuntu-latest"))));
    if let Some(image) = &recipe.image {
        job.push(("container", yaml(json!(image))));
    }
    let mut strategy = json!({"fail-fast": false, "matrix": {"shard": (0..n).collect::<Vec<u32>>()}});
    if let Some(p) = recipe.parallelism {
        strategy["max-parallel"] = json!(p);
    }
    job.push(("strategy", yaml(strategy)));
    // Through the environment, not pasted into the script: an expression's value
    // is never parsed as shell.
    job.push((
        "env",
        yaml(json!({
            "COLDSTART_STORE": format!("${{{{ secrets.{} }}}}", recipe.secret()),
            "SHARD": "${{ matrix.shard }}",
            "EXPERIMENT": experiment,
        })),
    ));
    job.push((
        "steps",
        yaml(json!([
            {"uses": "actions/checkout@v4"},
            {
                "name": format!("bench, shard ${{{{ matrix.shard }}}} of {n}"),
                "shell": "bash",
                "run": bench_line(recipe, "$SHARD", "\"$EXPERIMENT\""),
            },
        ])),
    ));
    let doc = ordered(vec![
        ("name", yaml(json!("coldstart fleet"))),
        ("on", yaml(json!({"workflow_dispatch": {}}))),
        ("jobs", ordered(vec![(JOB, ordered(job))])),
    ]);
    let mut header = provenance(recipe);
    header.extend([
        String::new(),
        format!(
            "One job per shard (matrix.shard 0..{}); fail-fast is off so one",
            n - 1
        ),
        "failed shard stops no other. Give each its own machine: self-hosted runners that run".to_string(),
        "one job at a time (set runs-on to their labels), and coldstart on PATH (or --image).".to_string(),
        format!(
            "The store's DSN is the repository secret {}. Save as .github/workflows/coldstart-fleet.yml.",
            recipe.secret()
        ),
    ]);
    with_header(&header, &doc)
}

pub(super) fn gitlab(recipe: &Recipe) -> Result<String> {
    let n = recipe.shards;
    let experiment = match &recipe.experiment {
        Some(name) => shell_quote(name),
        None => "\"gitlab-$CI_PIPELINE_ID\"".to_string(),
    };
    let mut job: Vec<(&str, Yaml)> = Vec::new();
    if let Some(image) = &recipe.image {
        job.push(("image", yaml(json!(image))));
    }
    job.push(("parallel", yaml(json!(n))));
    if recipe.secret() != "COLDSTART_STORE" {
        job.push((
            "variables",
            yaml(json!({"COLDSTART_STORE": format!("${}", recipe.secret())})),
        ));
    }
    // Retried when the runner, not the bench, failed; the retry replaces the
    // shard's partial block.
    job.push((
        "retry",
        yaml(json!({"max": 2, "when": ["runner_system_failure", "stuck_or_timeout_failure"]})),
    ));
    job.push((
        "script",
        yaml(json!([
            // GitLab counts CI_NODE_INDEX from 1 (to CI_NODE_TOTAL); shards count from 0.
            "SHARD=$(( ${CI_NODE_INDEX:-1} - 1 ))",
            bench_line(recipe, "$SHARD", &experiment),
        ])),
    ));
    let doc = ordered(vec![(JOB, ordered(job))]);
    let mut header = provenance(recipe);
    header.extend([
        String::new(),
        format!("`parallel: {n}` starts {n} copies of the job; GitLab numbers them CI_NODE_INDEX"),
        "1..CI_NODE_TOTAL (1-based), so the script's SHARD is CI_NODE_INDEX - 1. Give each its".to_string(),
        "own machine: runners with `concurrent = 1`, and coldstart on PATH (or --image).".to_string(),
        format!(
            "The store's DSN is the masked CI/CD variable {}. Add this job to .gitlab-ci.yml.",
            recipe.secret()
        ),
    ]);
    with_header(&header, &doc)
}
