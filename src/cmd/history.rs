//! The commands over stored experiments: history, show, compare, gate.

use super::stored::{explanation, open};
use crate::flags::{CompareArgs, GateArgs, HistoryArgs, ShowArgs};
use anyhow::{bail, Context, Result};
use coldstart_core::analysis::{analyze, analyze_sweep};
use coldstart_core::config;
use coldstart_core::experiment::ExperimentResult;
use coldstart_core::out::{out, outln};
use coldstart_core::stats::{self, Design, Ratio};
use coldstart_core::store::reference::{Reference, Selector};
use coldstart_core::store::{Filter, Store, Stored};
use coldstart_explain::{Explanation, ADAPTED, ARMS, TRACED, UNTRACED};
use coldstart_report::gate::{self, Limits, Regression, Side, Status};
use coldstart_report::json::Settings;

pub fn history(args: &HistoryArgs) -> Result<i32> {
    let mut store = open(&args.store)?;
    // `--target agent[heap=64m]`: the store filters by the name, the values here.
    let selector = args.target.as_deref().map(Selector::parse).transpose()?;
    let points = selector.as_ref().filter(|s| s.has_params());
    let mut listed = store.list(&Filter {
        target: selector.as_ref().map_or(args.target.clone(), |s| s.name.clone()),
        commit: args.commit.clone(),
        limit: points.is_none().then_some(args.limit),
    })?;
    if let Some(sel) = points {
        listed.retain(|l| l.variants.iter().any(|v| sel.matches_name(v)));
        listed.truncate(args.limit);
    }
    // A fleet experiment's shards: how many of its N are done.
    let shards = listed
        .iter()
        .map(|l| match &l.fleet {
            Some(_) => Ok(store
                .fleet(l.id)?
                .map(|r| coldstart_report::history::FleetShards::of(&r))),
            None => Ok(None),
        })
        .collect::<Result<Vec<_>>>()?;
    if args.json {
        outln!("{}", coldstart_report::history::json(&listed, &shards)?)?;
    } else if listed.is_empty() {
        outln!("no stored experiment matches (store: {})", store.location)?;
    } else {
        out!("{}", coldstart_report::history::render(&listed, &shards))?;
    }
    Ok(0)
}

pub fn show(args: &ShowArgs) -> Result<i32> {
    args.export.check_dirs()?;
    let mut store = open(&args.store)?;
    let id = store.resolve(&args.experiment)?;
    let mut stored = store.load(id)?;
    // `show REF:VARIANT[heap=64m]`: only the variants picked.
    if let Some(sel) = Reference::parse(&args.experiment)?.variant {
        let picked = select(&stored, &sel)?;
        stored.result = subset(&stored.result, &picked);
    }
    let settings: Settings = serde_json::from_str(&stored.settings_json)?;
    let analysis = analyze_sweep(
        &stored.result,
        args.noise.unwrap_or(settings.noise),
        settings.sweep.as_ref(),
    );
    // explain A vs B stored its builds' explanations and their attribution.
    if let Some(ab) = explanation_ab(&mut store, id)? {
        let mut exports = args.export.exports();
        if let Some(path) = exports.json.take() {
            coldstart_report::write_export(&path, (serde_json::to_string_pretty(&ab.0)? + "\n").as_bytes())?;
        }
        exports.write_experiment(&stored.result, &analysis, &settings)?;
        outln!(
            "experiment {} ({})",
            stored.id,
            coldstart_report::history::describe(&stored)
        )?;
        out!("{}", ab.1)?;
        return Ok(0);
    }
    let explanation = explanation(&mut store, id)?;
    // Exports first, printing last (see out.rs). An explain's JSON is the
    // explanation it exported when it ran (its samples are `--export-csv`'s).
    let mut exports = args.export.exports();
    if let Some(e) = &explanation {
        if let Some(path) = exports.json.take() {
            coldstart_report::write_export(&path, (serde_json::to_string_pretty(e)? + "\n").as_bytes())?;
        }
    }
    exports.write_experiment(&stored.result, &analysis, &settings)?;
    exports.write_html(&super::stored::single(
        &stored,
        &settings,
        &analysis,
        explanation.as_ref(),
    ))?;
    out!(
        "{}",
        coldstart_report::width::fit(&format!(
            "experiment {} ({})\n",
            stored.id,
            coldstart_report::history::describe(&stored)
        ))
    )?;
    if args.meta {
        outln!("{}", serde_json::to_string_pretty(&stored.meta)?)?;
    }
    match explanation {
        // An explain is shown as it printed at the end of its run.
        Some(e) => out!("{}", coldstart_report::explain::render(&e))?,
        // A tune's experiment is shown as its table (the same rows tune printed).
        None => match settings
            .of_kind
            .tune
            .as_ref()
            .and_then(|t| coldstart_tune::stored::tuned(t, &stored.result, &analysis, settings.noise))
        {
            Some(t) => out!("{}", coldstart_report::tuned::terminal(&t))?,
            None => out!(
                "{}",
                coldstart_report::terminal::render(&stored.result, &analysis)
            )?,
        },
    }
    Ok(0)
}

