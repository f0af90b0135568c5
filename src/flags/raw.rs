//! The raw command line: clap's definitions, nothing else. What clap cannot
//! express (the variant grammar, formats a command does not write) is left to
//! `variants` and `checked`.
//!
//! Each flag's doc comment is a short first paragraph (the `-h` line: it must fit
//! one 80-column line beside the flag) and the rest (added by `--help`). The
//! commands' long prose is in `help`.

use clap::{Args, Parser, Subcommand};
use coldstart_core::experiment::{CiOf, Order};
use std::path::PathBuf;

use coldstart_core::bounds::parse_fraction;

#[derive(Parser, Debug)]
#[command(
    name = "coldstart",
    version,
    about = "A cold-start lab: how long from spawn to ready, really?"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: RawCommand,
}

#[derive(Subcommand, Debug)]
pub enum RawCommand {
    /// Measure spawn → ready of variants, with honest statistics.
    ///
    /// One or more variants, each a command; the first is the baseline.
    #[command(override_usage = "coldstart bench [OPTIONS] -- COMMAND [ARGS...]\n       \
                          coldstart bench [OPTIONS] --name A [VARIANT OPTIONS] -- COMMAND... \\\n           \
                          --name B [VARIANT OPTIONS] -- COMMAND...")]
    Bench(Box<BenchFlags>),
    /// Run the bundled example targets and show what coldstart does.
    ///
    /// The examples are Python, Node, Go, Java and Rust servers.
    Demo(DemoArgs),
    /// Where a cold start's time goes, and what tracing it costs.
    ///
    /// A traced timeline (exec chain, loader, init, listen, first request), blame,
    /// files, network, processes; inside the runtime, imports, classes, package
    /// inits, checkpoints and spans; each with its overhead. Stored in history like a
    /// bench (`show`, `compare`).
    #[command(mut_arg("export_markdown", |a| a.hide(true)), mut_arg("export_csv", |a| a.hide(true)))]
    Explain(Box<ExplainFlags>),
    /// List stored experiments, newest first.
    History(HistoryArgs),
    /// Show one stored experiment as it printed when it ran.
    ///
    /// A bench's tables, an explain's timeline and sections.
    Show(ShowArgs),
    /// Compare two stored experiments or variants.
    ///
    /// With bench's statistics and verdicts (two explains: arm by arm, plus each
    /// one's overheads).
    #[command(mut_arg("export_csv", |a| a.hide(true)))]
    Compare(CompareArgs),
    /// Fail (exit 1) on a startup regression beyond a limit.
    ///
    /// The limit is relative, in ms, or an absolute SLO; the gate says why, and
    /// prints a Markdown table for a pull request.
    #[command(
        mut_arg("export_json", |a| a.hide(true)),
        mut_arg("export_csv", |a| a.hide(true)),
        // Older scripts spell it --markdown.
        mut_arg("export_markdown", |a| a.alias("markdown"))
    )]
    Gate(GateArgs),
    /// Emulate AWS Lambda's init phase locally and measure Init Duration.
    ///
    /// The Runtime, Extensions and Telemetry APIs, CPU in proportion to memory,
    /// over cold starts.
    #[command(
        override_usage = "coldstart lambda --runtime BOOTSTRAP [--extensions DIR] \\\n           \
                          [--memory MB,...] [OPTIONS]\n       \
                          coldstart lambda [OPTIONS] --name A --extensions DIR_A \\\n           \
                          --name B --extensions DIR_B"
    )]
    Lambda(Box<LambdaFlags>),
    /// Serve the Lambda API over the emulator (`coldstart lambda serve`).
    ///
    /// Invoke, GetFunction, GetFunctionConfiguration, UpdateFunctionConfiguration,
    /// PublishVersion, ListVersionsByFunction, DeleteFunction (a version),
    /// ListFunctions and GetAccountSettings on 127.0.0.1, for SDKs and the AWS CLI
    /// with an endpoint URL. Requests are not
    /// authenticated: a signed request's signature is not verified.
    #[command(
        name = "lambda-serve",
        hide = true,
        override_usage = "coldstart lambda serve [--port P] [--idle-timeout S] \\\n           \
                          --name F --runtime ID|BOOTSTRAP [--code DIR] \\\n           \
                          [--layer DIR] [--memory MB] [--name G ...]"
    )]
    LambdaServe(Box<LambdaServeFlags>),
    /// Install a managed runtime's interface client (`coldstart lambda setup RUNTIME`).
    ///
    /// The pinned client of python3.11 (awslambdaric, pip), nodejs20.x
    /// (aws-lambda-ric, npm) or java17 (Maven Central), once, into the user's cache,
    /// where `coldstart lambda --runtime RUNTIME` finds it from any directory.
    #[command(
        name = "lambda-setup",
        hide = true,
        override_usage = "coldstart lambda setup python3.11|nodejs20.x|java17 [--dir DIR]"
    )]
    LambdaSetup(LambdaSetupFlags),
    /// Try the runtime's cold-start optimizations, keep what helps.
    ///
    /// The candidates for the program's runtime (JVM, Python, Node, Go, BEAM,
    /// native) run as variants of one interleaved experiment: a table of measured
    /// effects and a recommended set (docs/tune.md).
    #[command(mut_arg("export_csv", |a| a.hide(true)))]
    Tune(Box<TuneFlags>),
    /// Write stored experiments as one self-contained HTML report.
    ///
    /// Charts inline, no network: distributions, runs in order, A/B verdicts,
    /// sweeps, explain's waterfall, lambda's lanes, and each target's history.
    Report(ReportArgs),
    /// A Kubernetes cluster's pod start-ups, from the API's own objects.
    ///
    /// Reads `kubectl get pods,events -o json` and prints, per pod, created →
    /// scheduled → pulled → started → Ready and the kubelet's start-up SLI, with
    /// p50/p99 over the pods, and the pods whose readiness probe, not their
    /// program, decided when they were Ready.
    Pods(PodsArgs),
    /// Shard one experiment across machines run by an existing engine.
    ///
    /// `fleet emit` prints the engine's file (a Kubernetes Indexed Job, a GitHub
    /// Actions workflow, a GitLab CI job, a Slurm array) whose shards each run
    /// `coldstart bench --shard K/N` into one stored experiment (docs/fleet.md).
    Fleet(FleetArgs),
    /// Print a shell completion script.
    ///
    /// `coldstart completions bash > /etc/bash_completion.d/coldstart`.
    Completions(CompletionsArgs),
    /// Print a man page (roff).
    ///
    /// `coldstart man | man -l -`; a command's own page (the coldstart-bench(1) the
    /// main page refers to): `coldstart man bench | man -l -`.
    Man(ManArgs),
}

#[derive(Args, Debug)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub command: FleetCommand,
}

#[derive(Subcommand, Debug)]
pub enum FleetCommand {
    /// Print an engine's file that runs a bench as N shards, one per machine.
    ///
    /// k8s, github, gitlab or slurm; the bench's arguments go after `--`.
    #[command(
        override_usage = "coldstart fleet emit k8s|github|gitlab|slurm --shards N [OPTIONS] \\\n           \
                          -- BENCH OPTIONS -- COMMAND..."
    )]
    Emit(FleetEmitFlags),
    /// Shards done, running and missing of a fleet experiment, and their machines.
    ///
    /// A row per shard: state, attempt (a retry replaces the runs of the one before),
    /// runs, machine, how long it took.
    Status(FleetStatusFlags),
}

