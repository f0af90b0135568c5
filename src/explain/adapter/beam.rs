//! BEAM (Erlang, Elixir): the modules a node loads at boot, by application.
//! Nothing is switched on: the tracer already sees every `.beam` the code
//! server opens, so this adapter reads the traced run shown in the report, and
//! its cost is the tracer's.

use super::{Adapter, Collected, FinalExec, Injection};
use crate::sample::section::{ms_cell, Section, Span, Table};
use crate::timeline::package_key;
use crate::trace::{Event, Trace};
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::Path;

pub struct Beam;

impl Adapter for Beam {
    fn name(&self) -> &'static str {
        "beam"
    }

    /// The emulator itself (`erl`, `elixir`, `iex` and releases all exec it).
    fn detect(&self, exec: &FinalExec) -> bool {
        [exec.path, exec.exe].iter().any(|p| {
            let name = Path::new(p).file_name().and_then(|n| n.to_str()).unwrap_or("");
            name == "beam.smp" || name == "beam"
        })
    }

    fn inject(&self, _dir: &Path, _target_env: &[(String, String)]) -> Result<Injection> {
        Ok(Injection::default())
    }

    /// One section per VM that loaded code: a helper VM's modules (a boot
    /// script's, a remote shell's) are not added to the service's.
    fn collect_all(&self, got: &Collected) -> Result<Vec<Section>> {
        let Some(trace) = got.trace else {
            return Ok(vec![self.collect(got)?]);
        };
        let pids = vms(trace);
        if pids.len() < 2 {
            return Ok(vec![self.collect(got)?]);
        }
        Ok(pids
            .into_iter()
            .map(|pid| {
                let mut s = section(trace, Some(pid));
                s.title = format!("{} — VM pid {pid}", s.title);
                s
            })
            .collect())
    }

    fn collect(&self, got: &Collected) -> Result<Section> {
        Ok(match got.trace {
            Some(trace) => section(trace, None),
            None => Section {
                source: "beam".into(),
                title: "BEAM modules loaded (from the tracer)".into(),
                notes: vec!["no traced run to read .beam opens from".into()],
                ..Section::default()
            },
        })
    }
}

#[derive(Default)]
struct App {
    modules: usize,
    first_ns: u64,
    last_ns: u64,
}

/// The processes (VMs) that opened `.beam` files, in the order they first did.
fn vms(trace: &Trace) -> Vec<i32> {
    let mut pids: Vec<i32> = Vec::new();
    for e in &trace.events {
        if matches!(&e.event, Event::Open { path, .. } if path.ends_with(".beam")) && !pids.contains(&e.pid) {
            pids.push(e.pid);
        }
    }
    pids
}

/// Successful `.beam` opens by application (the `<app>-<vsn>` above `ebin/`),
/// of one VM (`pid`) or of the whole tree.
fn section(trace: &Trace, pid: Option<i32>) -> Section {
    let mut apps: BTreeMap<String, App> = BTreeMap::new();
    let mut failed = 0usize;
    for e in trace.events.iter().filter(|e| pid.is_none_or(|p| e.pid == p)) {
        let Event::Open { path, ok, .. } = &e.event else {
            continue;
        };
        if !path.ends_with(".beam") {
            continue;
        }
        if !ok {
            // The code server probing each directory of the code path in turn.
            failed += 1;
            continue;
        }
        let at = e.ts_ns.saturating_sub(trace.t0_ns);
        let key = package_key(path);
        let app = key
            .rsplit_once('-')
            .map_or(key.as_str(), |(name, _vsn)| name)
            .to_string();
        let a = apps.entry(app).or_insert(App {
            first_ns: at,
            ..App::default()
        });
        a.modules += 1;
        a.first_ns = a.first_ns.min(at);
        a.last_ns = a.last_ns.max(at);
    }
    let total: usize = apps.values().map(|a| a.modules).sum();
    let mut ordered: Vec<(&String, &App)> = apps.iter().collect();
    ordered.sort_by_key(|(name, a)| (std::cmp::Reverse(a.modules), name.to_string()));
    let mut table = Table::new(&["application", "modules", "first load", "last load"]);
    table.rows = ordered
        .iter()
        .map(|(name, a)| {
            vec![
                name.to_string(),
                a.modules.to_string(),
                ms_cell(a.first_ns),
                ms_cell(a.last_ns),
            ]
        })
        .collect();
    table.truncate(15);
    let mut spans: Vec<Span> = ordered
        .iter()
        .map(|(name, a)| Span {
            name: format!("{name} ({} modules)", a.modules),
            start_ns: a.first_ns,
            dur_ns: a.last_ns - a.first_ns,
            depth: 0,
            args: vec![("modules".into(), a.modules.to_string())],
        })
        .collect();
    spans.sort_by_key(|s| s.start_ns);
    let mut notes = vec![
        "modules preloaded into the emulator (erlang, init, prim_file, …) open no file and are not counted"
            .into(),
    ];
    if total == 0 {
        notes
            .push("no .beam file was opened: a release may load modules from an archive or boot file".into());
    }
    Section {
        source: "beam".into(),
        title: "BEAM modules loaded (from the tracer's .beam opens)".into(),
        facts: vec![
            ("modules loaded".into(), total.to_string()),
            ("applications".into(), apps.len().to_string()),
            ("failed lookups".into(), format!("{failed} (code path probing)")),
        ],
        table,
        spans,
        marks: Vec::new(),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceOptions;

    /// A real Erlang node booting and halting: its kernel and stdlib modules are
    /// counted by application, matching the .beam files strace sees opened.
    #[test]
    fn counts_a_real_erlang_boot_by_application() {
        let Some(erl) = crate::testkit::tool("ERLANG", "erl") else {
            return;
        };
        let argv: Vec<String> = ["erl", "-noshell", "-eval", "lists:sum([1]), halt()."]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let opts = TraceOptions::new(argv, erl);
        let t = crate::launch::traced::trace(crate::Lab::open().expect("a Lab"), &opts).expect("trace erl");
        assert!(Beam.detect(&FinalExec::of(&t).expect("an exec")));
        let sec = section(&t, None);
        let row = |app: &str| -> usize {
            sec.table
                .rows
                .iter()
                .find(|r| r[0] == app)
                .and_then(|r| r[1].parse().ok())
                .unwrap_or(0)
        };
        assert!(row("kernel") > 5, "{:?}", sec.table.rows);
        assert!(row("stdlib") > 5, "{:?}", sec.table.rows);
        let total: usize = sec.facts[0].1.parse().expect("count");
        let opened = t
            .events
            .iter()
            .filter(|e| matches!(&e.event, Event::Open { path, ok: true, .. } if path.ends_with(".beam")))
            .count();
        assert_eq!(total, opened);
        let counts: Vec<usize> = sec.table.rows.iter().map(|r| r[1].parse().unwrap_or(0)).collect();
        assert!(
            counts.windows(2).all(|w| w[0] >= w[1]),
            "largest first: {counts:?}"
        );
    }
}
