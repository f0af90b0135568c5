//! The HTTP side of `lambda serve`: the Lambda API's paths (2015-03-31), the
//! idle timeout, and the shutdown on SIGINT/SIGTERM. Requests are not
//! authenticated: a signed request's Authorization header is accepted unread.

use super::registry::{Live, Registry};
use super::shapes::{self, ApiError};
use crate::kept::{Kept, Reply, Started};
use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Reg = State<Arc<Registry>>;
type Params = RawQuery;

fn routes() -> Router<Arc<Registry>> {
    // A method a path does not take is an operation not served, as a path is.
    Router::new()
        .route(
            "/2015-03-31/functions/{name}/invocations",
            post(invoke).fallback(not_served),
        )
        .route(
            "/2015-03-31/functions/{name}/configuration",
            get(get_configuration)
                .put(update_configuration)
                .fallback(not_served),
        )
        .route(
            "/2015-03-31/functions/{name}/versions",
            post(publish_version).get(list_versions).fallback(not_served),
        )
        .route(
            "/2015-03-31/functions/{name}",
            get(get_function).delete(delete_function).fallback(not_served),
        )
        .route("/2015-03-31/functions/", get(list_functions).fallback(not_served))
        .route("/2015-03-31/functions", get(list_functions).fallback(not_served))
        .route(
            "/2016-08-19/account-settings/",
            get(account_settings).fallback(not_served),
        )
        .route(
            "/2016-08-19/account-settings",
            get(account_settings).fallback(not_served),
        )
        .fallback(not_served)
}

/// ListFunctions: every served function's $LATEST, in the command line's order
/// (one page: MaxItems and Marker are not needed for a handful).
async fn list_functions(State(reg): Reg) -> Response {
    axum::Json(json!({"Functions": reg.list()})).into_response()
}

/// GetAccountSettings: the service's default quotas (SDKs and the CLI's smoke tests ask).
async fn account_settings(State(reg): Reg) -> Response {
    axum::Json(json!({
        "AccountLimit": {
            "TotalCodeSize": 80_530_636_800u64,
            "CodeSizeUnzipped": 262_144_000,
            "CodeSizeZipped": 52_428_800,
            "ConcurrentExecutions": 1000,
            "UnreservedConcurrentExecutions": 1000
        },
        "AccountUsage": {"TotalCodeSize": 0, "FunctionCount": reg.list().len()}
    }))
    .into_response()
}

/// Any other operation: the service's error shape, naming it as not served.
async fn not_served(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    let op = shapes::operation(method.as_str(), uri.path());
    ApiError {
        status: StatusCode::NOT_IMPLEMENTED,
        kind: "UnsupportedOperationException",
        message: format!(
            "coldstart lambda serve does not serve {op}: it serves Invoke, GetFunction, GetFunctionConfiguration, UpdateFunctionConfiguration, PublishVersion, ListVersionsByFunction, DeleteFunction (a version), ListFunctions and GetAccountSettings"
        ),
    }
    .into_response()
}

/// Every response carries a request id, as the service's do; a body over the
/// limit (axum's plain 413) gets the service's RequestEntityTooLargeException.
async fn service_headers(mut r: Response) -> Response {
    if r.status() == StatusCode::PAYLOAD_TOO_LARGE && !r.headers().contains_key("X-Amzn-ErrorType") {
        r = ApiError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            kind: "RequestEntityTooLargeException",
            message: format!(
                "Request must be smaller than {} bytes for the InvokeFunction operation",
                crate::runtime_api::MAX_EVENT
            ),
        }
        .into_response();
    }
    if !r.headers().contains_key("x-amzn-RequestId") {
        if let Ok(v) = HeaderValue::from_str(&crate::state::uuid()) {
            r.headers_mut().insert("x-amzn-RequestId", v);
        }
    }
    r
}