#[derive(Args, Debug)]
pub struct FleetStatusFlags {
    /// The fleet experiment: its name, or an id [default: the newest fleet experiment].
    #[arg(value_name = "EXPERIMENT")]
    pub experiment: Option<String>,
    /// Print JSON (the shards as stored) instead of the table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Args, Debug)]
pub struct FleetEmitFlags {
    /// The engine: k8s, github, gitlab or slurm.
    ///
    /// k8s: an Indexed Job; github: a workflow with a shard matrix; gitlab: a job
    /// with `parallel:`; slurm: an sbatch script for a job array.
    #[arg(value_name = "ENGINE")]
    pub engine: Option<String>,
    /// Shards (machines), at least 1.
    ///
    /// Each runs every variant with bench's --runs: N shards make N times the runs.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub shards: Option<String>,
    /// Container image with coldstart and the program.
    ///
    /// Needed for k8s; github and gitlab run their job in it when given.
    #[arg(long, value_name = "IMG")]
    pub image: Option<String>,
    /// Where the store's DSN is kept.
    ///
    /// k8s: a Secret's name, the DSN under its key `dsn` [default: coldstart-store];
    /// github: a secret, gitlab: a CI/CD variable [default: COLDSTART_STORE];
    /// slurm: a file on the nodes [default: COLDSTART_STORE from sbatch's environment].
    #[arg(long, value_name = "NAME")]
    pub store_secret: Option<String>,
    /// The stored experiment's name [default: from the run's id].
    ///
    /// By default derived from the engine's run id, the same for a retried shard:
    /// the Job's uid, GITHUB_RUN_ID, CI_PIPELINE_ID, SLURM_ARRAY_JOB_ID.
    #[arg(long, value_name = "NAME")]
    pub experiment: Option<String>,
    /// At most P shards at once [default: all].
    ///
    /// Each running shard holds one store connection: keep P under the PostgreSQL
    /// server's max_connections (100 by default). k8s: the Job's parallelism; github:
    /// max-parallel; slurm: the array's %P limit; gitlab has none of its own.
    #[arg(long, value_name = "P")]
    pub parallelism: Option<u32>,
    /// Write the file here instead of stdout.
    ///
    /// Atomically; an existing file only with --force.
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Replace an existing --output file.
    #[arg(long)]
    pub force: bool,
    /// bench's options and command, after `--`.
    #[arg(last = true, value_name = "BENCH ARGS")]
    pub bench: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// The command whose page to print [default: the main page].
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Experiments: id, latest, latest~N or commit.
    ///
    /// An id, `latest`, `latest~N` or a git commit prefix [default: latest].
    #[arg(value_name = "REF")]
    pub experiments: Vec<String>,
    /// HTML file to write.
    ///
    /// `-`: stdout. The path written is printed.
    #[arg(short, long, value_name = "PATH", default_value = "coldstart-report.html")]
    pub output: PathBuf,
    /// Leave out the history chart.
    ///
    /// The chart shows each target's median over stored experiments.
    #[arg(long)]
    pub no_history: bool,
    /// Noise threshold [default: as each ran].
    ///
    /// Of the comparisons; by default the one each experiment ran with.
    #[arg(allow_negative_numbers = true, long, value_name = "PCT", value_parser = parse_fraction)]
    pub noise: Option<f64>,
    /// No message on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Args, Debug)]
pub struct PodsArgs {
    /// The output of `kubectl get pods,events -o json` (`-`: stdin).
    ///
    /// A List of Pods and Events; `kubectl get pods -o json` works too, without
    /// the image pulls (they come from the kubelet's Pulled events).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print the figures as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ExplainFlags {
    /// Readiness, as for bench.
    ///
    /// exit, tcp:[HOST:]PORT, http://…, https://…, log:REGEX, file:PATH, listen.
    #[arg(long, value_name = "PROBE")]
    pub ready: Option<String>,
    /// Count a failed exit as a success.
    ///
    /// A non-zero exit or a death by signal counts as a successful run (with --ready
    /// exit; by default such a run fails: a crash is not a fast start).
    #[arg(short = 'i', long)]
    pub ignore_failure: bool,
    /// Exit codes that count as success.
    ///
    /// E.g. `0,3` [default: 0].
    #[arg(long, value_name = "CODES")]
    pub success_exit_codes: Option<String>,
    /// Runs of each arm.
    ///
    /// Untraced, traced and adapted runs each (interleaved).
    #[arg(short, long, default_value_t = 5)]
    pub runs: usize,
    /// Seconds to become ready.
    #[arg(value_parser = seconds,
        allow_negative_numbers = true,
        short,
        long,
        default_value_t = 30.0,
        value_name = "S"
    )]
    pub timeout: f64,
    /// Environment variable (repeatable).
    ///
    /// KEY=VALUE, for the target.
    #[arg(short, long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Working directory of the target.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub export: ExportArgs,
    /// Write a Chrome Trace Event file.
    ///
    /// For Perfetto or chrome://tracing: one track per process/thread, one per
    /// source inside the runtime.
    #[arg(long, value_name = "PATH")]
    pub export_trace: Option<PathBuf>,
    /// Also profile the CPU (a fourth arm).
    ///
    /// From spawn to ready, in a fourth arm (`profiled`): a flame graph per phase, the
    /// hottest functions, and the profiler's overhead (see HOW).
    #[arg(long)]
    pub profile: bool,
    /// Write the flame graph as SVG.
    ///
    /// Interactive (with --profile).
    #[arg(long, value_name = "PATH", requires = "profile")]
    pub export_flamegraph: Option<PathBuf>,
    /// Write the profile as folded stacks.
    ///
    /// `phase;thread;…;leaf COUNT` (with --profile).
    #[arg(long, value_name = "PATH", requires = "profile")]
    pub export_folded: Option<PathBuf>,
    /// Write the profile as speedscope JSON.
    ///
    /// One profile per phase (with --profile).
    #[arg(long, value_name = "PATH", requires = "profile")]
    pub export_speedscope: Option<PathBuf>,
    /// Adapters of the adapted arm.
    ///
    /// The runtime adapters: `auto` (from the program that finally runs: python, node, deno, jvm, go, beam,
    /// else native), `none`, or a list such as `python,native`. Each turns on the
    /// runtime's own startup report (importtime, -Xlog:class+load, a require hook,
    /// inittrace, LD_DEBUG) and its cost is measured.
    #[arg(long, value_name = "auto|none|LIST", default_value = "auto")]
    pub adapter: String,
    /// Roll JVM classes up to N package parts.
    ///
    /// N dot-separated parts (2 gives `org.springframework`); by default each class's
    /// whole package.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub class_depth: Option<u32>,
    /// No OTLP/HTTP receiver.
    ///
    /// By default the target gets OTEL_EXPORTER_OTLP_ENDPOINT in every arm: the
    /// adapted runs' receiver keeps the spans its OpenTelemetry SDK exports, a section
    /// of their own; the untraced and traced runs' receiver discards them, so the SDK
    /// behaves alike in all three.
    #[arg(long)]
    pub no_otlp: bool,
    /// A mark from an output line (repeatable).
    ///
    /// NAME=REGEX, shown with the app's checkpoints.
    #[arg(long = "mark", value_name = "NAME=REGEX")]
    pub marks: Vec<String>,
    /// Requests after ready.
    ///
    /// In every run, GET to --request-url (default: the http readiness URL): each is
    /// a phase (`request 1`: the cold handler).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub requests: usize,
    /// URL for --requests.
    ///
    /// When readiness is not http.
    #[arg(long, value_name = "URL")]
    pub request_url: Option<String>,
    /// --cpus/--cpuset/--memory: every arm runs under the same limits.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// No progress lines.
    #[arg(short, long)]
    pub quiet: bool,
    /// Unmeasured rounds first.
    ///
    /// Rounds of one run of each arm, before the measured ones.
    #[arg(short, long, default_value_t = 1)]
    pub warmup: usize,
    /// Seed for the run order.
    ///
    /// Shown in the stored settings, for reproducing an order.
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Do not record this explain in the store.
    #[arg(long)]
    pub no_store: bool,
    /// Start a build to compare (A vs B).
    ///
    /// `--name A [--ready …] [-e …] -- COMMAND --name B -- COMMAND`: both builds'
    /// arms interleaved (see EXAMPLES).
    // Listed for --help, completions and the man page; the variant grammar takes it.
    #[arg(long, value_name = "NAME")]
    #[allow(dead_code)]
    pub name: Option<String>,
    /// The program and its arguments.
    // Listed for --help and the man page; the variant grammar takes what follows `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// What bench and lambda share: failure policy, order seed, progress, exports, store.
#[derive(Args, Debug, Clone, Default)]
pub struct CommonArgs {
    /// Keep going after a failed run.
    ///
    /// Failures are counted and reported; by default the first one stops.
    #[arg(long)]
    pub keep_going: bool,
    /// Seed for the run order.
    ///
    /// Shown in the JSON export, for reproducing an order.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Output lines kept per failure.
    ///
    /// The target's last output lines, shown in failure messages.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub output_lines: usize,
    /// No progress output.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub export: ExportArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Do not record this experiment in the store.
    #[arg(long)]
    pub no_store: bool,
    #[command(flatten)]
    pub noise: NoiseArg,
    /// Run shard K of N of a fleet experiment.
    ///
    /// Every variant and point, interleaved as usual, --runs per shard, into the one
    /// stored experiment that --experiment names (a PostgreSQL --store the shards
    /// share). Without it, an engine's index is read when present:
    /// JOB_COMPLETION_INDEX with COLDSTART_SHARDS (Kubernetes), CI_NODE_INDEX and
    /// CI_NODE_TOTAL (GitLab), SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (Slurm).
    /// `coldstart fleet emit` writes the engine's file; docs/fleet.md.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// The fleet experiment every shard joins.
    ///
    /// The same on every shard; by default the engine's run id (GITHUB_RUN_ID,
    /// CI_PIPELINE_ID, SLURM_ARRAY_JOB_ID, JOB_UID), which a retried shard keeps, so
    /// the retry replaces its own earlier runs.
    #[arg(long, value_name = "NAME")]
    pub experiment: Option<String>,
}

/// The practical-significance threshold of comparisons.
#[derive(Args, Debug, Clone, Copy)]
pub struct NoiseArg {
    /// Verdicts' noise threshold.
    ///
    /// A difference is `faster`/`slower` only when its 95% CI lies wholly beyond ±this
    /// share of the baseline median; a significant one that does not is `~ (within
    /// noise threshold)`.
    #[arg(allow_negative_numbers = true, long = "noise", value_name = "PCT", default_value = "1%", value_parser = parse_fraction)]
    pub noise: f64,
}

impl Default for NoiseArg {
    fn default() -> Self {
        NoiseArg {
            noise: coldstart_core::stats::DEFAULT_NOISE,
        }
    }
}

impl CommonArgs {
    /// Where a command's results go.
    pub fn outputs(
        &self,
        config: Option<&coldstart_core::config::Config>,
        root: &std::path::Path,
    ) -> crate::session::Outputs {
        crate::session::Outputs {
            store: (!self.no_store)
                .then(|| coldstart_core::config::store_spec(self.store.store.as_deref(), config, root)),
            quiet: self.quiet,
            noise: self.noise.noise,
            exports: self.export.exports(),
            fleet: None,
        }
    }

