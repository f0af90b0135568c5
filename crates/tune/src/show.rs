//! What tune shows of what it ran: the work directory's paths become plain file
//! names (the directory is gone when the table is read), command lines with
//! their added variables, and `--list`'s catalogue with each rationale.

use super::catalogue::Candidate;
use super::exec::Applied;
use super::report::{Recommended, Row, Status};
use super::Runtime;
use coldstart_core::target::{shell_join, shell_quote, Target};
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
        caveats: Vec::new(),
        rejected: None,
        row: row.map(|r| shown(r, work)),
    }
}

/// Spring Boot's flag that ends the program once its context is refreshed: how
/// the docs measure a server's start, never how it runs.
pub const SPRING_EXIT: &str = "-Dspring.context.exit=onRefresh";

/// What to know before applying `command` (as shown), applied as `applied`.
pub fn caveats(command: &str, applied: Applied) -> Vec<String> {
    let mut out = Vec::new();
    if command.contains(SPRING_EXIT) {
        out.push(format!(
            "{SPRING_EXIT} is for measuring only: it stops the application once its context is refreshed; leave it out of the command you deploy (keep it in the training run)"
        ));
    }
    if applied == Applied::FunctionEnvironment && command.contains("-XX:SharedArchiveFile=") {
        out.push(
            "on the service, java17's own -XX:SharedArchiveFile (its runtime.jsa) may take precedence over JAVA_TOOL_OPTIONS: confirm the gain there with `coldstart lambda --aws`"
                .to_string(),
        );
    }
    out
}

/// The variables `t` sets beyond the baseline's, as KEY=VALUE.
pub fn added_env(t: &Target, base: &Target, work: &Path) -> Vec<String> {
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

/// How a Lambda function applies `c`: its flags in the runtime's options
/// variable (`options_env`), its variables in the function's environment, a
/// training run as one init in the runtime's own image. None when it changes
/// neither (advice only, or a whole command line).
pub fn function_apply(c: &Candidate, options_env: Option<&str>) -> Option<String> {
    let plain = |v: &str| v.replace("{work}/", "");
    let mut set: Vec<String> = Vec::new();
    if !c.args.is_empty() {
        let var = options_env?;
        let args: Vec<String> = c.args.iter().map(|a| plain(a)).collect();
        set.push(format!("{var}={}", shell_quote(&args.join(" "))));
    }
    set.extend(
        c.env
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_quote(&plain(v)))),
    );
    set.extend(
        c.env_append
            .iter()
            .map(|(k, v)| format!("{k} with {} appended", shell_quote(&plain(v)))),
    );
    if set.is_empty() || c.argv.is_some() || c.jar.is_some() {
        return None;
    }
    let train = c.train.as_ref().map(|t| {
        let mut with: Vec<String> = Vec::new();
        if !t.args.is_empty() {
            let args: Vec<String> = t.args.iter().map(|a| plain(a)).collect();
            with.push(format!("{}={}", options_env.unwrap_or("the options variable"), shell_quote(&args.join(" "))));
        }
        with.extend(t.env.iter().map(|(k, v)| format!("{k}={}", shell_quote(&plain(v)))));
        format!(
            "train once: one init with {} in the runtime's own image, and ship what it writes in the function's package; then ",
            with.join(" ")
        )
    });
    Some(format!(
        "{}the function's environment: {}",
        train.unwrap_or_default(),
        set.join(" ")
    ))
}
