//! Starting the root tracee: [`Prepared`] holds everything the child needs, built
//! before the fork; [`child`] is the forked child's async-signal-safe setup and
//! exec; [`spawn`] forks, seizes the child with our options and releases it.

use super::sys::ptrace;
use crate::seccomp;
use crate::{StopWhen, TraceOptions};
use anyhow::{anyhow, bail, Context, Result};
use coldstart_sys::clock::now_ns;
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

const OPTIONS: libc::c_int = libc::PTRACE_O_TRACESYSGOOD // syscall stops: SIGTRAP|0x80
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_TRACEEXEC // exec -> PTRACE_EVENT_EXEC, not a bare SIGTRAP
    | libc::PTRACE_O_TRACEEXIT
    | libc::PTRACE_O_TRACESECCOMP
    | libc::PTRACE_O_EXITKILL; // if the tracer dies, the tracees die too

/// Everything the child needs, built before the fork: after fork() in a
/// multi-threaded process the child may only make async-signal-safe calls, so
/// it must not allocate.
pub(crate) struct Prepared {
    program: CString,
    pub(super) program_display: String,
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    _envp: Vec<CString>,
    envp_ptrs: Vec<*const libc::c_char>,
    cwd: Option<CString>,
    filter: Vec<libc::sock_filter>,
    devnull: OwnedFd,
    output: Option<OwnedFd>,
    /// The run cgroup's `cgroup.procs`, entered before the exec.
    cgroup_procs: Vec<(OwnedFd, bool)>,
}

// SAFETY: the raw pointers point into the CStrings owned by the same struct
// (heap buffers that do not move when the struct does); nothing else aliases them.
unsafe impl Send for Prepared {}

fn cstring(s: impl Into<Vec<u8>>, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| anyhow!("{what} contains a NUL byte"))
}

impl Prepared {
    pub(crate) fn new(opts: &TraceOptions) -> Result<Prepared> {
        if seccomp::NATIVE_ARCH == 0 {
            bail!("tracing is only supported on x86_64 and aarch64");
        }
        if opts.argv.is_empty() {
            bail!("no command to trace");
        }
        let program = cstring(opts.program.as_os_str().as_bytes(), "the program path")?;
        let argv = opts
            .argv
            .iter()
            .map(|a| cstring(a.as_str(), "an argument"))
            .collect::<Result<Vec<_>>>()?;
        let mut env: Vec<(Vec<u8>, Vec<u8>)> = std::env::vars_os()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect();
        for (k, v) in &opts.env {
            env.retain(|(ek, _)| ek.as_slice() != k.as_bytes());
            env.push((k.as_bytes().to_vec(), v.as_bytes().to_vec()));
        }
        let envp = env
            .into_iter()
            .map(|(mut k, v)| {
                k.push(b'=');
                k.extend_from_slice(&v);
                cstring(k, "an environment variable")
            })
            .collect::<Result<Vec<_>>>()?;
        let cwd = match &opts.cwd {
            Some(dir) => Some(cstring(dir.as_os_str().as_bytes(), "the working directory")?),
            None => None,
        };
        // Read-write: it also stands in for stdout/stderr.
        let devnull = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .context("opening /dev/null")?
            .into();
        let output = match &opts.output {
            Some(fd) => Some(fd.try_clone().context("duplicating the output fd")?),
            None => None,
        };
        let mut argv_ptrs: Vec<_> = argv.iter().map(|a| a.as_ptr()).collect();
        argv_ptrs.push(std::ptr::null());
        let mut envp_ptrs: Vec<_> = envp.iter().map(|a| a.as_ptr()).collect();
        envp_ptrs.push(std::ptr::null());
        Ok(Prepared {
            program,
            program_display: opts.program.display().to_string(),
            _argv: argv,
            argv_ptrs,
            _envp: envp,
            envp_ptrs,
            cwd,
            // Writes are traced only where they can matter (first response,
            // usable time of non-blocking connects); at StopWhen::Listen the
            // run ends before any accept.
            filter: seccomp::build(opts.stop_when != StopWhen::Listen),
            devnull,
            output,
            cgroup_procs: opts
                .cgroup_procs
                .iter()
                .map(|c| {
                    Ok((
                        c.procs.try_clone().context("duplicating a cgroup.procs fd")?,
                        c.required,
                    ))
                })
                .collect::<Result<_>>()?,
        })
    }
}