    /// The fleet experiment this shard joins (`--shard`, `--experiment`, or an
    /// engine's variables), None when not sharded.
    pub fn fleet(&self) -> anyhow::Result<Option<coldstart_core::experiment::shard::Fleet>> {
        let fleet = coldstart_core::experiment::shard::Fleet::detect(
            self.shard.as_deref(),
            self.experiment.as_deref(),
            |k| std::env::var(k).ok(),
        )?;
        if fleet.is_some() && self.no_store {
            anyhow::bail!("a shard's runs meet the others' in the store: drop --no-store");
        }
        Ok(fleet)
    }

    /// The run-order seed: --seed, else one drawn from the clock and our pid.
    pub fn seed(&self) -> u64 {
        self.seed
            .unwrap_or_else(|| coldstart_core::clock::now_ns() ^ u64::from(std::process::id()))
    }
}

/// The export files: one group for every command that exports. A command that
/// cannot write a format hides its flag (`mut_arg` on the command) and refuses it
/// (`checked`).
#[derive(Args, Debug, Clone, Default)]
pub struct ExportArgs {
    /// Write the results as JSON (`-`: stdout).
    ///
    /// Settings, statistics and every raw sample (docs/json-schema.md); a
    /// comparison's pairs, an explain's timeline and sections, tune's table. `-` (or
    /// /dev/stdout): to stdout, the table then goes to stderr.
    #[arg(long, value_name = "PATH")]
    pub export_json: Option<PathBuf>,
    /// Write the table as Markdown.
    ///
    /// The result table (a gate's decision, tune's table with each candidate's
    /// rationale) as Markdown (`-`: stdout).
    #[arg(long, value_name = "PATH")]
    pub export_markdown: Option<PathBuf>,
    /// Write one CSV row per run.
    ///
    /// `-`: stdout.
    #[arg(long, value_name = "PATH")]
    pub export_csv: Option<PathBuf>,
    /// Write a self-contained HTML report.
    ///
    /// Charts inline; it opens from disk.
    #[arg(long, value_name = "PATH")]
    pub export_html: Option<PathBuf>,
}

impl ExportArgs {
    pub fn exports(&self) -> coldstart_report::export::Exports {
        coldstart_report::export::Exports {
            json: self.export_json.clone(),
            markdown: self.export_markdown.clone(),
            csv: self.export_csv.clone(),
            trace: None,
            html: self.export_html.clone(),
        }
    }

    /// Refuse before any run an export path that cannot be written.
    pub fn check_dirs(&self) -> anyhow::Result<()> {
        self.exports().check()
    }
}

/// Where results are stored.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreArgs {
    /// The store: SQLite path or postgres://….
    ///
    /// A SQLite path, `sqlite:PATH`, or `postgres://…` [default: COLDSTART_STORE,
    /// else [store] in coldstart.toml, else .coldstart/coldstart.db in the project].
    #[arg(long, value_name = "URL|PATH")]
    pub store: Option<String>,
}

