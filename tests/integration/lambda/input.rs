//! Input mistakes: one line naming the mistake and the fix, before any run.

use super::*;

#[test]
fn bad_input_names_the_fix() {
    let _turn = crate::common::beside();
    let o = cs(&["lambda", "--memory", "64", "--runtime", "/bin/true"])
        .no_store()
        .run();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("128 to 10240 MB"), "{}", stderr(&o));
    let o = cs(&["lambda"]).no_store().run();
    assert!(stderr(&o).contains("--runtime"), "{}", stderr(&o));
    let o = cs(&["lambda", "--runtime", "/bin/true", "--env", "AWS_REGION=x"])
        .no_store()
        .run();
    assert!(stderr(&o).contains("reserved"), "{}", stderr(&o));
}

/// Each mistake a new user made gets one line naming it and the fix.
#[test]
fn input_mistakes_are_named_in_one_line() {
    let _turn = crate::common::beside();
    let rt = python_client("raw_runtime.py");
    let rt = rt.to_str().unwrap();
    for (args, want, not) in [
        (
            vec!["--runtime", rt, "--memory", "128,128"],
            "--memory 128 is given twice",
            "two variants",
        ),
        (
            vec!["--runtime", "./nope-coldstart"],
            "--runtime ./nope-coldstart: no such file",
            "after `--`",
        ),
        (
            vec!["--runtime", rt, "--extensions", "nonexistent-coldstart-ext"],
            "extension executables",
            "unpacked zip",
        ),
        (
            vec!["--runtime", rt, "--name", "a", "--runs", "1"],
            "--runs is not a per-variant option: options for all variants go before the first --name",
            "error: error:",
        ),
    ] {
        let mut full = vec!["lambda", "--no-cgroup"];
        full.extend(args.iter().copied());
        let o = cs(&full).no_store().run();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want) && !err.contains(not), "{args:?}: {err}");
    }
}

/// Paths and limits a run would only find wrong after its runs: said first.
#[test]
fn save_response_dir_and_timeout_are_checked_up_front() {
    let _turn = crate::common::beside();
    let rt = python_client("raw_runtime.py");
    let base = ["lambda", "--no-cgroup", "--runs", "1", "--warmup", "0"];
    let with = |extra: &[&str]| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(["--runtime", rt.to_str().unwrap()]);
        args.extend(extra);
        cs(&args).no_store().run()
    };
    let o = with(&["--save-response", "/nonexistent-coldstart-dir/r.json"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--save-response /nonexistent-coldstart-dir/r.json") && err.contains("does not exist"),
        "{err}"
    );
    let o = with(&["--timeout", "901"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--timeout 901") && err.contains("900"), "{err}");
}
