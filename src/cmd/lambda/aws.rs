//! `coldstart lambda --aws`: variants name deployed functions; the runner forces
//! one cold start per run on the service (crates/aws); the plan, the store, the
//! statistics and the reports are `coldstart lambda`'s. Everything the runs
//! change is journaled in the store first and undone at the end (also after
//! Ctrl-C); `--cleanup` undoes what a killed coldstart left.

use crate::flags::{LambdaArgs, LambdaVariantArgs, LambdaVariantSpec};
use crate::session::{self, RunSettings};
use anyhow::{anyhow, bail, Context, Result};
use coldstart_aws::client::Endpoint;
use coldstart_aws::plan::{self, Variant};
use coldstart_aws::{undo, AwsColdStarts, Options};
use coldstart_core::config;
use coldstart_core::experiment::sweep::point_name;
use coldstart_core::experiment::{Observer, Plan, StopRule, Sweep};
use coldstart_core::sample::{Outcome, RunId, Sample};
use coldstart_core::store::Store;
use coldstart_core::target::{parse_env, Target, LAMBDA_INIT, LAMBDA_SERVICE};
use coldstart_lambda::settings::{AwsFunction, AwsSettings, AwsVariant};
use std::time::Duration;

/// The emulator's flags, refused with --aws (they describe local code).
fn refuse_local(a: &LambdaVariantArgs) -> Result<()> {
    let local = [
        ("--runtime", a.runtime.is_some()),
        ("--code", a.code.is_some()),
        ("--layer", !a.layer.is_empty()),
        ("--extensions", a.extensions.is_some()),
        ("--handler", a.handler.is_some()),
        ("--bare", a.bare),
        ("--sandbox", a.sandbox || a.no_sandbox),
    ];
    if let Some((flag, _)) = local.iter().find(|(_, given)| *given) {
        bail!("{flag} describes local code for the emulator; with --aws a variant is a deployed --function (its layers: --layer-arn)");
    }
    Ok(())
}

/// A variant and its sweep parameters (`memory`, when several sizes run).
type Point = (Variant, Vec<(String, String)>);

