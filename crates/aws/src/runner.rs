//! `coldstart lambda --aws`'s runner: one forced cold start of a deployed
//! function per run, as a Sample with `ready_ns` = the REPORT's Init Duration
//! (Restore Duration for SnapStart).
//!
//! A run: journal the version about to be made → UpdateFunctionConfiguration
//! (the variant's memory, layers, environment + a unique `COLDSTART_RUN`, and
//! SnapStart when a variant sets it) → the FunctionUpdatedV2 waiter →
//! PublishVersion (→ FunctionActiveV2 on that version, SnapStart) → Invoke that
//! version with LogType=Tail and the variant's event. The steps before the
//! invoke run as a task on the runtime's threads, up to `--parallel` runs ahead
//! in the scheduler's order (one function's one at a time); the invokes are made
//! here, one at a time, in the order the scheduler asks for them. A new version has never run, so its first invoke starts a new
//! execution environment (AWS Lambda Power Tuning's `onlyColdStarts` method);
//! the REPORT says whether it did, and a run whose REPORT has neither Init
//! Duration nor Restore Duration fails as "not cold".

use crate::calls::{self, Function};
use crate::client::{self, Endpoint};
use crate::plan::Variant;
use crate::report;
use crate::undo::{self, Original, Published};
use anyhow::{anyhow, bail, Result};
use coldstart_core::experiment::Runner;
use coldstart_core::launch::signals;
use coldstart_core::marks;
use coldstart_core::sample::{Mark, MarkSource, Outcome, RunId, Sample};
use coldstart_core::store::Store;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// What every run shares.
pub struct Options {
    pub endpoint: Endpoint,
    /// `--parallel`: runs whose version is being prepared (update → wait →
    /// publish) or waits for its invoke, the current run's included. 1: each
    /// run's version is made just before its invoke.
    pub parallel: usize,
    /// The scheduler's run order, (variant, round, warmup) each: what to prepare
    /// ahead. A run not found in it is prepared when it comes.
    pub order: Vec<Key>,
    /// `--mark NAME=REGEX`, each with a `(?P<ms>…)` group: the log tail has no
    /// times of its own, so a line carries its mark's.
    pub marks: Vec<(String, regex::Regex)>,
}

/// A run as the scheduler names it: (variant, round, warmup).
pub type Key = (usize, usize, bool);

/// A run whose version is being made: its journal row and the task making it.
struct Preparing {
    key: Key,
    row: i64,
    marker: String,
    /// update → wait → publish (→ wait until Active, SnapStart): the version.
    task: tokio::task::JoinHandle<Result<String>>,
}

pub struct AwsColdStarts {
    rt: tokio::runtime::Runtime,
    opts: Options,
    client: aws_sdk_lambda::Client,
    variants: Vec<Variant>,
    /// Each function as read before the experiment, by name as given.
    pub functions: BTreeMap<String, Function>,
    store: Store,
    experiment: Option<i64>,
    /// The journal rows this experiment wrote, in order.
    journaled: Vec<i64>,
    /// Runs started (the `<run>` of `COLDSTART_RUN`).
    runs: usize,
    /// The scheduler's runs not yet prepared, in order.
    ahead: VecDeque<Key>,
    /// Runs being prepared (or prepared, not yet invoked), in order.
    preparing: VecDeque<Preparing>,
    /// One per function: a function's update → wait → publish are never
    /// interleaved with another run's (Lambda refuses an update while one is in
    /// progress, and a publish must take its own revision).
    locks: BTreeMap<String, Arc<tokio::sync::Mutex<()>>>,
    /// A tag for runs when the experiment is not stored (`pid<PID>`).
    tag: String,
}

/// Run `fut`, or give up on it when coldstart is interrupted (Ctrl-C/SIGTERM):
/// the SDK's calls do not see signals, and a run must not hold up the cleanup.
async fn unless_interrupted<T>(fut: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        r = fut => Some(r),
        _ = async {
            while !signals::interrupted() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        } => None,
    }
}

