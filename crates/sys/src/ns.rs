//! Private mount namespaces: made once, with their mounts, by a short-lived
//! child (clone(2) with CLONE_NEWNS, and CLONE_NEWUSER when unprivileged), kept
//! alive by descriptors on them, and entered by other children with setns(2).
//!
//! The maker shares our memory and descriptor table (CLONE_VM | CLONE_VFORK |
//! CLONE_FILES): it runs the prepared steps with raw syscalls only (no
//! allocation: another thread may hold the allocator's lock), opens its
//! namespaces into the shared table, and exits. We resume once it has, holding
//! the namespaces by those descriptors alone: no process of ours lives in them,
//! and nothing is mounted in our own namespace, so the mount table coldstart
//! runs in never changes, even if coldstart is killed.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// One thing the maker does inside the new namespace, in order.
#[derive(Debug, Clone)]
pub enum Step {
    /// mount(2) with these arguments.
    Mount {
        source: CString,
        target: CString,
        fstype: Option<CString>,
        flags: libc::c_ulong,
        data: Option<CString>,
    },
    /// mkdir(2) (an existing directory is fine).
    Mkdir { path: CString, mode: libc::mode_t },
    /// Create (or truncate) a file holding exactly `bytes`.
    Write { path: CString, bytes: Vec<u8> },
}

/// A made namespace, alive while these descriptors are open.
#[derive(Debug)]
pub struct Namespace {
    pub mnt: OwnedFd,
    /// The user namespace that owns `mnt`, when it was made without privileges:
    /// a child enters it first (it gives the capabilities `mnt`'s setns needs).
    pub user: Option<OwnedFd>,
}

/// Why a namespace could not be made: the step that failed (None: the clone,
/// the user namespace's id maps, or opening the namespace) and its error.
#[derive(Debug)]
pub struct Failed {
    pub step: Option<usize>,
    pub error: io::Error,
}

const STACK_SIZE: usize = 64 * 1024;

struct Ctx<'a> {
    steps: &'a [Step],
    /// "0 <uid> 1" and "0 <gid> 1" (Some: make a user namespace too).
    maps: Option<(&'a [u8], &'a [u8])>,
    failed_step: isize,
    errno: i32,
    mnt: i32,
    user: i32,
}

/// Make a mount namespace (and, with `user`, the user namespace owning it,
/// mapping our uid and gid to 0 in it) whose mounts are first made private
/// (nothing propagates back to ours), then shaped by `steps`.
pub fn make(steps: &[Step], user: bool) -> Result<Namespace, Failed> {
    let uid_map;
    let gid_map;
    let maps = if user {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        uid_map = format!("0 {uid} 1");
        gid_map = format!("0 {gid} 1");
        Some((uid_map.as_bytes(), gid_map.as_bytes()))
    } else {
        None
    };
    let mut ctx = Ctx {
        steps,
        maps,
        failed_step: -1,
        errno: 0,
        mnt: -1,
        user: -1,
    };
    let mut stack = vec![0u8; STACK_SIZE];
    let stack_top = ((stack.as_mut_ptr() as usize + stack.len()) & !15) as *mut libc::c_void;
    let mut flags =
        libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES | libc::CLONE_NEWNS | libc::SIGCHLD;
    if user {
        flags |= libc::CLONE_NEWUSER;
    }
    // SAFETY: all signals are blocked across the clone, so no handler of ours
    // runs in the child, which shares our memory; the child runs only `maker`
    // on its own stack, never returns into our frames, and `ctx` and `stack`
    // outlive it (CLONE_VFORK: we resume only after it has exited).
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(maker, stack_top, flags, (&mut ctx as *mut Ctx).cast());
        let e = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 {
            return Err(Failed { step: None, error: e });
        }
        pid
    };
    // Our own child, which has exited. A process-wide reaper may have reaped it
    // first; its result is in `ctx` either way.
    let _ = crate::process::reap(pid);
    drop(stack);
    // SAFETY: the maker opened these into our shared table and nothing else
    // owns them; -1 means it did not get that far.
    let own = |fd: i32| (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
    let (mnt, user_ns) = (own(ctx.mnt), own(ctx.user));
    if ctx.errno != 0 || mnt.is_none() {
        return Err(Failed {
            step: usize::try_from(ctx.failed_step).ok(),
            error: io::Error::from_raw_os_error(if ctx.errno != 0 { ctx.errno } else { libc::EIO }),
        });
    }
    Ok(Namespace {
        mnt: mnt.ok_or_else(|| Failed {
            step: None,
            error: io::Error::from_raw_os_error(libc::EIO),
        })?,
        user: user_ns,
    })
}

