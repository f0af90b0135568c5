//! Runtime API 2018-06-01: the runtime's /next (blocks until an invoke), its
//! /response and /error, and /init/error. Status codes and error types as RIE
//! returns them, which is what the AWS runtime clients expect.

use super::api::{accepted, error, Env};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use coldstart_core::clock::now_ns;
use std::sync::Arc;

/// Largest response a runtime may post (RIE `MaxPayloadSize`: 6 MiB + 100 B;
/// Lambda: "exceeded maximum allowed payload size (6291556 bytes)").
pub const MAX_PAYLOAD: usize = 6 * 1024 * 1024 + 100;
/// Largest synchronous event (Lambda: "limit 6291456 bytes").
pub const MAX_EVENT: usize = 6 * 1024 * 1024;

pub fn routes() -> Router<Arc<Env>> {
    Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(next))
        .route("/2018-06-01/runtime/invocation/{id}/response", post(response))
        .route("/2018-06-01/runtime/invocation/{id}/error", post(invoke_error))
        .route("/2018-06-01/runtime/init/error", post(init_error))
}

/// The first call marks the runtime ready (the end of its init); every call waits
/// for the next invocation. No timeout here: the runtime may wait for ever.
async fn next(State(env): State<Arc<Env>>) -> Response {
    let at = now_ns();
    env.shared.update(|s| {
        s.runtime_ready_ns.get_or_insert(at);
        s.runtime_waiting = true;
    });
    let inv = env
        .shared
        .wait_take(|s| {
            let inv = s.runtime_queue.pop_front()?;
            s.runtime_waiting = false;
            let mut current = inv.clone();
            current.delivered_ns = Some(now_ns());
            s.current = Some(current);
            Some(inv)
        })
        .await;
    let mut headers = HeaderMap::new();
    let mut set = |k: &'static str, v: &str| {
        if let Ok(v) = HeaderValue::from_str(v) {
            headers.insert(k, v);
        }
    };
    set("Lambda-Runtime-Aws-Request-Id", &inv.request_id);
    set("Lambda-Runtime-Deadline-Ms", &inv.deadline_ms.to_string());
    set("Lambda-Runtime-Invoked-Function-Arn", &inv.arn);
    set("Lambda-Runtime-Trace-Id", &inv.trace_id);
    set("Content-Type", "application/json");
    (StatusCode::OK, headers, inv.event).into_response()
}

/// Which state a /response or /error for `id` finds.
fn check_current(env: &Env, id: &str) -> Result<(), Box<Response>> {
    let s = env.shared.lock();
    match &s.current {
        Some(inv) if inv.request_id == id && inv.result.is_none() => Ok(()),
        Some(inv) if inv.request_id == id => Err(Box::new(error(
            StatusCode::FORBIDDEN,
            "InvalidStateTransition",
            "a response or error was already posted for this request",
        ))),
        _ => Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            "InvalidRequestID",
            &format!("no invocation in flight has the request id {id}"),
        ))),
    }
}

async fn response(
    State(env): State<Arc<Env>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let at = now_ns();
    if let Err(r) = check_current(&env, &id) {
        return *r;
    }
    if let Some(mode) = headers.get("Lambda-Runtime-Function-Response-Mode") {
        if !mode.as_bytes().eq_ignore_ascii_case(b"streaming") {
            return error(
                StatusCode::BAD_REQUEST,
                "InvalidFunctionResponseMode",
                "Lambda-Runtime-Function-Response-Mode must be `streaming` or absent",
            );
        }
    }
    if body.len() > MAX_PAYLOAD {
        // The invoke ends here with Lambda's function error; a later, smaller
        // response finds the request already answered (403), as on Lambda.
        let msg =
            format!("Response payload size exceeded maximum allowed payload size ({MAX_PAYLOAD} bytes).");
        let err = serde_json::json!({"errorMessage": msg, "errorType": "Function.ResponseSizeTooLarge"});
        finish(
            &env,
            at,
            Some("Function.ResponseSizeTooLarge".into()),
            err.to_string().into_bytes(),
        );
        return error(StatusCode::PAYLOAD_TOO_LARGE, "RequestEntityTooLarge", &msg);
    }
    finish(&env, at, None, body.to_vec());
    accepted()
}

async fn invoke_error(
    State(env): State<Arc<Env>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let at = now_ns();
    if let Err(r) = check_current(&env, &id) {
        return *r;
    }
    finish(&env, at, Some(error_type(&headers, &body)), body.to_vec());
    accepted()
}

async fn init_error(State(env): State<Arc<Env>>, headers: HeaderMap, body: Bytes) -> Response {
    let too_late = env.shared.lock().runtime_ready_ns.is_some();
    if too_late {
        return error(
            StatusCode::FORBIDDEN,
            "InvalidStateTransition",
            "/runtime/init/error after the runtime's first /next",
        );
    }
    let kind = error_type(&headers, &body);
    let text = String::from_utf8_lossy(&body).into_owned();
    env.shared.update(|s| {
        s.init_error.get_or_insert((kind, text));
    });
    accepted()
}

fn finish(env: &Env, at: u64, error_type: Option<String>, body: Vec<u8>) {
    env.shared.update(|s| {
        if let Some(inv) = s.current.as_mut() {
            inv.result = Some(super::state::InvokeResult {
                at_ns: at,
                error_type,
                body,
            });
        }
    });
}

/// The header, else the body's `errorType`, else Lambda's generic name.
fn error_type(headers: &HeaderMap, body: &[u8]) -> String {
    headers
        .get("Lambda-Runtime-Function-Error-Type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| {
            serde_json::from_slice::<serde_json::Value>(body)
                .ok()?
                .get("errorType")?
                .as_str()
                .map(str::to_string)
        })
        .map_or_else(
            || "Runtime.Unknown".to_string(),
            |t| super::api::shorten(&valid_error_type(&t)),
        )
}

/// Lambda keeps an error type that contains `Runtime.Xx…` or `Function.Xx…` (an
/// upper-case letter, then letters); others become `Function.Unknown` (if they
/// start with `Function.`) or `Runtime.Unknown` (RIE's
/// `GetValidRuntimeOrFunctionErrorType`).
pub fn valid_error_type(t: &str) -> String {
    let valid_at = |i: usize, prefix: &str| {
        let rest = &t.as_bytes()[i + prefix.len()..];
        rest.len() >= 2 && rest[0].is_ascii_uppercase() && rest[1].is_ascii_alphabetic()
    };
    let found = ["Runtime.", "Function."]
        .iter()
        .any(|p| t.match_indices(p).any(|(i, _)| valid_at(i, p)));
    if found {
        t.to_string()
    } else if t.starts_with("Function.") {
        "Function.Unknown".into()
    } else {
        "Runtime.Unknown".into()
    }
}

#[cfg(test)]
mod tests {
    use super::valid_error_type;

    #[test]
    fn error_types_as_lambda_maps_them() {
        assert_eq!(
            valid_error_type("Runtime.ImportModuleError"),
            "Runtime.ImportModuleError"
        );
        assert_eq!(
            valid_error_type("Function.ResponseSizeTooLarge"),
            "Function.ResponseSizeTooLarge"
        );
        assert_eq!(valid_error_type("ValueError"), "Runtime.Unknown");
        assert_eq!(valid_error_type("Runtime.x"), "Runtime.Unknown");
        assert_eq!(valid_error_type("Function.lower"), "Function.Unknown");
        assert_eq!(valid_error_type("Runtime."), "Runtime.Unknown");
        assert_eq!(valid_error_type("Error"), "Runtime.Unknown");
    }
}
