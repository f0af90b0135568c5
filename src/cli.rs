//! Command-line definitions (clap) and the variant grammar of `bench`.

use clap::{Args, Parser, Subcommand};
use coldstart::experiment::{CiOf, Order};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "coldstart",
    version,
    about = "A cold-start lab: how long from spawn to ready, really?"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure spawn → ready of one or more variants, with honest statistics.
    #[command(
        override_usage = "coldstart bench [OPTIONS] -- COMMAND [ARGS...]\n       \
                          coldstart bench [OPTIONS] --name A [VARIANT OPTIONS] -- COMMAND... --name B [VARIANT OPTIONS] -- COMMAND...",
        after_long_help = BENCH_HELP
    )]
    Bench(Box<BenchArgs>),
    /// Run the bundled example targets (Python, Node, Go, Java, Rust servers) and show what coldstart does.
    Demo(DemoArgs),
    /// Where a cold start's time goes: a traced timeline (exec chain, loader, init,
    /// listen, first request), blame, files, network, processes; inside the runtime,
    /// imports, classes, package inits, checkpoints and spans; each with its overhead.
    /// Stored in history like a bench (`show`, `compare`).
    #[command(after_long_help = EXPLAIN_HELP)]
    Explain(ExplainArgs),
    /// List stored experiments, newest first.
    History(HistoryArgs),
    /// Show one stored experiment as it printed when it ran (a bench's tables, an
    /// explain's timeline and sections).
    Show(ShowArgs),
    /// Compare two stored experiments or variants, with bench's statistics and verdicts
    /// (two explains: arm by arm, plus each one's overheads).
    #[command(after_long_help = REF_HELP)]
    Compare(CompareArgs),
    /// Fail (exit 1) on a startup regression beyond a limit (relative, in ms, or an
    /// absolute SLO), saying why; prints a Markdown table for a pull request.
    #[command(after_long_help = GATE_HELP)]
    Gate(GateArgs),
    /// Emulate AWS Lambda's init phase locally (Runtime, Extensions and Telemetry APIs,
    /// CPU in proportion to memory) and measure Init Duration over cold starts.
    #[command(
        override_usage = "coldstart lambda --runtime BOOTSTRAP [--extensions DIR] [--memory MB,...] [OPTIONS]\n       \
                          coldstart lambda [OPTIONS] --name A --extensions DIR_A --name B --extensions DIR_B",
        after_long_help = LAMBDA_HELP
    )]
    Lambda(Box<LambdaArgs>),
}

const REF_HELP: &str = "\
REFERENCES
  An experiment is named by its id, `latest`, `latest~N` (N before the newest), or a
  git commit prefix (the newest experiment recorded at that commit). Add `:VARIANT`
  to pick one variant; without it, variants are matched by name.";

const GATE_HELP: &str = "\
LIMITS (per target, i.e. variant name present in both; flags or coldstart.toml)
  --max 12s                 the candidate's median must not exceed 12 s (an SLO)
  --max-regression 5%|300ms the candidate must not be slower than the baseline by more
  --warn 2%|100ms           warn beyond this slowdown
  --warn-margin 5%          warn when an estimate comes within 5% of a limit

DECISION
  Both sides variants of ONE interleaved experiment (REF:A vs REF:B): the 95% CI of
  the Hodges-Lehmann shift decides. fail when the whole CI is beyond the limit;
  warn, saying why it passed, when the estimate is beyond but the CI reaches below.
  Separate experiments (e.g. master's stored run vs the PR's): no CI can be given
  for the drift between invocations, so a relative limit is refused unless
  --across-invocations: then the shift estimate decides and the table says so;
  keep such limits wider than that drift (bench/aa.py measures it). --max needs
  no baseline and works either way.
  A side that is incomplete (coldstart killed), stopped at a failed run, or has no
  successful run fails. Comparing an experiment's variant with itself is refused.
  Exit status: 1 if any target fails, 0 otherwise (warnings included); 2 bad input.

REFERENCES
  An experiment is named by its id, `latest`, `latest~N`, or a git commit prefix.
  Add `:VARIANT` to pick one variant, e.g. compare two variants of one interleaved
  run: --baseline latest:main --candidate latest:pr

