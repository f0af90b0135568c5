//! Marks from inside a run: app checkpoints written by the SDKs to the fd named
//! by COLDSTART_FD (`cs1 <monotonic_ns> <name>\n`, the protocol of sdk/vectors),
//! and log marks (`--mark NAME=REGEX`: the first output line matching REGEX).

use crate::launch::output::LineBuffer;
use crate::sample::{Mark, MarkSource};
use anyhow::{Context, Result};
use regex::Regex;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

pub const FD_ENV: &str = "COLDSTART_FD";

pub struct Marks {
    /// Our end of the checkpoint pipe.
    read: Option<File>,
    /// The target's end (close-on-exec here; placed at the reserved fd for the spawn).
    write: Option<OwnedFd>,
    /// The Lab's reserved fd (COLDSTART_FD): /dev/null between runs, close-on-exec.
    /// None without a Lab (unit tests): the pipe's own fd is passed instead.
    reserved: Option<RawFd>,
    lines: LineBuffer,
    log: Vec<(String, Regex, bool)>,
    t0: u64,
    marks: Vec<Mark>,
}

impl Drop for Marks {
    fn drop(&mut self) {
        // Also on early returns: the reserved fd must not stay a pipe end.
        self.release_write_end();
    }
}

impl Marks {
    /// `reserved`: the fd number every target is told about (COLDSTART_FD),
    /// the Lab's `checkpoint_fd`; None without a Lab (unit tests).
    pub fn new(log_marks: &[(String, Regex)], reserved: Option<RawFd>) -> Result<Marks> {
        // Our end never blocks; the target's end does (a full pipe is back-pressure).
        let (read, write) = coldstart_sys::pipe::pipe(false).context("creating the checkpoint pipe")?;
        coldstart_sys::fd::set_nonblocking(read.as_fd()).context("the checkpoint pipe")?;
        // SAFETY: fcntl on a descriptor we own, no pointers. A large buffer lets
        // runs that are not watched live (all but --ready listen) drain checkpoints
        // when they wake for other reasons, without the app ever blocking on a
        // full pipe (1 MiB ≈ 25,000 checkpoints).
        unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
        let read = File::from(read);
        Ok(Marks {
            read: Some(read),
            write: Some(write),
            reserved,
            lines: LineBuffer::new(0),
            log: log_marks
                .iter()
                .map(|(n, r)| (n.clone(), r.clone(), false))
                .collect(),
            t0: 0,
            marks: Vec::new(),
        })
    }

    /// Right before the spawn: the pipe's write end takes the Lab's reserved fd
    /// number, inheritable (without a Lab, in unit tests, the pipe's own fd is
    /// made inheritable). Returns COLDSTART_FD for the target's environment,
    /// which `spawn::prepare` builds outside the timed window.
    pub fn before_spawn(&mut self) -> Vec<(String, String)> {
        let Some(write) = self.write.as_ref() else {
            return Vec::new();
        };
        match self.reserved {
            Some(fd) => {
                // SAFETY: dup3 onto the fd the Lab reserved; no flags = inheritable.
                unsafe { libc::dup3(write.as_raw_fd(), fd, 0) };
                vec![(FD_ENV.to_string(), fd.to_string())]
            }
            None => {
                let _ = coldstart_sys::fd::set_inheritable(write.as_fd());
                vec![(FD_ENV.to_string(), write.as_raw_fd().to_string())]
            }
        }
    }

    /// For a child spawned with `spawn::Prepared::pass_fd` instead of the reserved
    /// fd (no process-wide rewiring, so safe beside other threads that spawn): the
    /// write end and the number to give it there (the reserved one when installed),
    /// which COLDSTART_FD in the child's environment must name.
    pub fn for_child(&mut self) -> Option<(OwnedFd, RawFd)> {
        let write = self.write.take()?;
        let at = self.reserved.unwrap_or(write.as_raw_fd());
        Some((write, at))
    }

    /// Right after the spawn: note time zero. Our copies of the target's end are
    /// only dropped in `finish`, keeping syscalls out of the timed window (no
    /// other process is started during a run, so nothing else inherits them).
    pub fn spawned(&mut self, t0: u64) {
        self.t0 = t0;
    }

    /// Put /dev/null back on the reserved fd and close our write end.
    fn release_write_end(&mut self) {
        if self.write.take().is_some() {
            if let Some(fd) = self.reserved {
                if let Ok(devnull) = File::open("/dev/null") {
                    // SAFETY: put /dev/null (close-on-exec) back on the reserved fd.
                    unsafe { libc::dup3(devnull.as_raw_fd(), fd, libc::O_CLOEXEC) };
                }
            }
        }
    }