#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Only experiments with a variant of this name.
    #[arg(long)]
    pub target: Option<String>,
    /// Only experiments at this git commit (prefix).
    #[arg(long)]
    pub commit: Option<String>,
    /// At most this many.
    #[arg(short = 'n', long, default_value_t = 20)]
    pub limit: usize,
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Experiment: id, latest, latest~N or commit.
    ///
    /// An id, `latest`, `latest~N` or a git commit prefix.
    pub experiment: String,
    /// Also print where and how it ran.
    #[arg(long)]
    pub meta: bool,
    /// Noise threshold [default: as it ran].
    ///
    /// Of the comparisons; by default the one the experiment ran with.
    #[arg(allow_negative_numbers = true, long, value_name = "PCT", value_parser = parse_fraction)]
    pub noise: Option<f64>,
    #[command(flatten)]
    pub export: ExportArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Baseline: REF or REF:VARIANT.
    pub baseline: String,
    /// Candidate: REF or REF:VARIANT.
    pub candidate: String,
    #[command(flatten)]
    pub export: ExportArgs,
    #[command(flatten)]
    pub noise: NoiseArg,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Args, Debug)]
pub struct GateArgs {
    /// Baseline REF[:VARIANT].
    ///
    /// Without one the candidate is judged on --max (and --max-failures) alone.
    #[arg(long)]
    pub baseline: Option<String>,
    /// Candidate REF[:VARIANT].
    #[arg(long, default_value = "latest")]
    pub candidate: String,
    /// Fail beyond this slowdown.
    ///
    /// A slowdown of the median: a share (5%) or a duration (300ms) [default: the
    /// target's `max_regression` in coldstart.toml].
    #[arg(long, value_name = "PCT|DURATION")]
    pub max_regression: Option<String>,
    /// Warn beyond this slowdown.
    ///
    /// Below --max-regression: 2% or 100ms.
    #[arg(long, value_name = "PCT|DURATION")]
    pub warn: Option<String>,
    /// Fail above this median (an SLO).
    ///
    /// The candidate's median, e.g. 12s or 800ms [default: the target's `max` in
    /// coldstart.toml].
    #[arg(long, value_name = "DURATION")]
    pub max: Option<String>,
    /// Failed runs accepted: N or P%.
    ///
    /// Accept up to N failed candidate runs (or P% of them). By default a candidate
    /// that fails more often than the baseline fails the gate: "more often" is
    /// Fisher's exact test, one-sided, at 5 % (7 of 20 vs 0 of 20 fails; 1 of 20 vs 0
    /// of 20 only warns, as no evidence yet). Failures need `bench --keep-going` to be
    /// stored.
    #[arg(long, value_name = "N|P%")]
    pub max_failures: Option<String>,
    /// Allow relative limits across runs.
    ///
    /// Allow --max-regression between two separate invocations, decided on the shift
    /// estimate alone: no CI exists for the drift between invocations, so by default
    /// that is refused (bench/aa.py measures how often drift alone crosses a limit).
    #[arg(long)]
    pub across_invocations: bool,
    /// Warn this close to a limit.
    ///
    /// When an estimate is within this share of a limit.
    #[arg(allow_negative_numbers = true, long, value_name = "PCT", default_value = "5%", value_parser = parse_fraction)]
    pub warn_margin: f64,
    // --export-markdown (or --markdown) also writes the table to a file;
    // --export-html draws the decision (see OUTPUT in `gate --help`).
    #[command(flatten)]
    pub export: ExportArgs,
    #[command(flatten)]
    pub noise: NoiseArg,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Args, Debug)]
pub struct BenchFlags {
    /// Start a variant (see VARIANTS).
    ///
    /// `--name NAME [--env K=V] [--ready R] [--cwd DIR] -- COMMAND...`; repeat for
    /// each variant, the first is the baseline.
    // Listed for --help, completions and the man page; the variant grammar takes
    // every --name before clap parses the rest.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// coldstart.toml targets or command strings.
    ///
    /// Each a variant, instead of a command after `--`: a target named in
    /// coldstart.toml, or a command string run through the shell (`'sleep 0.1'`, as
    /// hyperfine).
    #[arg(value_name = "TARGET|COMMAND")]
    pub targets: Vec<String>,
    /// Measured runs per variant [default: 20].
    ///
    /// Or the target's `runs` in coldstart.toml.
    #[arg(short, long)]
    pub runs: Option<usize>,
    /// Unmeasured runs first [default: 1].
    ///
    /// Per variant. The first start after a build reads
    /// binaries and libraries from disk, later ones from the page cache; one warmup
    /// makes every measured run see the same cache state.
    #[arg(short, long)]
    pub warmup: Option<usize>,
    /// Run order.
    ///
    /// `shuffled`: each round runs every variant once, in a fresh random order, so
    /// drift (thermal, other load, page cache) hits all variants alike.
    /// `sequential`: all runs of the first variant, then all of the next
    /// (hyperfine's order).
    #[arg(long, value_enum, default_value_t = OrderArg::Shuffled, value_name = "shuffled|sequential", hide_possible_values = true)]
    pub order: OrderArg,
    /// Stop once every median CI is this narrow.
    ///
    /// Stop adaptively once both ends of every variant's median 95% CI are within
    /// this of the median (e.g. `2%` of the median, or `5ms`; a lopsided interval
    /// runs on until its far end is). Uses --min-runs/--max-runs instead of --runs.
    #[arg(long, value_name = "PCT|MS")]
    pub target_ci: Option<String>,
    /// What --target-ci narrows.
    ///
    /// Each variant's `median` CI, or each variant's comparison with the baseline
    /// (`shift`; needs interleaved runs): a share is held to the relative interval as
    /// printed, a duration to the shift's in ms.
    #[arg(long, value_enum, default_value_t = CiOfArg::Median, value_name = "median|shift", hide_possible_values = true)]
    pub target_ci_of: CiOfArg,
    /// Least runs with --target-ci.
    ///
    /// Runs per variant before stopping is considered.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub min_runs: usize,
    /// Most runs with --target-ci.
    ///
    /// Stop here even if the CI is still wide.
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub max_runs: usize,
    /// Seconds to become ready [default: 30].
    ///
    /// A run that is not ready by then fails.
    #[arg(value_parser = seconds, allow_negative_numbers = true, short, long, value_name = "S")]
    pub timeout: Option<f64>,
    /// tcp/http poll interval, µs.
    ///
    /// How often tcp/http readiness is polled, in microseconds.
    #[arg(long, default_value_t = 200, value_name = "US")]
    pub poll_interval: u64,
    /// Requests after ready [default: 0].
    ///
    /// GET to --request-url (default: the http readiness URL); the first is the cold
    /// handler, the rest warm.
    #[arg(long, value_name = "N")]
    pub requests: Option<usize>,
    /// URL for --requests.
    ///
    /// When readiness is not http.
    #[arg(long, value_name = "URL")]
    pub request_url: Option<String>,
    /// Seconds to wait before SIGKILL.
    ///
    /// After SIGTERM, when stopping a target.
    #[arg(value_parser = seconds, allow_negative_numbers = true, long, default_value_t = 2.0, value_name = "S")]
    pub grace: f64,
    /// Count a failed exit as a success.
    ///
    /// A non-zero exit or a death by signal counts as a successful run (with --ready
    /// exit; by default such a run fails: a crash is not a fast start). Also accepts
    /// a run in whose tree the --memory limit killed a process (then with a note).
    #[arg(short = 'i', long)]
    pub ignore_failure: bool,
    /// Exit codes that count as success.
    ///
    /// E.g. `0,3` [default: 0].
    #[arg(long, value_name = "CODES")]
    pub success_exit_codes: Option<String>,
    /// Then explain each variant once.
    ///
    /// After the timed runs, one traced and one adapted run per variant explain
    /// where its time went: the timeline, and the runtime's sections (see `coldstart
    /// explain`).
    #[arg(long)]
    pub explain: bool,
    /// A mark from an output line (repeatable).
    ///
    /// Turn the first output line matching REGEX into a mark named NAME; SDK
    /// checkpoints (COLDSTART_FD) are always collected.
    #[arg(long = "mark", value_name = "NAME=REGEX")]
    pub marks: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub conditions: ConditionArgs,
    #[command(flatten)]
    pub sweep: SweepArgs,
    #[command(flatten)]
    pub shared: VariantArgs,
}

