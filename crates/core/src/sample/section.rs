//! What one source inside the target says about its cold start: a runtime
//! adapter (Python imports, JVM classes, Node requires, Go package inits, the
//! native loader, BEAM modules), the app's checkpoints, or its OpenTelemetry
//! spans. Every source produces one [`Section`]; the terminal report, the JSON
//! export and the Chrome trace render sections without knowing their source.

use super::Mark;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// Stable machine name: "python", "jvm", "node", "go", "native", "beam",
    /// "checkpoints", "otlp".
    pub source: String,
    /// Heading for people, e.g. "Python imports (-X importtime)".
    pub title: String,
    /// Headline facts, in order: ("imports", 57 as a count), ("total", 12.3 ms
    /// as a duration in ns).
    pub facts: Vec<(String, Value)>,
    /// The top offenders, largest first.
    pub table: Table,
    /// Intervals on the run's clock, for the timeline and the Chrome trace.
    /// Parents come before their children; `depth` keeps the nesting.
    pub spans: Vec<Span>,
    /// Instants on the run's clock, with the source that saw them (an adapter,
    /// the app's checkpoints or log lines, its OpenTelemetry spans).
    pub marks: Vec<Mark>,
    /// What this source cannot see or had to estimate, said plainly: text,
    /// or parts when a note holds a measured figure (a duration).
    pub notes: Vec<Value>,
}

/// A number with its unit, or text: what a fact, a table cell or a span's
/// argument holds. The model keeps numbers as numbers (explain A vs B compares
/// them, the JSON carries them with their unit); only `report/` turns them into
/// text. In JSON a number is an object naming its unit (`{"ns": 456000}`,
/// `{"count": 57}`) and text is a plain string, so documents stored when every
/// cell was text still load (as text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Value {
    /// A duration, ns.
    Ns(u64),
    /// An instant on the run's clock, ns since spawn.
    AtNs(u64),
    Count(u64),
    Bytes(u64),
    Percent(f64),
    /// Values and words read as one, in order: "3 in 1.20 ms (45.0 KiB)".
    Parts(Vec<Value>),
    #[serde(untagged)]
    Text(String),
}

/// What a number measures, for comparing like with like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Durations and instants, compared in ms.
    Ms,
    Count,
    Bytes,
    Percent,
}

impl Value {
    /// A count of anything countable (a `usize` length, a `u64` total).
    pub fn count(n: impl TryInto<u64>) -> Value {
        Value::Count(n.try_into().unwrap_or(u64::MAX))
    }

    /// Values and words read as one.
    pub fn parts(parts: impl IntoIterator<Item = Value>) -> Value {
        Value::Parts(parts.into_iter().collect())
    }

    /// Named values, comma-separated: "a 1.20 ms, b 0.80 ms".
    pub fn list(items: impl IntoIterator<Item = (String, Value)>) -> Value {
        let mut parts = Vec::new();
        for (i, (name, v)) in items.into_iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            parts.extend([Value::Text(format!("{sep}{name} ")), v]);
        }
        Value::Parts(parts)
    }

    /// The value as a number in its unit (durations in ms); None for text.
    pub fn number(&self) -> Option<(f64, Unit)> {
        match self {
            Value::Ns(ns) | Value::AtNs(ns) => Some((*ns as f64 / 1e6, Unit::Ms)),
            Value::Count(n) => Some((*n as f64, Unit::Count)),
            Value::Bytes(n) => Some((*n as f64, Unit::Bytes)),
            Value::Percent(p) => Some((*p, Unit::Percent)),
            Value::Parts(_) | Value::Text(_) => None,
        }
    }

    pub fn as_count(&self) -> Option<u64> {
        match self {
            Value::Count(n) => Some(*n),
            _ => None,
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Text(s)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Text(s.to_string())
    }
}

/// A table whose rows are already sorted, largest first. Cells are typed
/// values (the first column is usually the row's key, as text); `report/`
/// formats them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// Rows left out of `rows` (the source keeps the top N).
    pub omitted: usize,
    /// Rows the terminal shows (the rest are counted as "… N more" there);
    /// `rows` keeps them all for the JSON. None: show every row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown: Option<usize>,
}

/// An interval, ns since the run's time zero (spawn).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Span {
    pub name: String,
    pub start_ns: u64,
    pub dur_ns: u64,
    /// 0 for a root span; a child is one deeper than its parent.
    pub depth: usize,
    /// Free-form attributes worth showing (package, bytes, allocs …).
    /// Left out of the JSON when empty, so read back as empty when missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<(String, Value)>,
}

impl Table {
    pub fn new(columns: &[&str]) -> Table {
        Table {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
            omitted: 0,
            shown: None,
        }
    }

