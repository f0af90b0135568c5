//! Warm invokes (`--invokes`), Durations and timeouts, and the extension A/B.

use super::*;

/// `--invokes 3`: the cold invoke, then three warm ones in the same environment
/// (runtime and extension stay up), each with its own REPORT; only the first
/// shows Init Duration; the results carry them as the 1st and later requests.
#[test]
fn warm_invokes_each_get_a_report() {
    let _turn = crate::common::beside();
    let (o, log, sample) = failing("", Some(""), &["--invokes", "3"]);
    assert!(o.status.success(), "{}\n{log:?}", stderr(&o));
    let reports: Vec<&String> = log.iter().filter(|l| l.starts_with("REPORT ")).collect();
    assert_eq!(reports.len(), 4, "{log:?}");
    assert!(reports[0].contains("\tInit Duration: "), "{}", reports[0]);
    for r in &reports[1..] {
        assert!(!r.contains("Init Duration"), "{r}");
    }
    let mut ids: Vec<String> = reports
        .iter()
        .map(|r| fields(r).first().map(|(_, v)| v.clone()).unwrap_or_default())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "request ids repeat: {reports:?}");
    // One INIT_START: the same environment served all four.
    assert_eq!(log.iter().filter(|l| l.starts_with("INIT_START")).count(), 1);
    assert_eq!(sample["requests_ns"].as_array().map(Vec::len), Some(4));
}

/// An error type header of any size is shortened before it reaches the log, the
/// terminal and the results.
#[test]
fn a_huge_error_type_header_is_shortened() {
    let _turn = crate::common::beside();
    let huge = format!("CS_RT_ERROR_TYPE=Runtime.{}", "A".repeat(20_000));
    let (o, log, sample) = failing("error-type", None, &["--env", &huge]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let t = sample["outcome"]["error_type"].as_str().unwrap();
    assert!(
        t.starts_with("Runtime.AAA") && t.chars().count() <= 200,
        "{} chars",
        t.len()
    );
    let longest = |text: &str| text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(
        longest(&stdout(&o)) < 2_000,
        "stdout has a {}-char line",
        longest(&stdout(&o))
    );
    assert!(
        longest(&stderr(&o)) < 2_000,
        "stderr has a {}-char line",
        longest(&stderr(&o))
    );
    assert!(
        log.iter()
            .filter(|l| l.starts_with("REPORT "))
            .all(|l| l.len() < 2_000),
        "{log:?}"
    );
}

/// The REPORT lines' Durations (ms), in order.
fn report_durations(log: &[String]) -> Vec<f64> {
    log.iter()
        .filter(|l| l.starts_with("REPORT "))
        .map(|l| ms_field(&fields(l), "Duration"))
        .collect()
}

/// `--invokes`: a runtime that works 200 ms after posting each response (before
/// its next /next) is charged for it in no invoke; each Duration lies within the
/// runtime's own record of that invoke (CLOCK_MONOTONIC: from after its /next
/// returned to before its post, at least; from before its /next to after its post,
/// at most). What it prints after the last response still reaches the log.
#[test]
fn work_after_a_response_is_in_no_invokes_duration() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let times = dir.path().join("times.txt");
    let (o, log, _) = failing(
        "",
        None,
        &[
            "--invokes",
            "3",
            "--env",
            "CS_RT_AFTER_MS=200",
            "--env",
            "CS_RT_AFTER_SAY=after-response",
            "--env",
            &format!("CS_RT_TIMES={}", times.display()),
        ],
    );
    assert!(o.status.success(), "{}\n{log:?}", stderr(&o));
    let durations = report_durations(&log);
    let record: Vec<Vec<u64>> = lines_of(&times)
        .iter()
        .map(|l| l.split(' ').map(|n| n.parse().unwrap()).collect())
        .collect();
    assert_eq!(durations.len(), 4, "{log:?}");
    assert_eq!(record.len(), 4, "{record:?}");
    // REPORT rounds to 0.01 ms.
    let ms = |ns: u64| ns as f64 / 1e6;
    for (i, (d, r)) in durations.iter().zip(&record).enumerate() {
        let (next, got, post, posted) = (r[0], r[1], r[2], r[3]);
        let (low, high) = (ms(post - got) - 0.01, ms(posted - next) + 0.01);
        assert!(
            (low..=high).contains(d),
            "invoke {}: Duration {d} ms, the runtime's own record allows [{low:.2}, {high:.2}]: {durations:?}",
            i + 1
        );
    }
    // Printed 200 ms after the fourth response, right before its /next.
    assert!(
        log.iter().any(|l| l == "after-response 4"),
        "the line printed after the last response is lost: {log:?}"
    );
}

