//! A small YAML writer for the engines' files, block style.
//!
//! Not a YAML crate's serialiser: serde_yaml is deprecated, serde_yml unsound
//! (RUSTSEC-2025-0068), and the maintained fork (serde_norway) writes `on`, `yes`,
//! `y`, `off` unquoted — plain strings in YAML 1.2 but booleans to YAML 1.1
//! readers, which kubectl's (go-yaml) and PyYAML are: a bench argument `on` would
//! reach Kubernetes as `true`. Here a string is written plain only when it is
//! plain under both versions (a conservative character set, no number or
//! special-word look-alikes), and otherwise double-quoted with every character
//! outside YAML's printable set escaped. The tests read the output back with
//! YAML 1.2 (serde_norway) and YAML 1.1 (PyYAML) parsers.

use std::fmt::Write;

/// A YAML node.
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    Null,
    Bool(bool),
    Int(i64),
    Str(String),
    Seq(Vec<Yaml>),
    /// Keys in the order written.
    Map(Vec<(String, Yaml)>),
}

impl From<serde_json::Value> for Yaml {
    /// A JSON value as YAML (serde_json's objects come sorted by key: fine inside a
    /// document; [`ordered`] gives the order people read).
    fn from(v: serde_json::Value) -> Yaml {
        use serde_json::Value as J;
        match v {
            J::Null => Yaml::Null,
            J::Bool(b) => Yaml::Bool(b),
            J::Number(n) => match n.as_i64() {
                Some(i) => Yaml::Int(i),
                // No fractions or huge numbers in these files: keep the text.
                None => Yaml::Str(n.to_string()),
            },
            J::String(s) => Yaml::Str(s),
            J::Array(a) => Yaml::Seq(a.into_iter().map(Yaml::from).collect()),
            J::Object(o) => Yaml::Map(o.into_iter().map(|(k, v)| (k, Yaml::from(v))).collect()),
        }
    }
}

/// A mapping with its keys in the order given.
pub fn ordered<K: Into<String>>(pairs: Vec<(K, Yaml)>) -> Yaml {
    Yaml::Map(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
}

/// Words YAML 1.1 or 1.2 reads as something other than a string (compared
/// case-insensitively; numbers are kept out by the first character).
const SPECIAL: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null"];

/// Whether `s` reads back as the same string, unquoted, under YAML 1.1 and 1.2.
fn plain_ok(s: &str) -> bool {
    let first_ok = match s.as_bytes() {
        [] => false,
        // A letter, a path or a variable: never a number, `.inf` or an indicator.
        [c, ..] if c.is_ascii_alphabetic() || *c == b'/' || *c == b'$' => true,
        [b'.', b'/', ..] => true,
        // `--flag` and `--` (a `-` followed by a space would start a sequence entry).
        [b'-', b'-'] => true,
        [b'-', b'-', c, ..] => c.is_ascii_alphabetic(),
        _ => false,
    };
    first_ok
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"_./@%+=$()-:".contains(&c))
        // `a:` or `:` at the end could read as a key.
        && !s.ends_with(':')
        && !SPECIAL.iter().any(|w| w.eq_ignore_ascii_case(s))
}

/// YAML's printable characters (1.2 §5.1) less those a reader may take for a line
/// break (NEL, U+2028, U+2029 in YAML 1.1) or a byte order mark: the rest are escaped.
fn printable(c: char) -> bool {
    matches!(c as u32, 0x20..=0x7E | 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x1_0000..=0x10_FFFF)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

/// A scalar string: plain when safe, else double-quoted on one line.
fn scalar(s: &str) -> String {
    if plain_ok(s) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if printable(c) => out.push(c),
            c if (c as u32) <= 0xFFFF => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08X}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// A node that fits on its key's line: a scalar or an empty collection.
fn inline(v: &Yaml) -> Option<String> {
    Some(match v {
        Yaml::Null => "null".to_string(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Int(i) => i.to_string(),
        Yaml::Str(s) => scalar(s),
        Yaml::Seq(items) if items.is_empty() => "[]".to_string(),
        Yaml::Map(pairs) if pairs.is_empty() => "{}".to_string(),
        Yaml::Seq(_) | Yaml::Map(_) => return None,
    })
}

/// `v` as a YAML document, block style, two spaces per level.
pub fn to_string(v: &Yaml) -> String {
    let mut out = String::new();
    match inline(v) {
        Some(s) => {
            out.push_str(&s);
            out.push('\n');
        }
        None => node(&mut out, v, 0, None),
    }
    out
}

/// Write a collection at `indent`; `first` is what stands before its first line
/// (a sequence entry's `- `), which then takes that line's indent.
fn node(out: &mut String, v: &Yaml, indent: usize, first: Option<&str>) {
    let mut lead = first;
    let mut pad = |out: &mut String| match lead.take() {
        Some(dash) => out.push_str(dash),
        None => out.push_str(&" ".repeat(indent)),
    };
    match v {
        Yaml::Map(pairs) => {
            for (k, v) in pairs {
                pad(out);
                out.push_str(&scalar(k));
                out.push(':');
                match inline(v) {
                    Some(s) => {
                        out.push(' ');
                        out.push_str(&s);
                        out.push('\n');
                    }
                    None => {
                        out.push('\n');
                        node(out, v, indent + 2, None);
                    }
                }
            }
        }
        Yaml::Seq(items) => {
            for item in items {
                pad(out);
                out.push_str("- ");
                match inline(item) {
                    Some(s) => {
                        out.push_str(&s);
                        out.push('\n');
                    }
                    // The entry's first line follows its `- `; the rest align under it.
                    None => node(out, item, indent + 2, Some("")),
                }
            }
        }
        _ => {}
    }
}
