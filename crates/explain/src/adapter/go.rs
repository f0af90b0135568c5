//! `go`: the Go runtime's package-init trace (`GODEBUG=inittrace=1`, Go 1.16+).
//! The runtime prints one line per initialised package to fd 2, which the
//! adapter claims:
//!
//! ```text
//! init net/http @2.0 ms, 0.042 ms clock, 4712 bytes, 49 allocs
//! ```
//!
//! `@` is when the package's init started, from the runtime's start
//! (`runtimeInitTime`, set early in `runtime.main`, a little after exec); `clock`
//! is its wall time; bytes and allocs are what it allocated on the heap. The
//! runtime formats both times to about two significant digits (whole ms from
//! 10 ms). The runtime's start is not printed on any clock we share, so it is
//! estimated from when coldstart read the lines (see [`runtime_start`]).
//!
//! The switch's own cost is mostly output: the runtime writes each line in about
//! a dozen write(2) calls (937 for go-server's 78 packages), which is why an
//! adapted run of a small Go server is a millisecond or two slower.

use super::{append_option, Adapter, Collected, FinalExec, Injection};
use anyhow::{bail, Context, Result};
use coldstart_core::sample::section::{Section, Span, Table, Value};
use regex::Regex;
use std::collections::HashSet;
use std::path::Path;

pub struct Go;

const TABLE_ROWS: usize = 20;
const LINE: &str = r"^init (\S+) @([0-9.]+) ms, ([0-9.]+) ms clock, ([0-9]+) bytes, ([0-9]+) allocs$";

impl Adapter for Go {
    fn name(&self) -> &'static str {
        "go"
    }

    fn detect(&self, exec: &FinalExec) -> bool {
        coldstart_core::probe::listen::is_go_binary(Path::new(exec.exe))
            || (exec.path != exec.exe && coldstart_core::probe::listen::is_go_binary(Path::new(exec.path)))
    }

    fn inject(&self, _dir: &Path, target_env: &[(String, String)]) -> Result<Injection> {
        Ok(Injection {
            env: vec![godebug(target_env)],
            claims: vec![Regex::new(LINE).context("inittrace claim regex")?],
        })
    }

    fn collect(&self, got: &Collected) -> Result<Section> {
        let (inits, ignored) = parse(got.claimed)?;
        if inits.is_empty() {
            bail!(
                "the program printed no inittrace lines (not a Go program, Go older than 1.16, or \
                 GODEBUG overridden before the runtime read it)"
            );
        }
        Ok(section(&inits, ignored))
    }
}

/// GODEBUG is comma-separated and the last setting of a key wins, so ours goes
/// at the end of the target's (or our own environment's) value.
fn godebug(target_env: &[(String, String)]) -> (String, String) {
    append_option(target_env, "GODEBUG", ',', "inittrace=1")
}

/// One package's init, times in ns from the runtime's start.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Init {
    pub package: String,
    pub start_ns: u64,
    pub clock_ns: u64,
    pub bytes: u64,
    pub allocs: u64,
    /// When coldstart read the line, ns since spawn (0: unknown).
    pub read_ns: u64,
}

impl Init {
    fn end_ns(&self) -> u64 {
        self.start_ns + self.clock_ns
    }
}

/// The first Go process's inits, and how many lines were left out: GODEBUG is
/// inherited, so a Go child sharing fd 2 prints its own inits, which begin again
/// with packages already seen.
pub(crate) fn parse(claimed: &[(u64, String)]) -> Result<(Vec<Init>, usize)> {
    let re = Regex::new(LINE).context("inittrace regex")?;
    let ms = |s: &str| s.parse::<f64>().map(|v| (v * 1e6).round() as u64).ok();
    let mut inits = Vec::new();
    let mut seen = HashSet::new();
    let mut ignored = 0;
    for (read_ns, line) in claimed {
        let Some(c) = re.captures(line.trim_end()) else {
            continue;
        };
        if ignored > 0 || !seen.insert(c[1].to_string()) {
            ignored += 1;
            continue;
        }
        let (Some(start_ns), Some(clock_ns), Ok(bytes), Ok(allocs)) =
            (ms(&c[2]), ms(&c[3]), c[4].parse(), c[5].parse())
        else {
            continue;
        };
        inits.push(Init {
            package: c[1].to_string(),
            start_ns,
            clock_ns,
            bytes,
            allocs,
            read_ns: *read_ns,
        });
    }
    Ok((inits, ignored))
}

