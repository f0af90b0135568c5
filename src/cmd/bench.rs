//! The `bench` command: arguments (+ coldstart.toml) → plan → experiment
//! (samples recorded in the store as they come) → analysis → reports.

use crate::flags::{BenchArgs, HookArgs, VariantArgs, VariantSpec};
use crate::session;
use anyhow::{anyhow, bail, Result};
use coldstart_core::bounds::{self, MAX_OUTPUT_LINES, MAX_REQUESTS};
use coldstart_core::config::{self, Config};
use coldstart_core::experiment::sweep::baseline_of;
use coldstart_core::experiment::{CiOf, Order, Plan, StopRule, Sweep, Variant};
use coldstart_core::out;
use coldstart_core::run::conditions::{Conditions, Settings};
use coldstart_core::run::hooks::{self, Hooks};
use coldstart_core::run::{Plain, RunOptions, Spec};
use coldstart_core::sample::ExitPolicy;
use coldstart_core::target::container::Container;
use coldstart_core::target::{parse_env, Readiness, Target};
use std::path::Path;
use std::time::Duration;

/// A fully validated plan, the runner that does its runs, and what it sweeps
/// (recorded in the settings): every bad input fails here, before any spawn.
pub fn plan(args: &BenchArgs, config: Option<&Config>, root: &Path) -> Result<(Plan, Plain, Sweep)> {
    let shell = hooks::parse_shell(args.conditions.shell.as_deref(), args.conditions.no_shell)?;
    let from_config = config_variants(args, config, root, &shell)?;
    // `bench --image IMG` (or `--pod FILE`) alone: one variant, the image's own command.
    let shared = &args.shared.container;
    let image_only =
        (args.variants.is_empty() && (shared.image.is_some() || shared.pod.is_some())).then(|| VariantSpec {
            name: None,
            args: VariantArgs::default(),
            argv: Vec::new(),
        });
    let specs: &[VariantSpec] = if !from_config.is_empty() {
        &from_config
    } else if let Some(only) = &image_only {
        std::slice::from_ref(only)
    } else {
        &args.variants
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
    let mut sweep = super::sweep::parse(&args.sweep)?;
    let mut variants: Vec<Variant> = Vec::new();
    let mut run_specs = Vec::new();
    // Hooks are chosen per variant as given, then follow it to each of its points.
    let spec_hooks = variant_hooks(&args.shared.hooks, specs)?;
    let points_per_spec = sweep.grid().len().max(1);
    let mut hooks = Vec::new();
    for (i, point) in super::sweep::expand(specs, &args.shared, &mut sweep)?
        .into_iter()
        .enumerate()
    {
        hooks.push(point_hooks(&spec_hooks[i / points_per_spec], &point.point)?);
        let spec = &point.spec;
        let env = spec
            .args
            .env
            .iter()
            .map(|e| parse_env(e))
            .collect::<Result<Vec<_>>>()?;
        // Shared limits are merged in already (sweep::expand), values substituted.
        let limits = spec.args.limits.parse_over(&Default::default())?;
        let readiness = Readiness::parse(spec.args.ready.as_deref().unwrap_or("exit"))?;
        let target = variant_target(spec, env, limits, &readiness)?;
        if let Some(h) = hooks.last() {
            check_hooks(h, &shell, &target)?;
        }
        // `--name`, else the command as written (placeholders included), + the values.
        let name = point.name();
        if variants.iter().any(|v| v.name == name) {
            bail!("two variants are named '{name}': give each its own --name");
        }
        let spec = Spec { target, readiness };
        let mut variant = spec.variant(name);
        variant.params = point.point.clone();
        variants.push(variant);
        run_specs.push(spec);
    }
    sweep.default_along(specs.len());
    let stop = stop_rule(args, runs, &variants)?;
    let opts = RunOptions::new(timeout)
        .requests(requests, args.request_url.as_deref())?
        .poll_interval(Duration::from_micros(poll_interval as u64))
        .grace(grace)
        .output(args.common.output_lines, args.conditions.show_output);
    if let Some(v) = run_specs.iter().position(|s| opts.lacks_url(&s.readiness)) {
        bail!(
            "--requests needs a URL for variant '{}': use http readiness or give --request-url http://127.0.0.1:PORT/",
            variants[v].name
        );
    }
    let policy = ExitPolicy::from_flags(args.ignore_failure, args.success_exit_codes.as_deref())?;
    let opts = opts.marks(&args.marks)?.exit_policy(policy);
    let opts = opts.read_set(read_set(&args.conditions, &run_specs)?);
    let plan = Plan {
        variants,
        warmup,
        order: args.order.into(),
        stop,
        keep_going: args.common.keep_going,
        seed: args.common.seed(),
    };
    let conditions = conditions(args, hooks, shell)?;
    Ok((
        plan,
        Plain {
            specs: run_specs,
            opts,
            conditions,
        },
        sweep,
    ))
}

/// A variant's target: a process, an image's container or a pod, checked
/// against its readiness.
fn variant_target(
    spec: &VariantSpec,
    env: Vec<(String, String)>,
    limits: coldstart_core::limits::Limits,
    readiness: &Readiness,
) -> Result<Target> {
    let c = &spec.args.container;
    if c.image.is_none() && c.pod.is_none() && (c.engine.is_some() || !c.publish.is_empty()) {
        bail!("--engine and --publish are for a container: add --image IMAGE");
    }
    let target = match (&c.image, &c.pod) {
        (Some(_), Some(_)) => {
            bail!("--image and --pod in one variant: a pod's images are in its manifest; give one")
        }
        (Some(image), None) => container_target(spec, image, &env, &limits)?,
        (None, Some(manifest)) => pod_target(spec, manifest, &env, &limits, readiness)?,
        (None, None) => Target::new(spec.argv.clone(), env, spec.args.cwd.clone())?.with_limits(limits),
    };
    if target.container.is_some() && matches!(readiness, Readiness::Listen) {
        bail!("--ready listen cannot see inside a container: publish its port (--publish) and use --ready tcp:PORT or http://127.0.0.1:PORT/…");
    }
    Ok(target)
}

/// A `--pod` variant's target: `podman kube play` of the manifest, ready by a
/// probe of a port it publishes.
fn pod_target(
    spec: &VariantSpec,
    manifest: &Path,
    env: &[(String, String)],
    limits: &coldstart_core::limits::Limits,
    readiness: &Readiness,
) -> Result<Target> {
    let c = &spec.args.container;
    if !c.publish.is_empty() || !env.is_empty() || !spec.argv.is_empty() || spec.args.cwd.is_some() {
        bail!("--publish, --env, --cwd and a command do not apply to --pod: the manifest sets ports (hostPort), env and commands");
    }
    if !limits.is_none() {
        bail!("--cpus, --cpuset and --memory do not reach a pod's containers: set resources in the manifest");
    }
    if !matches!(readiness, Readiness::Http { .. } | Readiness::Tcp { .. }) {
        bail!("a pod runs until it is removed and its output is not the client's: give --ready http://127.0.0.1:HOSTPORT/… or tcp:HOSTPORT (a hostPort of the manifest)");
    }
    let container = Container::pod(manifest, c.engine.as_deref())?;
    if container.engine.kind != coldstart_core::target::container::EngineKind::Podman {
        bail!("--pod plays a Kubernetes manifest with podman (`podman kube play`): --engine podman");
    }
    Ok(Target::container(container, env, &[]))
}

/// An `--image` variant's target: the engine's `run` command line. What a
/// process variant has and a container cannot take is refused here.
fn container_target(
    spec: &VariantSpec,
    image: &str,
    env: &[(String, String)],
    limits: &coldstart_core::limits::Limits,
) -> Result<Target> {
    if spec.args.cwd.is_some() {
        bail!("--cwd does not apply to --image (the image sets its working directory): drop it");
    }
    if !limits.is_none() {
        bail!(
            "--cpus, --cpuset and --memory do not reach a container's processes yet: drop them for --image"
        );
    }
    let c = &spec.args.container;
    let container = Container::new(image, &c.publish, c.engine.as_deref())?;
    Ok(Target::container(container, env, &spec.argv))
}

/// `--read-set`, checked: it is for images that are in the store before each run.
fn read_set(c: &crate::flags::raw::ConditionArgs, specs: &[Spec]) -> Result<bool> {
    if !c.read_set {
        return Ok(false);
    }
    if specs.iter().all(|s| s.target.container.is_none()) {
        bail!("--read-set is for container images: give --image IMG (a process's files are --cache cold's)");
    }
    if c.cache == crate::flags::CacheArg::Cold {
        bail!("--read-set needs the image in the store before each run, and --cache cold removes it: measure the read set in a run without --cache cold");
    }
    Ok(true)
}

/// Fixed runs, or with --target-ci runs until the interval is that narrow.
fn stop_rule(args: &BenchArgs, runs: usize, variants: &[Variant]) -> Result<StopRule> {
    Ok(match &args.target_ci {
        None => StopRule::Fixed { runs },
        Some(t) => {
            let (target, relative) = bounds::target_ci(t)?;
            bounds::runs("--max-runs", args.max_runs, 2)?;
            if args.min_runs < 2 || args.min_runs > args.max_runs {
                bail!(
                    "--min-runs must be at least 2 and at most --max-runs ({})",
                    args.max_runs
                );
            }
            if CiOf::from(args.target_ci_of) == CiOf::Shift {
                // In a sweep, a point has a baseline only where another variant runs at its values.
                if !(0..variants.len()).any(|i| baseline_of(variants, i).is_some()) {
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
    })
}

/// A hook that cannot start is refused now, not after every run.
fn check_hooks(h: &Hooks, shell: &[String], target: &Target) -> Result<()> {
    for (flag, line) in [
        ("--setup", &h.setup),
        ("--prepare", &h.prepare),
        ("--conclude", &h.conclude),
        ("--cleanup", &h.cleanup),
    ] {
        if let Some(line) = line {
            hooks::check(flag, line, shell, target)?;
        }
    }
    Ok(())
}

/// Hooks per variant, page cache, shell and output (see run::conditions).
fn conditions(args: &BenchArgs, hooks: Vec<Hooks>, shell: Vec<String>) -> Result<Conditions> {
    let c = &args.conditions;
    if c.drop_caches {
        coldstart_core::run::cache::check_drop_caches()?;
    }
    if c.show_output {
        let e = &args.common.export;
        let dash = [&e.export_json, &e.export_markdown, &e.export_csv]
            .into_iter()
            .any(|p| p.as_deref() == Some(Path::new("-")));
        if dash {
            bail!("--show-output writes the target's output to stdout, where an export to `-` goes: export to a file instead");
        }
    }
    Ok(Conditions::new(Settings {
        hooks,
        shell,
        cache: c.cache.into(),
        drop_caches: c.drop_caches,
        show_output: c.show_output,
        quiet: args.common.quiet,
        tail_lines: args.common.output_lines,
    }))
}

/// Each variant's hooks: its own (after its --name), else the global flag's,
/// which is given once for all variants or once per variant, in order (hyperfine's rule).
fn variant_hooks(global: &HookArgs, specs: &[VariantSpec]) -> Result<Vec<Hooks>> {
    let pick = |flag: &str, all: &[String], own: &[String], v: usize, name: &str| -> Result<Option<String>> {
        if own.len() > 1 {
            bail!("variant '{name}' has {flag} {} times: give it once", own.len());
        }
        if let Some(line) = own.first() {
            return Ok(Some(line.clone()));
        }
        match all.len() {
            0 => Ok(None),
            1 => Ok(Some(all[0].clone())),
            n if n == specs.len() => Ok(Some(all[v].clone())),
            n => bail!(
                "{flag} is given {n} times for {} variants: give it once (for all) or once per variant, in order",
                specs.len()
            ),
        }
    };
    specs
        .iter()
        .enumerate()
        .map(|(v, spec)| {
            let name = spec.name.clone().unwrap_or_else(|| spec.argv.join(" "));
            let own = &spec.args.hooks;
            Ok(Hooks {
                setup: pick("--setup", &global.setup, &own.setup, v, &name)?,
                prepare: pick("--prepare", &global.prepare, &own.prepare, v, &name)?,
                conclude: pick("--conclude", &global.conclude, &own.conclude, v, &name)?,
                cleanup: pick("--cleanup", &global.cleanup, &own.cleanup, v, &name)?,
            })
        })
        .collect()
}

/// A sweep point's hooks: `{name}` replaced by the point's values, as in its command.
fn point_hooks(hooks: &Hooks, point: &[(String, String)]) -> Result<Hooks> {
    if point.is_empty() {
        return Ok(hooks.clone());
    }
    let sub = |line: &Option<String>, flag: &str| -> Result<Option<String>> {
        line.as_deref()
            .map(|l| {
                coldstart_core::experiment::sweep::substitute(l, point, &mut Default::default())
                    .map_err(|e| anyhow!("{flag}: {e}"))
            })
            .transpose()
    };
    Ok(Hooks {
        setup: sub(&hooks.setup, "--setup")?,
        prepare: sub(&hooks.prepare, "--prepare")?,
        conclude: sub(&hooks.conclude, "--conclude")?,
        cleanup: sub(&hooks.cleanup, "--cleanup")?,
    })
}

/// A positional word that is a command line rather than a coldstart.toml target name.
fn looks_like_command(word: &str) -> bool {
    word.chars()
        .any(|c| c.is_whitespace() || "/;|&$<>()'\"`\\*?~=".contains(c))
}

/// Variants for the positional words: targets named in coldstart.toml, or
/// command strings run through the shell (hyperfine's way) when there is no
/// coldstart.toml or the word is a command line.
fn config_variants(
    args: &BenchArgs,
    config: Option<&Config>,
    root: &Path,
    shell: &[String],
) -> Result<Vec<VariantSpec>> {
    if args.targets.is_empty() {
        return Ok(Vec::new());
    }
    if !args.variants.is_empty() {
        bail!(
            "give either target names from {} (or command strings) or a command after `--`, not both",
            config::FILE
        );
    }
    args.targets
        .iter()
        .map(|name| {
            let t = match config.and_then(|c| c.targets.get(name)) {
                Some(t) => t,
                None if config.is_none() || looks_like_command(name) => {
                    return Ok(VariantSpec {
                        name: Some(name.clone()),
                        args: VariantArgs::default(),
                        argv: hooks::argv("a command", name, shell)?,
                    })
                }
                None => {
                    let known: Vec<&str> = config
                        .map(|c| c.targets.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    bail!(
                        "no target '{name}' in {} (in {}): it defines {}; to run a command, quote it with its arguments ('{name} --flag') or put it after `--`",
                        config::FILE,
                        root.display(),
                        known.join(", ")
                    )
                }
            };
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

pub fn run(args: &BenchArgs) -> Result<i32> {
    let root = config::project_root();
    let config = config::load(&root)?;
    let fleet = args.common.fleet()?;
    let (mut plan, mut runner, sweep) = plan(args, config.as_ref(), &root)?;
    if let Some(f) = &fleet {
        plan.seed = f.seed(args.common.seed);
    }
    let mut settings = session::settings(&plan, (&runner.opts).into(), args.common.noise.noise);
    settings.sweep = (!sweep.params.is_empty()).then_some(sweep);
    let measured = session::measure(
        &plan,
        coldstart_core::experiment::Kind::Bench,
        &settings,
        &crate::session::Outputs {
            fleet,
            ..args.common.outputs(config.as_ref(), &root)
        },
        &mut runner,
    );
    // --cleanup even when measuring failed: it restores what --setup changed.
    let cleaned = runner.finish();
    let code = measured?;
    cleaned?;
    let cond = &args.conditions;
    // An image's cold runs are pull-cold, said before the first run (run::conditions).
    let processes = runner.specs.iter().any(|s| s.target.container.is_none());
    if cond.cache == crate::flags::CacheArg::Cold && !cond.drop_caches && processes {
        // SAFETY: geteuid cannot fail and takes nothing.
        let root = unsafe { libc::geteuid() } == 0;
        out::outln!("{}", coldstart_core::run::cache::cold_note(root))?;
    }
    if args.explain && code == 0 {
        for (v, spec) in plan.variants.iter().zip(&runner.specs) {
            let explained = coldstart_report::explain::render(&coldstart_explain::once(
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
        assert_eq!(bounds::target_ci("2%").unwrap(), (0.02, true));
        assert_eq!(bounds::target_ci("5ms").unwrap(), (5.0, false));
        assert!(bounds::target_ci("-1%").is_err());
        assert!(bounds::target_ci("fast").is_err());
        assert!(bounds::target_ci("1e300%").is_err());
        assert!(bounds::target_ci("inf").is_err());
    }
}
