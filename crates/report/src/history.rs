//! The `history` table and one-line descriptions of stored experiments.

use super::format::ms;
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

/// `YYYY-MM-DD HH:MM` from Unix seconds (civil-from-days, proleptic Gregorian).
pub fn utc(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}", rem / 3600, rem % 3600 / 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00");
        assert_eq!(super::utc(951_782_400), "2000-02-29 00:00");
        assert_eq!(super::utc(1_795_000_000), "2026-11-18 11:06");
    }
}
