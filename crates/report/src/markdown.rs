//! Markdown export: the same table as the terminal, fit for a pull request.

use super::format::{comparison, detectable, ms};
use super::format::{median_with_ci, tail};
use coldstart_core::analysis::Analysis;

pub fn render(analysis: &Analysis) -> String {
    let mut out = String::from(
        "| variant | runs | min | p50 [95% CI] | p90 | p99 | max | mean ± sd | outliers |\n\
         |:--|--:|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for v in &analysis.variants {
        let name = escape(&v.name);
        match &v.ready_ms {
            Some(s) => out.push_str(&format!(
                "| {name} | {} | {} | {} | {} | {} | {} | {} ± {} | {} |\n",
                v.ok_runs,
                ms(s.min),
                median_with_ci(s),
                tail(s.p90, s.p90_reliable),
                tail(s.p99, s.p99_reliable),
                ms(s.max),
                ms(s.mean),
                ms(s.sd),
                s.outliers
            )),
            None => out.push_str(&format!("| {name} | 0 | no successful run | | | | | | |\n")),
        }
    }
    let base = analysis
        .variants
        .first()
        .map(|v| escape(&v.name))
        .unwrap_or_default();
    let deltas: Vec<String> = analysis
        .variants
        .iter()
        .skip(1)
        .filter_map(|v| {
            let c = v.vs_baseline.as_ref()?;
            let power = detectable(c).map(|d| format!(" ({d})")).unwrap_or_default();
            let against = v.baseline.as_deref().map_or_else(|| base.clone(), escape);
            let raw_base = v
                .baseline
                .as_deref()
                .or(analysis.variants.first().map(|b| b.name.as_str()))
                .unwrap_or("");
            Some(format!(
                "- **{}** vs {against}: {}{}{power}",
                escape(&v.name),
                escape(&super::terminal::failures(analysis, v, raw_base)),
                comparison(c)
            ))
        })
        .collect();
    if !deltas.is_empty() {
        out.push('\n');
        out.push_str(&deltas.join("\n"));
        out.push('\n');
    }
    out.push_str(&super::fleet::markdown(analysis));
    if let Some(rows) = super::sweep::cells(analysis) {
        out.push('\n');
        for (i, r) in rows.iter().enumerate() {
            let cells: Vec<String> = r.iter().map(|c| escape(c)).collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
            if i == 0 {
                out.push_str(&format!("|{}\n", ":--|".repeat(r.len())));
            }
        }
        for line in super::sweep::best_lines(analysis) {
            out.push_str(&format!("\n- {}", escape(&line)));
        }
        out.push('\n');
    }
    let what = if super::terminal::measured(analysis) == "Init Duration" {
        "Init Duration"
    } else {
        "Spawn → ready"
    };
    out.push_str(&format!(
        "\n{what}. `*`: tail quantile from too few runs to be reliable.\n"
    ));
    if let Some((header, rows)) = super::terminal::mark_cells(analysis) {
        // The marks (checkpoints, log marks, Lambda's instants), as in the terminal.
        if super::terminal::on_service(analysis) {
            out.push_str(&format!("\nMarks ({}):\n\n", super::terminal::MARKS_ON_SERVICE));
        } else {
            out.push_str("\nMarks (since spawn):\n\n");
        }
        out.push_str(&table(&header, &rows, 3..5));
    }
    if let Some((header, rows)) = super::terminal::phase_cells(analysis) {
        out.push_str("\nPhases (engine events; each run's add up to its spawn → ready):\n\n");
        out.push_str(&table(&header, &rows, 2..5));
        for line in super::terminal::cover_lines(analysis).lines() {
            out.push_str(&format!("\n- {}", escape(line.trim())));
        }
        out.push('\n');
    }
    let read = super::read_set::lines(analysis);
    if !read.is_empty() {
        let title = super::read_set::TITLE;
        out.push_str(&format!("\n{}{}:\n", title[..1].to_uppercase(), &title[1..]));
        for line in read {
            out.push_str(&format!("\n- {}", escape(&line)));
        }
        out.push('\n');
    }
    out
}

/// A Markdown table, the columns in `right` right-aligned.
fn table(header: &[String], rows: &[Vec<String>], right: std::ops::Range<usize>) -> String {
    let line = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| escape(c)).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let align: Vec<&str> = (0..header.len())
        .map(|i| if right.contains(&i) { "--:" } else { ":--" })
        .collect();
    let mut out = line(header);
    out.push_str(&format!("|{}|\n", align.join("|")));
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('|', "\\|")
}
