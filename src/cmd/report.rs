//! `coldstart report [REF…] -o report.html`, and the HTML of show, compare and
//! gate: stored experiments → the self-contained HTML report (report/html).
//! Nothing is run: the store's experiments, explanations and history only.

use crate::analysis::{analyze_sweep, Analysis};
use crate::experiment::ExperimentResult;
use crate::explain::Explanation;
use crate::flags::ReportArgs;
use crate::gate::GateRow;
use crate::report::html::{self, Experiment, Report};
use crate::report::json::Settings;
use crate::store::{Filter, Stored};
use anyhow::{Context, Result};

/// Experiments per target read for the history chart.
const HISTORY: usize = 100;

pub fn run(args: &ReportArgs) -> Result<i32> {
    crate::report::export::check(&[&Some(args.output.clone())])?;
    let mut store = super::history::open(&args.store)?;
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
            .unwrap_or(crate::stats::DEFAULT_NOISE);
        let sweep = settings.as_ref().and_then(|s| s.sweep.as_ref());
        let analysis = analyze_sweep(&stored.result, noise, sweep);
        let explanation = super::history::explanation(&mut store, id)?;
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
            .map(|(s, settings, a, x)| experiment(s, settings.as_ref(), a, x.as_ref()))
            .collect(),
        history,
        gate: None,
    };
    let page = html::render(&report);
    crate::report::write_export(&args.output, page.as_bytes())
        .with_context(|| format!("writing the report to {}", args.output.display()))?;
    if !args.quiet {
        crate::out::errln!(
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

fn experiment<'a>(
    s: &'a Stored,
    settings: Option<&'a Settings>,
    a: &'a Analysis,
    x: Option<&'a Explanation>,
) -> Experiment<'a> {
    Experiment {
        heading: format!(
            "Experiment {}{}",
            s.id,
            if x.is_some() { " (explain)" } else { "" }
        ),
        id: Some(s.id),
        created_unix_s: Some(s.created_unix_s),
        meta: Some(&s.meta),
        settings,
        result: &s.result,
        analysis: a,
        explanation: x,
        tuned: settings
            .and_then(|s| Some((s.of_kind.tune.as_ref()?, s.noise)))
            .and_then(|(t, noise)| crate::tune::stored::tuned(t, a, noise)),
    }
}

/// `show --export-html`: one stored experiment.
pub fn single<'a>(
    s: &'a Stored,
    settings: &'a Settings,
    a: &'a Analysis,
    x: Option<&'a Explanation>,
) -> Report<'a> {
    Report {
        title: format!("coldstart report: experiment {}", s.id),
        experiments: vec![experiment(s, Some(settings), a, x)],
        history: Vec::new(),
        gate: None,
    }
}

/// `compare --export-html`: each pair side by side as a two-variant experiment.
pub fn comparison(b: &Stored, c: &Stored, shown: &[(ExperimentResult, Analysis)]) -> String {
    let report = Report {
        title: format!("coldstart compare: experiment {} → {}", b.id, c.id),
        experiments: shown
            .iter()
            .map(|(r, a)| Experiment {
                heading: a
                    .variants
                    .iter()
                    .map(|v| v.name.as_str())
                    .collect::<Vec<_>>()
                    .join(" vs "),
                id: None,
                created_unix_s: None,
                meta: None,
                settings: None,
                result: r,
                analysis: a,
                explanation: None,
                tuned: None,
            })
            .collect(),
        history: Vec::new(),
        gate: None,
    };
    html::render(&report)
}

/// `gate --export-html`: the decision, then both sides (one experiment if the
/// two sides are variants of one).
pub fn gate(b: &Stored, c: &Stored, rows: &[GateRow], noise: f64) -> Result<String> {
    let sides: Vec<&Stored> = if b.id == c.id { vec![b] } else { vec![b, c] };
    let analyses: Vec<(Analysis, Option<Settings>)> = sides
        .iter()
        .map(|s| {
            let settings: Option<Settings> = serde_json::from_str(&s.settings_json).ok();
            let sweep = settings.as_ref().and_then(|x| x.sweep.as_ref());
            (analyze_sweep(&s.result, noise, sweep), settings)
        })
        .collect();
    let report = Report {
        title: format!("coldstart gate: experiment {} → {}", b.id, c.id),
        experiments: sides
            .iter()
            .zip(&analyses)
            .map(|(s, (a, settings))| experiment(s, settings.as_ref(), a, None))
            .collect(),
        history: Vec::new(),
        gate: Some(rows),
    };
    Ok(html::render(&report))
}
