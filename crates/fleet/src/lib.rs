//! `coldstart fleet`: one experiment sharded across a fleet of machines that an
//! existing engine runs (a Kubernetes Indexed Job, a GitHub Actions matrix, GitLab
//! CI's `parallel:`, a Slurm job array). No coordinator of our own: the engine
//! schedules, each shard runs `coldstart bench --shard K/N --experiment NAME`, and
//! the store is where the shards meet.
//!
//! This crate writes the engines' files ([`emit`]); every engine's own limits and
//! escaping rules are handled here, so what it prints is ready to use. The YAML
//! files are built as values (`json!` and [`yaml::ordered`]) and written by one
//! small YAML writer (`yaml.rs` says why not a crate's), never by string templates:
//! quoting is the writer's job, in one place.

mod ci;
mod k8s;
mod slurm;
mod yaml;

use anyhow::{bail, Result};
use yaml::{ordered, Yaml};

/// The engines a fleet file can be written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Kubernetes,
    Github,
    Gitlab,
    Slurm,
}

impl Engine {
    /// The names `fleet emit` accepts, as the help lists them.
    pub const NAMES: &'static str = "k8s, github, gitlab, slurm";

    /// An engine by name (`kubernetes` is `k8s`).
    pub fn parse(name: &str) -> Result<Engine> {
        Ok(match name {
            "k8s" | "kubernetes" => Engine::Kubernetes,
            "github" => Engine::Github,
            "gitlab" => Engine::Gitlab,
            "slurm" => Engine::Slurm,
            _ => bail!("unknown engine {name:?}: one of {}", Engine::NAMES),
        })
    }

    /// The engine's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Kubernetes => "k8s",
            Engine::Github => "github",
            Engine::Gitlab => "gitlab",
            Engine::Slurm => "slurm",
        }
    }

    /// The most shards the engine runs as one job (GitLab's `parallel:` is at most
    /// 200, a GitHub matrix at most 256 jobs, an Indexed Job with per-index
    /// backoff at most 100,000 completions; a Slurm array's limit is the
    /// cluster's MaxArraySize, unknown here).
    fn max_shards(self) -> Option<u32> {
        match self {
            Engine::Kubernetes => Some(100_000),
            Engine::Github => Some(256),
            Engine::Gitlab => Some(200),
            Engine::Slurm => None,
        }
    }

    /// What `--store-secret` names when it is not given.
    fn default_secret(self) -> &'static str {
        match self {
            // A Secret object (a DNS name) with the DSN under the key `dsn`.
            Engine::Kubernetes => "coldstart-store",
            // A repository/organisation secret, a CI/CD variable.
            Engine::Github | Engine::Gitlab => "COLDSTART_STORE",
            // No secret store: the DSN comes from the submitting environment.
            Engine::Slurm => "",
        }
    }
}

/// What `fleet emit` was asked for.
#[derive(Debug, Clone)]
pub struct Recipe {
    pub engine: Engine,
    pub shards: u32,
    /// The container image with coldstart and the program to measure (Kubernetes
    /// needs one; GitHub and GitLab run their job in it when given).
    pub image: Option<String>,
    /// Where the store's DSN is kept (see [`Engine::default_secret`]); for Slurm, a
    /// file on the nodes holding it.
    pub store_secret: Option<String>,
    /// The stored experiment's name; by default derived from the engine's run id.
    pub experiment: Option<String>,
    /// At most this many shards at once (None: all): each running shard holds one
    /// store connection, and a PostgreSQL server refuses beyond `max_connections`.
    pub parallelism: Option<u32>,
    /// bench's arguments, as typed after `--`.
    pub bench: Vec<String>,
}

/// The Job's (and the pods' label) name in Kubernetes, the job's name in CI files.
const JOB: &str = "coldstart-fleet";

