//! `coldstart.toml` at the project root: named targets (so `coldstart bench api`
//! needs no long command line) and the store location.
//!
//! ```toml
//! [store]
//! url = "postgres://coldstart@db.internal/coldstart"   # optional; default .coldstart/coldstart.db
//!
//! [targets.api]
//! command = ["./target/release/server", "--port", "8080"]
//! ready = "http://127.0.0.1:8080/health"
//! env = { RUST_LOG = "warn" }
//! runs = 30
//! requests = 3
//! ```

use anyhow::{Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const FILE: &str = "coldstart.toml";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub store: Option<StoreConfig>,
    #[serde(default)]
    pub targets: BTreeMap<String, TargetConfig>,
    /// `coldstart tune`'s settings.
    #[serde(default)]
    pub tune: Option<TuneConfig>,
}

/// `[tune]`: the team's catalogue of candidates.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneConfig {
    /// A TOML file or a directory of them (relative to the project root), as `--catalogue`.
    pub catalogue: PathBuf,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    pub url: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    /// argv; no shell.
    pub command: Vec<String>,
    pub ready: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Relative to the project root.
    pub cwd: Option<PathBuf>,
    pub runs: Option<usize>,
    pub warmup: Option<usize>,
    pub timeout: Option<f64>,
    pub requests: Option<usize>,
    /// `coldstart gate`: the median must not exceed this ("12s", "800ms").
    pub max: Option<String>,
    /// `coldstart gate`: the slowdown against the baseline must not exceed this ("5%", "300ms").
    pub max_regression: Option<String>,
    /// `coldstart gate`: warn beyond this slowdown.
    pub warn: Option<String>,
    /// `coldstart gate`: failed candidate runs accepted ("3" or "10%").
    pub max_failures: Option<String>,
}

/// The project root: the nearest directory upwards holding coldstart.toml, else
/// the git work tree's top, else the current directory.
pub fn project_root() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    if let Some(dir) = cwd.ancestors().find(|d| d.join(FILE).is_file()) {
        return dir.to_path_buf();
    }
    std::process::Command::new("git")
        .args(["rev-parse", "--show-toplevel"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|p| p.is_dir())
        .unwrap_or(cwd)
}

pub fn load(root: &Path) -> Result<Option<Config>> {
    let path = root.join(FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let config: Config = toml::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "{}: {}",
            path.display(),
            e.to_string().lines().collect::<Vec<_>>().join(" ")
        )
    })?;
    config
        .check()
        .map_err(|e| anyhow::anyhow!("{}: {e:#}", path.display()))?;
    Ok(Some(config))
}

impl Config {
    /// Every target's numbers within coldstart's bounds (a huge `timeout` would
    /// otherwise panic or wrap once the target is run).
    fn check(&self) -> Result<()> {
        use crate::bounds;
        for (name, t) in &self.targets {
            let key = |k: &str| format!("[targets.{name}] {k}");
            if let Some(v) = t.runs {
                bounds::runs(&key("runs"), v, 1)?;
            }
            if let Some(v) = t.warmup {
                bounds::runs(&key("warmup"), v, 0)?;
            }
            if let Some(v) = t.timeout {
                bounds::seconds(&key("timeout"), v, false)?;
            }
            if let Some(v) = t.requests {
                bounds::count(&key("requests"), v, 0, bounds::MAX_REQUESTS)?;
            }
        }
        Ok(())
    }
}

/// Where results go: --store, else COLDSTART_STORE, else the config's [store],
/// else `.coldstart/coldstart.db` under the project root.
pub fn store_spec(flag: Option<&str>, config: Option<&Config>, root: &Path) -> String {
    flag.map(String::from)
        .or_else(|| std::env::var("COLDSTART_STORE").ok().filter(|s| !s.is_empty()))
        .or_else(|| config.and_then(|c| c.store.as_ref()).map(|s| s.url.clone()))
        .unwrap_or_else(|| crate::store::default_location(root).display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets_and_rejects_unknown_keys() {
        let c: Config = toml::from_str(
            "[targets.api]\ncommand = [\"./s\", \"--port\", \"1\"]\nready = \"tcp:1\"\nenv = { A = \"b\" }\nruns = 5\n",
        )
        .unwrap();
        let api = &c.targets["api"];
        assert_eq!(api.command, ["./s", "--port", "1"]);
        assert_eq!(api.runs, Some(5));
        assert_eq!(api.env["A"], "b");
        assert!(toml::from_str::<Config>("[targets.x]\ncommand = [\"a\"]\nrun = 3\n").is_err());
    }

    #[test]
    fn huge_numbers_are_refused_naming_the_target_and_key() {
        let c: Config = toml::from_str("[targets.api]\ncommand = [\"a\"]\ntimeout = 1e300\n").unwrap();
        let e = format!("{:#}", c.check().unwrap_err());
        assert!(e.starts_with("[targets.api] timeout "), "{e}");
        let c: Config = toml::from_str("[targets.api]\ncommand = [\"a\"]\nruns = 0\n").unwrap();
        assert!(c.check().is_err());
    }
}