/// Bind, serve until interrupted, then stop every environment.
pub async fn serve(reg: Arc<Registry>) -> Result<()> {
    let addr = reg.settings.addr;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr} for coldstart lambda serve (--port)"))?;
    let bound = listener.local_addr().context("the server's address")?;
    // The line scripts and tests wait for: the endpoint URL to give SDKs.
    coldstart_core::out::errln!("coldstart lambda serve: listening on http://{bound}");
    let app = routes()
        // The service's 6 MB synchronous payload, plus room for the framing.
        .layer(DefaultBodyLimit::max(crate::runtime_api::MAX_EVENT + 1024))
        .layer(axum::middleware::map_response(service_headers))
        .with_state(reg.clone());
    let reaper = tokio::spawn(idle_reaper(reg.clone()));
    axum::serve(listener, app)
        .with_graceful_shutdown(interrupted())
        .await
        .context("serving the Lambda API")?;
    reaper.abort();
    // Every environment, after its invoke in flight (if any) is over.
    for (_, slot) in reg.slots() {
        let live = slot.lock().await.take();
        if let Some(live) = live {
            live.kept.stop().await;
        }
    }
    let stopping: Vec<_> = std::mem::take(&mut *reg.stopping.lock().unwrap_or_else(|p| p.into_inner()));
    for t in stopping {
        t.await.ok();
    }
    // No environment is left: what the stopped ones orphaned (reparented to
    // coldstart, the subreaper) and nobody reaped yet can be collected now.
    if let Ok(reaper) = reg.lab.reaper() {
        reaper.reap_exited();
    }
    if !reg.settings.quiet {
        coldstart_core::out::errln!("coldstart lambda serve: stopped; every environment is shut down");
    }
    Ok(())
}

/// Resolves when coldstart got SIGINT/SIGTERM: the Lab's handler has the
/// signal (it already killed the environments' process groups); this notices
/// its flag.
async fn interrupted() {
    while !coldstart_core::launch::signals::interrupted() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Shut down environments idle for the idle timeout (one not in an invoke).
async fn idle_reaper(reg: Arc<Registry>) {
    let idle = reg.settings.idle_timeout;
    let tick = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    loop {
        tokio::time::sleep(tick).await;
        for (label, slot) in reg.slots() {
            let Ok(mut guard) = slot.try_lock() else {
                continue;
            };
            if guard.as_ref().is_some_and(|l| l.last_used.elapsed() >= idle) {
                if let Some(live) = guard.take() {
                    drop(guard);
                    live.kept.stop().await;
                    if !reg.settings.quiet {
                        coldstart_core::out::errln!(
                            "coldstart lambda serve: {label} idle for {} s: environment shut down",
                            idle.as_secs_f64()
                        );
                    }
                }
            }
        }
    }
}

/// The `Qualifier` query parameter, if any.
fn qualifier(q: &Option<String>) -> Option<String> {
    let q = q.as_deref()?;
    url::form_urlencoded::parse(q.as_bytes())
        .find(|(k, _)| k == "Qualifier")
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty())
}

async fn get_configuration(State(reg): Reg, Path(name): Path<String>, RawQuery(q): Params) -> Response {
    let r = reg
        .resolve(&name, qualifier(&q).as_deref())
        .and_then(|(f, v)| reg.configuration(&f, &v));
    match r {
        Ok(c) => axum::Json(c).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn get_function(State(reg): Reg, Path(name): Path<String>, RawQuery(q): Params) -> Response {
    let r = reg.resolve(&name, qualifier(&q).as_deref()).and_then(|(f, v)| {
        let c = reg.configuration(&f, &v)?;
        let code = reg.target(&f, &v)?.def.code.unwrap_or_default();
        Ok(json!({
            "Configuration": c,
            // The code is a local directory, not a download.
            "Code": {"RepositoryType": "S3", "Location": format!("file://{}", code.display())},
            "Tags": {},
        }))
    });
    match r {
        Ok(c) => axum::Json(c).into_response(),
        Err(e) => e.into_response(),
    }
}

fn json_body(body: &Bytes) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::invalid(format!("the request body is not JSON: {e}")))
}