impl Recipe {
    /// Refuse what the engine could not run, in one line.
    pub fn check(&self) -> Result<()> {
        if self.shards < 1 {
            bail!("--shards must be at least 1");
        }
        if let Some(max) = self.engine.max_shards() {
            if self.shards > max {
                bail!(
                    "--shards {}: {:?} runs at most {max} shards in one job",
                    self.shards,
                    self.engine
                );
            }
        }
        if let Some(p) = self.parallelism {
            if p < 1 || p > self.shards {
                bail!("--parallelism {p}: give 1 to --shards ({})", self.shards);
            }
            if self.engine == Engine::Gitlab {
                bail!(
                    "--parallelism: GitLab's `parallel:` has no limit of its own; limit how many \
                     run at once with the runners' `concurrent` or a resource_group"
                );
            }
        }
        if self.bench.is_empty() {
            bail!("no bench arguments: give them after `--`, e.g. `coldstart fleet emit k8s --shards 4 -- --runs 30 -- ./server`");
        }
        if self.engine == Engine::Kubernetes && self.image.is_none() {
            bail!("k8s needs --image IMG: the image with coldstart and the program to measure");
        }
        if let Some(name) = &self.store_secret {
            check_secret_name(self.engine, name)?;
        }
        if let Some(name) = &self.experiment {
            if name.is_empty() || name.chars().any(char::is_control) {
                bail!("--experiment {name:?}: give a printable, non-empty name");
            }
        }
        if self.engine == Engine::Github {
            // GitHub evaluates `${{ … }}` anywhere in a workflow, `run:` included:
            // such a word would not reach bench as typed.
            let words = self.bench.iter().chain(&self.image).chain(&self.experiment);
            if let Some(w) = words.into_iter().find(|w| w.contains("${{")) {
                bail!("{w:?} contains `${{{{`, which GitHub Actions would evaluate as an expression");
            }
        }
        Ok(())
    }

    fn secret(&self) -> &str {
        self.store_secret
            .as_deref()
            .unwrap_or(self.engine.default_secret())
    }
}

fn check_secret_name(engine: Engine, name: &str) -> Result<()> {
    let ok = match engine {
        // A Secret's name is a DNS subdomain (RFC 1123).
        Engine::Kubernetes => {
            !name.is_empty()
                && name.len() <= 253
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
                && name.starts_with(|c: char| c.is_ascii_alphanumeric())
                && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        }
        // Secret and variable names: letters, digits, underscores, not starting with a digit.
        Engine::Github | Engine::Gitlab => {
            name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !(engine == Engine::Github && name.to_ascii_uppercase().starts_with("GITHUB_"))
        }
        // A file on the nodes.
        Engine::Slurm => !name.is_empty() && !name.contains('\n'),
    };
    if !ok {
        let what = match engine {
            Engine::Kubernetes => "a Secret's name: lowercase letters, digits, '-' and '.'",
            Engine::Github => {
                "a secret's name: letters, digits and '_', not starting with a digit or GITHUB_"
            }
            Engine::Gitlab => "a CI/CD variable's name: letters, digits and '_', not starting with a digit",
            Engine::Slurm => "a file on the nodes holding the DSN",
        };
        bail!("--store-secret {name:?} is not {what}");
    }
    Ok(())
}

/// The engine's file for `recipe`, checked first.
pub fn emit(recipe: &Recipe) -> Result<String> {
    recipe.check()?;
    match recipe.engine {
        Engine::Kubernetes => k8s::job(recipe),
        Engine::Github => ci::github(recipe),
        Engine::Gitlab => ci::gitlab(recipe),
        Engine::Slurm => Ok(slurm::script(recipe)),
    }
}

/// A JSON value (built with `json!`) as a YAML node.
fn yaml(v: serde_json::Value) -> Yaml {
    Yaml::from(v)
}

/// The comment lines that open a YAML file, then the document.
fn with_header(header: &[String], value: &Yaml) -> Result<String> {
    let mut out: String = header.iter().map(|l| comment(l) + "\n").collect();
    out.push_str(&yaml::to_string(value));
    Ok(out)
}

/// One comment line (`#`, for YAML and shell alike): a line break in it (a bench
/// argument may hold one) is shown as `\n`, so the comment cannot end early.
fn comment(line: &str) -> String {
    let line = line.replace('\r', "\\r").replace('\n', "\\n");
    if line.is_empty() {
        "#".to_string()
    } else {
        format!("# {line}")
    }
}

/// What every file says first: what it is and how it was made.
fn provenance(recipe: &Recipe) -> Vec<String> {
    vec![
        format!(
            "coldstart fleet: {} shards of one experiment, one machine each.",
            recipe.shards
        ),
        format!(
            "Generated by: coldstart fleet emit {} --shards {} -- {}",
            recipe.engine.name(),
            recipe.shards,
            coldstart_core::target::shell_join(&recipe.bench)
        ),
    ]
}

#[cfg(test)]
mod tests;
