//! A stored explanation (its timeline and sections, as the history keeps them)
//! renders as the live one did.

use super::render;
use crate::chrome_trace::to_chrome_trace;
use crate::testkit;
use crate::value::text;
use coldstart_core::clock;
use coldstart_core::sample::section::Value;
use coldstart_core::sample::{Mark, MarkSource, Section};
use coldstart_core::target::{Readiness, Target};
use coldstart_core::trace::{Event, TraceOptions};
use coldstart_explain::adapter::python::Python;
use coldstart_explain::adapter::{Adapter, Collected};
use coldstart_explain::timeline::Timeline;
use coldstart_explain::{adapted, explanation};
use std::process::Command;
use std::time::Duration;

/// A real Python start, traced (the timeline), then run again with the Python
/// adapter's switch and its output line read as a log mark (the sections),
/// survives JSON: the report text and the Chrome trace drawn from the stored
/// copy are the ones drawn from the live one.
///
/// The adapted run is a plain child waited for by pid, not `run_once`: this
/// binary's tracer tests run alongside, and `run_once`'s reaping (waitpid(-1))
/// and tree kill would reach their tracees.
#[test]
fn a_real_explanation_renders_the_same_from_json() {
    let Some(python) = testkit::python() else {
        return;
    };
    let py = python.to_str().expect("a UTF-8 interpreter path");
    let script = "import json, decimal\nprint('config loaded', flush=True)\n";
    let target = Target::new(vec![py.into(), "-c".into(), script.into()], vec![], None).expect("a target");

    let mut topts = TraceOptions::new(target.argv.clone(), target.program.clone());
    topts.timeout = Duration::from_secs(60);
    let t = coldstart_core::launch::traced::trace(coldstart_core::Lab::open().expect("a Lab"), &topts)
        .expect("trace python");
    let exit = t
        .events
        .iter()
        .find(|e| e.pid == t.root_pid && matches!(e.event, Event::Exit { .. }))
        .map(|e| e.ts_ns - t.t0_ns)
        .expect("python exited");
    let ms = exit as f64 / 1e6;
    let mut e = explanation(
        &target,
        &Readiness::Exit,
        None,
        coldstart_core::stats::summarize(&[ms]),
        None,
        vec![(ms, t)],
    )
    .expect("an explanation");

    let dir = tempfile::tempdir().expect("tempdir");
    let injection = Python.inject(dir.path(), &[]).expect("inject");
    let t0 = clock::now_ns();
    let out = Command::new(&python)
        .args(["-c", script])
        .envs(injection.env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run python with the adapter's switch");
    let read_at = clock::now_ns() - t0;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let claimed: Vec<(u64, String)> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| injection.claims.iter().any(|re| re.is_match(l)))
        .map(|l| (read_at, l.to_string()))
        .collect();
    let got = Collected {
        dir: dir.path(),
        claimed: &claimed,
        ready_ns: read_at,
        trace: e.trace.as_ref(),
        t0_mono_ns: t0,
    };
    e.sources.push(Python.collect(&got).expect("collect"));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "config loaded\n");
    let marks = [Mark::new("config", MarkSource::Log, read_at)];
    e.sources.extend(adapted::checkpoints(&marks));
    e.adapters = vec!["python".into()];

    // Real content on every side, so the round trip has something to lose.
    let python_section = &e.sources[0];
    assert!(
        python_section.spans.len() > 10 && !python_section.table.rows.is_empty(),
        "{python_section:?}"
    );
    assert_eq!(e.sources.len(), 2);
    assert!(e.timeline.counts.opens > 10, "{:?}", e.timeline.counts);
    assert!(e.timeline.marks.iter().any(|m| m.name == "exit"));

    let live_text = render(&e);
    let raw = e
        .trace
        .clone()
        .expect("the explanation keeps its trace in memory");
    let live_chrome = to_chrome_trace(&raw, &e.timeline, &e.sources);
    let stored = serde_json::to_string(&(&e.timeline, &e.sources)).expect("serialize");
    let (timeline, sources): (Timeline, Vec<Section>) =
        serde_json::from_str(&stored).expect("deserialize what was stored");
    assert_eq!(timeline, e.timeline);
    assert_eq!(sources, e.sources);
    e.timeline = timeline;
    e.sources = sources;
    assert_eq!(render(&e), live_text);
    assert_eq!(to_chrome_trace(&raw, &e.timeline, &e.sources), live_chrome);

    // An explanation stored as coldstart.explain/2 held every value as the
    // text printed: it loads, and prints and draws the same.
    let mut old = e.sources.clone();
    for s in &mut old {
        let cells = s.table.rows.iter_mut().flatten();
        let values = s
            .facts
            .iter_mut()
            .map(|f| &mut f.1)
            .chain(cells)
            .chain(&mut s.notes);
        for v in values.chain(
            s.spans
                .iter_mut()
                .flat_map(|sp| sp.args.iter_mut().map(|a| &mut a.1)),
        ) {
            *v = Value::Text(text(v));
        }
    }
    let stored = serde_json::to_string(&old).expect("serialize");
    assert!(!stored.contains(r#"{"ns":"#), "{stored}");
    e.sources = serde_json::from_str(&stored).expect("an explain/2 section loads");
    assert_eq!(render(&e), live_text);
    assert_eq!(to_chrome_trace(&raw, &e.timeline, &e.sources), live_chrome);
}

/// Each exec-chain row shows its step as the waterfall shows a phase: start →
/// end, the duration (end − start, not the start), and that duration's
/// untraced estimate. The issue's case: a 120.4 ms shim step printed as
/// `1.10 ms /usr/bin/mvn [/usr/bin/dash] ≈ 98.5 ms untraced`.
#[test]
fn exec_chain_rows_show_each_steps_duration_traced_and_untraced() {
    use coldstart_core::trace::{Outcome, Trace, TraceEvent};
    use coldstart_explain::estimate::{Calibration, Estimate, Estimated};
    const MS: u64 = 1_000_000;
    let exec = |t_us: u64, path: &str, exe: &str| TraceEvent {
        ts_ns: t_us * 1000,
        pid: 100,
        tid: 100,
        event: Event::Exec {
            path: path.into(),
            exe: exe.into(),
            argv0: path.into(),
            argv: vec![path.into()],
        },
    };
    let trace = Trace {
        t0_ns: 0,
        end_ns: 300 * MS,
        root_pid: 100,
        events: vec![
            exec(1_100, "/usr/bin/mvn", "/usr/bin/dash"),
            exec(121_500, "/usr/lib/jvm/bin/java", "/usr/lib/jvm/bin/java"),
        ],
        killed: false,
        outcome: Outcome::Reached,
        warnings: vec![],
        root_usage: None,
        task_names: Default::default(),
        stops: Vec::new(),
        cpu: Vec::new(),
    };
    let target = Target::new(vec!["mvn".into(), "--version".into()], vec![], None).expect("a target");
    let mut e = explanation(
        &target,
        &Readiness::Exit,
        None,
        coldstart_core::stats::summarize(&[300.0]),
        None,
        vec![(300.0, trace)],
    )
    .expect("an explanation");
    let est = |name: &str, traced_ms: f64, estimate_ms: f64| Estimated {
        name: name.into(),
        traced_ms,
        estimate_ms,
        stops: 10,
        cost_ms: traced_ms - estimate_ms,
        range_ms: Some((estimate_ms - 1.0, estimate_ms + 1.0)),
    };
    e.estimate = Some(Estimate {
        method: "per-stop subtraction, residual-scaled".into(),
        calibration: Calibration {
            round_trip_us: 10.0,
            held_us: 5.0,
            stops: 2000,
            rounds: 5,
            spread_pct: 5.0,
        },
        calibrated_total_ms: 250.0,
        untraced_median_ms: Some(250.0),
        error_pct: Some(0.0),
        scale: 1.0,
        scale_ci: Some((0.9, 1.1)),
        reliable: true,
        noise: Vec::new(),
        total_ms: 250.0,
        total_range_ms: Some((240.0, 260.0)),
        phases: vec![est("exec-chain", 121.5, 99.0)],
        exec_chain: vec![
            est("/usr/bin/mvn", 120.4, 98.5),
            est("/usr/lib/jvm/bin/java", 178.5, 150.0),
        ],
        opens_by_kind: Vec::new(),
        stops: 20,
        stops_cost_ms: 50.0,
        scaled_cost_ms: 50.0,
        runs: Vec::new(),
    });
    let out = render(&e);
    let row = |needle: &str| {
        out.lines()
            .skip_while(|l| !l.starts_with("exec chain"))
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no exec chain row for {needle}:\n{out}"))
            .to_string()
    };
    let mvn = row("/usr/bin/mvn");
    let cols: Vec<&str> = mvn.split_whitespace().collect();
    assert_eq!(
        cols.get(..9),
        Some(&["1.10", "ms", "→", "121.5", "ms", "120.4", "ms", "≈", "98.5"][..]),
        "{mvn}"
    );
    assert!(mvn.contains("98.5 ms untraced "), "{mvn}");
    assert!(mvn.ends_with("  /usr/bin/mvn  [/usr/bin/dash]"), "{mvn}");
    // The final program runs on into the loader and init: no duration, no estimate.
    let java = row("/usr/lib/jvm/bin/java");
    assert!(java.trim_start().starts_with("121.5 ms → loader, init"), "{java}");
    assert!(!java.contains('≈'), "{java}");
    // The traced duration sits in the waterfall's duration column, the estimate
    // after it, as for a phase.
    let phase = out
        .lines()
        .find(|l| l.trim_start().starts_with("exec-chain"))
        .expect("the exec-chain phase row");
    let col = |l: &str, s: &str| l.find(s).map(|i| l[..i].chars().count());
    let layout = |l: &str| Some(col(l, "≈")? - col(l, "→")?);
    assert_eq!(layout(&mvn), layout(phase), "{mvn}\n{phase}");
}

/// A section prints its facts and the rows it shows with their units, and
/// counts the rows it leaves out.
#[test]
fn a_section_prints_its_typed_values_and_counts_the_rest() {
    use coldstart_core::sample::section::Table;
    let mut t = Table::new(&["package", "classes", "self"]);
    t.rows = (0..5)
        .map(|i| vec![format!("p{i}").into(), Value::Count(i), Value::Ns(456_000)])
        .collect();
    t.show_first(2);
    let text = super::section_to(
        &Section {
            title: "T".into(),
            facts: vec![
                ("imports".into(), Value::Count(57)),
                (
                    "total".into(),
                    Value::parts([Value::Ns(12_300_000), " (a, b)".into()]),
                ),
            ],
            table: t,
            ..Section::default()
        },
        None,
    );
    assert!(text.contains("  imports  57\n"), "{text}");
    assert!(text.contains("  total    12.3 ms (a, b)\n"), "{text}");
    assert!(text.contains("456 µs"), "{text}");
    assert!(text.contains("p1") && !text.contains("p2"), "{text}");
    assert!(text.contains("… 3 more"), "{text}");
}

/// A JVM section whose class sources are 1,000-character jar paths renders inside
/// the terminal's width with its table whole (each row's figures on the row's first
/// line, the header on one line).
#[test]
fn a_long_jvm_source_fits_the_terminal() {
    use coldstart_explain::adapter::jvm::{parse_log, Summary};
    let dir = "d".repeat(200);
    let long = format!(
        "jar:nested:/{dir}/{dir}/app.jar/!BOOT-INF/lib/{}-1.0.jar!/",
        "n".repeat(1000)
    );
    let log = parse_log(&format!(
        "[7584071482155ns][94119504ns][startuptime] Create VM, 0.0931483 secs\n\
         [7584078467738ns][101105108ns][class,load ] com.acme.Main source: {long}\n\
         [7584078467800ns][101105170ns][class,load ] com.acme.Other source: {long}\n\
         [7584078467900ns][101105270ns][class,load ] com.acme.Third source: file:/tmp/app.jar\n"
    ));
    let section = Summary::new(&log, 0, 0).section(None);
    for width in [80, 120] {
        let text = super::section_to(&section, Some(width));
        for line in text.lines() {
            assert!(
                unicode_width::UnicodeWidthStr::width(line) <= width,
                "a line wider than {width}:\n{line}\n\n{text}"
            );
        }
        let header = text.lines().find(|l| l.contains("package")).expect("header");
        for col in ["classes", "sources", "first load", "span"] {
            assert!(header.contains(col), "{col} not on the header line:\n{text}");
        }
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with("com.acme "))
            .expect("row");
        assert!(
            row.contains(" 3 ") && row.contains(" ms"),
            "the row's figures left its line:\n{text}"
        );
    }
}
