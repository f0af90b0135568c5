//! The seccomp filter that makes a tracee stop only on the syscalls we trace.
//!
//! Classic BPF over `struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; }`,
//! built by hand with libc's `sock_filter` (no seccomp crate is a dependency yet;
//! `seccompiler` would be the one to use). The program:
//!
//! ```text
//!   A = arch;  if A != native arch          -> ALLOW   (i386/x32 numbers differ)
//!   A = nr;    if A >= 0x40000000 (x86_64)  -> ALLOW   (x32 ABI)
//!   if A in {execve, execveat, open, openat, openat2,
//!            connect, bind, listen, accept, accept4, wait4, waitid} -> TRACE
//!   if A == mmap                            -> MMAP
//!   if A in {write, writev, sendto, sendmsg} (when asked) -> FD
//!   return SECCOMP_RET_ALLOW
//!   MMAP:  A = low32(args[2]) (prot);  if !(A & PROT_EXEC)      -> ALLOW
//!          A = low32(args[3]) (flags); if A & MAP_ANONYMOUS     -> ALLOW
//!          -> TRACE
//!   FD:    A = low32(args[0]) (fd);    if A >= 3 -> TRACE else  -> ALLOW
//!   ALLOW: return SECCOMP_RET_ALLOW
//!   TRACE: return SECCOMP_RET_TRACE
//! ```
//!
//! Checking mmap's arguments in the kernel matters: an interpreter maps memory
//! all the time, but only file mappings with PROT_EXEC are libraries. Writes to
//! stdin/stdout/stderr never stop the tracee. All comparisons are on the low 32
//! bits of an argument, which hold the whole value for prot, flags and fds.

/// `AUDIT_ARCH_*` of the syscall ABI we trace (not in the libc crate).
#[cfg(target_arch = "x86_64")]
pub const NATIVE_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64 = EM_X86_64 | 64BIT | LE
#[cfg(target_arch = "aarch64")]
pub const NATIVE_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64 = EM_AARCH64 | 64BIT | LE
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const NATIVE_ARCH: u32 = 0; // tracing is refused at start on other architectures

const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_TRACE: u32 = 0x7ff0_0000;

// Offsets into struct seccomp_data.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const fn off_arg_low(i: u32) -> u32 {
    // args start at 16; on a little-endian machine the low half comes first.
    if cfg!(target_endian = "little") {
        16 + 8 * i
    } else {
        16 + 8 * i + 4
    }
}

/// Syscalls that always stop the tracee.
pub fn traced_syscalls() -> Vec<i64> {
    let mut v = vec![
        libc::SYS_execve,
        libc::SYS_execveat,
        libc::SYS_openat,
        libc::SYS_openat2,
        libc::SYS_connect,
        libc::SYS_bind,
        libc::SYS_listen,
        libc::SYS_accept,
        libc::SYS_accept4,
        // Which process waited for which (a helper holds the critical path only
        // when its parent waits for it); rare calls, two stops each.
        libc::SYS_wait4,
        libc::SYS_waitid,
    ];
    #[cfg(target_arch = "x86_64")]
    v.push(libc::SYS_open);
    v
}

/// Syscalls that stop the tracee only when their fd (`args[0]`) is >= 3.
pub fn write_syscalls() -> [i64; 4] {
    [
        libc::SYS_write,
        libc::SYS_writev,
        libc::SYS_sendto,
        libc::SYS_sendmsg,
    ]
}

/// A jump target inside the program being assembled.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    Next,
    Allow,
    Trace,
    Mmap,
    Fd,
}

enum Op {
    Load(u32),
    Jeq(u32, Target, Target),
    Jge(u32, Target, Target),
    Jset(u32, Target, Target),
    Ret(u32),
    Label(Target),
}

/// Build the filter. With `with_writes`, the write family (fd >= 3) is traced too.
pub fn build(with_writes: bool) -> Vec<libc::sock_filter> {
    use Target::*;
    let mut ops = vec![
        Op::Load(OFF_ARCH),
        Op::Jeq(NATIVE_ARCH, Next, Allow),
        Op::Load(OFF_NR),
    ];
    if cfg!(target_arch = "x86_64") {
        ops.push(Op::Jge(0x4000_0000, Allow, Next)); // __X32_SYSCALL_BIT
    }
    for nr in traced_syscalls() {
        ops.push(Op::Jeq(nr as u32, Trace, Next));
    }
    ops.push(Op::Jeq(libc::SYS_mmap as u32, Mmap, Next));
    if with_writes {
        for nr in write_syscalls() {
            ops.push(Op::Jeq(nr as u32, Fd, Next));
        }
    }
    // Classic BPF only jumps forward: the argument checks come next, the two
    // shared return instructions last.
    ops.extend([
        Op::Ret(SECCOMP_RET_ALLOW),
        Op::Label(Mmap),
        Op::Load(off_arg_low(2)),
        Op::Jset(libc::PROT_EXEC as u32, Next, Allow),
        Op::Load(off_arg_low(3)),
        Op::Jset(libc::MAP_ANONYMOUS as u32, Allow, Trace),
    ]);
    if with_writes {
        ops.extend([Op::Label(Fd), Op::Load(off_arg_low(0)), Op::Jge(3, Trace, Allow)]);
    }
    ops.extend([
        Op::Label(Allow),
        Op::Ret(SECCOMP_RET_ALLOW),
        Op::Label(Trace),
        Op::Ret(SECCOMP_RET_TRACE),
    ]);
    assemble(&ops)
}

