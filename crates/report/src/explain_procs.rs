//! The explain report's process lanes: which process the phases are about (the
//! service), the fork path to it, and every other process with its own span,
//! argv, threads and the time it held the critical path.

use super::format::ms;
use coldstart_explain::timeline::{ProcessInfo, Timeline};

const MAX_LANES: usize = 30;

fn dur(ns: u64) -> String {
    ms(ns as f64 / 1e6)
}

/// At most `max` characters of a command line.
fn command(p: &ProcessInfo, max: usize) -> String {
    let line = if p.argv.is_empty() {
        p.program.clone()
    } else {
        p.argv.join(" ")
    };
    // One line per lane: an inline program's newlines are shown, not obeyed.
    let line: String = line
        .chars()
        .flat_map(|c| match c {
            '\n' => vec!['\\', 'n'],
            c if c.is_control() => vec![' '],
            c => vec![c],
        })
        .collect();
    if line.chars().count() > max {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line
    }
}

/// Thread names grouped (`erts_sched_1…4` style names are counted per name).
fn threads(p: &ProcessInfo) -> String {
    let mut names: Vec<(String, usize)> = Vec::new();
    for t in &p.thread_list {
        let n = t.name.clone().unwrap_or_else(|| "?".into());
        match names.iter_mut().find(|(m, _)| *m == n) {
            Some((_, c)) => *c += 1,
            None => names.push((n, 1)),
        }
    }
    let shown: Vec<String> = names
        .iter()
        .take(6)
        .map(|(n, c)| if *c > 1 { format!("{n}×{c}") } else { n.clone() })
        .collect();
    let more = names.len().saturating_sub(6);
    if more > 0 {
        format!("{} … {more} more names", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// The service line and the lanes (empty for a single-process run without threads).
pub fn render(tl: &Timeline) -> String {
    let s = &tl.service;
    let Some(svc) = tl.processes.iter().find(|p| p.pid == s.pid) else {
        return String::new();
    };
    let mut out = format!(
        "\nservice process: pid {} {} ({}); the phases are its events\n",
        svc.pid,
        svc.label(),
        s.why
    );
    if s.path.len() > 1 {
        let path: Vec<String> = s
            .path
            .iter()
            .filter_map(|pid| tl.processes.iter().find(|p| p.pid == *pid))
            .map(|p| format!("{} ({})", p.label(), p.pid))
            .collect();
        out.push_str(&format!("  fork path: {}\n", path.join(" → ")));
    }
    if s.blocked_ns > 0 {
        out.push_str(&format!(
            "  other processes held {} of its critical path (a process on the path waited for them)\n",
            dur(s.blocked_ns)
        ));
    }
    if tl.processes.len() < 2 && svc.thread_list.is_empty() {
        return out;
    }
    out.push_str(
        "\nprocesses (one lane each, start → end; helpers: \"held\" the critical path while a process \
         on it waited for them, \"beside\" ran alongside it, overlapping it that long)\n",
    );
    // The service, its path, helpers that held the path or listen, then the rest.
    let matters =
        |p: &ProcessInfo| p.role != "helper" || p.blocked_ns > 0 || tl.listens.iter().any(|l| l.pid == p.pid);
    let mut shown: Vec<&ProcessInfo> = tl.processes.iter().filter(|p| matters(p)).collect();
    shown.extend(tl.processes.iter().filter(|p| !matters(p)));
    let hidden = shown.len().saturating_sub(MAX_LANES);
    shown.truncate(MAX_LANES);
    shown.sort_by_key(|p| p.start_ns);
    for p in shown {
        let end = match (p.exit_ns, p.exit_code, p.exit_signal) {
            (Some(t), Some(c), _) => format!("{} (status {c})", dur(t)),
            (Some(t), _, Some(sig)) => format!("{} (signal {sig})", dur(t)),
            (Some(t), _, _) => dur(t),
            (None, _, _) => "running".into(),
        };
        let held = match p.role.as_str() {
            "helper" if p.blocked_ns > 0 => format!("held {}", dur(p.blocked_ns)),
            "helper" if p.overlap_ns > 0 => format!("beside {}", dur(p.overlap_ns)),
            "helper" => "alongside".into(),
            _ => String::new(),
        };
        let listens: Vec<String> = tl
            .listens
            .iter()
            .filter(|l| l.pid == p.pid)
            .map(|l| {
                let a = l
                    .addr
                    .as_ref()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|| "?".into());
                format!("listen {a} at {}", dur(l.t_ns))
            })
            .collect();
        out.push_str(&format!(
            "  {:>7} {:<8} {:>9} → {:<22} {:<14} {}\n",
            p.pid,
            p.role,
            dur(p.start_ns),
            end,
            held,
            command(p, 70)
        ));
        if !listens.is_empty() {
            out.push_str(&format!("          {}\n", listens.join("; ")));
        }
        if !p.thread_list.is_empty() {
            out.push_str(&format!(
                "          threads ({}): {}\n",
                p.thread_list.len(),
                threads(p)
            ));
        }
    }
    if hidden > 0 {
        out.push_str(&format!(
            "  … {hidden} more short-lived processes (all in the JSON)\n"
        ));
    }
    out
}
