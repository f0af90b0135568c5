//! The commands over stored experiments: history, show, compare, gate.

use crate::analysis::analyze;
use crate::cli::{CompareArgs, GateArgs, HistoryArgs, ShowArgs, StoreArgs};
use crate::config;
use crate::experiment::ExperimentResult;
use crate::gate::{self, GateRow, Status, Thresholds};
use crate::out::{out, outln};
use crate::report::{self, json::Settings};
use crate::store::{Filter, Store, Stored};
use anyhow::{bail, Result};

fn open(args: &StoreArgs) -> Result<Store> {
    let root = config::project_root();
    let cfg = config::load(&root)?;
    let spec = config::store_spec(args.store.as_deref(), cfg.as_ref(), &root);
    if !spec.contains("://") && !std::path::Path::new(spec.strip_prefix("sqlite:").unwrap_or(&spec)).exists()
    {
        bail!("no store at {spec}: run `coldstart bench` first, or point --store / COLDSTART_STORE at one");
    }
    Store::open(&spec)
}

pub fn history(args: &HistoryArgs) -> Result<i32> {
    let mut store = open(&args.store)?;
    let listed = store.list(&Filter {
        target: args.target.clone(),
        commit: args.commit.clone(),
        limit: Some(args.limit),
    })?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&listed)?)?;
    } else if listed.is_empty() {
        outln!("no stored experiment matches (store: {})", store.location)?;
    } else {
        out!("{}", report::history::render(&listed))?;
    }
    Ok(0)
}

pub fn show(args: &ShowArgs) -> Result<i32> {
    args.export.check_dirs()?;
    let mut store = open(&args.store)?;
    let id = store.resolve(&args.experiment)?;
    let stored = store.load(id)?;
    let analysis = analyze(&stored.result);
    let settings: Settings = serde_json::from_str(&stored.settings_json)?;
    // Exports first, printing last (see out.rs).
    crate::bench::export(&args.export, &stored.result, &analysis, &settings)?;
    outln!(
        "experiment {} ({})",
        stored.id,
        report::history::describe(&stored)
    )?;
    if args.meta {
        outln!("{}", serde_json::to_string_pretty(&stored.meta)?)?;
    }
    out!("{}", report::terminal::render(&stored.result, &analysis))?;
    Ok(0)
}

/// `REF` or `REF:VARIANT`.
fn split_ref(s: &str) -> (&str, Option<&str>) {
    match s.split_once(':') {
        Some((r, v)) if !v.is_empty() => (r, Some(v)),
        _ => (s, None),
    }
}

/// Pairs of (name, baseline variant index, candidate variant index): the named
/// variants, else those with equal names, else the only variant of each.
fn pairs(b: &Stored, bv: Option<&str>, c: &Stored, cv: Option<&str>) -> Result<Vec<(String, usize, usize)>> {
    let index = |s: &Stored, name: &str| {
        s.result
            .variants
            .iter()
            .position(|v| v.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = s.result.variants.iter().map(|v| v.name.as_str()).collect();
                anyhow::anyhow!(
                    "experiment {} has no variant '{name}' (it has: {})",
                    s.id,
                    names.join(", ")
                )
            })
    };
    match (bv, cv) {
        (Some(x), Some(y)) => Ok(vec![(
            if x == y {
                x.to_string()
            } else {
                format!("{x} → {y}")
            },
            index(b, x)?,
            index(c, y)?,
        )]),
        (Some(x), None) => Ok(vec![(x.to_string(), index(b, x)?, index(c, x)?)]),
        (None, Some(y)) => Ok(vec![(y.to_string(), index(b, y)?, index(c, y)?)]),
        (None, None) => {
            let same: Vec<_> = c
                .result
                .variants
                .iter()
                .enumerate()
                .filter_map(|(ci, v)| Some((v.name.clone(), index(b, &v.name).ok()?, ci)))
                .collect();
            if !same.is_empty() {
                Ok(same)
            } else if b.result.variants.len() == 1 && c.result.variants.len() == 1 {
                Ok(vec![(c.result.variants[0].name.clone(), 0, 0)])
            } else {
                bail!(
                    "experiments {} and {} share no variant name: pick variants with REF:VARIANT",
                    b.id,
                    c.id
                )
            }
        }
    }
}

