//! Extensions API 2020-01-01: /register (while registration is open), the blocking
//! /event/next, /init/error and /exit/error, with RIE's status codes and error types.

use super::api::{accepted, error, Env};
use super::state::{self, Extension, MAX_EXTENSIONS};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use coldstart_core::clock::now_ns;
use std::sync::Arc;

pub fn routes() -> Router<Arc<Env>> {
    Router::new()
        .route("/2020-01-01/extension/register", post(register))
        .route("/2020-01-01/extension/event/next", get(next))
        .route("/2020-01-01/extension/init/error", post(init_error))
        .route("/2020-01-01/extension/exit/error", post(exit_error))
}

fn forbidden(kind: &str, message: &str) -> Response {
    error(StatusCode::FORBIDDEN, kind, message)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
}

async fn register(State(env): State<Arc<Env>>, headers: HeaderMap, body: Bytes) -> Response {
    let at = now_ns();
    let Some(name) = header(&headers, "Lambda-Extension-Name") else {
        return forbidden(
            "Extension.InvalidExtensionName",
            "missing Lambda-Extension-Name header (the extension's file name)",
        );
    };
    // An external extension's name is its file name; an internal one's can be
    // anything, and it names marks and table rows.
    let shortened = super::api::shorten(name);
    let name = shortened.as_str();
    let parsed: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return forbidden("InvalidRequestFormat", &format!("body is not JSON: {e}")),
    };
    if parsed.get("configurationKeys").is_some() {
        return forbidden("InvalidRequestFormat", "configurationKeys is no longer supported");
    }
    let Some(events) = parsed.get("events").and_then(|e| e.as_array()) else {
        return forbidden(
            "InvalidRequestFormat",
            "body must be {\"events\": [\"INVOKE\", \"SHUTDOWN\"]}",
        );
    };
    let mut invoke = false;
    let mut shutdown = false;
    for e in events {
        match e.as_str() {
            Some("INVOKE") => invoke = true,
            Some("SHUTDOWN") => shutdown = true,
            _ => return forbidden("Extension.InvalidEventType", &format!("unknown event type {e}")),
        }
    }
    // A name that is not a file of the extensions directory is an internal
    // extension (registered from inside the runtime process, RIE's rule).
    let external = env.external_names.iter().any(|n| n == name);
    if !external && shutdown {
        return forbidden(
            "Extension.InvalidEventType",
            "internal extensions cannot register for SHUTDOWN",
        );
    }
    let id = state::uuid();
    let outcome = env.shared.update(|s| {
        if !s.registration_open {
            return Err(Box::new(forbidden(
                "Extension.RegistrationClosed",
                "registration is closed",
            )));
        }
        if s.extensions.iter().any(|e| e.name == name) {
            return Err(Box::new(forbidden(
                "Extension.InvalidExtensionName",
                &format!("an extension named {name} is already registered"),
            )));
        }
        if s.extensions.len() >= MAX_EXTENSIONS {
            return Err(Box::new(forbidden(
                "Extension.TooManyExtensions",
                &format!("at most {MAX_EXTENSIONS} extensions"),
            )));
        }
        s.extensions.push(Extension {
            name: name.to_string(),
            id: id.clone(),
            external,
            invoke,
            shutdown,
            registered_ns: at,
            ready_ns: None,
            last_next_ns: None,
            waiting: false,
            events: Default::default(),
            telemetry: None,
        });
        Ok(())
    });
    if let Err(r) = outcome {
        return *r;
    }
    let f = &env.function;
    let mut body = serde_json::json!({
        "functionName": f.name,
        "functionVersion": f.version,
        "handler": f.handler,
    });
    if header(&headers, "Lambda-Extension-Accept-Feature").is_some_and(|v| v.contains("accountId")) {
        body["accountId"] = f.account_id.clone().into();
    }
    let mut out = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&id) {
        out.insert("Lambda-Extension-Identifier", v);
    }
    (StatusCode::OK, out, axum::Json(body)).into_response()
}

/// Check the identifier header: missing, malformed, unknown → 403 as RIE does.
fn identify(env: &Env, headers: &HeaderMap) -> Result<String, Box<Response>> {
    let Some(id) = header(headers, "Lambda-Extension-Identifier") else {
        return Err(Box::new(forbidden(
            "Extension.MissingExtensionIdentifier",
            "missing Lambda-Extension-Identifier header",
        )));
    };
    if !state::is_uuid(id) {
        return Err(Box::new(forbidden(
            "Extension.InvalidExtensionIdentifier",
            "Lambda-Extension-Identifier is not a UUID",
        )));
    }
    if env.shared.lock().extensions.iter().all(|e| e.id != id) {
        return Err(Box::new(forbidden(
            "Extension.UnknownExtensionIdentifier",
            "no extension is registered with this identifier",
        )));
    }
    Ok(id.to_string())
}

/// The first call marks the extension ready; each call waits for its next event.
async fn next(State(env): State<Arc<Env>>, headers: HeaderMap) -> Response {
    let at = now_ns();
    let id = match identify(&env, &headers) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    env.shared.update(|s| {
        if let Some(e) = s.extension_by_id(&id) {
            e.ready_ns.get_or_insert(at);
            e.last_next_ns = Some(at);
            e.waiting = true;
        }
    });
    let event = env
        .shared
        .wait_take(|s| {
            let e = s.extension_by_id(&id)?;
            let ev = e.events.pop_front()?;
            e.waiting = false;
            Some(ev)
        })
        .await;
    let mut out = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&state::uuid()) {
        out.insert("Lambda-Extension-Event-Identifier", v);
    }
    (StatusCode::OK, out, axum::Json(event)).into_response()
}

async fn init_error(state: State<Arc<Env>>, headers: HeaderMap) -> Response {
    report_error(state, headers, "Extension.InitError")
}

async fn exit_error(state: State<Arc<Env>>, headers: HeaderMap) -> Response {
    report_error(state, headers, "Extension.ExitError")
}

fn report_error(State(env): State<Arc<Env>>, headers: HeaderMap, kind: &str) -> Response {
    let id = match identify(&env, &headers) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    let Some(function_error) = header(&headers, "Lambda-Extension-Function-Error-Type") else {
        return forbidden(
            "Extension.MissingHeader",
            "missing Lambda-Extension-Function-Error-Type header",
        );
    };
    env.shared.update(|s| {
        let name = s.extension_by_id(&id).map(|e| e.name.clone()).unwrap_or_default();
        s.extension_error
            .get_or_insert((name, kind.to_string(), super::api::shorten(function_error)));
    });
    accepted()
}
