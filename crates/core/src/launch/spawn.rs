//! Spawning a target. Everything the child needs (argv, environment, stdio, its
//! run cgroup, its stack) is prepared before time zero, so the timed interval
//! holds only the spawn itself.
//!
//! The spawn is glibc posix_spawn's mechanism — clone(CLONE_VM | CLONE_VFORK)
//! on a stack of our own, then execve — with one step posix_spawn cannot do:
//! between the clone and the exec the child writes itself into its run's cgroup
//! (see `cgroup`), so nothing it ever forks escapes the run's cleanup, and —
//! for a run with --cpus/--cpuset/--memory — into the limiting cgroups too, so
//! the limits hold from the target's first instruction. CLONE_PIDFD
//! returns the pidfd with the clone. clone3's CLONE_INTO_CGROUP would save the
//! cgroup.procs write (~9 µs measured) but needs a hand-written clone3 stub
//! (glibc 2.36 has no wrapper, and CLONE_VM needs a new stack).

use super::cgroup;
use super::lab::Lab;
use super::limit_cgroups::RunCgroup;
use crate::target::Target;
use anyhow::{anyhow, Context, Result};
use std::ffi::{CString, OsString};
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::{ChildStderr, ChildStdout};

/// Where the target's stdout/stderr go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// An in-memory file shared by stdout and stderr: no reader is needed while
    /// the target runs, so nothing of ours competes with it for a core.
    MemFile,
    /// Pipes read live (needed by the log probe).
    Pipes,
    /// coldstart's own stdout and stderr (`--show-output`): nothing is kept.
    Inherit,
}

const STACK_SIZE: usize = 64 * 1024;

const FIX_LIMITS: &str = "moving a process needs write access to the cgroup.procs of the cgroups' common ancestor: run coldstart as root or in a delegated cgroup";

pub struct Prepared {
    program: CString,
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    _envp: Vec<CString>,
    envp_ptrs: Vec<*const libc::c_char>,
    cwd: Option<CString>,
    stdin: OwnedFd,
    /// The child's stdout and stderr, and (Pipes) our read ends.
    out: Option<(OwnedFd, OwnedFd)>,
    pipes: Option<(OwnedFd, OwnedFd)>,
    /// Our handle on the in-memory output file (MemFile mode), kept bounded.
    pub output_file: Option<super::output::capture::Capture>,
    cgroup: Option<RunCgroup>,
    /// The `cgroup.procs` the child writes itself into, and whether it must
    /// (gathered before time zero: the child cannot allocate).
    entries: Vec<(RawFd, bool)>,
    /// Cgroups a caller added with `enter_cgroups` (kept open until the spawn).
    extra_cgroups: Vec<OwnedFd>,
    /// Why the caller left the run cgroup out (`without_run_cgroup`).
    no_run_cgroup: Option<&'static str>,
    stack: Vec<u8>,
    /// A `replace_env` variable that cannot be passed (NUL byte), reported at spawn.
    env_error: Option<anyhow::Error>,
    /// A descriptor the child gets at a chosen number, inheritable (`pass_fd`).
    passed: Option<(OwnedFd, RawFd)>,
    /// A mount namespace (and the user namespace owning it) the child enters
    /// before its exec (`enter_namespace`).
    namespace: Option<(OwnedFd, Option<OwnedFd>)>,
}

// SAFETY: the raw pointers point into the CStrings owned by the same struct
// (heap buffers that do not move when the struct does); nothing else aliases them.
unsafe impl Send for Prepared {}

pub struct Child {
    pub pid: i32,
    /// How long the child's write into its run cgroup (and its entry into a
    /// namespace, `enter_namespace`) took (ns). Not the target's
    /// time: migrating a process takes the kernel's cgroup_threadgroup_rwsem for
    /// writing, which waits for an RCU grace period (0–20 ms measured here), so
    /// callers move time zero by this much. 0 without a run cgroup.
    pub placement_ns: u64,
    /// Readable when the process exits; lets one poll(2) wait on exit, output and probes.
    pub pidfd: OwnedFd,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
}

