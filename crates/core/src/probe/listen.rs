//! `listen`: ready when the target calls listen(2), without polling. A tiny
//! LD_PRELOAD shim (preload/listen.c, embedded in this binary) writes the instant
//! to the checkpoint fd. Statically linked programs (Go) ignore LD_PRELOAD; for
//! those, bench falls back to the syscall tracer.

use anyhow::{Context, Result};
use std::io::Read;
use std::path::{Path, PathBuf};

const SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libcoldstart_listen.so"));

/// The mark name the shim writes.
pub const MARK: &str = "@listen";

/// The shim on disk (written once per version, atomically, under the cache dir).
pub fn shim_path() -> Result<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("coldstart");
    let path = base.join(format!("listen-{}-{}.so", env!("CARGO_PKG_VERSION"), SHIM.len()));
    if std::fs::read(&path).map(|b| b == SHIM).unwrap_or(false) {
        return Ok(path);
    }
    std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    let tmp = base.join(format!(".listen-{}.tmp", std::process::id()));
    std::fs::write(&tmp, SHIM).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("installing {}", path.display()))?;
    Ok(path)
}

/// LD_PRELOAD with the shim first (keeping what the user preloads).
pub fn preload_env(existing: Option<&str>) -> Result<(String, String)> {
    let shim = shim_path()?.display().to_string();
    Ok((
        "LD_PRELOAD".into(),
        match existing {
            Some(e) if !e.is_empty() => format!("{shim}:{e}"),
            _ => shim,
        },
    ))
}

/// Whether LD_PRELOAD cannot see this program's listen(2): a static executable,
/// or a Go program (Go makes raw syscalls even when dynamically linked). Decided
/// once per path.
pub fn needs_tracer(path: &Path) -> bool {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, bool>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(v) = cache.lock().ok().and_then(|c| c.get(path).copied()) {
        return v;
    }
    let v = is_static_elf(path) || is_go_binary(path);
    if let Ok(mut c) = cache.lock() {
        c.insert(path.to_path_buf(), v);
    }
    v
}

/// Go linkers put a `.note.go.buildid` note (name "Go", type 4) in the first
/// page of the file. Also the `go` explain adapter's detection.
pub fn is_go_binary(path: &Path) -> bool {
    let mut head = vec![0u8; 64 * 1024];
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let n = f.read(&mut head).unwrap_or(0);
    head[..n].windows(8).any(|w| w == b"\x04\x00\x00\x00Go\x00\x00")
}

/// Statically linked: the dynamic loader, and so LD_PRELOAD, never runs.
pub fn is_static_elf(path: &Path) -> bool {
    crate::elf::is_static(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_static_from_dynamic() {
        assert!(
            !is_static_elf(Path::new("/bin/sh")),
            "/bin/sh is dynamically linked"
        );
        assert!(!is_static_elf(Path::new("/etc/hostname")), "not an ELF");
        assert!(!needs_tracer(Path::new("/bin/sh")));
        let shim = shim_path().unwrap();
        assert!(shim.exists());
        assert!(preload_env(Some("/x.so")).unwrap().1.ends_with(":/x.so"));
    }
}
