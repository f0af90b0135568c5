//! `coldstart lambda --tune`: tune's candidates for one function of a managed
//! runtime, set as Lambda lets them be set (the runtime's command is Lambda's,
//! so a flag goes in its options variable, JAVA_TOOL_OPTIONS or NODE_OPTIONS,
//! in the function's environment) and measured as Init Duration in the emulator.

use super::Point;
use anyhow::{anyhow, bail, Context, Result};
use coldstart_core::experiment::{Plan, Runner};
use coldstart_core::run::{RunId, RunOptions, Spec};
use coldstart_core::sample::Sample;
use coldstart_core::target::{Readiness, Target, LAMBDA_INIT};
use coldstart_lambda::{cold_start, ColdStarts, Config, Options};
use coldstart_tune::exec::{Applied, Executor, Finish};
use coldstart_tune::session::{self as tuning};

/// The emulator as tune's executor: a target is the function's runtime command
/// with its environment (`Config::variant`'s), run as one cold start.
struct Emulated {
    rt: tokio::runtime::Runtime,
    base: Config,
    opts: Options,
}

impl Emulated {
    fn config(&self, t: &Target) -> Config {
        let mut c = self.base.clone();
        c.runtime.argv = t.argv.clone();
        c.env = t.env.clone();
        c
    }
}

/// The experiment's runner: the lambda command's, and nothing to finish.
struct Emulation<'rt>(ColdStarts<'rt>);

impl Runner for Emulation<'_> {
    fn run(&mut self, variant: usize, id: RunId) -> Result<Sample> {
        self.0.run(variant, id)
    }
}

impl Finish for Emulation<'_> {
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

impl Executor for Emulated {
    fn applied(&self) -> Applied {
        Applied::FunctionEnvironment
    }

    fn once(&self, target: &Target, _: &Readiness, _: &RunOptions, id: RunId) -> Result<Sample> {
        cold_start(&self.rt, &self.config(target), &self.opts, id)
    }

    /// Lambda's shutdown kills a runtime without extensions at once; a user's
    /// training run (on their machine, or in a build) lets the JVM exit and
    /// write its archive: SIGTERM and a long grace.
    fn train(&self, target: &Target, _: &Readiness, _: &RunOptions, id: RunId) -> Result<Sample> {
        let opts = Options {
            runtime_grace: Some(std::time::Duration::from_secs(60)),
            ..self.opts.clone()
        };
        cold_start(&self.rt, &self.config(target), &opts, id)
    }

    fn runner<'a>(&'a self, specs: &[Spec], _: &RunOptions, _: bool) -> Result<Box<dyn Finish + 'a>> {
        Ok(Box::new(Emulation(ColdStarts {
            rt: &self.rt,
            configs: specs.iter().map(|s| self.config(&s.target)).collect(),
            opts: self.opts.clone(),
        })))
    }
}

/// The baseline as the table names it: the function, not the runtime's command.
fn describe(c: &Config) -> String {
    format!(
        "{} function {} at {} MB in the emulator (ready = Init Duration)",
        c.runtime_version.trim_end_matches(".coldstart"),
        c.handler,
        c.memory_mb
    )
}

/// tune's runtime for a managed runtime's function.
fn runtime_of(c: &Config) -> Result<&'static str> {
    let v = c.runtime_version.as_str();
    Ok(if v.starts_with("java:") {
        "jvm"
    } else if v.starts_with("nodejs:") {
        "node"
    } else if v.starts_with("python:") {
        "python"
    } else {
        bail!("--tune: tune knows the managed runtimes' candidates (java17, nodejs20.x, python3.11); this function's runtime is {v}: tune its bootstrap with `coldstart tune -- …`")
    })
}

pub fn run(args: &crate::flags::LambdaArgs, mut configs: Vec<Point>, opts: Options) -> Result<i32> {
    if configs.len() != 1 || !args.variants.is_empty() {
        bail!("--tune tunes one function at one memory size: drop --name blocks and give one --memory");
    }
    if args.invokes > 0 {
        bail!("--tune measures Init Duration: drop --invokes");
    }
    let (_, _, base) = configs.remove(0);
    if base.bare {
        bail!("--tune measures the function's init: drop --bare");
    }
    let runtime = runtime_of(&base)?;
    let root = coldstart_core::config::project_root();
    let cfg = coldstart_core::config::load(&root)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime for the Lambda APIs")?;
    let variant = base.variant("baseline");
    let tune_opts = tuning::Options {
        // The executor runs to the end of init whatever the readiness says.
        base: Spec {
            target: variant.target.clone(),
            readiness: Readiness::Exit,
        },
        run: RunOptions::new(opts.init_timeout),
        runtime: Some(runtime.to_string()),
        // A team's candidates (coldstart.toml's [tune] catalogue) too.
        catalogues: super::super::tuning::catalogues(cfg.as_ref(), &root, &[]),
        only: Vec::new(),
        skip: Vec::new(),
        min_runs: args.runs.clamp(2, 10),
        max_runs: args.runs.max(2),
        runs_flag: "--runs",
        warmup: args.warmup,
        budget: coldstart_core::bounds::seconds("--budget", args.budget, false)?.as_secs_f64(),
        target_ci: (0.02, true),
        seed: args.common.seed(),
        noise: args.common.noise.noise,
        quiet: args.common.quiet,
    };
    let mut found = tuning::find(&tune_opts)?;
    // The class path is the runtime client's, not the function's application:
    // Spring Boot's properties apply when the function's code or layers hold it.
    found.runtime.app = None;
    if found.runtime.name == "jvm" {
        coldstart_tune::spring::fit_function(&mut found.catalogue, &base.layout.code, &base.layout.layers);
    }
    // Each apply text in the function's terms, not a command line's.
    let options_env = found.catalogue.file.options_env.clone();
    for c in found.catalogue.file.candidates.iter_mut() {
        if let Some(apply) = coldstart_tune::show::function_apply(c, options_env.as_deref()) {
            c.apply = apply;
        }
    }
    // Lambda starts the runtime with its own command line: a flag can only go in
    // the runtime's options variable, never after the executable.
    found.catalogue.file.executable = None;
    let chosen = found.chosen(&tune_opts)?;
    let outputs = args.common.outputs(cfg.as_ref(), &root);
    let exports = coldstart_report::export::Exports {
        json: args.common.export.export_json.clone(),
        markdown: args.common.export.export_markdown.clone(),
        csv: None,
        trace: None,
        html: args.common.export.export_html.clone(),
    };
    exports.check()?;
    let exec = Emulated { rt, base, opts };
    let shown = super::super::tuning::Outputs {
        store: outputs.store.clone(),
        quiet: args.common.quiet,
        noise: args.common.noise.noise,
        exports,
    };
    super::super::tuning::run(
        &tune_opts,
        &found,
        &chosen,
        &exec,
        &shown,
        Some(describe(&exec.base)),
        |plan: &mut Plan| {
            for v in &mut plan.variants {
                v.readiness = LAMBDA_INIT.to_string();
            }
        },
    )
    .map_err(|e| anyhow!("{e:#}"))
}
