//! The control-plane and invoke calls the driver makes, each mapped to one
//! error line naming its IAM action: GetFunction, UpdateFunctionConfiguration,
//! the SDK's FunctionUpdatedV2 waiter (GetFunction polled until LastUpdateStatus
//! is Successful), PublishVersion, Invoke, ListVersionsByFunction and
//! DeleteFunction with a version qualifier. No alias API is ever called.

use crate::client::{fail, Endpoint, ServiceError};
use anyhow::{anyhow, bail, Result};
use aws_sdk_lambda::client::Waiters;
use aws_sdk_lambda::types::{
    Environment, InvocationType, LastUpdateStatus, LogType, SnapStart, SnapStartApplyOn,
};
use aws_sdk_lambda::Client;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// The environment variable that makes each run's configuration unique (and so
/// its version's environment new): `<experiment>-<run>`.
pub const RUN_VAR: &str = "COLDSTART_RUN";

/// How long a configuration update may take before the run fails: the SDK
/// waiter's own default is 300 polls of 1 s (the CLI's `function-updated-v2`).
pub const UPDATE_WAIT: Duration = Duration::from_secs(300);

/// What coldstart changes on a function, as it was before: restored at the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Configuration {
    pub memory_mb: u64,
    /// Layer version ARNs, in order.
    pub layers: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// SnapStart on published versions (ApplyOn PublishedVersions) or off
    /// (None). `None` here: left as it is, not sent in the update; so it is in
    /// the journal rows of a coldstart before `--snapstart`, and for a function
    /// no variant asks SnapStart of.
    #[serde(default)]
    pub snapstart: Option<bool>,
}

/// What the driver reads of a function before it changes anything.
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    pub configuration: Configuration,
    /// `x86_64` or `arm64`.
    pub architecture: String,
    pub timeout_s: u64,
    /// SnapStart on published versions.
    pub snapstart: bool,
}