/// The stored document of an `explain A vs B` (experiment `id`) and its
/// report as it printed at the end of its run; None for anything else.
fn explanation_ab(store: &mut Store, id: i64) -> Result<Option<(serde_json::Value, String)>> {
    let Some(json) = store.explanation(id)? else {
        return Ok(None);
    };
    let doc: serde_json::Value = serde_json::from_str(&json)
        .with_context(|| format!("experiment {id}: its stored explanation is unreadable"))?;
    // /1 documents read into the /2 type (its new fields have defaults).
    if !matches!(
        doc["schema"].as_str(),
        Some("coldstart.explain-ab/1" | coldstart_explain::attribution::SCHEMA)
    ) {
        return Ok(None);
    }
    let unreadable = || format!("experiment {id}: its stored A vs B explanation is unreadable");
    let att: coldstart_explain::attribution::Attribution =
        serde_json::from_value(doc["attribution"].clone()).with_context(unreadable)?;
    let mut text = String::new();
    for name in [&att.a, &att.b] {
        let e: Explanation =
            serde_json::from_value(doc["builds"][name.as_str()].clone()).with_context(unreadable)?;
        text += &coldstart_report::explain::render(&e);
        text += "\n";
    }
    text += &coldstart_report::explain_ab::render(&att);
    Ok(Some((doc, text)))
}

/// Two explains' overheads (traced ÷ untraced, adapted ÷ untraced), each with
/// the 95 % CI from its own interleaved runs; empty unless both are explains.
fn overheads(store: &mut Store, b: &Stored, c: &Stored) -> Result<(String, serde_json::Value)> {
    if store.explanation(b.id)?.is_none() || store.explanation(c.id)?.is_none() {
        return Ok((String::new(), serde_json::Value::Null));
    }
    let ratio = |s: &Stored, arm: usize| {
        let v = |name: &str| s.result.variants.iter().position(|v| v.name == name);
        let (u, a) = (v(ARMS[UNTRACED])?, v(ARMS[arm])?);
        stats::ratio(
            &s.result.ready_ms(u),
            &s.result.ready_ms(a),
            coldstart_explain::CONFIDENCE,
        )
    };
    let mut text = String::from("overheads (each against its own untraced runs)\n");
    let mut doc = serde_json::Map::new();
    for (arm, what) in [(TRACED, "tracer"), (ADAPTED, "adapters'")] {
        let show = |r: &Option<Ratio>| {
            r.as_ref().map_or_else(
                || "—".to_string(),
                |r| coldstart_report::explain::overhead(r.estimate, r.ci),
            )
        };
        let (rb, rc) = (ratio(b, arm), ratio(c, arm));
        text += &format!(
            "  {what} overhead: {} @{} → {} @{}\n",
            show(&rb),
            b.id,
            show(&rc),
            c.id
        );
        doc.insert(
            ARMS[arm].to_string(),
            serde_json::json!({ "baseline": rb, "candidate": rc }),
        );
    }
    Ok((text, serde_json::Value::Object(doc)))
}

