//! Command-line definitions (clap) and the variant grammar of `bench`.

use crate::experiment::{CiOf, Order};
use clap::{Args, Parser, Subcommand};
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
                          coldstart bench [OPTIONS] --name A [VARIANT OPTIONS] -- COMMAND... \\\n           \
                          --name B [VARIANT OPTIONS] -- COMMAND...",
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
    Explain(Box<ExplainArgs>),
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
        override_usage = "coldstart lambda --runtime BOOTSTRAP [--extensions DIR] \\\n           \
                          [--memory MB,...] [OPTIONS]\n       \
                          coldstart lambda [OPTIONS] --name A --extensions DIR_A \\\n           \
                          --name B --extensions DIR_B",
        after_long_help = LAMBDA_HELP
    )]
    Lambda(Box<LambdaArgs>),
    /// Try the known cold-start optimizations of the program's runtime (JVM, Python,
    /// Node, Go, BEAM, native) as variants of one interleaved experiment and keep what
    /// helps: a table of measured effects and a recommended set (docs/tune.md).
    #[command(after_long_help = TUNE_HELP)]
    Tune(Box<TuneArgs>),
    /// Write stored experiments as one self-contained HTML report (charts inline, no
    /// network): distributions, runs in order, A/B verdicts, sweeps, explain's
    /// waterfall, lambda's lanes, and each target's history.
    #[command(after_long_help = REPORT_HELP)]
    Report(ReportArgs),
    /// Print a shell completion script: `coldstart completions bash > /etc/bash_completion.d/coldstart`.
    Completions(CompletionsArgs),
    /// Print a man page (roff): `coldstart man | man -l -`; a command's own page
    /// (the coldstart-bench(1) the main page refers to): `coldstart man bench | man -l -`.
    Man(ManArgs),
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// The command whose page to print (bench, explain, …) [default: the main page].
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

const REPORT_HELP: &str = "\
EXAMPLES
  coldstart report                # the latest, to ./coldstart-report.html
  coldstart report -o report.html                 # the latest experiment
  coldstart report latest~1 latest -o report.html
  coldstart report 12 --no-history -o r.html";

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Experiments: id, latest, latest~N or git commit prefix [default: latest].
    #[arg(value_name = "REF")]
    pub experiments: Vec<String>,
    /// The HTML file to write (`-`: stdout); the path written is printed.
    #[arg(short, long, value_name = "PATH", default_value = "coldstart-report.html")]
    pub output: PathBuf,
    /// Leave out the history chart (each target's median over stored experiments).
    #[arg(long)]
    pub no_history: bool,
    /// Noise threshold for the comparisons [default: the one each experiment ran with].
    #[arg(long, value_name = "PCT", value_parser = parse_fraction)]
    pub noise: Option<f64>,
    /// No message on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
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
  coldstart gate --baseline latest:main --candidate latest:pr \\
      --max-regression 5% --warn 2%
  coldstart gate --baseline latest~1 --candidate latest --max 12s
  coldstart gate --baseline 1a2b3c --candidate latest \\
      --max-regression 20% --across-invocations";

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

  --profile adds a fourth arm, *profiled*: plain runs sampled by perf_event_open
  (cycles, or the cpu-clock where the kernel has no PMU) from the exec to ready,
  every process and thread of the tree, with frame-pointer callchains; named
  from ELF symbols and the runtimes' perf maps (Node
  --perf-basic-prof-only-functions, the JVM's DumpPerfMapAtExit or jcmd
  Compiler.perfmap, Python ≥ 3.12's perf trampoline), switched on through the
  environment. Every profiled run's samples are merged
  per phase into a flame graph; profiled ÷ untraced is the profiler's overhead.