async fn update_configuration(State(reg): Reg, Path(name): Path<String>, body: Bytes) -> Response {
    let r = json_body(&body).and_then(|b| {
        let (f, _) = reg.resolve(&name, None)?;
        reg.update(&f, &b)
    });
    match r {
        Ok(c) => axum::Json(c).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn publish_version(State(reg): Reg, Path(name): Path<String>, body: Bytes) -> Response {
    let r = json_body(&body).and_then(|b| {
        let (f, _) = reg.resolve(&name, None)?;
        reg.publish(&f, &b)
    });
    match r {
        Ok(c) => (StatusCode::CREATED, axum::Json(c)).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn list_versions(State(reg): Reg, Path(name): Path<String>) -> Response {
    let r = reg.resolve(&name, None).and_then(|(f, _)| reg.versions(&f));
    match r {
        Ok(v) => axum::Json(json!({"Versions": v})).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn delete_function(State(reg): Reg, Path(name): Path<String>, RawQuery(q): Params) -> Response {
    let r = reg
        .resolve(&name, qualifier(&q).as_deref())
        .and_then(|(f, v)| reg.delete(&f, &v));
    match r {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => e.into_response(),
    }
}

/// Invoke (RequestResponse, or DryRun): one event through the version's
/// environment, started (cold) if it has none.
async fn invoke(
    State(reg): Reg,
    Path(name): Path<String>,
    RawQuery(q): Params,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // In a task of its own: a client that hangs up drops this handler, and the
    // environment it holds must still finish its invoke and be kept (or stopped).
    let task = tokio::spawn(async move {
        match invoke_inner(&reg, &name, qualifier(&q).as_deref(), &headers, &body).await {
            Ok(r) => r,
            Err(e) => e.into_response(),
        }
    });
    task.await
        .unwrap_or_else(|e| ApiError::service(format!("the invoke failed: {e}")).into_response())
}

async fn invoke_inner(
    reg: &Arc<Registry>,
    name: &str,
    qualifier: Option<&str>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let header = |h: &str| headers.get(h).and_then(|v| v.to_str().ok()).unwrap_or("");
    let (f, v) = reg.resolve(name, qualifier)?;
    let target = reg.target(&f, &v)?;
    match header("X-Amz-Invocation-Type") {
        "" | "RequestResponse" => {}
        "DryRun" => return Ok(StatusCode::NO_CONTENT.into_response()),
        other => {
            return Err(ApiError::invalid(format!(
                "InvocationType {other}: coldstart lambda serve runs synchronous invokes only (RequestResponse, DryRun)"
            )))
        }
    }
    let event = if body.is_empty() {
        b"{}".to_vec()
    } else {
        body.to_vec()
    };
    if serde_json::from_slice::<Value>(&event).is_err() {
        return Err(ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "InvalidRequestContentException",
            message: "Could not parse request body into json".into(),
        });
    }
    let tail = header("X-Amz-Log-Type") == "Tail";
    // One invoke per environment at a time; no scale-out.
    let Ok(mut guard) = target.slot.clone().try_lock_owned() else {
        return Err(ApiError::busy(format!(
            "Rate Exceeded: {f}:{v} is running an invoke, and coldstart lambda serve runs one environment per version (no scale-out)"
        )));
    };
    let live = match guard.take() {
        Some(live) => live,
        None => match start(reg, &target).await? {
            Ok(kept) => Live {
                kept,
                last_used: Instant::now(),
            },
            Err(failed) => return Ok(init_failed(&v, failed, tail)),
        },
    };
    let mut live = live;
    let reply = live.kept.invoke(&event).await;
    live.last_used = Instant::now();
    if reply.reusable {
        *guard = Some(live);
    } else {
        // As the service, a broken environment is replaced: the next invoke is cold.
        drop(guard);
        let stop = tokio::spawn(async move { live.kept.stop().await });
        reg.stopping.lock().unwrap_or_else(|p| p.into_inner()).push(stop);
    }
    Ok(invoked(&v, reply, tail, target.def.timeout))
}

/// A new environment for the target's version: Ok(Ok) ready, Ok(Err) init failed.
async fn start(
    reg: &Arc<Registry>,
    target: &super::registry::Target,
) -> Result<Result<Box<Kept>, crate::kept::InitFailed>, ApiError> {
    let cfg = target
        .def
        .config(&target.version)
        .map_err(|e| ApiError::service(format!("{e:#}")))?;
    let opts = reg.options(&target.def);
    let started = Kept::start(reg.lab, cfg, opts, reg.next_id())
        .await
        .map_err(|e| ApiError::service(format!("starting an environment of {}: {e:#}", target.function)))?;
    Ok(match started {
        Started::Ready(kept) => {
            if !reg.settings.quiet {
                coldstart_core::out::errln!(
                    "coldstart lambda serve: {}:{} new environment, Init Duration {:.2} ms",
                    target.function,
                    target.version,
                    kept.init_ns as f64 / 1e6
                );
            }
            Ok(kept)
        }
        Started::Failed(f) => Err(f),
    })
}

/// The Invoke response: the function's document, its version, its error kind,
/// and its log's last 4 KB when asked for.
fn invoked(version: &str, reply: Reply, tail: bool, timeout: Duration) -> Response {
    let body = match (&reply.body, &reply.failure) {
        (Some(b), _) => b.clone(),
        (None, Some(f)) => {
            let kind = f.error_type.clone().unwrap_or_else(|| f.status.clone());
            let message = if f.status == "timeout" {
                // The service's words: "<time> <request id> Task timed out after 3.00 seconds".
                format!(
                    "{} {} Task timed out after {:.2} seconds",
                    crate::telemetry::iso8601_now(),
                    reply.request_id,
                    timeout.as_secs_f64()
                )
            } else {
                format!("RequestId: {} Error: {kind}", reply.request_id)
            };
            serde_json::to_vec(&json!({"errorMessage": message, "errorType": kind})).unwrap_or_default()
        }
        (None, None) => b"null".to_vec(),
    };
    let mut r = (StatusCode::OK, body).into_response();
    let h = r.headers_mut();
    h.insert("Content-Type", HeaderValue::from_static("application/json"));
    if let Ok(v) = HeaderValue::from_str(version) {
        h.insert("X-Amz-Executed-Version", v);
    }
    if let Ok(v) = HeaderValue::from_str(&reply.request_id) {
        h.insert("x-amzn-RequestId", v);
    }
    if reply.failure.is_some() {
        h.insert("X-Amz-Function-Error", HeaderValue::from_static("Unhandled"));
    }
    if tail {
        if let Ok(v) = HeaderValue::from_str(&shapes::log_result(&reply.log)) {
            h.insert("X-Amz-Log-Result", v);
        }
    }
    // Not the service's: what the emulator measured for this environment's
    // init, to check the REPORT line against.
    if let Some(ns) = reply.init_ns {
        h.insert("X-Coldstart-Init-Duration-Ns", HeaderValue::from(ns));
    }
    r
}

/// An invoke whose environment failed its init: a function error
/// (the init's error type), and the init's log.
fn init_failed(version: &str, failed: crate::kept::InitFailed, tail: bool) -> Response {
    let kind = failed
        .failure
        .error_type
        .clone()
        .unwrap_or_else(|| failed.failure.status.clone());
    let body = json!({"errorMessage": format!("Init failed: {kind} (status {})", failed.failure.status), "errorType": kind});
    let mut r = (StatusCode::OK, axum::Json(body)).into_response();
    let h = r.headers_mut();
    h.insert("X-Amz-Function-Error", HeaderValue::from_static("Unhandled"));
    if let Ok(v) = HeaderValue::from_str(version) {
        h.insert("X-Amz-Executed-Version", v);
    }
    if tail {
        if let Ok(v) = HeaderValue::from_str(&shapes::log_result(&failed.log)) {
            h.insert("X-Amz-Log-Result", v);
        }
    }
    r
}
