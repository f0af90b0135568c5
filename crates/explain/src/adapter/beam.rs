//! BEAM (Erlang, Elixir): the modules a node loads at boot, by application.
//! Nothing is switched on: the tracer already sees every `.beam` the code
//! server opens, so this adapter reads the traced run shown in the report, and
//! its cost is the tracer's.

use super::{Adapter, Collected, FinalExec, Injection};
use anyhow::Result;
use coldstart_core::sample::section::{Section, Span, Table, Value};
use coldstart_core::trace::{Event, Trace};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub struct Beam;

/// Rows the terminal shows (the JSON has every application of every VM).
const TABLE_ROWS: usize = 20;

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

/// One application as one VM loaded it.
#[derive(Default)]
struct App {
    /// Distinct modules opened from its ebin directory.
    loaded: BTreeSet<String>,
    /// The ebin directory it loaded from (to list what it ships).
    ebin: Option<PathBuf>,
    first_ns: u64,
    last_ns: u64,
}

/// One emulator process: its applications and its code-path misses.
#[derive(Default)]
struct Vm {
    apps: BTreeMap<String, App>,
    failed: usize,
    /// Directories of the code path probed in vain, with their misses.
    failed_dirs: BTreeMap<String, usize>,
    first_ns: Option<u64>,
    last_ns: u64,
}

impl Vm {
    fn loaded(&self) -> usize {
        self.apps.values().map(|a| a.loaded.len()).sum()
    }
}

/// The application a `.beam` belongs to: the `<app>-<vsn>` (or `<app>`) directory
/// above `ebin/`; else the directory holding it.
fn app_of(path: &Path) -> (String, Option<PathBuf>) {
    let dir = path.parent();
    let ebin = dir.filter(|d| d.file_name().is_some_and(|n| n == "ebin"));
    let named = ebin.and_then(Path::parent).or(dir);
    let name = named
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "(root)".into());
    // "kernel-8.5.3" → "kernel"; a name whose tail is no version stays whole.
    let app = match name.rsplit_once('-') {
        Some((app, vsn)) if vsn.starts_with(|c: char| c.is_ascii_digit()) => app.to_string(),
        _ => name,
    };
    (app, ebin.map(Path::to_path_buf))
}

/// What an application ships: the `.beam` files in its ebin directory, or, when
/// the directory cannot be listed any more, the `modules` of its `.app` file.
fn shipped(app: &str, ebin: &Path) -> Option<usize> {
    if let Ok(rd) = std::fs::read_dir(ebin) {
        return Some(
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "beam"))
                .count(),
        );
    }
    let text = std::fs::read_to_string(ebin.join(format!("{app}.app"))).ok()?;
    app_file_modules(&text)
}

/// The length of the `{modules, [...]}` list of an `.app` file.
fn app_file_modules(text: &str) -> Option<usize> {
    let at = text.find("{modules")?;
    let rest = &text[at..];
    let open = rest.find('[')?;
    let close = rest[open..].find(']')?;
    let inner = &rest[open + 1..open + close];
    Some(inner.split(',').filter(|m| !m.trim().is_empty()).count())
}

