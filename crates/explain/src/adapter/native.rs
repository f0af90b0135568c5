//! Native programs: the dynamic loader's own account of startup
//! (`LD_DEBUG=statistics,files` to a file per process), and whether the program
//! binds symbols at startup (BIND_NOW) or lazily.
//!
//! glibc counts loader time in TSC cycles (rdtsc); they are converted to time
//! with a TSC rate calibrated here against CLOCK_MONOTONIC.

use super::{Adapter, Collected, FinalExec, Injection};
use anyhow::Result;
use coldstart_core::sample::section::{Section, Table, Value};
use std::collections::BTreeSet;
use std::path::Path;

pub struct Native;

/// What one process's loader reported.
#[derive(Debug, Default, PartialEq)]
struct LoaderReport {
    pid: u32,
    /// "initialize program:" (the executable), else the first "needed by" requester.
    program: String,
    libraries: BTreeSet<String>,
    total_cycles: Option<u64>,
    reloc_cycles: Option<u64>,
    load_cycles: Option<u64>,
    relocations: Option<u64>,
    relative_relocations: Option<u64>,
    inits: Vec<String>,
}

impl Adapter for Native {
    fn name(&self) -> &'static str {
        "native"
    }

    /// Any dynamically linked ELF program (static ones never run the loader).
    fn detect(&self, exec: &FinalExec) -> bool {
        let exe = Path::new(exec.exe);
        coldstart_core::elf::binds_now(exe).is_some() && !coldstart_core::elf::is_static(exe)
    }

    fn inject(&self, dir: &Path, _target_env: &[(String, String)]) -> Result<Injection> {
        Ok(Injection {
            env: vec![
                ("LD_DEBUG".into(), "statistics,files".into()),
                // ld.so writes OUTPUT.<pid>: one file per process, none on the target's stderr.
                ("LD_DEBUG_OUTPUT".into(), dir.join("ld").display().to_string()),
            ],
            claims: Vec::new(),
        })
    }

    fn collect(&self, got: &Collected) -> Result<Section> {
        let mut reports = Vec::new();
        for entry in std::fs::read_dir(got.dir)?.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with("ld.") {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                reports.extend(parse(&text));
            }
        }
        let final_exe = got.trace.and_then(FinalExec::of).map(|f| f.exe);
        Ok(section(reports, final_exe, tsc_per_ns()))
    }
}

/// Parse one LD_DEBUG output file; a process that execs several programs
/// reports once per program.
fn parse(text: &str) -> Vec<LoaderReport> {
    let mut out: Vec<LoaderReport> = Vec::new();
    let mut cur = LoaderReport::default();
    let mut started = false;
    let number = |s: &str| s.split_whitespace().find_map(|w| w.parse::<u64>().ok());
    for raw in text.lines() {
        // "     6062:\tfile=libc.so.6 [0];  needed by /bin/true [0]"
        let Some((pid, line)) = raw.split_once(':') else {
            continue;
        };
        let Ok(pid) = pid.trim().parse::<u32>() else {
            continue;
        };
        let line = line.trim();
        if line.starts_with("file=") && line.contains("needed by") {
            if started && cur.total_cycles.is_some() {
                // A new program (after an exec) starts a new report.
                out.push(std::mem::take(&mut cur));
            }
            started = true;
            cur.pid = pid;
            let lib = line["file=".len()..].split_whitespace().next().unwrap_or("");
            cur.libraries.insert(lib.to_string());
            if cur.program.is_empty() {
                if let Some(by) = line.split("needed by ").nth(1) {
                    cur.program = by.split(" [").next().unwrap_or(by).to_string();
                }
            }
        } else if let Some(rest) = line.strip_prefix("total startup time in dynamic loader:") {
            started = true;
            cur.pid = pid;
            cur.total_cycles = number(rest);
        } else if let Some(rest) = line.strip_prefix("time needed for relocation:") {
            cur.reloc_cycles = number(rest);
        } else if let Some(rest) = line.strip_prefix("time needed to load objects:") {
            cur.load_cycles = number(rest);
        } else if let Some(rest) = line.strip_prefix("number of relocations:") {
            cur.relocations = number(rest);
        } else if let Some(rest) = line.strip_prefix("number of relative relocations:") {
            cur.relative_relocations = number(rest);
        } else if let Some(rest) = line.strip_prefix("calling init:") {
            cur.inits.push(rest.trim().to_string());
        } else if let Some(rest) = line.strip_prefix("initialize program:") {
            cur.program = rest.trim().to_string();
        }
    }
    if started {
        out.push(cur);
    }
    out
}

