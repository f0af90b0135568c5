//! `coldstart lambda`'s runner: every variant's function configuration and the
//! options they share, run as emulated cold starts by the experiment's scheduler.

use super::{cold_start, Config, Options};
use anyhow::{bail, Result};
use coldstart_core::experiment::{Runner, Variant};
use coldstart_core::sample::{RunId, Sample};
use coldstart_core::target::{Target, LAMBDA_INIT};

/// The variants' configurations (in the plan's variant order) and the options
/// every run shares, on the async runtime that serves the Lambda APIs.
pub struct ColdStarts<'rt> {
    pub rt: &'rt tokio::runtime::Runtime,
    pub configs: Vec<Config>,
    pub opts: Options,
}

impl Runner for ColdStarts<'_> {
    fn run(&mut self, variant: usize, id: RunId) -> Result<Sample> {
        let Some(cfg) = self.configs.get(variant) else {
            bail!("no variant {variant}: the plan and the runner disagree")
        };
        cold_start(self.rt, cfg, &self.opts, id)
    }
}

impl Config {
    /// The variant as the plan, the store and the reports see it: the runtime
    /// with the function's environment, ready at the end of init (`lambda:init`).
    pub fn variant(&self, name: impl Into<String>) -> Variant {
        Variant {
            name: name.into(),
            target: Target {
                env: self.env.clone(),
                ..self.runtime.clone()
            },
            readiness: LAMBDA_INIT.to_string(),
            params: Vec::new(),
        }
    }
}
