//! `coldstart lambda serve`: the Lambda API (the control plane's function,
//! configuration and version calls, and Invoke) over the emulator, so SDKs, the
//! AWS CLI and coldstart's own AWS driver can be pointed at it with an endpoint URL.
//!
//! Each (function, version) gets an execution environment on its first invoke
//! (cold: INIT, Init Duration in the REPORT), kept for later invokes (warm) until
//! it is idle for the idle timeout, replaced (a configuration update of $LATEST),
//! deleted (its version), broken (the runtime exited or timed out) or the server
//! stops. One invoke at a time per environment: a second concurrent invoke of the
//! same version is refused with 429 (the emulator does not scale out).
//!
//! Modules: `registry` (functions, versions, layers, their environments),
//! `shapes` (the API's JSON and errors), `routes` (the HTTP handlers).

mod registry;
mod routes;
mod shapes;

use super::{boost, function, managed, sandbox, Config};
use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use registry::Registry;

/// One function as defined on the command line (`--name F --runtime … --code …`),
/// or as a configuration update changed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub name: String,
    pub runtime: PathBuf,
    pub code: Option<PathBuf>,
    pub layers: Vec<PathBuf>,
    pub extensions: Option<PathBuf>,
    pub handler: String,
    pub env: Vec<(String, String)>,
    pub memory_mb: u64,
    pub timeout: Duration,
    pub sandboxed: bool,
}

impl Definition {
    /// The emulator's configuration of this function at `version`; errors name
    /// what is wrong (a missing bootstrap, a layer that is not a directory).
    pub fn config(&self, version: &str) -> Result<Config> {
        let func = function::Function::new(&function::Flags {
            runtime: &self.runtime,
            code: self.code.as_deref(),
            layers: &self.layers,
            extensions: self.extensions.as_deref(),
            handler: &self.handler,
            env: &self.env,
            bare: false,
            sandboxed: self.sandboxed,
        })?;
        let at = func.at(self.memory_mb)?;
        Ok(Config {
            runtime: at.runtime,
            extensions: func.extensions.clone(),
            memory_mb: self.memory_mb,
            handler: self.handler.clone(),
            env: self.env.clone(),
            platform_env: at.platform_env,
            runtime_version: at.runtime_version,
            bare: false,
            layout: func.layout.clone(),
            interpreter_note: func.interpreter_note(),
            version: version.to_string(),
        })
    }

    /// The `Runtime` field: a managed runtime's identifier, else `provided.al2023`
    /// (a custom runtime's bootstrap).
    pub fn runtime_id(&self) -> String {
        match managed::classify(&self.runtime) {
            Ok(managed::RuntimeArg::Managed(rt)) => rt.id().to_string(),
            _ => "provided.al2023".to_string(),
        }
    }
}

/// What every function's environments share.
pub struct Settings {
    pub addr: SocketAddr,
    /// An environment with no invoke for this long is shut down.
    pub idle_timeout: Duration,
    pub init_timeout: Duration,
    pub init_boost: Option<boost::Boost>,
    pub cgroups: Option<sandbox::Cgroups>,
    pub region: String,
    pub log: Option<Arc<Mutex<std::fs::File>>>,
    /// No line per environment on stderr.
    pub quiet: bool,
    /// Fault injection (`--reuse-environments`): a new version shares the previous
    /// version's environment, so its first invoke is warm.
    pub reuse_environments: bool,
}

/// Serve until SIGINT/SIGTERM; then every environment is shut down and cleaned
/// up. Returns the exit code (128 + the signal).
pub fn run(rt: &tokio::runtime::Runtime, settings: Settings, defs: Vec<Definition>) -> Result<i32> {
    let lab = coldstart_core::Lab::get()?;
    for d in &defs {
        d.config("$LATEST")
            .with_context(|| format!("function {}", d.name))?;
    }
    let registry = Arc::new(Registry::new(lab, settings, defs));
    rt.block_on(routes::serve(registry))?;
    Ok(coldstart_core::launch::signals::exit_code())
}
