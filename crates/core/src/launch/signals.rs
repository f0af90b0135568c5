//! Ctrl-C, SIGTERM, SIGHUP and SIGQUIT of coldstart itself: the running targets
//! are killed at once and the run loop is told to clean up and stop (exit 130,
//! 131 for SIGQUIT). A second signal kills everything again, waits until it is
//! gone and exits without waiting for the run loop. The same signal from the
//! same sender within [`SAME_INTERRUPT`] is one interrupt delivered twice, not a
//! second one: GNU `timeout -s INT` signals its child and then the child's
//! process group, and that must stop coldstart as gently as one Ctrl-C. What coldstart cannot catch
//! (SIGKILL) is covered by the watchdog and the per-run cgroups.

use super::reaping::Reaping;
use super::{cgroup, procfs, watchdog};
use anyhow::{Context, Result};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The first signal received (for the exit code).
static FIRST_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Write end of the self-pipe the handler writes the signal number to.
static SELF_PIPE: AtomicI32 = AtomicI32::new(-1);

pub const HANDLED: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// How close a repeat of one sender's signal must follow it to be the same
/// interrupt (timeout's two kill(2) calls are microseconds apart; a person's
/// second Ctrl-C is hundreds of milliseconds after the first).
const SAME_INTERRUPT: std::time::Duration = std::time::Duration::from_millis(50);

/// The self-pipe, its thread and the handlers. Only `Lab::open` calls this
/// (once, after the cgroup parent, the watchdog and the subreaper are set up):
/// the library installs no handler on its own.
///
/// The signal thread keeps `reaping` (the Lab's reaping lock) for the life of
/// the process: it acts when no caller can hand it a `&Lab`, and of the Lab it
/// needs only the right to reap, taken without waiting on a second signal.
pub(crate) fn install(reaping: &'static Reaping) -> Result<()> {
    let (read, write) = coldstart_sys::pipe::pipe(false).context("creating the signal pipe")?;
    SELF_PIPE.store(write.as_raw_fd(), Ordering::SeqCst);
    std::mem::forget(write); // lives as long as the process
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || handle_signals(read, reaping))
        .context("starting the signal thread")?;
    for sig in HANDLED {
        // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe
        // (one write(2)); SA_RESTART keeps other threads' syscalls going.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
            libc::sigfillset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error()).context("installing the signal handlers");
            }
        }
    }
    Ok(())
}

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // Set here, not in the thread: a run loop woken by this very signal (EINTR)
    // must already see it.
    let _ = FIRST_SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
    let fd: RawFd = SELF_PIPE.load(Ordering::Relaxed);
    // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO; si_pid is the
    // sender (0 for the kernel, e.g. a terminal's Ctrl-C).
    let sender = if info.is_null() {
        0
    } else {
        unsafe { (*info).si_pid() }
    };
    let mut msg = [0u8; 8];
    msg[..4].copy_from_slice(&sig.to_ne_bytes());
    msg[4..].copy_from_slice(&sender.to_ne_bytes());
    // SAFETY: write(2) is async-signal-safe (8 bytes < PIPE_BUF: one atomic
    // write); errno is saved and restored.
    unsafe {
        let saved = *libc::__errno_location();
        libc::write(fd, msg.as_ptr().cast(), msg.len());
        *libc::__errno_location() = saved;
    }
}

fn handle_signals(pipe: OwnedFd, reaping: &Reaping) {
    let mut msg = [0u8; 8];
    let mut seen = 0;
    let mut first: Option<(i32, i32, std::time::Instant)> = None;
    loop {
        // SAFETY: reading one whole message (written atomically) into a local.
        let r = unsafe { libc::read(pipe.as_raw_fd(), msg.as_mut_ptr().cast(), msg.len()) };
        if r != msg.len() as isize {
            if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return;
        }
        let sig = i32::from_ne_bytes([msg[0], msg[1], msg[2], msg[3]]);
        let sender = i32::from_ne_bytes([msg[4], msg[5], msg[6], msg[7]]);
        let now = std::time::Instant::now();
        match first {
            None => first = Some((sig, sender, now)),
            Some((s0, p0, t0)) if s0 == sig && p0 == sender && sender != 0 && now - t0 < SAME_INTERRUPT => {
                continue;
            }
            Some(_) => {}
        }
        seen += 1;
        kill_current();
        if seen > 1 {
            // The run loop may be stuck in its cleanup: finish the job here.
            crate::out::errln!("coldstart: interrupted again, killing every target process and exiting");
            // Reap only if no trace session is live: waiting for the run loop
            // to finish it could wait forever, and exiting hands the zombies to init.
            let reaper = reaping.try_reaper();
            let clean = cgroup::kill_live_runs(reaper.as_ref());
            kill_descendants();
            if !clean {
                crate::out::errln!(
                    "coldstart: some target processes may survive: check `ps -o pid,stat,cmd --ppid {}`",
                    std::process::id()
                );
            }
            std::process::exit(exit_code());
        }
    }
}

/// Every descendant of coldstart (its targets and, through the subreaper
/// attribute, their orphans), SIGKILLed until none is alive or ~2 s passed.
fn kill_descendants() {
    for _ in 0..400 {
        let live = procfs::members_of_self();
        if live.is_empty() {
            return;
        }
        for pid in live {
            // Descendants of coldstart are target processes (the watchdog is
            // not one: it was double-forked before the subreaper attribute).
            let _ = coldstart_sys::signal::kill(pid, libc::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// SIGKILL every run's process group and, where there are cgroups, every
/// process of every run.
fn kill_current() {
    cgroup::kill_all_runs_now();
    for slot in watchdog::groups() {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            // A process group we created for the current run.
            let _ = coldstart_sys::signal::kill_group(pgid, libc::SIGKILL);
        }
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The exit code after an interrupt: 128 + the first signal, as shells and
/// CI systems expect (SIGINT 130, SIGTERM 143, SIGHUP 129, SIGQUIT 131);
/// 130 when no signal was recorded.
pub fn exit_code() -> i32 {
    match FIRST_SIGNAL.load(Ordering::SeqCst) {
        0 => 130,
        sig => 128 + sig,
    }
}

/// Guard that registers one of the current run's process groups for the
/// handler and the watchdog.
pub struct Current {
    slot: Option<usize>,
}

impl Current {
    pub fn set(pgid: i32) -> Current {
        let slot = watchdog::groups().iter().position(|s| {
            s.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        });
        if interrupted() {
            // As in the handler; covers an interrupt that raced the spawn.
            let _ = coldstart_sys::signal::kill_group(pgid, libc::SIGKILL);
        }
        Current { slot }
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            watchdog::groups()[i].store(0, Ordering::SeqCst);
        }
    }
}
