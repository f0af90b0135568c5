//! What tune shows of what it ran: the work directory's paths become plain file
//! names (the directory is gone when the table is read), command lines with
//! their added variables, and `--list`'s catalogue with each rationale.

use super::catalogue::Candidate;
use super::report::{Recommended, Row, Status};
use super::Runtime;
use crate::target::{shell_join, shell_quote, Target};
use std::path::Path;

/// A row as shown: the work directory's paths become plain file names.
pub fn shown(mut r: Row, work: &Path) -> Row {
    let w = work.to_string_lossy();
    r.apply = r.apply.replace(&format!("{w}/"), "");
    if let Status::Broken { why } = &mut r.status {
        *why = strip_work(why, work);
    }
    r
}

/// `{work}/ID/file` → `file` in what is shown to the user.
pub fn strip_work(s: &str, work: &Path) -> String {
    let w = work.to_string_lossy();
    let re = regex::Regex::new(&format!("{}/[^/ ]+/", regex::escape(&w)));
    match re {
        Ok(re) => re.replace_all(s, "").into_owned(),
        Err(_) => s.to_string(),
    }
}

/// The recommended command and environment, with the work paths as plain file names.
pub fn recommendation(
    ids: Vec<String>,
    combined: &Target,
    base: &Target,
    work: &Path,
    row: Option<Row>,
) -> Recommended {
    Recommended {
        ids,
        command: command_line(combined, base, work),
        env: added_env(combined, base, work),
        train: Vec::new(),
        rejected: None,
        row: row.map(|r| shown(r, work)),
    }
}

/// The variables `t` sets beyond the baseline's, as KEY=VALUE.
fn added_env(t: &Target, base: &Target, work: &Path) -> Vec<String> {
    t.env
        .iter()
        .skip(base.env.len())
        .map(|(k, v)| format!("{k}={}", shell_quote(&strip_work(v, work))))
        .collect()
}

/// `t` as a shell line: its added variables, then its argv.
pub fn command_line(t: &Target, base: &Target, work: &Path) -> String {
    let added = added_env(t, base, work);
    let argv: Vec<String> = t.argv.iter().map(|a| strip_work(a, work)).collect();
    if added.is_empty() {
        shell_join(&argv)
    } else {
        format!("{} {}", added.join(" "), shell_join(&argv))
    }
}

/// `--list`: the catalogue for this runtime with each candidate's rationale.
pub fn list(rt: &Runtime, chosen: &[&Candidate]) -> String {
    let mut s = format!(
        "{} {}({}): {} candidates\n",
        rt.name,
        rt.version.as_deref().map(|v| format!("{v} ")).unwrap_or_default(),
        rt.exe.display(),
        chosen.len()
    );
    for c in chosen {
        let state = match c.unavailable(rt.version.as_deref()) {
            Some(why) => format!("  [{why}]"),
            None => String::new(),
        };
        s.push_str(&format!("\n{} — {}{state}\n", c.id, c.title));
        for (label, text) in [
            ("what", &c.what),
            ("why", &c.why),
            ("risks", &c.risks),
            ("apply", &c.apply),
            ("source", &c.source),
        ] {
            if !text.is_empty() {
                s.push_str(&format!("  {label}: {text}\n"));
            }
        }
        if let Some(p) = &c.prepare {
            s.push_str(&format!("  set-up: {p}, once, untimed\n"));
        }
        if c.train.is_some() || c.setup.is_some() {
            s.push_str("  set-up: a training run of the program, once, untimed\n");
        }
    }
    s
}
