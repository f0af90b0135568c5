//! The HTTP server of one execution environment: Runtime, Extensions, Telemetry
//! and Logs APIs on one free loopback port (AWS_LAMBDA_RUNTIME_API=127.0.0.1:PORT).

use super::api::Env;
use super::{extensions_api, runtime_api, telemetry_api};
use anyhow::{Context, Result};
use axum::extract::DefaultBodyLimit;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::oneshot;

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
            .merge(telemetry_api::routes())
            .layer(DefaultBodyLimit::max(2 * runtime_api::MAX_PAYLOAD))
            .with_state(env);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                stopped.await.ok();
            });
            if let Err(e) = serve.await {
                coldstart_core::out::errln!("coldstart: Lambda API server stopped: {e}");
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
