//! The explain headline (explain/headline.rs) as text: the first lines of the
//! report, and the "off CPU" section its off-CPU item points to.

use super::format::ms;
use coldstart_explain::headline::{Headline, Item, Kind};
pub use coldstart_explain::Explanation;

/// The report's first lines: the headline, when the explanation has one.
pub fn top(e: &Explanation) -> String {
    e.headline.as_ref().map(lines).unwrap_or_default()
}

/// The off-CPU section, when the explanation has its figures.
pub fn off_cpu_of(e: &Explanation) -> String {
    e.headline.as_ref().map(off_cpu).unwrap_or_default()
}

/// One line per item: `▶ the exec chain …: ≈ 418 ms of 738 ms untraced (57 %) — see "exec chain"`.
pub fn lines(h: &Headline) -> String {
    h.items.iter().map(|i| format!("▶ {}\n", line(i))).collect()
}

/// An item's text, without the marker (the HTML page uses it too).
pub fn line(i: &Item) -> String {
    let approx = if i.estimated { "≈ " } else { "" };
    let of = match (i.of_ms, i.share_pct) {
        (Some(of), Some(pct)) => {
            let whose = match (i.kind, i.estimated) {
                (Kind::Runtime, _) => " in the adapted run",
                (_, true) => " untraced",
                (_, false) => " traced",
            };
            format!(" of {}{whose} ({pct:.0} %)", ms(of))
        }
        _ => String::new(),
    };
    format!("{}: {approx}{}{of} — see \"{}\"", i.what, ms(i.ms), i.section)
}

/// The service's main thread on and off CPU per phase; empty without figures.
pub fn off_cpu(h: &Headline) -> String {
    if h.off_cpu.is_empty() {
        return String::new();
    }
    let pid = h.off_cpu[0].pid;
    let mut out = format!(
        "\noff CPU (the service's main thread, pid {pid}, from its scheduler counters; off CPU = sleeping or blocked, or held at the tracer's stops: at most its calibrated cost or the tracer thread's own time on and waiting for a CPU meanwhile, whichever is larger)\n"
    );
    out.push_str(&format!(
        "  {:8}  {:>9}  {:>9}  {:>9}  {:>9}  {:>16}  {}\n",
        "phase", "wall", "on CPU", "runnable", "off CPU", "held by tracer", "≈ off CPU untraced"
    ));
    for o in &h.off_cpu {
        out.push_str(&format!(
            "  {:8}  {:>9}  {:>9}  {:>9}  {:>9}  {:>20}  {}\n",
            o.phase,
            ms(o.wall_ms),
            ms(o.on_cpu_ms),
            ms(o.runqueue_ms),
            ms(o.off_cpu_ms),
            format!("{} ({} stops)", ms(o.stops_ms.max(o.tracer_ms)), o.stops),
            o.estimate_ms.map_or_else(|| "—".to_string(), ms)
        ));
    }
    out
}
