//! A Kubernetes Pod manifest as a variant (`bench --pod FILE`), played by
//! `podman kube play`: each run a fresh pod from a copy of the manifest named
//! for the run and labelled with its owner, removed after the run. The client
//! returns once the pod's containers are started; the run is ready when the
//! probe (`--ready http://127.0.0.1:HOSTPORT/…`, a `hostPort` of the manifest)
//! says so. Podman does not run readiness probes: the manifest's probes are
//! kept to say when the kubelet would mark the pod Ready (crates/pods).

use super::OWNER_LABEL;
use anyhow::{bail, Context, Result};
use coldstart_pods::ProbeSpec;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pod {
    pub manifest: PathBuf,
    /// Each container's readiness and startup probes, as the manifest sets them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<Probes>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Probes {
    pub container: String,
    pub readiness: Option<ProbeSpec>,
    pub startup: Option<ProbeSpec>,
}

impl Pod {
    /// Read a Pod manifest: its containers' probes, checked up front.
    pub fn load(manifest: &Path) -> Result<Pod> {
        let doc = read(manifest)?;
        let containers = doc
            .get("spec")
            .and_then(|s| s.get("containers"))
            .and_then(|c| c.as_sequence())
            .filter(|c| !c.is_empty())
            .with_context(|| format!("--pod {}: no spec.containers", manifest.display()))?;
        let mut probes = Vec::new();
        for c in containers {
            let name = c
                .get("name")
                .and_then(|n| n.as_str())
                .unwrap_or_default()
                .to_string();
            let probe = |key: &str| -> Result<Option<ProbeSpec>> {
                c.get(key)
                    .map(|p| serde_norway::from_value(p.clone()))
                    .transpose()
                    .with_context(|| format!("--pod {}: container {name}'s {key}", manifest.display()))
            };
            probes.push(Probes {
                readiness: probe("readinessProbe")?,
                startup: probe("startupProbe")?,
                container: name,
            });
        }
        Ok(Pod {
            manifest: manifest.to_path_buf(),
            probes,
        })
    }

    /// The manifest for one run: the pod named `name` and labelled with its
    /// `owner`, written to a temporary file that lives as long as the handle.
    pub fn for_run(&self, name: &str, owner: &str) -> Result<tempfile::NamedTempFile> {
        let mut doc = read(&self.manifest)?;
        let meta = doc
            .as_mapping_mut()
            .context("the manifest is not a mapping")?
            .entry("metadata".into())
            .or_insert_with(|| serde_norway::Value::Mapping(Default::default()));
        let meta = meta
            .as_mapping_mut()
            .context("the manifest's metadata is not a mapping")?;
        meta.insert("name".into(), name.into());
        let labels = meta
            .entry("labels".into())
            .or_insert_with(|| serde_norway::Value::Mapping(Default::default()));
        labels
            .as_mapping_mut()
            .context("the manifest's metadata.labels is not a mapping")?
            .insert(OWNER_LABEL.into(), owner.into());
        let mut file = tempfile::Builder::new()
            .prefix("coldstart-pod-")
            .suffix(".yaml")
            .tempfile()
            .context("creating the run's copy of the pod manifest")?;
        serde_norway::to_writer(&mut file, &doc).context("writing the run's copy of the pod manifest")?;
        Ok(file)
    }
}

fn read(manifest: &Path) -> Result<serde_norway::Value> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("--pod: cannot read {}", manifest.display()))?;
    let doc: serde_norway::Value =
        serde_norway::from_str(&text).with_context(|| format!("--pod {}: not YAML", manifest.display()))?;
    match doc.get("kind").and_then(|k| k.as_str()) {
        Some("Pod") => Ok(doc),
        Some(other) => bail!(
            "--pod {}: a {other}, not a Pod: give a Pod manifest (a Deployment's spec.template is one, with kind: Pod)",
            manifest.display()
        ),
        None => bail!("--pod {}: no `kind: Pod`", manifest.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOW: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  containers:\n  - name: app\n    image: app:1\n    readinessProbe:\n      httpGet: {path: /, port: 8080}\n      initialDelaySeconds: 10\n      periodSeconds: 10\n  - name: sidecar\n    image: side:1\n";

    #[test]
    fn a_manifests_probes_and_each_runs_named_labelled_copy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pod.yaml");
        std::fs::write(&path, SLOW).unwrap();
        let pod = Pod::load(&path).unwrap();
        assert_eq!(pod.probes.len(), 2);
        assert_eq!(pod.probes[0].container, "app");
        let r = pod.probes[0].readiness.unwrap();
        assert_eq!((r.initial_delay_s, r.period_s), (10, 10));
        assert_eq!(pod.probes[1].readiness, None);
        let copy = pod.for_run("coldstart-1-0", "1:2").unwrap();
        let doc: serde_norway::Value =
            serde_norway::from_str(&std::fs::read_to_string(copy.path()).unwrap()).unwrap();
        assert_eq!(doc["metadata"]["name"].as_str(), Some("coldstart-1-0"));
        assert_eq!(doc["metadata"]["labels"][OWNER_LABEL].as_str(), Some("1:2"));
        assert_eq!(doc["metadata"]["labels"]["app"].as_str(), Some("web"));
        assert_eq!(doc["spec"]["containers"][0]["image"].as_str(), Some("app:1"));
    }

    #[test]
    fn what_is_not_a_pod_manifest_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.yaml");
        std::fs::write(&path, "kind: Deployment\nspec: {}\n").unwrap();
        let e = Pod::load(&path).unwrap_err().to_string();
        assert!(e.contains("a Deployment, not a Pod"), "{e}");
        std::fs::write(&path, "kind: Pod\nspec: {}\n").unwrap();
        assert!(format!("{:#}", Pod::load(&path).unwrap_err()).contains("no spec.containers"));
        let e = format!("{:#}", Pod::load(&dir.path().join("none.yaml")).unwrap_err());
        assert!(e.contains("cannot read"), "{e}");
    }
}
