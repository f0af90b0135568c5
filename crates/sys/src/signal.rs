//! kill(2), for one process and for a whole process group.
//!
//! Both are a bare `kill` plus an errno read: no allocation, no locks, so they
//! are async-signal-safe and may be called from a signal handler or a forked
//! child of a multi-threaded process.

use std::io;

/// Send `sig` to the process `pid` (0 only checks that it exists).
/// `pid` must be a real process id: 0 and negatives (whole groups, or with -1
/// every process we may signal) are refused with `InvalidInput`.
#[inline]
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    if pid <= 0 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: kill(2) has no memory effects; the pid was checked to name one process.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Send `sig` to every process of the process group `pgid` (0 only checks that
/// the group still has a member). A `pgid` below 2 is refused with
/// `InvalidInput`: `kill(0)` would hit coldstart's own group and `kill(-1)`
/// every process coldstart may signal, which an unset slot must never cause.
#[inline]
pub fn kill_group(pgid: i32, sig: i32) -> io::Result<()> {
    if pgid <= 1 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: kill(2) has no memory effects; -pgid names exactly one group (pgid > 1).
    if unsafe { libc::kill(-pgid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::Command;

    #[test]
    fn kill_group_kills_every_member_of_the_group() {
        // A shell in its own group with a background sleep: both must die.
        let mut sh = Command::new("sh")
            .args(["-c", "sleep 60 & echo $!; exec sleep 60"])
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn sh");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(sh.stdout.take().expect("stdout")),
            &mut line,
        )
        .expect("read the background pid");
        let background: i32 = line.trim().parse().expect("a pid");
        // Its pidfd turns readable when it dies, whoever its parent is by then.
        let pidfd = crate::process::pidfd_open(background).expect("pidfd of the background sleep");
        let pgid = sh.id() as i32;
        kill_group(pgid, 0).expect("the group exists");
        kill_group(pgid, libc::SIGKILL).expect("signal the group");
        let status = sh.wait().expect("wait");
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        let mut pfd = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&pidfd),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on one pollfd we own; the bound only turns a survivor into
        // a failure instead of a hang.
        let ready = unsafe { libc::poll(&mut pfd, 1, 30_000) };
        assert_eq!(ready, 1, "the group's background member survived the group kill");
    }

    #[test]
    fn kill_group_refuses_our_own_group_and_broadcast() {
        for pgid in [0, 1, -1, -42] {
            let e = kill_group(pgid, 0).expect_err("refused");
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "pgid {pgid}");
        }
    }

    #[test]
    fn kill_reports_a_missing_process() {
        let mut child = Command::new("true").spawn().expect("spawn true");
        let pid = child.id() as i32;
        child.wait().expect("wait");
        // Reaped: the pid is free (a reuse within this test is astronomically unlikely).
        let e = kill(pid, 0).expect_err("gone");
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
        assert_eq!(
            kill(0, 0).expect_err("refused").kind(),
            io::ErrorKind::InvalidInput
        );
        assert!(kill(std::process::id() as i32, 0).is_ok());
    }
}