EXAMPLES
  coldstart bench --name main -- ./main/server --name pr -- ./pr/server
  coldstart gate --baseline latest:main --candidate latest:pr --max-regression 5% --warn 2%
  coldstart gate --baseline latest~1 --candidate latest --max 12s
  coldstart gate --baseline 1a2b3c --candidate latest --max-regression 20% --across-invocations";

const EXPLAIN_HELP: &str = "\
HOW
  coldstart follows the whole process tree with ptrace and a seccomp filter that
  stops it only on execve, open, executable mmap, connect, bind, listen, accept,
  the first write on a socket, clone and exit. Phases: exec-chain (spawn → exec of
  the final program: shims and wrappers show here), loader (→ its libraries are
  mapped), init (→ first listen, or ready), listen→ready, first request.
  An experiment of three arms, `untraced`, `traced` and `adapted`, run in shuffled
  rounds after --warmup rounds; the traced run nearest the traced median is shown,
  and traced ÷ untraced is the tracer's overhead (the Hodges–Lehmann ratio with its
  95% CI). Stored like bench's runs: `coldstart history` lists it, `coldstart show`
  prints it again, `coldstart compare A B` compares two explains arm by arm.

  A third kind of run, *adapted*, is interleaved too: untraced, with the runtime's
  own startup report switched on through the environment (see --adapter), the
  app's checkpoints (COLDSTART_FD, --mark) collected, and an OTLP/HTTP receiver on
  a loopback port exported as OTEL_EXPORTER_OTLP_ENDPOINT. Each source gets its
  own section under the timeline (top imports, classes by package, package inits,
  checkpoints, spans), and adapted ÷ untraced is the adapters' overhead.

