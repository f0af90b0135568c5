//! Waiting precisely: ppoll(2) with a nanosecond timeout, and tight timer slack
//! while a probe polls. Shared by the untraced runs (run.rs) and the traced ones
//! (explain/traced.rs), so both detect ready with the same lag.

use std::os::fd::RawFd;

/// Polls sleep ~100–200 µs at a time; the default 50 µs timer slack would add
/// straight to the detected ready instant. Slack is inherited by children, so it
/// is made tight only after the spawn and restored (on drop) before the next one.
pub struct TightTimers;

impl TightTimers {
    pub fn on() -> TightTimers {
        // Affects only this thread's timers.
        let _ = coldstart_sys::process::set_timer_slack(1);
        TightTimers
    }
}

impl Drop for TightTimers {
    fn drop(&mut self) {
        // 0 restores the thread's default slack.
        let _ = coldstart_sys::process::set_timer_slack(0);
    }
}

/// A pollfd waiting for `fd` to become readable.
pub fn pollfd(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// ppoll with a nanosecond timeout (poll(2) only has milliseconds). Returns the
/// number of ready descriptors, 0 on timeout or interruption.
pub fn ppoll(fds: &mut [libc::pollfd], timeout_ns: u64) -> i32 {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: fds is a valid slice of pollfd; ts lives across the call; no sigmask.
    let r = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
    r.max(0)
}
