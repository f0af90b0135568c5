//! Decoding: seccomp stops and syscall-exit stops turned into [`Event`]s. The
//! arguments come from `PTRACE_GET_SYSCALL_INFO` and tracee memory (procfs);
//! the result from the exit stop of the syscalls whose outcome matters.

use super::state::{Awaiting, Pending, Tracer};
use super::sys::{syscall_info, OP_EXIT, OP_SECCOMP};
use crate::{procfs, seccomp};
use crate::{Event, SockAddr, SocketRole};

/// Kernel-internal "restart me" errnos a syscall-exit stop can show; the
/// syscall is re-executed (and re-stops on seccomp) after the signal.
const ERESTART_FIRST: i64 = 512;
const ERESTART_LAST: i64 = 516;

impl Tracer {
    pub(super) fn on_seccomp(&mut self, tid: i32, now: u64) {
        let info = match syscall_info(tid) {
            Ok(i) => i,
            Err(libc::ESRCH) => return,
            Err(e) => {
                // EIO/EINVAL: a kernel without PTRACE_GET_SYSCALL_INFO (< 5.3).
                if self.warnings.is_empty() {
                    self.warnings.push(format!(
                        "PTRACE_GET_SYSCALL_INFO failed ({}): Linux 5.3 or newer is needed",
                        std::io::Error::from_raw_os_error(e)
                    ));
                }
                self.resume(tid, 0);
                return;
            }
        };
        if info.op != OP_SECCOMP || info.arch != seccomp::NATIVE_ARCH {
            self.resume(tid, 0);
            return;
        }
        let a = info.args;
        let nr = info.nr;
        let interrupted = self.tasks.get_mut(&tid).and_then(|t| t.interrupted.take());
        let start_ns = match interrupted {
            Some(i) if i.nr == nr => i.start_ns,
            _ => now,
        };
        let tgid = self.tasks.get(&tid).map_or(tid, |t| t.tgid);
        // Arguments in tracee memory are read *after* resuming where that is
        // safe, so the read overlaps the syscall's own work instead of adding
        // to the time the tracee is stopped: with PTRACE_SYSCALL the tracee
        // stays in the kernel until its exit stop, which we process only after
        // this function returns, and the kernel does not write these inputs.
        // Exceptions, read before: execve's path (exec replaces the memory)
        // and mmap's fd (ld.so closes it right after mapping).
        let pending = match nr {
            libc::SYS_execve => Some(Pending::Exec {
                path: self.path_arg(tid, libc::AT_FDCWD, a[0]),
            }),
            libc::SYS_execveat => {
                let path = if a[4] & libc::AT_EMPTY_PATH as u64 != 0 {
                    procfs::fd_target(tid, a[0] as i32).unwrap_or_default()
                } else {
                    self.path_arg(tid, a[0] as i32, a[1])
                };
                Some(Pending::Exec { path })
            }
            #[cfg(target_arch = "x86_64")]
            libc::SYS_open => Some(Pending::Open {
                path: String::new(),
                flags: a[1],
            }),
            libc::SYS_openat | libc::SYS_openat2 => Some(Pending::Open {
                path: String::new(),
                flags: a[2], // openat2: a pointer, replaced below
            }),
            libc::SYS_mmap => {
                // The filter only lets PROT_EXEC file mappings through.
                if let Some(path) = procfs::fd_target(tid, a[4] as i32) {
                    self.emit(now, tid, Event::MmapExec { path });
                }
                None
            }
            libc::SYS_connect => Some(Pending::Connect {
                fd: a[0] as i32,
                addr: None,
            }),
            libc::SYS_bind => Some(Pending::Bind {
                fd: a[0] as i32,
                addr: None,
            }),
            libc::SYS_listen => Some(Pending::Listen { fd: a[0] as i32 }),
            libc::SYS_accept | libc::SYS_accept4 => Some(Pending::Accept {
                listen_fd: a[0] as i32,
            }),
            libc::SYS_wait4 => Some(Pending::Wait {
                waitid: false,
                info: a[1],
                options: a[2],
            }),
            libc::SYS_waitid => Some(Pending::Wait {
                waitid: true,
                info: a[2],
                options: a[3],
            }),
            libc::SYS_write | libc::SYS_writev | libc::SYS_sendto | libc::SYS_sendmsg => {
                self.on_write(tid, tgid, a[0] as i32, now);
                None
            }
            _ => None,
        };
        let awaiting = pending.is_some();
        if let (Some(pending), Some(t)) = (pending, self.tasks.get_mut(&tid)) {
            t.awaiting = Some(Awaiting {
                nr,
                start_ns,
                pending,
            });
        }
        // PTRACE_SYSCALL when awaiting: the syscall-entry report has already
        // passed (ptrace reports entry before seccomp runs), so the next
        // syscall stop is this syscall's exit.
        self.resume(tid, 0);
        if awaiting {
            self.read_deferred(tid, nr, &a);
        }
    }

