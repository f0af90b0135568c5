//! CSV export: one row per run (raw samples, warmups and failures included),
//! for analysis in a spreadsheet or pandas.

use anyhow::Result;
use coldstart_core::experiment::ExperimentResult;

/// The columns after `variant` and the sweep's parameter columns.
const COLUMNS: &[&str] = &[
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
];

pub fn render(result: &ExperimentResult) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    // One column per swept parameter, named after it (`param.NAME` if that
    // name is taken by a fixed column), in the order they were declared.
    let mut params: Vec<&str> = Vec::new();
    for v in &result.variants {
        for (k, _) in &v.params {
            if !params.contains(&k.as_str()) {
                params.push(k);
            }
        }
    }
    let mut header = vec!["variant".to_string()];
    header.extend(params.iter().map(|p| {
        if *p == "variant" || COLUMNS.contains(p) {
            format!("param.{p}")
        } else {
            p.to_string()
        }
    }));
    header.extend(COLUMNS.iter().map(|c| c.to_string()));
    w.write_record(&header)?;
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
        let variant = &result.variants[s.variant];
        let mut record = vec![variant.name.clone()];
        record.extend(params.iter().map(|p| {
            variant
                .params
                .iter()
                .find(|(k, _)| k == p)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        }));
        record.extend([
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
        ]);
        w.write_record(&record)?;
    }
    Ok(w.into_inner()?)
}
