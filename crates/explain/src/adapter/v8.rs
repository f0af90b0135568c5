//! V8's own start-up report, shared by the Node and Deno adapters:
//! `--profile-deserialization` makes V8 print one line per snapshot or
//! code-cache (de)serialization, with its size and its time, on stdout:
//!
//! ```text
//! [Verifying snapshot checksum took 0.618 ms]
//! [Deserializing read-only space (261744 bytes) took 0.407 ms]
//! [Deserializing isolate (496672 bytes) took 8.063 ms]
//! [Deserializing context #3 (512136 bytes) took 4.497 ms]
//! [Deserializing from 2480 bytes took 0.033 ms]      ← a code-cache hit
//! [Serializing to 464 bytes took 0.393 ms]           ← a code cache written
//! ```
//!
//! The lines carry durations, not instants, so they become facts and rows, not
//! spans. Where the flag comes from is the adapter's business: Deno takes it
//! from `DENO_V8_FLAGS`; Node refuses it in `NODE_OPTIONS`, so its preload sets
//! it with `v8.setFlagsFromString` and sees only what comes after the preload.

use anyhow::{Context, Result};
use coldstart_core::sample::section::{Section, Table, Value};
use regex::Regex;

pub const FLAG: &str = "--profile-deserialization";

/// Lines V8 prints under [`FLAG`], for [`super::Injection::claims`].
pub fn claims() -> Result<Vec<Regex>> {
    Ok(vec![Regex::new(
        r"^\[(Verifying snapshot checksum|Deserializing .*|Serializing to \d+ bytes) took [0-9.]+ ms\]$",
    )
    .context("V8 claim regex")?])
}

/// One kind of (de)serialization: its count, bytes and time.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub count: usize,
    pub bytes: u64,
    pub ns: u64,
}

impl Tally {
    fn add(&mut self, bytes: u64, ns: u64) {
        self.count += 1;
        self.bytes += bytes;
        self.ns += ns;
    }
}

/// What V8 reported, by kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Snapshot parts in the order printed: ("isolate", …), ("context #3", …),
    /// ("read-only space", …).
    pub snapshot: Vec<(String, Tally)>,
    pub checksum: Option<Tally>,
    /// Code-cache hits: compiled code read back instead of compiling.
    pub code_cache_hits: Tally,
    /// Code caches written (Deno caches what it compiled for the next start).
    pub code_cache_writes: Tally,
}

impl Report {
    pub fn snapshot_total(&self) -> Tally {
        let mut t = Tally::default();
        for (_, p) in &self.snapshot {
            t.count += p.count;
            t.bytes += p.bytes;
            t.ns += p.ns;
        }
        t
    }

    pub fn is_empty(&self) -> bool {
        *self == Report::default()
    }
}

/// Parse V8's lines; any other line is ignored.
pub fn parse<'a>(lines: impl IntoIterator<Item = &'a str>) -> Report {
    let mut r = Report::default();
    for line in lines {
        let Some(body) = line.trim().strip_prefix('[').and_then(|l| l.strip_suffix(" ms]")) else {
            continue;
        };
        let Some((what, ms)) = body.rsplit_once(" took ") else {
            continue;
        };
        let Ok(ms) = ms.trim().parse::<f64>() else {
            continue;
        };
        let ns = (ms * 1e6).round() as u64;
        if what == "Verifying snapshot checksum" {
            r.checksum.get_or_insert_with(Tally::default).add(0, ns);
        } else if let Some(bytes) = what
            .strip_prefix("Deserializing from ")
            .and_then(|b| b.strip_suffix(" bytes"))
        {
            r.code_cache_hits.add(bytes.parse().unwrap_or(0), ns);
        } else if let Some(bytes) = what
            .strip_prefix("Serializing to ")
            .and_then(|b| b.strip_suffix(" bytes"))
        {
            r.code_cache_writes.add(bytes.parse().unwrap_or(0), ns);
        } else if let Some(rest) = what.strip_prefix("Deserializing ") {
            // "isolate (496672 bytes)", "context #3 (512136 bytes)"
            let (part, bytes) = match rest.rsplit_once(" (") {
                Some((part, b)) => (part, b.trim_end_matches(" bytes)").parse().unwrap_or(0)),
                None => (rest, 0),
            };
            match r.snapshot.iter_mut().find(|(p, _)| p == part) {
                Some((_, t)) => t.add(bytes, ns),
                None => {
                    let mut t = Tally::default();
                    t.add(bytes, ns);
                    r.snapshot.push((part.to_string(), t));
                }
            }
        }
    }
    r
}

/// "3 in 1.2 ms (45.0 KiB)".
fn tally(t: &Tally) -> Value {
    Value::parts([
        Value::count(t.count),
        " in ".into(),
        Value::Ns(t.ns),
        " (".into(),
        Value::Bytes(t.bytes),
        ")".into(),
    ])
}

