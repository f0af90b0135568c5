//! Terminal output that fits: the width to fit (COLUMNS, else the terminal's),
//! tables that leave out their least useful columns and wrap cells to fit it,
//! and prose lines wrapped with a hanging indent. Without a terminal (output to a
//! file or pipe) and without COLUMNS nothing is changed.

use comfy_table::{ColumnConstraint, ContentArrangement, Table};

/// The narrowest width we lay out for: below it, tables cannot be readable anyway.
const MIN: usize = 40;

/// The width found by [`detect`]; None (no limit) until the binary calls it, so
/// the library and its tests lay out the same on every machine.
static WIDTH: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();

/// Find the width to fit, once per process (the binary calls this at start):
/// COLUMNS when set to a number, else the width of the terminal on stdout, else
/// None: no limit.
pub fn detect() {
    WIDTH.get_or_init(|| {
        if let Some(c) = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
        {
            return (c > 0).then_some(c.max(MIN));
        }
        // stdout only: reports printed to a pipe or file stay whole even when
        // stderr is a terminal.
        terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0).max(MIN))
    });
}

/// The width to fit output to (see [`detect`]).
pub fn columns() -> Option<usize> {
    WIDTH.get().copied().flatten()
}

fn widest(s: &str) -> usize {
    s.lines()
        .map(unicode_width::UnicodeWidthStr::width)
        .max()
        .unwrap_or(0)
}

/// Fit `t` to the terminal: hide the columns in `droppable` (in that order) while
/// it is too wide, then let comfy-table wrap cells. Returns the headers of the
/// columns left out.
pub fn fit_table(t: &mut Table, droppable: &[usize]) -> Vec<String> {
    fit_table_to(t, droppable, columns())
}

pub fn fit_table_to(t: &mut Table, droppable: &[usize], width: Option<usize>) -> Vec<String> {
    let Some(w) = width else {
        return Vec::new();
    };
    let mut hidden = Vec::new();
    for &c in droppable {
        if widest(&t.to_string()) <= w {
            break;
        }
        let name = t.header().and_then(|h| h.cell_iter().nth(c)).map(|c| c.content());
        if let Some(col) = t.column_mut(c) {
            col.set_constraint(ColumnConstraint::Hidden);
            hidden.extend(name);
        }
    }
    if widest(&t.to_string()) > w {
        t.set_width(u16::try_from(w).unwrap_or(u16::MAX))
            .set_content_arrangement(ContentArrangement::Dynamic);
    }
    hidden
}

/// The line saying which columns were left out, or nothing.
pub fn hidden_note(hidden: &[String]) -> String {
    if hidden.is_empty() {
        String::new()
    } else {
        format!(
            "  (left out to fit the terminal: {}; a wider terminal or COLUMNS=200 shows them)\n",
            hidden.join(", ")
        )
    }
}

/// Wrap every line wider than the terminal at spaces, continuing with the line's
/// indent plus four spaces. Table lines fitted by [`fit_table`] are never wider.
pub fn fit(text: &str) -> String {
    fit_to(text, columns())
}

pub fn fit_to(text: &str, width: Option<usize>) -> String {
    let Some(w) = width else {
        return text.to_string();
    };
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if unicode_width::UnicodeWidthStr::width(body) <= w {
            out.push_str(line);
            continue;
        }
        let indent: String = body.chars().take_while(|c| *c == ' ').collect();
        let rest = format!("{indent}    ");
        let opts = textwrap::Options::new(w)
            .initial_indent(&indent)
            .subsequent_indent(if rest.len() < w / 2 { &rest } else { &indent })
            .break_words(true)
            // `7.4e-7` and `--max-regression` are words, never split at their hyphens.
            .word_splitter(textwrap::WordSplitter::NoHyphenation);
        let wrapped = textwrap::wrap(body.trim_start(), opts);
        out.push_str(&wrapped.join("\n"));
        out.push_str(nl);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_prose_wraps_with_a_hanging_indent_and_short_lines_stay() {
        let text = "short\n  Δ b vs a: slower, shift +12.4 ms (+1405 %) [95% CI +1259 %, +1658 %], p = 7.4e-7 and more words here\n";
        let out = fit_to(text, Some(40));
        assert!(out.lines().all(|l| l.chars().count() <= 40), "{out}");
        assert!(out.starts_with("short\n  Δ b vs a:"));
        assert!(
            out.lines().nth(2).unwrap().starts_with("      "),
            "hanging indent: {out}"
        );
        assert_eq!(fit_to(text, None), text, "no terminal, no change");
        let path = format!("  {}", "/very/long/path".repeat(10));
        assert!(fit_to(&path, Some(40)).lines().all(|l| l.chars().count() <= 40));
    }

    #[test]
    fn tables_drop_columns_then_wrap() {
        let mut t = Table::new();
        t.load_preset(comfy_table::presets::UTF8_HORIZONTAL_ONLY);
        t.set_header(["variant", "p50 [95% CI]", "mean ± sd", "p99"]);
        t.add_row([
            "a-long-variant-name",
            "13.7 ms [12.1 ms, 17.7 ms]",
            "14.6 ms ± 2.53 ms",
            "18.8 ms*",
        ]);
        let hidden = fit_table_to(&mut t, &[2, 3], Some(66));
        assert_eq!(hidden, ["mean ± sd"]);
        assert!(widest(&t.to_string()) <= 66, "{t}");
        let mut t2 = t.clone();
        fit_table_to(&mut t2, &[3], Some(40));
        assert!(widest(&t2.to_string()) <= 40, "{t2}");
    }
}
