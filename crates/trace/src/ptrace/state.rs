//! The state machine: the tasks and processes of the traced tree, and the
//! `waitpid` loop that dispatches each stop (see the table in the module above).

use super::spawn::{child_error_message, spawn, Prepared};
use super::sys::{errno, geteventmsg, ptrace, wait_next};
use super::{Collected, Started};
use crate::procfs;
use crate::{Event, Shared, SockAddr, TraceEvent};
use anyhow::{anyhow, bail, Context, Result};
use coldstart_sys::clock::now_ns;
use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;

/// Not in the libc crate for glibc targets.
const PTRACE_EVENT_STOP: i32 = 128;

// ---------------------------------------------------------------------------
// Tracer state

/// A syscall whose exit stop we are waiting for.
#[derive(Debug)]
pub(super) enum Pending {
    Exec {
        path: String,
    },
    Open {
        path: String,
        flags: u64,
    },
    Connect {
        fd: i32,
        addr: Option<SockAddr>,
    },
    Bind {
        fd: i32,
        addr: Option<SockAddr>,
    },
    Listen {
        fd: i32,
    },
    Accept {
        listen_fd: i32,
    },
    /// wait4 (`info` its status pointer, `options` its options) or waitid
    /// (`info` its siginfo pointer).
    Wait {
        waitid: bool,
        info: u64,
        options: u64,
    },
}

#[derive(Debug)]
pub(super) struct Awaiting {
    pub(super) nr: i64,
    pub(super) start_ns: u64,
    pub(super) pending: Pending,
}

#[derive(Debug)]
pub(super) struct Task {
    pub(super) tgid: i32,
    /// No stop seen yet: its first `PTRACE_EVENT_STOP` is the attach stop.
    pub(super) fresh: bool,
    pub(super) awaiting: Option<Awaiting>,
    /// A syscall interrupted by a signal (ERESTART*), re-executed next: keeps
    /// its original start time.
    pub(super) interrupted: Option<Awaiting>,
    /// Time of the `PTRACE_EVENT_EXIT` stop.
    pub(super) exit_ns: Option<u64>,
}

/// Per-process (thread group) socket bookkeeping.
#[derive(Debug, Default, Clone)]
pub(super) struct Proc {
    pub(super) bound: HashMap<i32, SockAddr>,
    pub(super) accepted: HashSet<i32>,
    /// Sockets whose connect returned EINPROGRESS.
    pub(super) connecting: HashSet<i32>,
}

pub(super) struct Tracer {
    pub(super) root: i32,
    pub(super) t0_ns: u64,
    pub(super) program: String,
    pub(super) shared: Arc<Shared>,
    pub(super) tasks: HashMap<i32, Task>,
    pub(super) procs: HashMap<i32, Proc>,
    /// Tasks whose death we saw before learning who created them.
    pub(super) died_unknown: HashSet<i32>,
    pub(super) events: Vec<TraceEvent>,
    pub(super) warnings: Vec<String>,
    pub(super) started: Option<SyncSender<Result<Started>>>,
    pub(super) err_pipe: OwnedFd,
    /// Handed to the session with `Started`.
    pub(super) root_pidfd: Option<OwnedFd>,
    pub(super) last_ns: u64,
    /// The root's wait4 usage once it was reaped.
    pub(super) root_usage: Option<crate::RootUsage>,
    /// Every ptrace stop, in the order seen.
    pub(super) stops: Vec<crate::Stop>,
    /// Main threads' CPU accounting at their phase boundaries.
    pub(super) cpu: Vec<crate::CpuReading>,
}

/// The tracer thread's body: spawn, report the start, trace to the end.
pub(crate) fn run(
    prep: Prepared,
    shared: Arc<Shared>,
    started: SyncSender<Result<Started>>,
) -> Result<Collected> {
    let spawned = spawn(&prep);
    let (root, t0_ns, err_pipe, root_pidfd) = match spawned {
        Ok(s) => s,
        Err(e) => {
            let msg = format!("{e:#}");
            let _ = started.send(Err(e));
            bail!(msg);
        }
    };
    let mut tracer = Tracer {
        root,
        t0_ns,
        program: prep.program_display.clone(),
        shared,
        tasks: HashMap::new(),
        procs: HashMap::new(),
        died_unknown: HashSet::new(),
        events: Vec::with_capacity(1024),
        warnings: Vec::new(),
        root_usage: None,
        stops: Vec::with_capacity(1024),
        cpu: Vec::with_capacity(256),
        started: Some(started),
        err_pipe,
        root_pidfd,
        last_ns: t0_ns,
    };
    drop(prep);
    tracer.add_task(root, root, false);
    let result = tracer.run_loop();
    tracer.shared.update(|s| {
        s.status.exited = true;
        s.live.clear();
    });
    if let Some(tx) = tracer.started.take() {
        let _ = tx.send(Err(anyhow!("{} ended before it could be traced", tracer.program)));
    }
    result?;
    // Exit events carry their earlier PTRACE_EVENT_EXIT time and accepts their
    // exit time: a stable sort puts everything in time order.
    tracer.events.sort_by_key(|e| e.ts_ns);
    Ok(Collected {
        end_ns: tracer.last_ns,
        events: tracer.events,
        warnings: tracer.warnings,
        root_usage: tracer.root_usage,
        stops: tracer.stops,
        cpu: tracer.cpu,
    })
}