/// Resolve labels into classic-BPF relative jump offsets (forward only, < 256).
fn assemble(ops: &[Op]) -> Vec<libc::sock_filter> {
    // Index of each label = number of real instructions before it.
    let mut labels = Vec::new();
    let mut n = 0usize;
    for op in ops {
        match op {
            Op::Label(t) => labels.push((*t, n)),
            _ => n += 1,
        }
    }
    let at = |t: Target, pc: usize| -> u8 {
        let dest = match t {
            Target::Next => pc + 1,
            t => labels
                .iter()
                .find(|(l, _)| *l == t)
                .map(|(_, i)| *i)
                .expect("jump to a label the filter does not define"),
        };
        let off = dest.checked_sub(pc + 1).expect("classic BPF jumps only forward");
        u8::try_from(off).expect("BPF jump longer than 255 instructions")
    };
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let mut out = Vec::with_capacity(n);
    for op in ops {
        let pc = out.len();
        let jump = |code: u32, k: u32, t: Target, f: Target| libc::sock_filter {
            code: (libc::BPF_JMP | code | libc::BPF_K) as u16,
            jt: at(t, pc),
            jf: at(f, pc),
            k,
        };
        match *op {
            Op::Load(off) => out.push(stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, off)),
            Op::Jeq(k, t, f) => out.push(jump(libc::BPF_JEQ, k, t, f)),
            Op::Jge(k, t, f) => out.push(jump(libc::BPF_JGE, k, t, f)),
            Op::Jset(k, t, f) => out.push(jump(libc::BPF_JSET, k, t, f)),
            Op::Ret(k) => out.push(stmt(libc::BPF_RET | libc::BPF_K, k)),
            Op::Label(_) => {}
        }
    }
    out
}

/// Install the filter on the calling thread. Async-signal-safe (no allocation):
/// it runs in the forked child, which may come from a multi-threaded parent.
/// The caller must have set `PR_SET_NO_NEW_PRIVS` (or hold CAP_SYS_ADMIN).
/// Returns the errno on failure.
///
/// `SECCOMP_FILTER_FLAG_SPEC_ALLOW` keeps the kernel from forcing the
/// speculative-store-bypass mitigation on the process because it is now
/// "sandboxed" (the default on some kernels, `spec_store_bypass_disable=seccomp`),
/// which would slow the very code we measure. Kernels without the flag (< 4.17)
/// get a plain install.
pub fn install(prog: &libc::sock_fprog) -> Result<(), i32> {
    let ptr = prog as *const libc::sock_fprog;
    // SAFETY: seccomp(2) reads the sock_fprog and the instructions it points to,
    // both alive for the duration of the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW,
            ptr,
        )
    };
    if r == 0 {
        return Ok(());
    }
    // SAFETY: as above, without the flag.
    let r = unsafe { libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, ptr) };
    if r == 0 {
        Ok(())
    } else {
        // SAFETY: reading our own thread's errno.
        Err(unsafe { *libc::__errno_location() })
    }
}