EXAMPLES
  coldstart explain --ready exit -- python3 -c pass
  coldstart explain --ready http://127.0.0.1:8080/ --export-trace run.json -- ./server
  (open run.json in https://ui.perfetto.dev or chrome://tracing)
  coldstart explain --ready log:listening -- java -jar app.jar       # classes by package
  coldstart explain --adapter none --no-otlp --ready exit -- ./tool  # the tracer only";

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// Readiness, as for bench: exit, tcp:[HOST:]PORT, http://…, log:REGEX, file:PATH, listen.
    #[arg(long, value_name = "PROBE")]
    pub ready: Option<String>,
    /// Count a non-zero exit or a death by signal as a successful run (with --ready
    /// exit; by default such a run fails: a crash is not a fast start).
    #[arg(short = 'i', long)]
    pub ignore_failure: bool,
    /// Exit codes that count as success, e.g. `0,3` [default: 0].
    #[arg(long, value_name = "CODES")]
    pub success_exit_codes: Option<String>,
    /// Untraced, traced and adapted runs each (interleaved).
    #[arg(short, long, default_value_t = 5)]
    pub runs: usize,
    /// Seconds a run may take to become ready.
    #[arg(short, long, default_value_t = 30.0)]
    pub timeout: f64,
    /// Environment variable for the target, KEY=VALUE (repeatable).
    #[arg(short, long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Working directory of the target.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Write the timeline, phases, groupings and the runtime's sections as JSON (docs/json-schema.md).
    #[arg(long, value_name = "PATH")]
    pub export_json: Option<PathBuf>,
    /// Write a Chrome Trace Event file (Perfetto, chrome://tracing): one track per
    /// process/thread, one per source inside the runtime.
    #[arg(long, value_name = "PATH")]
    pub export_trace: Option<PathBuf>,
    /// Runtime adapters for the adapted runs: `auto` (from the program that finally
    /// runs: python, node, jvm, go, beam, else native), `none`, or a list such as
    /// `python,native`. Each turns on the runtime's own startup report (importtime,
    /// -Xlog:class+load, a require hook, inittrace, LD_DEBUG) and its cost is measured.
    #[arg(long, value_name = "auto|none|LIST", default_value = "auto")]
    pub adapter: String,
    /// No OTLP/HTTP receiver (by default the target gets OTEL_EXPORTER_OTLP_ENDPOINT in
    /// every arm: the adapted runs' receiver keeps the spans its OpenTelemetry SDK
    /// exports, a section of their own; the untraced and traced runs' receiver discards
    /// them, so the SDK behaves alike in all three).
    #[arg(long)]
    pub no_otlp: bool,
    /// A mark from an output line, NAME=REGEX (repeatable), shown with the app's checkpoints.
    #[arg(long = "mark", value_name = "NAME=REGEX")]
    pub marks: Vec<String>,
    /// --cpus/--cpuset/--memory: every arm runs under the same limits.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// No progress lines.
    #[arg(short, long)]
    pub quiet: bool,
    /// Warmup rounds (one run of each arm, not measured) before the measured ones.
    #[arg(short, long, default_value_t = 1)]
    pub warmup: usize,
    /// Seed for the run order (shown in the stored settings, for reproducing an order).
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Do not record this explain in the store.
    #[arg(long)]
    pub no_store: bool,
    /// The program and its arguments.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// What bench and lambda share: failure policy, order seed, progress, exports, store.
#[derive(Args, Debug, Clone, Default)]
pub struct CommonArgs {
    /// Keep going after a failed run (failures are counted and reported); default stops.
    #[arg(long)]
    pub keep_going: bool,
    /// Seed for the run order (shown in the JSON export, for reproducing an order).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Output lines of the target kept for failure messages.
    #[arg(long, default_value_t = 10)]
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
}

/// The practical-significance threshold of comparisons.
#[derive(Args, Debug, Clone, Copy)]
pub struct NoiseArg {
    /// A difference is `faster`/`slower` only when its 95% CI lies wholly beyond ±this
    /// share of the baseline median; a significant one that does not is `~ (within noise
    /// threshold)`.
    #[arg(long = "noise", value_name = "PCT", default_value = "1%", value_parser = parse_fraction)]
    pub noise: f64,
}

impl Default for NoiseArg {
    fn default() -> Self {
        NoiseArg {
            noise: coldstart::stats::DEFAULT_NOISE,
        }
    }
}

pub use coldstart::bounds::parse_fraction;

impl CommonArgs {
    /// Where a command's results go.
    pub fn outputs(
        &self,
        config: Option<&coldstart::config::Config>,
        root: &std::path::Path,
    ) -> coldstart::session::Outputs {
        coldstart::session::Outputs {
            store: (!self.no_store)
                .then(|| coldstart::config::store_spec(self.store.store.as_deref(), config, root)),
            quiet: self.quiet,
            noise: self.noise.noise,
            exports: self.export.exports(),
        }
    }

    /// The run-order seed: --seed, else one drawn from the clock and our pid.
    pub fn seed(&self) -> u64 {
        self.seed
            .unwrap_or_else(|| coldstart::clock::now_ns() ^ u64::from(std::process::id()))
    }
}

/// The experiment's export files (bench, lambda, show).
#[derive(Args, Debug, Clone, Default)]
pub struct ExportArgs {
    /// Write settings, statistics and every raw sample as JSON (docs/json-schema.md).
    #[arg(long, value_name = "PATH")]
    pub export_json: Option<PathBuf>,
    /// Write the result table as Markdown.
    #[arg(long, value_name = "PATH")]
    pub export_markdown: Option<PathBuf>,
    /// Write one CSV row per run.
    #[arg(long, value_name = "PATH")]
    pub export_csv: Option<PathBuf>,
}

/// Where results are stored.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreArgs {
    /// Store: a SQLite path, `sqlite:PATH`, or `postgres://…` [default: COLDSTART_STORE,
    /// else [store] in coldstart.toml, else .coldstart/coldstart.db in the project].
    #[arg(long, value_name = "URL|PATH")]
    pub store: Option<String>,
}

#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Only experiments with a variant of this name.
    #[arg(long)]
    pub target: Option<String>,
    /// Only experiments recorded at this git commit (prefix).
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
    /// Experiment: id, latest, latest~N or git commit prefix.
    pub experiment: String,
    /// Also print where and how it ran.
    #[arg(long)]
    pub meta: bool,
    /// Noise threshold for the comparisons [default: the one the experiment ran with].
    #[arg(long, value_name = "PCT", value_parser = parse_fraction)]
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
    /// Write the comparison (each pair's statistics; explains' overheads) as JSON.
    #[arg(long, value_name = "PATH")]
    pub export_json: Option<PathBuf>,
    /// Write the comparison tables as Markdown.
    #[arg(long, value_name = "PATH")]
    pub export_markdown: Option<PathBuf>,
    #[command(flatten)]
    pub noise: NoiseArg,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Args, Debug)]
