//! The `bench` command: arguments (+ coldstart.toml) → plan → experiment
//! (samples recorded in the store as they come) → analysis → reports.

use crate::cli::{BenchArgs, VariantArgs, VariantSpec};
use anyhow::{anyhow, bail, Result};
use coldstart::bounds::{self, MAX_OUTPUT_LINES, MAX_REQUESTS};
use coldstart::config::{self, Config};
use coldstart::experiment::{CiOf, Order, Plan, StopRule, Variant};
use coldstart::out;
use coldstart::run::{Plain, RunOptions, Spec};
use coldstart::sample::ExitPolicy;
use coldstart::session;
use coldstart::target::{parse_env, Readiness, Target};
use std::path::Path;
use std::time::Duration;

/// A fully validated plan and the runner that does its runs: every bad input
/// fails here, before any spawn.
pub fn plan(args: &BenchArgs, config: Option<&Config>, root: &Path) -> Result<(Plan, Plain)> {
    let from_config = config_variants(args, config, root)?;
    let specs: &[VariantSpec] = if from_config.is_empty() {
        &args.variants
    } else {
        &from_config
    };
    if specs.is_empty() {
        bail!("no command to measure: put it after `--`, e.g. `coldstart bench -- ./server` (see --help)");
    }
    // Per-target settings from coldstart.toml apply when the flag is not given.
    let first_cfg = args.targets.first().and_then(|t| config?.targets.get(t));
    let runs = args.runs.or(first_cfg.and_then(|c| c.runs)).unwrap_or(20);
    let warmup = args.warmup.or(first_cfg.and_then(|c| c.warmup)).unwrap_or(1);
    let timeout = args.timeout.or(first_cfg.and_then(|c| c.timeout)).unwrap_or(30.0);
    let requests = args.requests.or(first_cfg.and_then(|c| c.requests)).unwrap_or(0);
    // Values from coldstart.toml were bounded when it was loaded; these are the flags'.
    bounds::runs("--runs", runs, 1)?;
    bounds::runs("--warmup", warmup, 0)?;
    bounds::count("--requests", requests, 0, MAX_REQUESTS)?;
    bounds::count("--output-lines", args.common.output_lines, 0, MAX_OUTPUT_LINES)?;
    let timeout = bounds::seconds("--timeout", timeout, false)?;
    let grace = bounds::seconds("--grace", args.grace, true)?;
    let poll_interval = bounds::count("--poll-interval", args.poll_interval as usize, 1, 10_000_000)
        .map_err(|e| anyhow!("{e} (microseconds)"))?;
    args.common.export.check_dirs()?;
    let shared_env = args
        .shared
        .env
        .iter()
        .map(|e| parse_env(e))
        .collect::<Result<Vec<_>>>()?;
    let mut variants: Vec<Variant> = Vec::new();
    let mut run_specs = Vec::new();
    for spec in specs {
        let mut env = shared_env.clone();
        for e in &spec.args.env {
            env.push(parse_env(e)?);
        }
        let cwd = spec.args.cwd.clone().or_else(|| args.shared.cwd.clone());
        let limits = spec.args.limits.parse_over(&args.shared.limits)?;
        let target = Target::new(spec.argv.clone(), env, cwd)?.with_limits(limits);
        let ready_spec = spec
            .args
            .ready
            .as_deref()
            .or(args.shared.ready.as_deref())
            .unwrap_or("exit");
        let readiness = Readiness::parse(ready_spec)?;
        let name = spec.name.clone().unwrap_or_else(|| target.display_command());
        if variants.iter().any(|v| v.name == name) {
            bail!("two variants are named '{name}': give each its own --name");
        }
        let spec = Spec { target, readiness };
        variants.push(spec.variant(name));
        run_specs.push(spec);
    }
    let stop = match &args.target_ci {
        None => StopRule::Fixed { runs },
        Some(t) => {
            let (target, relative) = parse_target_ci(t)?;
            bounds::runs("--max-runs", args.max_runs, 2)?;
            if args.min_runs < 2 || args.min_runs > args.max_runs {
                bail!(
                    "--min-runs must be at least 2 and at most --max-runs ({})",
                    args.max_runs
                );
            }
            if CiOf::from(args.target_ci_of) == CiOf::Shift {
                if variants.len() < 2 {
                    bail!("--target-ci-of shift needs a second variant to compare with the baseline");
                }
                if Order::from(args.order) == Order::Sequential {
                    bail!("--target-ci-of shift needs interleaved runs: drop --order sequential");
                }
            }
            StopRule::Adaptive {
                min_runs: args.min_runs,
                max_runs: args.max_runs,
                target,
                relative,
                of: args.target_ci_of.into(),
            }
        }
    };
    let request_url = match &args.request_url {
        Some(u) => Some(url::Url::parse(u).map_err(|e| anyhow!("bad --request-url '{u}': {e}"))?),
        None => None,
    };
    if requests > 0 && request_url.is_none() {
        if let Some(v) = run_specs
            .iter()
            .position(|s| !matches!(s.readiness, Readiness::Http { .. }))
        {
            bail!(
                "--requests needs a URL for variant '{}': use http readiness or give --request-url http://127.0.0.1:PORT/",
                variants[v].name
            );
        }
    }
    let plan = Plan {
        variants,
        warmup,
        order: args.order.into(),
        stop,
        keep_going: args.common.keep_going,
        seed: args.common.seed(),
    };
    let opts = RunOptions {
        timeout,
        poll_interval: Duration::from_micros(poll_interval as u64),
        requests,
        request_url,
        grace,
        tail_lines: args.common.output_lines,
        log_marks: args
            .marks
            .iter()
            .map(|m| coldstart::marks::parse_log_mark(m))
            .collect::<Result<_>>()?,
        claims: Vec::new(),
        exit_policy: ExitPolicy::from_flags(args.ignore_failure, args.success_exit_codes.as_deref())?,
    };
    Ok((
        plan,
        Plain {
            specs: run_specs,
            opts,
        },
    ))
}

