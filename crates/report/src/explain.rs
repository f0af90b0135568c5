//! The explain report: overhead line, waterfall of phases, blame list (largest
//! first, like systemd-analyze blame), exec chain, files, network, processes.

use super::format::ms;
use coldstart_core::sample::section::Section;
use coldstart_explain::estimate::Estimate;
use coldstart_explain::timeline::{OpenGroup, Timeline};
pub use coldstart_explain::Explanation;

const WIDTH: usize = 48;

fn dur(ns: u64) -> String {
    ms(ns as f64 / 1e6)
}

pub fn render(e: &Explanation) -> String {
    let tl = &e.timeline;
    // The conclusion first: at most three costs to act on.
    let mut out = super::headline::top(e);
    out += &format!("coldstart explain: {}  (ready = {})\n", e.command, e.readiness);
    out += &overheads(e);
    // Unreliable estimates are not shown at all (the headline says why).
    let est = e.estimate.as_ref().filter(|x| x.reliable);
    out += &waterfall(e, est);
    out += &blame(tl, est);
    out.push_str(&exec_chain(tl, est));
    out.push_str(&groups("files opened, by kind", &tl.opens_by_kind, 8));
    if let Some(x) = est.filter(|x| !x.opens_by_kind.is_empty()) {
        out.push_str(&super::estimate::spans(&x.opens_by_kind, 8));
    }
    out.push_str(&groups(
        "files opened, by package or directory",
        &tl.opens_by_package,
        10,
    ));
    out += &network(tl);
    out.push_str(&super::explain_procs::render(tl));
    out.push_str(&super::headline::off_cpu_of(e));
    let c = &tl.counts;
    out.push_str(&format!(
        "\nprocesses {}, threads started {}, execs {}, opens {} ({} failed), libraries mapped {}, connects {}\n",
        c.processes, c.threads, c.execs, c.opens, c.opens_failed, c.libraries_mapped, c.connects
    ));
    if !e.sources.is_empty() {
        out.push_str(
            "\n── inside the runtime: the adapted run nearest its median (times from its spawn) ──\n",
        );
    }
    for sec in &e.sources {
        out.push_str(&section(sec));
    }
    if let Some(p) = &e.profile {
        out.push_str(&coldstart_core::profile::render::terminal(p));
    }
    super::width::fit(&out)
}

