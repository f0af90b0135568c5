//! bench's sweep: `--param` values × variants. Each variant's raw options are
//! merged with the shared ones, `{name}` is substituted in every raw string a
//! variant has (one step, [`raw_fields`]), and only then parsed, so a value
//! reaches the command, `--env`, `--cwd` and `--ready` alike.

use crate::flags::{SweepArgs, VariantArgs, VariantSpec};
use anyhow::{anyhow, bail, Result};
use coldstart_core::experiment::sweep::{self, point_name, Point, Sweep};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The parameters of `--param`, `--resource` and `--compare-along`, checked.
pub fn parse(args: &SweepArgs) -> Result<Sweep> {
    let mut s = Sweep {
        params: args
            .params
            .iter()
            .map(|p| sweep::parse_param(p))
            .collect::<Result<_, String>>()
            .map_err(|e| anyhow!(e))?,
        compare_along: args.compare_along.clone(),
    };
    s.check().map_err(|e| anyhow!(e))?;
    for r in &args.resources {
        s.mark_resource(r).map_err(|e| anyhow!(e))?;
    }
    Ok(s)
}

/// One raw per-variant string: where it came from (for messages), whether a
/// parameter used there is a resource (a limit such as --memory or --cpus: the
/// report then names its cheapest good value), and the text.
pub struct RawField<'a> {
    pub what: &'static str,
    pub resource: bool,
    pub text: &'a mut String,
}

/// Every raw string option of a variant, in one place: a per-variant option added
/// to `VariantArgs` is swept by listing it here. `cwd` is text while substituting.
fn raw_fields<'a>(spec: &'a mut VariantSpec, cwd: &'a mut Option<String>) -> Vec<RawField<'a>> {
    let mut out: Vec<RawField<'a>> = Vec::new();
    for w in spec.argv.iter_mut() {
        out.push(RawField {
            what: "the command",
            resource: false,
            text: w,
        });
    }
    for e in spec.args.env.iter_mut() {
        out.push(RawField {
            what: "--env",
            resource: false,
            text: e,
        });
    }
    if let Some(i) = spec.args.container.image.as_mut() {
        out.push(RawField {
            what: "--image",
            resource: false,
            text: i,
        });
    }
    if let Some(r) = spec.args.ready.as_mut() {
        out.push(RawField {
            what: "--ready",
            resource: false,
            text: r,
        });
    }
    // Limits are resources: a parameter used in one gets a "best value" line.
    let l = &mut spec.args.limits;
    for (what, text) in [
        ("--cpus", &mut l.cpus),
        ("--cpuset", &mut l.cpuset),
        ("--memory", &mut l.memory),
    ] {
        if let Some(t) = text.as_mut() {
            out.push(RawField {
                what,
                resource: true,
                text: t,
            });
        }
    }
    if let Some(c) = cwd.as_mut() {
        out.push(RawField {
            what: "--cwd",
            resource: false,
            text: c,
        });
    }
    out
}

/// A variant's own options over the shared ones (env: shared first, then its own).
fn merged(spec: &VariantSpec, shared: &VariantArgs) -> VariantSpec {
    let mut env = shared.env.clone();
    env.extend(spec.args.env.iter().cloned());
    VariantSpec {
        name: spec.name.clone(),
        args: VariantArgs {
            ready: spec.args.ready.clone().or_else(|| shared.ready.clone()),
            env,
            cwd: spec.args.cwd.clone().or_else(|| shared.cwd.clone()),
            // Hooks keep hyperfine's rule (bench::variant_hooks), not this merge.
            hooks: spec.args.hooks.clone(),
            limits: spec.args.limits.over(&shared.limits),
            container: spec.args.container.over(&shared.container),
        },
        argv: spec.argv.clone(),
    }
}

/// A point of a variant, ready to parse: its base name (the `--name`, else the
/// command as written, placeholders included), its values and its options.
pub struct Expanded {
    pub base: String,
    pub point: Point,
    pub spec: VariantSpec,
}

impl Expanded {
    pub fn name(&self) -> String {
        point_name(&self.base, &self.point)
    }
}

/// Variants × the grid of `sweep`, variant by variant (so the first variant's
/// points are the baselines). Parameters used in a resource field are marked as
/// resources in `sweep`. Without parameters, each variant once, merged and
/// untouched (no brace is special).
pub fn expand(specs: &[VariantSpec], shared: &VariantArgs, sweep: &mut Sweep) -> Result<Vec<Expanded>> {
    let grid = sweep.grid();
    let mut used = BTreeSet::new();
    let mut resources = BTreeSet::new();
    let mut out = Vec::new();
    for spec in specs {
        let template = merged(spec, shared);
        if let Some(n) = &template.name {
            if n.contains(['[', ']']) {
                bail!("bad --name '{n}': brackets mark parameter values (name[heap=64m]); pick a name without them");
            }
        }
        let base = template.name.clone().unwrap_or_else(|| {
            // An image's variant is named for the image (and its command).
            let words: Vec<String> = template
                .args
                .container
                .image
                .iter()
                .chain(&template.argv)
                .cloned()
                .collect();
            coldstart_core::target::shell_join(&words)
        });
        for point in &grid {
            let mut s = template.clone();
            if !point.is_empty() {
                let mut cwd = s.args.cwd.as_ref().map(|c| c.display().to_string());
                for f in raw_fields(&mut s, &mut cwd) {
                    let mut here = BTreeSet::new();
                    *f.text = sweep::substitute(f.text, point, &mut here)
                        .map_err(|e| anyhow!("{} of variant '{base}': {e}", f.what))?;
                    if f.resource {
                        resources.extend(here.iter().cloned());
                    }
                    used.extend(here);
                }
                s.args.cwd = cwd.map(PathBuf::from);
            }
            out.push(Expanded {
                base: base.clone(),
                point: point.clone(),
                spec: s,
            });
        }
    }
    if let Some(unused) = sweep.params.iter().find(|p| !used.contains(&p.name)) {
        bail!(
            "--param {0} is used nowhere: put {{{0}}} in the command, an --env value, --image, --cwd or --ready",
            unused.name
        );
    }
    for r in resources {
        sweep.mark_resource(&r).map_err(|e| anyhow!(e))?;
    }
    Ok(out)
}