EXAMPLES
  coldstart explain --ready exit -- python3 -c pass
  coldstart explain --ready http://127.0.0.1:8080/ --export-trace run.json \\
      -- ./server
  (open run.json in https://ui.perfetto.dev or chrome://tracing)
  coldstart explain --ready listen --export-html explain.html -- ./server
  # classes by package:
  coldstart explain --ready log:listening -- java -jar app.jar
  # the tracer only:
  coldstart explain --adapter none --no-otlp --ready exit -- ./tool
  # the startup CPU profile as a flame graph:
  coldstart explain --profile --export-flamegraph startup.svg \\
      --ready exit -- ./tool
  # A vs B: both builds' arms interleaved; which phases and rows differ:
  coldstart explain --ready http://127.0.0.1:8080/ \\
      --name A -- ./server-a --name B -- ./server-b

TRUE TIMES
  Every traced figure is shown beside an untraced estimate: the tracer's cost per
  stop is calibrated on this machine when explain starts and subtracted per stop,
  scaled so the traced runs match the untraced ones; the report states the
  calibrated model's error against the untraced median.";

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// Readiness, as for bench: exit, tcp:[HOST:]PORT, http://…, https://…, log:REGEX,
    /// file:PATH, listen.
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
    /// `-` (or /dev/stdout): to stdout, the report then goes to stderr.
    #[arg(long, value_name = "PATH")]
    pub export_json: Option<PathBuf>,
    /// Write a Chrome Trace Event file (Perfetto, chrome://tracing): one track per
    /// process/thread, one per source inside the runtime.
    #[arg(long, value_name = "PATH")]
    pub export_trace: Option<PathBuf>,
    /// Write a self-contained HTML report: the waterfall, the sections, the arms' distributions.
    #[arg(long, value_name = "PATH")]
    pub export_html: Option<PathBuf>,
    /// Profile the CPU from spawn to ready in a fourth arm (`profiled`): a flame graph
    /// per phase, the hottest functions, and the profiler's overhead (see HOW).
    #[arg(long)]
    pub profile: bool,
    /// Write the startup flame graph as an interactive SVG (with --profile).
    #[arg(long, value_name = "PATH", requires = "profile")]
    pub export_flamegraph: Option<PathBuf>,
    /// Write the profile as folded stacks, `phase;thread;…;leaf COUNT` (with --profile).
    #[arg(long, value_name = "PATH", requires = "profile")]
    pub export_folded: Option<PathBuf>,
    /// Write the profile as speedscope JSON, one profile per phase (with --profile).
    #[arg(long, value_name = "PATH", requires = "profile")]
    pub export_speedscope: Option<PathBuf>,
    /// Runtime adapters for the adapted runs: `auto` (from the program that finally
    /// runs: python, node, deno, jvm, go, beam, else native), `none`, or a list such as
    /// `python,native`. Each turns on the runtime's own startup report (importtime,
    /// -Xlog:class+load, a require hook, inittrace, LD_DEBUG) and its cost is measured.
    #[arg(long, value_name = "auto|none|LIST", default_value = "auto")]
    pub adapter: String,
    /// JVM classes rolled up by package prefix: N dot-separated parts (2 gives
    /// `org.springframework`); by default each class's whole package.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub class_depth: Option<u32>,
    /// No OTLP/HTTP receiver (by default the target gets OTEL_EXPORTER_OTLP_ENDPOINT in
    /// every arm: the adapted runs' receiver keeps the spans its OpenTelemetry SDK
    /// exports, a section of their own; the untraced and traced runs' receiver discards
    /// them, so the SDK behaves alike in all three).
    #[arg(long)]
    pub no_otlp: bool,
    /// A mark from an output line, NAME=REGEX (repeatable), shown with the app's checkpoints.
    #[arg(long = "mark", value_name = "NAME=REGEX")]
    pub marks: Vec<String>,
    /// Requests to send after ready in every run (GET to --request-url, default: the
    /// http readiness URL): each is a phase (`request 1`: the cold handler) [default: 0].
    #[arg(long, default_value_t = 0)]
    pub requests: usize,
    /// URL for --requests (when readiness is not http).
    #[arg(long)]
    pub request_url: Option<String>,
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
    /// explain A vs B: `--name A [--ready …] [-e …] -- COMMAND --name B -- COMMAND`
    /// (split off before clap, as bench's variants).
    #[arg(skip)]
    pub variants: Vec<VariantSpec>,
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
            noise: crate::stats::DEFAULT_NOISE,
        }
    }
}

pub use crate::bounds::parse_fraction;

impl CommonArgs {
    /// Where a command's results go.
    pub fn outputs(
        &self,
        config: Option<&crate::config::Config>,
        root: &std::path::Path,
    ) -> crate::session::Outputs {
        crate::session::Outputs {
            store: (!self.no_store)
                .then(|| crate::config::store_spec(self.store.store.as_deref(), config, root)),
            quiet: self.quiet,
            noise: self.noise.noise,
            exports: self.export.exports(),
        }
    }

