//! What the commands over stored experiments share (history, show, compare,
//! gate and report): opening the store, an explanation read back, and the
//! HTML pages of stored experiments. Nothing here runs anything.

use crate::flags::StoreArgs;
use anyhow::{bail, Context, Result};
use coldstart_core::analysis::{analyze_sweep, Analysis};
use coldstart_core::config;
use coldstart_core::experiment::ExperimentResult;
use coldstart_core::store::{Store, Stored};
use coldstart_explain::Explanation;
use coldstart_report::gate::GateRow;
use coldstart_report::html::{self, Experiment, Report};
use coldstart_report::json::Settings;

/// The store the flags (or coldstart.toml) name, which must exist already.
pub fn open(args: &StoreArgs) -> Result<Store> {
    let root = config::project_root();
    let cfg = config::load(&root)?;
    let spec = config::store_spec(args.store.as_deref(), cfg.as_ref(), &root);
    if !spec.contains("://") && !std::path::Path::new(spec.strip_prefix("sqlite:").unwrap_or(&spec)).exists()
    {
        bail!("no store at {spec}: run `coldstart bench` first, or point --store / COLDSTART_STORE at one");
    }
    Store::open(&spec)
}

/// The stored explanation of experiment `id`, if it is a `coldstart explain`.
pub fn explanation(store: &mut Store, id: i64) -> Result<Option<Explanation>> {
    store
        .explanation(id)?
        .map(|json| {
            serde_json::from_str(&json)
                .with_context(|| format!("experiment {id}: its stored explanation is unreadable"))
        })
        .transpose()
}

/// One stored experiment as the HTML report shows it.
pub fn experiment<'a>(
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
            .and_then(|(t, noise)| coldstart_tune::stored::tuned(t, &s.result, a, noise)),
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
