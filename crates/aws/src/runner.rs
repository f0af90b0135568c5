//! `coldstart lambda --aws`'s runner: one forced cold start of a deployed
//! function per run, as a Sample with `ready_ns` = the REPORT's Init Duration
//! (Restore Duration for SnapStart).
//!
//! A run: journal the version about to be made → UpdateFunctionConfiguration
//! (the variant's memory, layers and environment + a unique `COLDSTART_RUN`) →
//! the FunctionUpdatedV2 waiter → PublishVersion → Invoke that version with
//! LogType=Tail. A new version has never run, so its first invoke starts a new
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
use coldstart_core::sample::{Outcome, RunId, Sample};
use coldstart_core::store::Store;
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

/// What every run shares.
pub struct Options {
    pub endpoint: Endpoint,
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
        let rt = tokio::runtime::Builder::new_current_thread()
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
        let mine: Vec<_> = self
            .store
            .journal_pending()?
            .into_iter()
            .filter(|r| self.journaled.contains(&r.id))
            .collect();
        let (store, endpoint, client) = (&mut self.store, &self.opts.endpoint, &self.client);
        undo::undo(&self.rt, store, &mine, Some((endpoint, client)))
    }

    /// One run's steps up to the invoke's answer; an error is the run's failure.
    fn cold_start(&mut self, variant: usize, marker: &str) -> Result<Option<(calls::Invoked, u64)>> {
        let v = self
            .variants
            .get(variant)
            .ok_or_else(|| anyhow!("no variant {variant}: the plan and the runner disagree"))?
            .clone();
        let f = self
            .functions
            .get(&v.function)
            .ok_or_else(|| anyhow!("{} was not read before the runs", v.function))?;
        let to = v.configure(&f.configuration, marker);
        let detail = serde_json::to_value(Published {
            endpoint: self.opts.endpoint.clone(),
            marker: marker.to_string(),
            version: None,
        })?;
        let row = self
            .store
            .journal_add(self.experiment, &v.function, undo::VERSION, &detail)?;
        self.journaled.push(row);
        let (client, at, event) = (&self.client, &self.opts.endpoint, &v.event);
        let steps = async {
            let revision = calls::update(client, &v.function, &to, at).await?;
            calls::wait_updated(client, &v.function, at).await?;
            let version = calls::publish(client, &v.function, revision.as_deref(), at).await?;
            if to.snapstart == Some(true) {
                calls::wait_active(client, &v.function, &version, at).await?;
            }
            Ok::<_, anyhow::Error>(version)
        };
        let Some(version) = self.rt.block_on(unless_interrupted(steps)) else {
            return Ok(None);
        };
        let version = version?;
        let detail = serde_json::to_value(Published {
            endpoint: self.opts.endpoint.clone(),
            marker: marker.to_string(),
            version: Some(version.clone()),
        })?;
        self.store.journal_update(row, &detail)?;
        let t0 = coldstart_core::clock::now_ns();
        let invoked = self.rt.block_on(unless_interrupted(calls::invoke(
            client,
            &v.function,
            &version,
            event,
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
        self.runs += 1;
        let marker = match self.experiment {
            Some(e) => format!("{e}-{}", self.runs),
            None => format!("{}-{}", self.tag, self.runs),
        };
        let mut sample = Sample::begin(&id, coldstart_core::clock::now_ns());
        if signals::interrupted() {
            sample.outcome = Outcome::Interrupted;
            return Ok(sample);
        }
        match self.cold_start(variant, &marker) {
            Ok(Some((invoked, t0))) => {
                sample.t0_mono_ns = t0;
                judge(&mut sample, &invoked);
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
}