fn section(reports: Vec<LoaderReport>, final_exe: Option<&str>, tsc_per_ns: Option<f64>) -> Section {
    let time = |cycles: Option<u64>| match (cycles, tsc_per_ns) {
        (Some(c), Some(r)) if r > 0.0 => Value::Ns((c as f64 / r) as u64),
        (Some(c), _) => Value::parts([Value::Count(c), " cycles".into()]),
        (None, _) => Value::from("-"),
    };
    let count = |n: Option<u64>| n.map_or(Value::from("-"), Value::Count);
    let mut sec = Section {
        source: "native".into(),
        title: "Dynamic loader (LD_DEBUG=statistics)".into(),
        ..Section::default()
    };
    // The final program's report leads; the others (shims, helpers) follow in the table.
    let main = final_exe
        .and_then(|exe| reports.iter().find(|r| same_program(&r.program, exe)))
        .or_else(|| reports.iter().max_by_key(|r| r.total_cycles.unwrap_or(0)));
    if let Some(m) = main {
        let bind = coldstart_core::elf::binds_now(Path::new(final_exe.unwrap_or(&m.program)));
        sec.facts = vec![
            ("program".into(), m.program.clone().into()),
            ("libraries loaded".into(), Value::count(m.libraries.len())),
            ("loader total".into(), time(m.total_cycles)),
            ("relocation".into(), time(m.reloc_cycles)),
            ("loading objects".into(), time(m.load_cycles)),
            ("relocations".into(), count(m.relocations)),
            ("relative relocations".into(), count(m.relative_relocations)),
            (
                "BIND_NOW".into(),
                match bind {
                    Some(true) => "yes (symbols resolved at startup, inside relocation time)".into(),
                    Some(false) => "no (lazy binding: each function resolved at its first call)".into(),
                    None => "unknown".into(),
                },
            ),
        ];
    }
    let mut rows: Vec<&LoaderReport> = reports.iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.total_cycles.unwrap_or(0)));
    let mut table = Table::new(&[
        "program",
        "pid",
        "libraries",
        "loader total",
        "relocation",
        "relocations",
    ]);
    table.rows = rows
        .iter()
        .map(|r| {
            vec![
                r.program.clone().into(),
                r.pid.to_string().into(),
                Value::count(r.libraries.len()),
                time(r.total_cycles),
                time(r.reloc_cycles),
                count(r.relocations),
            ]
        })
        .collect();
    table.truncate(15);
    // One process: the facts above already say it all.
    if reports.len() > 1 {
        sec.table = table;
    }
    if reports.is_empty() {
        sec.notes.push(
            "no loader report: the program is static, setuid (ld.so ignores LD_DEBUG_OUTPUT in secure mode), \
             or it was killed before the loader wrote"
                .into(),
        );
    }
    match tsc_per_ns {
        Some(r) => sec.notes.push(Value::Text(format!(
            "ld.so counts cycles with rdtsc; converted at {r:.3} GHz (TSC calibrated against CLOCK_MONOTONIC)"
        ))),
        None => sec
            .notes
            .push("ld.so's times are in cycles (no TSC calibration on this architecture)".into()),
    }
    sec
}

fn same_program(reported: &str, exe: &str) -> bool {
    reported == exe
        || Path::new(reported).file_name() == Path::new(exe).file_name()
        || std::fs::canonicalize(reported).ok() == std::fs::canonicalize(exe).ok()
}

