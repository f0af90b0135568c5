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
mod instants;
mod pod;
mod reap;
mod store;

pub use engine::{Engine, EngineKind};
pub use instants::{
    phases, Instants, Phase, CREATED_MARK, EXITED_MARK, FETCHED_MARK, INITIALIZED_MARK, PULL_MARK,
    STARTED_MARK, STORED_MARK,
};
pub use pod::{Pod, Probes};
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
    /// `--pod FILE`: a Pod manifest played by the engine instead of one image
    /// (`image` is then empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Pod>,
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
            pod: None,
        })
    }

    /// `--pod FILE`: the manifest read and its probes kept; podman only (it
    /// plays Kubernetes manifests).
    pub fn pod(manifest: &std::path::Path, engine: Option<&str>) -> Result<Container> {
        let engine = Engine::find(engine.or(Some("podman")))?;
        Ok(Container {
            engine,
            image: String::new(),
            publish: Vec::new(),
            pod: Some(Pod::load(manifest)?),
        })
    }

    /// The command line of a run, as a person would type it: `ENGINE run
    /// [-p …] [-e K=V …] IMAGE [COMMAND…]`. Each run inserts its own name and
    /// labels after `run` ([`Container::run_argv`]).
    pub fn base_argv(&self, env: &[(String, String)], command: &[String]) -> Vec<String> {
        if let Some(pod) = &self.pod {
            let play = ["kube", "play"].map(String::from);
            let mut argv = vec![self.engine.path.display().to_string()];
            argv.extend(play);
            argv.push(pod.manifest.display().to_string());
            return argv;
        }
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

    /// Remove a run's container (or pod), whatever state it is in (no stop timeout).
    pub fn remove(&self, name: &str) -> Result<()> {
        let args = match self.pod {
            Some(_) => vec!["pod", "rm", "-f", "--time", "0", name],
            None => self.engine.rm_args(name),
        };
        let out = self.engine.quiet(&args).output();
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

impl Container {
    /// The engine's records of run `name`'s image pull, creation, runtime
    /// create, start and exit (`since_unix_s`: the run's spawn, in whole
    /// seconds). Podman only (docker's and nerdctl's templates give these as
    /// text): the container's state, and its event log where it keeps one.
    pub fn instants(&self, name: &str, spawn_unix_ns: i128) -> Result<Option<Instants>> {
        if self.engine.kind != EngineKind::Podman || self.pod.is_some() {
            return Ok(None);
        }
        let out = self
            .engine
            .quiet(&["container", "inspect", "--format", instants::INSPECT_FORMAT, name])
            .output()
            .with_context(|| format!("cannot run {}", self.engine.name()))?;
        if !out.status.success() {
            bail!(
                "{} could not inspect container {name}: {}",
                self.engine.name(),
                engine::first_line(&out.stderr)
            );
        }
        let Some((state, image_id)) = instants::parse_inspect(&String::from_utf8_lossy(&out.stdout)) else {
            return Ok(None);
        };
        // The event log may be off (events_logger = "none") or unreadable: then
        // the pull's start and the runtime's create are not split out.
        let since = (spawn_unix_ns / 1_000_000_000 - 1).to_string();
        let events = self
            .engine
            .quiet(&[
                "events",
                "--stream=false",
                "--since",
                &since,
                "--format",
                instants::EVENTS_FORMAT,
            ])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| instants::parse_events(&String::from_utf8_lossy(&o.stdout), &self.image, name));
        let mut i = instants::merge(state, events);
        // This run's pull, from the store's records (an unreadable store: not split out).
        if let Some(stored) = image_id.and_then(|id| self.stored(&id)) {
            let (layers, bytes, last) = stored.fetched_since(spawn_unix_ns);
            if layers > 0 {
                i.fetched = last;
                i.stored = Some(stored.image_stored);
                i.fetched_layers = layers;
                i.fetched_bytes = bytes;
            }
        }
        Ok(Some(i))
    }

    /// Image `id`'s records in podman's store (its location asked once per process).
    fn stored(&self, id: &str) -> Option<store::Stored> {
        static ROOT: std::sync::OnceLock<Option<(std::path::PathBuf, String)>> = std::sync::OnceLock::new();
        let (root, driver) = ROOT
            .get_or_init(|| {
                let out = self
                    .engine
                    .quiet(&[
                        "info",
                        "--format",
                        "{{.Store.GraphRoot}}|{{.Store.GraphDriverName}}",
                    ])
                    .output()
                    .ok()
                    .filter(|o| o.status.success())?;
                let text = String::from_utf8_lossy(&out.stdout);
                let (root, driver) = text
                    .lines()
                    .rev()
                    .find(|l| l.contains('|'))?
                    .trim()
                    .split_once('|')?;
                Some((root.into(), driver.to_string()))
            })
            .as_ref()?;
        store::read(root, driver, id).ok().flatten()
    }
}

impl Container {
    /// The image's layer directories in the engine's store, top layer first:
    /// what `--read-set` evicts and reads back. Podman's overlay store only; an
    /// error says why not (the image is not in the store yet, another driver).
    pub fn layer_dirs(&self) -> Result<Vec<std::path::PathBuf>> {
        if self.engine.kind != EngineKind::Podman {
            bail!(
                "--read-set reads podman's image store; {} keeps its layers elsewhere",
                self.engine.name()
            );
        }
        let format = "{{.GraphDriver.Name}}|{{.GraphDriver.Data.UpperDir}}|{{.GraphDriver.Data.LowerDir}}";
        let out = self
            .engine
            .quiet(&["image", "inspect", "--format", format, &self.image])
            .output()
            .with_context(|| format!("cannot run {}", self.engine.name()))?;
        if !out.status.success() {
            bail!(
                "image {} is not in {}'s store before the run ({})",
                self.image,
                self.engine.name(),
                engine::first_line(&out.stderr)
            );
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        let mut f = line.trim().split('|');
        let driver = f.next().unwrap_or("");
        if driver != "overlay" {
            bail!("the store's driver is '{driver}': --read-set reads overlay layers");
        }
        let dirs: Vec<std::path::PathBuf> = f
            .flat_map(|d| d.split(':'))
            .filter(|d| d.starts_with('/'))
            .map(std::path::PathBuf::from)
            .collect();
        if dirs.is_empty() {
            bail!(
                "{} gave no layer directories for {}",
                self.engine.name(),
                self.image
            );
        }
        Ok(dirs)
    }
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
    if text.contains("Trying to pull")
        && (text.contains("pinging container registry") || text.contains("connection refused"))
    {
        return Some(
            "the image is not in the engine's store and its registry did not answer: build or pull it first (`podman images` lists the store; CONTAINERS_STORAGE_CONF chooses another store)"
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
            pod: None,
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
    fn known_engine_failures_name_their_fix() {
        let rlimit = ["Error: runc: error setting rlimit type 7: operation not permitted".to_string()];
        assert!(hint_for(&rlimit).unwrap().contains("default_ulimits"));
        assert!(hint_for(&["hello".to_string()]).is_none());
        // As podman 4.3 said it for an image in no store and no registry.
        let absent = [
            "Trying to pull localhost/app:1...".to_string(),
            "Error: initializing source docker://localhost/app:1: pinging container registry localhost: Get \"https://localhost/v2/\": dial tcp 127.0.0.1:443: connect: connection refused".to_string(),
        ];
        assert!(hint_for(&absent).unwrap().contains("not in the engine's store"));
    }

    #[test]
    fn bad_images_are_refused_before_any_engine_call() {
        for bad in ["", " ", "--rm"] {
            let e = Container::new(bad, &[], None).unwrap_err().to_string();
            assert!(e.contains("--image"), "{e}");
        }
    }
}