/// `.beam` opens by emulator process (OS pid), by application: modules loaded
/// against what each application ships, the code path's misses, and the span
/// of code loading; of one VM (`pid`) or of the whole tree.
fn section(trace: &Trace, pid: Option<i32>) -> Section {
    let mut vms = code_loads(trace, pid);
    vms.retain(|_, vm| vm.loaded() > 0 || vm.failed > 0);
    // The VM that loaded the most comes first: the node the user asked about,
    // ahead of helper VMs (a boot script's `erl -eval`, say).
    let mut order: Vec<(&i32, &Vm)> = vms.iter().collect();
    order.sort_by_key(|(pid, vm)| (std::cmp::Reverse(vm.loaded()), **pid));

    let mut facts = vec![("VMs".to_string(), Value::count(vms.len()))];
    let mut table = Table::new(&[
        "pid",
        "application",
        "loaded",
        "shipped",
        "first load",
        "last load",
    ]);
    let mut spans = Vec::new();
    let mut total_loaded = 0;
    for (pid, vm) in &order {
        let mut loaded_of_shipped = 0;
        let mut shipped_total = 0;
        let mut apps: Vec<(&String, &App, Option<usize>)> = vm
            .apps
            .iter()
            .map(|(name, a)| (name, a, a.ebin.as_deref().and_then(|d| shipped(name, d))))
            .collect();
        apps.sort_by_key(|(name, a, _)| (std::cmp::Reverse(a.loaded.len()), name.to_string()));
        let mut by_app = Vec::new();
        for (name, a, ships) in &apps {
            if let Some(n) = ships {
                shipped_total += n;
                loaded_of_shipped += a.loaded.len();
            }
            // "kernel 40/60", or "kernel 40" when what it ships is not known.
            let loaded = Value::count(a.loaded.len());
            by_app.push((
                name.to_string(),
                match ships {
                    Some(n) => Value::parts([loaded, "/".into(), Value::count(*n)]),
                    None => loaded,
                },
            ));
            table.rows.push(vec![
                pid.to_string().into(),
                name.to_string().into(),
                Value::count(a.loaded.len()),
                ships.map_or("?".into(), Value::count),
                Value::AtNs(a.first_ns),
                Value::AtNs(a.last_ns),
            ]);
        }
        total_loaded += vm.loaded();
        facts.push((
            format!("pid {pid}: modules loaded"),
            loaded_line(vm, loaded_of_shipped, shipped_total, by_app),
        ));
        facts.push((format!("pid {pid}: failed code-path lookups"), lookups(vm)));
        if let Some(first) = vm.first_ns {
            let window = vm.last_ns - first;
            facts.push((
                format!("pid {pid}: code loading"),
                Value::parts([Value::Ns(window), " (first → last .beam open)".into()]),
            ));
            spans.push(Span {
                name: format!("pid {pid} code loading ({} modules)", vm.loaded()),
                start_ns: first,
                dur_ns: window,
                depth: 0,
                args: vec![
                    ("pid".into(), pid.to_string().into()),
                    ("modules".into(), Value::count(vm.loaded())),
                    ("failed lookups".into(), Value::count(vm.failed)),
                ],
            });
            let mut app_spans: Vec<Span> = apps
                .iter()
                .map(|(name, a, _)| Span {
                    name: format!("{name} ({} modules)", a.loaded.len()),
                    start_ns: a.first_ns,
                    dur_ns: a.last_ns - a.first_ns,
                    depth: 1,
                    args: vec![("modules".into(), Value::count(a.loaded.len()))],
                })
                .collect();
            app_spans.sort_by_key(|s| s.start_ns);
            spans.extend(app_spans);
        }
    }
    facts.insert(0, ("modules loaded".into(), Value::count(total_loaded)));
    // Every row in the JSON; the terminal shows the largest.
    table.show_first(TABLE_ROWS);
    Section {
        source: "beam".into(),
        title: "BEAM modules loaded vs shipped, per VM (from the tracer's .beam opens)".into(),
        facts,
        table,
        spans,
        marks: Vec::new(),
        notes: notes(total_loaded),
    }
}

/// "40 of 60 shipped (+2 from unlisted dirs): kernel 40/60, stdlib …" for one VM.
fn loaded_line(
    vm: &Vm,
    loaded_of_shipped: usize,
    shipped_total: usize,
    by_app: Vec<(String, Value)>,
) -> Value {
    let mut line = vec![
        Value::count(loaded_of_shipped),
        " of ".into(),
        Value::count(shipped_total),
        " shipped".into(),
    ];
    if loaded_of_shipped < vm.loaded() {
        line.extend([
            " (+".into(),
            Value::count(vm.loaded() - loaded_of_shipped),
            " from unlisted dirs)".into(),
        ]);
    }
    if !by_app.is_empty() {
        line.extend([": ".into(), Value::list(by_app)]);
    }
    Value::Parts(line)
}