impl Tracer {
    pub(super) fn emit(&mut self, ts_ns: u64, tid: i32, event: Event) {
        let pid = self.tasks.get(&tid).map_or(tid, |t| t.tgid);
        if matches!(
            event,
            Event::Exec { .. } | Event::MmapExec { .. } | Event::Listen { .. }
        ) {
            // The instants phases start and end at (a final exec, the loader's
            // last mapping, a listen): what the process did in between.
            self.read_cpu(pid);
        }
        self.events.push(TraceEvent {
            ts_ns,
            pid,
            tid,
            event,
        });
    }

    /// Record `pid`'s main thread's CPU accounting now (one small procfs read).
    pub(super) fn read_cpu(&mut self, pid: i32) {
        if let Some((run_ns, wait_ns)) = procfs::schedstat(pid) {
            let (tracer_run_ns, tracer_wait_ns) = procfs::own_schedstat().unwrap_or((0, 0));
            self.cpu.push(crate::CpuReading {
                ts_ns: now_ns(),
                pid,
                run_ns,
                wait_ns,
                tracer_run_ns,
                tracer_wait_ns,
            });
        }
    }

    fn add_task(&mut self, tid: i32, tgid: i32, fresh: bool) {
        self.tasks.insert(
            tid,
            Task {
                tgid,
                fresh,
                awaiting: None,
                interrupted: None,
                exit_ns: None,
            },
        );
        if let std::collections::hash_map::Entry::Vacant(slot) = self.procs.entry(tgid) {
            slot.insert(Proc::default());
            self.shared.update(|s| {
                s.live.insert(tgid);
            });
            if self.shared.kill.load(Ordering::SeqCst) {
                // Born after the caller asked for the tree to die.
                let _ = coldstart_sys::signal::kill(tgid, libc::SIGKILL);
            }
        }
    }

