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
    /// Headline facts, in order: ("imports", "57"), ("total", "12.3 ms").
    pub facts: Vec<(String, String)>,
    /// The top offenders, largest first.
    pub table: Table,
    /// Intervals on the run's clock, for the timeline and the Chrome trace.
    /// Parents come before their children; `depth` keeps the nesting.
    pub spans: Vec<Span>,
    /// Instants on the run's clock, with the source that saw them (an adapter,
    /// the app's checkpoints or log lines, its OpenTelemetry spans).
    pub marks: Vec<Mark>,
    /// What this source cannot see or had to estimate, said plainly.
    pub notes: Vec<String>,
}

/// A table whose rows are already sorted, largest first. Cells are text so that
/// each source formats its own units; `key` columns stay machine-readable in JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Rows left out of `rows` (the source keeps the top N).
    pub omitted: usize,
    /// Rows the terminal shows (the rest are counted as "… N more" there);
    /// `rows` keeps them all for the JSON. None: show every row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown: Option<usize>,
}

/// An interval, ns since the run's time zero (spawn).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub name: String,
    pub start_ns: u64,
    pub dur_ns: u64,
    /// 0 for a root span; a child is one deeper than its parent.
    pub depth: usize,
    /// Free-form attributes worth showing (package, bytes, allocs …).
    /// Left out of the JSON when empty, so read back as empty when missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<(String, String)>,
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
    pub fn visible(&self) -> (&[Vec<String>], usize) {
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

/// Milliseconds with a precision that suits the size, for table cells.
pub fn ms_cell(ns: u64) -> String {
    let x = ns as f64 / 1e6;
    if x < 1.0 {
        format!("{:.0} µs", x * 1000.0)
    } else if x < 10.0 {
        format!("{x:.2} ms")
    } else if x < 1000.0 {
        format!("{x:.1} ms")
    } else {
        format!("{:.2} s", x / 1000.0)
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
        table.rows = vec![vec!["a.B".into(), "1.00 ms".into()]; 3];
        table.truncate(2);
        let s = Section {
            source: "jvm".into(),
            title: "JVM classes".into(),
            facts: vec![("classes".into(), "3".into())],
            table,
            spans: vec![
                Span {
                    name: "class loads".into(),
                    start_ns: 1_000,
                    dur_ns: 5_000,
                    depth: 0,
                    args: vec![("classes".into(), "3".into())],
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
    }

    /// `shown` keeps every row for the JSON while the terminal prints the top
    /// ones and counts the rest; a table stored before `shown` existed reads back.
    #[test]
    fn shown_rows_and_the_rest() {
        let mut t = Table::new(&["package", "classes"]);
        t.rows = (0..5).map(|i| vec![format!("p{i}"), i.to_string()]).collect();
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
