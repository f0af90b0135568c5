//! The HTTP server of one execution environment: Runtime, Extensions, Telemetry
//! and Logs APIs on one free loopback port (AWS_LAMBDA_RUNTIME_API=127.0.0.1:PORT).

use super::env::Function;
use super::state::Shared;
use super::telemetry::Bus;
use super::{extensions_api, runtime_api, telemetry};
use anyhow::{Context, Result};
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::oneshot;

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

pub struct Server {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Bind 127.0.0.1 on a free port and serve until `stop`.
    pub async fn start(env: Arc<Env>) -> Result<Server> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .context("binding the Lambda API server on 127.0.0.1")?;
        let addr = listener.local_addr().context("local address of the API server")?;
        let app = runtime_api::routes()
            .merge(extensions_api::routes())
            .merge(telemetry::routes())
            .layer(DefaultBodyLimit::max(2 * runtime_api::MAX_PAYLOAD))
            .with_state(env);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                stopped.await.ok();
            });
            if let Err(e) = serve.await {
                crate::out::errln!("coldstart: Lambda API server stopped: {e}");
            }
        });
        Ok(Server {
            addr,
            stop: Some(stop),
            task,
        })
    }

    /// Stop serving; blocked /next calls are dropped with their connections.
    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            s.send(()).ok();
        }
        // Graceful shutdown would wait for the blocked /next handlers: cut them off.
        self.task.abort();
        self.task.await.ok();
    }
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