fn cstring(bytes: impl Into<Vec<u8>>, what: &str) -> Result<CString> {
    CString::new(bytes).map_err(|_| anyhow!("{what} contains a NUL byte"))
}

/// Everything the spawn of `target` needs, outside the timed window. The Lab
/// is asked for because cleanup is only sound in a subreaper with its reaping
/// rule: without one there is nothing to call this with.
pub fn prepare(
    _lab: &Lab,
    target: &Target,
    mode: OutputMode,
    extra_env: &[(String, String)],
) -> Result<Prepared> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (k, v) in target.env.iter().chain(extra_env) {
        env.retain(|(ek, _)| ek.as_bytes() != k.as_bytes());
        env.push((k.into(), v.into()));
    }
    let argv = target
        .argv
        .iter()
        .map(|a| cstring(a.as_str(), "an argument"))
        .collect::<Result<Vec<_>>>()?;
    let argv_ptrs = null_terminated(&argv);
    let cwd = match &target.cwd {
        Some(dir) => Some(cstring(dir.as_os_str().as_bytes(), "the working directory")?),
        None => None,
    };
    let stdin = high_fd(File::open("/dev/null").context("opening /dev/null")?.into())?;
    let (out, pipes, output_file) = match mode {
        OutputMode::MemFile => {
            let file = memfd("coldstart-output")?;
            let a = high_fd(file.try_clone().context("duplicating output fd")?.into())?;
            let b = high_fd(file.try_clone().context("duplicating output fd")?.into())?;
            ((a, b), None, Some(super::output::capture::watch_file(file)))
        }
        OutputMode::Pipes => {
            let (out_r, out_w) = pipe()?;
            let (err_r, err_w) = pipe()?;
            ((out_w, err_w), Some((out_r, err_r)), None)
        }
        OutputMode::Inherit => {
            let ours = |fd: std::os::fd::BorrowedFd<'_>| {
                coldstart_sys::fd::dup_at_least(fd, 3)
                    .context("duplicating our stdout/stderr for --show-output")
            };
            (
                (ours(std::io::stdout().as_fd())?, ours(std::io::stderr().as_fd())?),
                None,
                None,
            )
        }
    };
    let mut p = Prepared {
        program: cstring(target.program.as_os_str().as_bytes(), "the program path")?,
        _argv: argv,
        argv_ptrs,
        _envp: Vec::new(),
        envp_ptrs: Vec::new(),
        cwd,
        stdin,
        out: Some(out),
        pipes,
        env_error: None,
        passed: None,
        namespace: None,
        output_file,
        cgroup: RunCgroup::for_limits(&target.limits)?,
        entries: Vec::new(),
        extra_cgroups: Vec::new(),
        no_run_cgroup: None,
        stack: vec![0u8; STACK_SIZE],
    };
    p.entries = p.cgroup.iter().flat_map(RunCgroup::entries).collect();
    p.set_env(env)?;
    Ok(p)
}

impl Prepared {
    /// Spawn without a run cgroup (lambda: several processes started against one
    /// time zero, where a placement's kernel wait cannot be taken out of the figure).
    /// `why` is said once if the process then enters no cgroup at all.
    pub fn without_run_cgroup(&mut self, why: &'static str) {
        self.no_run_cgroup = Some(why);
        self.cgroup = None;
        self.entries.clear();
    }

    /// Also enter these cgroups (their open `cgroup.procs`) between clone and
    /// exec, as a limited run enters its own; failing to is a failed spawn.
    /// (lambda: the sandbox's cgroups, for the runtime and every extension.)
    pub fn enter_cgroups(&mut self, procs: Vec<OwnedFd>) {
        self.entries.extend(procs.iter().map(|fd| (fd.as_raw_fd(), true)));
        self.extra_cgroups.extend(procs);
    }