/// Two stored explains' attribution of their difference (untraced arms,
/// per-run phase estimates); None unless both are explains.
fn attribution(
    store: &mut Store,
    b: &Stored,
    c: &Stored,
) -> Result<Option<coldstart_explain::attribution::Attribution>> {
    if !is_explain(b) || !is_explain(c) {
        return Ok(None);
    }
    let (Some(eb), Some(ec)) = (explanation(store, b.id)?, explanation(store, c.id)?) else {
        return Ok(None);
    };
    let untraced = |s: &Stored| s.result.ready_ms(UNTRACED);
    let (ub, uc) = (untraced(b), untraced(c));
    let (nb, nc) = (format!("@{}", b.id), format!("@{}", c.id));
    let side = |name, untraced_ms, explanation| coldstart_explain::attribution::Side {
        name,
        untraced_ms,
        explanation,
    };
    Ok(Some(coldstart_explain::attribution::attribute(
        &side(&nb, &ub, &eb),
        &side(&nc, &uc, &ec),
    )))
}

/// The variants of `s` that `sel` picks; an error naming what it has when none.
fn select(s: &Stored, sel: &Selector) -> Result<Vec<usize>> {
    let picked: Vec<usize> = (0..s.result.variants.len())
        .filter(|&i| sel.matches(&s.result.variants[i]))
        .collect();
    if picked.is_empty() {
        let names: Vec<&str> = s.result.variants.iter().map(|v| v.name.as_str()).collect();
        bail!(
            "experiment {} has no variant '{sel}' (it has: {})",
            s.id,
            names.join(", ")
        );
    }
    Ok(picked)
}

/// The picked variants of a result, renumbered (for `show REF:VARIANT`).
fn subset(r: &ExperimentResult, picked: &[usize]) -> ExperimentResult {
    ExperimentResult {
        variants: picked.iter().map(|&i| r.variants[i].clone()).collect(),
        samples: r
            .samples
            .iter()
            .filter_map(|x| {
                let at = picked.iter().position(|&i| i == x.variant)?;
                let mut x = x.clone();
                x.variant = at;
                Some(x)
            })
            .collect(),
        stopped: r.stopped,
        design: r.design,
        load: r.load.clone(),
        fleet: r.fleet.clone(),
    }
}

/// Pairs of (name, baseline variant index, candidate variant index). A side
/// with a selector picks its variants (a selector on one side applies to
/// both); one variant each makes one pair; otherwise variants pair up by what
/// the selectors leave open (the name, and the values not named), so
/// `latest:[heap=64m]` against `latest:[heap=96m]` pairs each variant with itself.
fn pairs(
    b: &Stored,
    bsel: Option<&Selector>,
    c: &Stored,
    csel: Option<&Selector>,
) -> Result<Vec<(String, usize, usize)>> {
    let (bsel, csel) = match (bsel, csel) {
        (None, None) => return pairs_by_name(b, c),
        (Some(x), None) => (x, x),
        (None, Some(y)) => (y, y),
        (Some(x), Some(y)) => (x, y),
    };
    let (bs, cs) = (select(b, bsel)?, select(c, csel)?);
    let label = |bi: usize, ci: usize| {
        let (x, y) = (&b.result.variants[bi].name, &c.result.variants[ci].name);
        if x == y {
            x.clone()
        } else {
            format!("{x} → {y}")
        }
    };
    if let ([bi], [ci]) = (&bs[..], &cs[..]) {
        return Ok(vec![(label(*bi, *ci), *bi, *ci)]);
    }
    let named = bsel.name.is_some() || csel.name.is_some();
    let key = |v: &coldstart_core::experiment::Variant| {
        let open: Vec<(String, String)> = v
            .params
            .iter()
            .filter(|(k, _)| !bsel.params.iter().chain(&csel.params).any(|(n, _)| n == k))
            .cloned()
            .collect();
        ((!named).then(|| v.base_name().to_string()), open)
    };
    let out: Vec<_> = cs
        .iter()
        .filter_map(|&ci| {
            let k = key(&c.result.variants[ci]);
            let bi = *bs.iter().find(|&&bi| key(&b.result.variants[bi]) == k)?;
            Some((label(bi, ci), bi, ci))
        })
        .collect();
    if out.is_empty() {
        bail!(
            "'{bsel}' of experiment {} and '{csel}' of experiment {} pick variants that do not pair up: name one variant on each side",
            b.id,
            c.id
        );
    }
    Ok(out)
}

