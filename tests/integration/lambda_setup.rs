//! `coldstart lambda setup RUNTIME`: one runtime's pinned client installed by the
//! ecosystem's real installer (pip from PyPI here) into the user's cache, found by
//! `coldstart lambda --runtime` from any directory; and the one command a missing
//! client's message names.

use crate::common::*;
use std::path::Path;

/// A Python handler that answers with where its runtime client was loaded from.
fn function(dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir code");
    std::fs::write(
        dir.join("app.py"),
        "import awslambdaric\n\
         def handler(event, context):\n    return {'client': awslambdaric.__file__}\n",
    )
    .expect("write the handler");
}

#[test]
fn setup_installs_one_client_that_lambda_finds_from_any_directory() {
    let _turn = beside();
    if testkit::python().is_none() {
        testkit::skip("PYTHON", "no python3 on PATH");
        return;
    }
    let home = tempfile::tempdir().expect("tempdir");
    let cache = home.path().join("cache");
    let first = cs(&["lambda", "setup", "python3.11"])
        .env("XDG_CACHE_HOME", &cache)
        .env_remove("COLDSTART_LAMBDA_RIC_DIR")
        .current_dir(home.path())
        .run();
    let err = stderr(&first);
    if !first.status.success() && err.contains("needs Python 3.11") {
        testkit::skip("PYTHON", &format!("no Python 3.11 here: {err}"));
        return;
    }
    assert!(first.status.success(), "{err}");
    let client = cache.join("coldstart/lambda-ric/python");
    assert!(client.join("awslambdaric/__main__.py").is_file(), "{err}");
    assert!(
        err.contains("installing awslambdaric") && err.contains("installed in"),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "no terminal escapes in the progress: {err:?}"
    );
    // Only what was asked for: no other runtime's client.
    let entries: Vec<String> = std::fs::read_dir(cache.join("coldstart/lambda-ric"))
        .expect("the cache")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(entries, ["python"], "one client, no leftovers");

    // Twice: nothing to do.
    let again = cs(&["lambda", "setup", "python3.11"])
        .env("XDG_CACHE_HOME", &cache)
        .current_dir(home.path())
        .ok();
    assert!(stderr(&again).contains("nothing to do"), "{}", stderr(&again));

    // A user's project elsewhere: the function's client is the cache's.
    let project = home.path().join("project");
    function(&project);
    let response = home.path().join("response.json");
    let run = cs(&[
        "lambda",
        "--runs",
        "1",
        "--memory",
        "512",
        "--runtime",
        "python3.11",
        "--handler",
        "app.handler",
    ])
    .arg("--code")
    .arg(&project)
    .arg("--save-response")
    .arg(&response)
    .quiet()
    .no_store()
    .env("XDG_CACHE_HOME", &cache)
    .env_remove("COLDSTART_LAMBDA_RIC_DIR")
    .current_dir(&project)
    .run();
    assert!(run.status.success(), "{}", stderr(&run));
    let answer: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&response).expect("the response")).expect("JSON");
    let loaded = answer["client"].as_str().expect("client path");
    assert!(
        Path::new(loaded).starts_with(&client),
        "the handler's client {loaded} is the cache's {}",
        client.display()
    );
    assert!(
        !project.join("target").exists() && !project.join(".coldstart").exists(),
        "nothing written into the user's project"
    );
}

#[test]
fn a_missing_client_names_the_one_command_that_installs_it() {
    let _turn = beside();
    let home = tempfile::tempdir().expect("tempdir");
    let project = home.path().join("project");
    function(&project);
    let o = cs(&[
        "lambda",
        "--runs",
        "1",
        "--runtime",
        "nodejs20.x",
        "--handler",
        "app.handler",
    ])
    .arg("--code")
    .arg(&project)
    .quiet()
    .no_store()
    .env("COLDSTART_LAMBDA_RIC_DIR", home.path().join("empty"))
    .current_dir(&project)
    .run();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("run `coldstart lambda setup nodejs20.x` once"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let bad = cs(&["lambda", "setup", "ruby3.2"]).run();
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("one of python3.11, nodejs20.x, java17"),
        "{}",
        stderr(&bad)
    );
}
