//! The commands' long reference (the end of `--help`, and the man pages), written
//! unwrapped and laid out for the width at hand: wrapped to the terminal for
//! `--help`, as roff for `coldstart man`.
//!
//! The markup, one block per source line:
//! - `# TITLE`: a section heading;
//! - `TERM\tTEXT`: a definition (leading spaces indent the list further; an empty
//!   TERM continues the item above);
//! - a line that starts with a space: verbatim (examples are never wrapped: a
//!   command is copied whole, and a long one continues with ` \`);
//! - an empty line: an empty line;
//! - anything else: a paragraph.

/// Each command's reference, by command name.
pub const PAGES: &[(&str, &str)] = &[
    ("bench", BENCH),
    ("explain", EXPLAIN),
    ("compare", REFERENCES),
    ("gate", GATE),
    ("lambda", LAMBDA),
    ("lambda-serve", LAMBDA_SERVE),
    ("tune", TUNE),
    ("report", REPORT),
    ("fleet", FLEET),
];

const FLEET: &str = "\
# EMIT
  coldstart fleet emit ENGINE --shards N [OPTIONS] -- BENCH ARGS
Prints the engine's file: each of its N shards runs `coldstart bench --shard K/N --experiment NAME BENCH ARGS` on a machine of its own, into the store given by the engine's secret (COLDSTART_STORE). The experiment's name is derived from the engine's run id (the Job's uid, GITHUB_RUN_ID, CI_PIPELINE_ID, SLURM_ARRAY_JOB_ID), which a retried shard keeps.
k8s\tan Indexed Job: completions and parallelism N, one pod per node, requests = limits (Guaranteed QoS), backoffLimitPerIndex; the DSN from a Secret
github\ta workflow: strategy.matrix.shard 0..N-1, fail-fast off; the DSN from secrets
gitlab\ta job with parallel: N (CI_NODE_INDEX is 1-based: the script subtracts 1)
slurm\tan sbatch script: --array=0-(N-1), --exclusive
-o FILE writes it atomically and refuses an existing file without --force. Exit status: 0, or 2 for bad input.

# STATUS
  coldstart fleet status [NAME|ID] [--json]
Shards done, running and missing of a fleet experiment (the newest by default), a row per shard: state, attempt, runs (and how many a retry replaced), machine, time. `coldstart show NAME` analyses it with machines as blocks: a table per variant with each machine's shift and interval and the pooled verdict (docs/fleet.md).

# EXAMPLES
  coldstart fleet status slurm-812
  coldstart fleet emit k8s --shards 8 --image registry.example/svc:1 \\
      -- --runs 30 --ready tcp:8080 -- ./server
  coldstart fleet emit github --shards 4 -o .github/workflows/fleet.yml \\
      -- --name main -- ./main/server --name pr -- ./pr/server
  coldstart fleet emit slurm --shards 16 -- --runs 50 -- ./server > fleet.sbatch";

const REPORT: &str = "\
# EXAMPLES
  coldstart report                # the latest, to ./coldstart-report.html
  coldstart report -o report.html                 # the latest experiment
  coldstart report latest~1 latest -o report.html
  coldstart report 12 --no-history -o r.html";

const REFERENCES: &str = "\
# REFERENCES
An experiment is named by its id, `latest`, `latest~N` (N before the newest), or a git commit prefix (the newest experiment recorded at that commit). Add `:VARIANT` to pick one variant; without it, variants are matched by name.";

const GATE: &str = "\
# LIMITS
Per target, i.e. variant name present in both; from the flags or coldstart.toml.
--max 12s\tthe candidate's median must not exceed 12 s (an SLO)
--max-regression 5%|300ms\tthe candidate must not be slower than the baseline by more
--warn 2%|100ms\twarn beyond this slowdown
--warn-margin 5%\twarn when an estimate comes within 5% of a limit

# DECISION
Both sides variants of ONE interleaved experiment (REF:A vs REF:B): the 95% CI of the Hodges-Lehmann shift decides. fail when the whole CI is beyond the limit; warn, saying why it passed, when the estimate is beyond but the CI reaches below.
Separate experiments (e.g. master's stored run vs the PR's): no CI can be given for the drift between invocations, so a relative limit is refused unless --across-invocations: then the shift estimate decides and the table says so; keep such limits wider than that drift (bench/aa.py measures it). --max needs no baseline and works either way.
A side that is incomplete (coldstart killed), stopped at a failed run, or has no successful run fails. Comparing an experiment's variant with itself is refused.
Exit status: 1 if any target fails, 0 otherwise (warnings included); 2 bad input.

# OUTPUT
The Markdown table is printed; --export-markdown (or --markdown) also writes it to a file, --export-html draws the decision with both sides' distributions.

# REFERENCES
An experiment is named by its id, `latest`, `latest~N`, or a git commit prefix. Add `:VARIANT` to pick one variant, e.g. compare two variants of one interleaved run: --baseline latest:main --candidate latest:pr

# EXAMPLES
  coldstart bench --name main -- ./main/server --name pr -- ./pr/server
  coldstart gate --baseline latest:main --candidate latest:pr \\
      --max-regression 5% --warn 2%
  coldstart gate --baseline latest~1 --candidate latest --max 12s
  coldstart gate --baseline 1a2b3c --candidate latest \\
      --max-regression 20% --across-invocations";

const EXPLAIN: &str = "\
# HOW
coldstart follows the whole process tree with ptrace and a seccomp filter that stops it only on execve, open, executable mmap, connect, bind, listen, accept, the first write on a socket, clone and exit. Phases: exec-chain (spawn → exec of the final program: shims and wrappers show here), loader (→ its libraries are mapped), init (→ first listen, or ready), listen→ready, first request.
An experiment of three arms, `untraced`, `traced` and `adapted`, run in shuffled rounds after --warmup rounds; the traced run nearest the traced median is shown, and traced ÷ untraced is the tracer's overhead (the Hodges–Lehmann ratio with its 95% CI). Stored like bench's runs: `coldstart history` lists it, `coldstart show` prints it again, `coldstart compare A B` compares two explains arm by arm.

A third kind of run, *adapted*, is interleaved too: untraced, with the runtime's own startup report switched on through the environment (see --adapter), the app's checkpoints (COLDSTART_FD, --mark) collected, and an OTLP/HTTP receiver on a loopback port exported as OTEL_EXPORTER_OTLP_ENDPOINT. Each source gets its own section under the timeline (top imports, classes by package, package inits, checkpoints, spans), and adapted ÷ untraced is the adapters' overhead.

--profile adds a fourth arm, *profiled*: plain runs sampled by perf_event_open (cycles, or the cpu-clock where the kernel has no PMU) from the exec to ready, every process and thread of the tree, with frame-pointer callchains; named from ELF symbols and the runtimes' perf maps (Node --perf-basic-prof-only-functions, the JVM's DumpPerfMapAtExit or jcmd Compiler.perfmap, Python ≥ 3.12's perf trampoline), switched on through the environment. Every profiled run's samples are merged per phase into a flame graph; profiled ÷ untraced is the profiler's overhead.

# EXAMPLES
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

# TRUE TIMES
Every traced figure is shown beside an untraced estimate: the tracer's cost per stop is calibrated on this machine when explain starts and subtracted per stop, scaled so the traced runs match the untraced ones; the report states the calibrated model's error against the untraced median.";

const BENCH: &str = "\
# VARIANTS
Everything before the first `--name` or `--` applies to all variants. Each variant is `--name NAME [--env K=V]... [--ready R] [--cwd DIR] -- COMMAND ARGS...`; its COMMAND runs until the next `--name`. The first variant is the baseline the others are compared with. A command after `--` is run directly (no shell). A quoted command string instead, `coldstart bench 'sleep 0.1' 'sleep 0.2'`, is one variant each, run through --shell (sh) unless a coldstart.toml names it a target.

# READINESS (--ready)
exit\tthe process exits (default)
tcp:[HOST:]PORT\ta TCP connect succeeds (HOST defaults to 127.0.0.1)
http://HOST:PORT/P\ta GET answers 2xx/3xx; the time includes the whole response
log:REGEX\ta stdout/stderr line matches; named groups (?P<name>..) are captured per run and summarised when numeric
file:PATH\tthe file exists (inotify; removed after each run)
https://HOST:PORT/P\tthe same GET over TLS
listen\tthe target calls listen(2) (an LD_PRELOAD shim; static and Go programs are traced instead)
tcp and http poll every --poll-interval (default 200us); exit, log, file and listen are event-driven. A port that already accepts connections before the spawn is refused.

# STATISTICS
p50 is shown with its 95% distribution-free confidence interval. Each variant is compared with the baseline by the Hodges-Lehmann shift and its 95% CI (in ms and as a share of the baseline median), with the Mann-Whitney U p-value:
  faster / slower\tthe whole CI beyond ±--noise (default 1%) of the baseline median
  ~ (within noise)\ta real difference, but the CI reaches inside the threshold
  ~\tthe CI contains zero: no significant difference
  no verdict\ta side has no successful run, or the runs were not interleaved (--order sequential): drift could not be told from a difference
Under each comparison, the power line: the smallest shift this experiment would have called faster/slower 80% of the time, and the runs a smaller one needs. `--target-ci 1% --target-ci-of shift` runs until the comparison is that precise.

# SWEEPS
--param heap=64m,96m,128m\ta list
--param n=1..16:x2\ta range by factor (1 2 4 8 16); n=1..10:1 by step
`{heap}` in the command, --env values, --cwd and --ready takes each value (`{{heap}}` is a literal `{heap}`; an unknown `{name}`, or a parameter used nowhere, is an error). Several --param make a grid. Each variant runs at every value as its own variant, NAME[heap=64m], all in the same shuffled rounds. The sweep table has a row per value and a column group per variant; each variant is compared with the baseline at the same value, and with --compare-along heap each value with the variant's first one. --resource heap adds the cheapest value not shown to be slower than the fastest (median within --noise, or no significant difference). Stored points are referenced as latest:NAME[heap=64m] (or latest:[heap=64m] for every variant at that value).

# FAILURES
A run fails when the target is not ready before --timeout, exits before ready, or (--ready exit) exits non-zero or by a signal: a crash is not a fast start. -i/--ignore-failure counts any exit as success; --success-exit-codes 0,3 names the codes that do. A failed run stops the experiment (exit 1) unless --keep-going; failed runs are listed with their status and the target's last output lines.

# SET-UP AND CONDITIONS
All outside the timed interval.
--setup CMD\tonce per variant, before its first run (a build, a fixture)
--prepare CMD\tbefore every run, warmups too: reset state (wipe a database directory, restart a dependency); its failure fails that run
--conclude CMD\tafter every run
--cleanup CMD\tonce per variant after its last
\tHooks run through --shell with the variant's --env and --cwd. Before any --name: given once (all variants) or once per variant in order; after a --name: that variant's own. A process a hook leaves running is killed with the next run.
--cache cold\tevery run starts with the target's own files out of the page cache: one traced run per variant learns them (executables, libraries, .pyc, jars, node_modules, data files), then each is evicted (posix_fadvise DONTNEED, no root needed) and checked with mincore. Each run records uncached_pages, uncached_mib (what it could only find on disk) and cached_mib (what stayed: pages mapped by a running process, e.g. libc, cannot be evicted; a note names the files).
--drop-caches\troot: sync and drop the whole system's caches before each run.

# FLAGS FOR HYPERFINE USERS
These work as in hyperfine: -r/--runs, -w/--warmup, -p/--prepare, -C/--conclude, -s/--setup, -c/--cleanup, -S/--shell, -N (no shell: the string is split into words), -i/--ignore-failure, --show-output, --export-json/-markdown/-csv, and command strings as positional arguments. Differences: runs of several commands are interleaved in shuffled rounds (--order sequential for hyperfine's order); a command string's time includes its shell's own start (hyperfine subtracts an estimate of it): give -N, or the command after `--`, to time the program alone.
    hyperfine -N --warmup 3 'ls -la'  → coldstart bench -N --warmup 3 'ls -la'
    hyperfine -p 'make clean' 'make'  → coldstart bench -p 'make clean' 'make'
    hyperfine 'sleep 0.1' 'sleep 0.2' → coldstart bench 'sleep 0.1' 'sleep 0.2'

# LIMITS
--cpus 0.5 (CFS quota), --cpuset 0, --memory 256M limit the variant's whole process tree from its first instruction: the child enters the limiting cgroups (v2, or the v1 cpu/cpuset/memory hierarchies) between clone and exec, so nothing it forks escapes. Given before any --name they apply to every variant; after one, to that variant. A limited run records the tree's peak memory from its cgroup (memory_peak_mb); a run the memory limit kills fails with \"out of memory (limit 256 MiB)\". Needs root or a delegated cgroup.

# CONTAINERS
--image IMG makes a variant a container of IMG, a fresh one each run, started by the engine's client (`podman run`, attached; --engine podman|docker|nerdctl, default the first on PATH): spawn → ready covers the client, a pull when the image is absent, the container's creation, the OCI runtime and the program's init. `--name slim --image app:slim --name full --image app:full` is one interleaved experiment; a command after `--` replaces the image's CMD, --env is set inside the container, --publish PORT or HOSTPORT:PORT publishes on 127.0.0.1 only for --ready tcp:/http:// (log: and exit work as for a process; listen and --cwd/--cpus/--memory do not reach inside). Each run's container is labelled as this coldstart's and removed after the run; a killed coldstart's are removed by the next one. With podman, each run is cut into phases at the engine's own records, on our clock (its event log, the container's state, the image store's records of a pull): client, fetch, unpack (a run that pulled), create, runtime create, runtime start, then init → ready (or program and client exit, with exit readiness); each phase gets a median with its CI and a Δ against the baseline's, and a run that pulled records pulled_mib and pulled_layers. --cache cold removes the image before each run so each run pulls it (layers other local images share stay). --read-set records which of the image's files the container read until ready (the image's files evicted from the page cache before each run) and the largest parts never read. --pod FILE plays a Kubernetes Pod manifest (`podman kube play`, a fresh pod per run), ready by --ready http://127.0.0.1:HOSTPORT/ on a hostPort of the manifest; its readiness and startup probes give kubelet_ready_ms (when the kubelet would mark it Ready) and a line on what the probes cost per start. `coldstart pods FILE.json` reads a cluster's `kubectl get pods,events -o json`. See docs/containers.md.

# EXAMPLES
  coldstart bench --ready exit -- python3 -c 'import json'
  coldstart bench --cache cold --runs 10 -- python3 -c 'import numpy'
  coldstart bench --prepare 'rm -rf data && mkdir data' \\
      --ready tcp:5432 -- ./db --dir data
  coldstart bench --runs 30 --ready http://127.0.0.1:8080/health \\
      --requests 5 -- ./server --port 8080
  coldstart bench --name slim --image app:slim --name full --image app:full \\
      --publish 18080:8080 --ready http://127.0.0.1:18080/health
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

const LAMBDA_SERVE: &str = "\
# FUNCTIONS
Defined as `coldstart lambda`'s variants: options before the first `--name` apply to every function; each `--name F` starts one that may set its own --runtime, --handler, --code, --layer, --extensions, --memory (one size), --env, --sandbox/--no-sandbox. Without --name there is one function, `function`.

# THE API
POST /2015-03-31/functions/F/invocations (Invoke: RequestResponse or DryRun; X-Amz-Log-Type: Tail returns the last 4 KB of that invoke's log, REPORT last, in X-Amz-Log-Result; X-Amz-Function-Error; X-Amz-Executed-Version), GET .../F (GetFunction), GET and PUT .../F/configuration (MemorySize, Environment, Layers, Handler, Timeout), POST and GET .../F/versions (PublishVersion, ListVersionsByFunction), DELETE .../F?Qualifier=N (a version; the functions themselves are not deleted: 409), GET /2015-03-31/functions/ (ListFunctions), GET /2016-08-19/account-settings/ (GetAccountSettings); any other operation is answered with the service's error shape naming it (501 UnsupportedOperationException). The runtime interface emulator's /2015-03-31/functions/function/invocations is the command line's first function.
Errors as the service's: the code in X-Amzn-ErrorType, {\"Type\", \"Message\"} in the body (ResourceNotFoundException 404, InvalidParameterValueException 400, ResourceConflictException 409, TooManyRequestsException 429).
Requests are not authenticated: a SigV4 signature is accepted and not verified. Listens on 127.0.0.1 unless --bind and --allow-remote say otherwise.

# ENVIRONMENTS
A version's first invoke starts its execution environment (cold: INIT_START, Init Duration in the REPORT); later invokes reuse it (warm). Updating $LATEST's configuration replaces its environment; a published version is a snapshot with its own. An environment ends after --idle-timeout idle seconds, when its runtime exits or times out, when its version is deleted, and on SIGINT/SIGTERM, with Lambda's shutdown; then none of its processes, cgroups or mounts remain. One invoke per environment at a time: a concurrent invoke of a busy version is refused with 429 (no scale-out).
Layers in UpdateFunctionConfiguration: the ARN listed for a --layer directory (arn:aws:lambda:REGION:000000000000:layer:DIRNAME:N), or a directory's absolute path.

# EXAMPLES
  coldstart lambda serve --name hello --runtime ./bootstrap --code ./fn
  aws lambda invoke --endpoint-url http://127.0.0.1:9001 \\
      --function-name hello --log-type Tail out.json
";

const LAMBDA: &str = "\
# VARIANTS
Options before the first `--name` apply to all variants; each `--name NAME` starts a variant that may set its own --runtime, --handler, --code, --layer, --extensions, --memory, --env, --bare, --sandbox/--no-sandbox.
Each memory size of a variant is its own variant (a sweep of the parameter `memory`, a resource), named NAME[memory=MB]; the sweep table compares each variant with the baseline at the same size, --compare-along memory each size with the first, and a best-value line names the smallest size not shown to be slower than the fastest. Stored points: latest:NAME[memory=512]. The first variant is the baseline the others are compared with.

# WHAT A RUN IS
A fresh execution environment: the Lambda APIs on a free loopback port (AWS_LAMBDA_RUNTIME_API), every file of --extensions started at once, the runtime started once they registered; Init Duration = T0 → the last of the runtime's and the extensions' first /next. Then one invoke of --event (plus --invokes N warm ones, each with its REPORT) and Lambda's shutdown.
SANDBOX (default where root or a user namespace allows; --no-sandbox: off): a private mount namespace per environment, made before T0, where `sandbox` and `sandbox.localdomain` resolve to 127.0.0.1, --layer dirs are merged at /opt (later wins; their extensions/ and --extensions at /opt/extensions) and --code is /var/task (LAMBDA_TASK_ROOT). The host's mount table is never changed.
Per run: Init Duration (the table); marks runtime_ready, ext.NAME.register, ext.NAME.ready and the SDK checkpoints of every process (COLDSTART_FD); metrics invoke_ms, post_runtime_ms, max_memory_mb, billed_ms, throttled_ms.

# LIMITS
A cgroup per run (v2, or v1 cpu + memory) holds memory at --memory and CPU at memory/1769 vCPU, except an on-demand init: max(--init-cpus 1, share) vCPU for up to --init-boost-seconds 10 (AWS's init boost; --no-init-boost: none). Init is limited by --init-timeout (10 s, as on Lambda); a failed init is retried inside the invoke (a suppressed init), and the run counts as failed.

# MANAGED RUNTIMES
--runtime python3.11, nodejs20.x or java17 runs --handler from --code with that runtime's real interface client (awslambdaric, aws-lambda-ric, the Java client; installed by examples/lambda-ric/setup.sh into target/lambda-ric, or COLDSTART_LAMBDA_RIC_DIR) on the host's Python 3.11, Node 20 or Java 17, with Lambda's command line, AWS_EXECUTION_ENV, layer paths (PYTHONPATH, NODE_PATH, the classpath) and AWS_LAMBDA_EXEC_WRAPPER (--env). Any other value of --runtime is a bootstrap's path.

# ON AWS LAMBDA (--aws)
Each variant names a deployed --function (with its own --memory, --layer-arn, --env, --event FILE: its invokes' payload, --snapstart: SnapStart on its published versions, restored afterwards, --architecture: checked against the function's); credentials and region come from the AWS SDK's standard chain (--region, --endpoint-url override). Every run: UpdateFunctionConfiguration (+ COLDSTART_RUN=<experiment>-<run>), wait for LastUpdateStatus Successful, PublishVersion, Invoke that version with its log tail; ready = the REPORT's Init Duration (Restore Duration for SnapStart); a REPORT with neither fails the run as not cold. Marks come from the log tail: SDK checkpoints (each run sets COLDSTART_FD=2) timed from the first, and --mark NAME=REGEX lines whose (?P<ms>…) group says their time. Everything changed is journaled in the store first and undone at the end (also after Ctrl-C); --cleanup undoes what a killed coldstart left. --parallel N prepares up to N runs' versions at a time (invokes stay one at a time, in the scheduler's order). --dry-run prints the plan and a cost estimate; --max-cost USD refuses a costlier one. See docs/lambda-aws.md.

# EXAMPLES
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
      --name bare --bare --name emulated
  # the Lambda API over the emulator, for SDKs (`lambda serve --help`):
  coldstart lambda serve --name hello --runtime ./bootstrap
  # on AWS Lambda itself: the plan and its cost, nothing changed (`--dry-run`):
  coldstart lambda --aws --runs 25 --dry-run \\
      --name base --function my-fn --layer-arn ARN_A \\
      --name new --function my-fn --layer-arn ARN_B
  # SnapStart off vs on, each variant with its own event:
  coldstart lambda --aws --runs 25 --name off --function my-fn --event a.json \\
      --name on --function my-fn --snapstart --event b.json";

const TUNE: &str = "\
# CANDIDATES
Candidates come from the built-in catalogue (catalogue/*.toml) and --catalogue files (same format: docs/tune.md). Each is set up once (untimed: extraction, training run, cache), checked by one run (a failure is reported broken; an archive the JVM refuses, under -Xshare:on, is a failed set-up), then measured against the unchanged command until each is settled against --noise. A Spring Boot fat jar also gets Spring Boot's extract + AppCDS flow. The winners grow the recommended set one at a time, each step measured.

# EXAMPLES
  coldstart tune --ready http://127.0.0.1:8080/health -- java -jar app.jar
  coldstart tune --ready exit -- python3 -m mycli --version
  coldstart tune --list -- node server.js
  coldstart tune --only appcds,tiered-c1 --catalogue team.toml \\
      -- java -jar app.jar";

/// The reference of `command`, if it has one.
pub fn page(command: &str) -> Option<&'static str> {
    PAGES
        .iter()
        .find(|(name, _)| *name == command)
        .map(|(_, text)| *text)
}

enum Block<'a> {
    Heading(&'a str),
    Paragraph(&'a str),
    /// Extra indent, term (empty: continues the item above), text.
    Item(usize, &'a str, &'a str),
    Verbatim(&'a str),
    Blank,
}

fn blocks(markup: &str) -> impl Iterator<Item = Block<'_>> {
    markup.lines().map(|line| {
        if line.trim().is_empty() {
            Block::Blank
        } else if let Some(title) = line.strip_prefix("# ") {
            Block::Heading(title)
        } else if let Some((term, text)) = line.split_once('\t') {
            let indent = term.len() - term.trim_start().len();
            Block::Item(indent, term.trim_start(), text)
        } else if line.starts_with(' ') {
            Block::Verbatim(line)
        } else {
            Block::Paragraph(line)
        }
    })
}

/// Where an item's text starts: past the widest term of its list (the items
/// around it at the same indent), unless that leaves too little for the text.
fn text_column(items: &[(usize, &str)], width: usize) -> Option<usize> {
    let widest = items
        .iter()
        .map(|(indent, term)| indent + unicode_width::UnicodeWidthStr::width(*term))
        .max()?;
    let column = 2 + widest + 2;
    (column <= width * 2 / 5).then_some(column)
}

fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let options = textwrap::Options::new(width.max(20))
        .initial_indent(first)
        .subsequent_indent(rest)
        .break_words(false)
        // A flag is one word: `--keep-going` never breaks at its hyphen.
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    textwrap::fill(text, options)
}

/// `markup` laid out for a terminal `width` columns wide (a line that starts
/// verbatim stays whole).
pub fn render(markup: &str, width: usize) -> String {
    let all: Vec<Block> = blocks(markup).collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < all.len() {
        match all[i] {
            Block::Heading(title) => {
                if out.last().is_some_and(|l| !l.is_empty()) {
                    out.push(String::new());
                }
                out.push(title.to_string());
            }
            Block::Paragraph(text) => out.push(wrap(text, width, "  ", "  ")),
            Block::Verbatim(line) => out.push(line.to_string()),
            Block::Blank => out.push(String::new()),
            Block::Item(indent, ..) => {
                // The run of items at this indent shares one text column.
                let end = (i..all.len())
                    .find(|&j| !matches!(all[j], Block::Item(k, ..) if k == indent))
                    .unwrap_or(all.len());
                let terms: Vec<(usize, &str)> = all[i..end]
                    .iter()
                    .filter_map(|b| match b {
                        Block::Item(k, term, _) => Some((*k, *term)),
                        _ => None,
                    })
                    .collect();
                let column = text_column(&terms, width);
                for block in &all[i..end] {
                    let Block::Item(k, term, text) = block else {
                        continue;
                    };
                    let lead = " ".repeat(2 + k);
                    match column {
                        Some(c) => {
                            let first = if term.is_empty() {
                                " ".repeat(c)
                            } else {
                                let w = unicode_width::UnicodeWidthStr::width(*term);
                                format!("{lead}{term}{}", " ".repeat(c - 2 - k - w))
                            };
                            out.push(wrap(text, width, &first, &" ".repeat(c)));
                        }
                        None => {
                            // Too wide for a column: the text under its term.
                            if !term.is_empty() {
                                out.push(format!("{lead}{term}"));
                            }
                            let under = format!("{lead}    ");
                            out.push(wrap(text, width, &under, &under));
                        }
                    }
                }
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out.join("\n")
}

/// Text for roff: backslashes and hyphens escaped, a leading dot or quote kept literal.
fn roff_text(s: &str) -> String {
    let escaped = s.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// `markup` as roff sections for a man page (each heading a `.SH`).
pub fn roff(markup: &str) -> String {
    let mut out = String::new();
    let mut verbatim = false;
    for block in blocks(markup) {
        let is_verbatim = matches!(block, Block::Verbatim(_));
        if verbatim && !is_verbatim {
            out.push_str(".fi\n");
        }
        if is_verbatim && !verbatim {
            out.push_str(".PP\n.nf\n");
        }
        verbatim = is_verbatim;
        match block {
            Block::Heading(title) => out.push_str(&format!(".SH \"{}\"\n", roff_text(title))),
            Block::Paragraph(text) => out.push_str(&format!(".PP\n{}\n", roff_text(text))),
            Block::Item(_, "", text) => out.push_str(&format!(".IP\n{}\n", roff_text(text))),
            Block::Item(_, term, text) => out.push_str(&format!(
                ".TP\n\\fB{}\\fR\n{}\n",
                roff_text(term),
                roff_text(text)
            )),
            Block::Verbatim(line) => out.push_str(&format!("{}\n", roff_text(line))),
            Block::Blank => {}
        }
    }
    if verbatim {
        out.push_str(".fi\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_fits_the_width_and_examples_stay_whole() {
        for (name, text) in PAGES {
            for width in [60, 80, 120] {
                let shown = render(text, width);
                for line in shown.lines() {
                    let w = unicode_width::UnicodeWidthStr::width(line);
                    let verbatim = text.lines().any(|l| l.starts_with(' ') && l == line);
                    assert!(
                        w <= width || (verbatim && width < 80),
                        "{name} at {width}: a line of {w} columns:\n{line}"
                    );
                }
                // Every verbatim line (examples) is there as written.
                for l in text.lines().filter(|l| l.starts_with(' ') && !l.contains('\t')) {
                    assert!(shown.lines().any(|s| s == l), "{name} at {width}: {l:?} lost");
                }
            }
        }
    }

    #[test]
    fn definitions_hang_under_their_text_column() {
        let text = "# T\nab\tone two three four five six seven eight nine ten\nabcd\tx";
        let shown = render(text, 30);
        assert_eq!(
            shown,
            "T\n  ab    one two three four\n        five six seven eight\n        nine ten\n  abcd  x"
        );
        // Too narrow for a column: the text goes under the term.
        let shown = render("a-very-long-term-indeed\tsome text", 40);
        assert_eq!(shown, "  a-very-long-term-indeed\n      some text");
    }

    #[test]
    fn roff_escapes_and_keeps_examples_unfilled() {
        let r = roff("# EXAMPLES\n  coldstart bench -- ./a \\\\\n.dot\tx");
        assert!(
            r.contains(".SH \"EXAMPLES\"\n.PP\n.nf\n  coldstart bench \\-\\- ./a \\e\\e\n.fi\n"),
            "{r}"
        );
        assert!(r.contains(".TP\n\\fB\\&.dot\\fR\nx\n"), "{r}");
    }
}