/// The code path's misses of one VM, and the directory with the most.
fn lookups(vm: &Vm) -> Value {
    let dirs = vm.failed_dirs.len();
    let worst = vm
        .failed_dirs
        .iter()
        .max_by_key(|(d, n)| (**n, std::cmp::Reverse(d.to_string())))
        .map(|(d, n)| vec![format!("; most in {d} (").into(), Value::count(*n), ")".into()])
        .unwrap_or_default();
    let mut lookups = vec![
        Value::count(vm.failed),
        " in ".into(),
        Value::count(dirs),
        " directories".into(),
    ];
    lookups.extend(worst);
    Value::Parts(lookups)
}

/// Each emulator process's `.beam` opens (of one VM, `pid`, or of every one):
/// by application, with the code path's misses.
fn code_loads(trace: &Trace, pid: Option<i32>) -> BTreeMap<i32, Vm> {
    let mut vms: BTreeMap<i32, Vm> = BTreeMap::new();
    for e in trace.events.iter().filter(|e| pid.is_none_or(|p| e.pid == p)) {
        let Event::Open { path, ok, .. } = &e.event else {
            continue;
        };
        if !path.ends_with(".beam") {
            continue;
        }
        let at = e.ts_ns.saturating_sub(trace.t0_ns);
        let vm = vms.entry(e.pid).or_default();
        vm.first_ns = Some(vm.first_ns.map_or(at, |f| f.min(at)));
        vm.last_ns = vm.last_ns.max(at);
        let path = Path::new(path);
        if !ok {
            // The code server trying each directory of the code path in turn.
            vm.failed += 1;
            let dir = path.parent().map(|d| d.display().to_string()).unwrap_or_default();
            *vm.failed_dirs.entry(dir).or_default() += 1;
            continue;
        }
        let (name, ebin) = app_of(path);
        let module = path
            .file_stem()
            .map(|m| m.to_string_lossy().into_owned())
            .unwrap_or_default();
        let a = vm.apps.entry(name).or_insert(App {
            first_ns: at,
            ..App::default()
        });
        a.loaded.insert(module);
        a.ebin = a.ebin.take().or(ebin);
        a.first_ns = a.first_ns.min(at);
        a.last_ns = a.last_ns.max(at);
    }
    vms
}

