//! The sandbox's private mount namespace (`--sandbox`, the default where it can
//! be made): one per execution environment, made before T0 and entered by the
//! runtime and every extension between their clone and exec (the same pre-exec
//! path that places them in the sandbox's cgroups). Inside it:
//!
//! - /etc/hosts is a private copy of the host's with `sandbox` and
//!   `sandbox.localdomain` at 127.0.0.1, where the APIs listen (the host's file
//!   is never written);
//! - /opt is the layers, merged read-only by overlayfs (a later layer wins), with
//!   /opt/extensions also holding `--extensions` (on top);
//! - /var/task is the function's code, bound read-only (as root), over an
//!   overlay of /var whose writes go to memory.
//!
//! Everything is staged on a small tmpfs mounted at /opt first (the hosts file,
//! the /var overlay's upper directory, empty bottom layers), which the layers then
//! cover (so a code, layer or extensions directory under the host's /opt is
//! refused: it would be hidden before it is mounted). Nothing is
//! mounted in coldstart's own namespace; the namespace lives as long as the
//! environment's descriptors and processes do.

use super::layout::{Layout, TASK_ROOT};
use anyhow::{anyhow, bail, Context, Result};
use coldstart_sys::ns::{self, Step};
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::OnceLock;

/// Where the staging tmpfs goes, before the layers cover it.
const STAGE: &str = "/opt/.coldstart";

/// How this process can make namespaces: as root, or through a user namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privilege {
    Root,
    UserNamespace,
}

/// Whether a namespace can be made here (tried once per process), or why not.
pub fn available() -> std::result::Result<Privilege, String> {
    static AVAILABLE: OnceLock<std::result::Result<Privilege, String>> = OnceLock::new();
    AVAILABLE
        .get_or_init(|| {
            if ns::make(&[], false).is_ok() {
                return Ok(Privilege::Root);
            }
            match ns::make(&[], true) {
                Ok(_) => Ok(Privilege::UserNamespace),
                Err(f) => Err(format!(
                    "neither root nor a user namespace is available here ({})",
                    f.error
                )),
            }
        })
        .clone()
}

/// One environment's namespace: enter `user` (if any), then `mnt`.
#[derive(Debug)]
pub struct Namespace {
    pub mnt: OwnedFd,
    pub user: Option<OwnedFd>,
}

impl Namespace {
    /// Copies of the descriptors for one child (closed after its spawn).
    pub fn for_child(&self) -> Result<(OwnedFd, Option<OwnedFd>)> {
        let mnt = self
            .mnt
            .try_clone()
            .context("duplicating the namespace descriptor")?;
        let user = match &self.user {
            Some(u) => Some(u.try_clone().context("duplicating the namespace descriptor")?),
            None => None,
        };
        Ok((mnt, user))
    }
}

fn c(s: impl Into<Vec<u8>>) -> Result<CString> {
    CString::new(s).map_err(|_| anyhow!("a path contains a NUL byte"))
}

/// The steps and what each does (for the error line).
struct Plan {
    steps: Vec<Step>,
    what: Vec<String>,
}

impl Plan {
    fn push(&mut self, step: Step, what: String) {
        self.steps.push(step);
        self.what.push(what);
    }

    fn mkdir(&mut self, path: &str) -> Result<()> {
        self.push(
            Step::Mkdir {
                path: c(path)?,
                mode: 0o755,
            },
            format!("creating {path}"),
        );
        Ok(())
    }

    fn mount(
        &mut self,
        fstype: &str,
        target: &str,
        flags: libc::c_ulong,
        data: String,
        what: String,
    ) -> Result<()> {
        self.push(
            Step::Mount {
                source: c(format!("coldstart-{fstype}"))?,
                target: c(target)?,
                fstype: Some(c(fstype)?),
                flags,
                data: Some(c(data)?),
            },
            what,
        );
        Ok(())
    }

    /// A read-only bind of `source` at `target` (read-only only as root: in a
    /// user namespace the remount must repeat the source's locked flags).
    fn bind(&mut self, source: &str, target: &str, readonly: bool, what: String) -> Result<()> {
        let (source, target) = (c(source)?, c(target)?);
        self.push(
            Step::Mount {
                source: source.clone(),
                target: target.clone(),
                fstype: None,
                flags: libc::MS_BIND,
                data: None,
            },
            what.clone(),
        );
        if readonly {
            self.push(
                Step::Mount {
                    source,
                    target,
                    fstype: None,
                    flags: libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY,
                    data: None,
                },
                format!("{what} (read-only)"),
            );
        }
        Ok(())
    }
}

/// A source directory as the mount calls inside the namespace name it. They run
/// after the staging tmpfs covered /opt, so a source there is refused; overlayfs
/// options separate paths with `:` and `,`, so those are refused too.
fn source(dir: &Path, flag: &str) -> Result<String> {
    let text = dir.display().to_string();
    if dir.starts_with(super::layout::OPT) {
        bail!(
            "{flag} {text} is under /opt, which the sandbox covers with the layers: move it elsewhere, or run with --no-sandbox"
        );
    }
    if text.contains([':', ',']) || dir.to_str().is_none() {
        bail!("{flag} {text}: the sandbox cannot mount a path with `:` or `,` in it: rename it, or run with --no-sandbox");
    }
    Ok(text)
}

/// Refuse, before any run, sources the sandbox cannot mount (see `source`).
pub fn check(layout: &Layout) -> Result<()> {
    if !layout.sandboxed {
        return Ok(());
    }
    source(&layout.code, "--code")?;
    for l in &layout.layers {
        source(l, "--layer")?;
    }
    if let Some(e) = &layout.extensions {
        source(e, "--extensions")?;
    }
    Ok(())
}