    /// Enter this mount namespace (after `user`, the user namespace owning it,
    /// when it was made without privileges) between clone and exec, right after
    /// the cgroups; failing to is a failed spawn. (lambda: the sandbox's.)
    pub fn enter_namespace(&mut self, mnt: OwnedFd, user: Option<OwnedFd>) {
        self.namespace = Some((mnt, user));
    }

    /// Where a limited run's peak memory and OOM kills are read.
    pub fn memory_watch(&self) -> Option<super::limit_cgroups::MemoryWatch> {
        self.cgroup.as_ref()?.memory()
    }

    /// Give the child `fd` as descriptor number `at` (> 2), inheritable across its
    /// exec. Placed in the child's own descriptor table between clone and exec, so
    /// it is race-free when several threads spawn at once: no shared fd number is
    /// ever rewired in coldstart's table, and ours stays close-on-exec, so no other
    /// child inherits it. Our copy is closed after the spawn.
    pub fn pass_fd(&mut self, fd: OwnedFd, at: RawFd) {
        self.passed = Some((fd, at));
    }

    /// Give the process exactly this environment (nothing inherited from coldstart).
    pub fn replace_env(&mut self, vars: &[(String, String)]) {
        if let Err(e) = self.set_env(vars.iter().map(|(k, v)| (k.into(), v.into())).collect()) {
            self.env_error = Some(e);
        }
    }

    fn set_env(&mut self, env: Vec<(OsString, OsString)>) -> Result<()> {
        let envp = env
            .into_iter()
            .map(|(k, v)| {
                let mut kv = k.into_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                cstring(kv, "an environment variable")
            })
            .collect::<Result<Vec<_>>>()?;
        self.envp_ptrs = null_terminated(&envp);
        self._envp = envp;
        Ok(())
    }
}

fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain([std::ptr::null()])
        .collect()
}

/// What the child reads (and, on failure, writes) in our memory: CLONE_VM
/// shares it, and CLONE_VFORK keeps us suspended until the child execs or exits.
struct ChildCtx<'a> {
    p: &'a Prepared,
    out: (RawFd, RawFd),
    /// (source, number in the child) of a passed descriptor; -1 for none.
    passed: (RawFd, RawFd),
    /// `cgroup.procs` to write "0" into, and whether entering is required.
    cgroups: &'a [(RawFd, bool)],
    /// (mount, user) namespaces to enter; -1 for none.
    namespace: (RawFd, RawFd),
    /// The spawning thread is the main thread: PR_SET_PDEATHSIG fires when the
    /// *thread* that forked exits, so it is only safe from one that lives as
    /// long as coldstart.
    pdeathsig: bool,
    parent: i32,
    failed_stage: u32,
    errno: i32,
    cgroup_errno: i32,
    placement_ns: u64,
}

const STAGE_SETUP: u32 = 1;
const STAGE_CHDIR: u32 = 2;
const STAGE_EXEC: u32 = 3;
const STAGE_CGROUP: u32 = 4;
const STAGE_NAMESPACE: u32 = 5;