/// What the instruments cost: the tracer's, the adapters' and the profiler's
/// overheads, the untraced estimate's headline, and the warnings.
fn overheads(e: &Explanation) -> String {
    let mut out = String::new();
    match (&e.untraced_ms, &e.traced_ms, e.overhead) {
        (Some(u), Some(t), Some(o)) => out.push_str(&format!(
            "untraced p50 {} (n={}) · traced p50 {} (n={}) · tracer overhead {}\n",
            ms(u.p50),
            u.n,
            ms(t.p50),
            t.n,
            overhead(o, e.overhead_ci)
        )),
        (None, Some(t), _) => out.push_str(&format!(
            "one traced run: ready at {} (the tracer's overhead: `coldstart explain` measures it)\n",
            ms(t.p50)
        )),
        _ => out.push_str("overhead: not enough runs\n"),
    }
    if let (Some(a), Some(o)) = (&e.adapted_ms, e.adapter_overhead) {
        let names = if e.adapters.is_empty() {
            if e.otlp {
                "no runtime adapter; checkpoints and OTLP only".to_string()
            } else {
                "no runtime adapter; checkpoints only".to_string()
            }
        } else {
            e.adapters.join(", ")
        };
        out.push_str(&format!(
            "adapted p50 {} (n={}, {names}) · adapters' overhead {}\n",
            ms(a.p50),
            a.n,
            overhead(o, e.adapter_overhead_ci)
        ));
    }
    if let (Some(p), Some(o)) = (
        e.profile.as_ref().and_then(|p| p.profiled_ms.as_ref()),
        e.profile.as_ref().and_then(|p| p.overhead),
    ) {
        let ci = e.profile.as_ref().and_then(|p| p.overhead_ci);
        out.push_str(&format!(
            "profiled p50 {} (n={}) · profiler overhead {}\n",
            ms(p.p50),
            p.n,
            overhead(o, ci)
        ));
    }
    if let Some(est) = &e.estimate {
        out.push_str(&super::estimate::headline(est));
    }
    for w in &e.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// A phase's ≈ untraced column (empty without a reliable estimate).
fn phase_est(est: Option<&Estimate>, name: &str) -> String {
    super::estimate::untraced(est.and_then(|x| x.phases.iter().find(|p| p.name == name)))
}

/// The phases of the traced run shown, as bars on one time axis.
fn waterfall(e: &Explanation, est: Option<&Estimate>) -> String {
    let tl = &e.timeline;
    let end = tl
        .phases
        .iter()
        .map(|p| p.end_ns)
        .max()
        .unwrap_or(0)
        .max((e.ready_ms * 1e6) as u64);
    let span = end.max(1) as f64;
    let mut out = format!(
        "\nwaterfall (the traced run nearest the median, ready at {})\n",
        ms(e.ready_ms)
    );
    let name_w = tl
        .phases
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(4);
    // The bar shrinks to fit the terminal (the rest of the line takes 40 + name_w).
    let bar_w = super::width::columns().map_or(WIDTH, |c| c.saturating_sub(40 + name_w).clamp(10, WIDTH));
    if est.is_some() {
        out.push_str(&format!(
            "  {:name_w$}  {:WIDTH$}  {:>21}  {:>9}  ≈ untraced (median of the runs)\n",
            "", "", "traced", ""
        ));
    }
    for p in &tl.phases {
        let a = (p.start_ns as f64 / span * bar_w as f64).round() as usize;
        let b = ((p.end_ns as f64 / span * bar_w as f64).round() as usize).max(a + usize::from(p.dur_ns > 0));
        let bar: String = (0..bar_w)
            .map(|i| {
                if i < a {
                    '·'
                } else if i < b.min(bar_w) {
                    '█'
                } else {
                    ' '
                }
            })
            .collect();
        out.push_str(&format!(
            "  {:name_w$}  {bar}  {:>9} → {:>9}  {:>9}{}\n",
            p.name,
            dur(p.start_ns),
            dur(p.end_ns),
            dur(p.dur_ns),
            phase_est(est, &p.name)
        ));
    }
    out
}

/// Blame: phases, each program of the exec chain, connects by latency; largest
/// first. (Open groups are listed below by count: their spans overlap everything.)
fn blame(tl: &Timeline, est: Option<&Estimate>) -> String {
    let mut blame: Vec<(u64, String)> = tl
        .phases
        .iter()
        .map(|p| (p.dur_ns, format!("phase {}{}", p.name, phase_est(est, &p.name))))
        .collect();
    for p in tl.processes.iter().filter(|p| p.blocked_ns > 0) {
        blame.push((
            p.blocked_ns,
            format!(
                "process {} (pid {}) on the critical path{}",
                p.label(),
                p.pid,
                held_because(p)
            ),
        ));
    }
    let step_est = |i: usize| super::estimate::untraced(est.and_then(|x| x.exec_chain.get(i)));
    for (i, step) in tl.exec_chain.iter().enumerate() {
        if let Some(end) = step.end_ns {
            blame.push((
                end - step.start_ns,
                format!("exec {} (before the next exec){}", step.label(), step_est(i)),
            ));
        }
    }
    for c in &tl.connects {
        if let Some(l) = c.latency_ns {
            blame.push((
                l,
                format!(
                    "connect {}{}",
                    address(&c.addr),
                    if c.ok { "" } else { " (failed)" }
                ),
            ));
        }
    }
    blame.sort_by_key(|b| std::cmp::Reverse(b.0));
    let mut out =
        String::from("\nblame (largest first, traced; phases tile the run, the rest overlap them)\n");
    for (ns, what) in blame.iter().filter(|(ns, _)| *ns > 0).take(12) {
        out.push_str(&format!("  {:>9}  {what}\n", dur(*ns)));
    }
    out
}

fn address(addr: &Option<coldstart_core::trace::SockAddr>) -> String {
    addr.as_ref().map(|a| a.to_string()).unwrap_or_else(|| "?".into())
}

/// The connects (when, to where, how it went, how long) and the listens.
fn network(tl: &Timeline) -> String {
    let mut out = String::new();
    if !tl.connects.is_empty() {
        out.push_str("\nnetwork connects\n");
        for c in &tl.connects {
            out.push_str(&format!(
                "  {:>9}  {}  {}  {}{}\n",
                dur(c.t_ns),
                address(&c.addr),
                if c.ok {
                    "ok".to_string()
                } else {
                    format!("errno {}", c.errno)
                },
                c.latency_ns.map(dur).unwrap_or_else(|| "—".into()),
                if c.during_init { "  (during init)" } else { "" }
            ));
        }
    }
    for l in &tl.listens {
        out.push_str(&format!(
            "\nlisten {} at {} (pid {})\n",
            address(&l.addr),
            dur(l.t_ns),
            l.pid
        ));
    }
    out
}

/// The exec chain: each step as the waterfall shows a phase (start → end,
/// duration, ≈ untraced), from its exec to the next step's; the final program
/// runs on into the loader and init phases, so it has no duration of its own.
fn exec_chain(tl: &Timeline, est: Option<&Estimate>) -> String {
    if tl.exec_chain.len() <= 1 && tl.counts.exec_failures == 0 {
        return String::new();
    }
    let mut out = format!(
        "\nexec chain ({} execs, {} failed PATH lookups; each step runs from its exec to the next)\n",
        tl.counts.execs, tl.counts.exec_failures
    );
    if est.is_some() {
        out.push_str(&format!("  {:>21}  {:>9}  ≈ untraced\n", "traced", ""));
    }
    let est_w = if est.is_some() { 22 } else { 0 };
    for (i, step) in tl.exec_chain.iter().enumerate() {
        let exe = if step.exe != step.label() {
            format!("  [{}]", step.exe)
        } else {
            String::new()
        };
        let pid = if step.pid != tl.root_pid && step.pid != 0 {
            format!("  (pid {})", step.pid)
        } else {
            String::new()
        };
        let times = match step.end_ns {
            Some(end) => {
                let e = super::estimate::untraced(est.and_then(|x| x.exec_chain.get(i)));
                format!(
                    "{:>9} → {:>9}  {:>9}{e:est_w$}",
                    dur(step.start_ns),
                    dur(end),
                    dur(end.saturating_sub(step.start_ns))
                )
            }
            None => format!("{:>9} → {:<21}{:est_w$}", dur(step.start_ns), "loader, init", ""),
        };
        out.push_str(&format!("  {times}  {}{exe}{pid}\n", step.label()));
    }
    out
}

/// Why a helper held the critical path: how the tracer saw its parent wait.
fn held_because(p: &coldstart_explain::timeline::ProcessInfo) -> String {
    let parent = p
        .parent
        .map_or_else(|| "its parent".to_string(), |q| format!("pid {q}"));
    match p.waited.as_str() {
        "wait" => format!(": {parent} waited for it"),
        "reaped" => format!(
            ": {parent} reaped it and made no traced call while it ran (a heuristic: reading its output, likely)"
        ),
        _ => ": its ancestor was waited for".into(),
    }
}

/// One source inside the runtime: its headline facts, its top offenders, its notes.
pub fn section(sec: &Section) -> String {
    section_to(sec, super::width::columns())
}

/// [`section`] fitted to `width` columns (None: as wide as it is): the table's
/// cells wrap inside their columns, so a long cell (a package's many sources)
/// never pushes the row's other columns onto lines of their own.
pub fn section_to(sec: &Section, width: Option<usize>) -> String {
    let mut out = format!("\n{}\n", sec.title);
    let key_w = sec.facts.iter().map(|f| f.0.chars().count()).max().unwrap_or(0);
    for (k, v) in &sec.facts {
        out.push_str(&format!("  {k:key_w$}  {}\n", super::value::text(v)));
    }
    let t = &sec.table;
    if !t.rows.is_empty() {
        let mut table = comfy_table::Table::new();
        table
            .load_preset(comfy_table::presets::NOTHING)
            .set_header(t.columns.clone());
        let (rows, omitted) = t.visible();
        for r in rows {
            table.add_row(r.iter().map(super::value::text).collect::<Vec<_>>());
        }
        // Each line is indented by one column below.
        super::width::fit_table_to(&mut table, &[], width.map(|w| w.saturating_sub(1)));
        for line in table.to_string().lines() {
            out.push_str(&format!(" {}\n", line.trim_end()));
        }
        if omitted > 0 {
            out.push_str(&format!("   … {omitted} more\n"));
        }
    }
    for n in &sec.notes {
        out.push_str(&format!("  note: {}\n", super::value::text(n)));
    }
    super::width::fit_to(&out, width)
}

/// `×1.18 (95% CI ×1.12–×1.25)`; without an interval, why.
pub fn overhead(estimate: f64, ci: Option<(f64, f64)>) -> String {
    match ci {
        // Not the ratio of the medians printed beside it: the Hodges–Lehmann
        // ratio (median of all pairwise ratios), whose interval this is.
        Some((lo, hi)) => format!("×{estimate:.3} (HL ratio; 95% CI ×{lo:.3}–×{hi:.3})"),
        None => format!("×{estimate:.3} (HL ratio; too few runs for a 95% CI: --runs 4 or more gives one)"),
    }
}

fn groups(title: &str, gs: &[OpenGroup], n: usize) -> String {
    if gs.is_empty() {
        return String::new();
    }
    let mut out = format!("\n{title} (opened / failed, span first → last open)\n");
    for g in gs.iter().take(n) {
        out.push_str(&format!(
            "  {:>5} / {:<5} {:>9}  {}\n",
            g.opened,
            g.failed,
            dur(g.span_ns),
            g.key
        ));
    }
    if gs.len() > n {
        out.push_str(&format!("  … {} more\n", gs.len() - n));
    }
    out
}

#[cfg(test)]
#[path = "explain_tests.rs"]
mod tests;
