//! Output: the terminal table, exports (JSON, Markdown, CSV) and live progress.
//! Reports render an Analysis and raw samples; they never spawn or compute stats.

pub mod chrome_trace;
pub mod csv;
pub mod explain;
pub mod format;
pub mod gate;
pub mod history;
pub mod json;
pub mod markdown;
pub mod progress;
pub mod terminal;

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

/// Write a file atomically (temp file + rename) so an interrupted or failed
/// export never leaves a half-written result behind.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        anyhow::bail!(
            "cannot write {}: directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "export".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| -> Result<()> {
        let mut f = std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        f.write_all(contents)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path).with_context(|| format!("renaming into {}", path.display()))
    })();
    if result.is_err() {
        std::fs::remove_file(&tmp).ok();
    }
    result.with_context(|| format!("writing {}", path.display()))
}