    /// The run-order seed: --seed, else one drawn from the clock and our pid.
    pub fn seed(&self) -> u64 {
        self.seed
            .unwrap_or_else(|| crate::clock::now_ns() ^ u64::from(std::process::id()))
    }
}

/// The experiment's export files (bench, lambda, show).
#[derive(Args, Debug, Clone, Default)]
pub struct ExportArgs {
    /// Write settings, statistics and every raw sample as JSON (docs/json-schema.md).
    /// `-` (or /dev/stdout): to stdout, the table then goes to stderr.
    #[arg(long, value_name = "PATH")]
    pub export_json: Option<PathBuf>,
    /// Write the result table as Markdown (`-`: stdout).
    #[arg(long, value_name = "PATH")]
    pub export_markdown: Option<PathBuf>,
    /// Write one CSV row per run (`-`: stdout).
    #[arg(long, value_name = "PATH")]
    pub export_csv: Option<PathBuf>,
    /// Write a self-contained HTML report (charts inline; opens from disk).
    #[arg(long, value_name = "PATH")]
    pub export_html: Option<PathBuf>,
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
    /// Write a self-contained HTML report of the comparison.
    #[arg(long, value_name = "PATH")]
    pub export_html: Option<PathBuf>,
    #[command(flatten)]
    pub noise: NoiseArg,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Args, Debug)]