pub struct GateArgs {
    /// Baseline experiment: REF or REF:VARIANT.
    #[arg(long)]
    pub baseline: String,
    /// Candidate experiment: REF or REF:VARIANT.
    #[arg(long, default_value = "latest")]
    pub candidate: String,
    /// Fail beyond this slowdown of the median: a share (5%) or a duration (300ms)
    /// [default: the target's `max_regression` in coldstart.toml].
    #[arg(long, value_name = "PCT|DURATION")]
    pub max_regression: Option<String>,
    /// Warn beyond this slowdown (below --max-regression): 2% or 100ms.
    #[arg(long, value_name = "PCT|DURATION")]
    pub warn: Option<String>,
    /// Fail when the candidate's median exceeds this, e.g. 12s or 800ms (an SLO)
    /// [default: the target's `max` in coldstart.toml].
    #[arg(long, value_name = "DURATION")]
    pub max: Option<String>,
    /// Allow --max-regression between two separate invocations, decided on the shift
    /// estimate alone: no CI exists for the drift between invocations, so by default
    /// that is refused (bench/aa.py measures how often drift alone crosses a limit).
    #[arg(long)]
    pub across_invocations: bool,
    /// Warn when an estimate is within this share of a limit.
    #[arg(long, value_name = "PCT", default_value = "5%", value_parser = parse_fraction)]
    pub warn_margin: f64,
    /// Also write the Markdown table to this file.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    #[command(flatten)]
    pub noise: NoiseArg,
    #[command(flatten)]
    pub store: StoreArgs,
}

const BENCH_HELP: &str = "\
VARIANTS
  Everything before the first `--name` or `--` applies to all variants. Each
  variant is `--name NAME [--env K=V]... [--ready R] [--cwd DIR] -- COMMAND ARGS...`;
  its COMMAND runs until the next `--name`. The first variant is the baseline the
  others are compared with. The command is run directly (no shell); use
  `-- sh -c '...'` when you want one.

READINESS (--ready)
  exit                 the process exits (default)
  tcp:[HOST:]PORT      a TCP connect succeeds (HOST defaults to 127.0.0.1)
  http://HOST:PORT/P   a GET answers 2xx/3xx; the time includes the whole response
  log:REGEX            a stdout/stderr line matches; named groups (?P<name>..) are
                       captured per run and summarised when numeric
  file:PATH            the file exists (inotify; removed after each run)
  tcp and http poll every --poll-interval (default 200us); exit, log and file are
  event-driven. A port that already accepts connections before the spawn is refused.

STATISTICS
  p50 is shown with its 95% distribution-free confidence interval. Each variant is
  compared with the baseline by the Hodges-Lehmann shift and its 95% CI (in ms and
  as a share of the baseline median), with the Mann-Whitney U p-value:
    faster / slower   the whole CI beyond ±--noise (default 1%) of the baseline median
    ~ (within noise)  a real difference, but the CI reaches inside the threshold
    ~                 the CI contains zero: no significant difference
    no verdict        a side has no successful run, or the runs were not interleaved
                      (--order sequential): drift could not be told from a difference
  Under each comparison, the power line: the smallest shift this experiment would
  have called faster/slower 80% of the time, and the runs a smaller one needs.
  `--target-ci 1% --target-ci-of shift` runs until the comparison is that precise.

FAILURES
  A run fails when the target is not ready before --timeout, exits before ready,
  or (--ready exit) exits non-zero or by a signal: a crash is not a fast start.
  -i/--ignore-failure counts any exit as success; --success-exit-codes 0,3 names
  the codes that do. A failed run stops the experiment (exit 1) unless --keep-going;
  failed runs are listed with their status and the target's last output lines.

LIMITS
  --cpus 0.5 (CFS quota), --cpuset 0, --memory 256M limit the variant's whole process
  tree from its first instruction: the child enters the limiting cgroups (v2, or the v1
  cpu/cpuset/memory hierarchies) between clone and exec, so nothing it forks escapes.
  Given before any --name they apply to every variant; after one, to that variant.
  A limited run records the tree's peak memory from its cgroup (memory_peak_mb); a run
  the memory limit kills fails with \"out of memory (limit 256 MiB)\". Needs root or a
  delegated cgroup.

