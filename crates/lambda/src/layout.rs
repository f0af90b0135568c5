//! Where a function's files are, as its processes see them: the code (`--code`,
//! LAMBDA_TASK_ROOT), the layers (`--layer`, merged at /opt, later layers win as in
//! Lambda's extraction order) and the external extensions (`--extensions` on top of
//! every layer's `extensions/`, i.e. /opt/extensions). In the sandbox's mount
//! namespace (`namespace`) they are at Lambda's paths; without it, at the host's.

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// Lambda's function directory.
pub const TASK_ROOT: &str = "/var/task";
/// Where Lambda extracts the layers.
pub const OPT: &str = "/opt";

/// The in-sandbox paths a runtime's environment is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPaths {
    /// LAMBDA_TASK_ROOT: /var/task in the sandbox, else the code directory.
    pub task_root: String,
    /// Where /opt's contents are, the first taking precedence: ["/opt"] in the
    /// sandbox, else the layer directories from the last to the first.
    pub opt_roots: Vec<String>,
}

impl SandboxPaths {
    /// `sub` under each /opt, the first taking precedence.
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

/// A function's files on the host, and whether its processes see them through
/// the sandbox's mount namespace.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The unpacked zip (absolute).
    pub code: PathBuf,
    /// Layer directories, in order (absolute).
    pub layers: Vec<PathBuf>,
    /// `--extensions DIR` (absolute), above the layers' extensions/.
    pub extensions: Option<PathBuf>,
    pub sandboxed: bool,
}