const STAGE_CHDIR: u32 = 1;
const STAGE_NNP: u32 = 2;
const STAGE_SECCOMP: u32 = 3;
const STAGE_EXEC: u32 = 4;
const STAGE_SETUP: u32 = 5;

fn pipe_cloexec() -> Result<(OwnedFd, OwnedFd)> {
    coldstart_sys::pipe::pipe(false).context("pipe2")
}

/// Report `stage` and errno on `err_fd` and exit. Async-signal-safe.
unsafe fn child_fail(err_fd: RawFd, stage: u32) -> ! {
    let e = *libc::__errno_location();
    let mut msg = [0u8; 8];
    msg[..4].copy_from_slice(&stage.to_ne_bytes());
    msg[4..].copy_from_slice(&e.to_ne_bytes());
    libc::write(err_fd, msg.as_ptr().cast(), msg.len());
    libc::_exit(127)
}

/// Make `dst` a non-close-on-exec copy of `src`. dup2 clears FD_CLOEXEC on
/// the copy, except when `src == dst` (it does nothing then). Async-signal-safe.
unsafe fn dup_onto(src: RawFd, dst: RawFd) -> bool {
    if src == dst {
        libc::fcntl(dst, libc::F_SETFD, 0) == 0
    } else {
        libc::dup2(src, dst) == dst
    }
}

/// The child between fork and execve. Only async-signal-safe calls, no
/// allocation, no panics: `p` was fully built before the fork.
unsafe fn child(p: &Prepared, go: RawFd, err: RawFd) -> ! {
    // First wait until the tracer has seized us, before anything that can fail:
    // a child that exited before the seize would make PTRACE_SEIZE fail with
    // ESRCH and hide the real error. (It also has to happen before the filter:
    // a SECCOMP_RET_TRACE syscall made while no tracer with
    // PTRACE_O_TRACESECCOMP is attached fails with ENOSYS.)
    let mut b = 0u8;
    loop {
        let r = libc::read(go, (&mut b as *mut u8).cast(), 1);
        if r == 1 {
            break;
        }
        if r < 0 && *libc::__errno_location() == libc::EINTR {
            continue;
        }
        libc::_exit(127); // the tracer gave up (EOF)
    }
    // Own process group: terminal Ctrl-C reaches coldstart only, and the tree
    // can be signalled as a group.
    libc::setpgid(0, 0);
    let null = p.devnull.as_raw_fd();
    let out = p.output.as_ref().map_or(null, |f| f.as_raw_fd());
    if !dup_onto(null, 0) || !dup_onto(out, 1) || !dup_onto(out, 2) {
        child_fail(err, STAGE_SETUP);
    }
    // Start the program in a standard signal state: Rust ignores SIGPIPE, and
    // the tracer thread's mask is inherited across fork (exec keeps both).
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    if let Some(cwd) = &p.cwd {
        if libc::chdir(cwd.as_ptr()) != 0 {
            child_fail(err, STAGE_CHDIR);
        }
    }
    // Required to install a filter without CAP_SYS_ADMIN.
    if coldstart_sys::process::set_no_new_privs().is_err() {
        child_fail(err, STAGE_NNP);
    }
    let prog = seccomp::fprog(&p.filter);
    if let Err(e) = seccomp::install(&prog) {
        *libc::__errno_location() = e;
        child_fail(err, STAGE_SECCOMP);
    }
    libc::execve(p.program.as_ptr(), p.argv_ptrs.as_ptr(), p.envp_ptrs.as_ptr());
    child_fail(err, STAGE_EXEC)
}

fn ptrace_denied_message(e: i32) -> String {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .map(|s| s.trim().to_string())
        .ok();
    let mut msg = format!(
        "cannot trace: ptrace(PTRACE_SEIZE) was refused ({})",
        std::io::Error::from_raw_os_error(e)
    );
    match scope.as_deref() {
        Some("3") => {
            msg.push_str("; /proc/sys/kernel/yama/ptrace_scope is 3, which forbids ptrace until reboot")
        }
        Some(s @ ("1" | "2")) if e == libc::EPERM => msg.push_str(&format!(
            "; Yama ptrace_scope is {s}: run as root or give coldstart CAP_SYS_PTRACE"
        )),
        _ if e == libc::EPERM => msg.push_str(
            "; in a container, ptrace needs CAP_SYS_PTRACE and a seccomp profile that allows it \
             (e.g. docker run --cap-add SYS_PTRACE)",
        ),
        _ => {}
    }
    msg
}

