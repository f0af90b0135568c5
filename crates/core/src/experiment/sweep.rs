//! Sweeps: parameters (`--param heap=64m,80m`, `n=1..16:x2`, `n=1..10:1`), their
//! grid, `{name}` substitution, and which variants a sweep point is compared with.
//!
//! A sweep point is an ordinary [`Variant`] whose `params` hold its values and whose
//! name is `BASE[name=value,...]`, so the scheduler interleaves every point of every
//! variant in the same shuffled rounds, and the store, the reports and references
//! (`latest:agent[heap=64m]`) see the values as data.

use super::plan::Variant;
pub use super::point::{params_serde, point_name};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// At most this many values per parameter, and points per variant.
pub const MAX_VALUES: usize = 1000;

/// One `--param`: its name, its values in the order they run and are shown, and
/// whether it is a resource (more of it costs more: a "best value" line is printed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    pub values: Vec<String>,
    #[serde(default)]
    pub resource: bool,
}

/// What an experiment swept, recorded in its settings (so `show` renders the same
/// sweep table): the parameters and the `--compare-along` one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    pub params: Vec<Param>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare_along: Option<String>,
}

/// The values of one point, in parameter order.
pub type Point = Vec<(String, String)>;

impl Sweep {
    /// Every combination of values (the first parameter varies slowest); one
    /// empty point when nothing is swept.
    pub fn grid(&self) -> Vec<Point> {
        let mut points: Vec<Point> = vec![Vec::new()];
        for p in &self.params {
            points = points
                .into_iter()
                .flat_map(|pt| {
                    p.values.iter().map(move |v| {
                        let mut next = pt.clone();
                        next.push((p.name.clone(), v.clone()));
                        next
                    })
                })
                .collect();
        }
        points
    }

    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Checks what parsing each `--param` cannot: duplicates, the grid's size,
    /// and that `--compare-along`/`--resource` name a parameter.
    pub fn check(&self) -> Result<(), String> {
        let mut seen = BTreeSet::new();
        for p in &self.params {
            if !seen.insert(&p.name) {
                return Err(format!(
                    "--param {} is given twice: give each parameter once, with all its values",
                    p.name
                ));
            }
        }
        let size = self.params.iter().try_fold(1usize, |n, p| {
            n.checked_mul(p.values.len()).filter(|n| *n <= MAX_VALUES)
        });
        if size.is_none() {
            return Err(format!(
                "the parameters make more than {MAX_VALUES} combinations per variant: sweep fewer values"
            ));
        }
        if let Some(a) = &self.compare_along {
            if self.param(a).is_none() {
                return Err(format!(
                    "--compare-along {a}: no such parameter ({})",
                    self.names_or_none()
                ));
            }
        }
        Ok(())
    }

    fn names_or_none(&self) -> String {
        if self.params.is_empty() {
            "declare it with --param NAME=VALUES".into()
        } else {
            let names: Vec<&str> = self.params.iter().map(|p| p.name.as_str()).collect();
            format!("the parameters are {}", names.join(", "))
        }
    }

    /// One variant and one parameter: nothing to compare at a value, so each value
    /// is compared with the first unless `--compare-along` says otherwise.
    pub fn default_along(&mut self, variants: usize) {
        if self.compare_along.is_none() && variants == 1 && self.params.len() == 1 {
            self.compare_along = Some(self.params[0].name.clone());
        }
    }

    /// Mark `name` as a resource (`--resource NAME`, or used in a limit option).
    pub fn mark_resource(&mut self, name: &str) -> Result<(), String> {
        let names = self.names_or_none();
        match self.params.iter_mut().find(|p| p.name == name) {
            Some(p) => {
                p.resource = true;
                Ok(())
            }
            None => Err(format!("--resource {name}: no such parameter ({names})")),
        }
    }
}

/// `NAME=V1,V2,...`, `NAME=A..B:xF` (geometric), `NAME=A..B:S` or `NAME=A..B`
/// (arithmetic, step 1).
pub fn parse_param(spec: &str) -> Result<Param, String> {
    let (name, values) = spec.split_once('=').ok_or_else(|| {
        format!("bad --param '{spec}': write NAME=V1,V2,... or NAME=FROM..TO:STEP (e.g. heap=64m,128m or n=1..16:x2)")
    })?;
    check_name(name).map_err(|e| format!("bad --param '{spec}': {e}"))?;
    let values = if let Some((from, rest)) = values.split_once("..") {
        range(from, rest).map_err(|e| format!("bad --param '{spec}': {e}"))?
    } else {
        let vs: Vec<String> = values.split(',').map(str::to_string).collect();
        if vs.iter().any(|v| v.is_empty()) {
            return Err(format!(
                "bad --param '{spec}': an empty value (write NAME=V1,V2,...)"
            ));
        }
        if let Some(bad) = vs.iter().find(|v| v.contains([']', '['])) {
            return Err(format!(
                "bad --param '{spec}': the value '{bad}' has a bracket, which marks parameter values in variant names"
            ));
        }
        let mut seen = BTreeSet::new();
        if let Some(dup) = vs.iter().find(|v| !seen.insert(v.as_str())) {
            return Err(format!("bad --param '{spec}': '{dup}' is listed twice"));
        }
        vs
    };
    if values.len() > MAX_VALUES {
        return Err(format!("bad --param '{spec}': more than {MAX_VALUES} values"));
    }
    Ok(Param {
        name: name.to_string(),
        values,
        resource: false,
    })
}