impl AwsColdStarts {
    /// Connect and read every variant's function (GetFunction, nothing changed
    /// yet): refused when one has an update in progress, or has journaled
    /// changes not undone (its "original" configuration would be coldstart's).
    pub fn new(opts: Options, variants: Vec<Variant>, mut store: Store) -> Result<AwsColdStarts> {
        // Threads of its own, so that versions prepared ahead progress while the
        // main thread waits on an invoke or writes the store.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| anyhow!("starting the async runtime for the AWS SDK: {e}"))?;
        let pending = store.journal_pending()?;
        let client = rt.block_on(client::connect(&opts.endpoint))?;
        let mut functions = BTreeMap::new();
        for v in &variants {
            if functions.contains_key(&v.function) {
                continue;
            }
            if let Some(row) = pending.iter().find(|r| r.function == v.function) {
                bail!(
                    "{}: the journal in {} still holds a change coldstart made to it (row {}, experiment {}) that was never undone: run `coldstart lambda --aws --cleanup` first",
                    v.function,
                    store.location,
                    row.id,
                    row.experiment_id.map_or_else(|| "none".to_string(), |e| e.to_string())
                );
            }
            let mut f = rt.block_on(calls::read(&client, &v.function, &opts.endpoint))?;
            for w in variants.iter().filter(|w| w.function == v.function) {
                w.check_architecture(&f).map_err(|why| anyhow!(why))?;
            }
            // SnapStart is sent (in the runs' updates and the restore) only for a
            // function a variant asks it of: a function coldstart does not switch
            // keeps its setting untouched.
            if !variants.iter().any(|w| w.function == v.function && w.snapstart) {
                f.configuration.snapstart = None;
            }
            functions.insert(v.function.clone(), f);
        }
        Ok(AwsColdStarts {
            rt,
            ahead: opts.order.iter().copied().collect(),
            preparing: VecDeque::new(),
            locks: BTreeMap::new(),
            opts,
            client,
            variants,
            functions,
            store,
            experiment: None,
            journaled: Vec::new(),
            runs: 0,
            tag: format!("pid{}", std::process::id()),
        })
    }

    /// Undo what this experiment changed (its journal rows still open): delete
    /// its versions, restore the configurations. One line per change.
    pub fn finish(&mut self) -> Result<Vec<String>> {
        self.settle()?;
        let mine: Vec<_> = self
            .store
            .journal_pending()?
            .into_iter()
            .filter(|r| self.journaled.contains(&r.id))
            .collect();
        let (store, endpoint, client) = (&mut self.store, &self.opts.endpoint, &self.client);
        undo::undo(&self.rt, store, &mine, Some((endpoint, client)))
    }

    /// Versions prepared ahead and never invoked: let each preparation end (or,
    /// after an interrupt, stop it) before the undo, so that no update or
    /// publish of ours runs behind it; a version made is journaled by number.
    fn settle(&mut self) -> Result<()> {
        while let Some(mut p) = self.preparing.pop_front() {
            let made = match self.rt.block_on(unless_interrupted(&mut p.task)) {
                Some(made) => made,
                None => {
                    p.task.abort();
                    self.rt.block_on(&mut p.task)
                }
            };
            // A failed or stopped preparation: the undo looks for its version,
            // if it made one, by its marker.
            if let Ok(Ok(version)) = made {
                self.journal_version(&p, &version)?;
            }
        }
        Ok(())
    }

    fn journal_version(&mut self, p: &Preparing, version: &str) -> Result<()> {
        let detail = serde_json::to_value(Published {
            endpoint: self.opts.endpoint.clone(),
            marker: p.marker.clone(),
            version: Some(version.to_string()),
        })?;
        self.store.journal_update(p.row, &detail)
    }

