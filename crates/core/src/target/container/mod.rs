//! A container image as a target: which engine runs it, the `ENGINE run` command
//! line each run starts (a fresh container, labelled as coldstart's), and the
//! engine calls around it (remove the run's container, remove the image for a
//! pull-cold run, reap what a killed coldstart left).
//!
//! The run itself is the engine's client process (`podman run …`, attached), so
//! spawn → ready covers what a user waits for: the client, the pull when the
//! image is absent, the container's creation, the OCI runtime and the program's
//! init. Its output is the container's, so every probe works as for a process.

mod engine;
mod reap;

pub use engine::{Engine, EngineKind};
pub use reap::{reap_orphans, OWNER_LABEL};

use anyhow::{bail, Context, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// One variant's container: what each of its runs starts.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Container {
    pub engine: Engine,
    pub image: String,
    /// `-p` values: `127.0.0.1:HOST:CONTAINER` (loopback only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub publish: Vec<String>,
}

impl Container {
    /// `--image`, `--publish` and `--engine` as given: the engine found on PATH,
    /// each port bound to loopback.
    pub fn new(image: &str, publish: &[String], engine: Option<&str>) -> Result<Container> {
        if image.trim().is_empty() || image.starts_with('-') {
            bail!("bad --image '{image}': give an image reference such as localhost/app:1 or 127.0.0.1:5000/app:1");
        }
        let publish = publish
            .iter()
            .map(|p| parse_publish(p))
            .collect::<Result<Vec<_>>>()?;
        Ok(Container {
            engine: Engine::find(engine)?,
            image: image.to_string(),
            publish,
        })
    }

    /// The command line of a run, as a person would type it: `ENGINE run
    /// [-p …] [-e K=V …] IMAGE [COMMAND…]`. Each run inserts its own name and
    /// labels after `run` ([`Container::run_argv`]).
    pub fn base_argv(&self, env: &[(String, String)], command: &[String]) -> Vec<String> {
        let mut argv = vec![self.engine.path.display().to_string(), "run".to_string()];
        for p in &self.publish {
            argv.extend(["-p".to_string(), p.clone()]);
        }
        for (k, v) in env {
            argv.extend(["-e".to_string(), format!("{k}={v}")]);
        }
        argv.push(self.image.clone());
        argv.extend(command.iter().cloned());
        argv
    }

    /// `base` (from [`Container::base_argv`]) for one run: the container named
    /// `name` and labelled with its `owner`, so a killed coldstart's containers
    /// are found and removed by the next one.
    pub fn run_argv(&self, base: &[String], name: &str, owner: &str) -> Vec<String> {
        let mut argv = base.to_vec();
        let at = 2.min(argv.len());
        let own = [
            "--name".to_string(),
            name.to_string(),
            "--label".to_string(),
            format!("{OWNER_LABEL}={owner}"),
        ];
        argv.splice(at..at, own);
        argv
    }

    /// Remove a run's container, whatever state it is in (no stop timeout).
    pub fn remove(&self, name: &str) -> Result<()> {
        let out = self.engine.quiet(&self.engine.rm_args(name)).output();
        let out = out.with_context(|| format!("cannot run {}", self.engine.name()))?;
        if out.status.success() || engine::no_such(&out.stderr) {
            return Ok(());
        }
        bail!(
            "{} could not remove container {name}: {}",
            self.engine.name(),
            engine::first_line(&out.stderr)
        )
    }

    /// Remove the image from the engine's store so the next run pulls it
    /// (`--cache cold`). An image that is not there is fine.
    pub fn remove_image(&self) -> Result<()> {
        let out = self
            .engine
            .quiet(&["rmi", "-f", &self.image])
            .output()
            .with_context(|| format!("cannot run {}", self.engine.name()))?;
        if out.status.success() || engine::no_such(&out.stderr) {
            return Ok(());
        }
        bail!(
            "{} could not remove image {} for a pull-cold run: {}",
            self.engine.name(),
            self.image,
            engine::first_line(&out.stderr)
        )
    }
}

/// A container's own instants as the engine recorded them (its wall clock, Unix ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instants {
    /// Created: its image pulled and unpacked, its configuration written.
    pub created: i128,
    /// Started: recorded once the OCI runtime's start returned, which released the
    /// process to exec its entrypoint; None for a container that never started.
    pub started: Option<i128>,
}

impl Container {
    /// The engine's record of `name`'s creation and start. Podman only: docker's
    /// and nerdctl's templates give these as text.
    pub fn instants(&self, name: &str) -> Result<Option<Instants>> {
        if self.engine.kind != EngineKind::Podman {
            return Ok(None);
        }
        let format = "{{.Created.UnixNano}} {{.State.StartedAt.UnixNano}}";
        let out = self
            .engine
            .quiet(&["container", "inspect", "--format", format, name])
            .output()
            .with_context(|| format!("cannot run {}", self.engine.name()))?;
        if !out.status.success() {
            bail!(
                "{} could not inspect container {name}: {}",
                self.engine.name(),
                engine::first_line(&out.stderr)
            );
        }
        Ok(parse_instants(&String::from_utf8_lossy(&out.stdout)))
    }
}