/// Two stored variants as one two-variant result, so bench's analysis and
/// reports apply unchanged.
fn side_by_side(b: &Stored, bi: usize, c: &Stored, ci: usize) -> ExperimentResult {
    let mut bv = b.result.variants[bi].clone();
    let mut cv = c.result.variants[ci].clone();
    bv.name = format!("{}@{}", bv.name, b.id);
    cv.name = format!("{}@{}", cv.name, c.id);
    fn pick(s: &Stored, i: usize, as_idx: usize) -> impl Iterator<Item = crate::sample::Sample> + '_ {
        s.result
            .samples
            .iter()
            .filter(move |x| x.variant == i)
            .cloned()
            .map(move |mut x| {
                x.variant = as_idx;
                x
            })
    }
    ExperimentResult {
        variants: vec![bv, cv],
        samples: pick(b, bi, 0).chain(pick(c, ci, 1)).collect(),
        stopped: "completed".into(),
    }
}

pub fn compare(args: &CompareArgs) -> Result<i32> {
    report::export::check(&[&args.export_json, &args.export_markdown])?;
    let mut store = open(&args.store)?;
    let (bref, bvar) = split_ref(&args.baseline);
    let (cref, cvar) = split_ref(&args.candidate);
    let b = store.load_ref(bref)?;
    let c = store.load_ref(cref)?;
    let mut markdown = String::new();
    let mut docs = Vec::new();
    let mut text = String::new();
    for (_, bi, ci) in pairs(&b, bvar, &c, cvar)? {
        let result = side_by_side(&b, bi, &c, ci);
        let analysis = analyze(&result);
        text += &report::terminal::render(&result, &analysis);
        markdown += &report::markdown::render(&analysis);
        docs.push(serde_json::json!({ "variants": analysis.variants }));
    }
    if let Some(p) = &args.export_markdown {
        report::write_export(p, markdown.as_bytes())?;
    }
    if let Some(p) = &args.export_json {
        let doc = serde_json::json!({ "schema": "coldstart.compare/1", "baseline": b.id, "candidate": c.id, "pairs": docs });
        report::write_export(p, (serde_json::to_string_pretty(&doc)? + "\n").as_bytes())?;
    }
    out!("{text}")?;
    Ok(0)
}

pub fn gate(args: &GateArgs) -> Result<i32> {
    let fail = gate::parse_percent("--max-regression", &args.max_regression)?;
    let warn = args
        .warn
        .as_deref()
        .map(|w| gate::parse_percent("--warn", w))
        .transpose()?;
    if warn.is_some_and(|w| w >= fail) {
        bail!(
            "--warn ({}) must be below --max-regression ({})",
            args.warn.as_deref().unwrap_or(""),
            args.max_regression
        );
    }
    let thresholds = Thresholds { fail, warn };
    report::export::check(&[&args.markdown])?;
    let mut store = open(&args.store)?;
    let (bref, bvar) = split_ref(&args.baseline);
    let (cref, cvar) = split_ref(&args.candidate);
    let b = store.load_ref(bref)?;
    let c = store.load_ref(cref)?;
    let rows: Vec<GateRow> = pairs(&b, bvar, &c, cvar)?
        .into_iter()
        .map(|(name, bi, ci)| gate::row(&name, &b.result.ready_ms(bi), &c.result.ready_ms(ci), thresholds))
        .collect();
    let md = report::gate::render(&rows, thresholds, b.id, c.id);
    if let Some(p) = &args.markdown {
        report::write_export(p, md.as_bytes())?;
    }
    out!("{md}")?;
    Ok(if rows.iter().any(|r| r.status == Status::Fail) {
        1
    } else {
        0
    })
}
