//! The record of what a `coldstart lambda` experiment ran with
//! (`report::lambda_settings`), from its options and variants.

use coldstart_report::lambda_settings::{InitBoost, LambdaSettings, LambdaVariant};

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