/// Without selectors: variants with equal names, else the only variant of each.
fn pairs_by_name(b: &Stored, c: &Stored) -> Result<Vec<(String, usize, usize)>> {
    let same: Vec<_> = c
        .result
        .variants
        .iter()
        .enumerate()
        .filter_map(|(ci, v)| {
            let bi = b.result.variants.iter().position(|x| x.name == v.name)?;
            Some((v.name.clone(), bi, ci))
        })
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

/// Two variants of one experiment share its design; two experiments were separate invocations.
fn design_of(b: &Stored, c: &Stored) -> Design {
    if b.id == c.id {
        b.result.design
    } else {
        Design::Separate
    }
}

/// Refuse to compare a stored variant with itself: it would always pass.
fn refuse_self(b: &Stored, bi: usize, c: &Stored, ci: usize) -> Result<()> {
    if b.id == c.id && bi == ci {
        bail!(
            "baseline and candidate are the same runs (experiment {}, variant '{}'): compare two \
             experiments (e.g. latest~1 and latest) or two variants of one (REF:A and REF:B)",
            b.id,
            b.result.variants[bi].name
        );
    }
    Ok(())
}

/// Two stored variants as one two-variant result, so bench's analysis and
/// reports apply unchanged.
fn side_by_side(b: &Stored, bi: usize, c: &Stored, ci: usize) -> ExperimentResult {
    let mut bv = b.result.variants[bi].clone();
    let mut cv = c.result.variants[ci].clone();
    bv.name = format!("{}@{}", bv.name, b.id);
    cv.name = format!("{}@{}", cv.name, c.id);
    // A pair, not a sweep: the values are in the names; without params the
    // candidate is compared with the baseline whatever their points.
    bv.params.clear();
    cv.params.clear();
    // Shard k of one experiment and shard k of another are not one machine
    // block: across experiments the runs are compared as separate invocations.
    let same = b.id == c.id;
    let pick = |s: &Stored, i: usize, as_idx: usize| -> Vec<coldstart_core::sample::Sample> {
        s.result
            .samples
            .iter()
            .filter(|x| x.variant == i)
            .cloned()
            .map(|mut x| {
                x.variant = as_idx;
                if !same {
                    x.shard = None;
                }
                x
            })
            .collect()
    };
    ExperimentResult {
        variants: vec![bv, cv],
        samples: [pick(b, bi, 0), pick(c, ci, 1)].concat(),
        stopped: Some(coldstart_core::experiment::StopReason::Completed),
        design: design_of(b, c),
        // Two invocations, each with its own load: shown with each, not with the pair.
        load: None,
        // Two variants of one fleet experiment ran on the same machines: their
        // shards (kept on each sample) block the comparison, and the record
        // names the machines. Two separate experiments share no machine block.
        fleet: (b.id == c.id).then(|| b.result.fleet.clone()).flatten(),
    }
}

pub fn compare(args: &CompareArgs) -> Result<i32> {
    coldstart_report::export::check(&[
        &args.export.export_json,
        &args.export.export_markdown,
        &args.export.export_html,
    ])?;
    let mut store = open(&args.store)?;
    let (bref, cref) = (
        Reference::parse(&args.baseline)?,
        Reference::parse(&args.candidate)?,
    );
    let b = store.load_ref(&bref.experiment)?;
    let c = store.load_ref(&cref.experiment)?;
    let mut markdown = String::new();
    let mut docs = Vec::new();
    let mut text = String::new();
    let mut shown = Vec::new();
    let pairs = pairs(&b, bref.variant.as_ref(), &c, cref.variant.as_ref())?;
    for (_, bi, ci) in &pairs {
        refuse_self(&b, *bi, &c, *ci)?;
    }
    for (_, bi, ci) in pairs {
        let result = side_by_side(&b, bi, &c, ci);
        let analysis = analyze(&result, args.noise.noise);
        // Not a refusal (a renamed binary is a fair comparison), but never silent.
        let different = different_commands(&result);
        text += &different;
        text += &coldstart_report::terminal::render(&result, &analysis);
        // Markdown joins plain lines: one hard break per line.
        markdown += &different.replace('\n', "  \n");
        markdown += &coldstart_report::markdown::render(&analysis);
        markdown += "\n";
        let mut doc = serde_json::json!({ "variants": analysis.variants });
        if let [bv, cv] = &result.variants[..] {
            if calibration(bv, cv).is_some() {
                doc["calibration"] = serde_json::Value::Bool(true);
            }
        }
        docs.push(doc);
        shown.push((result, analysis));
    }
    let (mut overhead_text, overhead_doc) = overheads(&mut store, &b, &c)?;
    // Two explains: where the difference comes from, as `explain A vs B` prints it.
    let attribution = attribution(&mut store, &b, &c)?;
    if let Some(att) = &attribution {
        overhead_text += &coldstart_report::explain_ab::render(att);
    }
    if !overhead_text.is_empty() {
        markdown += &format!("```\n{overhead_text}```\n");
    }
    if let Some(p) = &args.export.export_markdown {
        coldstart_report::write_export(p, markdown.as_bytes())?;
    }
    if let Some(p) = &args.export.export_html {
        let html = super::stored::comparison(&b, &c, &shown);
        coldstart_report::write_export(p, html.as_bytes())?;
    }
    if let Some(p) = &args.export.export_json {
        let mut doc = serde_json::json!({ "schema": "coldstart.compare/1", "baseline": b.id, "candidate": c.id, "pairs": docs });
        if !overhead_doc.is_null() {
            doc["overheads"] = overhead_doc;
        }
        if let Some(att) = &attribution {
            doc["attribution"] = serde_json::to_value(att)?;
        }
        coldstart_report::write_export(p, (serde_json::to_string_pretty(&doc)? + "\n").as_bytes())?;
    }
    out!("{text}{overhead_text}")?;
    Ok(0)
}

/// A note when the two sides ran different commands or readiness.
fn different_commands(result: &ExperimentResult) -> String {
    let [b, c] = &result.variants[..] else {
        return String::new();
    };
    if let Some(note) = calibration(b, c) {
        return note;
    }
    let (bc, cc) = (b.target.display_command(), c.target.display_command());
    let mut note = String::new();
    if bc != cc {
        note += &format!(
            "note: the two sides ran different commands:\n  {}: {bc}\n  {}: {cc}\n",
            b.name, c.name
        );
    }
    if b.readiness != c.readiness {
        note += &format!(
            "note: the two sides used different readiness: {} ({}) vs {} ({})\n",
            b.readiness, b.name, c.readiness, c.name
        );
    }
    note
}

/// The emulator's Init Duration against the service's for the same function: a
/// calibration of the emulator, which the commands' difference is the point of.
fn calibration(
    b: &coldstart_core::experiment::Variant,
    c: &coldstart_core::experiment::Variant,
) -> Option<String> {
    let on_service = |v: &coldstart_core::experiment::Variant| {
        v.target.argv.first().map(String::as_str) == Some(coldstart_core::target::LAMBDA_SERVICE)
    };
    let emulated = |v: &coldstart_core::experiment::Variant| {
        v.readiness == coldstart_core::target::LAMBDA_INIT && !on_service(v)
    };
    let (emulator, service) = match (on_service(b), on_service(c)) {
        (false, true) if emulated(b) => (b, c),
        (true, false) if emulated(c) => (c, b),
        _ => return None,
    };
    Some(format!(
        "calibration: the emulator ({}) against the service ({}): the service's Init Duration \
         also holds its microVM's start, the code and layers' download and unpack, and its own \
         runtime build; the shift below is how far the emulator is from the service for this \
         function (measured apart, so no verdict)\n",
        emulator.name, service.name
    ))
}

pub fn gate(args: &GateArgs) -> Result<i32> {
    let root = config::project_root();
    let cfg = config::load(&root)?;
    let flag = |name: &str, v: &Option<String>| -> Result<Option<Regression>> {
        v.as_deref().map(|s| Regression::parse(name, s)).transpose()
    };
    let flag_limits = Limits {
        max_regression: flag("--max-regression", &args.max_regression)?,
        warn: flag("--warn", &args.warn)?,
        max_ms: args
            .max
            .as_deref()
            .map(|s| {
                gate::parse_ms(s)
                    .ok_or_else(|| anyhow::anyhow!("bad --max '{s}': write a duration such as 12s or 800ms"))
            })
            .transpose()?,
        margin: args.warn_margin,
        max_failures: args
            .max_failures
            .as_deref()
            .map(gate::FailureAllowance::parse)
            .transpose()?,
    };
    coldstart_report::export::check(&[&args.export.export_markdown, &args.export.export_html])?;
    let mut store = open(&args.store)?;
    let Some(baseline) = args.baseline.as_deref() else {
        return gate_alone(args, flag_limits, cfg.as_ref(), &mut store);
    };
    let (bref, cref) = (Reference::parse(baseline)?, Reference::parse(&args.candidate)?);
    let b = store.load_ref(&bref.experiment)?;
    let c = store.load_ref(&cref.experiment)?;
    let (bvar, cvar) = (bref.variant.as_ref(), cref.variant.as_ref());
    let mut pairs = pairs(&b, bvar, &c, cvar)?;
    // Two explains: the gate judges the program (the untraced arm), not the
    // tracer's or the adapters' cost, unless an arm is named.
    if is_explain(&b) && is_explain(&c) && bvar.is_none() && cvar.is_none() {
        pairs.retain(|(name, _, _)| name == ARMS[UNTRACED]);
    }
    let mut rows = Vec::new();
    for (name, bi, ci) in pairs {
        refuse_self(&b, bi, &c, ci)?;
        let limits = target_limits(&name, flag_limits, cfg.as_ref())?;
        if limits.max_regression.is_none() && limits.max_ms.is_none() {
            bail!(
                "no limit for target '{name}': give --max-regression (5% or 300ms) and/or --max (12s), \
                 or set max_regression / max under [targets.{name}] in coldstart.toml"
            );
        }
        if design_of(&b, &c) == Design::Separate
            && limits.max_regression.is_some()
            && !args.across_invocations
        {
            bail!(
                "--max-regression across two separate invocations (experiments {} and {}) cannot be judged: the drift \
                 between invocations is not in either's spread. Measure both in one interleaved bench \
                 (`coldstart bench --name base -- … --name pr -- …`, then --baseline latest:base --candidate latest:pr), \
                 use --max for an absolute limit, or pass --across-invocations to decide on the estimate alone",
                b.id,
                c.id
            );
        }
        if let (Some(w), Some(f)) = (limits.warn, limits.max_regression) {
            if w.ms(100.0) >= f.ms(100.0) && std::mem::discriminant(&w) == std::mem::discriminant(&f) {
                bail!(
                    "--warn ({}) must be below --max-regression ({})",
                    w.describe(),
                    f.describe()
                );
            }
        }
        rows.push(gate::row(
            &name,
            &side(&b, bi),
            &side(&c, ci),
            design_of(&b, &c),
            args.noise.noise,
            limits,
        ));
    }
    let md = coldstart_report::gate::render(&rows, Some(b.id), c.id);
    if let Some(p) = &args.export.export_markdown {
        coldstart_report::write_export(p, md.as_bytes())?;
    }
    if let Some(p) = &args.export.export_html {
        coldstart_report::write_export(
            p,
            super::stored::gate(&b, &c, &rows, args.noise.noise)?.as_bytes(),
        )?;
    }
    out!("{md}")?;
    Ok(if rows.iter().any(|r| r.status == Status::Fail) {
        1
    } else {
        0
    })
}

/// `gate --max … ` without `--baseline`: each candidate target against its
/// absolute limits only.
fn gate_alone(
    args: &GateArgs,
    flags: Limits,
    cfg: Option<&config::Config>,
    store: &mut Store,
) -> Result<i32> {
    if args.export.export_html.is_some() {
        bail!("--export-html draws the candidate against a baseline: give --baseline REF (the Markdown needs none)");
    }
    let cref = Reference::parse(&args.candidate)?;
    let c = store.load_ref(&cref.experiment)?;
    let cvar = cref.variant.as_ref();
    let mut pairs = pairs(&c, cvar, &c, cvar)?;
    if is_explain(&c) && cvar.is_none() {
        pairs.retain(|(name, _, _)| name == ARMS[UNTRACED]);
    }
    let mut rows = Vec::new();
    for (name, _, ci) in pairs {
        let limits = target_limits(&name, flags, cfg)?;
        if limits.max_regression.is_some() || limits.warn.is_some() {
            bail!(
                "--max-regression and --warn compare target '{name}' with a baseline: give --baseline REF, or judge the candidate on --max alone"
            );
        }
        if limits.max_ms.is_none() {
            bail!(
                "no limit for target '{name}' without a baseline: give --max (12s), or set max under [targets.{name}] in coldstart.toml"
            );
        }
        rows.push(gate::alone(&name, &side(&c, ci), limits));
    }
    let md = coldstart_report::gate::render(&rows, None, c.id);
    if let Some(p) = &args.export.export_markdown {
        coldstart_report::write_export(p, md.as_bytes())?;
    }
    out!("{md}")?;
    Ok(if rows.iter().any(|r| r.status == Status::Fail) {
        1
    } else {
        0
    })
}

fn side(s: &Stored, v: usize) -> Side {
    let measured = s
        .result
        .samples
        .iter()
        .filter(|x| x.variant == v && !x.warmup)
        .count();
    let ready_ms = s.result.ready_ms(v);
    Side {
        experiment: s.id,
        runs: ready_ms.len(),
        failed_runs: measured - ready_ms.len(),
        ready_ms,
        stopped: s.result.stopped,
        by_shard: by_shard(&s.result, v),
        shards: s
            .result
            .fleet
            .as_ref()
            .map(|f| coldstart_report::history::FleetShards::of(f).describe()),
    }
}

/// Variant `v`'s ready times (ms) per shard, when its runs come from two or
/// more shards of a fleet experiment; empty otherwise.
fn by_shard(r: &ExperimentResult, v: usize) -> Vec<(u32, Vec<f64>)> {
    let mut out: Vec<(u32, Vec<f64>)> = Vec::new();
    for x in r.samples.iter().filter(|x| x.variant == v && !x.warmup) {
        let Some(k) = x.shard else { continue };
        let at = match out.iter().position(|(s, _)| *s == k) {
            Some(at) => at,
            None => {
                out.push((k, Vec::new()));
                out.len() - 1
            }
        };
        if let Some(ns) = x.ready_ns.filter(|_| x.ok()) {
            out[at].1.push(ns as f64 / 1e6);
        }
    }
    out.sort_by_key(|(k, _)| *k);
    if out.len() < 2 {
        out.clear();
    }
    out
}

/// Flags win; coldstart.toml's [targets.NAME] fills in what they leave out.
fn target_limits(name: &str, flags: Limits, cfg: Option<&config::Config>) -> Result<Limits> {
    // A sweep point's limits are its variant's: [targets.agent] for agent[heap=64m].
    let base = name.split_once('[').map_or(name, |(b, _)| b);
    let Some(t) = cfg.and_then(|c| c.targets.get(name).or_else(|| c.targets.get(base))) else {
        return Ok(flags);
    };
    let file = |what: &str, v: &Option<String>| -> Result<Option<Regression>> {
        v.as_deref()
            .map(|s| Regression::parse(&format!("{what} of [targets.{name}] in coldstart.toml"), s))
            .transpose()
    };
    Ok(Limits {
        max_regression: flags
            .max_regression
            .or(file("max_regression", &t.max_regression)?),
        warn: flags.warn.or(file("warn", &t.warn)?),
        max_ms: match (flags.max_ms, &t.max) {
            (Some(m), _) => Some(m),
            (None, Some(s)) => Some(gate::parse_ms(s).ok_or_else(|| {
                anyhow::anyhow!(
                    "bad max '{s}' of [targets.{name}] in coldstart.toml: write a duration such as 12s"
                )
            })?),
            (None, None) => None,
        },
        margin: flags.margin,
        max_failures: match (flags.max_failures, &t.max_failures) {
            (Some(a), _) => Some(a),
            (None, Some(s)) => Some(
                gate::FailureAllowance::parse(s)
                    .with_context(|| format!("max_failures of [targets.{name}] in coldstart.toml"))?,
            ),
            (None, None) => None,
        },
    })
}

/// An explain's experiment: its variants are the arms.
fn is_explain(s: &Stored) -> bool {
    s.kind == Some(coldstart_core::experiment::Kind::Explain)
}