/// `CREATED STARTED` on the output's last line (anything before it, such as an
/// engine's warning, is not one); Go's zero time (before 1970) is no instant.
fn parse_instants(text: &str) -> Option<Instants> {
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let mut f = line
        .split_whitespace()
        .map(|w| w.parse::<i128>().ok().filter(|t| *t > 0));
    Some(Instants {
        created: f.next()??,
        started: f.next().flatten(),
    })
}

/// A fresh, unique container name for one run of this process.
pub fn run_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "coldstart-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `--publish PORT` or `HOST:CONTAINER` → `127.0.0.1:HOST:CONTAINER`: a
/// container of ours listens on loopback only.
fn parse_publish(p: &str) -> Result<String> {
    let port = |s: &str| -> Result<u16> {
        s.parse::<u16>().ok().filter(|n| *n > 0).with_context(|| {
            format!("bad --publish '{p}': ports are 1-65535, as PORT or HOSTPORT:CONTAINERPORT")
        })
    };
    let (host, inner) = match p.split_once(':') {
        Some((h, c)) => (port(h)?, port(c)?),
        None => (port(p)?, port(p)?),
    };
    Ok(format!("127.0.0.1:{host}:{inner}"))
}

/// What the engine printed when a run failed, with the fix when it is one we
/// know: on hosts like this one, runc cannot set the engine's default rlimits.
pub fn hint_for(output: &[String]) -> Option<String> {
    let text = output.join("\n");
    if text.contains("rlimit") && text.contains("not permitted") {
        return Some(
            "the OCI runtime may not raise the engine's default rlimits here: set explicit ones in \
             containers.conf ([containers] default_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]), \
             pointed to by CONTAINERS_CONF"
                .to_string(),
        );
    }
    if text.contains("crun") && text.contains("cgroup") {
        return Some(
            "crun refuses this host's cgroup layout: use runc ([engine] runtime = \"runc\" in containers.conf)"
                .to_string(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn podman() -> Container {
        Container {
            engine: Engine {
                kind: EngineKind::Podman,
                path: "/usr/bin/podman".into(),
            },
            image: "localhost/app:1".into(),
            publish: vec!["127.0.0.1:18080:8080".into()],
        }
    }

    #[test]
    fn publish_binds_loopback_and_rejects_bad_ports() {
        assert_eq!(parse_publish("8080").unwrap(), "127.0.0.1:8080:8080");
        assert_eq!(parse_publish("18080:80").unwrap(), "127.0.0.1:18080:80");
        for bad in ["0", "x", "70000", "1:2:3", ""] {
            let e = parse_publish(bad).unwrap_err().to_string();
            assert!(e.contains("--publish"), "{bad}: {e}");
        }
    }

    #[test]
    fn each_run_gets_its_name_and_owner_label_after_run() {
        let c = podman();
        let base = c.base_argv(&[("K".into(), "v w".into())], &["/srv".into(), "--fast".into()]);
        assert_eq!(
            base,
            [
                "/usr/bin/podman",
                "run",
                "-p",
                "127.0.0.1:18080:8080",
                "-e",
                "K=v w",
                "localhost/app:1",
                "/srv",
                "--fast"
            ]
        );
        let argv = c.run_argv(&base, "coldstart-1-0", "1:2");
        assert_eq!(&argv[..4], ["/usr/bin/podman", "run", "--name", "coldstart-1-0"]);
        assert_eq!(argv[4], "--label");
        assert_eq!(argv[5], format!("{OWNER_LABEL}=1:2"));
        assert_eq!(&argv[6..], &base[2..]);
    }

    #[test]
    fn instants_are_the_last_line_and_after_1970() {
        let both = Instants {
            created: 1765148400123456789,
            started: Some(1765148400234567890),
        };
        assert_eq!(
            parse_instants("1765148400123456789 1765148400234567890\n"),
            Some(both)
        );
        assert_eq!(
            parse_instants("WARN[0000] a warning\n1765148400123456789 1765148400234567890"),
            Some(both)
        );
        let never_started = parse_instants("1765148400123456789 -6795364578871345152").unwrap();
        assert_eq!(never_started.started, None);
        assert_eq!(parse_instants("-6795364578871345152 1"), None);
        assert_eq!(parse_instants(""), None);
    }

    #[test]
    fn known_engine_failures_name_their_fix() {
        let rlimit = ["Error: runc: error setting rlimit type 7: operation not permitted".to_string()];
        assert!(hint_for(&rlimit).unwrap().contains("default_ulimits"));
        assert!(hint_for(&["hello".to_string()]).is_none());
    }

    #[test]
    fn bad_images_are_refused_before_any_engine_call() {
        for bad in ["", " ", "--rm"] {
            let e = Container::new(bad, &[], None).unwrap_err().to_string();
            assert!(e.contains("--image"), "{e}");
        }
    }
}