/// The report as facts (headline) and a table (each kind), added to `s`.
/// `snapshot_seen` says whether the flag was on before the snapshot was read
/// (Deno: yes; Node: no, the preload runs after it).
pub fn add_to(s: &mut Section, r: &Report, snapshot_seen: bool) {
    let snap = r.snapshot_total();
    if snap.count > 0 {
        // "4.50 ms (isolate 1.20 ms, context #2 3.30 ms; 45.0 KiB)"
        let parts = Value::list(r.snapshot.iter().map(|(p, t)| (p.clone(), Value::Ns(t.ns))));
        let v = Value::parts([
            Value::Ns(snap.ns),
            " (".into(),
            parts,
            "; ".into(),
            Value::Bytes(snap.bytes),
            ")".into(),
        ]);
        s.facts.push(("snapshot deserialization (V8)".into(), v));
    }
    if let Some(c) = &r.checksum {
        s.facts.push(("snapshot checksum (V8)".into(), Value::Ns(c.ns)));
    }
    let hits = &r.code_cache_hits;
    s.facts.push(("code-cache hits (V8)".into(), tally(hits)));
    if r.code_cache_writes.count > 0 {
        let w = &r.code_cache_writes;
        s.facts.push(("code caches written (V8)".into(), tally(w)));
    }
    if !snapshot_seen {
        s.notes.push(
            "snapshot deserialization is not measured: Node refuses --profile-deserialization in \
             NODE_OPTIONS, and a preload sets it only after the isolate and context are read \
             (`node --profile-deserialization app.js` shows it); code-cache hits are counted from \
             the preload on"
                .into(),
        );
    }
    if r.is_empty() {
        s.notes
            .push("V8 printed no --profile-deserialization line (flag refused, or output lost)".into());
    }
}

/// The report as its own table: one row per kind, largest time first.
pub fn table(r: &Report) -> Table {
    let mut rows: Vec<(u64, String, Vec<Value>)> = Vec::new();
    let mut row = |what: String, t: &Tally| {
        if t.count > 0 {
            let cells = vec![
                what.clone().into(),
                Value::count(t.count),
                Value::Bytes(t.bytes),
                Value::Ns(t.ns),
            ];
            rows.push((t.ns, what, cells));
        }
    };
    for (p, t) in &r.snapshot {
        row(format!("snapshot: {p}"), t);
    }
    if let Some(c) = &r.checksum {
        row("snapshot checksum".into(), c);
    }
    row("code-cache hits".into(), &r.code_cache_hits);
    row("code caches written".into(), &r.code_cache_writes);
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut table = Table::new(&["V8 (de)serialization", "count", "size", "time"]);
    table.rows = rows.into_iter().map(|(_, _, r)| r).collect();
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as Node 20.20 (V8 11.3) and Deno 2.9 (V8 15.0) print them.
    const NODE: &str = "[Verifying snapshot checksum took 0.618 ms]
[Deserializing isolate (496672 bytes) took 8.063 ms]
[Deserializing context #3 (512136 bytes) took 4.497 ms]
[Deserializing from 2480 bytes took 0.033 ms]
hello from the app
[Deserializing from 1032 bytes took 0.024 ms]
";
    const DENO: &str = "hi
[Deserializing read-only space (261744 bytes) took 0.407 ms]
[Deserializing isolate (659624 bytes) took 1.883 ms]
[Deserializing context #2 (410432 bytes) took 2.213 ms]
[Serializing to 464 bytes took 0.393 ms]
";

    #[test]
    fn parses_snapshot_parts_code_cache_and_checksum() {
        let r = parse(NODE.lines());
        assert_eq!(r.snapshot.len(), 2);
        assert_eq!(r.snapshot[0].0, "isolate");
        assert_eq!(r.snapshot[1].0, "context #3");
        assert_eq!(r.snapshot_total().ns, 12_560_000);
        assert_eq!(r.snapshot_total().bytes, 496_672 + 512_136);
        assert_eq!(r.checksum.as_ref().map(|c| c.ns), Some(618_000));
        assert_eq!(
            r.code_cache_hits,
            Tally {
                count: 2,
                bytes: 3512,
                ns: 57_000
            }
        );
        let r = parse(DENO.lines());
        assert_eq!(r.snapshot[0].0, "read-only space");
        assert_eq!(r.code_cache_writes.count, 1);
        assert_eq!(r.code_cache_hits.count, 0);
    }

    #[test]
    fn claims_v8_lines_only() {
        let re = &claims().expect("claims")[0];
        let claimed: Vec<&str> = NODE
            .lines()
            .chain(DENO.lines())
            .filter(|l| re.is_match(l))
            .collect();
        assert_eq!(claimed.len(), 9);
        assert!(!re.is_match("[Deserializing the config took a while]"));
    }

    #[test]
    fn section_says_when_the_snapshot_was_not_seen() {
        let mut s = Section::default();
        add_to(&mut s, &parse(NODE.lines().skip(3)), false);
        assert!(!s
            .facts
            .iter()
            .any(|f| f.0.starts_with("snapshot deserialization")));
        assert!(s
            .notes
            .iter()
            .filter_map(Value::as_text)
            .any(|n| n.contains("NODE_OPTIONS")));
        let mut s = Section::default();
        add_to(&mut s, &parse(DENO.lines()), true);
        let Value::Parts(parts) = &s.facts[0].1 else {
            panic!("{:?}", s.facts)
        };
        assert_eq!(parts[0], Value::Ns(4_503_000), "{:?}", s.facts);
        assert_eq!(
            table(&parse(DENO.lines())).rows[0][0],
            "snapshot: context #2".into()
        );
    }
}
