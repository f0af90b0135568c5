//! `coldstart lambda` with real Lambda clients written by others: a runtime built
//! on aws-lambda-go and one on the lambda_runtime crate, an extension built on the
//! lambda-extension crate (subscribed to the Telemetry API), and one written
//! against the raw HTTP API (Python). Each test checks what a user relies on: the
//! event order, the REPORT line, Init Duration against the extensions' own clocks,
//! the error paths, and that nothing is left running.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A built Lambda client, or None (a visible skip; a failure under
/// COLDSTART_REQUIRE_LAMBDA_CLIENTS) when examples/build.sh could not build it.
fn client(name: &str) -> Option<String> {
    let p = examples().join("lambda").join(name);
    testkit::need("LAMBDA_CLIENTS", p.exists().then_some(p), || {
        format!(
            "examples/lambda/{name} was not built (cargo or go missing or offline, see examples/build.sh)"
        )
    })
    .map(|p| p.display().to_string())
}

fn python_client(name: &str) -> PathBuf {
    repo().join("examples/lambda/python").join(name)
}

/// An extensions directory holding copies (the name an extension registers under
/// is its file name) of the given files.
fn extensions_dir(dir: &Path, files: &[(&str, &Path)]) -> PathBuf {
    let ext = dir.join("extensions");
    std::fs::create_dir_all(&ext).unwrap();
    for (name, src) in files {
        std::fs::copy(src, ext.join(name)).unwrap();
    }
    ext
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The tab-separated `Key: value` fields of a platform line (`KIND ` stripped).
fn fields(line: &str) -> Vec<(String, String)> {
    let body = line.split_once(' ').map_or(line, |(_, rest)| rest);
    body.split('\t')
        .filter_map(|f| f.split_once(": ").map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

fn ms_field(fields: &[(String, String)], key: &str) -> f64 {
    let v = &fields
        .iter()
        .find(|(k, _)| k == key)
        .unwrap_or_else(|| panic!("no {key}"))
        .1;
    v.strip_suffix(" ms")
        .or_else(|| v.strip_suffix(" MB"))
        .unwrap_or_else(|| panic!("{key}: {v}"))
        .parse()
        .unwrap()
}

/// The mark of this name in an exported sample.
fn mark<'a>(sample: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    sample["marks"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["name"] == name))
        .unwrap_or_else(|| panic!("no mark {name}: {}", sample["marks"]))
}

/// Run the raw Python runtime in a failing mode; returns (output, log lines, sample).
fn failing(
    runtime_mode: &str,
    ext_mode: Option<&str>,
    extra: &[&str],
) -> (Out, Vec<String>, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let (log, json) = (dir.path().join("lambda.log"), dir.path().join("out.json"));
    let m = marker("lambda-fail");
    let rt = python_client("raw_runtime.py");
    let mut args: Vec<String> = [
        "lambda",
        "--no-cgroup",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--runtime",
        rt.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
        "--env",
        &m,
        "--env",
        &format!("CS_RT_MODE={runtime_mode}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(mode) = ext_mode {
        let ext = extensions_dir(dir.path(), &[("py-raw", &python_client("raw_extension.py"))]);
        args.extend(["--extensions".into(), ext.display().to_string()]);
        args.extend(["--env".into(), format!("CS_EXT_MODE={mode}")]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let o = coldstart().args(&args).quiet().no_store().run();
    assert!(
        processes_with(&m).is_empty(),
        "left behind: {:?}",
        processes_with(&m)
    );
    let doc = json_file(&json);
    (o, lines_of(&log), doc["samples"][0].clone())
}

mod clients;
mod init;
mod input;
mod invokes;
mod telemetry;
mod warm;

/// Median of a per-variant figure over the exported samples, by variant name.
pub(crate) fn median_by_variant(
    doc: &serde_json::Value,
    figure: impl Fn(&serde_json::Value) -> f64,
) -> Vec<(String, f64)> {
    let names: Vec<String> = doc["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_string())
        .collect();
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut xs: Vec<f64> = doc["samples"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["variant"] == i && s["warmup"] == false)
                .map(&figure)
                .collect();
            assert!(!xs.is_empty(), "no samples of {name}");
            xs.sort_by(f64::total_cmp);
            (name.clone(), xs[xs.len() / 2])
        })
        .collect()
}