EXAMPLES
  coldstart bench --ready exit -- python3 -c 'import json'
  coldstart bench --ready exit --name one-cpu --cpus 1 -- ./tool --name half --cpus 0.5 -- ./tool
  coldstart bench --runs 30 --ready http://127.0.0.1:8080/health --requests 5 -- ./server --port 8080
  coldstart bench --ready 'log:listening on (?P<port>\\d+)' \\
      --name baseline -- ./v98/bootstrap --name candidate -- ./build/bootstrap
  coldstart bench --target-ci 2% --max-runs 200 -- ./cli --version";

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Targets named in coldstart.toml, each a variant (instead of a command after `--`).
    #[arg(value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Measured runs per variant [default: 20, or the target's `runs` in coldstart.toml].
    #[arg(short, long)]
    pub runs: Option<usize>,
    /// Unmeasured runs per variant first [default: 1]. The first start after a build
    /// reads binaries and libraries from disk, later ones from the page cache; one
    /// warmup makes every measured run see the same cache state.
    #[arg(short, long)]
    pub warmup: Option<usize>,
    /// Run order: shuffled rounds (each round runs every variant once, in random order) or sequential.
    #[arg(long, value_enum, default_value_t = OrderArg::Shuffled)]
    pub order: OrderArg,
    /// Stop adaptively once every variant's median 95% CI half-width is within this
    /// (e.g. `2%` of the median, or `5ms`). Uses --min-runs/--max-runs instead of --runs.
    #[arg(long, value_name = "PCT|MS")]
    pub target_ci: Option<String>,
    /// With --target-ci: narrow each variant's median CI, or each variant's shift CI
    /// against the baseline (the comparison; needs interleaved runs).
    #[arg(long, value_enum, default_value_t = CiOfArg::Median, value_name = "median|shift")]
    pub target_ci_of: CiOfArg,
    /// With --target-ci: runs per variant before stopping is considered.
    #[arg(long, default_value_t = 10)]
    pub min_runs: usize,
    /// With --target-ci: stop here even if the CI is still wide.
    #[arg(long, default_value_t = 200)]
    pub max_runs: usize,
    /// Seconds a run may take to become ready before it fails [default: 30].
    #[arg(short, long)]
    pub timeout: Option<f64>,
    /// How often tcp/http readiness is polled, in microseconds.
    #[arg(long, default_value_t = 200, value_name = "US")]
    pub poll_interval: u64,
    /// Requests to send after ready (GET to --request-url, default: the http readiness URL);
    /// the first is the cold handler, the rest warm [default: 0].
    #[arg(long)]
    pub requests: Option<usize>,
    /// URL for --requests (when readiness is not http).
    #[arg(long)]
    pub request_url: Option<String>,
    /// Seconds between SIGTERM and SIGKILL when stopping a target.
    #[arg(long, default_value_t = 2.0)]
    pub grace: f64,
    /// Count a non-zero exit or a death by signal as a successful run (with --ready
    /// exit; by default such a run fails: a crash is not a fast start).
    #[arg(short = 'i', long)]
    pub ignore_failure: bool,
    /// Exit codes that count as success, e.g. `0,3` [default: 0].
    #[arg(long, value_name = "CODES")]
    pub success_exit_codes: Option<String>,
    /// After the timed runs, one traced and one adapted run per variant explain where
    /// its time went: the timeline, and the runtime's sections (see `coldstart explain`).
    #[arg(long)]
    pub explain: bool,
    /// Turn the first output line matching REGEX into a mark named NAME (repeatable);
    /// SDK checkpoints (COLDSTART_FD) are always collected.
    #[arg(long = "mark", value_name = "NAME=REGEX")]
    pub marks: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub shared: VariantArgs,
    /// Variants (see VARIANTS below); filled in by the variant grammar, not by clap.
    #[arg(skip)]
    pub variants: Vec<VariantSpec>,
}

