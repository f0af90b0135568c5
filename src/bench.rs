//! The `bench` command: arguments → plan → experiment → analysis → reports.

use crate::analysis::{analyze, Analysis};
use crate::cli::BenchArgs;
use crate::experiment::{self, ExperimentResult, Plan, StopRule, Variant};
use crate::report::{self, json::Settings, progress::Progress};
use crate::run::RunOptions;
use crate::target::{parse_env, Readiness, Target};
use anyhow::{anyhow, bail, Context, Result};
use std::time::Duration;

/// Build a fully validated plan: every bad input fails here, before any spawn.
pub fn plan(args: &BenchArgs) -> Result<Plan> {
    if args.variants.is_empty() {
        bail!("no command to measure: put it after `--`, e.g. `coldstart bench -- ./server` (see --help)");
    }
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        bail!("--timeout must be a positive number of seconds");
    }
    if !(args.grace >= 0.0 && args.grace.is_finite()) {
        bail!("--grace must be a number of seconds ≥ 0");
    }
    for path in [&args.export_json, &args.export_markdown, &args.export_csv]
        .into_iter()
        .flatten()
    {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        if !dir.is_dir() {
            bail!(
                "cannot export to {}: directory {} does not exist",
                path.display(),
                dir.display()
            );
        }
    }
    let shared_env = args
        .shared
        .env
        .iter()
        .map(|e| parse_env(e))
        .collect::<Result<Vec<_>>>()?;
    let mut variants = Vec::new();
    for spec in &args.variants {
        let mut env = shared_env.clone();
        for e in &spec.args.env {
            env.push(parse_env(e)?);
        }
        let cwd = spec.args.cwd.clone().or_else(|| args.shared.cwd.clone());
        let target = Target::new(spec.argv.clone(), env, cwd)?;
        let ready_spec = spec
            .args
            .ready
            .as_deref()
            .or(args.shared.ready.as_deref())
            .unwrap_or("exit");
        let readiness = Readiness::parse(ready_spec)?;
        let name = spec.name.clone().unwrap_or_else(|| target.display_command());
        if variants.iter().any(|v: &Variant| v.name == name) {
            bail!("two variants are named '{name}': give each its own --name");
        }
        variants.push(Variant {
            name,
            target,
            readiness,
        });
    }
    let stop = match &args.target_ci {
        None => StopRule::Fixed { runs: args.runs },
        Some(t) => {
            let (target, relative) = parse_target_ci(t)?;
            if args.min_runs < 2 || args.min_runs > args.max_runs {
                bail!(
                    "--min-runs must be at least 2 and at most --max-runs ({})",
                    args.max_runs
                );
            }
            StopRule::Adaptive {
                min_runs: args.min_runs,
                max_runs: args.max_runs,
                target,
                relative,
            }
        }
    };
    let request_url = match &args.request_url {
        Some(u) => Some(url::Url::parse(u).map_err(|e| anyhow!("bad --request-url '{u}': {e}"))?),
        None => None,
    };
    if args.requests > 0 && request_url.is_none() {
        if let Some(v) = variants
            .iter()
            .find(|v| !matches!(v.readiness, Readiness::Http { .. }))
        {
            bail!(
                "--requests needs a URL for variant '{}': use http readiness or give --request-url http://127.0.0.1:PORT/",
                v.name
            );
        }
    }
    Ok(Plan {
        variants,
        warmup: args.warmup,
        order: args.order,
        stop,
        keep_going: args.keep_going,
        seed: args
            .seed
            .unwrap_or_else(|| crate::clock::now_ns() ^ u64::from(std::process::id())),
        run: RunOptions {
            timeout: Duration::from_secs_f64(args.timeout),
            poll_interval: Duration::from_micros(args.poll_interval.max(1)),
            requests: args.requests,
            request_url,
            grace: Duration::from_secs_f64(args.grace),
            tail_lines: args.output_lines,
        },
    })
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
    if !(v > 0.0 && v.is_finite()) {
        return Err(bad());
    }
    Ok(if relative { (v / 100.0, true) } else { (v, false) })
}

pub fn run(args: &BenchArgs) -> Result<i32> {
    let plan = plan(args)?;
    let mut progress = Progress::new(args.quiet);
    let executed = experiment::execute(&plan, &mut progress);
    progress.finish();
    let result = executed?;
    let analysis = analyze(&result);
    print!("{}", report::terminal::render(&result, &analysis));
    let settings = Settings {
        runs: match plan.stop {
            StopRule::Fixed { runs } => runs.to_string(),
            StopRule::Adaptive {
                min_runs, max_runs, ..
            } => format!("{min_runs}..{max_runs} (target CI)"),
        },
        warmup: plan.warmup,
        order: format!("{:?}", plan.order).to_lowercase(),
        timeout_ms: plan.run.timeout.as_millis() as u64,
        poll_interval_us: plan.run.poll_interval.as_micros() as u64,
        requests: plan.run.requests,
        seed: plan.seed,
    };
    export(args, &result, &analysis, &settings)?;
    Ok(exit_code(&result))
}

pub fn export(
    args: &BenchArgs,
    result: &ExperimentResult,
    analysis: &Analysis,
    settings: &Settings,
) -> Result<()> {
    if let Some(p) = &args.export_json {
        report::write_atomic(p, report::json::render(result, analysis, settings)?.as_bytes())?;
    }
    if let Some(p) = &args.export_markdown {
        report::write_atomic(p, report::markdown::render(analysis).as_bytes())?;
    }
    if let Some(p) = &args.export_csv {
        report::write_atomic(p, &report::csv::render(result).context("rendering CSV")?)?;
    }
    Ok(())
}

/// 0 when every measured run succeeded (or failures were tolerated with
/// --keep-going and some runs succeeded); 1 on a stopping failure; 130 on interrupt.
pub fn exit_code(result: &ExperimentResult) -> i32 {
    match result.stopped.as_str() {
        "interrupted" => 130,
        "failure" => 1,
        _ if (0..result.variants.len()).any(|v| result.ready_ms(v).is_empty()) => 1,
        _ => 0,
    }
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
    }
}