/// bench's sweep (see SWEEPS in `bench --help`).
#[derive(Args, Debug, Clone, Default)]
pub struct SweepArgs {
    /// Sweep a parameter: NAME=VALUES.
    ///
    /// NAME=V1,V2,... or a range NAME=FROM..TO:xFACTOR / :STEP; `{NAME}` in the
    /// command, --env, --cwd or --ready takes each value. Repeat for a grid. Every
    /// variant runs at every value, all interleaved.
    #[arg(long = "param", value_name = "NAME=VALUES")]
    pub params: Vec<String>,
    /// Compare each value with the first.
    ///
    /// Of parameter NAME, within each variant.
    #[arg(long, value_name = "NAME")]
    pub compare_along: Option<String>,
    /// NAME is a resource: find its best value.
    ///
    /// More costs more: report its cheapest value not shown to be slower than the
    /// fastest (repeatable).
    #[arg(long = "resource", value_name = "NAME")]
    pub resources: Vec<String>,
}

/// Options that apply to one variant (after its --name) or to all (before any).
#[derive(Args, Debug, Clone, Default)]
pub struct VariantArgs {
    /// Readiness probe (see READINESS).
    ///
    /// exit, tcp:[HOST:]PORT, http://…, https://…, log:REGEX, file:PATH, listen.
    #[arg(long, value_name = "PROBE")]
    pub ready: Option<String>,
    /// Environment variable (repeatable).
    ///
    /// KEY=VALUE, for the target.
    #[arg(short, long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Working directory of the target.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub hooks: HookArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub container: ContainerArgs,
}

/// A container image as the variant (see CONTAINERS): each run is a fresh
/// container, started through the engine and removed after the run.
#[derive(Args, Debug, Clone, Default)]
pub struct ContainerArgs {
    /// Run IMAGE as a container (see CONTAINERS).
    ///
    /// Through the engine's client (`podman run`, attached): spawn → ready covers
    /// the client, a pull when the image is absent (`--cache cold` removes it
    /// before each run), the container's creation, the OCI runtime and the
    /// program's init. A command after `--` replaces the image's CMD; --env is set
    /// inside the container.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// Play a Pod manifest (see CONTAINERS).
    ///
    /// Through `podman kube play`, a fresh pod per run (named and labelled as
    /// coldstart's, removed after the run), ready by `--ready
    /// http://127.0.0.1:HOSTPORT/…` or `tcp:HOSTPORT` on a hostPort of the
    /// manifest. Its readinessProbe and startupProbe say when the kubelet would
    /// mark it Ready: the table says what the probes cost per start.
    #[arg(long, value_name = "FILE")]
    pub pod: Option<PathBuf>,
    /// For --image: podman, docker or nerdctl.
    ///
    /// The container engine; default: the first of them on PATH.
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// Publish a container port on 127.0.0.1.
    ///
    /// PORT (the same on both sides) or HOSTPORT:CONTAINERPORT, repeatable; probe
    /// it with `--ready http://127.0.0.1:HOSTPORT/…` or `tcp:HOSTPORT`.
    #[arg(long, value_name = "PORT")]
    pub publish: Vec<String>,
}

impl ContainerArgs {
    /// This variant's own settings, else the shared ones.
    pub fn over(&self, shared: &ContainerArgs) -> ContainerArgs {
        ContainerArgs {
            image: self.image.clone().or_else(|| shared.image.clone()),
            pod: self.pod.clone().or_else(|| shared.pod.clone()),
            engine: self.engine.clone().or_else(|| shared.engine.clone()),
            publish: if self.publish.is_empty() {
                shared.publish.clone()
            } else {
                self.publish.clone()
            },
        }
    }
}

/// Commands around each variant's runs (hyperfine's), all untimed. Given before any
/// variant: once for all, or once per variant in order; after a `--name`: that variant's.
/// Raw strings: a sweep may substitute into them.
#[derive(Args, Debug, Clone, Default)]
pub struct HookArgs {
    /// Run CMD before every run.
    ///
    /// Warmups too, untimed, e.g. to reset state; its failure fails that run.
    #[arg(short = 'p', long, value_name = "CMD")]
    pub prepare: Vec<String>,
    /// Run CMD after every run.
    ///
    /// Its failure fails that run.
    #[arg(short = 'C', long, value_name = "CMD")]
    pub conclude: Vec<String>,
    /// Run CMD once before a variant's runs.
    ///
    /// Its failure stops bench.
    #[arg(short = 's', long, value_name = "CMD")]
    pub setup: Vec<String>,
    /// Run CMD once after a variant's runs.
    #[arg(short = 'c', long, value_name = "CMD")]
    pub cleanup: Vec<String>,
}

/// How each of bench's runs starts: page cache, shell, output.
#[derive(Args, Debug, Clone)]
pub struct ConditionArgs {
    /// Page cache at each start.
    ///
    /// `warm` (as the last run left it) or `cold` (the target's own files, learnt by
    /// one traced run per variant, evicted before every run; no root needed). Cold
    /// runs record `uncached_mib` and `cached_mib`.
    #[arg(long, value_enum, default_value_t = CacheArg::Warm, value_name = "warm|cold", hide_possible_values = true)]
    pub cache: CacheArg,
    /// Drop the system's caches before each run.
    ///
    /// The page cache, dentries and inodes, after a sync (root: writes
    /// /proc/sys/vm/drop_caches).
    #[arg(long)]
    pub drop_caches: bool,
    /// Record what each container read.
    ///
    /// For --image variants (podman's overlay store): before each run the image's
    /// files are evicted from the page cache (no root needed), at ready the ones
    /// back in it are the run's reads, whole pages with readahead. Each run records
    /// image_read_mib and image_read_files; the table names the files and the
    /// largest parts never read, and --export-json lists every file read. The runs
    /// start with the image's files on disk only.
    #[arg(long)]
    pub read_set: bool,
    /// Show the target's output.
    ///
    /// Its (and the hooks') output goes to this terminal instead of being kept for
    /// failure messages. Costs the target time to write it.
    #[arg(long)]
    pub show_output: bool,
    /// Shell for command strings and hooks.
    ///
    /// E.g. `bash` or `bash --norc` [default: sh]; `none` is -N.
    #[arg(short = 'S', long, value_name = "SHELL")]
    pub shell: Option<String>,
    /// No shell: split command strings.
    ///
    /// A command string is split into words and run directly (hyperfine's -N).
    /// Commands after `--` never go through a shell.
    #[arg(short = 'N')]
    pub no_shell: bool,
}