    /// Start making run `key`'s version: journaled first (by its marker), then
    /// update → wait → publish on the runtime's threads, one run at a time per
    /// function.
    fn prepare(&mut self, key: Key) -> Result<Preparing> {
        self.runs += 1;
        let marker = match self.experiment {
            Some(e) => format!("{e}-{}", self.runs),
            None => format!("{}-{}", self.tag, self.runs),
        };
        let v = self
            .variants
            .get(key.0)
            .ok_or_else(|| anyhow!("no variant {}: the plan and the runner disagree", key.0))?;
        let f = self
            .functions
            .get(&v.function)
            .ok_or_else(|| anyhow!("{} was not read before the runs", v.function))?;
        let to = v.configure(&f.configuration, &marker);
        let function = v.function.clone();
        let detail = serde_json::to_value(Published {
            endpoint: self.opts.endpoint.clone(),
            marker: marker.clone(),
            version: None,
        })?;
        let row = self
            .store
            .journal_add(self.experiment, &function, undo::VERSION, &detail)?;
        self.journaled.push(row);
        let lock = self.locks.entry(function.clone()).or_default().clone();
        let (client, at) = (self.client.clone(), self.opts.endpoint.clone());
        let task = self.rt.spawn(async move {
            let turn = lock.lock().await;
            let revision = calls::update(&client, &function, &to, &at).await?;
            calls::wait_updated(&client, &function, &at).await?;
            let version = calls::publish(&client, &function, revision.as_deref(), &at).await?;
            // The version is made: the next run's update may start while the
            // snapshot of this one is taken.
            drop(turn);
            if to.snapstart == Some(true) {
                calls::wait_active(&client, &function, &version, &at).await?;
            }
            Ok(version)
        });
        Ok(Preparing {
            key,
            row,
            marker,
            task,
        })
    }

    /// The current run in preparation, and up to `--parallel` runs in all,
    /// taken from the scheduler's order.
    fn top_up(&mut self, current: Key) -> Result<()> {
        if !self.preparing.iter().any(|p| p.key == current) {
            if let Some(i) = self.ahead.iter().position(|k| *k == current) {
                self.ahead.drain(..=i);
            }
            let p = self.prepare(current)?;
            self.preparing.push_back(p);
        }
        while self.preparing.len() < self.opts.parallel.max(1) {
            let Some(next) = self.ahead.pop_front() else {
                break;
            };
            let p = self.prepare(next)?;
            self.preparing.push_back(p);
        }
        Ok(())
    }

    /// One run's steps up to the invoke's answer; an error is the run's failure.
    fn cold_start(&mut self, key: Key) -> Result<Option<(calls::Invoked, u64)>> {
        self.top_up(key)?;
        let i = self
            .preparing
            .iter()
            .position(|p| p.key == key)
            .ok_or_else(|| anyhow!("run {key:?} was not prepared"))?;
        let Some(mut p) = self.preparing.remove(i) else {
            bail!("run {key:?} was not prepared");
        };
        let Some(made) = self.rt.block_on(unless_interrupted(&mut p.task)) else {
            // Left to `finish`, which stops it before the undo.
            self.preparing.push_front(p);
            return Ok(None);
        };
        let version = made.map_err(|e| anyhow!("preparing the run's version: {e}"))??;
        self.journal_version(&p, &version)?;
        let function = self
            .variants
            .get(key.0)
            .map(|v| (v.function.clone(), v.event.clone()))
            .ok_or_else(|| anyhow!("no variant {}", key.0))?;
        let t0 = coldstart_core::clock::now_ns();
        let invoked = self.rt.block_on(unless_interrupted(calls::invoke(
            &self.client,
            &function.0,
            &version,
            &function.1,
        )));
        Ok(invoked.map(|i| (i, t0)))
    }
}

impl Runner for AwsColdStarts {
    /// Journal every function's configuration before the first change.
    fn started(&mut self, experiment: Option<i64>) -> Result<()> {
        self.experiment = experiment;
        for (name, f) in &self.functions {
            let detail = serde_json::to_value(Original {
                endpoint: self.opts.endpoint.clone(),
                configuration: f.configuration.clone(),
            })?;
            let row = self
                .store
                .journal_add(experiment, name, undo::CONFIGURATION, &detail)?;
            self.journaled.push(row);
        }
        Ok(())
    }