/// GetFunction: the function's configuration, refused while its `$LATEST` has an
/// update in progress (a deployment or another tool's change would be mixed into
/// the runs, and restored over).
pub async fn read(client: &Client, function: &str, at: &Endpoint) -> Result<Function> {
    let out = client
        .get_function()
        .function_name(function)
        .send()
        .await
        .map_err(|e| fail(e, "lambda:GetFunction", function, at))?;
    let c = out
        .configuration()
        .ok_or_else(|| anyhow!("lambda:GetFunction on {function}: the answer has no Configuration"))?;
    if c.last_update_status() == Some(&LastUpdateStatus::InProgress) {
        bail!(
            "{function}: its $LATEST has an update in progress (LastUpdateStatus InProgress); wait until it is done (`aws lambda wait function-updated-v2 --function-name {function}`) and run again"
        );
    }
    let snapstart = c
        .snap_start()
        .and_then(|s| s.apply_on())
        .is_some_and(|a| *a == SnapStartApplyOn::PublishedVersions);
    let env = c
        .environment()
        .and_then(|e| e.variables())
        .map(|v| v.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    Ok(Function {
        configuration: Configuration {
            memory_mb: c.memory_size().unwrap_or(128).max(0) as u64,
            layers: c
                .layers()
                .iter()
                .filter_map(|l| l.arn().map(str::to_string))
                .collect(),
            env,
            snapstart: Some(snapstart),
        },
        architecture: c
            .architectures()
            .first()
            .map_or_else(|| "x86_64".to_string(), |a| a.as_str().to_string()),
        timeout_s: c.timeout().unwrap_or(3).max(1) as u64,
        snapstart,
    })
}

/// UpdateFunctionConfiguration to `to` (memory, layers, the whole environment,
/// SnapStart when `to` says); its RevisionId, when the API returns one, so the
/// publish takes this revision.
pub async fn update(
    client: &Client,
    function: &str,
    to: &Configuration,
    at: &Endpoint,
) -> Result<Option<String>> {
    let out = client
        .update_function_configuration()
        .function_name(function)
        .memory_size(i32::try_from(to.memory_mb).unwrap_or(i32::MAX))
        .set_layers(Some(to.layers.clone()))
        .environment(
            Environment::builder()
                .set_variables(Some(to.env.clone().into_iter().collect()))
                .build(),
        )
        .set_snap_start(to.snapstart.map(|on| {
            SnapStart::builder()
                .apply_on(if on {
                    SnapStartApplyOn::PublishedVersions
                } else {
                    SnapStartApplyOn::None
                })
                .build()
        }))
        .send()
        .await
        .map_err(|e| fail(e, "lambda:UpdateFunctionConfiguration", function, at))?;
    Ok(out.revision_id().map(str::to_string))
}

/// The SDK's FunctionUpdatedV2 waiter: LastUpdateStatus Successful, or the
/// update's failure reason.
pub async fn wait_updated(client: &Client, function: &str, at: &Endpoint) -> Result<()> {
    client
        .wait_until_function_updated_v2()
        .function_name(function)
        .wait(UPDATE_WAIT)
        .await
        .map_err(|e| {
            use aws_sdk_lambda::waiters::function_updated_v2::WaitUntilFunctionUpdatedV2Error as W;
            match e {
                W::FailureState(f) => {
                    let reason = f
                        .final_poll()
                        .as_result()
                        .ok()
                        .and_then(|o| o.configuration())
                        .and_then(|c| c.last_update_status_reason())
                        .unwrap_or("no reason given")
                        .to_string();
                    anyhow!("{function}: the configuration update failed (LastUpdateStatus Failed): {reason}")
                }
                W::ExceededMaxWait(_) => anyhow!(
                    "{function}: the configuration update was not done within {} s",
                    UPDATE_WAIT.as_secs()
                ),
                W::OperationFailed(o) => fail(o.into_error(), "lambda:GetFunction", function, at),
                other => anyhow!("{function}: waiting for the configuration update: {other}"),
            }
        })?;
    Ok(())
}

/// The SDK's FunctionActiveV2 waiter on one published version: a SnapStart
/// version is `Pending` while Lambda runs its init and takes the snapshot, and
/// an invoke before it is `Active` is refused.
pub async fn wait_active(client: &Client, function: &str, version: &str, at: &Endpoint) -> Result<()> {
    client
        .wait_until_function_active_v2()
        .function_name(function)
        .qualifier(version)
        .wait(UPDATE_WAIT)
        .await
        .map_err(|e| {
            use aws_sdk_lambda::waiters::function_active_v2::WaitUntilFunctionActiveV2Error as W;
            match e {
                W::FailureState(f) => {
                    let reason = f
                        .final_poll()
                        .as_result()
                        .ok()
                        .and_then(|o| o.configuration())
                        .and_then(|c| c.state_reason())
                        .unwrap_or("no reason given")
                        .to_string();
                    anyhow!("{function}:{version}: the published version failed (State Failed): {reason}")
                }
                W::ExceededMaxWait(_) => anyhow!(
                    "{function}:{version}: the published version was not Active within {} s",
                    UPDATE_WAIT.as_secs()
                ),
                W::OperationFailed(o) => fail(o.into_error(), "lambda:GetFunction", function, at),
                other => anyhow!("{function}:{version}: waiting for the version to be Active: {other}"),
            }
        })?;
    Ok(())
}

/// PublishVersion of the revision just configured; the new version's number.
pub async fn publish(
    client: &Client,
    function: &str,
    revision: Option<&str>,
    at: &Endpoint,
) -> Result<String> {
    let out = client
        .publish_version()
        .function_name(function)
        .set_revision_id(revision.map(str::to_string))
        .send()
        .await
        .map_err(|e| fail(e, "lambda:PublishVersion", function, at))?;
    out.version()
        .map(str::to_string)
        .ok_or_else(|| anyhow!("lambda:PublishVersion on {function}: the answer has no Version"))
}

/// What one Invoke gave back.
#[derive(Debug, Clone, Default)]
pub struct Invoked {
    /// The client's round trip of the Invoke call.
    pub round_trip: Duration,
    /// X-Amz-Function-Error (`Unhandled`, `Handled`).
    pub function_error: Option<String>,
    /// The decoded log tail (X-Amz-Log-Result), when there was one.
    pub tail: Option<String>,
    pub payload: Vec<u8>,
    /// The call failed: the service's error (a throttle, a denial, …).
    pub error: Option<ServiceError>,
}

/// Invoke `function:version` synchronously with the log tail.
pub async fn invoke(client: &Client, function: &str, version: &str, event: &[u8]) -> Invoked {
    use base64::Engine;
    let started = std::time::Instant::now();
    let sent = client
        .invoke()
        .function_name(function)
        .qualifier(version)
        .invocation_type(InvocationType::RequestResponse)
        .log_type(LogType::Tail)
        .payload(aws_sdk_lambda::primitives::Blob::new(event.to_vec()))
        .send()
        .await;
    let round_trip = started.elapsed();
    match sent {
        Ok(out) => Invoked {
            round_trip,
            function_error: out.function_error().map(str::to_string),
            // An empty X-Amz-Log-Result (moto's, without Docker) is no tail.
            tail: out.log_result().filter(|b64| !b64.trim().is_empty()).map(|b64| {
                base64::engine::general_purpose::STANDARD
                    .decode(b64.trim())
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_else(|e| format!("(a log tail that is not base64: {e})"))
            }),
            payload: out.payload().map(|p| p.as_ref().to_vec()).unwrap_or_default(),
            error: None,
        },
        Err(e) => Invoked {
            round_trip,
            error: Some(ServiceError::from_sdk(&e)),
            ..Invoked::default()
        },
    }
}

/// DeleteFunction of one version (never `$LATEST`, never an alias). A version
/// already gone is not an error.
pub async fn delete_version(client: &Client, function: &str, version: &str, at: &Endpoint) -> Result<()> {
    if version.parse::<u64>().is_err() {
        bail!("refusing to delete {function}:{version}: coldstart deletes only the numbered versions it published");
    }
    match client
        .delete_function()
        .function_name(function)
        .qualifier(version)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e) => {
            let se = ServiceError::from_sdk(&e);
            if se.is("ResourceNotFoundException") {
                Ok(())
            } else {
                Err(fail(
                    e,
                    "lambda:DeleteFunction",
                    &format!("{function}:{version}"),
                    at,
                ))
            }
        }
    }
}

/// The published versions whose environment has `COLDSTART_RUN=marker`: what a
/// publish journaled before it returned left behind.
pub async fn versions_marked(
    client: &Client,
    function: &str,
    marker: &str,
    at: &Endpoint,
) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let mut pages = client
        .list_versions_by_function()
        .function_name(function)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| fail(e, "lambda:ListVersionsByFunction", function, at))?;
        for v in page.versions() {
            let marked = v
                .environment()
                .and_then(|e| e.variables())
                .and_then(|vars| vars.get(RUN_VAR))
                .is_some_and(|m| m == marker);
            match v.version() {
                Some(n) if marked && n != "$LATEST" => found.push(n.to_string()),
                _ => {}
            }
        }
    }
    Ok(found)
}