    pub fn needs_output(&self) -> bool {
        !self.log.is_empty()
    }

    pub fn fd(&self) -> Option<RawFd> {
        self.read.as_ref().map(|r| r.as_raw_fd())
    }

    /// Read every complete checkpoint line available now.
    pub fn drain(&mut self) {
        let Some(read) = self.read.as_mut() else { return };
        let mut buf = [0u8; 4096];
        let mut eof = false;
        loop {
            match read.read(&mut buf) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    let (t0, marks) = (self.t0, &mut self.marks);
                    self.lines.feed(&buf[..n], |line| {
                        if let Some(m) = parse_checkpoint(line, t0) {
                            marks.push(m);
                        }
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        if eof {
            self.read = None;
        }
    }

    /// An output line seen at `now`: the first match of each --mark.
    pub fn on_line(&mut self, line: &str, now: u64) {
        for (name, regex, seen) in self.log.iter_mut().filter(|(_, _, seen)| !*seen) {
            if regex.is_match(line) {
                *seen = true;
                self.marks.push(Mark::new(
                    name.clone(),
                    MarkSource::Log,
                    now.saturating_sub(self.t0),
                ));
            }
        }
    }

    /// The first mark of this name so far (ns since spawn).
    pub fn find(&self, name: &str) -> Option<u64> {
        self.marks.iter().filter(|m| m.name == name).map(|m| m.t_ns).min()
    }

    pub fn finish(mut self) -> Vec<Mark> {
        self.release_write_end();
        self.drain();
        self.marks.sort_by_key(|m| m.t_ns);
        std::mem::take(&mut self.marks)
    }
}

/// `cs1 <ns> <name>`; anything else is ignored (an app may share the fd by mistake).
pub fn parse_checkpoint(line: &str, t0: u64) -> Option<Mark> {
    let rest = line.strip_prefix("cs1 ")?;
    let (ns, name) = rest.split_once(' ')?;
    let ns: u64 = ns.parse().ok()?;
    (!name.is_empty()).then(|| Mark::new(name, MarkSource::Checkpoint, ns.saturating_sub(t0)))
}

/// `NAME=REGEX` (for --mark).
pub fn parse_log_mark(s: &str) -> Result<(String, Regex)> {
    let (name, pattern) = s
        .split_once('=')
        .filter(|(n, p)| !n.is_empty() && !p.is_empty())
        .ok_or_else(|| {
            anyhow::anyhow!("bad --mark '{s}': write NAME=REGEX, e.g. --mark 'db=connected to'")
        })?;
    let regex = Regex::new(pattern).map_err(|e| {
        anyhow::anyhow!(
            "bad regex in --mark '{s}': {}",
            e.to_string().lines().last().unwrap_or("").trim()
        )
    })?;
    Ok((name.to_string(), regex))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_lines_parse_relative_to_t0() {
        let m = parse_checkpoint("cs1 1500 config loaded", 1000).unwrap();
        assert_eq!((m.name.as_str(), m.t_ns), ("config loaded", 500));
        assert!(parse_checkpoint("cs2 1 x", 0).is_none());
        assert!(parse_checkpoint("cs1 abc x", 0).is_none());
        assert!(parse_checkpoint("cs1 5 ", 0).is_none());
    }

    #[test]
    fn pipe_end_to_end_and_log_marks() {
        let mut marks = Marks::new(&[parse_log_mark("db=connected").unwrap()], None).unwrap();
        let env = marks.before_spawn();
        let fd: i32 = env[0].1.parse().unwrap();
        let line = b"cs1 2000 a\ncs1 3000 b\n";
        // SAFETY: writing to the pipe end we created.
        assert_eq!(
            unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) },
            line.len() as isize
        );
        marks.spawned(1000);
        marks.on_line("db connected to x", 1700);
        marks.on_line("db connected again", 1800);
        let got: Vec<_> = marks.finish().into_iter().map(|m| (m.name, m.t_ns)).collect();
        assert_eq!(
            got,
            [("db".to_string(), 700), ("a".into(), 1000), ("b".into(), 2000)]
        );
        assert!(parse_log_mark("noequals").is_err());
        assert!(parse_log_mark("x=(")
            .unwrap_err()
            .to_string()
            .contains("bad regex"));
    }
}
