//! What the environment's HTTP APIs (runtime, extensions, telemetry) share: the
//! state every handler sees and Lambda's shapes of an answer.

use super::env::Function;
use super::state::Shared;
use super::telemetry::Bus;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// What every handler can see.
pub struct Env {
    pub shared: Arc<Shared>,
    pub telemetry: Arc<Bus>,
    pub function: Function,
    /// File names in the extensions directory (external extensions).
    pub external_names: Vec<String>,
}

/// Longest header-derived text (an error type, an internal extension's name) kept
/// for the log, the terminal and the results.
pub const MAX_HEADER_TEXT: usize = 128;

/// A header's text cut to `MAX_HEADER_TEXT` characters (marked with `…`): a
/// process may send a header of any size, and it ends up in log lines, tables
/// and metric names.
pub fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_HEADER_TEXT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Lambda's error body: `{"errorMessage", "errorType"}`.
pub fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    (
        status,
        axum::Json(serde_json::json!({"errorMessage": message, "errorType": kind})),
    )
        .into_response()
}

/// The Runtime and Extensions APIs' 202 `{"status": "OK"}`.
pub fn accepted() -> Response {
    (
        StatusCode::ACCEPTED,
        axum::Json(serde_json::json!({"status": "OK"})),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_header_text_is_shortened() {
        assert_eq!(shorten("Runtime.Short"), "Runtime.Short");
        let long = "é".repeat(10_000);
        let cut = shorten(&long);
        assert_eq!(cut.chars().count(), MAX_HEADER_TEXT + 1);
        assert!(cut.ends_with('…'));
    }
}