/// Spawn the prepared command. Call this immediately after taking time zero.
pub fn spawn(prepared: &mut Prepared, target: &Target) -> Result<Child> {
    if let Some(e) = prepared.env_error.take() {
        return Err(e);
    }
    let Some(out) = prepared.out.take() else {
        return Err(anyhow!("internal: a prepared command was spawned twice"));
    };
    let pipes = prepared.pipes.take();
    let passed = prepared.passed.take();
    let stack_top = {
        let end = prepared.stack.as_mut_ptr() as usize + prepared.stack.len();
        (end & !15) as *mut libc::c_void
    };
    let mut ctx = ChildCtx {
        out: (out.0.as_raw_fd(), out.1.as_raw_fd()),
        passed: passed.as_ref().map_or((-1, -1), |(fd, at)| (fd.as_raw_fd(), *at)),
        p: prepared,
        cgroups: &prepared.entries,
        namespace: prepared.namespace.as_ref().map_or((-1, -1), |(m, u)| {
            (m.as_raw_fd(), u.as_ref().map_or(-1, |u| u.as_raw_fd()))
        }),
        // SAFETY: plain syscalls without arguments.
        pdeathsig: unsafe { libc::gettid() == libc::getpid() },
        parent: std::process::id() as i32,
        failed_stage: 0,
        errno: 0,
        cgroup_errno: 0,
        placement_ns: 0,
    };
    let mut pidfd: libc::c_int = -1;
    // SAFETY: all signals are blocked across the clone so no handler of ours runs
    // in the child (which shares our memory); the child unblocks them itself.
    // The child runs only `child_main` on its own stack and never returns into
    // our frames; `ctx` and `prepared` outlive it (CLONE_VFORK: we resume only
    // after its execve or _exit).
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(
            child_main,
            stack_top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
            (&mut ctx as *mut ChildCtx).cast(),
            &mut pidfd as *mut libc::c_int,
        );
        let e = std::io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 {
            return Err(e).with_context(|| format!("cannot start {}", target.program.display()));
        }
        pid
    };
    // SAFETY: CLONE_PIDFD stored a fresh descriptor we now own.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    if ctx.failed_stage != 0 {
        // Our own child, which has _exited.
        let _ = coldstart_sys::process::reap(pid);
        let e = std::io::Error::from_raw_os_error(ctx.errno);
        let what = match ctx.failed_stage {
            STAGE_CHDIR => format!(
                "cannot enter the working directory {}",
                target
                    .cwd
                    .as_deref()
                    .unwrap_or(std::path::Path::new("?"))
                    .display()
            ),
            STAGE_SETUP => "cannot set up the target's stdio".to_string(),
            STAGE_CGROUP => format!(
                "cannot place {} in its limiting cgroup before its exec: {FIX_LIMITS}",
                target.program.display(),
            ),
            STAGE_NAMESPACE => format!(
                "cannot enter the sandbox's mount namespace before starting {} (run with --no-sandbox)",
                target.program.display(),
            ),
            STAGE_EXEC if prepared.namespace.is_some() => format!(
                "cannot start {} inside the sandbox's mount namespace (there /opt holds only the layers and /var/task the code; --no-sandbox runs on the host's paths)",
                target.program.display()
            ),
            _ => format!("cannot start {}", target.program.display()),
        };
        return Err(e).context(what);
    }
    if ctx.cgroup_errno != 0 {
        cgroup::note_not_entered(ctx.cgroup_errno);
    } else if prepared.cgroup.is_none() && prepared.extra_cgroups.is_empty() {
        // Cgroups entered through `enter_cgroups` are the invocation's too (the
        // watchdog kills and removes them): only a process in none is unreachable.
        cgroup::note_unavailable(prepared.no_run_cgroup);
    }
    let (stdout, stderr) = match pipes {
        Some((out, err)) => {
            // Best effort, as before: a blocking end only makes the drain wait.
            let _ = coldstart_sys::fd::set_nonblocking(out.as_fd());
            let _ = coldstart_sys::fd::set_nonblocking(err.as_fd());
            (Some(ChildStdout::from(out)), Some(ChildStderr::from(err)))
        }
        None => (None, None),
    };
    // The child's copies of its stdout/stderr ends are all that should keep the
    // pipes open: ours close here, or we would never see end-of-file.
    drop(out);
    drop(passed);
    Ok(Child {
        pid,
        pidfd,
        stdout,
        stderr,
        placement_ns: ctx.placement_ns,
    })
}

