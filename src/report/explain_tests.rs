//! A stored explanation (its timeline and sections, as the history keeps them)
//! renders as the live one did.

use super::render;
use crate::explain::adapter::python::Python;
use crate::explain::adapter::{Adapter, Collected};
use crate::explain::{adapted, explanation};
use crate::report::chrome_trace::to_chrome_trace;
use crate::sample::{Mark, MarkSource, Section};
use crate::target::{Readiness, Target};
use crate::timeline::Timeline;
use crate::trace::{Event, TraceOptions};
use crate::{clock, testkit};
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
    let t = crate::launch::traced::trace(crate::Lab::open().expect("a Lab"), &topts).expect("trace python");
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
        crate::stats::summarize(&[ms]),
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
}
