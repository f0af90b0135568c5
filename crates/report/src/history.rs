//! The `history` table and one-line descriptions of stored experiments.

use super::format::ms;
/// Dates are the clock's: lambda's telemetry writes them too.
pub use crate::clock::utc;
use crate::store::{Listed, Stored};
use comfy_table::{presets, Table};

pub fn render(listed: &[Listed]) -> String {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_HORIZONTAL_ONLY);
    t.set_header(["id", "when (UTC)", "commit", "variants: p50", "runs", "stopped"]);
    for e in listed {
        let variants = e
            .variants
            .iter()
            .zip(&e.p50_ms)
            .map(|(n, p)| format!("{n}: {}", p.map(ms).unwrap_or_else(|| "—".into())))
            .collect::<Vec<_>>()
            .join("\n");
        t.add_row(vec![
            match &e.kind {
                Some(kind) => format!("{} ({kind})", e.id),
                None => e.id.to_string(),
            },
            utc(e.created_unix_s),
            commit(&e.git_commit, e.git_dirty),
            variants,
            e.runs.to_string(),
            e.stopped.clone().unwrap_or_else(|| "incomplete".into()),
        ]);
    }
    super::width::fit_table(&mut t, &[]);
    format!("{t}\n")
}

pub fn describe(s: &Stored) -> String {
    format!(
        "{}, commit {}, {} on {}",
        utc(s.created_unix_s),
        commit(&s.meta.git_commit, s.meta.git_dirty),
        s.meta.command_line,
        s.meta.hostname
    )
}

pub fn commit(c: &Option<String>, dirty: Option<bool>) -> String {
    match c {
        Some(c) => format!(
            "{}{}",
            &c[..c.len().min(10)],
            if dirty == Some(true) { "+dirty" } else { "" }
        ),
        None => "—".into(),
    }
}