    fn run(&mut self, variant: usize, id: RunId) -> Result<Sample> {
        let mut sample = Sample::begin(&id, coldstart_core::clock::now_ns());
        if signals::interrupted() {
            sample.outcome = Outcome::Interrupted;
            return Ok(sample);
        }
        match self.cold_start((variant, id.round, id.warmup)) {
            Ok(Some((invoked, t0))) => {
                sample.t0_mono_ns = t0;
                judge(&mut sample, &invoked);
                if sample.outcome == Outcome::Ready {
                    sample.marks = log_marks(invoked.tail.as_deref().unwrap_or_default(), &self.opts.marks);
                }
            }
            Ok(None) => sample.outcome = Outcome::Interrupted,
            Err(e) => {
                // A denial, a failed update, a lost network: this run failed, and
                // says why in one line.
                sample.outcome = Outcome::Failed {
                    error_type: format!("{e:#}"),
                };
            }
        }
        Ok(sample)
    }
}

/// An invoke's answer → the sample: ready at Init Duration (or Restore
/// Duration), the REPORT's figures and the round trip as metrics; a throttle, a
/// function error, a tail without REPORT or a warm REPORT fail the run.
pub fn judge(sample: &mut Sample, invoked: &calls::Invoked) {
    sample
        .metrics
        .insert("round_trip_ms".into(), invoked.round_trip.as_secs_f64() * 1e3);
    let tail: Vec<String> = invoked
        .tail
        .as_deref()
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let fail = |sample: &mut Sample, why: String| {
        sample.outcome = Outcome::Failed { error_type: why };
        sample.output_tail = tail.clone();
    };
    if let Some(e) = &invoked.error {
        let why = if e.denied() {
            format!(
                "access denied: the caller may not {} ({}); grant it (docs/lambda-aws.md lists the minimal policy)",
                client::denied_action(&e.message, "lambda:InvokeFunction"),
                e.short()
            )
        } else {
            format!("the Invoke call failed: {}", e.short())
        };
        return fail(sample, why);
    }
    let Some(r) = invoked.tail.as_deref().and_then(report::find) else {
        let payload = String::from_utf8_lossy(&invoked.payload);
        let why = match (&invoked.tail, &invoked.function_error) {
            (None, Some(fe)) => format!(
                "function error {fe} and no log tail (no REPORT): {}",
                clip(&payload)
            ),
            (None, None) => "the Invoke answer has no log tail (X-Amz-Log-Result): no REPORT".to_string(),
            (Some(_), _) => "the 4 KB log tail has no REPORT line (cut before it)".to_string(),
        };
        return fail(sample, why);
    };
    for (k, v) in r.metrics() {
        sample.metrics.insert(k.to_string(), v);
    }
    if let Some(d) = r.duration_ms {
        sample.requests_ns = vec![(d * 1e6).round() as u64];
    }
    if let Some(fe) = &invoked.function_error {
        let what = r.error_type.clone().unwrap_or_else(|| fe.clone());
        return fail(
            sample,
            format!(
                "function error {what}: {}",
                clip(&String::from_utf8_lossy(&invoked.payload))
            ),
        );
    }
    if let Some(status) = &r.status {
        let what = r
            .error_type
            .as_deref()
            .map_or_else(String::new, |t| format!(" {t}"));
        return fail(sample, format!("REPORT Status: {status}{what}"));
    }
    match r.ready_ms() {
        Some(ms) => {
            sample.outcome = Outcome::Ready;
            sample.ready_ns = Some((ms * 1e6).round() as u64);
        }
        None => fail(
            sample,
            "not cold: the REPORT has no Init Duration and no Restore Duration (an existing execution environment served the invoke)".into(),
        ),
    }
}