pub(super) fn child_error_message(program: &str, stage: u32, e: i32) -> String {
    let err = std::io::Error::from_raw_os_error(e);
    match stage {
        STAGE_CHDIR => format!("cannot change to the working directory: {err}"),
        STAGE_NNP => format!("cannot set no_new_privs for the traced program: {err}"),
        STAGE_SECCOMP => {
            format!("cannot install the tracing seccomp filter (needs CONFIG_SECCOMP_FILTER): {err}")
        }
        STAGE_EXEC => format!("cannot execute {program}: {err}"),
        _ => format!("cannot set up the traced program's stdio: {err}"),
    }
}

/// Fork the child, seize it with our options, let it go. Returns (pid, t0, err
/// pipe, a pidfd of the child opened while it still waits, so it names it even
/// if it exits at once).
pub(super) fn spawn(p: &Prepared) -> Result<(i32, u64, OwnedFd, Option<OwnedFd>)> {
    let (go_r, go_w) = pipe_cloexec()?;
    let (err_r, err_w) = pipe_cloexec()?;
    let t0 = now_ns();
    // SAFETY: fork; the child runs only `child`, which is async-signal-safe.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork");
    }
    if pid == 0 {
        // SAFETY: in the child right after fork; see `child`.
        unsafe { child(p, go_r.as_raw_fd(), err_w.as_raw_fd()) }
    }
    drop(go_r);
    drop(err_w);
    // Into the run's cgroup while it still waits for `go`, so nothing of the tree
    // escapes the cleanup even if coldstart dies (a failed move only loses that
    // guarantee). The move waits in the kernel for an RCU grace period (up to
    // ~20 ms): coldstart's time, not the target's, so time zero moves past it.
    let mut t0 = t0;
    if !p.cgroup_procs.is_empty() {
        let before = now_ns();
        let text = pid.to_string();
        for (procs, required) in &p.cgroup_procs {
            // SAFETY: writing a local buffer to a descriptor we own.
            let w = unsafe { libc::write(procs.as_raw_fd(), text.as_ptr().cast(), text.len()) };
            if w != text.len() as isize && *required {
                let e = std::io::Error::last_os_error();
                // Our own child, blocked reading `go`: it never ran the target.
                let _ = coldstart_sys::signal::kill(pid, libc::SIGKILL);
                let _ = coldstart_sys::process::reap(pid);
                return Err(e).context("cannot move the traced child into its limiting cgroup");
            }
        }
        t0 += now_ns() - before;
    }
    // SEIZE (not TRACEME): options are set atomically with the attach, new
    // children start with PTRACE_EVENT_STOP instead of an ambiguous SIGSTOP,
    // and group-stops can be handled with PTRACE_LISTEN.
    if let Err(e) = ptrace(libc::PTRACE_SEIZE, pid, 0, OPTIONS as usize) {
        // Our own child, blocked reading `go`; reap it.
        let _ = coldstart_sys::signal::kill(pid, libc::SIGKILL);
        let _ = coldstart_sys::process::reap(pid);
        bail!(ptrace_denied_message(e));
    }
    let pidfd = coldstart_sys::process::pidfd_open(pid).ok();
    // SAFETY: one byte from a local to the pipe's write end.
    let w = unsafe { libc::write(go_w.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    if w != 1 {
        let e = std::io::Error::last_os_error();
        // Our traced child; EXITKILL would do it too once we return.
        let _ = coldstart_sys::signal::kill(pid, libc::SIGKILL);
        let _ = super::sys::wait_for(pid);
        return Err(e).context("starting the traced child");
    }
    // Non-blocking: it is read only after the child died, but a grandchild
    // forked elsewhere in the process could briefly hold its write end.
    let _ = coldstart_sys::fd::set_nonblocking(err_r.as_fd());
    Ok((pid, t0, err_r, pidfd))
}
