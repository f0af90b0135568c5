//! CSV export: one row per run (raw samples, warmups and failures included),
//! for analysis in a spreadsheet or pandas.

use crate::experiment::ExperimentResult;
use anyhow::Result;

pub fn render(result: &ExperimentResult) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "variant",
        "round",
        "warmup",
        "outcome",
        "ready_ns",
        "exit_code",
        "exit_signal",
        "cpu_total_us",
        "cpu_user_us",
        "cpu_sys_us",
        "peak_rss_kb",
        "minor_faults",
        "major_faults",
        "processes",
        "threads",
        "first_request_ns",
        "shutdown_ns",
        "killed",
        "captures",
        "marks",
        "metrics",
    ])?;
    for s in &result.samples {
        let opt = |x: Option<u64>| x.map(|v| v.to_string()).unwrap_or_default();
        let outcome = serde_json::to_value(&s.outcome)?
            .get("kind")
            .and_then(|k| k.as_str().map(String::from))
            .unwrap_or_default();
        let captures = s
            .captures
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";");
        w.write_record([
            result.variants[s.variant].name.clone(),
            s.round.to_string(),
            s.warmup.to_string(),
            outcome,
            opt(s.ready_ns),
            s.exit_status
                .as_ref()
                .and_then(|e| e.code)
                .map(|c| c.to_string())
                .unwrap_or_default(),
            s.exit_status
                .as_ref()
                .and_then(|e| e.signal)
                .map(|c| c.to_string())
                .unwrap_or_default(),
            s.usage.cpu_total_us.to_string(),
            s.usage.cpu_user_us.to_string(),
            s.usage.cpu_sys_us.to_string(),
            opt(s.usage.peak_rss_kb),
            s.usage.minor_faults.to_string(),
            s.usage.major_faults.to_string(),
            s.usage.processes.to_string(),
            s.usage.threads.to_string(),
            opt(s.requests_ns.first().copied()),
            opt(s.shutdown_ns),
            s.killed.to_string(),
            captures,
            s.marks
                .iter()
                .map(|m| format!("{}={}", m.name, m.t_ns))
                .collect::<Vec<_>>()
                .join(";"),
            s.metrics
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(";"),
        ])?;
    }
    Ok(w.into_inner()?)
}