/// The marks in a cold invoke's log tail. The tail has no times, and the
/// function's clock has no instant of its init's start, so:
/// - SDK checkpoints (`cs1 <CLOCK_MONOTONIC ns> <name>`, written to stderr since
///   every run sets COLDSTART_FD=2) are timed from the first checkpoint in the
///   tail (`checkpoint("start")` first thing in the code makes that the start);
/// - a `--mark NAME=REGEX` line says its own time: the regex's `ms` group, in
///   milliseconds (the first matching line).
///
/// Lines cut from the 4 KB tail give no mark.
pub fn log_marks(tail: &str, regexes: &[(String, regex::Regex)]) -> Vec<Mark> {
    let checkpoints: Vec<Mark> = tail
        .lines()
        .filter_map(|l| marks::parse_checkpoint(l, 0))
        .collect();
    let zero = checkpoints.iter().map(|m| m.t_ns).min().unwrap_or(0);
    let mut out: Vec<Mark> = checkpoints
        .into_iter()
        .map(|m| Mark::new(m.name, MarkSource::Checkpoint, m.t_ns - zero))
        .collect();
    for (name, regex) in regexes {
        let ms = tail.lines().find_map(|l| {
            regex
                .captures(l)
                .and_then(|c| c.name("ms"))
                .and_then(|m| m.as_str().parse::<f64>().ok())
                .filter(|ms| ms.is_finite() && *ms >= 0.0)
        });
        if let Some(ms) = ms {
            out.push(Mark::new(
                name.clone(),
                MarkSource::Log,
                (ms * 1e6).round() as u64,
            ));
        }
    }
    out.sort_by_key(|m| m.t_ns);
    out
}