    /// Fill in the awaited syscall's arguments that live in tracee memory
    /// (see `on_seccomp` for why this is safe after resuming).
    fn read_deferred(&mut self, tid: i32, nr: i64, a: &[u64; 6]) {
        let (path, sockaddr, how_flags) = match nr {
            #[cfg(target_arch = "x86_64")]
            libc::SYS_open => (Some(self.path_arg(tid, libc::AT_FDCWD, a[0])), None, None),
            libc::SYS_openat => (Some(self.path_arg(tid, a[0] as i32, a[1])), None, None),
            libc::SYS_openat2 => {
                // struct open_how { u64 flags; u64 mode; u64 resolve; }
                let mut how = [0u8; 8];
                let flags = (procfs::read_mem(tid, a[2], &mut how) == 8).then(|| u64::from_ne_bytes(how));
                (
                    Some(self.path_arg(tid, a[0] as i32, a[1])),
                    None,
                    Some(flags.unwrap_or(0)),
                )
            }
            libc::SYS_connect | libc::SYS_bind => (None, procfs::read_sockaddr(tid, a[1], a[2]), None),
            _ => return,
        };
        let Some(aw) = self.tasks.get_mut(&tid).and_then(|t| t.awaiting.as_mut()) else {
            return;
        };
        match &mut aw.pending {
            Pending::Open { path: p, flags } => {
                if let Some(path) = path {
                    *p = path;
                }
                if let Some(f) = how_flags {
                    *flags = f;
                }
            }
            Pending::Connect { addr, .. } | Pending::Bind { addr, .. } => *addr = sockaddr,
            _ => {}
        }
    }

    /// The first write on a socket accepted or connected in progress: the
    /// first response (accepted) or request (connected) on it.
    fn on_write(&mut self, tid: i32, tgid: i32, fd: i32, now: u64) {
        let role = self.procs.get_mut(&tgid).and_then(|p| {
            if p.accepted.remove(&fd) {
                Some(SocketRole::Accepted)
            } else if p.connecting.remove(&fd) {
                Some(SocketRole::Connected)
            } else {
                None
            }
        });
        if let Some(role) = role {
            self.emit(now, tid, Event::FirstWrite { fd, role });
            if role == SocketRole::Accepted {
                self.shared.update(|s| {
                    s.status.first_response.get_or_insert(now);
                });
            }
        }
    }

    /// A successful listen: its address, the port in the shared status. True
    /// when the tracee was resumed here (before the slow lookup).
    fn on_listen(&mut self, tid: i32, tgid: i32, fd: i32, start: u64) -> bool {
        let mut resumed = false;
        // The socket's own name has the real port even if it was bound
        // to 0. Asked while the tracee is still stopped, so `fd` is
        // still this socket; that lookup takes microseconds.
        let inode = procfs::socket_inode(tid, fd);
        let mut addr = inode.and_then(|ino| procfs::socket_name(tgid, fd, ino));
        if addr.is_none() {
            // Fallback: the /proc/net tables take milliseconds to read
            // (the kernel walks its whole TCP hash), which held a Go
            // server stopped between listen and accept for ~5-10 ms.
            // Let the tracee go first; the inode names the socket even
            // if the fd number is reused meanwhile.
            self.resume(tid, 0);
            resumed = true;
            addr = inode
                .and_then(|ino| procfs::socket_local_addr(tid, ino))
                .or_else(|| self.procs.get(&tgid).and_then(|p| p.bound.get(&fd).cloned()));
        }
        self.emit(
            start,
            tid,
            Event::Listen {
                fd,
                addr: addr.clone(),
            },
        );
        self.shared.update(|s| {
            if let Some(SockAddr::Inet { port, .. }) = &addr {
                s.status.listen_ports.push(*port);
            }
            s.status.first_listen.get_or_insert((start, addr));
        });
        resumed
    }

    fn path_arg(&self, tid: i32, dirfd: i32, addr: u64) -> String {
        let raw = procfs::read_cstr(tid, addr).unwrap_or_default();
        if raw.is_empty() {
            return raw;
        }
        procfs::resolve_at(tid, dirfd, raw)
    }