impl Layout {
    /// `code` is the task root's directory (a bootstrap's own, by default).
    pub fn new(
        code: &Path,
        layers: &[PathBuf],
        extensions: Option<&Path>,
        sandboxed: bool,
    ) -> Result<Layout> {
        let dir = |p: &Path, flag: &str| -> Result<PathBuf> {
            if !p.is_dir() {
                let hint = match flag {
                    "--extensions" => "give the directory holding the extension executables, as a layer's extensions/ (Lambda's /opt/extensions)",
                    "--layer" => "give the unpacked layer zip's directory, what Lambda extracts to /opt",
                    _ => "give the unpacked zip's directory",
                };
                bail!("{flag} {}: not a directory; {hint}", p.display());
            }
            Ok(std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
        };
        let code = dir(code, "--code")?;
        let layers = layers
            .iter()
            .map(|l| dir(l, "--layer"))
            .collect::<Result<Vec<_>>>()?;
        let extensions = extensions.map(|e| dir(e, "--extensions")).transpose()?;
        Ok(Layout {
            code,
            layers,
            extensions,
            sandboxed,
        })
    }

    pub fn paths(&self) -> SandboxPaths {
        if self.sandboxed {
            return SandboxPaths {
                task_root: TASK_ROOT.into(),
                opt_roots: vec![OPT.into()],
            };
        }
        SandboxPaths {
            task_root: self.code.display().to_string(),
            opt_roots: self
                .layers
                .iter()
                .rev()
                .map(|l| l.display().to_string())
                .collect(),
        }
    }

    /// Where the function's processes find the host file `host`: under
    /// /var/task or /opt in the sandbox when it belongs to the code or a layer,
    /// else where it is (the rest of the host's tree is visible).
    pub fn inside(&self, host: &Path) -> PathBuf {
        if !self.sandboxed {
            return host.to_path_buf();
        }
        if let Ok(rel) = host.strip_prefix(&self.code) {
            return Path::new(TASK_ROOT).join(rel);
        }
        if let Some(rel) = self.extensions.as_ref().and_then(|e| host.strip_prefix(e).ok()) {
            return Path::new(OPT).join("extensions").join(rel);
        }
        for layer in self.layers.iter().rev() {
            if let Ok(rel) = host.strip_prefix(layer) {
                return Path::new(OPT).join(rel);
            }
        }
        host.to_path_buf()
    }

    /// The host file behind `inside`, a path as the function's processes see it:
    /// in the sandbox, /var/task/… is the code's and /opt/… the layers' (the
    /// upper layer holding it wins; /opt/extensions/… is `--extensions` first);
    /// None when no layer holds it (the sandbox's /opt has nothing else). Other
    /// paths, and every path without the sandbox, are the host's own.
    pub fn host_of(&self, inside: &Path) -> Option<PathBuf> {
        if !self.sandboxed {
            return Some(inside.to_path_buf());
        }
        if let Ok(rel) = inside.strip_prefix(TASK_ROOT) {
            return Some(self.code.join(rel));
        }
        let Ok(rel) = inside.strip_prefix(OPT) else {
            return Some(inside.to_path_buf());
        };
        let extension = rel
            .strip_prefix("extensions")
            .ok()
            .and_then(|r| Some(self.extensions.as_ref()?.join(r)));
        extension
            .into_iter()
            .chain(self.layers.iter().rev().map(|l| l.join(rel)))
            .find(|p| p.symlink_metadata().is_ok())
    }

    /// A program the sandbox would hide (under the host's /opt or /var/task,
    /// covered there by the layers and the code): one line naming the fix.
    pub fn check_visible(&self, program: &Path, what: &str) -> Result<()> {
        let inside = self.inside(program);
        if self.sandboxed && inside == program && (program.starts_with(OPT) || program.starts_with(TASK_ROOT))
        {
            bail!(
                "{what} {} is under {} on this host, which the sandbox covers with the layers and the code: pass its directory as --code or --layer, or --no-sandbox",
                program.display(),
                if program.starts_with(OPT) { OPT } else { TASK_ROOT }
            );
        }
        Ok(())
    }

    /// The external extensions (host paths, by name, at most 10): every file of
    /// /opt/extensions, i.e. of `--extensions` and each layer's extensions/, the
    /// upper one winning a name.
    pub fn discover_extensions(&self) -> Result<Vec<PathBuf>> {
        let mut dirs: Vec<PathBuf> = self.extensions.iter().cloned().collect();
        dirs.extend(
            self.layers
                .iter()
                .rev()
                .map(|l| l.join("extensions"))
                .filter(|d| d.is_dir()),
        );
        let mut found: Vec<PathBuf> = Vec::new();
        for dir in &dirs {
            for file in super::discover_extensions(dir)? {
                if !found.iter().any(|f| f.file_name() == file.file_name()) {
                    found.push(file);
                }
            }
        }
        found.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
        if found.len() > super::state::MAX_EXTENSIONS {
            bail!(
                "--extensions and the layers hold {} extensions; Lambda allows at most {}",
                found.len(),
                super::state::MAX_EXTENSIONS
            );
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(sandboxed: bool) -> Layout {
        Layout {
            code: "/w/code".into(),
            layers: vec!["/w/l1".into(), "/w/l2".into()],
            extensions: Some("/w/ext".into()),
            sandboxed,
        }
    }

    #[test]
    fn paths_inside_and_outside_the_sandbox() {
        let inside = layout(true);
        assert_eq!(
            inside.paths(),
            SandboxPaths {
                task_root: "/var/task".into(),
                opt_roots: vec!["/opt".into()]
            }
        );
        assert_eq!(
            inside.inside(Path::new("/w/code/bootstrap")),
            Path::new("/var/task/bootstrap")
        );
        assert_eq!(inside.inside(Path::new("/w/l1/bin/rt")), Path::new("/opt/bin/rt"));
        assert_eq!(
            inside.inside(Path::new("/w/ext/x")),
            Path::new("/opt/extensions/x")
        );
        assert_eq!(
            inside.inside(Path::new("/usr/bin/python3")),
            Path::new("/usr/bin/python3")
        );
        assert!(inside
            .check_visible(Path::new("/opt/java/bin/java"), "--runtime")
            .is_err());
        assert!(inside
            .check_visible(Path::new("/w/l1/bin/rt"), "--runtime")
            .is_ok());
        let host = layout(false);
        assert_eq!(
            host.paths(),
            SandboxPaths {
                task_root: "/w/code".into(),
                opt_roots: vec!["/w/l2".into(), "/w/l1".into()]
            }
        );
        assert_eq!(
            host.inside(Path::new("/w/code/bootstrap")),
            Path::new("/w/code/bootstrap")
        );
        assert!(host
            .check_visible(Path::new("/opt/java/bin/java"), "--runtime")
            .is_ok());
    }

    #[test]
    fn inside_paths_map_to_the_code_and_the_upper_layer_holding_them() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = |rel: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, "x").expect("write");
            p
        };
        let lower = file("l1/otel-instrument");
        let upper = file("l2/otel-instrument");
        let only_lower = file("l1/bin/tool");
        let ext = file("ext/e");
        let l = Layout {
            code: dir.path().join("code"),
            layers: vec![dir.path().join("l1"), dir.path().join("l2")],
            extensions: Some(dir.path().join("ext")),
            sandboxed: true,
        };
        assert_eq!(l.host_of(Path::new("/opt/otel-instrument")), Some(upper.clone()));
        assert_ne!(Some(lower), l.host_of(Path::new("/opt/otel-instrument")));
        assert_eq!(l.host_of(Path::new("/opt/bin/tool")), Some(only_lower));
        assert_eq!(l.host_of(Path::new("/opt/extensions/e")), Some(ext));
        assert_eq!(l.host_of(Path::new("/opt/nothing")), None);
        assert_eq!(
            l.host_of(Path::new("/var/task/w.sh")),
            Some(dir.path().join("code/w.sh"))
        );
        assert_eq!(
            l.host_of(Path::new("/usr/bin/env")),
            Some(PathBuf::from("/usr/bin/env"))
        );
        let host = Layout {
            sandboxed: false,
            ..l
        };
        assert_eq!(
            host.host_of(Path::new("/opt/otel-instrument")),
            Some(PathBuf::from("/opt/otel-instrument"))
        );
    }

    #[test]
    fn path_variables_list_the_task_root_then_each_opt() {
        let vars = layout(false).paths().path_vars();
        let get = |k: &str| vars.iter().find(|(n, _)| n == k).expect(k).1.clone();
        assert!(
            get("LD_LIBRARY_PATH").ends_with("/w/code:/w/code/lib:/w/l2/lib:/w/l1/lib"),
            "{vars:?}"
        );
        assert!(get("PATH").ends_with(":/w/l2/bin:/w/l1/bin"), "{vars:?}");
        let inside = layout(true).paths().path_vars();
        assert!(inside
            .iter()
            .any(|(k, v)| k == "LD_LIBRARY_PATH" && v.ends_with("/var/task:/var/task/lib:/opt/lib")));
    }

    #[test]
    fn extensions_of_later_layers_and_the_extensions_dir_win() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = |rel: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        for f in [
            "l1/extensions/a",
            "l1/extensions/b",
            "l2/extensions/b",
            "ext/c",
            "ext/a",
        ] {
            file(f);
        }
        let l = Layout {
            code: dir.path().into(),
            layers: vec![
                dir.path().join("l1"),
                dir.path().join("l2"),
                dir.path().join("none"),
            ],
            extensions: Some(dir.path().join("ext")),
            sandboxed: true,
        };
        let found = l.discover_extensions().unwrap();
        let rel: Vec<String> = found
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(rel, ["ext/a", "l2/extensions/b", "ext/c"]);
    }
}