/// A payload in a message: one line, at most 300 bytes.
fn clip(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.len() <= 300 {
        return one;
    }
    let mut end = 300;
    while !one.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &one[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Sample {
        Sample::begin(
            &RunId {
                variant: 0,
                round: 0,
                warmup: false,
            },
            0,
        )
    }

    fn invoked(tail: Option<&str>) -> calls::Invoked {
        calls::Invoked {
            round_trip: Duration::from_millis(250),
            tail: tail.map(str::to_string),
            ..calls::Invoked::default()
        }
    }

    fn error(s: &Sample) -> String {
        match &s.outcome {
            Outcome::Failed { error_type } => error_type.clone(),
            o => panic!("not failed: {o:?}"),
        }
    }

    #[test]
    fn a_cold_report_is_ready_at_init_duration() {
        let mut s = sample();
        judge(&mut s, &invoked(Some("START RequestId: r Version: 3\nEND RequestId: r\nREPORT RequestId: r\tDuration: 1.50 ms\tBilled Duration: 120 ms\tMemory Size: 128 MB\tMax Memory Used: 30 MB\tInit Duration: 118.20 ms\t\n")));
        assert_eq!(s.outcome, Outcome::Ready);
        assert_eq!(s.ready_ns, Some(118_200_000));
        assert_eq!(s.metrics["round_trip_ms"], 250.0);
        assert_eq!(s.metrics["billed_ms"], 120.0);
        assert_eq!(s.metrics["max_memory_mb"], 30.0);
        assert_eq!(s.requests_ns, vec![1_500_000]);
    }

    #[test]
    fn a_warm_report_fails_as_not_cold() {
        let mut s = sample();
        judge(&mut s, &invoked(Some("REPORT RequestId: r\tDuration: 1.50 ms\tBilled Duration: 2 ms\tMemory Size: 128 MB\tMax Memory Used: 30 MB\t")));
        assert!(error(&s).starts_with("not cold:"), "{}", error(&s));
        assert_eq!(s.ready_ns, None);
    }

    #[test]
    fn no_report_throttle_and_function_error_fail_with_the_reason() {
        let mut s = sample();
        judge(
            &mut s,
            &invoked(Some("START RequestId: r Version: 3\nsome output\n")),
        );
        assert_eq!(error(&s), "the 4 KB log tail has no REPORT line (cut before it)");
        assert_eq!(
            s.output_tail,
            vec!["START RequestId: r Version: 3", "some output"]
        );

        let mut s = sample();
        let mut i = invoked(None);
        i.error = Some(client::ServiceError {
            code: Some("TooManyRequestsException".into()),
            message: "Rate Exceeded.".into(),
            status: Some(429),
        });
        judge(&mut s, &i);
        assert_eq!(
            error(&s),
            "the Invoke call failed: TooManyRequestsException: Rate Exceeded."
        );

        let mut s = sample();
        let mut i = invoked(None);
        i.error = Some(client::ServiceError {
            code: Some("AccessDeniedException".into()),
            message: "User: arn:aws:iam::123456789012:user/dev is not authorized to perform: lambda:InvokeFunction on resource: arn:aws:lambda:us-east-1:123456789012:function:my-fn:3".into(),
            status: Some(403),
        });
        judge(&mut s, &i);
        assert!(
            error(&s).starts_with(
                "access denied: the caller may not lambda:InvokeFunction (AccessDeniedException: User: "
            ),
            "{}",
            error(&s)
        );

        let mut s = sample();
        let mut i = invoked(None);
        i.function_error = Some("Handled".into());
        i.payload = b"error running docker: no daemon".to_vec();
        judge(&mut s, &i);
        assert_eq!(
            error(&s),
            "function error Handled and no log tail (no REPORT): error running docker: no daemon"
        );

        let mut s = sample();
        let mut i = invoked(Some("REPORT RequestId: r\tDuration: 5.00 ms\tBilled Duration: 200 ms\tMemory Size: 128 MB\tMax Memory Used: 30 MB\tInit Duration: 190.00 ms\tStatus: error\tError Type: Runtime.ExitError"));
        i.function_error = Some("Unhandled".into());
        i.payload = br#"{"errorType":"Runtime.ExitError"}"#.to_vec();
        judge(&mut s, &i);
        assert_eq!(
            error(&s),
            r#"function error Runtime.ExitError: {"errorType":"Runtime.ExitError"}"#
        );
        assert_eq!(
            s.metrics["init_ms"], 190.0,
            "the figures are kept on a failed run"
        );
    }

    /// Checkpoints are timed from the first one in the tail (whatever order the
    /// lines come in: extensions and the runtime share stderr); a --mark line
    /// carries its own milliseconds; other lines, malformed checkpoints and a
    /// regex that matches nothing give no mark.
    #[test]
    fn marks_come_from_the_tail_checkpoints_from_the_first_and_log_lines_with_their_ms() {
        let tail = "INIT_START Runtime Version: provided:coldstart\n\
                    cs1 1012500000 config loaded\n\
                    cs1 1000000000 start\n\
                    cs1 12x bad\n\
                    handler ready after 7.25 ms\n\
                    handler ready after 9 ms\n\
                    REPORT RequestId: r\tInit Duration: 20.00 ms";
        let regexes = vec![
            (
                "ready".to_string(),
                regex::Regex::new(r"ready after (?P<ms>[0-9.]+) ms").unwrap(),
            ),
            (
                "never".to_string(),
                regex::Regex::new(r"nothing (?P<ms>[0-9]+)").unwrap(),
            ),
        ];
        let got: Vec<(String, MarkSource, u64)> = log_marks(tail, &regexes)
            .into_iter()
            .map(|m| (m.name, m.source, m.t_ns))
            .collect();
        assert_eq!(
            got,
            [
                ("start".to_string(), MarkSource::Checkpoint, 0),
                ("ready".to_string(), MarkSource::Log, 7_250_000),
                ("config loaded".to_string(), MarkSource::Checkpoint, 12_500_000),
            ]
        );
        assert!(log_marks("START\nREPORT", &regexes).is_empty());
    }
}