/// TSC ticks per nanosecond, measured over 20 ms against CLOCK_MONOTONIC (once).
#[cfg(target_arch = "x86_64")]
fn tsc_per_ns() -> Option<f64> {
    use std::sync::OnceLock;
    static RATE: OnceLock<Option<f64>> = OnceLock::new();
    *RATE.get_or_init(|| {
        use coldstart_core::clock::now_ns;
        // SAFETY: rdtsc has no preconditions on x86_64.
        let (c0, t0) = (unsafe { std::arch::x86_64::_rdtsc() }, now_ns());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (c1, t1) = (unsafe { std::arch::x86_64::_rdtsc() }, now_ns());
        (t1 > t0 && c1 > c0).then(|| (c1 - c0) as f64 / (t1 - t0) as f64)
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn tsc_per_ns() -> Option<f64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    const SAMPLE: &str = "      6062:\t
      6062:\tfile=libc.so.6 [0];  needed by /bin/true [0]
      6062:\tfile=libc.so.6 [0];  generating link map
      6062:\truntime linker statistics:
      6062:\t  total startup time in dynamic loader: 143751 cycles
      6062:\t            time needed for relocation: 28946 cycles (20.1%)
      6062:\t                 number of relocations: 87
      6062:\t      number of relocations from cache: 7
      6062:\t        number of relative relocations: 16
      6062:\t           time needed to load objects: 35674 cycles (24.8%)
      6062:\tcalling init: /lib64/ld-linux-x86-64.so.2
      6062:\tcalling init: /lib/x86_64-linux-gnu/libc.so.6
      6062:\tinitialize program: /bin/true
      6062:\ttransferring control: /bin/true
      6062:\truntime linker statistics:
      6062:\t           final number of relocations: 88
";

    #[test]
    fn parses_glibc_statistics() {
        let r = parse(SAMPLE);
        assert_eq!(r.len(), 1);
        let r = &r[0];
        assert_eq!(r.pid, 6062);
        assert_eq!(r.program, "/bin/true");
        assert_eq!(r.total_cycles, Some(143_751));
        assert_eq!(r.reloc_cycles, Some(28_946));
        assert_eq!(r.load_cycles, Some(35_674));
        assert_eq!(
            r.relocations,
            Some(87),
            "the exit's final count is not the startup count"
        );
        assert_eq!(r.relative_relocations, Some(16));
        assert_eq!(r.libraries.len(), 1);
        assert_eq!(r.inits.len(), 2);
    }

    /// A real program under the real loader: the report names its libraries, and
    /// nothing reaches the program's own output.
    #[test]
    fn reads_the_real_loader_and_keeps_output_clean() {
        let dir = tempfile::tempdir().expect("tempdir");
        let inj = Native.inject(dir.path(), &[]).expect("inject");
        let out = Command::new("/bin/sh")
            .args(["-c", "echo ready"])
            .envs(inj.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run sh");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ready\n");
        assert!(
            out.stderr.is_empty(),
            "stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = Collected {
            dir: dir.path(),
            claimed: &[],
            ready_ns: 0,
            t0_mono_ns: 0,
            trace: None,
        };
        let sec = Native.collect(&got).expect("collect");
        let fact = |k: &str| sec.facts.iter().find(|f| f.0 == k).map(|f| f.1.clone());
        assert!(
            fact("program").is_some_and(|p| p.as_text().is_some_and(|p| p.ends_with("sh"))),
            "{:?}",
            sec.facts
        );
        let libs = match fact("libraries loaded") {
            Some(Value::Count(n)) => n,
            _ => 0,
        };
        assert!(libs >= 1, "sh loads at least libc: {:?}", sec.facts);
        assert!(fact("BIND_NOW").is_some());
    }

    #[test]
    fn detects_dynamic_programs_only() {
        let exec = |p: &'static str| FinalExec { path: p, exe: p };
        assert!(Native.detect(&exec("/bin/sh")));
        assert!(!Native.detect(&exec("/etc/hostname")));
    }
}
