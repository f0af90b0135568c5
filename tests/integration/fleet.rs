//! `coldstart fleet emit`: each engine's file, checked by tools that are not ours.
//!
//! - Kubernetes: kubernetes-validate --strict against the Kubernetes 1.37 OpenAPI
//!   schemas (offline, shipped in the pinned package);
//! - GitHub Actions and GitLab CI: PyYAML (a YAML 1.1 reader, as kubectl's go-yaml)
//!   reads them back, and check-jsonschema validates them against the schemas it
//!   vendors (vendor.github-workflows, vendor.gitlab-ci: from SchemaStore, pinned
//!   with the package);
//! - Slurm: `bash -n` and a run with the array's variables; the real cluster runs it
//!   in tests/integration/slurm.rs.
//!
//! The validators are pinned in tests/fixtures/fleet-validate/requirements.txt and
//! installed by tests/fixtures/fleet-validate-setup.sh (.ci/run runs it).

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Words that a careless YAML writer or shell line would change: YAML 1.1
/// booleans, numbers, quotes, `$(…)` (Kubernetes expands it), a line break.
const TRICKY: &[&str] = &[
    "on", "yes", "0", "1_000", "it's", "$(HOME)", "a\"b", "#x", "a b\nc", "--",
];

fn bench_args() -> Vec<String> {
    let mut a: Vec<String> = ["--runs", "20", "--name", "A", "--", "./server"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(TRICKY.iter().map(|s| s.to_string()));
    a.extend(
        ["--name", "B", "--", "./server", "--fast"]
            .iter()
            .map(|s| s.to_string()),
    );
    a
}

/// `fleet emit ENGINE --shards N [extra] -o DIR/FILE -- bench_args()`: the file.
fn emit(dir: &Path, engine: &str, file: &str, extra: &[&str]) -> PathBuf {
    let path = dir.join(file);
    let mut c = cs(&["fleet", "emit", engine, "--shards", "4"]);
    c.args(extra).arg("-o").arg(&path).arg("--").args(bench_args());
    c.ok();
    path
}

/// The pinned validators' site directory, or a skip under `switch`.
fn validators(switch: &str, module: &str) -> Option<(PathBuf, PathBuf)> {
    let py = python()?;
    let site = repo().join("target/fleet-validate/python");
    let found = Command::new(&py)
        .args(["-c", &format!("import {module}")])
        .env("PYTHONPATH", &site)
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        skip(
            switch,
            &format!("{module} is not installed (bash tests/fixtures/fleet-validate-setup.sh)"),
        );
        return None;
    }
    Some((py, site))
}

fn run_py(py: &Path, site: &Path, args: &[&str]) -> std::process::Output {
    Command::new(py)
        .args(args)
        .env("PYTHONPATH", site)
        .output()
        .unwrap_or_else(|e| panic!("running {py:?} {args:?}: {e}"))
}

#[test]
fn kubernetes_job_validates_against_the_openapi_schemas() {
    let Some((py, site)) = validators("KUBE_VALIDATE", "kubernetes_validate") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let job = emit(
        dir.path(),
        "k8s",
        "job.yaml",
        &["--image", "registry.example/svc:1"],
    );
    let job = job.to_str().expect("utf-8 path");
    let out = run_py(
        &py,
        &site,
        &["-m", "kubernetes_validate", "--strict", "-k", "1.37.0", job],
    );
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("passed"), "{}", stdout(&out));
    // The validator does reject a broken Job (a field misspelt), so its pass means something.
    let broken = std::fs::read_to_string(job)
        .expect("read")
        .replace("completions:", "completionz:");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, broken).expect("write");
    let out = run_py(
        &py,
        &site,
        &[
            "-m",
            "kubernetes_validate",
            "--strict",
            "-k",
            "1.37.0",
            bad.to_str().expect("utf-8"),
        ],
    );
    assert!(!out.status.success(), "a misspelt field passed: {}", stdout(&out));
    // Read back by a YAML 1.1 reader: every bench word arrives as typed ($ doubled
    // for Kubernetes' own $(VAR) expansion, which gives it back).
    let args = yaml_query(
        &py,
        &site,
        job,
        "d['spec']['template']['spec']['containers'][0]['args']",
    );
    let words: Vec<String> = serde_json::from_str(&args).expect("json");
    let want: Vec<String> = bench_args().iter().map(|w| w.replace('$', "$$")).collect();
    assert_eq!(words[5..], want[..]);
    assert_eq!(words[..3], ["bench", "--shard", "$(JOB_COMPLETION_INDEX)/4"]);
}