/// A handler that sleeps past `--timeout 1` gets Duration = the timeout (as
/// Lambda's REPORT shows it), however late coldstart woke up.
#[test]
fn a_timed_out_invoke_lasts_the_timeout() {
    let _turn = crate::common::beside();
    let (o, log, sample) = failing(
        "",
        None,
        &["--timeout", "1", "--env", "CS_RT_INVOKE_SLEEP_MS=3000"],
    );
    assert_eq!(o.status.code(), Some(1), "{}\n{log:?}", stderr(&o));
    let report = log
        .iter()
        .find(|l| l.starts_with("REPORT "))
        .unwrap_or_else(|| panic!("no REPORT: {log:?}"));
    assert!(report.contains("\tStatus: timeout"), "{report}");
    let d = ms_field(&fields(report), "Duration");
    // The cap is exact; the lower side allows the timer's rounding.
    assert!(
        (999.0..=1000.0).contains(&d),
        "Duration {d} ms at --timeout 1: {report}"
    );
    let first = sample["requests_ns"][0].as_f64().unwrap() / 1e6;
    assert!((999.0..=1000.0).contains(&first), "1st request {first} ms");
}

/// An extension A/B (the lambda-extension crate's extension, B's sleeping 100 ms
/// before its first /event/next): its ready mark gets the comparison Init
/// Duration gets, in the terminal's marks table and in the Markdown export. B
/// is slower by the injected 100 ms, its CI above 0.
#[test]
fn extension_ready_is_compared_like_init_duration() {
    let _turn = crate::common::beside();
    let (Some(rt), Some(ext_bin)) = (client("rust-bootstrap"), client("rust-telemetry-extension")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ext = extensions_dir(dir.path(), &[("rust-ext", Path::new(&ext_bin))]);
    let (md, json) = (dir.path().join("ab.md"), dir.path().join("ab.json"));
    let m = marker("lambda-ext-ab");
    let port = format!("CS_TELEMETRY_PORT={}", free_port());
    let o = cs(&[
        "lambda",
        "--no-cgroup",
        "--runs",
        "12",
        "--warmup",
        "1",
        "--export-markdown",
        md.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
        "--runtime",
        &rt,
        "--extensions",
        ext.to_str().unwrap(),
        "--env",
        &m,
        "--env",
        &port,
        "--name",
        "A",
        "--name",
        "B",
        "--env",
        "CS_EXT_DELAY_MS=100",
    ])
    .no_store()
    .run();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(processes_with(&m).is_empty(), "left behind");
    let doc = json_file(&json);
    let mark_of = |v: usize, name: &str| {
        doc["variants"][v]["stats"]["marks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in variant {v}: {}", doc["variants"][v]["stats"]))
            .clone()
    };
    assert!(mark_of(0, "ext.rust-ext.ready").get("vs_baseline").is_none());
    let c = &mark_of(1, "ext.rust-ext.ready")["vs_baseline"];
    assert_eq!(c["verdict"], "slower", "{c}");
    let shift = c["shift"]["estimate"].as_f64().unwrap();
    let (lo, hi) = (
        c["shift"]["ci"][0].as_f64().unwrap(),
        c["shift"]["ci"][1].as_f64().unwrap(),
    );
    assert!(lo > 0.0, "the CI includes 0: [{lo}, {hi}]");
    // The injected 100 ms (a tokio sleep: 100 ms and a timer tick at most), give or
    // take the runs' own spread: half the CI's width, and 20 ms.
    let slack = 20.0 + (hi - lo) / 2.0;
    assert!(
        (shift - 100.0).abs() <= slack,
        "shift {shift:.1} ms [{lo:.1}, {hi:.1}] for an injected 100 ms"
    );
    // The same row in the terminal and in the Markdown: B's ready mark, vs A, slower.
    let row = |text: &str| {
        text.lines()
            .find(|l| l.contains(" B ") && l.contains("ext.rust-ext.ready"))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no B ext.rust-ext.ready row:\n{text}"))
    };
    let terminal = row(&stdout(&o));
    assert!(terminal.contains("vs A: slower, shift +"), "{terminal}");
    let markdown = std::fs::read_to_string(&md).unwrap();
    let md_row = row(&markdown);
    assert!(
        md_row.starts_with("| B | ext.rust-ext.ready | lambda |"),
        "{md_row}"
    );
    assert!(md_row.contains("vs A: slower, shift +"), "{md_row}");
    assert!(markdown.contains("| variant | mark | source |"), "{markdown}");
}
