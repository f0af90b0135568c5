//! What a `coldstart lambda` experiment was run with, recorded in its settings
//! (and so in the JSON export and the store): without it a boosted run at 256 MB
//! and a `--no-init-boost` run at 1769 MB export the same settings. Filled in by
//! `lambda::settings::record`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LambdaSettings {
    /// `--timeout`: the invoke's limit (and a suppressed init's).
    pub function_timeout_ms: u64,
    /// `--init-timeout`.
    pub init_timeout_ms: u64,
    /// The on-demand init's CPU (None: `--no-init-boost`).
    pub init_boost: Option<InitBoost>,
    /// The sandbox's cgroup version (None: `--no-cgroup` or unavailable: no
    /// memory or CPU limit at all).
    pub cgroup: Option<String>,
    /// `--invokes`: warm invokes after the cold one.
    pub invokes: usize,
    pub variants: Vec<LambdaVariant>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitBoost {
    pub vcpus: f64,
    pub seconds: f64,
}

/// One variant (one memory size of a `--name`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LambdaVariant {
    pub name: String,
    pub memory_mb: u64,
    /// As INIT_START names it (`python:3.11.coldstart`, `provided:coldstart`).
    pub runtime_version: String,
    /// The runtime's command (argv).
    pub runtime: Vec<String>,
    pub handler: String,
    /// Host paths.
    pub code: String,
    pub layers: Vec<String>,
    pub extensions: Vec<String>,
    /// In the sandbox's mount namespace.
    pub sandbox: bool,
    pub bare: bool,
}