pub struct GateArgs {
    /// Baseline experiment: REF or REF:VARIANT. Without one the candidate is judged
    /// on --max (and --max-failures) alone.
    #[arg(long)]
    pub baseline: Option<String>,
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
    /// Accept up to N failed candidate runs (or P% of them). By default a candidate
    /// that fails more often than the baseline fails the gate: "more often" is Fisher's
    /// exact test, one-sided, at 5 % (7 of 20 vs 0 of 20 fails; 1 of 20 vs 0 of 20 only
    /// warns, as no evidence yet). Failures need `bench --keep-going` to be stored.
    #[arg(long, value_name = "N|P%")]
    pub max_failures: Option<String>,
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
    /// Write a self-contained HTML report: the decision, both sides' distributions and the comparison.
    #[arg(long, value_name = "PATH")]
    pub export_html: Option<PathBuf>,
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
  others are compared with. A command after `--` is run directly (no shell). A
  quoted command string instead, `coldstart bench 'sleep 0.1' 'sleep 0.2'`, is one
  variant each, run through --shell (sh) unless a coldstart.toml names it a target.

READINESS (--ready)
  exit                 the process exits (default)
  tcp:[HOST:]PORT      a TCP connect succeeds (HOST defaults to 127.0.0.1)
  http://HOST:PORT/P   a GET answers 2xx/3xx; the time includes the whole response
  log:REGEX            a stdout/stderr line matches; named groups (?P<name>..) are
                       captured per run and summarised when numeric
  file:PATH            the file exists (inotify; removed after each run)
  https://HOST:PORT/P  the same GET over TLS
  listen               the target calls listen(2) (an LD_PRELOAD shim; static and
                       Go programs are traced instead)
  tcp and http poll every --poll-interval (default 200us); exit, log, file and
  listen are event-driven. A port that already accepts connections before the
  spawn is refused.

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

SWEEPS
  --param heap=64m,96m,128m   a list; --param n=1..16:x2 (1 2 4 8 16), n=1..10:1
  `{heap}` in the command, --env values, --cwd and --ready takes each value
  (`{{heap}}` is a literal `{heap}`; an unknown `{name}`, or a parameter used
  nowhere, is an error). Several --param make a grid. Each variant runs at every
  value as its own variant, NAME[heap=64m], all in the same shuffled rounds. The
  sweep table has a row per value and a column group per variant; each variant is
  compared with the baseline at the same value, and with --compare-along heap each
  value with the variant's first one. --resource heap adds the cheapest value not
  shown to be slower than the fastest (median within --noise, or no significant
  difference). Stored points are referenced as
  latest:NAME[heap=64m] (or latest:[heap=64m] for every variant at that value).

FAILURES
  A run fails when the target is not ready before --timeout, exits before ready,
  or (--ready exit) exits non-zero or by a signal: a crash is not a fast start.
  -i/--ignore-failure counts any exit as success; --success-exit-codes 0,3 names
  the codes that do. A failed run stops the experiment (exit 1) unless --keep-going;
  failed runs are listed with their status and the target's last output lines.

SET-UP AND CONDITIONS (all outside the timed interval)
  --setup CMD      once per variant, before its first run (a build, a fixture)
  --prepare CMD    before every run, warmups too: reset state (wipe a database
                   directory, restart a dependency); its failure fails that run
  --conclude CMD   after every run; --cleanup CMD once per variant after its last
                   Hooks run through --shell with the variant's --env and --cwd.
                   Before any --name: given once (all variants) or once per
                   variant in order; after a --name: that variant's own.
                   A process a hook leaves running is killed with the next run.
  --cache cold     every run starts with the target's own files out of the page
                   cache: one traced run per variant learns them (executables,
                   libraries, .pyc, jars, node_modules, data files), then each is
                   evicted (posix_fadvise DONTNEED, no root needed) and checked
                   with mincore. Each run records uncached_pages, uncached_mib
                   (what it could only find on disk) and cached_mib (what stayed:
                   pages mapped by a running process, e.g. libc, cannot be
                   evicted; a note names the files).
  --drop-caches    root: sync and drop the whole system's caches before each run.

FLAGS FOR HYPERFINE USERS
  These work as in hyperfine: -r/--runs, -w/--warmup, -p/--prepare, -C/--conclude,
  -s/--setup, -c/--cleanup, -S/--shell, -N (no shell: the string is split into
  words), -i/--ignore-failure, --show-output, --export-json/-markdown/-csv, and
  command strings as positional arguments. Differences: runs of several commands
  are interleaved in shuffled rounds (--order sequential for hyperfine's order);
  a command string's time includes its shell's own start (hyperfine subtracts an
  estimate of it): give -N, or the command after `--`, to time the program alone.
    hyperfine -N --warmup 3 'ls -la'      →  coldstart bench -N --warmup 3 'ls -la'
    hyperfine -p 'make clean' 'make'      →  coldstart bench -p 'make clean' 'make'
    hyperfine 'sleep 0.1' 'sleep 0.2'     →  coldstart bench 'sleep 0.1' 'sleep 0.2'

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
  coldstart bench --cache cold --runs 10 -- python3 -c 'import numpy'
  coldstart bench --prepare 'rm -rf data && mkdir data' \\
      --ready tcp:5432 -- ./db --dir data
  coldstart bench --runs 30 --ready http://127.0.0.1:8080/health \\
      --requests 5 -- ./server --port 8080
  coldstart bench --ready exit --name one-cpu --cpus 1 -- ./tool \\
      --name half --cpus 0.5 -- ./tool
  coldstart bench --ready 'log:listening on (?P<port>\\d+)' \\
      --name baseline -- ./v98/bootstrap \\
      --name candidate -- ./build/bootstrap
  coldstart bench --target-ci 2% --max-runs 200 -- ./cli --version
  coldstart bench --export-html report.html --name a -- ./a --name b -- ./b
  coldstart bench --param heap=64m,128m,256m --resource heap --runs 10 \\
      --name c2 -- java -Xmx{heap} -jar app.jar \\
      --name c1 -- java -Xmx{heap} -XX:TieredStopAtLevel=1 -jar app.jar";

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Start a variant: `--name NAME [--env K=V] [--ready R] [--cwd DIR] -- COMMAND...`
    /// (see VARIANTS; repeat for each variant, the first is the baseline).
    // Listed for --help, completions and the man page; the variant grammar
    // (split_bench_args) takes every --name before clap parses the rest.
    #[arg(long, value_name = "NAME")]
    #[allow(dead_code)]
    pub name: Option<String>,
    /// Targets named in coldstart.toml, or command strings run through the shell
    /// (`'sleep 0.1'`, as hyperfine), each a variant (instead of a command after `--`).
    #[arg(value_name = "TARGET|COMMAND")]
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
    /// Stop adaptively once both ends of every variant's median 95% CI are within this
    /// of the median (e.g. `2%` of the median, or `5ms`; a lopsided interval runs on
    /// until its far end is). Uses --min-runs/--max-runs instead of --runs.
    #[arg(long, value_name = "PCT|MS")]
    pub target_ci: Option<String>,
    /// With --target-ci: narrow each variant's median CI, or each variant's comparison
    /// with the baseline (needs interleaved runs): a share is held to the relative
    /// interval as printed, a duration to the shift's in ms.
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
    /// exit; by default such a run fails: a crash is not a fast start). Also accepts a
    /// run in whose tree the --memory limit killed a process (then with a note).
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
    pub conditions: ConditionArgs,
    #[command(flatten)]
    pub sweep: SweepArgs,
    #[command(flatten)]
    pub shared: VariantArgs,
    /// Variants (see VARIANTS below); filled in by the variant grammar, not by clap.
    #[arg(skip)]
    pub variants: Vec<VariantSpec>,
}

/// bench's sweep (see SWEEPS in `bench --help`).
#[derive(Args, Debug, Clone, Default)]
pub struct SweepArgs {
    /// Sweep a parameter: NAME=V1,V2,... or a range NAME=FROM..TO:xFACTOR / :STEP;
    /// `{NAME}` in the command, --env, --cwd or --ready takes each value. Repeat for
    /// a grid. Every variant runs at every value, all interleaved.
    #[arg(long = "param", value_name = "NAME=VALUES")]
    pub params: Vec<String>,
    /// Compare each value of this parameter with its first value, within each variant.
    #[arg(long, value_name = "NAME")]
    pub compare_along: Option<String>,
    /// This parameter is a resource (more costs more): report its cheapest value not
    /// shown to be slower than the fastest (repeatable).
    #[arg(long = "resource", value_name = "NAME")]
    pub resources: Vec<String>,
}

/// Options that apply to one variant (after its --name) or to all (before any).
#[derive(Args, Debug, Clone, Default)]
pub struct VariantArgs {
    /// Readiness: exit, tcp:[HOST:]PORT, http://…, https://…, log:REGEX, file:PATH, listen
    /// (see READINESS).
    #[arg(long, value_name = "PROBE")]
    pub ready: Option<String>,
    /// Environment variable for the target, KEY=VALUE (repeatable).
    #[arg(short, long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Working directory of the target.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub hooks: HookArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Commands around each variant's runs (hyperfine's), all untimed. Given before any
/// variant: once for all, or once per variant in order; after a `--name`: that variant's.
/// Raw strings: a sweep may substitute into them.
#[derive(Args, Debug, Clone, Default)]
pub struct HookArgs {
    /// Run CMD before every run (warmups too), untimed, e.g. to reset state; its
    /// failure fails that run.
    #[arg(short = 'p', long, value_name = "CMD")]
    pub prepare: Vec<String>,
    /// Run CMD after every run; its failure fails that run.
    #[arg(short = 'C', long, value_name = "CMD")]
    pub conclude: Vec<String>,
    /// Run CMD once per variant, before its first run; its failure stops bench.
    #[arg(short = 's', long, value_name = "CMD")]
    pub setup: Vec<String>,
    /// Run CMD once per variant, after all runs.
    #[arg(short = 'c', long, value_name = "CMD")]
    pub cleanup: Vec<String>,
}

/// How each of bench's runs starts: page cache, shell, output.
#[derive(Args, Debug, Clone)]
pub struct ConditionArgs {
    /// Page cache at each run's start: `warm` (as the last run left it) or `cold`
    /// (the target's own files, learnt by one traced run per variant, evicted
    /// before every run; no root needed). Cold runs record `uncached_mib` and `cached_mib`.
    #[arg(long, value_enum, default_value_t = CacheArg::Warm, value_name = "warm|cold")]
    pub cache: CacheArg,
    /// sync and drop the whole system's page cache, dentries and inodes before
    /// every run (root: writes /proc/sys/vm/drop_caches).
    #[arg(long)]
    pub drop_caches: bool,
    /// The target's (and hooks') output to this terminal instead of being kept
    /// for failure messages. Costs the target time to write it.
    #[arg(long)]
    pub show_output: bool,
    /// The shell for command strings and hooks, e.g. `bash` or `bash --norc`
    /// [default: sh]; `none` is -N.
    #[arg(short = 'S', long, value_name = "SHELL")]
    pub shell: Option<String>,
    /// No shell: a command string is split into words and run directly
    /// (hyperfine's -N). Commands after `--` never go through a shell.
    #[arg(short = 'N')]
    pub no_shell: bool,
}

/// `--cache`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CacheArg {
    Warm,
    Cold,
}

impl From<CacheArg> for crate::run::conditions::Cache {
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
    /// These flags, each unset one taken from `shared` (the flags before any --name).
    pub fn over(&self, shared: &LimitArgs) -> LimitArgs {
        LimitArgs {
            cpus: self.cpus.clone().or_else(|| shared.cpus.clone()),
            cpuset: self.cpuset.clone().or_else(|| shared.cpuset.clone()),
            memory: self.memory.clone().or_else(|| shared.memory.clone()),
        }
    }