/// A parameter name: a letter or `_`, then letters, digits, `_` or `-`.
pub fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{name}' is not a parameter name (a letter or _, then letters, digits, _ or -)"
        ))
    }
}

fn range(from: &str, rest: &str) -> Result<Vec<String>, String> {
    let (to, step) = match rest.split_once(':') {
        Some((to, step)) => (to, Some(step)),
        None => (rest, None),
    };
    let num = |s: &str, what: &str| -> Result<f64, String> {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| format!("{what} '{s}' is not a number"))
    };
    let (a, b) = (num(from, "the start")?, num(to, "the end")?);
    if a > b {
        return Err(format!("the range {from}..{to} runs backwards"));
    }
    let geometric = step.and_then(|s| s.strip_prefix('x'));
    let mut out = Vec::new();
    // Inclusive of the end up to rounding (0.1 steps do not add up exactly).
    let slack = 1e-9 * b.abs().max(1.0);
    match geometric {
        Some(f) => {
            let f = num(f, "the factor")?;
            if f <= 1.0 {
                return Err(format!("the factor x{f} must be above 1"));
            }
            if a <= 0.0 {
                return Err("a geometric range must start above 0".into());
            }
            let mut i = 0;
            loop {
                let x = a * f.powi(i);
                if x > b + slack || out.len() > MAX_VALUES {
                    break;
                }
                out.push(number(x));
                i += 1;
            }
        }
        None => {
            let s = match step {
                Some(s) => num(s, "the step")?,
                None => 1.0,
            };
            if s <= 0.0 {
                return Err(format!("the step {s} must be above 0 (write :xF for a factor)"));
            }
            let mut i = 0.0;
            loop {
                let x = a + i * s;
                if x > b + slack || out.len() > MAX_VALUES {
                    break;
                }
                out.push(number(x));
                i += 1.0;
            }
        }
    }
    Ok(out)
}

/// A range value as it is substituted: `4`, `0.25` (no float noise).
fn number(x: f64) -> String {
    let s = format!("{x:.9}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// `{name}` → the point's value in `template`; `{{name}}` stays a literal `{name}`.
/// Braces around anything that is not a parameter name (`awk '{print $1}'`) are
/// left alone; `{x}` for an undeclared `x` is an error (a typo would otherwise run
/// the same command at every point). `used` collects the names substituted.
pub fn substitute(
    template: &str,
    point: &[(String, String)],
    used: &mut BTreeSet<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        // `{{name}}`: a literal `{name}`.
        if let Some(inner) = after.strip_prefix('{') {
            if let Some(close) = inner.find("}}") {
                if check_name(&inner[..close]).is_ok() {
                    out.push('{');
                    out.push_str(&inner[..close]);
                    out.push('}');
                    rest = &inner[close + 2..];
                    continue;
                }
            }
        }
        match after.find('}') {
            Some(close) if check_name(&after[..close]).is_ok() => {
                let name = &after[..close];
                let Some((_, v)) = point.iter().find(|(k, _)| k == name) else {
                    return Err(format!(
                        "unknown parameter {{{name}}} in '{template}': declare it with --param {name}=VALUES, or write {{{{{name}}}}} for a literal {{{name}}}"
                    ));
                };
                out.push_str(v);
                used.insert(name.to_string());
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The variant a point is compared with: the first variant with the same
/// parameter values (the baseline variant at that point; variant 0 when nothing is
/// swept). None for that variant itself, or when no earlier variant ran there.
pub fn baseline_of(variants: &[Variant], i: usize) -> Option<usize> {
    let first = variants.iter().position(|v| v.params == variants[i].params)?;
    (first != i).then_some(first)
}

/// With `--compare-along NAME`: the variant's point at NAME's first value with
/// every other parameter the same. None for that point itself.
pub fn first_along(variants: &[Variant], i: usize, along: &str) -> Option<usize> {
    let me = &variants[i];
    me.params.iter().find(|(k, _)| k == along)?;
    let first = variants.iter().position(|v| {
        v.base_name() == me.base_name()
            && v.params.len() == me.params.len()
            && v.params
                .iter()
                .zip(&me.params)
                .all(|((k, a), (_, b))| k == along || a == b)
    })?;
    (first != i).then_some(first)
}

/// A size in bytes or a plain number, for ordering a resource's values by cost
/// (`64m` < `1g`, `0.5` < `2`); None when the value is neither.
pub fn cost(value: &str) -> Option<f64> {
    let v = value.trim();
    let lower = v.to_ascii_lowercase();
    let digits = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '%');
    let unit = &lower[digits.len()..];
    let x: f64 = digits.parse().ok()?;
    let mult = match unit.trim_end_matches("ib").trim_end_matches('b') {
        "" | "%" => 1.0,
        "k" => 1024.0,
        "m" => 1024.0 * 1024.0,
        "g" => 1024.0 * 1024.0 * 1024.0,
        "t" => 1024.0f64.powi(4),
        _ => return None,
    };
    Some(x * mult)
}

/// A resource's values from cheapest to dearest: by [`cost`] when every value
/// has one, else in the order given.
pub fn by_cost(values: &[String]) -> Vec<String> {
    let mut out = values.to_vec();
    if values.iter().all(|v| cost(v).is_some()) {
        out.sort_by(|a, b| cost(a).unwrap_or(0.0).total_cmp(&cost(b).unwrap_or(0.0)));
    }
    out
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
