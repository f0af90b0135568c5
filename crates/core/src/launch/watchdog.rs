//! A process that outlives coldstart to kill what coldstart started.
//!
//! Forked once per invocation, at startup: it blocks reading a pipe whose only
//! write end coldstart holds (close-on-exec, so no target inherits it). When
//! coldstart dies — exit, panic, SIGKILL, OOM kill — the kernel closes that end,
//! the read returns end-of-file, and the watchdog SIGKILLs the process groups
//! listed in a page of memory it shares with coldstart (the fallback when there
//! are no cgroups), then kills what is in every cgroup of this invocation — the
//! run cgroups, bench's limit cgroups, lambda's sandboxes, all named after the
//! invocation in their hierarchies (`cgroup::invocation_dirs`) — and removes them.
//! Before that wait it sweeps the cgroups of coldstarts that died with their
//! watchdog (`cgroup::remove_stale`).
//!
//! It is double-forked before coldstart becomes a child subreaper, so it is not
//! coldstart's child (the run cleanup's "no child left" test stays true), and it
//! is in its own session, so a signal to coldstart's process group or terminal
//! does not take it down with coldstart.

use super::cgroup;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};

/// Process groups of the current runs; 0 marks a free slot.
pub const SLOTS: usize = 16;

/// Shared with the watchdog (MAP_SHARED survives the fork), else private memory.
pub fn groups() -> &'static [AtomicI32; SLOTS] {
    static FALLBACK: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
    static SHARED: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let addr = *SHARED.get_or_init(|| {
        // SAFETY: an anonymous shared mapping; the result is checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                std::mem::size_of::<[AtomicI32; SLOTS]>(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            0
        } else {
            p as usize
        }
    });
    if addr == 0 {
        return &FALLBACK;
    }
    // SAFETY: the mapping is zero-filled (a valid [AtomicI32; SLOTS]), page
    // aligned, never unmapped, and only ever accessed through atomics.
    unsafe { &*(addr as *const [AtomicI32; SLOTS]) }
}

/// Start the watchdog. Call once, before any thread exists and before
/// PR_SET_CHILD_SUBREAPER. The returned fd must stay open for coldstart's life.
/// `dirs`: every cgroup directory this invocation may make (made or not yet).
pub fn start(dirs: &'static [PathBuf]) -> std::io::Result<OwnedFd> {
    let slots = groups();
    let (read, write) = coldstart_sys::pipe::pipe(false)?;
    // SAFETY: no other thread exists yet (see above), so the child may run
    // ordinary Rust code; it never returns into coldstart's main.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        drop(write);
        // SAFETY: as above; the intermediate process only forks and exits.
        let grandchild = unsafe { libc::fork() };
        if grandchild != 0 {
            // SAFETY: leave at once without running coldstart's exit handlers.
            unsafe { libc::_exit(0) };
        }
        watch(read, dirs, slots);
    }
    drop(read);
    // The intermediate child exits at once.
    let _ = coldstart_sys::process::reap(pid);
    Ok(write)
}

fn watch(pipe: OwnedFd, dirs: &[PathBuf], slots: &[AtomicI32; SLOTS]) -> ! {
    const PIPE: i32 = 3;
    // SAFETY: plain process-attribute and descriptor calls on ourselves.
    unsafe {
        libc::setsid();
        for sig in [
            libc::SIGINT,
            libc::SIGQUIT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGPIPE,
        ] {
            libc::signal(sig, libc::SIG_IGN);
        }
        // Hold none of coldstart's descriptors but the pipe (a pipe to `head`
        // or to a test's output reader would otherwise stay open until we exit).
        if pipe.as_raw_fd() != PIPE && libc::dup2(pipe.as_raw_fd(), PIPE) != PIPE {
            libc::_exit(1);
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
        libc::close_range(PIPE as u32 + 1, u32::MAX, 0);
    }
    std::mem::forget(pipe); // its number may be closed already; PIPE is the copy
    cgroup::remove_stale(dirs);
    wait_eof(PIPE);
    for slot in slots {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            // A process group coldstart created for a run.
            let _ = coldstart_sys::signal::kill_group(pgid, libc::SIGKILL);
        }
    }
    cgroup::destroy(dirs);
    // SAFETY: leave without running coldstart's exit handlers.
    unsafe { libc::_exit(0) }
}

fn wait_eof(fd: i32) {
    let mut b = [0u8; 16];
    loop {
        // SAFETY: reading into a local buffer.
        let r = unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) };
        if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if r <= 0 {
            return;
        }
    }
}
