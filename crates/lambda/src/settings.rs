//! What a `coldstart lambda` experiment was run with, recorded in its settings
//! (and so in the JSON export and the store): without it a boosted run at 256 MB
//! and a `--no-init-boost` run at 1769 MB export the same settings. `record` fills
//! it in from the options and variants; report/ renders it.

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

pub fn record<'a>(
    opts: &super::Options,
    configs: impl IntoIterator<Item = (&'a str, &'a super::Config)>,
) -> LambdaSettings {
    let path = |p: &std::path::Path| p.display().to_string();
    LambdaSettings {
        function_timeout_ms: opts.function_timeout.as_millis() as u64,
        init_timeout_ms: opts.init_timeout.as_millis() as u64,
        init_boost: opts.init_boost.map(|b| InitBoost {
            vcpus: b.vcpus,
            seconds: b.seconds.as_secs_f64(),
        }),
        cgroup: opts.cgroups.as_ref().map(|c| c.version().to_string()),
        invokes: opts.invokes,
        variants: configs
            .into_iter()
            .map(|(name, c)| LambdaVariant {
                name: name.to_string(),
                memory_mb: c.memory_mb,
                runtime_version: c.runtime_version.clone(),
                runtime: c.runtime.argv.clone(),
                handler: c.handler.clone(),
                code: path(&c.layout.code),
                layers: c.layout.layers.iter().map(|l| path(l)).collect(),
                extensions: c.extensions.iter().map(|e| path(e)).collect(),
                sandbox: c.layout.sandboxed,
                bare: c.bare,
            })
            .collect(),
    }
}

/// What a `coldstart lambda --aws` experiment ran against, recorded in its
/// settings: the API, each function as it was before the runs, each variant's
/// configuration. The functions' variable values are not recorded (they may
/// hold secrets); their names are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AwsSettings {
    /// `--endpoint-url`, or the service's endpoint for the region.
    pub endpoint: String,
    /// `--parallel`: runs prepared ahead.
    pub parallel: usize,
    pub functions: Vec<AwsFunction>,
    pub variants: Vec<AwsVariant>,
    /// `--mark NAME=REGEX`, as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<String>,
}

/// A deployed function as GetFunction read it before the first change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AwsFunction {
    /// Name, partial ARN or ARN, as given.
    pub name: String,
    pub architecture: String,
    pub memory_mb: u64,
    pub timeout_s: u64,
    pub layers: Vec<String>,
    /// Its environment variables' names.
    pub env_keys: Vec<String>,
    /// SnapStart on published versions.
    pub snapstart: bool,
}

/// One variant's runs: the configuration each run's version got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AwsVariant {
    pub name: String,
    pub function: String,
    pub architecture: String,
    pub memory_mb: u64,
    pub layers: Vec<String>,
    pub snapstart: bool,
    /// The invokes' payload's size.
    pub event_bytes: usize,
}