/// The child between clone and execve: raw syscalls only (it shares our
/// memory and runs on a small stack), no allocation, no panic.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's ChildCtx, alive and not otherwise accessed
    // while the parent is suspended (CLONE_VFORK).
    let ctx = unsafe { &mut *(arg as *mut ChildCtx) };
    let p = ctx.p;
    // SAFETY: async-signal-safe calls on descriptors and strings prepared
    // before the clone.
    unsafe {
        let (mnt, user) = ctx.namespace;
        if !ctx.cgroups.is_empty() || mnt >= 0 {
            let before = mono_ns();
            for &(fd, required) in ctx.cgroups {
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    if required {
                        // A limited run never runs unlimited.
                        fail(ctx, STAGE_CGROUP);
                    }
                    // Measured without the cleanup cgroup rather than not at
                    // all; the parent says so.
                    ctx.cgroup_errno = errno();
                }
            }
            // After the cgroups (their files are the host's): the user namespace
            // first, which gives the capabilities the mount namespace's needs.
            let enter = |fd: RawFd, kind: libc::c_int| {
                fd < 0 || coldstart_sys::ns::setns(std::os::fd::BorrowedFd::borrow_raw(fd), kind).is_ok()
            };
            if !enter(user, libc::CLONE_NEWUSER) || !enter(mnt, libc::CLONE_NEWNS) {
                fail(ctx, STAGE_NAMESPACE);
            }
            ctx.placement_ns = mono_ns().saturating_sub(before);
        }
        if ctx.pdeathsig {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != ctx.parent {
                libc::_exit(127); // coldstart died before the prctl took hold
            }
        }
        // Own process group: Ctrl-C on the terminal reaches coldstart only, and
        // the whole group can be signalled at stop time.
        libc::setpgid(0, 0);
        if libc::dup2(p.stdin.as_raw_fd(), 0) != 0
            || libc::dup2(ctx.out.0, 1) != 1
            || libc::dup2(ctx.out.1, 2) != 2
        {
            fail(ctx, STAGE_SETUP);
        }
        // After the stdio dup2s (the number may be one of their sources). The
        // child's table is its own (no CLONE_FILES): this changes nothing of ours.
        let (src, at) = ctx.passed;
        if src >= 0 {
            let placed = if src == at {
                libc::fcntl(at, libc::F_SETFD, 0) == 0
            } else {
                libc::dup2(src, at) == at
            };
            if !placed {
                fail(ctx, STAGE_SETUP);
            }
        }
        if let Some(cwd) = &p.cwd {
            if libc::chdir(cwd.as_ptr()) != 0 {
                fail(ctx, STAGE_CHDIR);
            }
        }
        // A standard signal state: our handlers (shared memory!) off before the
        // mask opens, and SIGPIPE back to default (Rust ignores it).
        for sig in super::signals::HANDLED.into_iter().chain([libc::SIGPIPE]) {
            libc::signal(sig, libc::SIG_DFL);
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::execve(p.program.as_ptr(), p.argv_ptrs.as_ptr(), p.envp_ptrs.as_ptr());
        fail(ctx, STAGE_EXEC)
    }
}

/// CLOCK_MONOTONIC in ns without allocation or locks (safe in the vfork child).
fn mono_ns() -> u64 {
    // SAFETY: zeroed timespec is valid; clock_gettime only writes it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Record the failed step for the parent and exit. Async-signal-safe.
fn fail(ctx: &mut ChildCtx, stage: u32) -> ! {
    ctx.errno = errno();
    ctx.failed_stage = stage;
    // SAFETY: leaving the child without touching shared state further.
    unsafe { libc::_exit(127) }
}

fn errno() -> i32 {
    // SAFETY: reading this thread's errno.
    unsafe { *libc::__errno_location() }
}

/// The descriptor moved to number ≥ 3 (close-on-exec), so the child's dup2s
/// onto 0, 1 and 2 never overwrite one another's source when coldstart was
/// started with a standard stream closed.
fn high_fd(fd: OwnedFd) -> Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    coldstart_sys::fd::dup_at_least(fd.as_fd(), 3).context("duplicating a descriptor")
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let (r, w) = coldstart_sys::pipe::pipe(false).context("creating an output pipe")?;
    Ok((high_fd(r)?, high_fd(w)?))
}

fn memfd(name: &str) -> Result<File> {
    let cname = std::ffi::CString::new(name).context("memfd name")?;
    // SAFETY: valid NUL-terminated name; the returned fd is owned by the File.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("memfd_create for output capture");
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { File::from_raw_fd(fd) })
}