/// Lines mapping the sandbox's names to the APIs' address, then the host's file.
pub fn hosts_file(host: &str) -> String {
    format!(
        "# coldstart lambda's sandbox: the Lambda APIs listen on 127.0.0.1\n127.0.0.1\tsandbox sandbox.localdomain\n{host}{}",
        if host.is_empty() || host.ends_with('\n') { "" } else { "\n" }
    )
}

/// Make one environment's namespace (before T0).
pub fn make(layout: &Layout) -> Result<Namespace> {
    let privilege = available()
        .map_err(|e| anyhow!("cannot make the sandbox's mount namespace: {e}; run with --no-sandbox"))?;
    let user = privilege == Privilege::UserNamespace;
    let code = source(&layout.code, "--code")?;
    let layers = layout
        .layers
        .iter()
        .map(|l| source(l, "--layer"))
        .collect::<Result<Vec<_>>>()?;
    let extensions = layout
        .extensions
        .as_ref()
        .map(|e| source(e, "--extensions"))
        .transpose()?;
    let host_hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    if !Path::new("/etc/hosts").exists() || !Path::new("/opt").is_dir() || !Path::new("/var").is_dir() {
        anyhow::bail!(
            "the sandbox needs /etc/hosts, /opt and /var on the host to mount over: run with --no-sandbox"
        );
    }
    let xattr = if user { ",userxattr" } else { "" };
    let mut p = Plan {
        steps: Vec::new(),
        what: Vec::new(),
    };
    // A cap, not an allocation: the /var overlay's writes land here (charged to
    // the writer's memory cgroup), up to Lambda's default ephemeral storage.
    p.mount(
        "tmpfs",
        "/opt",
        0,
        "mode=755,size=512m".into(),
        "mounting the staging tmpfs at /opt".into(),
    )?;
    for d in ["", "/upper", "/work", "/base", "/base/extensions", "/none"] {
        p.mkdir(&format!("{STAGE}{d}"))?;
    }
    let hosts = format!("{STAGE}/hosts");
    p.push(
        Step::Write {
            path: c(hosts.as_str())?,
            bytes: hosts_file(&host_hosts).into_bytes(),
        },
        format!("writing {hosts}"),
    );
    p.bind(
        &hosts,
        "/etc/hosts",
        !user,
        "binding the sandbox's hosts file at /etc/hosts".into(),
    )?;
    if !Path::new(TASK_ROOT).is_dir() {
        p.mount(
            "overlay",
            "/var",
            0,
            format!("lowerdir=/var,upperdir={STAGE}/upper,workdir={STAGE}/work{xattr}"),
            "mounting an overlay over /var (for /var/task)".into(),
        )?;
        p.mkdir(TASK_ROOT)?;
    }
    p.bind(
        &code,
        TASK_ROOT,
        !user,
        format!("binding --code {} at {TASK_ROOT}", layout.code.display()),
    )?;
    // overlayfs lists the upper layer first: the last --layer.
    let mut lower: Vec<String> = layers.into_iter().rev().collect();
    lower.push(format!("{STAGE}/base"));
    lower.push(format!("{STAGE}/none"));
    p.mount(
        "overlay",
        "/opt",
        libc::MS_RDONLY,
        format!("lowerdir={}{xattr}", lower.join(":")),
        "mounting the layers at /opt (overlayfs)".into(),
    )?;
    if let Some(ext) = extensions {
        // Above the layers' merged extensions/ (the mount point's own view).
        p.mount(
            "overlay",
            "/opt/extensions",
            libc::MS_RDONLY,
            format!("lowerdir={ext}:/opt/extensions{xattr}"),
            "mounting --extensions at /opt/extensions (overlayfs)".into(),
        )?;
    }
    let made = ns::make(&p.steps, user).map_err(|f| {
        let what = f
            .step
            .and_then(|i| p.what.get(i).cloned())
            .unwrap_or_else(|| "creating the namespace".into());
        anyhow!(
            "cannot make the sandbox's mount namespace: {what}: {}; run with --no-sandbox",
            f.error
        )
    })?;
    Ok(Namespace {
        mnt: made.mnt,
        user: made.user,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_the_sandbox_would_hide_or_misparse_are_refused() {
        let layout = |layer: &str| Layout {
            code: "/w/code".into(),
            layers: vec![layer.into()],
            extensions: None,
            sandboxed: true,
        };
        assert!(check(&layout("/w/l1")).is_ok());
        let hidden = check(&layout("/opt/l1")).unwrap_err().to_string();
        assert!(
            hidden.contains("--layer /opt/l1 is under /opt") && hidden.contains("--no-sandbox"),
            "{hidden}"
        );
        let colon = check(&layout("/w/a:b")).unwrap_err().to_string();
        assert!(colon.contains("`:` or `,`"), "{colon}");
        assert!(check(&Layout {
            sandboxed: false,
            ..layout("/opt/l1")
        })
        .is_ok());
    }

    #[test]
    fn sandbox_names_come_first_in_the_hosts_file() {
        let h = hosts_file("127.0.0.1 localhost");
        let lines: Vec<&str> = h.lines().collect();
        assert_eq!(lines[1], "127.0.0.1\tsandbox sandbox.localdomain");
        assert_eq!(lines[2], "127.0.0.1 localhost");
        assert!(h.ends_with('\n'));
    }
}