/// `--cache`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CacheArg {
    Warm,
    Cold,
}

impl From<CacheArg> for coldstart_core::run::conditions::Cache {
    fn from(c: CacheArg) -> Self {
        match c {
            CacheArg::Warm => Self::Warm,
            CacheArg::Cold => Self::Cold,
        }
    }
}

/// Resource limits of a variant's whole process tree (see LIMITS in `bench --help`).
#[derive(Args, Debug, Clone, Default)]
pub struct LimitArgs {
    /// CPU bandwidth of the tree, e.g. 0.5.
    ///
    /// In CPUs (CFS quota per 100 ms).
    #[arg(long, value_name = "N")]
    pub cpus: Option<String>,
    /// CPUs the tree may run on, e.g. 0-1,3.
    #[arg(long, value_name = "LIST")]
    pub cpuset: Option<String>,
    /// Memory limit of the tree, e.g. 256M.
    ///
    /// No swap; 256M or 1G. A run it kills fails with "out of memory".
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
}

impl LimitArgs {
    /// These flags, each unset one taken from `shared` (the flags before any --name).
    pub fn over(&self, shared: &LimitArgs) -> LimitArgs {
        LimitArgs {
            cpus: self.cpus.clone().or_else(|| shared.cpus.clone()),
            cpuset: self.cpuset.clone().or_else(|| shared.cpuset.clone()),
            memory: self.memory.clone().or_else(|| shared.memory.clone()),
        }
    }

    /// These limits, parsed (see `over`).
    pub fn parse_over(&self, shared: &LimitArgs) -> anyhow::Result<coldstart_core::limits::Limits> {
        let l = self.over(shared);
        coldstart_core::limits::Limits::parse(l.cpus.as_deref(), l.cpuset.as_deref(), l.memory.as_deref())
    }
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Measured runs per variant.
    #[arg(short, long, default_value_t = 10)]
    pub runs: usize,
    /// Only these languages.
    ///
    /// python, node, go, java, rust; by default all whose toolchain is present.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
}

#[derive(Args, Debug)]
pub struct LambdaFlags {
    /// Start a variant (see VARIANTS).
    ///
    /// `--name NAME [--runtime ID|P] [--code DIR] [--layer DIR] [--memory MB,...]`;
    /// the first is the baseline.
    // Listed for --help, completions and the man page; the variant grammar takes it.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Measured runs per variant.
    #[arg(short, long, default_value_t = 20)]
    pub runs: usize,
    /// Unmeasured runs first.
    ///
    /// Per variant (page cache warm-up).
    #[arg(short, long, default_value_t = 1)]
    pub warmup: usize,
    /// Run order.
    ///
    /// `shuffled`: each round runs every variant once, in a fresh random order.
    /// `sequential`: all runs of the first variant, then all of the next.
    #[arg(long, value_enum, default_value_t = OrderArg::Shuffled, value_name = "shuffled|sequential", hide_possible_values = true)]
    pub order: OrderArg,
    /// Function timeout, seconds.
    ///
    /// The invoke's, and a suppressed init's; at most 900, as on Lambda.
    #[arg(value_parser = seconds,
        allow_negative_numbers = true,
        short,
        long,
        default_value_t = 3.0,
        value_name = "S"
    )]
    pub timeout: f64,
    /// Warm invokes per environment.
    ///
    /// After its cold one, each with its REPORT ("later requests" in the results).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub invokes: usize,
    /// Init phase limit, seconds.
    ///
    /// Lambda's is 10.
    #[arg(value_parser = seconds, allow_negative_numbers = true, long, default_value_t = 10.0, value_name = "S")]
    pub init_timeout: f64,
    #[command(flatten)]
    pub init_cpu: LambdaInitCpuArgs,
    /// No cgroups: no memory or CPU limit.
    ///
    /// Max Memory Used then comes from procfs.
    #[arg(long)]
    pub no_cgroup: bool,
    /// Function name.
    ///
    /// AWS_LAMBDA_FUNCTION_NAME.
    #[arg(long, default_value = "coldstart-function", value_name = "NAME")]
    pub function_name: String,
    /// AWS_REGION [default: us-east-1].
    ///
    /// With --aws: the region called [default: the AWS configuration's].
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
    /// Measure deployed functions on AWS Lambda.
    ///
    /// Each variant names a --function; every run forces a cold start (a new
    /// configuration and version, invoked once) and reads the REPORT's Init
    /// Duration. See docs/lambda-aws.md.
    #[arg(long)]
    pub aws: bool,
    /// --aws: a Lambda-compatible API.
    ///
    /// E.g. http://127.0.0.1:9001 [default: the service's endpoint for the region].
    #[arg(long, value_name = "URL", requires = "aws")]
    pub endpoint_url: Option<String>,
    /// --aws: print the plan and cost only.
    ///
    /// Reads the functions (GetFunction) and changes nothing.
    #[arg(long, requires = "aws")]
    pub dry_run: bool,
    /// --aws: refuse a costlier plan.
    ///
    /// In US dollars, against the estimate's upper bound (--dry-run shows it).
    #[arg(allow_negative_numbers = true, long, value_name = "USD", requires = "aws")]
    pub max_cost: Option<f64>,
    /// --aws: runs prepared ahead.
    ///
    /// Runs whose version is being made (update, wait, publish) or waits for its
    /// invoke, the current one's included; invokes stay one at a time in the
    /// scheduler's order. 1: each run's just before its invoke.
    #[arg(long, default_value_t = 1, value_name = "N", requires = "aws")]
    pub parallel: usize,
    /// --aws: undo what a killed run left.
    ///
    /// Deletes the versions it published and restores the configurations it
    /// changed, from the journal in the store; says what it did.
    #[arg(long, requires = "aws")]
    pub cleanup: bool,
    /// --aws: a mark from a log line (repeatable).
    ///
    /// NAME=REGEX with a (?P<ms>…) group: the first line of the invoke's log tail
    /// that matches gives mark NAME at `ms` milliseconds (the tail has no times,
    /// so the line carries its own). SDK checkpoints in the tail are always
    /// collected, timed from the first.
    #[arg(long = "mark", value_name = "NAME=REGEX", requires = "aws")]
    pub marks: Vec<String>,
    /// Append the log lines to this file.
    ///
    /// The platform lines (INIT_START, START, END, REPORT, INIT_REPORT) and the
    /// function's and extensions' output, as CloudWatch would get them.
    #[arg(long, value_name = "PATH")]
    pub log: Option<PathBuf>,
    /// Write the last response body here.
    ///
    /// Of the last successful invoke.
    #[arg(long, value_name = "PATH")]
    pub save_response: Option<PathBuf>,
    /// Compare each size with the first.
    ///
    /// With several --memory sizes, within each variant (`memory` is the only
    /// parameter lambda sweeps).
    #[arg(long, value_name = "memory")]
    pub compare_along: Option<String>,
    /// Tune the function's init.
    ///
    /// `coldstart tune`'s candidates for its managed runtime (java17: jvm,
    /// nodejs20.x: node, python3.11: python), each set in the function's
    /// environment as on Lambda (JAVA_TOOL_OPTIONS, NODE_OPTIONS, …) and
    /// measured as Init Duration; --runs is each variant's most runs.
    #[arg(long, conflicts_with = "aws")]
    pub tune: bool,
    /// --tune: time limit, seconds.
    ///
    /// How long the measuring may take (as tune's --budget).
    #[arg(value_parser = seconds,
        allow_negative_numbers = true,
        long,
        default_value_t = 600.0,
        value_name = "SECS",
        requires = "tune"
    )]
    pub budget: f64,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub shared: LambdaVariantArgs,
}