/// Variants for targets named on the command line, from coldstart.toml.
fn config_variants(args: &BenchArgs, config: Option<&Config>, root: &Path) -> Result<Vec<VariantSpec>> {
    if args.targets.is_empty() {
        return Ok(Vec::new());
    }
    if !args.variants.is_empty() {
        bail!(
            "give either target names from {} or a command after `--`, not both",
            config::FILE
        );
    }
    let Some(config) = config else {
        bail!(
            "no {} in {} to look up '{}': write one (see `coldstart bench --help`) or give a command after `--`",
            config::FILE,
            root.display(),
            args.targets[0]
        )
    };
    args.targets
        .iter()
        .map(|name| {
            let t = config.targets.get(name).ok_or_else(|| {
                let known: Vec<&str> = config.targets.keys().map(String::as_str).collect();
                anyhow!(
                    "no target '{name}' in {}: it defines {}",
                    config::FILE,
                    known.join(", ")
                )
            })?;
            if t.command.is_empty() {
                bail!("target '{name}' in {} has an empty command", config::FILE);
            }
            Ok(VariantSpec {
                name: Some(name.clone()),
                args: VariantArgs {
                    ready: t.ready.clone(),
                    env: t.env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                    cwd: Some(
                        t.cwd
                            .as_ref()
                            .map_or_else(|| root.to_path_buf(), |c| root.join(c)),
                    ),
                    ..Default::default()
                },
                argv: t.command.clone(),
            })
        })
        .collect()
}

/// `2%` → (0.02, relative); `5ms` or `5` → (5.0, absolute ms).
fn parse_target_ci(s: &str) -> Result<(f64, bool)> {
    let bad =
        || anyhow!("bad --target-ci '{s}': write a percentage of the median (2%) or milliseconds (5ms)");
    let (num, relative) = match s.strip_suffix('%') {
        Some(n) => (n, true),
        None => (s.strip_suffix("ms").unwrap_or(s), false),
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    // Above 100% or a week the stopping rule is meaningless (and from_secs_f64 of it panics).
    let max = if relative {
        100.0
    } else {
        bounds::MAX_SECONDS * 1e3
    };
    if !(v > 0.0 && v <= max) {
        return Err(bad());
    }
    Ok(if relative { (v / 100.0, true) } else { (v, false) })
}

pub fn run(args: &BenchArgs) -> Result<i32> {
    let root = config::project_root();
    let config = config::load(&root)?;
    let (plan, mut runner) = plan(args, config.as_ref(), &root)?;
    let settings = session::settings(&plan, (&runner.opts).into(), args.common.noise.noise);
    let code = session::measure(
        &plan,
        &settings,
        &args.common.outputs(config.as_ref(), &root),
        &mut runner,
    )?;
    if args.explain && code == 0 {
        for (v, spec) in plan.variants.iter().zip(&runner.specs) {
            let explained = coldstart::report::explain::render(&coldstart::explain::once(
                &spec.target,
                &spec.readiness,
                &runner.opts,
            )?);
            out::out!("\n== explain: {}\n{explained}", v.name)?;
        }
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_ci_forms() {
        assert_eq!(parse_target_ci("2%").unwrap(), (0.02, true));
        assert_eq!(parse_target_ci("5ms").unwrap(), (5.0, false));
        assert!(parse_target_ci("-1%").is_err());
        assert!(parse_target_ci("fast").is_err());
        assert!(parse_target_ci("1e300%").is_err());
        assert!(parse_target_ci("inf").is_err());
    }
}