/// Options that apply to one variant (after its --name) or to all (before any).
#[derive(Args, Debug, Clone, Default)]
pub struct VariantArgs {
    /// Readiness: exit, tcp:[HOST:]PORT, http://…, log:REGEX, file:PATH (see READINESS).
    #[arg(long, value_name = "PROBE")]
    pub ready: Option<String>,
    /// Environment variable for the target, KEY=VALUE (repeatable).
    #[arg(short, long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Working directory of the target.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Resource limits of a variant's whole process tree (see LIMITS in `bench --help`).
#[derive(Args, Debug, Clone, Default)]
pub struct LimitArgs {
    /// CPU bandwidth for the whole tree, in CPUs (CFS quota per 100 ms), e.g. 0.5.
    #[arg(long, value_name = "N")]
    pub cpus: Option<String>,
    /// CPUs the tree may run on, e.g. 0 or 0-1,3.
    #[arg(long, value_name = "LIST")]
    pub cpuset: Option<String>,
    /// Memory limit of the whole tree (no swap), e.g. 256M or 1G; a run it kills
    /// fails with "out of memory".
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
}

impl LimitArgs {
    /// These limits, each unset one taken from `shared` (the flags before any --name).
    pub fn parse_over(&self, shared: &LimitArgs) -> anyhow::Result<coldstart::limits::Limits> {
        coldstart::limits::Limits::parse(
            self.cpus.as_deref().or(shared.cpus.as_deref()),
            self.cpuset.as_deref().or(shared.cpuset.as_deref()),
            self.memory.as_deref().or(shared.memory.as_deref()),
        )
    }
}

#[derive(Parser, Debug)]
#[command(no_binary_name = true)]
struct VariantCli {
    #[arg(long)]
    name: String,
    #[command(flatten)]
    args: VariantArgs,
}

#[derive(Debug, Clone)]
pub struct VariantSpec {
    pub name: Option<String>,
    pub args: VariantArgs,
    pub argv: Vec<String>,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Measured runs per variant.
    #[arg(short, long, default_value_t = 10)]
    pub runs: usize,
    /// Only these languages (python, node, go, java, rust); default all whose toolchain is present.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
}

const LAMBDA_HELP: &str = "\
VARIANTS
  Options before the first `--name` apply to all variants; each `--name NAME` starts
  a variant that may set its own --runtime, --extensions, --memory, --env, --bare.
  Each memory size of a variant is its own variant (a sweep), named NAME@MBMB. The
  first variant is the baseline the others are compared with.

WHAT A RUN IS
  A fresh execution environment: the Lambda APIs on a free loopback port
  (AWS_LAMBDA_RUNTIME_API), every file of --extensions started at once, the runtime
  started once they registered; Init Duration = T0 → the last of the runtime's and
  the extensions' first /next. Then one invoke of --event and Lambda's shutdown.
  Per run: Init Duration (the table); marks runtime_ready, ext.NAME.register,
  ext.NAME.ready and the SDK checkpoints of every process (COLDSTART_FD); metrics
  invoke_ms, post_runtime_ms, max_memory_mb, billed_ms, throttled_ms.

LIMITS
  A cgroup per run (v2, or v1 cpu + memory) holds memory at --memory and CPU at
  memory/1769 vCPU; --init-boost lifts the CPU quota until init ends. Init is limited
  by --init-timeout (10 s, as on Lambda); a failed init is retried inside the invoke
  (a suppressed init), and the run counts as failed.

EXAMPLES
  coldstart lambda --runtime ./bootstrap --extensions ./layer/extensions --memory 1024 --runs 25 --event event.json
  coldstart lambda --runtime ./bootstrap --extensions ./ext --memory 128,512,1769,3008
  coldstart lambda --runtime ./bootstrap --name v98 --extensions ./v98 --name candidate --extensions ./new
  coldstart lambda --runtime ./bootstrap --no-cgroup --name bare --bare --name emulated   # emulator overhead";

#[derive(Args, Debug)]
pub struct LambdaArgs {
    /// Measured runs per variant.
    #[arg(short, long, default_value_t = 20)]
    pub runs: usize,
    /// Unmeasured runs per variant first (page cache warm-up).
    #[arg(short, long, default_value_t = 1)]
    pub warmup: usize,
    #[arg(long, value_enum, default_value_t = OrderArg::Shuffled)]
    pub order: OrderArg,
    /// The event to invoke the function with (JSON file) [default: {}].
    #[arg(long, value_name = "PATH")]
    pub event: Option<PathBuf>,
    /// Function timeout in seconds (the invoke, and a suppressed init).
    #[arg(short, long, default_value_t = 3.0, value_name = "S")]
    pub timeout: f64,
    /// Init phase limit in seconds (Lambda: 10).
    #[arg(long, default_value_t = 10.0, value_name = "S")]
    pub init_timeout: f64,
    /// No CPU quota during init (Lambda's undocumented init boost); quota from invoke on.
    #[arg(long)]
    pub init_boost: bool,
    /// Run without cgroups: no memory limit, no CPU quota (Max Memory Used from procfs).
    #[arg(long)]
    pub no_cgroup: bool,
    /// AWS_LAMBDA_FUNCTION_NAME.
    #[arg(long, default_value = "coldstart-function")]
    pub function_name: String,
    /// _HANDLER.
    #[arg(long, default_value = "function.handler")]
    pub handler: String,
    /// AWS_REGION.
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
    /// Append the platform lines (INIT_START, START, END, REPORT, INIT_REPORT) and the
    /// function's and extensions' output to this file, as CloudWatch would get them.
    #[arg(long, value_name = "PATH")]
    pub log: Option<PathBuf>,
    /// Write the last successful invoke's response body here.
    #[arg(long, value_name = "PATH")]
    pub save_response: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub shared: LambdaVariantArgs,
    /// Filled in by the variant grammar, not by clap.
    #[arg(skip)]
    pub variants: Vec<LambdaVariantSpec>,
}

/// Options of one Lambda variant (after its --name) or of all (before any).
#[derive(Args, Debug, Clone, Default)]
pub struct LambdaVariantArgs {
    /// The runtime bootstrap (a `provided` runtime's executable).
    #[arg(long, value_name = "PATH")]
    pub runtime: Option<PathBuf>,
    /// Directory of external extensions: every file in it is started (like /opt/extensions).
    #[arg(long, value_name = "DIR")]
    pub extensions: Option<PathBuf>,
    /// Memory sizes in MB (comma-separated: one variant each) [default: 1769].
    #[arg(long, value_delimiter = ',', value_name = "MB")]
    pub memory: Vec<u64>,
    /// Function environment variable KEY=VALUE (repeatable; extensions get it too).
    #[arg(short, long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Measure the bare spawn → first /next (no emulator, no extensions): the baseline
    /// of the emulator's overhead.
    #[arg(long)]
    pub bare: bool,
}

#[derive(Parser, Debug)]
#[command(no_binary_name = true)]
struct LambdaVariantCli {
    #[arg(long)]
    name: String,
    #[command(flatten)]
    args: LambdaVariantArgs,
}

#[derive(Debug, Clone)]
pub struct LambdaVariantSpec {
    pub name: String,
    pub args: LambdaVariantArgs,
}

/// Split raw `lambda` arguments at each `--name`: global options first, then one
/// block per variant, each parsed by clap.
pub fn split_lambda_args(args: &[String]) -> Result<(Vec<String>, Vec<LambdaVariantSpec>), String> {
    let is_name = |a: &String| a == "--name" || a.starts_with("--name=");
    let Some(first) = args.iter().position(is_name) else {
        return Ok((args.to_vec(), Vec::new()));
    };
    let mut specs = Vec::new();
    let mut i = first;
    while i < args.len() {
        let end = args[i + 1..]
            .iter()
            .position(is_name)
            .map_or(args.len(), |p| p + i + 1);
        let parsed = LambdaVariantCli::try_parse_from(&args[i..end]).map_err(|e| e.to_string())?;
        specs.push(LambdaVariantSpec {
            name: parsed.name,
            args: parsed.args,
        });
        i = end;
    }
    Ok((args[..first].to_vec(), specs))
}

/// Split raw `bench` arguments: global options, then variant blocks. clap cannot
/// express "argv until the next --name", so the blocks are cut here and each one's
/// options are parsed by clap.
pub fn split_bench_args(args: &[String]) -> Result<(Vec<String>, Vec<VariantSpec>), String> {
    let first = args
        .iter()
        .position(|a| a == "--name" || a == "--" || a.starts_with("--name="));
    let Some(first) = first else {
        return Ok((args.to_vec(), Vec::new()));
    };
    let globals = args[..first].to_vec();
    let rest = &args[first..];
    if rest[0] == "--" {
        // Single unnamed variant: everything after `--` is its argv, verbatim.
        return Ok((
            globals,
            vec![VariantSpec {
                name: None,
                args: VariantArgs::default(),
                argv: rest[1..].to_vec(),
            }],
        ));
    }
    let mut specs = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let sep = rest[i..]
            .iter()
            .position(|a| a == "--")
            .map(|p| p + i)
            .ok_or_else(|| {
                format!(
                    "variant starting at `{}` has no `--` before its command",
                    rest[i..].join(" ")
                )
            })?;
        let parsed = VariantCli::try_parse_from(&rest[i..sep]).map_err(|e| e.to_string())?;
        let end = rest[sep + 1..]
            .iter()
            .position(|a| a == "--name" || a.starts_with("--name="))
            .map(|p| p + sep + 1)
            .unwrap_or(rest.len());
        let argv = rest[sep + 1..end].to_vec();
        if argv.is_empty() {
            return Err(format!("variant '{}' has no command after `--`", parsed.name));
        }
        specs.push(VariantSpec {
            name: Some(parsed.name),
            args: parsed.args,
            argv,
        });
        i = end;
    }
    Ok((globals, specs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn single_variant_keeps_argv_verbatim() {
        let (g, v) = split_bench_args(&s(&["--runs", "5", "--", "prog", "--name", "x"])).unwrap();
        assert_eq!(g, s(&["--runs", "5"]));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].argv, s(&["prog", "--name", "x"]));
    }