#[derive(Args, Debug)]
pub struct LambdaSetupFlags {
    /// The runtime: python3.11, nodejs20.x or java17.
    #[arg(value_name = "RUNTIME")]
    pub runtime: Option<String>,
    /// Install here instead of the user's cache.
    ///
    /// The default is $XDG_CACHE_HOME/coldstart/lambda-ric (~/.cache/coldstart/lambda-ric);
    /// elsewhere, point COLDSTART_LAMBDA_RIC_DIR at it when running functions.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// No progress lines.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct LambdaServeFlags {
    /// Start a function's definition (see FUNCTIONS).
    ///
    /// `--name F [--runtime ID|P] [--code DIR] [--layer DIR] [--memory MB]`; the
    /// options before the first --name are every function's.
    // Listed for --help, completions and the man page; the variant grammar takes it.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// TCP port to listen on.
    ///
    /// 0: a free port, said on stderr (`listening on http://127.0.0.1:PORT`).
    #[arg(long, default_value_t = 9001, value_name = "P")]
    pub port: u16,
    /// Address to listen on.
    ///
    /// A non-loopback address needs --allow-remote: nothing is authenticated.
    #[arg(long, default_value = "127.0.0.1", value_name = "IP")]
    pub bind: std::net::IpAddr,
    /// Allow a non-loopback --bind.
    ///
    /// Anyone who reaches the port can run the functions: no request is
    /// authenticated (SigV4 signatures are accepted, not verified).
    #[arg(long)]
    pub allow_remote: bool,
    /// Idle seconds before an environment ends.
    ///
    /// Its next invoke is cold again.
    #[arg(value_parser = seconds,
        allow_negative_numbers = true,
        long,
        default_value_t = 300.0,
        value_name = "S"
    )]
    pub idle_timeout: f64,
    /// Function timeout, seconds.
    ///
    /// Every function's, until UpdateFunctionConfiguration sets its Timeout.
    #[arg(value_parser = seconds,
        allow_negative_numbers = true,
        short,
        long,
        default_value_t = 3.0,
        value_name = "S"
    )]
    pub timeout: f64,
    /// Init phase limit, seconds.
    ///
    /// Lambda's is 10.
    #[arg(value_parser = seconds, allow_negative_numbers = true, long, default_value_t = 10.0, value_name = "S")]
    pub init_timeout: f64,
    #[command(flatten)]
    pub init_cpu: LambdaInitCpuArgs,
    /// No cgroups: no memory or CPU limit.
    #[arg(long)]
    pub no_cgroup: bool,
    /// Fault injection: a new version starts warm.
    ///
    /// Each newly published version shares the previous version's environment: a
    /// misbehaving service whose new versions are warm, for testing that a client
    /// (`coldstart lambda --aws`, your own tooling) tells a warm invoke from a cold
    /// one. The service never does this.
    #[arg(long)]
    pub reuse_environments: bool,
    /// AWS_REGION.
    ///
    /// And the region in ARNs.
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
    /// Append the log lines to this file.
    ///
    /// Every environment's platform lines and output, as CloudWatch would get them.
    #[arg(long, value_name = "PATH")]
    pub log: Option<PathBuf>,
    /// No line per environment on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub shared: LambdaVariantArgs,
}

/// The init CPU boost model (see docs/lambda.md, "Memory → CPU").
#[derive(Args, Debug, Clone)]
pub struct LambdaInitCpuArgs {
    /// No init CPU boost.
    ///
    /// Init runs at the memory's CPU share (a worst case; provisioned concurrency has
    /// no boost either).
    #[arg(long, conflicts_with_all = ["init_cpus", "init_boost_seconds"])]
    pub no_init_boost: bool,
    /// vCPUs of an on-demand init.
    ///
    /// AWS: "a full vCPU"; at least the memory's share.
    #[arg(allow_negative_numbers = true, long, default_value_t = 1.0, value_name = "N")]
    pub init_cpus: f64,
    /// How long the init boost lasts.
    ///
    /// Seconds into init (AWS: "up to 10 seconds").
    #[arg(allow_negative_numbers = true, long, default_value_t = 10.0, value_name = "S")]
    pub init_boost_seconds: f64,
    /// The boost is the default now; kept so older scripts run.
    #[arg(long, hide = true, conflicts_with = "no_init_boost")]
    pub init_boost: bool,
}

/// Options of one Lambda variant (after its --name) or of all (before any).
#[derive(Args, Debug, Clone, Default)]
pub struct LambdaVariantArgs {
    /// Managed runtime id or bootstrap path.
    ///
    /// A managed runtime's identifier (python3.11, nodejs20.x, java17: its real
    /// runtime interface client runs --handler from --code), or the path of a
    /// `provided` runtime's bootstrap (./python3.11 for a file of that name).
    #[arg(long, value_name = "ID|PATH")]
    pub runtime: Option<PathBuf>,
    /// What the runtime runs (_HANDLER).
    ///
    /// module.function, Class::method [default: function.handler].
    #[arg(long, value_name = "HANDLER")]
    pub handler: Option<String>,
    /// The function's unpacked .zip.
    ///
    /// The task root (LAMBDA_TASK_ROOT; /var/task in the sandbox) and the runtime's
    /// working directory [default: the bootstrap's directory].
    #[arg(long, value_name = "DIR")]
    pub code: Option<PathBuf>,
    /// An unpacked layer .zip (repeatable).
    ///
    /// In order; a later layer wins a path. Merged at /opt in the sandbox; its
    /// python/, nodejs/, java/lib, bin/ and lib/ are on the runtime's paths and its
    /// extensions/ are started.
    #[arg(long, value_name = "DIR")]
    pub layer: Vec<PathBuf>,
    /// Directory of external extensions.
    ///
    /// Every file in it is started (like /opt/extensions).
    #[arg(long, value_name = "DIR")]
    pub extensions: Option<PathBuf>,
    /// Run in the sandbox, or fail.
    ///
    /// The sandbox's mount namespace: `sandbox` resolves to the APIs' address, /opt
    /// is the layers, /var/task the code [default: on when root or a user namespace
    /// can make it].
    #[arg(long, conflicts_with = "no_sandbox")]
    pub sandbox: bool,
    /// Run on the host's paths.
    ///
    /// No mount namespace.
    #[arg(long)]
    pub no_sandbox: bool,
    /// Memory sizes in MB [default: 1769].
    ///
    /// Comma-separated: one variant each.
    #[arg(long, value_delimiter = ',', value_name = "MB")]
    pub memory: Vec<u64>,
    /// Function environment variable.
    ///
    /// KEY=VALUE (repeatable; extensions get it too).
    #[arg(short, long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Measure the bare spawn → first /next.
    ///
    /// No emulator, no extensions: the baseline of the emulator's overhead.
    #[arg(long)]
    pub bare: bool,
    /// --aws: the deployed function.
    ///
    /// Its name, partial ARN or ARN (a different one per variant is fine).
    #[arg(long, value_name = "NAME|ARN")]
    pub function: Option<String>,
    /// --aws: a layer version ARN (repeatable).
    ///
    /// The variant's whole layer list, in order, replacing the function's.
    #[arg(long, value_name = "ARN")]
    pub layer_arn: Vec<String>,
    /// The event to invoke with [default: {}].
    ///
    /// A JSON file. With --aws also per variant (each variant's invokes carry
    /// its own); the emulator takes one, before the first --name.
    #[arg(long, value_name = "PATH")]
    pub event: Option<PathBuf>,
    /// --aws: SnapStart on published versions.
    ///
    /// The variant's runs restore a snapshot (ApplyOn=PublishedVersions); ready
    /// at the REPORT's Restore Duration [default: the function's own setting].
    #[arg(long)]
    pub snapstart: bool,
    /// --aws: the function's architecture.
    ///
    /// x86_64 or arm64, checked before any change: a function is built for one,
    /// and coldstart never deploys code (name an arm64 build's function with
    /// --function).
    #[arg(long, value_name = "ARCH", hide_possible_values = true)]
    pub architecture: Option<ArchArg>,
}

