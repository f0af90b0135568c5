//! `coldstart report [REF…] -o report.html`: stored experiments → the
//! self-contained HTML report (report/html; the pages of show, compare and
//! gate are built in `stored`, beside this one's experiments).
//! Nothing is run: the store's experiments, explanations and history only.

use crate::flags::ReportArgs;
use anyhow::{Context, Result};
use coldstart_core::analysis::analyze_sweep;
use coldstart_core::store::Filter;
use coldstart_report::html::{self, Report};
use coldstart_report::json::Settings;

/// Experiments per target read for the history chart.
const HISTORY: usize = 100;

pub fn run(args: &ReportArgs) -> Result<i32> {
    coldstart_report::export::check(&[&Some(args.output.clone())])?;
    let mut store = super::stored::open(&args.store)?;
    let refs = if args.experiments.is_empty() {
        vec!["latest".to_string()]
    } else {
        args.experiments.clone()
    };
    let mut loaded = Vec::new();
    for r in &refs {
        let id = store.resolve(r)?;
        let stored = store.load(id)?;
        let settings: Option<Settings> = serde_json::from_str(&stored.settings_json).ok();
        let noise = args
            .noise
            .or(settings.as_ref().map(|s| s.noise))
            .unwrap_or(coldstart_core::stats::DEFAULT_NOISE);
        let sweep = settings.as_ref().and_then(|s| s.sweep.as_ref());
        let analysis = analyze_sweep(&stored.result, noise, sweep);
        let explanation = super::stored::explanation(&mut store, id)?;
        loaded.push((stored, settings, analysis, explanation));
    }
    let mut history = Vec::new();
    if !args.no_history {
        let mut targets: Vec<String> = Vec::new();
        for (s, ..) in &loaded {
            for v in &s.result.variants {
                if !targets.contains(&v.name) {
                    targets.push(v.name.clone());
                }
            }
        }
        for t in &targets {
            let listed = store.list(&Filter {
                target: Some(t.clone()),
                commit: None,
                limit: Some(HISTORY),
            })?;
            history.extend(html::trends(&listed, std::slice::from_ref(t)));
        }
    }
    let report = Report {
        title: match &loaded[..] {
            [(s, ..)] => format!("coldstart report: experiment {}", s.id),
            _ => format!("coldstart report: {} experiments", loaded.len()),
        },
        experiments: loaded
            .iter()
            .map(|(s, settings, a, x)| super::stored::experiment(s, settings.as_ref(), a, x.as_ref()))
            .collect(),
        history,
        gate: None,
    };
    let page = html::render(&report);
    coldstart_report::write_export(&args.output, page.as_bytes())
        .with_context(|| format!("writing the report to {}", args.output.display()))?;
    if !args.quiet {
        coldstart_core::out::errln!(
            "coldstart: wrote {} ({} KiB): open it in a browser (file://{})",
            args.output.display(),
            page.len().div_ceil(1024),
            std::fs::canonicalize(&args.output)
                .unwrap_or_else(|_| args.output.clone())
                .display()
        );
    }
    Ok(0)
}
