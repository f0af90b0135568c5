//! JSON export (schema documented in docs/json-schema.md): settings, per-variant
//! statistics and every raw sample.

use anyhow::Result;
use coldstart_core::analysis::Analysis;
use coldstart_core::experiment::{ExperimentResult, ExperimentSettings};
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "coldstart.bench/2";

/// The export's `settings`: the experiment's, with what its kind adds.
pub type Settings = ExperimentSettings<KindSettings>;

/// What tune and lambda experiments record beside the common settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KindSettings {
    /// A `coldstart tune` experiment's candidates (titles, apply lines) and the rows
    /// decided without measuring: enough to draw its table again from the store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tune: Option<coldstart_tune::stored::TuneSettings>,
    /// A `coldstart lambda` experiment's function, limits and init CPU model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda: Option<coldstart_lambda::settings::LambdaSettings>,
    /// A `coldstart lambda --aws` experiment's API, functions and variants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_aws: Option<coldstart_lambda::settings::AwsSettings>,
}

#[derive(Serialize)]
struct Host {
    hostname: String,
    kernel: String,
    cpus: usize,
}

#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    coldstart_version: &'static str,
    created_unix_s: u64,
    host: Host,
    settings: &'a Settings,
    stopped: &'a str,
    variants: Vec<VariantDoc<'a>>,
    /// A sweep's best values of resource parameters.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    best: &'a [coldstart_core::analysis::Best],
    /// How loaded the machine was during the runs (docs/json-schema.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    load: Option<&'a coldstart_core::experiment::load::Load>,
    /// A fleet experiment's name, shard count and shards with their host facts
    /// (docs/json-schema.md); omitted for an experiment run as one process.
    #[serde(skip_serializing_if = "Option::is_none")]
    fleet: Option<&'a coldstart_core::experiment::shard::FleetRecord>,
    samples: &'a [coldstart_core::sample::Sample],
}

#[derive(Serialize)]
struct VariantDoc<'a> {
    #[serde(flatten)]
    variant: &'a coldstart_core::experiment::Variant,
    stats: &'a coldstart_core::analysis::VariantAnalysis,
}

pub fn render(result: &ExperimentResult, analysis: &Analysis, settings: &Settings) -> Result<String> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let doc = Document {
        schema: SCHEMA,
        coldstart_version: env!("CARGO_PKG_VERSION"),
        created_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        host: Host {
            hostname: read("/proc/sys/kernel/hostname"),
            kernel: read("/proc/sys/kernel/osrelease"),
            cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        },
        settings,
        stopped: result.stopped_label(),
        variants: result
            .variants
            .iter()
            .zip(&analysis.variants)
            .map(|(variant, stats)| VariantDoc { variant, stats })
            .collect(),
        best: &analysis.best,
        load: result.load.as_ref(),
        fleet: result.fleet.as_ref(),
        samples: &result.samples,
    };
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}