/// `--architecture`, as Lambda names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ArchArg {
    #[value(name = "x86_64")]
    X86_64,
    #[value(name = "arm64")]
    Arm64,
}

impl ArchArg {
    pub fn as_str(self) -> &'static str {
        match self {
            ArchArg::X86_64 => "x86_64",
            ArchArg::Arm64 => "arm64",
        }
    }
}

/// `--order` (the library's [`Order`] knows nothing of the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OrderArg {
    Shuffled,
    Sequential,
}

impl From<OrderArg> for Order {
    fn from(o: OrderArg) -> Order {
        match o {
            OrderArg::Shuffled => Order::Shuffled,
            OrderArg::Sequential => Order::Sequential,
        }
    }
}

/// `--target-ci-of`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CiOfArg {
    Median,
    Shift,
}

impl From<CiOfArg> for CiOf {
    fn from(o: CiOfArg) -> CiOf {
        match o {
            CiOfArg::Median => CiOf::Median,
            CiOfArg::Shift => CiOf::Shift,
        }
    }
}

/// `coldstart tune` (src/cmd/tune.rs).
#[derive(Args, Debug)]
pub struct TuneFlags {
    /// Readiness, as for bench.
    ///
    /// exit, tcp:[HOST:]PORT, http://…, log:REGEX, file:PATH, listen.
    #[arg(long, value_name = "PROBE", default_value = "exit")]
    pub ready: String,
    /// Environment variable (repeatable).
    ///
    /// KEY=VALUE, for the target.
    #[arg(short, long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Working directory of the target.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// List the candidates; run nothing.
    ///
    /// The catalogue for the detected runtime, with each candidate's rationale.
    #[arg(long)]
    pub list: bool,
    /// Only these candidates.
    ///
    /// Comma-separated ids.
    #[arg(long, value_delimiter = ',', value_name = "ID,...")]
    pub only: Vec<String>,
    /// Not these candidates.
    ///
    /// Comma-separated ids, repeatable.
    #[arg(long, value_delimiter = ',', value_name = "ID,...")]
    pub skip: Vec<String>,
    /// A catalogue file or directory.
    ///
    /// TOML, adding or replacing candidates (repeatable).
    #[arg(long, value_name = "PATH")]
    pub catalogue: Vec<PathBuf>,
    /// The runtime's catalogue to use.
    ///
    /// Instead of the detected one: jvm, python, node, go, beam, native.
    #[arg(long, value_name = "NAME")]
    pub runtime: Option<String>,
    /// Seconds the measuring may take.
    ///
    /// At most, set-up and check runs excluded: it bounds the runs per variant.
    #[arg(value_parser = seconds,
        allow_negative_numbers = true,
        long,
        default_value_t = 600.0,
        value_name = "SECS"
    )]
    pub budget: f64,
    /// Precision to stop at.
    ///
    /// Runs go on until every candidate is settled against --noise (a gain beyond it,
    /// or none worth having), or both ends of its shift CI are within this of the
    /// shift (% of the baseline median, or ms).
    #[arg(long, default_value = "2%", value_name = "PCT|MS")]
    pub target_ci: String,
    /// Runs per variant before stopping.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub min_runs: usize,
    /// Runs per variant at most.
    ///
    /// The budget may allow fewer.
    #[arg(long, default_value_t = 40, value_name = "N")]
    pub max_runs: usize,
    /// Unmeasured runs per variant first.
    #[arg(short, long, default_value_t = 1)]
    pub warmup: usize,
    /// Seconds to become ready.
    #[arg(value_parser = seconds,
        allow_negative_numbers = true,
        short,
        long,
        default_value_t = 30.0,
        value_name = "S"
    )]
    pub timeout: f64,
    /// Requests after ready.
    ///
    /// GET to --request-url, default: the http readiness URL, which the probe has
    /// just answered: a real page shows the work moved to it.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub requests: usize,
    /// URL for --requests.
    ///
    /// When readiness is not http.
    #[arg(long, value_name = "URL")]
    pub request_url: Option<String>,
    #[command(flatten)]
    pub noise: NoiseArg,
    #[command(flatten)]
    pub export: ExportArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Do not record the experiments in the store.
    #[arg(long)]
    pub no_store: bool,
    /// No progress output.
    #[arg(short, long)]
    pub quiet: bool,
    /// Seed for the run order.
    #[arg(long)]
    pub seed: Option<u64>,
    /// The program and its arguments.
    // Listed for --help and the man page; the variant grammar takes what follows `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// A time flag's value in seconds: a number of seconds (`90`, `1.5`), or with
/// units, alone or combined (`500ms`, `90s`, `20m`, `1h`, `1m30s`). A negative
/// number passes through to the flag's own bounds check, which names it.
fn seconds(text: &str) -> Result<f64, String> {
    let t = text.trim();
    if let Ok(v) = t.parse::<f64>() {
        return Ok(v);
    }
    let bad = || {
        format!("'{text}' is not a time: give seconds (90, 1.5) or a duration (500ms, 90s, 20m, 1h, 1m30s)")
    };
    let mut total = 0.0;
    let mut rest = t;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..n].parse().map_err(|_| bad())?;
        rest = &rest[n..];
        let (unit, scale) = [("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)]
            .into_iter()
            .find(|(u, _)| rest.starts_with(u) && !(*u == "m" && rest.starts_with("ms")))
            .ok_or_else(bad)?;
        total += value * scale;
        rest = &rest[unit.len()..];
    }
    Ok(total)
}