/// `expr` over the YAML document `d` at `path` (read by PyYAML's safe loader), as JSON.
fn yaml_query(py: &Path, site: &Path, path: &str, expr: &str) -> String {
    let code =
        format!("import json, sys, yaml\nd = yaml.safe_load(open(sys.argv[1]))\nprint(json.dumps({expr}))");
    let out = run_py(py, site, &["-c", &code, path]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn github_and_gitlab_files_parse_and_validate_against_their_schemas() {
    let Some((py, site)) = validators("JSONSCHEMA", "check_jsonschema") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let github = emit(dir.path(), "github", "fleet.yml", &[]);
    let gitlab = emit(
        dir.path(),
        "gitlab",
        "gitlab-ci.yml",
        &["--image", "registry.example/svc:1"],
    );
    for (file, schema) in [
        (&github, "vendor.github-workflows"),
        (&gitlab, "vendor.gitlab-ci"),
    ] {
        let f = file.to_str().expect("utf-8 path");
        let out = run_py(
            &py,
            &site,
            &["-m", "check_jsonschema", "--builtin-schema", schema, f],
        );
        assert!(out.status.success(), "{schema}: {}{}", stdout(&out), stderr(&out));
    }
    let g = github.to_str().expect("utf-8");
    // `on` quoted: PyYAML (YAML 1.1) would read a bare `on` as true.
    assert_eq!(
        yaml_query(&py, &site, g, "sorted(d)").trim(),
        r#"["jobs", "name", "on"]"#
    );
    let job = "d['jobs']['coldstart-fleet']";
    assert_eq!(
        yaml_query(&py, &site, g, &format!("{job}['strategy']")).trim(),
        r#"{"fail-fast": false, "matrix": {"shard": [0, 1, 2, 3]}}"#
    );
    // The shard's line, run by bash with the matrix's values: bench gets its words whole.
    let run: String =
        serde_json::from_str(&yaml_query(&py, &site, g, &format!("{job}['steps'][1]['run']"))).expect("json");
    assert_eq!(
        shell_words(&run, &[("SHARD", "2"), ("EXPERIMENT", "github-7")]),
        expected("2/4", "github-7")
    );
    let l = gitlab.to_str().expect("utf-8");
    let script: Vec<String> =
        serde_json::from_str(&yaml_query(&py, &site, l, "d['coldstart-fleet']['script']")).expect("json");
    // GitLab's CI_NODE_INDEX is 1-based: node 1 runs shard 0.
    let line = script.join("\n");
    assert_eq!(
        shell_words(&line, &[("CI_NODE_INDEX", "1"), ("CI_PIPELINE_ID", "9")]),
        expected("0/4", "gitlab-9")
    );
}

/// What bench should receive: its options, then the bench arguments as typed.
fn expected(shard: &str, experiment: &str) -> Vec<String> {
    let mut w: Vec<String> = ["bench", "--shard", shard, "--experiment", experiment]
        .iter()
        .map(|s| s.to_string())
        .collect();
    w.extend(bench_args());
    w
}

/// The words `script`'s `coldstart` command gets, run by bash with `env` and
/// `coldstart` a function that prints them one per NUL.
fn shell_words(script: &str, env: &[(&str, &str)]) -> Vec<String> {
    let program = format!(
        "coldstart() {{ printf '%s\\0' \"$@\"; }}\n{}",
        script.replace("exec coldstart", "coldstart")
    );
    let out = Command::new("bash")
        .args(["-c", &program])
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .expect("bash");
    assert!(out.status.success(), "{}", stderr(&out));
    let mut words: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .map(String::from)
        .collect();
    words.pop();
    words
}

#[test]
fn slurm_script_is_valid_bash_and_runs_its_array_task() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = emit(dir.path(), "slurm", "fleet.sbatch", &[]);
    let out = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .expect("bash");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&script).expect("read");
    assert!(
        text.contains("\n#SBATCH --array=0-3\n") && text.contains("\n#SBATCH --exclusive\n"),
        "{text}"
    );
    let env = [
        ("SLURM_ARRAY_TASK_ID", "3"),
        ("SLURM_ARRAY_JOB_ID", "41"),
        ("COLDSTART_STORE", "postgres://x"),
    ];
    assert_eq!(shell_words(&text, &env), expected("3/4", "slurm-41"));
    // Without a store it stops with a line that says what to set.
    let out = Command::new("bash")
        .arg(&script)
        .env_clear()
        .env("SLURM_ARRAY_TASK_ID", "0")
        .output()
        .expect("bash");
    assert!(
        !out.status.success() && stderr(&out).contains("export COLDSTART_STORE"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for (args, want) in [
        (
            vec!["fleet", "emit", "nomad", "--shards", "2", "--", "--", "x"],
            "unknown engine \"nomad\"",
        ),
        (
            vec!["fleet", "emit", "slurm", "--shards", "0", "--", "--", "x"],
            "at least 1",
        ),
        (
            vec!["fleet", "emit", "slurm", "--shards", "-3", "--", "--", "x"],
            "at least 1",
        ),
        (
            vec!["fleet", "emit", "slurm", "--shards", "two", "--", "--", "x"],
            "at least 1",
        ),
        (
            vec!["fleet", "emit", "slurm", "--shards", "2"],
            "no bench arguments",
        ),
        (
            vec!["fleet", "emit", "k8s", "--shards", "2", "--", "--", "x"],
            "needs --image",
        ),
        (vec!["fleet", "emit", "--shards", "2"], "needs an engine"),
    ] {
        let out = cs(&args).run();
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.streams());
        let err = out.stderr();
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout().is_empty(), "{args:?}");
    }
}

#[test]
fn an_existing_file_is_replaced_only_with_force() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("job.yaml");
    std::fs::write(&file, "mine\n").expect("write");
    let args = ["fleet", "emit", "slurm", "--shards", "2", "-o"];
    let out = cs(&args).arg(&file).args(["--", "--", "./server"]).run();
    assert_eq!(out.code(), Some(2), "{}", out.streams());
    assert!(out.stderr().contains("exists: give --force"), "{}", out.stderr());
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "mine\n");
    cs(&args)
        .arg(&file)
        .args(["--force", "--", "--", "./server"])
        .ok();
    assert!(std::fs::read_to_string(&file)
        .expect("read")
        .starts_with("#!/bin/bash\n"));
    // Without -o the file goes to stdout.
    let out = cs(&["fleet", "emit", "gitlab", "--shards", "2", "--", "--", "./server"]).ok();
    assert!(out.stdout().contains("parallel: 2"), "{}", out.stdout());
}
