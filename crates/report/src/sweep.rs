//! The sweep table: a row per parameter point, a column group per variant (its
//! median, and how it compares with the baseline at the same point and, with
//! `--compare-along`, with its own first value), then the best-value lines.
//! Shared by the terminal and Markdown reports; empty when nothing was swept.

use crate::format::median_with_ci;
use crate::format::{ms, signed_percent};
use coldstart_core::analysis::{Analysis, Best, BestWhy, VariantAnalysis};
use coldstart_core::stats::{percent, Comparison, Verdict};

/// The table as rows of cells (header first), or None without a sweep.
pub fn cells(a: &Analysis) -> Option<Vec<Vec<String>>> {
    let swept: Vec<&VariantAnalysis> = a.variants.iter().filter(|v| !v.params.is_empty()).collect();
    let first = swept.first()?;
    let names: Vec<&str> = first.params.iter().map(|(k, _)| k.as_str()).collect();
    let mut points: Vec<&[(String, String)]> = Vec::new();
    let mut bases: Vec<&str> = Vec::new();
    for v in &swept {
        if !points.contains(&v.params.as_slice()) {
            points.push(&v.params);
        }
        if !bases.contains(&v.base.as_str()) {
            bases.push(&v.base);
        }
    }
    // With --compare-along: what the first point of a variant holds (`heap=64m`).
    let along = a
        .variants
        .iter()
        .find_map(|v| v.first.as_deref())
        .and_then(|f| a.variants.iter().find(|v| v.name == f))
        .map(|f| along_label(&f.params, &names, &a.variants));
    let mut header: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    for (i, b) in bases.iter().enumerate() {
        header.push(format!("{b} p50 [95% CI]"));
        if i > 0 {
            header.push(format!("{b} vs {}", bases[0]));
        }
        if let Some(first) = &along {
            header.push(format!("{b} vs {first}"));
        }
    }
    let mut rows = vec![header];
    for pt in &points {
        let mut row: Vec<String> = pt.iter().map(|(_, v)| v.clone()).collect();
        for (i, b) in bases.iter().enumerate() {
            let v = swept.iter().find(|v| v.base == *b && v.params.as_slice() == *pt);
            row.push(
                v.and_then(|v| v.ready_ms.as_ref())
                    .map_or_else(|| "—".into(), median_with_ci),
            );
            if i > 0 {
                row.push(
                    v.and_then(|v| v.vs_baseline.as_ref())
                        .map_or_else(|| "—".into(), short),
                );
            }
            if along.is_some() {
                row.push(
                    v.and_then(|v| v.vs_first.as_ref())
                        .map_or_else(|| "first".into(), short),
                );
            }
        }
        rows.push(row);
    }
    Some(rows)
}

/// The along parameter's first value, `heap=64m`: the parameter whose value is the
/// same at every first point (in a grid the other values vary by row).
fn along_label(first: &[(String, String)], names: &[&str], all: &[VariantAnalysis]) -> String {
    let firsts: Vec<&VariantAnalysis> = all
        .iter()
        .filter(|v| all.iter().any(|w| w.first.as_deref() == Some(v.name.as_str())))
        .collect();
    let fixed: Vec<(String, String)> = first
        .iter()
        .filter(|(k, x)| {
            names.contains(&k.as_str())
                && firsts
                    .iter()
                    .all(|f| f.params.iter().any(|(fk, fx)| fk == k && fx == x))
        })
        .cloned()
        .collect();
    short_point(if fixed.len() == 1 { &fixed } else { first })
}

fn short_point(params: &[(String, String)]) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A comparison in one cell: the verdict, the relative shift and its 95% CI.
pub fn short(c: &Comparison) -> String {
    let verdict = match c.verdict {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::Same => "~",
        Verdict::WithinNoise => "~ (noise)",
        Verdict::None => "no verdict",
    };
    match &c.relative {
        Some(r) => match r.ci {
            Some((lo, hi)) => format!(
                "{verdict} {} [{}, {}]",
                signed_percent(r.estimate),
                signed_percent(lo),
                signed_percent(hi)
            ),
            None => format!("{verdict} {}", signed_percent(r.estimate)),
        },
        None => verdict.to_string(),
    }
}

/// One line per resource parameter and variant (and setting of the others).
pub fn best_lines(a: &Analysis) -> Vec<String> {
    a.best.iter().map(best_line).collect()
}

fn best_line(b: &Best) -> String {
    let at = if b.others.is_empty() {
        String::new()
    } else {
        format!(" at {}", short_point(&b.others))
    };
    let head = format!(
        "best {} for {}{at}: {} (p50 {})",
        b.param,
        b.variant,
        b.value,
        ms(b.p50_ms)
    );
    let vs = || {
        b.vs_fastest
            .as_ref()
            .map(|c| format!("; vs it: {}", short(c)))
            .unwrap_or_default()
    };
    match b.why {
        BestWhy::CheapestAndFastest => format!("{head}: the cheapest value is the fastest"),
        BestWhy::Fastest => format!("{head}: the fastest; every cheaper value is measurably slower"),
        BestWhy::WithinNoise => format!(
            "{head}, the cheapest within {} of the fastest, {} (p50 {}){}",
            percent(b.noise),
            b.fastest,
            ms(b.fastest_p50_ms),
            vs()
        ),
        BestWhy::NoVerdict => format!(
            "best {} for {}{at}: none can be named yet — the runs give no verdict between the values (too few runs for an interval; --runs 6 or more); fastest by median {} (p50 {})",
            b.param,
            b.variant,
            b.fastest,
            ms(b.fastest_p50_ms)
        ),
        BestWhy::NotMeasurablySlower => format!(
            "{head}, the cheapest not measurably slower than the fastest, {} (p50 {}){}; more runs would tell them apart better",
            b.fastest,
            ms(b.fastest_p50_ms),
            vs()
        ),
    }
}