/// The runtime's start on the run's clock, if the read times allow: a line is
/// written when its init ends and read no earlier, so `read − end` bounds the
/// runtime's start from above for every line; the smallest bound is the
/// estimate (late by the quickest read's delay, and by the runtime's rounding).
pub(crate) fn runtime_start(inits: &[Init]) -> Option<u64> {
    if inits.iter().all(|i| i.read_ns == 0) {
        return None;
    }
    inits
        .iter()
        .filter(|i| i.read_ns > 0)
        .map(|i| i.read_ns.saturating_sub(i.end_ns()))
        .min()
}

pub(crate) fn section(inits: &[Init], ignored: usize) -> Section {
    let zero = runtime_start(inits);
    let offset = zero.unwrap_or(0);
    let mut s = Section {
        source: "go".into(),
        title: "Go package init (GODEBUG=inittrace=1)".into(),
        ..Section::default()
    };
    let clock: u64 = inits.iter().map(|i| i.clock_ns).sum();
    let first = inits.iter().map(|i| i.start_ns).min().unwrap_or(0);
    let last = inits.iter().map(Init::end_ns).max().unwrap_or(0);
    s.facts
        .push(("packages initialised".into(), Value::count(inits.len())));
    s.facts.push(("init clock, total".into(), Value::Ns(clock)));
    s.facts.push((
        "init heap".into(),
        Value::parts([
            Value::Bytes(inits.iter().map(|i| i.bytes).sum()),
            " in ".into(),
            Value::Count(inits.iter().map(|i| i.allocs).sum()),
            " allocs".into(),
        ]),
    ));
    match zero {
        Some(z) => {
            s.facts
                .push(("runtime start after spawn (est.)".into(), Value::AtNs(z)));
            s.facts
                .push(("inits done (main starts)".into(), Value::AtNs(z + last)));
        }
        None => s
            .facts
            .push(("inits done, from runtime start".into(), Value::Ns(last))),
    }

    let mut order: Vec<&Init> = inits.iter().collect();
    order.sort_by(|a, b| {
        b.clock_ns
            .cmp(&a.clock_ns)
            .then(b.bytes.cmp(&a.bytes))
            .then_with(|| a.package.cmp(&b.package))
    });
    s.table = Table::new(&["package", "clock", "bytes", "allocs", "start"]);
    for i in order {
        s.table.rows.push(vec![
            i.package.clone().into(),
            Value::Ns(i.clock_ns),
            Value::Bytes(i.bytes),
            Value::Count(i.allocs),
            Value::AtNs(offset + i.start_ns),
        ]);
    }
    s.table.truncate(TABLE_ROWS);

    // Inits run one after another on one goroutine: one parent, flat children.
    s.spans.push(Span {
        name: "package inits".into(),
        start_ns: offset + first,
        dur_ns: last - first,
        depth: 0,
        args: vec![("packages".into(), Value::count(inits.len()))],
    });
    s.spans.extend(inits.iter().map(|i| Span {
        name: i.package.clone(),
        start_ns: offset + i.start_ns,
        dur_ns: i.clock_ns,
        depth: 1,
        args: vec![
            ("bytes".into(), Value::Bytes(i.bytes)),
            ("allocs".into(), Value::Count(i.allocs)),
        ],
    }));

    s.notes.push(
        "inittrace covers package initialisers only (package-level variables and init functions, \
         run one after another before main); the runtime's bootstrap before them and main itself \
         are not in it."
            .into(),
    );
    s.notes
        .push("The runtime prints times to about two significant digits (whole ms from 10 ms).".into());
    s.notes.push(match zero {
        Some(_) => "Start times are from the Go runtime's start, placed on the run's clock by when \
                    coldstart read the lines: an estimate, late by at most the quickest read's delay."
            .into(),
        None => "Start times are from the Go runtime's start (shortly after exec), not from spawn: \
                 the lines' read times were not available."
            .into(),
    });
    if ignored > 0 {
        s.notes.push(
            format!(
                "{ignored} inittrace lines from another Go process (GODEBUG is inherited) were left out."
            )
            .into(),
        );
    }
    s
}

#[cfg(test)]
#[path = "go_tests.rs"]
mod tests;