/// The variants (one per memory size when several run) from the arguments.
fn variants(args: &LambdaArgs) -> Result<Vec<Point>> {
    let unnamed = [LambdaVariantSpec {
        name: String::new(),
        args: LambdaVariantArgs::default(),
    }];
    let specs: &[LambdaVariantSpec] = if args.variants.is_empty() {
        &unnamed
    } else {
        &args.variants
    };
    refuse_local(&args.shared)?;
    let memories = |a: &LambdaVariantArgs| -> Vec<Option<u64>> {
        let m = if a.memory.is_empty() {
            &args.shared.memory
        } else {
            &a.memory
        };
        if m.is_empty() {
            vec![None]
        } else {
            m.iter().copied().map(Some).collect()
        }
    };
    let mut sizes: Vec<Option<u64>> = specs.iter().flat_map(|s| memories(&s.args)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let swept = sizes.len() > 1;
    let mut out: Vec<Point> = Vec::new();
    for spec in specs {
        let a = &spec.args;
        refuse_local(a)?;
        let function = a
            .function
            .clone()
            .or_else(|| args.shared.function.clone())
            .ok_or_else(|| anyhow!("--aws: give each variant a deployed --function NAME|ARN"))?;
        let mut env = Vec::new();
        for e in args.shared.env.iter().chain(&a.env) {
            env.push(parse_env(e)?);
        }
        let layers = if !a.layer_arn.is_empty() {
            Some(a.layer_arn.clone())
        } else if !args.shared.layer_arn.is_empty() {
            Some(args.shared.layer_arn.clone())
        } else {
            None
        };
        if spec.name.contains(['[', ']']) {
            bail!("bad --name '{}': brackets mark parameter values (name[memory=512]); pick a name without them", spec.name);
        }
        // The variant's own --event, else the one for all.
        let event = super::read_event(a.event.as_deref().or(args.shared.event.as_deref()))?;
        for mb in memories(a) {
            if let Some(mb) = mb.filter(|mb| !super::MEMORY_RANGE.contains(mb)) {
                bail!("--memory {mb}: Lambda allows 128 to 10240 MB");
            }
            let base = if spec.name.is_empty() {
                function.clone()
            } else {
                spec.name.clone()
            };
            let params = match (swept, mb) {
                (true, Some(mb)) => vec![("memory".to_string(), mb.to_string())],
                (true, None) => vec![("memory".to_string(), "own".to_string())],
                (false, _) => Vec::new(),
            };
            let name = point_name(&base, &params);
            if out.iter().any(|(v, _)| v.name == name) {
                bail!("two variants are named '{name}': give each its own --name");
            }
            out.push((
                Variant {
                    name,
                    function: function.clone(),
                    memory_mb: mb,
                    layers: layers.clone(),
                    env: env.clone(),
                    snapstart: a.snapstart || args.shared.snapstart,
                    architecture: a
                        .architecture
                        .or(args.shared.architecture)
                        .map(|a| a.as_str().to_string()),
                    event: event.clone(),
                },
                params,
            ));
        }
    }
    Ok(out)
}

/// A memory sweep's parameter (the sizes given, in order).
fn sweep(variants: &[Point], along: Option<&str>) -> Result<Option<Sweep>> {
    let mut values: Vec<String> = Vec::new();
    for (_, params) in variants {
        for (_, v) in params {
            if !values.contains(v) {
                values.push(v.clone());
            }
        }
    }
    let names: Vec<&str> = variants.iter().map(|(v, _)| v.name.as_str()).collect();
    super::sweep_of(values, &names, along)
}

/// The scheduler's order for this plan: the same seeded shuffle the runs take.
fn order(plan: &Plan) -> Result<Vec<(usize, usize, bool)>> {
    struct Quiet;
    impl Observer for Quiet {
        fn planned(&mut self, _: usize) {}
        fn finished(&mut self, _: &coldstart_core::experiment::Variant, _: &Sample) {}
    }
    let mut seen = Vec::new();
    coldstart_core::experiment::execute_with(plan, &mut Quiet, &mut |v: usize, id: RunId| {
        seen.push((v, id.round, id.warmup));
        Ok(Sample {
            outcome: Outcome::Ready,
            ready_ns: Some(1),
            ..Sample::begin(&id, 0)
        })
    })?;
    Ok(seen)
}

/// What the experiment ran against, for its settings (variable values left out).
fn record(
    endpoint: &str,
    parallel: usize,
    variants: &[Variant],
    functions: &[(String, coldstart_aws::calls::Function)],
    marks: &[String],
) -> AwsSettings {
    let find = |name: &str| functions.iter().find(|(n, _)| n == name).map(|(_, f)| f);
    AwsSettings {
        endpoint: endpoint.to_string(),
        parallel,
        functions: functions
            .iter()
            .map(|(name, f)| AwsFunction {
                name: name.clone(),
                architecture: f.architecture.clone(),
                memory_mb: f.configuration.memory_mb,
                timeout_s: f.timeout_s,
                layers: f.configuration.layers.clone(),
                env_keys: f.configuration.env.keys().cloned().collect(),
                snapstart: f.snapstart,
            })
            .collect(),
        variants: variants
            .iter()
            .filter_map(|v| {
                let f = find(&v.function)?;
                let c = v.configure(&f.configuration, "");
                Some(AwsVariant {
                    name: v.name.clone(),
                    function: v.function.clone(),
                    architecture: f.architecture.clone(),
                    memory_mb: c.memory_mb,
                    layers: c.layers,
                    snapstart: c.snapstart.unwrap_or(false),
                    event_bytes: v.event.len(),
                })
            })
            .collect(),
        marks: marks.to_vec(),
    }
}

/// `--cleanup`: undo every change the journal holds open.
fn cleanup(mut store: Store) -> Result<i32> {
    let rows = store.journal_pending()?;
    if rows.is_empty() {
        coldstart_core::out::outln!(
            "coldstart lambda --aws --cleanup: nothing to undo (no open change in the journal in {})",
            store.location
        )?;
        return Ok(0);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime for the AWS SDK")?;
    let lines = undo::undo(&rt, &mut store, &rows, None)?;
    for l in &lines {
        coldstart_core::out::outln!("coldstart lambda --aws --cleanup: {l}")?;
    }
    Ok(if store.journal_pending()?.is_empty() { 0 } else { 1 })
}

/// `--max-cost`: refuse, before any change, runs that could cost more.
fn check_cost(max: Option<f64>, estimate: &plan::Estimate) -> Result<()> {
    if let Some(max) = max {
        if estimate.usd > max {
            bail!(
                "--max-cost {max}: the runs could cost up to ${:.4} (an estimate: {} invokes, {:.1} GB-s at most; --dry-run shows the plan); nothing was changed",
                estimate.usd,
                estimate.invokes,
                estimate.gb_seconds
            );
        }
    }
    Ok(())
}

/// The scheduler's plan: a variant per function and memory size, ready at Init
/// Duration (`lambda:init`, as the emulator's).
fn plan_of(args: &LambdaArgs, points: &[Point]) -> Plan {
    Plan {
        variants: points
            .iter()
            .map(|(v, params)| coldstart_core::experiment::Variant {
                name: v.name.clone(),
                target: Target {
                    argv: vec![LAMBDA_SERVICE.into(), v.function.clone()],
                    program: format!("{LAMBDA_SERVICE}:{}", v.function).into(),
                    env: v.env.clone(),
                    cwd: None,
                    limits: Default::default(),
                    container: None,
                },
                readiness: LAMBDA_INIT.to_string(),
                params: params.clone(),
            })
            .collect(),
        warmup: args.warmup,
        order: args.order.into(),
        stop: StopRule::Fixed { runs: args.runs },
        keep_going: args.common.keep_going,
        seed: args.common.seed(),
    }
}

pub fn run(args: &LambdaArgs) -> Result<i32> {
    coldstart_core::bounds::runs("--runs", args.runs, 1)?;
    coldstart_core::bounds::runs("--warmup", args.warmup, 0)?;
    let root = config::project_root();
    let cfg = config::load(&root)?;
    let outputs = args.common.outputs(cfg.as_ref(), &root);
    let Some(spec) = outputs.store.clone() else {
        bail!("--aws journals each change it makes to a function in the store, to undo it even after a crash: drop --no-store");
    };
    let store = Store::open(&spec)?;
    if args.cleanup {
        return cleanup(store);
    }
    if args.invokes > 0 {
        bail!("--invokes: with --aws every run is one cold invoke of a new version");
    }
    args.common.export.check_dirs()?;
    let points = variants(args)?;
    let sweep = sweep(&points, args.compare_along.as_deref())?;
    let endpoint = Endpoint {
        endpoint_url: args.endpoint_url.clone(),
        region: args.region.clone(),
    };
    let plan = plan_of(args, &points);
    let variants: Vec<Variant> = points.into_iter().map(|(v, _)| v).collect();
    let parallel = coldstart_core::bounds::count("--parallel", args.parallel, 1, 64)?;
    let order = order(&plan)?;
    let marks = plan::log_marks(&args.marks)?;
    let mut runner = AwsColdStarts::new(
        Options {
            endpoint: endpoint.clone(),
            parallel,
            order: order.clone(),
            marks,
        },
        variants.clone(),
        store,
    )?;
    let functions: Vec<(String, coldstart_aws::calls::Function)> = runner
        .functions
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let per_variant: Vec<&coldstart_aws::calls::Function> = variants
        .iter()
        .filter_map(|v| runner.functions.get(&v.function))
        .collect();
    let estimate = plan::estimate(&variants, &per_variant, args.warmup + args.runs);
    if args.dry_run {
        coldstart_core::out::out!(
            "{}",
            plan::render(&plan::Printed {
                endpoint: &endpoint.describe(),
                variants: &variants,
                functions: &functions,
                order: &order,
                seed: plan.seed,
                estimate,
                parallel,
            })
        )?;
        return Ok(0);
    }
    check_cost(args.max_cost, &estimate)?;
    let recorded = RunSettings {
        timeout: Duration::from_secs(10),
        poll_interval: Duration::ZERO,
        requests: 1,
    };
    let mut settings = session::settings(&plan, recorded, args.common.noise.noise);
    settings.sweep = sweep;
    settings.of_kind.lambda_aws = Some(record(
        &endpoint.describe(),
        parallel,
        &variants,
        &functions,
        &args.marks,
    ));
    if !args.common.quiet {
        coldstart_core::out::errln!(
            "coldstart lambda --aws: {} variant(s) on {} function(s) at {}; every change is journaled in {} and undone at the end",
            variants.len(),
            functions.len(),
            endpoint.describe(),
            spec
        );
    }
    let measured = session::measure(
        &plan,
        coldstart_core::experiment::Kind::Lambda,
        &settings,
        &outputs,
        &mut runner,
    );
    // Undo before anything else is said: also after a failure or an interrupt.
    let undone = runner.finish();
    if let Ok(lines) = &undone {
        for l in lines {
            coldstart_core::out::errln!("coldstart lambda --aws: {l}");
        }
    }
    let code = measured?;
    undone?;
    Ok(code)
}