    pub(super) fn on_syscall_exit(&mut self, tid: i32, now: u64) {
        let info = match syscall_info(tid) {
            Ok(i) => i,
            Err(_) => {
                self.resume(tid, 0);
                return;
            }
        };
        if info.op != OP_EXIT {
            // An entry stop means our awaited syscall is not what this is
            // about (should not happen); keep waiting for an exit.
            self.resume(tid, 0);
            return;
        }
        let Some(aw) = self.tasks.get_mut(&tid).and_then(|t| t.awaiting.take()) else {
            self.resume(tid, 0);
            return;
        };
        let errno = if info.is_error { (-info.rval) as i32 } else { 0 };
        if info.is_error && (ERESTART_FIRST..=ERESTART_LAST).contains(&-info.rval) {
            // Interrupted by a signal; the kernel will re-execute it.
            if let Some(t) = self.tasks.get_mut(&tid) {
                t.interrupted = Some(aw);
            }
            self.resume(tid, 0);
            return;
        }
        let ok = !info.is_error;
        let tgid = self.tasks.get(&tid).map_or(tid, |t| t.tgid);
        let start = aw.start_ns;
        let mut resumed = false;
        match aw.pending {
            Pending::Exec { path } => {
                // Success is reported by PTRACE_EVENT_EXEC, so this is a failure.
                self.emit(start, tid, Event::ExecFailed { path, errno });
            }
            Pending::Open { path, flags } => {
                self.emit(
                    start,
                    tid,
                    Event::Open {
                        path,
                        ok,
                        errno,
                        flags,
                    },
                );
            }
            Pending::Connect { fd, addr } => {
                if errno == libc::EINPROGRESS {
                    if let Some(p) = self.procs.get_mut(&tgid) {
                        p.connecting.insert(fd);
                    }
                }
                let dur_ns = now.saturating_sub(start);
                self.emit(
                    start,
                    tid,
                    Event::Connect {
                        fd,
                        addr,
                        ok,
                        errno,
                        dur_ns,
                    },
                );
            }
            Pending::Bind { fd, addr } => {
                if let (true, Some(a), Some(p)) = (ok, &addr, self.procs.get_mut(&tgid)) {
                    p.bound.insert(fd, a.clone());
                }
                self.emit(start, tid, Event::Bind { fd, addr, ok, errno });
            }
            Pending::Listen { fd } if ok => resumed = self.on_listen(tid, tgid, fd, start),
            Pending::Listen { .. } => {}
            Pending::Wait {
                waitid,
                info: ptr,
                options,
            } if ok => {
                if let Some(child) = waited_child(tid, waitid, ptr, options, info.rval) {
                    let dur_ns = now.saturating_sub(start);
                    self.emit(start, tid, Event::Wait { child, dur_ns });
                }
            }
            Pending::Wait { .. } => {}
            Pending::Accept { listen_fd } => {
                if ok {
                    let fd = info.rval as i32;
                    if let Some(p) = self.procs.get_mut(&tgid) {
                        p.accepted.insert(fd);
                    }
                    self.emit(now, tid, Event::Accept { listen_fd, fd });
                }
            }
        }
        if !resumed {
            self.resume(tid, 0);
        }
    }
}

/// The child whose end a successful wait4/waitid returned (the tracee is
/// stopped at the call's exit, so its outputs are written); `None` when it
/// returned none (WNOHANG) or a stop/continue rather than an end.
fn waited_child(tid: i32, waitid: bool, ptr: u64, options: u64, rval: i64) -> Option<i32> {
    let word = |off: u64| {
        let mut b = [0u8; 4];
        (procfs::read_mem(tid, ptr + off, &mut b) == 4).then(|| i32::from_ne_bytes(b))
    };
    if waitid {
        // siginfo_t: si_code at 8, and for SIGCHLD si_pid at 16 (64-bit ABIs).
        let code = word(8)?;
        let pid = word(16)?;
        let ended = matches!(code, libc::CLD_EXITED | libc::CLD_KILLED | libc::CLD_DUMPED);
        return (ended && pid > 0).then_some(pid);
    }
    let pid = i32::try_from(rval).ok().filter(|&p| p > 0)?;
    let ended = match (ptr != 0).then(|| word(0)).flatten() {
        Some(status) => libc::WIFEXITED(status) || libc::WIFSIGNALED(status),
        // No status asked for: an end unless stops or continues were asked for.
        None => options & (libc::WUNTRACED | libc::WCONTINUED) as u64 == 0,
    };
    ended.then_some(pid)
}
