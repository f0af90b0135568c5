//! Spawning a target. The `Command` is prepared before time zero so the timed
//! interval holds only the spawn itself.

use crate::target::Target;
use anyhow::{Context, Result};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{ChildStderr, ChildStdout, Command, Stdio};

/// Where the target's stdout/stderr go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// An in-memory file shared by stdout and stderr: no reader is needed while
    /// the target runs, so nothing of ours competes with it for a core.
    MemFile,
    /// Pipes read live (needed by the log probe).
    Pipes,
}

pub struct Prepared {
    command: Command,
    /// Our handle on the in-memory output file (MemFile mode), kept bounded.
    pub output_file: Option<super::output::capture::Capture>,
}

pub struct Child {
    pub pid: i32,
    /// Readable when the process exits; lets one poll(2) wait on exit, output and probes.
    pub pidfd: OwnedFd,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
}

pub fn prepare(target: &Target, mode: OutputMode, extra_env: &[(String, String)]) -> Result<Prepared> {
    let mut command = Command::new(&target.program);
    if let Some((_, rest)) = target.argv.split_first() {
        command.args(rest);
    }
    command.arg0(&target.argv[0]);
    for (k, v) in target.env.iter().chain(extra_env) {
        command.env(k, v);
    }
    if let Some(dir) = &target.cwd {
        command.current_dir(dir);
    }
    // Own process group: Ctrl-C on the terminal reaches coldstart only, and the
    // whole group can be signalled at stop time.
    command.process_group(0);
    command.stdin(Stdio::null());
    let output_file = match mode {
        OutputMode::MemFile => {
            let file = memfd("coldstart-output")?;
            command.stdout(Stdio::from(file.try_clone().context("duplicating output fd")?));
            command.stderr(Stdio::from(file.try_clone().context("duplicating output fd")?));
            Some(super::output::capture::watch_file(file))
        }
        OutputMode::Pipes => {
            command.stdout(Stdio::piped());
            command.stderr(Stdio::piped());
            None
        }
    };
    Ok(Prepared { command, output_file })
}

impl Prepared {
    /// Give the process exactly this environment (nothing inherited from coldstart).
    pub fn replace_env(&mut self, vars: &[(String, String)]) {
        self.command.env_clear();
        for (k, v) in vars {
            self.command.env(k, v);
        }
    }
}

/// Spawn the prepared command. Call this immediately after taking time zero.
pub fn spawn(prepared: &mut Prepared, target: &Target) -> Result<Child> {
    let mut child = prepared
        .command
        .spawn()
        .with_context(|| format!("cannot start {}", target.program.display()))?;
    let pid = child.id() as i32;
    let pidfd = pidfd_open(pid).context("pidfd_open (needs Linux 5.3 or newer)")?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    for fd in [
        stdout.as_ref().map(|s| s.as_raw_fd()),
        stderr.as_ref().map(|s| s.as_raw_fd()),
    ]
    .into_iter()
    .flatten()
    {
        set_nonblocking(fd);
    }
    // `child` is dropped without waiting: we reap with wait4 to get rusage.
    Ok(Child {
        pid,
        pidfd,
        stdout,
        stderr,
    })
}

fn memfd(name: &str) -> Result<File> {
    let cname = std::ffi::CString::new(name).context("memfd name")?;
    // SAFETY: valid NUL-terminated name; the returned fd is owned by the File.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("memfd_create for output capture");
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { File::from_raw_fd(fd) })
}

fn pidfd_open(pid: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: plain syscall; a non-negative result is a new fd we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn set_nonblocking(fd: i32) {
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}
