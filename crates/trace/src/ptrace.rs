//! Spawning a target under ptrace and the stepping loop.
//!
//! Everything here runs on the tracer thread: Linux binds a tracee to the
//! thread that attached it, so every ptrace request and the `waitpid` loop must
//! come from that one thread.
//!
//! Stops we handle (`status >> 8` of a stopped task):
//!
//! | stop                         | recognised by                              | we do                                   |
//! |------------------------------|--------------------------------------------|-----------------------------------------|
//! | seccomp stop                 | `SIGTRAP | PTRACE_EVENT_SECCOMP << 8`       | read args; CONT, or SYSCALL for the result |
//! | syscall-exit stop            | `SIGTRAP | 0x80` (TRACESYSGOOD)             | read result, emit; CONT                 |
//! | fork / vfork / clone         | `SIGTRAP | PTRACE_EVENT_{FORK,VFORK,CLONE}` | learn the child; CONT                   |
//! | exec                         | `SIGTRAP | PTRACE_EVENT_EXEC << 8`          | tid may have changed; emit; CONT        |
//! | exit                         | `SIGTRAP | PTRACE_EVENT_EXIT << 8`          | note the time; CONT                     |
//! | new task's first stop        | `PTRACE_EVENT_STOP`, task not yet resumed  | CONT                                    |
//! | group-stop                   | `PTRACE_EVENT_STOP` + a stop signal        | LISTEN (stay stopped, report SIGCONT)   |
//! | signal-delivery stop         | any other `WSTOPSIG`, event 0              | resume *with* the signal (reinject)     |
//!
//! Any ptrace request may fail with ESRCH: the task was killed while stopped
//! (SIGKILL needs no tracer consent). That is never an error: its death is
//! reported by `waitpid` a moment later.

use super::procfs;
use super::seccomp;
use super::{Event, Shared, SockAddr, SocketRole, StopWhen, TraceEvent, TraceOptions};
use anyhow::{anyhow, bail, Context, Result};
use coldstart_sys::clock::now_ns;
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;

/// Not in the libc crate for glibc targets.
const PTRACE_EVENT_STOP: i32 = 128;
/// `struct ptrace_syscall_info.op` values.
const OP_ENTRY: u8 = 1;
const OP_EXIT: u8 = 2;
const OP_SECCOMP: u8 = 3;
/// Kernel-internal "restart me" errnos a syscall-exit stop can show; the
/// syscall is re-executed (and re-stops on seccomp) after the signal.
const ERESTART_FIRST: i64 = 512;
const ERESTART_LAST: i64 = 516;

const OPTIONS: libc::c_int = libc::PTRACE_O_TRACESYSGOOD // syscall stops: SIGTRAP|0x80
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_TRACEEXEC // exec -> PTRACE_EVENT_EXEC, not a bare SIGTRAP
    | libc::PTRACE_O_TRACEEXIT
    | libc::PTRACE_O_TRACESECCOMP
    | libc::PTRACE_O_EXITKILL; // if the tracer dies, the tracees die too

/// Reported to [`super::start`] once the root has exec'd (or failed to).
pub(super) struct Started {
    pub root_pid: i32,
    pub t0_ns: u64,
}

/// What the tracer thread hands back.
pub(super) struct Collected {
    pub events: Vec<TraceEvent>,
    pub end_ns: u64,
    pub warnings: Vec<String>,
}

/// Everything the child needs, built before the fork: after fork() in a
/// multi-threaded process the child may only make async-signal-safe calls, so
/// it must not allocate.
pub(super) struct Prepared {
    program: CString,
    program_display: String,
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    _envp: Vec<CString>,
    envp_ptrs: Vec<*const libc::c_char>,
    cwd: Option<CString>,
    filter: Vec<libc::sock_filter>,
    devnull: OwnedFd,
    output: Option<OwnedFd>,
    /// The run cgroup's `cgroup.procs`, entered before the exec.
    cgroup_procs: Option<OwnedFd>,
}

// SAFETY: the raw pointers point into the CStrings owned by the same struct
// (heap buffers that do not move when the struct does); nothing else aliases them.
unsafe impl Send for Prepared {}

fn cstring(s: impl Into<Vec<u8>>, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| anyhow!("{what} contains a NUL byte"))
}

