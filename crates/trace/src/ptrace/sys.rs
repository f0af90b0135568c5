//! The raw ptrace(2) and waitpid(2) calls the tracer makes, each wrapped once.

/// `struct ptrace_syscall_info.op` values.
pub(super) const OP_ENTRY: u8 = 1;
pub(super) const OP_EXIT: u8 = 2;
pub(super) const OP_SECCOMP: u8 = 3;

pub(super) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// ptrace(2) with integer addr/data. Err(errno) on failure.
pub(super) fn ptrace(req: libc::c_uint, tid: i32, addr: usize, data: usize) -> Result<libc::c_long, i32> {
    // SAFETY: the requests used with this wrapper (SEIZE, CONT, SYSCALL, LISTEN)
    // take integers, not pointers, in addr/data.
    let r = unsafe { libc::ptrace(req, tid, addr as *mut libc::c_void, data as *mut libc::c_void) };
    if r == -1 {
        Err(errno())
    } else {
        Ok(r)
    }
}

/// The next stop or death of a tracee (waitpid semantics).
///
/// __WALL: threads (clone children) too. __WNOTHREAD: only our own
/// children and tracees, never a child another thread of coldstart
/// started (or a subreaped orphan we do not trace).
pub(super) fn wait_next(status: &mut i32, usage: &mut libc::rusage) -> i32 {
    // SAFETY: wait4 writes the status and the reaped task's resource use into
    // the caller's locals (the usage is filled only when a task is reaped).
    unsafe { libc::wait4(-1, status, libc::__WALL | libc::__WNOTHREAD, usage) }
}

/// Wait for the tracee `pid` to end (or stop), discarding the status.
pub(super) fn wait_for(pid: i32) -> i32 {
    // SAFETY: a null status pointer: waitpid writes nothing.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::__WALL) }
}

pub(super) fn geteventmsg(tid: i32) -> Option<u64> {
    let mut msg: libc::c_ulong = 0;
    // SAFETY: GETEVENTMSG writes one unsigned long to `data`.
    let r = unsafe {
        libc::ptrace(
            libc::PTRACE_GETEVENTMSG,
            tid,
            std::ptr::null_mut::<libc::c_void>(),
            &mut msg as *mut libc::c_ulong,
        )
    };
    (r != -1).then_some(msg as u64)
}

/// The syscall a task is stopped in (kernel >= 5.3).
pub(super) struct SyscallInfo {
    pub op: u8,
    pub arch: u32,
    pub nr: i64,
    pub args: [u64; 6],
    /// Exit stops: return value (negative errno on error).
    pub rval: i64,
    pub is_error: bool,
}

pub(super) fn syscall_info(tid: i32) -> Result<SyscallInfo, i32> {
    // SAFETY: an all-zero ptrace_syscall_info is valid (plain integers).
    let mut info: libc::ptrace_syscall_info = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::ptrace_syscall_info>();
    // SAFETY: the kernel writes at most `size` bytes into `info`.
    let r = unsafe {
        libc::ptrace(
            libc::PTRACE_GET_SYSCALL_INFO,
            tid,
            size as *mut libc::c_void,
            &mut info as *mut libc::ptrace_syscall_info,
        )
    };
    if r == -1 {
        return Err(errno());
    }
    let mut out = SyscallInfo {
        op: info.op,
        arch: info.arch,
        nr: -1,
        args: [0; 6],
        rval: 0,
        is_error: false,
    };
    // SAFETY: `op` says which union member the kernel filled in.
    unsafe {
        match info.op {
            OP_SECCOMP => {
                out.nr = info.u.seccomp.nr as i64;
                out.args = info.u.seccomp.args;
            }
            OP_ENTRY => {
                out.nr = info.u.entry.nr as i64;
                out.args = info.u.entry.args;
            }
            OP_EXIT => {
                out.rval = info.u.exit.sval;
                out.is_error = info.u.exit.is_error != 0;
            }
            _ => {}
        }
    }
    Ok(out)
}