/// The maker: raw syscalls on data prepared before the clone; no allocation,
/// no panic.
extern "C" fn maker(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's Ctx, alive and untouched while the parent
    // is suspended (CLONE_VFORK).
    let ctx = unsafe { &mut *(arg as *mut Ctx) };
    // SAFETY: async-signal-safe syscalls on NUL-terminated strings and buffers
    // that live in the suspended parent's frames.
    unsafe {
        if let Some((uid_map, gid_map)) = ctx.maps {
            // An unprivileged process may map only its own ids, and only once
            // setgroups(2) is denied in the namespace.
            if !write_file(c"/proc/self/setgroups", b"deny")
                || !write_file(c"/proc/self/uid_map", uid_map)
                || !write_file(c"/proc/self/gid_map", gid_map)
            {
                fail(ctx, -1);
            }
        }
        // The copied mounts may share propagation with ours: make them private
        // first, so no mount below ever shows in coldstart's namespace.
        if libc::mount(
            c"none".as_ptr(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            fail(ctx, -1);
        }
        for (i, step) in ctx.steps.iter().enumerate() {
            let ok = match step {
                Step::Mount {
                    source,
                    target,
                    fstype,
                    flags,
                    data,
                } => {
                    libc::mount(
                        source.as_ptr(),
                        target.as_ptr(),
                        fstype.as_ref().map_or(std::ptr::null(), |f| f.as_ptr()),
                        *flags,
                        data.as_ref().map_or(std::ptr::null(), |d| d.as_ptr().cast()),
                    ) == 0
                }
                Step::Mkdir { path, mode } => {
                    libc::mkdir(path.as_ptr(), *mode) == 0 || *libc::__errno_location() == libc::EEXIST
                }
                Step::Write { path, bytes } => write_file(path, bytes),
            };
            if !ok {
                fail(ctx, i as isize);
            }
        }
        ctx.mnt = libc::open(c"/proc/self/ns/mnt".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if ctx.mnt < 0 {
            fail(ctx, -1);
        }
        if ctx.maps.is_some() {
            ctx.user = libc::open(c"/proc/self/ns/user".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if ctx.user < 0 {
                fail(ctx, -1);
            }
        }
        libc::_exit(0)
    }
}

/// Record the failed step and errno for the parent and exit.
fn fail(ctx: &mut Ctx, step: isize) -> ! {
    // SAFETY: reading this thread's errno, then leaving the child.
    unsafe {
        ctx.errno = *libc::__errno_location();
        if ctx.errno == 0 {
            ctx.errno = libc::EIO;
        }
        ctx.failed_step = step;
        libc::_exit(127)
    }
}

/// Create or truncate `path` and write all of `bytes`. Async-signal-safe.
fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    // SAFETY: a NUL-terminated path; the descriptor is ours and closed here.
    unsafe {
        let fd = libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o644,
        );
        if fd < 0 {
            return false;
        }
        let mut done = 0;
        while done < bytes.len() {
            let n = libc::write(fd, bytes[done..].as_ptr().cast(), bytes.len() - done);
            if n <= 0 {
                libc::close(fd);
                return false;
            }
            done += n as usize;
        }
        libc::close(fd) == 0
    }
}

/// Enter the namespace `fd` refers to (`nstype`: CLONE_NEWNS, CLONE_NEWUSER, or
/// 0 for any). Async-signal-safe: fine between clone and exec. A mount namespace
/// can be entered only by a process that shares its filesystem attributes with
/// no other (no CLONE_FS), a user namespace only by a single-threaded one.
#[inline]
pub fn setns(fd: BorrowedFd<'_>, nstype: libc::c_int) -> io::Result<()> {
    // SAFETY: setns takes a descriptor we borrow and an integer; no pointers.
    if unsafe { libc::setns(fd.as_raw_fd(), nstype) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn c(s: &str) -> CString {
        CString::new(s).unwrap()
    }

    /// What /proc/self/mountinfo says inside `ns`, read by a forked child that
    /// entered it (our own namespace is never changed).
    fn mountinfo_inside(ns: &Namespace) -> String {
        let (mut r, w) = std::io::pipe().unwrap();
        // SAFETY: the child makes raw syscalls only and _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: async-signal-safe calls in the forked child.
            unsafe {
                let ok = ns
                    .user
                    .as_ref()
                    .is_none_or(|u| setns(u.as_fd(), libc::CLONE_NEWUSER).is_ok())
                    && setns(ns.mnt.as_fd(), libc::CLONE_NEWNS).is_ok();
                if !ok {
                    libc::_exit(2);
                }
                let fd = libc::open(c"/proc/self/mountinfo".as_ptr(), libc::O_RDONLY);
                let mut buf = [0u8; 4096];
                loop {
                    let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                    if n <= 0 {
                        break;
                    }
                    libc::write(w.as_raw_fd(), buf.as_ptr().cast(), n as usize);
                }
                libc::_exit(0);
            }
        }
        drop(w);
        let mut s = String::new();
        std::io::Read::read_to_string(&mut r, &mut s).unwrap();
        let status = crate::process::reap(pid).unwrap();
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status:#x}"
        );
        s
    }

    #[test]
    fn mounts_stay_inside_the_namespace() {
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let before = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let steps = [Step::Mount {
            source: c("coldstart-test"),
            target: c("/mnt"),
            fstype: Some(c("tmpfs")),
            flags: 0,
            data: Some(c("size=64k")),
        }];
        let ns = match make(&steps, !root) {
            Ok(ns) => ns,
            Err(f) if !root => {
                eprintln!("skipped: no user namespace here ({:?})", f.error);
                return;
            }
            Err(f) => panic!("{f:?}"),
        };
        let inside = mountinfo_inside(&ns);
        assert!(
            inside.contains(" /mnt ") && inside.contains("coldstart-test"),
            "{inside}"
        );
        assert_eq!(std::fs::read_to_string("/proc/self/mountinfo").unwrap(), before);
        let bad = [Step::Mkdir {
            path: c("/proc/self/no/such/dir"),
            mode: 0o755,
        }];
        let f = make(&bad, !root).expect_err("a step that fails");
        assert_eq!(f.step, Some(0));
        assert_eq!(f.error.raw_os_error(), Some(libc::ENOENT));
    }
}