impl Prepared {
    pub fn new(opts: &TraceOptions) -> Result<Prepared> {
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
            cgroup_procs: match &opts.cgroup_procs {
                Some(fd) => Some(fd.try_clone().context("duplicating the cgroup.procs fd")?),
                None => None,
            },
        })
    }
}

// ---------------------------------------------------------------------------
// Raw ptrace wrappers

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// ptrace(2) with integer addr/data. Err(errno) on failure.
fn ptrace(req: libc::c_uint, tid: i32, addr: usize, data: usize) -> Result<libc::c_long, i32> {
    // SAFETY: the requests used with this wrapper (SEIZE, CONT, SYSCALL, LISTEN)
    // take integers, not pointers, in addr/data.
    let r = unsafe { libc::ptrace(req, tid, addr as *mut libc::c_void, data as *mut libc::c_void) };
    if r == -1 {
        Err(errno())
    } else {
        Ok(r)
    }
}

fn geteventmsg(tid: i32) -> Option<u64> {
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
struct SyscallInfo {
    op: u8,
    arch: u32,
    nr: i64,
    args: [u64; 6],
    /// Exit stops: return value (negative errno on error).
    rval: i64,
    is_error: bool,
}

fn syscall_info(tid: i32) -> Result<SyscallInfo, i32> {
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

// ---------------------------------------------------------------------------
// Spawning

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
    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
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

fn child_error_message(program: &str, stage: u32, e: i32) -> String {
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

// ---------------------------------------------------------------------------
// Tracer state

/// A syscall whose exit stop we are waiting for.
#[derive(Debug)]
enum Pending {
    Exec { path: String },
    Open { path: String, flags: u64 },
    Connect { fd: i32, addr: Option<SockAddr> },
    Bind { fd: i32, addr: Option<SockAddr> },
    Listen { fd: i32 },
    Accept { listen_fd: i32 },
}

#[derive(Debug)]
struct Awaiting {
    nr: i64,
    start_ns: u64,
    pending: Pending,
}

#[derive(Debug)]
struct Task {
    tgid: i32,
    /// No stop seen yet: its first `PTRACE_EVENT_STOP` is the attach stop.
    fresh: bool,
    awaiting: Option<Awaiting>,
    /// A syscall interrupted by a signal (ERESTART*), re-executed next: keeps
    /// its original start time.
    interrupted: Option<Awaiting>,
    /// Time of the `PTRACE_EVENT_EXIT` stop.
    exit_ns: Option<u64>,
}

/// Per-process (thread group) socket bookkeeping.
#[derive(Debug, Default, Clone)]
struct Proc {
    bound: HashMap<i32, SockAddr>,
    accepted: HashSet<i32>,
    /// Sockets whose connect returned EINPROGRESS.
    connecting: HashSet<i32>,
}

struct Tracer {
    root: i32,
    t0_ns: u64,
    program: String,
    shared: Arc<Shared>,
    tasks: HashMap<i32, Task>,
    procs: HashMap<i32, Proc>,
    /// Tasks whose death we saw before learning who created them.
    died_unknown: HashSet<i32>,
    events: Vec<TraceEvent>,
    warnings: Vec<String>,
    started: Option<SyncSender<Result<Started>>>,
    err_pipe: OwnedFd,
    last_ns: u64,
}

/// The tracer thread's body: spawn, report the start, trace to the end.
pub(super) fn run(
    prep: Prepared,
    shared: Arc<Shared>,
    started: SyncSender<Result<Started>>,
) -> Result<Collected> {
    let spawned = spawn(&prep);
    let (root, t0_ns, err_pipe) = match spawned {
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
        started: Some(started),
        err_pipe,
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
    })
}

/// Fork the child, seize it with our options, let it go. Returns (pid, t0, err pipe).
fn spawn(p: &Prepared) -> Result<(i32, u64, OwnedFd)> {
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
    if let Some(procs) = &p.cgroup_procs {
        let before = now_ns();
        let text = pid.to_string();
        // SAFETY: writing a local buffer to a descriptor we own.
        unsafe { libc::write(procs.as_raw_fd(), text.as_ptr().cast(), text.len()) };
        t0 += now_ns() - before;
    }
    // SEIZE (not TRACEME): options are set atomically with the attach, new
    // children start with PTRACE_EVENT_STOP instead of an ambiguous SIGSTOP,
    // and group-stops can be handled with PTRACE_LISTEN.
    if let Err(e) = ptrace(libc::PTRACE_SEIZE, pid, 0, OPTIONS as usize) {
        // SAFETY: our own child, blocked reading `go`; reap it.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        bail!(ptrace_denied_message(e));
    }
    // SAFETY: one byte from a local to the pipe's write end.
    let w = unsafe { libc::write(go_w.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    if w != 1 {
        let e = std::io::Error::last_os_error();
        // SAFETY: our traced child; EXITKILL would do it too once we return.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), libc::__WALL);
        }
        return Err(e).context("starting the traced child");
    }
    // Non-blocking: it is read only after the child died, but a grandchild
    // forked elsewhere in the process could briefly hold its write end.
    // SAFETY: fcntl on our own fd.
    unsafe { libc::fcntl(err_r.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    Ok((pid, t0, err_r))
}

impl Tracer {
    fn emit(&mut self, ts_ns: u64, tid: i32, event: Event) {
        let pid = self.tasks.get(&tid).map_or(tid, |t| t.tgid);
        self.events.push(TraceEvent {
            ts_ns,
            pid,
            tid,
            event,
        });
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
                // SAFETY: kill(2) on a tracee we just learnt of.
                unsafe { libc::kill(tgid, libc::SIGKILL) };
            }
        }
    }

    fn run_loop(&mut self) -> Result<()> {
        loop {
            let mut status = 0;
            let tid = Self::wait_next(&mut status);
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
                self.on_death(tid, status, now);
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
            if self.shared.kill.load(Ordering::SeqCst) {
                // Killing: no more events, just let every task die. SIGKILL
                // takes effect even from a ptrace stop, and kills the whole
                // thread group (signalled through its tgid).
                let tgid = self.tasks.get(&tid).map_or(tid, |t| t.tgid);
                // SAFETY: kill(2) on a live tracee's process.
                unsafe { libc::kill(tgid, libc::SIGKILL) };
                let _ = ptrace(libc::PTRACE_CONT, tid, 0, 0);
                continue;
            }
            let sig = libc::WSTOPSIG(status);
            let event = (status >> 16) & 0xffff;
            let was_fresh = self
                .tasks
                .get_mut(&tid)
                .is_some_and(|t| std::mem::replace(&mut t.fresh, false));
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
                    self.resume(tid, 0);
                }
                PTRACE_EVENT_STOP => {
                    let stop_sig =
                        matches!(sig, libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU);
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
    }

    /// The next stop or death of a tracee (waitpid semantics).
    ///
    /// __WALL: threads (clone children) too. __WNOTHREAD: only our own
    /// children and tracees, never a child another thread of coldstart
    /// started (or a subreaped orphan we do not trace).
    fn wait_next(status: &mut i32) -> i32 {
        // SAFETY: waitpid writes the status into the caller's local.
        unsafe { libc::waitpid(-1, status, libc::__WALL | libc::__WNOTHREAD) }
    }

    /// Resume `tid`, delivering `sig`. PTRACE_SYSCALL while we wait for the
    /// exit of a syscall (even across a signal stop), PTRACE_CONT otherwise:
    /// CONT also turns syscall stops off again.
    fn resume(&mut self, tid: i32, sig: i32) {
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
        let argv0 = procfs::argv0(tid).unwrap_or_default();
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
        self.emit(now, tid, Event::Exec { path, exe, argv0 });
        if tid == self.root {
            if let Some(tx) = self.started.take() {
                let _ = tx.send(Ok(Started {
                    root_pid: self.root,
                    t0_ns: self.t0_ns,
                }));
            }
        }
        // CONT (awaiting is cleared): skip execve's syscall-exit stop.
        self.resume(tid, 0);
    }

    fn on_seccomp(&mut self, tid: i32, now: u64) {
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
            libc::SYS_write | libc::SYS_writev | libc::SYS_sendto | libc::SYS_sendmsg => {
                let fd = a[0] as i32;
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

    fn path_arg(&self, tid: i32, dirfd: i32, addr: u64) -> String {
        let raw = procfs::read_cstr(tid, addr).unwrap_or_default();
        if raw.is_empty() {
            return raw;
        }
        procfs::resolve_at(tid, dirfd, raw)
    }

    fn on_syscall_exit(&mut self, tid: i32, now: u64) {
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
            Pending::Listen { fd } if ok => {
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
                    s.status.first_listen.get_or_insert((start, addr));
                });
            }
            Pending::Listen { .. } => {}
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

fn describe_status(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exit status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("status {status:#x}")
    }
}