    /// These limits, parsed (see `over`).
    pub fn parse_over(&self, shared: &LimitArgs) -> anyhow::Result<crate::limits::Limits> {
        let l = self.over(shared);
        crate::limits::Limits::parse(l.cpus.as_deref(), l.cpuset.as_deref(), l.memory.as_deref())
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
  Options before the first `--name` apply to all variants; each `--name NAME`
  starts a variant that may set its own --runtime, --handler, --code, --layer,
  --extensions, --memory, --env, --bare, --sandbox/--no-sandbox.
  Each memory size of a variant is its own variant (a sweep of the parameter
  `memory`, a resource), named NAME[memory=MB]; the sweep table compares each
  variant with the baseline at the same size, --compare-along memory each size
  with the first, and a best-value line names the smallest size not shown to be
  slower than the fastest. Stored points: latest:NAME[memory=512]. The first variant is
  the baseline the others are compared with.

WHAT A RUN IS
  A fresh execution environment: the Lambda APIs on a free loopback port
  (AWS_LAMBDA_RUNTIME_API), every file of --extensions started at once, the
  runtime started once they registered; Init Duration = T0 → the last of the
  runtime's and the extensions' first /next. Then one invoke of --event (plus
  --invokes N warm ones, each with its REPORT) and Lambda's shutdown.
  SANDBOX (default where root or a user namespace allows; --no-sandbox: off):
  a private mount namespace per environment, made before T0, where `sandbox`
  and `sandbox.localdomain` resolve to 127.0.0.1, --layer dirs are merged at
  /opt (later wins; their extensions/ and --extensions at /opt/extensions) and
  --code is /var/task (LAMBDA_TASK_ROOT). The host's mount table is never
  changed.
  Per run: Init Duration (the table); marks runtime_ready, ext.NAME.register,
  ext.NAME.ready and the SDK checkpoints of every process (COLDSTART_FD);
  metrics invoke_ms, post_runtime_ms, max_memory_mb, billed_ms, throttled_ms.

LIMITS
  A cgroup per run (v2, or v1 cpu + memory) holds memory at --memory and CPU
  at memory/1769 vCPU, except an on-demand init: max(--init-cpus 1, share)
  vCPU for up to --init-boost-seconds 10 (AWS's init boost; --no-init-boost:
  none). Init is limited by --init-timeout (10 s, as on Lambda); a failed init
  is retried inside the invoke (a suppressed init), and the run counts as
  failed.

MANAGED RUNTIMES
  --runtime python3.11, nodejs20.x or java17 runs --handler from --code with
  that runtime's real interface client (awslambdaric, aws-lambda-ric, the Java
  client; installed by examples/lambda-ric/setup.sh into target/lambda-ric, or
  COLDSTART_LAMBDA_RIC_DIR) on the host's Python 3.11, Node 20 or Java 17,
  with Lambda's command line, AWS_EXECUTION_ENV, layer paths (PYTHONPATH,
  NODE_PATH, the classpath) and AWS_LAMBDA_EXEC_WRAPPER (--env). Any other
  value of --runtime is a bootstrap's path.

EXAMPLES
  coldstart lambda --runtime python3.11 --code ./unzipped \\
      --handler app.handler --layer ./layer1 --memory 512
  coldstart lambda --runtime ./bootstrap --extensions ./layer/extensions \\
      --memory 1024 --runs 25 --event event.json
  coldstart lambda --runtime ./bootstrap --extensions ./ext \\
      --memory 128,512,1769,3008
  coldstart lambda --runtime ./bootstrap \\
      --name v98 --extensions ./v98 --name candidate --extensions ./new
  # the emulator's overhead:
  coldstart lambda --runtime ./bootstrap --no-cgroup \\
      --name bare --bare --name emulated";

#[derive(Args, Debug)]
pub struct LambdaArgs {
    /// Start a variant: `--name NAME [--runtime ID|P] [--code DIR] [--layer DIR] [--memory MB,...]`
    /// (see VARIANTS; the first is the baseline).
    // Listed for --help, completions and the man page; split_lambda_args takes it first.
    #[arg(long, value_name = "NAME")]
    #[allow(dead_code)]
    pub name: Option<String>,
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
    /// Function timeout in seconds (the invoke, and a suppressed init); at most
    /// 900, as on Lambda.
    #[arg(short, long, default_value_t = 3.0, value_name = "S")]
    pub timeout: f64,
    /// Warm invokes of each environment after its cold one (each with its REPORT;
    /// "later requests" in the results).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub invokes: usize,
    /// Init phase limit in seconds (Lambda: 10).
    #[arg(long, default_value_t = 10.0, value_name = "S")]
    pub init_timeout: f64,
    #[command(flatten)]
    pub init_cpu: LambdaInitCpuArgs,
    /// Run without cgroups: no memory limit, no CPU quota (Max Memory Used from procfs).
    #[arg(long)]
    pub no_cgroup: bool,
    /// AWS_LAMBDA_FUNCTION_NAME.
    #[arg(long, default_value = "coldstart-function")]
    pub function_name: String,
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
    /// With several --memory sizes: compare each size with the first, within each
    /// variant (`memory`, the only parameter lambda sweeps).
    #[arg(long, value_name = "memory")]
    pub compare_along: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub shared: LambdaVariantArgs,
    /// Filled in by the variant grammar, not by clap.
    #[arg(skip)]
    pub variants: Vec<LambdaVariantSpec>,
}

/// The init CPU boost model (see docs/lambda.md, "Memory → CPU").
#[derive(Args, Debug, Clone)]
pub struct LambdaInitCpuArgs {
    /// No init boost: init runs at the memory's CPU share (a worst case; provisioned
    /// concurrency has no boost either).
    #[arg(long, conflicts_with_all = ["init_cpus", "init_boost_seconds"])]
    pub no_init_boost: bool,
    /// vCPUs an on-demand init gets (AWS: "a full vCPU"), at least the memory's share.
    #[arg(long, default_value_t = 1.0, value_name = "N")]
    pub init_cpus: f64,
    /// How long into init the boost lasts (AWS: "up to 10 seconds").
    #[arg(long, default_value_t = 10.0, value_name = "S")]
    pub init_boost_seconds: f64,
    /// The boost is the default now; kept so older scripts run.
    #[arg(long, hide = true, conflicts_with = "no_init_boost")]
    pub init_boost: bool,
}

/// Options of one Lambda variant (after its --name) or of all (before any).
#[derive(Args, Debug, Clone, Default)]
pub struct LambdaVariantArgs {
    /// The runtime: a managed runtime's identifier (python3.11, nodejs20.x, java17:
    /// its real runtime interface client runs --handler from --code), or the path of
    /// a `provided` runtime's bootstrap (./python3.11 for a file of that name).
    #[arg(long, value_name = "ID|PATH")]
    pub runtime: Option<PathBuf>,
    /// _HANDLER: what the runtime runs (module.function, Class::method)
    /// [default: function.handler].
    #[arg(long, value_name = "HANDLER")]
    pub handler: Option<String>,
    /// The function's unpacked .zip: the task root (LAMBDA_TASK_ROOT; /var/task in
    /// the sandbox) and the runtime's working directory [default: the bootstrap's
    /// directory].
    #[arg(long, value_name = "DIR")]
    pub code: Option<PathBuf>,
    /// An unpacked layer .zip (repeatable, in order; a later layer wins a path):
    /// merged at /opt in the sandbox; its python/, nodejs/, java/lib, bin/ and lib/
    /// are on the runtime's paths and its extensions/ are started.
    #[arg(long, value_name = "DIR")]
    pub layer: Vec<PathBuf>,
    /// Directory of external extensions: every file in it is started (like /opt/extensions).
    #[arg(long, value_name = "DIR")]
    pub extensions: Option<PathBuf>,
    /// Run in the sandbox's mount namespace, or fail: `sandbox` resolves to the
    /// APIs' address, /opt is the layers, /var/task the code [default: on when
    /// root or a user namespace can make it].
    #[arg(long, conflicts_with = "no_sandbox")]
    pub sandbox: bool,
    /// Run on the host's paths (no mount namespace).
    #[arg(long)]
    pub no_sandbox: bool,
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
        let parsed = LambdaVariantCli::try_parse_from(&args[i..end]).map_err(|e| lambda_variant_error(&e))?;
        specs.push(LambdaVariantSpec {
            name: parsed.name,
            args: parsed.args,
        });
        i = end;
    }
    Ok((args[..first].to_vec(), specs))
}