    /// Keep every row (for the JSON) but show only the first `n` in the terminal.
    pub fn show_first(&mut self, n: usize) {
        self.shown = Some(n);
    }

    /// The rows the terminal shows, and how many it leaves out.
    pub fn visible(&self) -> (&[Vec<Value>], usize) {
        let n = self.shown.unwrap_or(self.rows.len()).min(self.rows.len());
        (&self.rows[..n], self.omitted + self.rows.len() - n)
    }

    /// Keep the first `n` rows, counting the rest as omitted.
    pub fn truncate(&mut self, n: usize) {
        if self.rows.len() > n {
            self.omitted += self.rows.len() - n;
            self.rows.truncate(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::MarkSource;

    /// A stored section comes back whole, including what the JSON leaves out
    /// when empty (a span without args).
    #[test]
    fn round_trips_through_json() {
        let mut table = Table::new(&["class", "at"]);
        table.rows = vec![vec!["a.B".into(), Value::AtNs(1_000_000)]; 3];
        table.truncate(2);
        let s = Section {
            source: "jvm".into(),
            title: "JVM classes".into(),
            facts: vec![
                ("classes".into(), Value::Count(3)),
                (
                    "heap".into(),
                    Value::parts([
                        Value::Bytes(4096),
                        " in ".into(),
                        Value::Ns(7),
                        Value::Percent(1.5),
                    ]),
                ),
            ],
            table,
            spans: vec![
                Span {
                    name: "class loads".into(),
                    start_ns: 1_000,
                    dur_ns: 5_000,
                    depth: 0,
                    args: vec![
                        ("classes".into(), Value::Count(3)),
                        ("pth".into(), "x.pth".into()),
                    ],
                },
                Span {
                    name: "longest pause".into(),
                    start_ns: 2_000,
                    dur_ns: 1_000,
                    depth: 1,
                    args: vec![],
                },
            ],
            marks: vec![
                Mark::new("first app class a.B", MarkSource::Adapter, 3_000),
                Mark::new("db", MarkSource::Checkpoint, 4_000)
                    .in_pid(7)
                    .with_detail("x"),
            ],
            notes: vec!["a note".into()],
        };
        let text = serde_json::to_string(&s).expect("serialize");
        let back: Section = serde_json::from_str(&text).expect("deserialize");
        assert_eq!(back, s);
        // Numbers carry their unit; text is a plain string.
        let json: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(json["facts"][0], serde_json::json!(["classes", {"count": 3}]));
        assert_eq!(
            json["table"]["rows"][0],
            serde_json::json!(["a.B", {"at_ns": 1_000_000}])
        );
        assert_eq!(json["spans"][0]["args"][1], serde_json::json!(["pth", "x.pth"]));
    }

    /// A section stored when every fact, cell and argument was text loads, as text.
    #[test]
    fn sections_stored_as_text_still_load() {
        let old = r#"{"source":"go","title":"Go","facts":[["init clock, total","1.20 ms"]],
            "table":{"columns":["package","clock"],"rows":[["net","456 µs"]],"omitted":0},
            "spans":[{"name":"net","start_ns":0,"dur_ns":5,"depth":1,"args":[["bytes","4712"]]}],
            "marks":[],"notes":["a note"]}"#;
        let s: Section = serde_json::from_str(old).expect("an old section");
        assert_eq!(s.facts[0].1, Value::from("1.20 ms"));
        assert_eq!(s.table.rows[0][1], Value::from("456 µs"));
        assert_eq!(s.spans[0].args[0].1, Value::from("4712"));
        assert_eq!(s.table.rows[0][1].number(), None);
        assert_eq!(s.notes, [Value::from("a note")]);
    }

    /// `shown` keeps every row for the JSON while the terminal shows the top
    /// ones and counts the rest (report/explain_tests.rs prints it); a table
    /// stored before `shown` existed reads back.
    #[test]
    fn shown_rows_and_the_rest() {
        let mut t = Table::new(&["package", "classes"]);
        t.rows = (0..5)
            .map(|i| vec![format!("p{i}").into(), Value::Count(i)])
            .collect();
        assert_eq!(t.visible().0.len(), 5);
        t.show_first(2);
        let (rows, more) = t.visible();
        assert_eq!((rows.len(), more), (2, 3));
        let back: Table = serde_json::from_str(&serde_json::to_string(&t).expect("ser")).expect("de");
        assert_eq!(back, t);
        assert_eq!(back.rows.len(), 5);
        let old: Table =
            serde_json::from_str(r#"{"columns":["a"],"rows":[["x"]],"omitted":4}"#).expect("old");
        assert_eq!(old.visible().1, 4);
    }
}
