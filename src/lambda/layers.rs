//! The function's code and layers as the runtime sees them: where the task root
//! and each layer's `/opt` are, what they add to PATH and LD_LIBRARY_PATH, and
//! the external extensions the layers bring (`/opt/extensions`).
//!
//! On Lambda the zip is unpacked at /var/task and every layer into the one /opt,
//! in order (a later layer's file replaces an earlier one's). Without a private
//! mount namespace the directories stay where they are on the host: each layer is
//! its own `/opt`, listed in layer order, and every path variable lists them all.
//! A mode that mounts them gives [`SandboxPaths`] `/var/task` and `["/opt"]`.

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// The task root and the `/opt` directories, as paths the processes use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPaths {
    /// LAMBDA_TASK_ROOT: the function's unpacked zip (/var/task on Lambda).
    pub task_root: String,
    /// Where layers are, in layer order (["/opt"] on Lambda, where they are merged).
    pub opt_roots: Vec<String>,
}

impl SandboxPaths {
    /// Host paths: `code` is the task root, each layer directory its own /opt.
    pub fn host(code: &Path, layers: &[PathBuf]) -> Result<Self> {
        let dir = |flag: &str, p: &Path, what: &str| -> Result<String> {
            if !p.is_dir() {
                bail!(
                    "{flag} {}: not a directory; give {what} (unzip it first)",
                    p.display()
                );
            }
            let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
            Ok(abs.display().to_string())
        };
        Ok(SandboxPaths {
            task_root: dir("--code", code, "the function's unpacked .zip")?,
            opt_roots: layers
                .iter()
                .map(|l| dir("--layer", l, "an unpacked layer .zip"))
                .collect::<Result<_>>()?,
        })
    }

    /// `sub` under each /opt, in layer order.
    pub fn under_opt(&self, sub: &str) -> Vec<String> {
        self.opt_roots.iter().map(|o| format!("{o}/{sub}")).collect()
    }

    /// PATH and LD_LIBRARY_PATH with what the sandbox adds, after the host's own
    /// (the runtime runs on this host): Lambda's PATH ends in /opt/bin, its
    /// LD_LIBRARY_PATH in /var/task:/var/task/lib:/opt/lib ([DG] configuration-envvars).
    pub fn path_vars(&self) -> Vec<(String, String)> {
        let join = |base: Option<String>, extra: Vec<String>| -> String {
            base.into_iter()
                .filter(|b| !b.is_empty())
                .chain(extra)
                .collect::<Vec<_>>()
                .join(":")
        };
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
        let mut libs = vec![self.task_root.clone(), format!("{}/lib", self.task_root)];
        libs.extend(self.under_opt("lib"));
        vec![
            ("PATH".into(), join(Some(path), self.under_opt("bin"))),
            (
                "LD_LIBRARY_PATH".into(),
                join(std::env::var("LD_LIBRARY_PATH").ok(), libs),
            ),
        ]
    }
}

/// The external extensions: each layer's `extensions/` in layer order, then
/// `--extensions` (like one more layer), merged by file name as unpacking them
/// into one /opt would (the later file wins), sorted by name; at most 10.
pub fn extensions(layers: &[PathBuf], dir: Option<&Path>) -> Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = Vec::new();
    let layer_dirs = layers.iter().map(|l| l.join("extensions"));
    for d in layer_dirs
        .filter(|d| d.is_dir())
        .chain(dir.map(Path::to_path_buf))
    {
        for path in super::discover_extensions(&d)? {
            found.retain(|p| p.file_name() != path.file_name());
            found.push(path);
        }
    }
    found.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    if found.len() > super::state::MAX_EXTENSIONS {
        bail!(
            "the layers and --extensions hold {} extensions; Lambda allows at most {}",
            found.len(),
            super::state::MAX_EXTENSIONS
        );
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn exe(path: &Path) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    #[test]
    fn later_layers_replace_extensions_by_name() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (a, b, own) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("own"));
        exe(&a.join("extensions/shared"));
        exe(&a.join("extensions/only-a"));
        exe(&b.join("extensions/shared"));
        exe(&own.join("mine"));
        std::fs::create_dir_all(tmp.path().join("no-extensions")).expect("mkdir");
        let layers = [a.clone(), tmp.path().join("no-extensions"), b.clone()];
        let got = extensions(&layers, Some(&own)).expect("extensions");
        let names: Vec<String> = got
            .iter()
            .map(|p| {
                p.strip_prefix(tmp.path())
                    .expect("under tmp")
                    .display()
                    .to_string()
            })
            .collect();
        assert_eq!(names, ["own/mine", "a/extensions/only-a", "b/extensions/shared"]);
    }

    #[test]
    fn host_paths_and_their_path_variables() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (code, layer) = (tmp.path().join("code"), tmp.path().join("layer"));
        std::fs::create_dir_all(&code).expect("mkdir");
        std::fs::create_dir_all(&layer).expect("mkdir");
        let p = SandboxPaths::host(&code, std::slice::from_ref(&layer)).expect("paths");
        assert_eq!(p.task_root, code.display().to_string());
        let vars = p.path_vars();
        let ld = &vars.iter().find(|(k, _)| k == "LD_LIBRARY_PATH").expect("ld").1;
        assert!(
            ld.ends_with(&format!("{0}:{0}/lib:{1}/lib", code.display(), layer.display())),
            "{ld}"
        );
        let path = &vars.iter().find(|(k, _)| k == "PATH").expect("path").1;
        assert!(path.ends_with(&format!(":{}/bin", layer.display())), "{path}");
        let err = SandboxPaths::host(&tmp.path().join("missing"), &[]).expect_err("no dir");
        assert!(err.to_string().starts_with("--code "), "{err}");
    }
}
