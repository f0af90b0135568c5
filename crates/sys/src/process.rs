//! Process attributes and handles: pidfd_open(2), prctl(2) settings, waitpid(2).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// A pidfd for the process `pid` (Linux 5.3+), close-on-exec.
pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes integers; a returned fd is ours to own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Become a child subreaper: orphans of our descendants are reparented to us
/// (and their zombies are ours to reap), never to init.
pub fn set_child_subreaper() -> io::Result<()> {
    prctl_set(libc::PR_SET_CHILD_SUBREAPER, 1)
}

/// Set no_new_privs (execs never gain privileges; needed to install a seccomp
/// filter without CAP_SYS_ADMIN). Async-signal-safe: fine in a forked child.
#[inline]
pub fn set_no_new_privs() -> io::Result<()> {
    prctl_set(libc::PR_SET_NO_NEW_PRIVS, 1)
}

/// Set this thread's timer slack in nanoseconds (0 restores the default).
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    prctl_set(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong)
}

/// sched_attr(7) as sched_setattr(2) takes it (the libc crate has no binding).
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

/// Ask the fair scheduler for a custom slice for this thread (`sched_runtime`
/// of a SCHED_OTHER thread, Linux 6.12+; 0 restores the default). A short
/// slice gives the thread an early virtual deadline, so when it wakes on a
/// busy CPU it runs at once instead of waiting for the running task's slice to
/// end; the CPU share it is entitled to does not change. Older kernels accept
/// the call and ignore the value. The nice value is kept.
pub fn set_sched_slice(ns: u64) -> io::Result<()> {
    // A thread the user put under another policy (chrt: batch, idle, FIFO) is
    // left as it is: restoring would otherwise make it SCHED_OTHER.
    // SAFETY: sched_getscheduler takes a pid (0: this thread).
    if unsafe { libc::sched_getscheduler(0) } != libc::SCHED_OTHER {
        return Ok(());
    }
    // Not SCHED_FLAG_KEEP_PARAMS: it would also keep the current slice. On
    // Linux, PRIO_PROCESS with 0 is the calling thread.
    // SAFETY: getpriority takes integers.
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        nice,
        runtime: ns,
        ..Default::default()
    };
    // SAFETY: sched_setattr(tid 0 = this thread, a valid sched_attr of the size
    // it declares, flags 0); the kernel only reads it.
    if unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[inline]
fn prctl_set(option: libc::c_int, value: libc::c_ulong) -> io::Result<()> {
    // SAFETY: these prctl options take one integer and no pointers.
    if unsafe {
        libc::prctl(
            option,
            value,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Wait for our child `pid` to end and reap it, returning its raw wait status.
/// Retries EINTR.
pub fn reap(pid: i32) -> io::Result<i32> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into our local.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reap one child that has already ended, if any: `Ok(Some(pid))`; `Ok(None)`
/// while every child is still running; `Err` ECHILD when there is no child at
/// all. Never blocks. (No unit test: in a test binary it would steal other
/// tests' children.)
pub fn try_reap_any() -> io::Result<Option<i32>> {
    // SAFETY: waitpid with a null status pointer writes nothing.
    match unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } {
        r if r > 0 => Ok(Some(r)),
        0 => Ok(None),
        _ => Err(io::Error::last_os_error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::process::Command;

    #[test]
    fn pidfd_polls_readable_when_the_process_ends() {
        let mut child = Command::new("sleep").arg("60").spawn().expect("spawn sleep");
        let pidfd = pidfd_open(child.id() as i32).expect("pidfd_open");
        let mut pfd = libc::pollfd {
            fd: pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on one pollfd we own, zero timeout.
        assert_eq!(unsafe { libc::poll(&mut pfd, 1, 0) }, 0, "alive: not readable");
        child.kill().expect("kill");
        // SAFETY: as above; blocks until the exit (the event, not a sleep).
        assert_eq!(unsafe { libc::poll(&mut pfd, 1, -1) }, 1);
        child.wait().expect("wait");
        let e = pidfd_open(child.id() as i32).expect_err("reaped");
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
    }

    #[test]
    fn timer_slack_is_set_for_this_thread() {
        std::thread::spawn(|| {
            set_timer_slack(1).expect("set");
            // SAFETY: PR_GET_TIMERSLACK takes no pointers.
            assert_eq!(unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) }, 1);
        })
        .join()
        .expect("thread");
    }

    #[test]
    #[allow(clippy::zombie_processes)] // reaped by `reap`, the function under test
    fn reap_returns_the_exit_status_once() {
        let child = Command::new("sh")
            .args(["-c", "exit 7"])
            .spawn()
            .expect("spawn sh");
        let status = reap(child.id() as i32).expect("reap");
        assert!(libc::WIFEXITED(status));
        assert_eq!(libc::WEXITSTATUS(status), 7);
        let e = reap(child.id() as i32).expect_err("already reaped");
        assert_eq!(e.raw_os_error(), Some(libc::ECHILD));
    }

    #[test]
    fn no_new_privs_and_subreaper_in_a_child_process() {
        // Both are irreversible for the calling process, so they run in a forked
        // child that reports by exit code.
        // SAFETY: the child only makes async-signal-safe calls and _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            // SAFETY: prctl getters take no pointers; _exit never returns.
            unsafe {
                let ok = set_no_new_privs().is_ok()
                    && libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1
                    && set_child_subreaper().is_ok();
                let mut v: libc::c_int = 0;
                let sub =
                    libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut v as *mut libc::c_int) == 0 && v == 1;
                libc::_exit(if ok && sub { 0 } else { 1 });
            }
        }
        let status = reap(pid).expect("reap");
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "status {status:#x}"
        );
    }
}