    fn run_loop(&mut self) -> Result<()> {
        loop {
            let mut status = 0;
            // SAFETY: all-zero is a valid rusage (plain integers and timevals).
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            let tid = wait_next(&mut status, &mut usage);
            if tid < 0 {
                match errno() {
                    libc::EINTR => continue,
                    libc::ECHILD => return Ok(()), // no tracee and no child left
                    e => return Err(std::io::Error::from_raw_os_error(e)).context("waitpid"),
                }
            }
            let now = now_ns();
            self.last_ns = self.last_ns.max(now);
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                if tid == self.root {
                    // The root process, reaped: its resource use (and that of the
                    // children it waited for), as wait4 gives it to a plain parent.
                    self.root_usage = Some(crate::RootUsage::from_rusage(&usage));
                }
                let pid = self.tasks.get(&tid).map_or(tid, |t| t.tgid);
                self.on_death(tid, status, now);
                // A traced process's death reaches its parent only once we
                // collected it: one more round trip for a parent that waits.
                if pid == tid {
                    let held_ns = now_ns().saturating_sub(now).min(u64::from(u32::MAX)) as u32;
                    self.stops.push(crate::Stop {
                        ts_ns: now,
                        pid,
                        held_ns,
                    });
                }
                continue;
            }
            if !libc::WIFSTOPPED(status) {
                continue;
            }
            if !self.tasks.contains_key(&tid) {
                // Its first stop came before its parent's fork/clone event.
                let tgid = procfs::tgid(tid).unwrap_or(tid);
                self.add_task(tid, tgid, true);
            }
            if (status >> 16) & 0xffff == libc::PTRACE_EVENT_EXIT {
                // The last moment its name can be read (threads name themselves
                // after they start; the name is gone with the task).
                if let Some(name) = procfs::comm(tid) {
                    self.shared.update(|s| {
                        s.names.insert(tid, name);
                    });
                }
            }
            if self.shared.kill.load(Ordering::SeqCst) {
                // Killing: no more events, just let every task die. SIGKILL
                // takes effect even from a ptrace stop, and kills the whole
                // thread group (signalled through its tgid).
                let tgid = self.tasks.get(&tid).map_or(tid, |t| t.tgid);
                let _ = coldstart_sys::signal::kill(tgid, libc::SIGKILL);
                let _ = ptrace(libc::PTRACE_CONT, tid, 0, 0);
                continue;
            }
            let sig = libc::WSTOPSIG(status);
            let event = (status >> 16) & 0xffff;
            let was_fresh = self
                .tasks
                .get_mut(&tid)
                .is_some_and(|t| std::mem::replace(&mut t.fresh, false));
            let pid = self.tasks.get(&tid).map_or(tid, |t| t.tgid);
            self.dispatch(tid, sig, event, was_fresh, now);
            // How long this stop held the task on our side (decoding, procfs
            // reads): the part of a stop's cost that varies by kind; the
            // kernel's round trip is the rest (explain calibrates it).
            let held_ns = now_ns().saturating_sub(now).min(u64::from(u32::MAX)) as u32;
            self.stops.push(crate::Stop {
                ts_ns: now,
                pid,
                held_ns,
            });
        }
    }

    fn dispatch(&mut self, tid: i32, sig: i32, event: i32, was_fresh: bool, now: u64) {
        match event {
            0 if sig == (libc::SIGTRAP | 0x80) => self.on_syscall_exit(tid, now),
            0 => {
                // Signal-delivery stop: the signal is delivered only if we
                // pass it back when resuming.
                self.resume(tid, sig);
            }
            libc::PTRACE_EVENT_SECCOMP => self.on_seccomp(tid, now),
            libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK | libc::PTRACE_EVENT_CLONE => {
                self.on_new_child(tid, event, now)
            }
            libc::PTRACE_EVENT_EXEC => self.on_exec(tid, now),
            libc::PTRACE_EVENT_EXIT => {
                if let Some(t) = self.tasks.get_mut(&tid) {
                    t.exit_ns = Some(now);
                }
                if self.tasks.get(&tid).is_some_and(|t| t.tgid == tid) {
                    // The end of a process that never listens (`--ready exit`).
                    self.read_cpu(tid);
                }
                self.resume(tid, 0);
            }
            PTRACE_EVENT_STOP => {
                let stop_sig = matches!(sig, libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU);
                if stop_sig && !was_fresh {
                    // Group-stop (a seized tracee reports it this way).
                    // LISTEN keeps it stopped like an untraced process
                    // would be, and we hear about the SIGCONT.
                    let _ = ptrace(libc::PTRACE_LISTEN, tid, 0, 0);
                } else {
                    // The attach stop of a new task, or an interrupt.
                    self.resume(tid, 0);
                }
            }
            _ => self.resume(tid, 0),
        }
    }

    /// Resume `tid`, delivering `sig`. PTRACE_SYSCALL while we wait for the
    /// exit of a syscall (even across a signal stop), PTRACE_CONT otherwise:
    /// CONT also turns syscall stops off again.
    pub(super) fn resume(&mut self, tid: i32, sig: i32) {
        let req = match self.tasks.get(&tid) {
            Some(t) if t.awaiting.is_some() => libc::PTRACE_SYSCALL,
            _ => libc::PTRACE_CONT,
        };
        // ESRCH: killed meanwhile; waitpid will report it.
        let _ = ptrace(req, tid, 0, sig as usize);
    }

    fn on_death(&mut self, tid: i32, status: i32, now: u64) {
        let Some(task) = self.tasks.remove(&tid) else {
            // A task that died before its creator's event told us of it.
            self.died_unknown.insert(tid);
            return;
        };
        let (code, signal) = if libc::WIFEXITED(status) {
            (Some(libc::WEXITSTATUS(status)), None)
        } else {
            (None, Some(libc::WTERMSIG(status)))
        };
        let ts = task.exit_ns.unwrap_or(now);
        self.events.push(TraceEvent {
            ts_ns: ts,
            pid: task.tgid,
            tid,
            event: Event::Exit { code, signal },
        });
        if tid == task.tgid {
            // The leader is reported last, once every thread is gone.
            self.procs.remove(&tid);
            self.shared.update(|s| {
                s.live.remove(&tid);
            });
        }
        if tid == self.root {
            self.shared.update(|s| s.status.root_exit = Some((code, signal)));
            if let Some(tx) = self.started.take() {
                // The root died before exec: the child wrote why (or was killed).
                let _ = tx.send(Err(anyhow!(self.child_error().unwrap_or_else(|| format!(
                    "{} ended before exec ({})",
                    self.program,
                    describe_status(status)
                )))));
            }
        }
    }

    fn child_error(&self) -> Option<String> {
        let mut msg = [0u8; 8];
        // SAFETY: non-blocking read of up to 8 bytes into our buffer.
        let n = unsafe { libc::read(self.err_pipe.as_raw_fd(), msg.as_mut_ptr().cast(), 8) };
        if n != 8 {
            return None;
        }
        let stage = u32::from_ne_bytes(msg[..4].try_into().ok()?);
        let e = i32::from_ne_bytes(msg[4..].try_into().ok()?);
        Some(child_error_message(&self.program, stage, e))
    }

    fn on_new_child(&mut self, tid: i32, event: i32, now: u64) {
        let Some(child) = geteventmsg(tid).map(|c| c as i32) else {
            self.resume(tid, 0);
            return;
        };
        let parent_tgid = self.tasks.get(&tid).map_or(tid, |t| t.tgid);
        let thread = match self.tasks.get(&child) {
            // Its attach stop came first and we read its tgid then.
            Some(t) => t.tgid != child,
            // CLONE without CLONE_THREAD is possible (e.g. posix_spawn's
            // CLONE_VM|CLONE_VFORK shows as VFORK, but raw clone() callers exist).
            None if event == libc::PTRACE_EVENT_CLONE => procfs::is_thread_of(parent_tgid, child),
            None => false,
        };
        if !self.tasks.contains_key(&child) && !self.died_unknown.remove(&child) {
            let tgid = if thread { parent_tgid } else { child };
            self.add_task(child, tgid, true);
        }
        if !thread {
            // A fork copies the fd table: inherited listening sockets keep their
            // bound address; accepted sockets are the parent's business.
            if let Some(bound) = self.procs.get(&parent_tgid).map(|p| p.bound.clone()) {
                if let Some(p) = self.procs.get_mut(&child) {
                    p.bound = bound;
                }
            }
        }
        self.emit(now, tid, Event::Clone { child, thread });
        self.resume(tid, 0);
    }

    fn on_exec(&mut self, tid: i32, now: u64) {
        // A non-leader thread that execs takes over the leader's tid; the event
        // message is its former tid. Its pending execve moves with it, and the
        // old tid is gone without an exit report. The old leader's death is not
        // reported either (it may have had an EXIT stop: forget that).
        let former = geteventmsg(tid).map_or(tid, |f| f as i32);
        let mut moved = None;
        if former != tid {
            if let Some(old) = self.tasks.remove(&former) {
                moved = old.awaiting;
            }
        }
        if !self.tasks.contains_key(&tid) {
            self.add_task(tid, tid, false);
        }
        let awaiting = match self.tasks.get_mut(&tid) {
            Some(t) => {
                t.exit_ns = None;
                t.interrupted = None;
                moved.or_else(|| t.awaiting.take())
            }
            None => moved,
        };
        let path = match awaiting.map(|a| a.pending) {
            Some(Pending::Exec { path }) => Some(path),
            _ => None,
        };
        let exe = procfs::exe(tid).unwrap_or_default();
        let path = path.unwrap_or_else(|| exe.clone());
        let argv = procfs::argv(tid).unwrap_or_default();
        let argv0 = argv.first().cloned().unwrap_or_default();
        if let Ok(md) = std::fs::metadata(&exe) {
            use std::os::unix::fs::MetadataExt;
            if md.mode() & (libc::S_ISUID | libc::S_ISGID) != 0 {
                self.warnings.push(format!(
                    "{exe} is setuid/setgid: it ran without those privileges under the tracer"
                ));
            }
        }
        if let Some(p) = self.procs.get_mut(&tid) {
            // close-on-exec sockets are gone; listening ones often survive.
            p.accepted.clear();
            p.connecting.clear();
        }
        self.emit(
            now,
            tid,
            Event::Exec {
                path,
                exe,
                argv0,
                argv,
            },
        );
        if tid == self.root {
            if let Some(tx) = self.started.take() {
                let _ = tx.send(Ok(Started {
                    root_pid: self.root,
                    t0_ns: self.t0_ns,
                    pidfd: self.root_pidfd.take(),
                }));
            }
        }
        // CONT (awaiting is cleared): skip execve's syscall-exit stop.
        self.resume(tid, 0);
    }
}

fn describe_status(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exit status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("status {status:#x}")
    }
}
