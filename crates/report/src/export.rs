//! Where an export goes, decided by what is at its path:
//! - `-`, or a path that is our own stdout (`/dev/stdout`, `/proc/self/fd/1`,
//!   or the very file or pipe fd 1 is, by device and inode: `>> log.txt` then
//!   `--export-json log.txt`): written to fd 1 in place (an appended file stays
//!   appended to, never renamed over), and the human report goes to stderr;
//! - our own stderr, the same way: written to fd 2 in place;
//! - a regular file or nothing yet: written atomically (a temp file in the same
//!   directory, renamed over it), so a failed export never leaves half a file;
//! - a symlink: followed, and its target written as above (the link stays);
//! - a character device or FIFO (`/dev/null`, `/dev/stdout` → a pipe, a named
//!   pipe): written straight into it, never replaced by a file.
//!
//! [`check`] classifies the path the same way before the first run, so a path
//! that cannot be written fails the command before anything is measured.

use anyhow::{bail, Context, Result};
use coldstart_core::out;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What an export path names.
#[derive(Debug, PartialEq)]
enum Dest {
    Stdout,
    Stderr,
    /// A regular file (existing or new): replaced atomically.
    File(PathBuf),
    /// A character device or FIFO: opened and written in place.
    Stream(PathBuf),
}

fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Which of our own standard streams (1 or 2) `path` is: by name, or by the
/// device and inode of what it opens against those of fd 1 and fd 2. Only a
/// regular file, FIFO or socket counts by inode: a character device (a
/// terminal, /dev/null) is written in place anyway.
fn own_stream(path: &Path) -> Option<i32> {
    let named = |fd: i32| {
        [format!("/dev/fd/{fd}"), format!("/proc/self/fd/{fd}")]
            .iter()
            .any(|p| path == Path::new(p))
    };
    if path == Path::new("/dev/stdout") || named(1) {
        return Some(1);
    }
    if path == Path::new("/dev/stderr") || named(2) {
        return Some(2);
    }
    let m = fs::metadata(path).ok()?;
    let ft = m.file_type();
    if !(ft.is_file() || ft.is_fifo() || ft.is_socket()) {
        return None;
    }
    use std::os::unix::fs::MetadataExt;
    [1, 2]
        .into_iter()
        .find(|&fd| nix::sys::stat::fstat(fd).is_ok_and(|st| st.st_dev == m.dev() && st.st_ino == m.ino()))
}

fn dest(path: &Path) -> Result<Dest> {
    if is_stdout(path) {
        return Ok(Dest::Stdout);
    }
    match own_stream(path) {
        Some(1) => return Ok(Dest::Stdout),
        Some(_) => return Ok(Dest::Stderr),
        None => {}
    }
    // Devices and FIFOs first, through the kernel's own lookup: /dev/stdout is a
    // chain ending in /proc/self/fd/1, a magic link whose text ("pipe:[…]") names
    // no path, yet opening it reaches the pipe.
    if let Ok(m) = fs::metadata(path) {
        let ft = m.file_type();
        if ft.is_char_device() || ft.is_fifo() {
            return Ok(Dest::Stream(path.to_path_buf()));
        }
    }
    let resolved = resolve(path)?;
    let meta = match fs::metadata(&resolved) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Dest::File(resolved)),
        Err(e) => return Err(e).with_context(|| format!("cannot export to {}", path.display())),
    };
    let ft = meta.file_type();
    if ft.is_file() {
        Ok(Dest::File(resolved))
    } else if ft.is_char_device() || ft.is_fifo() {
        Ok(Dest::Stream(resolved))
    } else if ft.is_dir() {
        bail!(
            "cannot export to {}: it is a directory; give a file name inside it",
            path.display()
        )
    } else {
        bail!(
            "cannot export to {}: it is neither a regular file, a character device nor a FIFO",
            path.display()
        )
    }
}

/// The path with symlinks followed (to the end of the chain; a dangling link
/// names the file to create).
fn resolve(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target =
                    fs::read_link(&p).with_context(|| format!("reading the symlink {}", p.display()))?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    bail!("cannot export to {}: too many levels of symlinks", path.display())
}

fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Refuse, before any run, an export path that cannot be written: a missing or
/// unwritable directory, a directory given as the file, a device we may not open,
/// or two exports to stdout.
pub fn check(paths: &[&Option<PathBuf>]) -> Result<()> {
    let mut to_stdout = 0;
    for path in paths.iter().filter_map(|p| p.as_ref()) {
        match dest(path)? {
            Dest::Stdout => to_stdout += 1,
            Dest::Stderr => {}
            Dest::Stream(p) => {
                // Opening a FIFO for writing would block until a reader comes, and
                // the reader may be waiting for the results: check permission only.
                nix::unistd::access(&p, nix::unistd::AccessFlags::W_OK)
                    .with_context(|| format!("cannot export to {}: not writable", path.display()))?;
            }
            Dest::File(p) => {
                let dir = dir_of(&p);
                if !dir.is_dir() {
                    bail!(
                        "cannot export to {}: directory {} does not exist",
                        path.display(),
                        dir.display()
                    );
                }
                // A real temp file: permission bits do not tell root about a
                // read-only mount, and the rename later needs exactly this.
                tempfile::Builder::new()
                    .prefix(".coldstart-check")
                    .tempfile_in(dir)
                    .map_err(|e| {
                        // The OS's reason without tempfile's random name.
                        let why = e.raw_os_error().map_or_else(
                            || e.kind().to_string(),
                            |c| std::io::Error::from_raw_os_error(c).to_string(),
                        );
                        anyhow::anyhow!(
                            "cannot export to {}: cannot create files in {} ({why})",
                            path.display(),
                            dir.display()
                        )
                    })?;
            }
        }
    }
    if to_stdout > 1 {
        bail!("only one export can go to stdout (`-`, /dev/stdout or the file stdout is redirected to): give the others file names");
    }
    if to_stdout == 1 {
        out::reserve_stdout_for_export();
    }
    Ok(())
}