/// What the section's figures are, and are not.
fn notes(total_loaded: usize) -> Vec<Value> {
    let mut notes: Vec<Value> = vec![
        "modules preloaded into the emulator (erlang, init, prim_file, …) open no file and are not counted"
            .into(),
        "shipped = the .beam files in the application's ebin directory now (else its .app file's modules)"
            .into(),
        "code loading spans the first to the last .beam open: lookups, reads and whatever the VM did \
         between them, not the load time of each module"
            .into(),
        "these times are the traced run's (the tracer stops the VM at every open), not the \
         adapted run's: compare them with the traced ready time, not the untraced one"
            .into(),
    ];
    if total_loaded == 0 {
        notes
            .push("no .beam file was opened: a release may load modules from an archive or boot file".into());
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_core::trace::TraceOptions;
    use std::collections::BTreeMap;
    use std::process::Command;

    fn trace_erl(erl: PathBuf, args: &[&str]) -> Trace {
        let argv: Vec<String> = std::iter::once("erl")
            .chain(args.iter().copied())
            .map(str::to_string)
            .collect();
        let opts = TraceOptions::new(argv, erl);
        coldstart_core::launch::traced::trace(coldstart_core::Lab::open().expect("a Lab"), &opts)
            .expect("trace erl")
    }

    fn rows_of<'a>(sec: &'a Section, pid: &str) -> BTreeMap<&'a str, (u64, Value)> {
        sec.table
            .rows
            .iter()
            .filter(|r| r[0] == pid.into())
            .map(|r| {
                let loaded = r[2].as_count().expect("loaded");
                (r[1].as_text().expect("an application"), (loaded, r[3].clone()))
            })
            .collect()
    }

    /// A real Erlang node booting and halting: its kernel and stdlib modules are
    /// counted by application, matching the .beam files strace sees opened.
    #[test]
    fn counts_a_real_erlang_boot_by_application() {
        let Some(erl) = crate::testkit::tool("ERLANG", "erl") else {
            return;
        };
        let t = trace_erl(erl, &["-noshell", "-eval", "lists:sum([1]), halt()."]);
        assert!(Beam.detect(&FinalExec::of(&t).expect("an exec")));
        let sec = section(&t, None);
        let vm = t.root_pid.to_string();
        let rows = rows_of(&sec, &vm);
        assert!(
            rows.get("kernel").is_some_and(|r| r.0 > 5),
            "{:?}",
            sec.table.rows
        );
        assert!(
            rows.get("stdlib").is_some_and(|r| r.0 > 5),
            "{:?}",
            sec.table.rows
        );
        let total = sec.facts[0].1.as_count().expect("count") as usize;
        let opened: BTreeSet<&str> = t
            .events
            .iter()
            .filter_map(|e| match &e.event {
                Event::Open { path, ok: true, .. } if path.ends_with(".beam") => Some(path.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(total, opened.len());
        let counts: Vec<u64> = sec
            .table
            .rows
            .iter()
            .map(|r| r[2].as_count().unwrap_or(0))
            .collect();
        assert!(
            counts.windows(2).all(|w| w[0] >= w[1]),
            "largest first: {counts:?}"
        );
    }

    const APP_SRC: &[(&str, &str)] = &[
        (
            "demo_app.erl",
            "-module(demo_app).\n-behaviour(application).\n-export([start/2, stop/1]).\n\
             start(_, _) -> demo_used:hello(), demo_sup:start_link().\nstop(_) -> ok.\n",
        ),
        (
            "demo_sup.erl",
            "-module(demo_sup).\n-behaviour(supervisor).\n-export([start_link/0, init/1]).\n\
             start_link() -> supervisor:start_link(?MODULE, []).\n\
             init([]) -> {ok, {#{strategy => one_for_one}, []}}.\n",
        ),
        (
            "demo_used.erl",
            "-module(demo_used).\n-export([hello/0]).\nhello() -> ok.\n",
        ),
        (
            "demo_unused1.erl",
            "-module(demo_unused1).\n-export([f/0]).\nf() -> 1.\n",
        ),
        (
            "demo_unused2.erl",
            "-module(demo_unused2).\n-export([f/0]).\nf() -> 2.\n",
        ),
    ];

    const APP_FILE: &str = "{application, demo, [{description, \"demo\"}, {vsn, \"1.0\"},\n\
        {modules, [demo_app, demo_sup, demo_used, demo_unused1, demo_unused2]},\n\
        {registered, []}, {applications, [kernel, stdlib]}, {mod, {demo_app, []}}]}.\n";

    /// Modules loaded vs shipped, per application, checked against the VM's own
    /// `code:all_loaded()` (written to a file before halting) and a listing of
    /// each ebin directory; the code path's misses are those of the app's ebin.
    #[test]
    fn loaded_vs_shipped_matches_the_vms_own_list_and_the_ebin_listing() {
        let (Some(erl), Some(erlc)) = (
            crate::testkit::tool("ERLANG", "erl"),
            crate::testkit::tool("ERLANG", "erlc"),
        ) else {
            return;
        };
        let tmp = tempfile::tempdir_in(crate::testkit::fixtures_dir()).expect("tempdir");
        let src = tmp.path().join("src");
        let ebin = tmp.path().join("demo-1.0").join("ebin");
        std::fs::create_dir_all(&src).expect("src");
        std::fs::create_dir_all(&ebin).expect("ebin");
        for (name, text) in APP_SRC {
            std::fs::write(src.join(name), text).expect("write source");
        }
        let status = Command::new(&erlc)
            .arg("-o")
            .arg(&ebin)
            .args(APP_SRC.iter().map(|(n, _)| src.join(n)))
            .status()
            .expect("erlc");
        assert!(status.success(), "erlc failed");
        std::fs::write(ebin.join("demo.app"), APP_FILE).expect("app file");
        let loaded_file = tmp.path().join("loaded.txt");
        let eval = format!(
            "ok = application:start(demo), \
             L = [F || {{_, F}} <- code:all_loaded(), is_list(F)], \
             ok = file:write_file(\"{}\", [[F, $\\n] || F <- L]), halt().",
            loaded_file.display()
        );
        let ebin_s = ebin.display().to_string();
        let t = trace_erl(erl, &["-noshell", "-pa", &ebin_s, "-eval", &eval]);
        let sec = section(&t, None);

        // The VM's own list, counted by the application directory above ebin/.
        let listed = std::fs::read_to_string(&loaded_file).expect("the VM wrote its list");
        let mut vm_counts: BTreeMap<String, usize> = BTreeMap::new();
        let mut ebins: BTreeMap<String, PathBuf> = BTreeMap::new();
        for line in listed.lines().filter(|l| l.ends_with(".beam")) {
            let dir = Path::new(line).parent().expect("ebin");
            let app_dir = dir.parent().and_then(|d| d.file_name()).expect("app dir");
            let app = app_dir.to_string_lossy();
            let app = app.split('-').next().unwrap_or_default().to_string();
            *vm_counts.entry(app.clone()).or_default() += 1;
            ebins.insert(app, dir.to_path_buf());
        }
        assert_eq!(vm_counts.get("demo"), Some(&3), "{listed}");

        let rows = rows_of(&sec, &t.root_pid.to_string());
        for (app, n) in &vm_counts {
            let shipped = std::fs::read_dir(&ebins[app])
                .expect("list ebin")
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".beam"))
                .count();
            assert_eq!(
                rows.get(app.as_str()),
                Some(&(*n as u64, Value::count(shipped))),
                "{app}: {:?}",
                sec.table.rows
            );
        }
        assert_eq!(rows.len(), vm_counts.len(), "{rows:?} vs {vm_counts:?}");
        let fact = |k: &str| sec.facts.iter().find(|f| f.0 == k).map(|f| f.1.clone());
        let pid = t.root_pid;
        // "… shipped: kernel 40/60, demo 3/5, …": demo's loaded of shipped.
        let loaded = fact(&format!("pid {pid}: modules loaded")).expect("loaded fact");
        let Some(Value::Parts(apps)) = (match &loaded {
            Value::Parts(line) => line.last(),
            _ => None,
        }) else {
            panic!("{loaded:?}")
        };
        let demo = apps
            .windows(2)
            .find(|w| {
                w[0].as_text()
                    .is_some_and(|t| t.trim_start_matches(", ") == "demo ")
            })
            .map(|w| &w[1]);
        assert_eq!(
            demo,
            Some(&Value::parts([Value::Count(3), "/".into(), Value::Count(5)])),
            "{loaded:?}"
        );
        let total: usize = vm_counts.values().sum();
        assert_eq!(sec.facts[0].1, Value::count(total));

        // Every module loaded after the code path got demo's ebin in front was
        // looked for there first, in vain.
        let failed = fact(&format!("pid {pid}: failed code-path lookups")).expect("failed fact");
        let Value::Parts(parts) = &failed else {
            panic!("{failed:?}")
        };
        let misses = parts[0].as_count().expect("count");
        assert!(misses > 0, "{failed:?}");
        assert!(
            parts.contains(&Value::Text(format!("; most in {ebin_s} ("))),
            "{failed:?}"
        );
        assert!(fact(&format!("pid {pid}: code loading")).is_some());
        assert_eq!(app_file_modules(APP_FILE), Some(5));
    }
}