/// A `sock_fprog` pointing at `insns` (which must outlive its use).
pub fn fprog(insns: &[libc::sock_filter]) -> libc::sock_fprog {
    libc::sock_fprog {
        len: insns.len() as u16,
        filter: insns.as_ptr() as *mut libc::sock_filter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic-BPF interpreter for the subset `build` emits, to check the
    /// program's decisions without a kernel.
    fn run(prog: &[libc::sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = Vec::with_capacity(64);
        data.extend_from_slice(&(nr as i32).to_ne_bytes());
        data.extend_from_slice(&arch.to_ne_bytes());
        data.extend_from_slice(&0u64.to_ne_bytes());
        for a in args {
            data.extend_from_slice(&a.to_ne_bytes());
        }
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let ins = prog[pc];
            let code = ins.code as u32;
            match code & 0x07 {
                c if c == libc::BPF_LD => {
                    assert_eq!(code, libc::BPF_LD | libc::BPF_W | libc::BPF_ABS);
                    let k = ins.k as usize;
                    assert!(
                        k.is_multiple_of(4) && k + 4 <= data.len(),
                        "load out of seccomp_data"
                    );
                    acc = u32::from_ne_bytes(data[k..k + 4].try_into().unwrap());
                    pc += 1;
                }
                c if c == libc::BPF_JMP => {
                    let taken = match code & 0xf0 {
                        op if op == libc::BPF_JEQ => acc == ins.k,
                        op if op == libc::BPF_JGE => acc >= ins.k,
                        op if op == libc::BPF_JSET => acc & ins.k != 0,
                        op => panic!("unexpected jump op {op:#x}"),
                    };
                    pc += 1 + if taken { ins.jt } else { ins.jf } as usize;
                }
                c if c == libc::BPF_RET => return ins.k,
                c => panic!("unexpected class {c:#x}"),
            }
            assert!(pc < prog.len(), "fell off the end of the program");
        }
    }

    const NONE: [u64; 6] = [0; 6];

    #[test]
    fn traces_the_listed_syscalls_and_allows_the_rest() {
        let prog = build(true);
        assert!(prog.len() < 64, "{} instructions", prog.len());
        for nr in traced_syscalls() {
            assert_eq!(
                run(&prog, NATIVE_ARCH, nr as u32, NONE),
                SECCOMP_RET_TRACE,
                "nr {nr}"
            );
        }
        for nr in [
            libc::SYS_read,
            libc::SYS_close,
            libc::SYS_futex,
            libc::SYS_clone,
            libc::SYS_exit_group,
        ] {
            assert_eq!(
                run(&prog, NATIVE_ARCH, nr as u32, NONE),
                SECCOMP_RET_ALLOW,
                "nr {nr}"
            );
        }
    }

    #[test]
    fn foreign_arch_and_x32_are_allowed() {
        let prog = build(true);
        let openat = libc::SYS_openat as u32;
        assert_eq!(run(&prog, 0x4000_0003, openat, NONE), SECCOMP_RET_ALLOW); // AUDIT_ARCH_I386
        if cfg!(target_arch = "x86_64") {
            assert_eq!(
                run(&prog, NATIVE_ARCH, openat | 0x4000_0000, NONE),
                SECCOMP_RET_ALLOW
            );
        }
    }

    #[test]
    fn mmap_stops_only_for_executable_file_mappings() {
        let prog = build(false);
        let mmap = libc::SYS_mmap as u32;
        let exec = (libc::PROT_READ | libc::PROT_EXEC) as u64;
        let private = libc::MAP_PRIVATE as u64;
        let anon = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u64;
        let ro = libc::PROT_READ as u64;
        assert_eq!(
            run(&prog, NATIVE_ARCH, mmap, [0, 4096, exec, private, 3, 0]),
            SECCOMP_RET_TRACE
        );
        assert_eq!(
            run(&prog, NATIVE_ARCH, mmap, [0, 4096, exec, anon, u64::MAX, 0]),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(
            run(&prog, NATIVE_ARCH, mmap, [0, 4096, ro, private, 3, 0]),
            SECCOMP_RET_ALLOW
        );
        // High bits of an argument are ignored, low 32 bits decide.
        let high = exec | (1u64 << 40);
        assert_eq!(
            run(&prog, NATIVE_ARCH, mmap, [0, 4096, high, private, 3, 0]),
            SECCOMP_RET_TRACE
        );
    }

    #[test]
    fn writes_stop_only_above_stdio_and_only_when_asked() {
        let with = build(true);
        let without = build(false);
        for nr in write_syscalls() {
            for fd in 0..3u64 {
                assert_eq!(
                    run(&with, NATIVE_ARCH, nr as u32, [fd, 0, 0, 0, 0, 0]),
                    SECCOMP_RET_ALLOW
                );
            }
            assert_eq!(
                run(&with, NATIVE_ARCH, nr as u32, [3, 0, 0, 0, 0, 0]),
                SECCOMP_RET_TRACE
            );
            assert_eq!(
                run(&with, NATIVE_ARCH, nr as u32, [77, 0, 0, 0, 0, 0]),
                SECCOMP_RET_TRACE
            );
            assert_eq!(
                run(&without, NATIVE_ARCH, nr as u32, [77, 0, 0, 0, 0, 0]),
                SECCOMP_RET_ALLOW
            );
        }
    }

    /// The kernel accepts the program, and with no tracer attached a TRACEd
    /// syscall fails with ENOSYS (the reason the tracer never detaches) while an
    /// allowed one works.
    #[test]
    fn kernel_accepts_the_filter() {
        let prog = build(true);
        let fp = fprog(&prog);
        // SAFETY: fork in a test; the child only makes raw syscalls and _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: raw syscalls in the child, no allocation.
            unsafe {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    libc::_exit(10);
                }
                if install(&fp).is_err() {
                    libc::_exit(11);
                }
                let fd = libc::openat(libc::AT_FDCWD, c"/".as_ptr(), libc::O_RDONLY);
                if fd != -1 || *libc::__errno_location() != libc::ENOSYS {
                    libc::_exit(12);
                }
                if libc::getppid() <= 0 {
                    libc::_exit(13);
                }
                // write to stdout (fd 1) is allowed; fd 3+ would be traced.
                libc::_exit(0);
            }
        }
        let mut status = 0;
        // SAFETY: waiting for the child we just forked.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(r, pid);
        assert!(libc::WIFEXITED(status), "status {status:#x}");
        assert_eq!(libc::WEXITSTATUS(status), 0);
    }
}
