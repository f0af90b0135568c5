//! `file:PATH`: ready when the file exists. Watched with inotify on the parent
//! directory (no polling); falls back to polling when the directory is missing.

use anyhow::{bail, Result};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::{Path, PathBuf};

pub struct FileProbe {
    path: PathBuf,
    inotify: Option<Inotify>,
}

impl FileProbe {
    pub fn new(path: &Path) -> Result<Self> {
        if path.exists() {
            bail!(
                "{} already exists before the spawn, so every run would look instant: remove it \
                 (coldstart removes it after each run in which the target created it)",
                path.display()
            );
        }
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .ok()
            .and_then(|ino| {
                ino.add_watch(
                    &parent,
                    AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO | AddWatchFlags::IN_ATTRIB,
                )
                .ok()
                .map(|_| ino)
            });
        Ok(FileProbe {
            path: path.to_path_buf(),
            inotify,
        })
    }

    pub fn event_fd(&self) -> Option<RawFd> {
        self.inotify.as_ref().map(|i| i.as_fd().as_raw_fd())
    }

    pub fn check(&self) -> bool {
        if let Some(ino) = &self.inotify {
            // Drain events; existence is the truth, events only wake us.
            while matches!(ino.read_events(), Ok(ev) if !ev.is_empty()) {}
        }
        self.path.exists()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}