    #[test]
    fn named_variants_split_at_name() {
        let (g, v) = split_bench_args(&s(&[
            "--ready", "exit", "--name", "a", "--env", "K=1", "--", "./a", "-x", "--name", "b", "--", "./b",
        ]))
        .unwrap();
        assert_eq!(g, s(&["--ready", "exit"]));
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].name.as_deref(), Some("a"));
        assert_eq!(v[0].args.env, s(&["K=1"]));
        assert_eq!(v[0].argv, s(&["./a", "-x"]));
        assert_eq!(v[1].argv, s(&["./b"]));
    }

    #[test]
    fn lambda_variants_split_at_name() {
        let (g, v) = split_lambda_args(&s(&[
            "--runtime",
            "./bootstrap",
            "--runs",
            "3",
            "--name",
            "v98",
            "--extensions",
            "./v98",
            "--name",
            "new",
            "--extensions",
            "./new",
            "--memory",
            "128,512",
        ]))
        .unwrap();
        assert_eq!(g, s(&["--runtime", "./bootstrap", "--runs", "3"]));
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].name, "v98");
        assert_eq!(v[1].args.memory, [128, 512]);
        assert!(split_lambda_args(&s(&["--name", "a", "--runs", "3"])).is_err());
    }

    #[test]
    fn missing_separator_is_an_error() {
        let e = split_bench_args(&s(&["--name", "a", "./a"])).unwrap_err();
        assert!(e.contains("no `--`"), "{e}");
        let e = split_bench_args(&s(&["--name", "a", "--"])).unwrap_err();
        assert!(e.contains("no command"), "{e}");
    }
}

impl ExportArgs {
    pub fn exports(&self) -> coldstart::report::export::Exports {
        coldstart::report::export::Exports {
            json: self.export_json.clone(),
            markdown: self.export_markdown.clone(),
            csv: self.export_csv.clone(),
            trace: None,
        }
    }

    /// Refuse before any run an export path that cannot be written.
    pub fn check_dirs(&self) -> anyhow::Result<()> {
        self.exports().check()
    }
}

/// `--order` (the library's [`Order`] knows nothing of the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OrderArg {
    /// Each round runs every variant once, in a fresh random order, so drift
    /// (thermal, other load, page cache) hits all variants alike.
    Shuffled,
    /// All runs of the first variant, then all of the next (hyperfine's order).
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
    /// Each variant's median.
    Median,
    /// Each variant's Hodges–Lehmann shift against the baseline: the comparison.
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
