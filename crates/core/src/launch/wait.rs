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
        // A timer that fires on time is no use if the thread then waits for a
        // busy CPU: a probe attempt that ran late by one slice (1.5–3 ms here)
        // became a late ready instant, and since a late gap is long, the
        // target's listen() fell into one in ~10–20 % of runs on a loaded
        // machine. A short slice lets the woken thread run first (issue 26 #8).
        let _ = coldstart_sys::process::set_sched_slice(LATENCY_SLICE_NS);
        TightTimers
    }
}

/// The custom fair-scheduler slice while waiting on a target: the kernel's
/// minimum (0.1 ms).
pub const LATENCY_SLICE_NS: u64 = 100_000;

impl Drop for TightTimers {
    fn drop(&mut self) {
        // 0 restores the thread's default slack.
        let _ = coldstart_sys::process::set_timer_slack(0);
        let _ = coldstart_sys::process::set_sched_slice(0);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's fair-scheduler slice as the kernel reports it.
    fn slice_ns() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
        let line = text.lines().find(|l| l.trim_start().starts_with("se.slice"))?;
        line.split(':').nth(1)?.trim().parse().ok()
    }

    #[test]
    fn waiting_on_a_probe_asks_for_a_short_slice_and_gives_it_back() {
        // The oracle is the kernel's own figure (se.slice in /proc, Linux 6.6+
        // with sched debug; custom slices since 6.12).
        let Some(default) = slice_ns() else {
            // A kernel feature, not a toolchain: no COLDSTART_REQUIRE_ switch.
            crate::testkit::say("SKIPPED slice test: no se.slice in /proc/thread-self/sched");
            return;
        };
        let guard = TightTimers::on();
        let during = slice_ns();
        drop(guard);
        if during == Some(default) && default != LATENCY_SLICE_NS {
            let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            let mut v = release.split(['.', '-']).filter_map(|n| n.parse::<u32>().ok());
            if (v.next().unwrap_or(0), v.next().unwrap_or(0)) < (6, 12) {
                crate::testkit::say(&format!(
                    "SKIPPED slice test: kernel {} has no custom slices",
                    release.trim()
                ));
                return;
            }
        }
        assert_eq!(
            during,
            Some(LATENCY_SLICE_NS),
            "slice while polling (default {default} ns)"
        );
        assert_eq!(slice_ns(), Some(default), "slice restored after the run");
    }
}