/// A variant block's clap error in one line (the caller adds `error:`): an
/// option that is not per-variant says where it belongs.
fn lambda_variant_error(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::UnknownArgument {
        if let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) {
            let flag = arg.split('=').next().unwrap_or(arg);
            return format!(
                "{flag} is not a per-variant option: options for all variants go before the first --name"
            );
        }
    }
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
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
        let e = split_lambda_args(&s(&["--name", "a", "--runs", "3"])).unwrap_err();
        assert_eq!(
            e,
            "--runs is not a per-variant option: options for all variants go before the first --name"
        );
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
    pub fn exports(&self) -> crate::report::export::Exports {
        crate::report::export::Exports {
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

const TUNE_HELP: &str = "\
EXAMPLES
  coldstart tune --ready http://127.0.0.1:8080/health -- java -jar app.jar
  coldstart tune --ready exit -- python3 -m mycli --version
  coldstart tune --list -- node server.js
  coldstart tune --only appcds,tiered-c1 --catalogue team.toml -- java -jar app.jar

Candidates come from the built-in catalogue (catalogue/*.toml) and --catalogue files
(same format: docs/tune.md). Each is set up once (untimed: training run, cache), checked
by one run (a failure is reported broken), then measured against the unchanged command.";

/// `coldstart tune` (src/cmd/tune.rs).
#[derive(Args, Debug)]
pub struct TuneArgs {
    /// Readiness, as for bench: exit, tcp:[HOST:]PORT, http://…, log:REGEX, file:PATH, listen.
    #[arg(long, value_name = "PROBE", default_value = "exit")]
    pub ready: String,
    /// Environment variable for the target, KEY=VALUE (repeatable).
    #[arg(short, long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Working directory of the target.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Print the catalogue for the detected runtime with each candidate's rationale; run nothing else.
    #[arg(long)]
    pub list: bool,
    /// Only these candidates (comma-separated ids).
    #[arg(long, value_delimiter = ',', value_name = "ID,...")]
    pub only: Vec<String>,
    /// Not these candidates (comma-separated ids, repeatable).
    #[arg(long, value_delimiter = ',', value_name = "ID,...")]
    pub skip: Vec<String>,
    /// A catalogue file (TOML) or a directory of them, adding or replacing candidates (repeatable).
    #[arg(long, value_name = "PATH")]
    pub catalogue: Vec<PathBuf>,
    /// The runtime's catalogue to use instead of the detected one (jvm, python, node, go, beam, native).
    #[arg(long, value_name = "NAME")]
    pub runtime: Option<String>,
    /// Seconds the measuring may take at most (set-up and check runs excluded):
    /// it bounds the runs per variant.
    #[arg(long, default_value_t = 600.0, value_name = "SECS")]
    pub budget: f64,
    /// Stop once both ends of every candidate's shift CI are within this of the shift (% of the baseline median, or ms).
    #[arg(long, default_value = "2%", value_name = "PCT|MS")]
    pub target_ci: String,
    /// Runs per variant before stopping is considered.
    #[arg(long, default_value_t = 10)]
    pub min_runs: usize,
    /// Runs per variant at most (the budget may allow fewer).
    #[arg(long, default_value_t = 40)]
    pub max_runs: usize,
    /// Unmeasured runs per variant first.
    #[arg(short, long, default_value_t = 1)]
    pub warmup: usize,
    /// Seconds a run may take to become ready.
    #[arg(short, long, default_value_t = 30.0)]
    pub timeout: f64,
    /// Requests after ready (GET to --request-url, default: the http readiness URL, which
    /// the probe has just answered: a real page shows the work moved to it).
    #[arg(long, default_value_t = 0)]
    pub requests: usize,
    /// URL for --requests (when readiness is not http).
    #[arg(long)]
    pub request_url: Option<String>,
    #[command(flatten)]
    pub noise: NoiseArg,
    /// Write the table (rows, recommended set) as JSON.
    #[arg(long, value_name = "PATH")]
    pub export_json: Option<PathBuf>,
    /// Write the table as Markdown, with each candidate's rationale and source.
    #[arg(long, value_name = "PATH")]
    pub export_markdown: Option<PathBuf>,
    /// Write a self-contained HTML report: the table, each experiment's distributions and comparisons.
    #[arg(long, value_name = "PATH")]
    pub export_html: Option<PathBuf>,
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
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}
