//! The container engine on PATH (podman, docker or nerdctl), and the few ways
//! their command lines differ.

use anyhow::{bail, Result};
use std::path::PathBuf;
use std::process::{Command, Stdio};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Podman,
    Docker,
    Nerdctl,
}

impl EngineKind {
    const ALL: [EngineKind; 3] = [EngineKind::Podman, EngineKind::Docker, EngineKind::Nerdctl];

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Podman => "podman",
            EngineKind::Docker => "docker",
            EngineKind::Nerdctl => "nerdctl",
        }
    }
}

/// An engine's client, found once, up front.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Engine {
    pub kind: EngineKind,
    pub path: PathBuf,
}

impl Engine {
    /// `--engine NAME`, else the first of podman, docker, nerdctl on PATH.
    pub fn find(choice: Option<&str>) -> Result<Engine> {
        let path_env = std::env::var("PATH").unwrap_or_default();
        let on_path = |kind: EngineKind| {
            crate::target::resolve_program(kind.name(), &path_env, None)
                .ok()
                .map(|path| Engine { kind, path })
        };
        match choice {
            Some(name) => {
                let Some(kind) = EngineKind::ALL.into_iter().find(|k| k.name() == name) else {
                    bail!("unknown --engine '{name}': use podman, docker or nerdctl");
                };
                on_path(kind).ok_or_else(|| {
                    anyhow::anyhow!("--engine {name}: no `{name}` on PATH; install it or choose another engine")
                })
            }
            None => EngineKind::ALL.into_iter().find_map(on_path).ok_or_else(|| {
                anyhow::anyhow!(
                    "--image needs a container engine and none is on PATH: install podman (apt-get install podman), docker or nerdctl"
                )
            }),
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// The engine with `args`, stdin closed and its output captured.
    pub(super) fn quiet(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.args(args).stdin(Stdio::null());
        cmd
    }

    /// Remove a container now, running or not: podman waits out the stop
    /// timeout (10 s) unless told not to; docker and nerdctl kill at once.
    pub(super) fn rm_args<'a>(&self, name: &'a str) -> Vec<&'a str> {
        match self.kind {
            EngineKind::Podman => vec!["rm", "-f", "--time", "0", name],
            EngineKind::Docker | EngineKind::Nerdctl => vec!["rm", "-f", name],
        }
    }
}

/// The engine said the container or image does not exist (already gone).
pub(super) fn no_such(stderr: &[u8]) -> bool {
    let s = String::from_utf8_lossy(stderr).to_lowercase();
    s.contains("no such") || s.contains("not known") || s.contains("not found")
}

/// The first non-empty line of an engine's error output.
pub(super) fn first_line(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(no output)")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_engine_is_named() {
        let e = Engine::find(Some("lxc")).unwrap_err().to_string();
        assert!(e.contains("unknown --engine 'lxc'"), "{e}");
    }

    #[test]
    fn podman_removes_without_waiting_for_a_stop() {
        let e = Engine {
            kind: EngineKind::Podman,
            path: "podman".into(),
        };
        assert_eq!(e.rm_args("c"), ["rm", "-f", "--time", "0", "c"]);
        assert!(no_such(
            b"Error: no container with name or ID \"c\" found: no such container"
        ));
        assert_eq!(first_line(b"\n  Error: x\nmore"), "Error: x");
    }
}