/// Write an export to `path` (see the module doc for what each kind of path gets).
pub fn write(path: &Path, contents: &[u8]) -> Result<()> {
    match dest(path)? {
        Dest::Stdout => out::bytes(contents),
        Dest::Stderr => {
            let mut stderr = std::io::stderr().lock();
            stderr
                .write_all(contents)
                .and_then(|()| stderr.flush())
                .with_context(|| format!("writing {}", path.display()))
        }
        Dest::Stream(p) => {
            let mut f = OpenOptions::new()
                .write(true)
                .open(&p)
                .with_context(|| format!("opening {}", path.display()))?;
            f.write_all(contents)
                .with_context(|| format!("writing {}", path.display()))
        }
        Dest::File(p) => write_atomic(&p, contents).with_context(|| format!("writing {}", path.display())),
    }
}

/// Write a generated file (`fleet emit -o`) to `path` as [`write`] does, except
/// that an existing regular file is replaced only with `force`: such a file is
/// one a person keeps (a CI workflow, a manifest), never silently overwritten.
pub fn write_new(path: &Path, contents: &[u8], force: bool) -> Result<()> {
    if let Dest::File(p) = dest(path)? {
        if !force && fs::symlink_metadata(&p).is_ok() {
            bail!("{} exists: give --force to replace it", path.display());
        }
    }
    write(path, contents)
}

/// Replace the regular file `path` (or create it) atomically: temp file + rename,
/// keeping an existing file's permissions.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    let dir = dir_of(path);
    if !dir.is_dir() {
        bail!("directory {} does not exist", dir.display());
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".coldstart-export")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    let mode = fs::metadata(path)
        .map(|m| m.permissions().mode())
        .unwrap_or(0o644);
    let file: &mut File = tmp.as_file_mut();
    file.set_permissions(fs::Permissions::from_mode(mode))?;
    file.write_all(contents)?;
    file.sync_all()?;
    // On error the temp file is removed when `tmp` drops.
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("renaming into {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_classified_by_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.json");
        assert_eq!(dest(Path::new("-")).unwrap(), Dest::Stdout);
        assert_eq!(dest(&file).unwrap(), Dest::File(file.clone()));
        assert_eq!(
            dest(Path::new("/dev/null")).unwrap(),
            Dest::Stream("/dev/null".into())
        );
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("r.json", &link).unwrap();
        assert_eq!(
            dest(&link).unwrap(),
            Dest::File(file.clone()),
            "a dangling link names its target"
        );
        assert!(dest(dir.path())
            .unwrap_err()
            .to_string()
            .contains("is a directory"));
    }

    #[test]
    fn a_new_file_never_replaces_one_without_force() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("job.yaml");
        write_new(&file, b"first", false).unwrap();
        let err = write_new(&file, b"second", false).unwrap_err().to_string();
        assert!(err.contains("exists: give --force"), "{err}");
        assert_eq!(fs::read_to_string(&file).unwrap(), "first");
        write_new(&file, b"second", true).unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "second");
        // Devices are written in place, never refused.
        write_new(Path::new("/dev/null"), b"x", false).unwrap();
    }

    #[test]
    fn atomic_writes_keep_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.csv");
        fs::write(&file, "old").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
        write(&file, b"new").unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temp file left behind");
    }
}

/// Every export a command was asked for, checked together before the first run
/// and written together after the last (hyperfine's ExportManager). A format
/// a command does not produce is simply never set.
#[derive(Debug, Clone, Default)]
pub struct Exports {
    pub json: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    /// Chrome Trace Event JSON (explain).
    pub trace: Option<PathBuf>,
    /// The self-contained HTML report (report/html).
    pub html: Option<PathBuf>,
}

impl Exports {
    /// Refuse, before anything runs, a path that cannot be written.
    pub fn check(&self) -> Result<()> {
        check(&[&self.json, &self.markdown, &self.csv, &self.trace, &self.html])
    }

    /// An experiment's results in every format asked for.
    pub fn write_experiment(
        &self,
        result: &coldstart_core::experiment::ExperimentResult,
        analysis: &coldstart_core::analysis::Analysis,
        settings: &super::json::Settings,
    ) -> Result<()> {
        if let Some(p) = &self.json {
            write(p, super::json::render(result, analysis, settings)?.as_bytes())?;
        }
        if let Some(p) = &self.markdown {
            write(p, super::markdown::render(analysis).as_bytes())?;
        }
        if let Some(p) = &self.csv {
            write(p, &super::csv::render(result).context("rendering CSV")?)?;
        }
        Ok(())
    }

    /// The HTML report, if asked for (its model needs what only the command knows:
    /// the stored id, the metadata, an explanation).
    pub fn write_html(&self, report: &super::html::Report) -> Result<()> {
        if let Some(p) = &self.html {
            write(p, super::html::render(report).as_bytes())?;
        }
        Ok(())
    }
}
