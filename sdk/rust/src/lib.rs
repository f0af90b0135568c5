//! App checkpoints for coldstart (a cold-start lab for Linux programs): tell it when your
//! program reaches a named point of its start-up.
//!
//! ```
//! coldstart_checkpoint::checkpoint("config-loaded");
//! ```
//!
//! When the environment variable `COLDSTART_FD` names an open, writable file
//! descriptor (plain decimal digits), each call writes one line
//! `cs1 <CLOCK_MONOTONIC ns> <name>\n` to it with a single `write(2)`, so lines
//! from several threads or processes never interleave. Otherwise the call does
//! nothing.
//!
//! * **No-op cost**: the first call reads `COLDSTART_FD` once (`std::env::var_os`,
//!   the only allocation this crate ever makes) and caches the result in an atomic;
//!   every later call with the variable unset or unusable is one atomic load and
//!   one compare.
//! * **No allocation when enabled**: the line is built in a stack buffer.
//! * **Never panics, never kills the process**: errors (a closed fd, a reader that
//!   went away) are ignored; SIGPIPE is avoided with `send(MSG_NOSIGNAL)` on
//!   sockets and by blocking SIGPIPE around `write(2)` on pipes, so it holds
//!   even in a program that restored SIGPIPE's default action. `errno` is left
//!   as it was.
//! * **Names**: `'\n'` and `'\r'` become `' '`; at most 1024 bytes are kept, cut
//!   at a character boundary. The rules and shared test vectors are in
//!   `sdk/vectors/`.
//!
//! On targets other than Linux, `checkpoint` compiles to nothing.

#![deny(missing_docs)]

/// Longest name written, in bytes; longer names are cut at a character boundary.
pub const MAX_NAME_BYTES: usize = 1024;

/// Record the checkpoint `name` (see the crate documentation).
#[inline]
pub fn checkpoint(name: &str) {
    #[cfg(target_os = "linux")]
    imp::checkpoint(name);
    #[cfg(not(target_os = "linux"))]
    let _ = name;
}

/// Test hook: forget the cached `COLDSTART_FD` so the next call reads it again.
/// Not for applications.
#[doc(hidden)]
pub fn __reset_for_tests() {
    #[cfg(target_os = "linux")]
    imp::reset();
}

#[cfg(target_os = "linux")]
mod imp {
    use super::MAX_NAME_BYTES;
    use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

    const UNINIT: i32 = -2;
    const DISABLED: i32 = -1;
    const INITIALIZING: i32 = -3;

    /// `>= 0`: the fd; otherwise one of the constants above.
    static STATE: AtomicI32 = AtomicI32::new(UNINIT);
    /// Identity (st_dev, st_ino) of the fd at first use.
    static DEV: AtomicU64 = AtomicU64::new(0);
    static INO: AtomicU64 = AtomicU64::new(0);

    #[inline]
    pub fn checkpoint(name: &str) {
        let fd = STATE.load(Ordering::Acquire);
        if fd == DISABLED {
            return; // the no-op path
        }
        emit(fd, name);
    }

    pub fn reset() {
        STATE.store(UNINIT, Ordering::Release);
    }

    /// Strict decimal: 1..10 ASCII digits, value <= i32::MAX.
    fn parse_fd(s: &[u8]) -> Option<i32> {
        if s.is_empty() || s.len() > 10 || !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let v = s.iter().fold(0i64, |v, d| v * 10 + i64::from(d - b'0'));
        i32::try_from(v).ok()
    }

    fn init() -> i32 {
        if let Err(current) =
            STATE.compare_exchange(UNINIT, INITIALIZING, Ordering::AcqRel, Ordering::Acquire)
        {
            let mut s = current;
            while s == INITIALIZING {
                std::thread::yield_now();
                s = STATE.load(Ordering::Acquire);
            }
            return s;
        }
        use std::os::unix::ffi::OsStrExt;
        let mut result = DISABLED;
        if let Some(fd) = std::env::var_os("COLDSTART_FD").and_then(|v| parse_fd(v.as_bytes())) {
            // SAFETY: fcntl and fstat on any integer are safe; `st` is written by fstat.
            unsafe {
                let fl = libc::fcntl(fd, libc::F_GETFL);
                let mode = fl & libc::O_ACCMODE;
                let mut st: libc::stat = std::mem::zeroed();
                if fl != -1
                    && (mode == libc::O_WRONLY || mode == libc::O_RDWR)
                    && libc::fstat(fd, &mut st) == 0
                {
                    DEV.store(st.st_dev as u64, Ordering::Relaxed);
                    INO.store(st.st_ino as u64, Ordering::Relaxed);
                    result = fd;
                }
            }
        }
        STATE.store(result, Ordering::Release);
        result
    }

    fn emit(mut fd: i32, name: &str) {
        // SAFETY: errno is thread-local; we put back what we found.
        let errno = unsafe { *libc::__errno_location() };
        if fd < 0 {
            fd = init();
        }
        if fd >= 0 {
            write_line(fd, name);
        }
        unsafe { *libc::__errno_location() = errno };
    }

    /// Copy `name` following the protocol: '\n' and '\r' become ' ', at most
    /// MAX_NAME_BYTES bytes, cut at a character boundary. Returns the length.
    pub(crate) fn copy_name(dst: &mut [u8], name: &str) -> usize {
        let mut end = name.len().min(MAX_NAME_BYTES);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        for (d, &b) in dst.iter_mut().zip(&name.as_bytes()[..end]) {
            *d = if b == b'\n' || b == b'\r' { b' ' } else { b };
        }
        end
    }

    fn write_line(fd: i32, name: &str) {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a valid timespec.
        if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } != 0 {
            return;
        }
        let ns = (ts.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(ts.tv_nsec as u64);

        let mut line = [0u8; 4 + 20 + 1 + MAX_NAME_BYTES + 1];
        line[..4].copy_from_slice(b"cs1 ");
        let mut n = 4;
        let mut digits = [0u8; 20];
        let mut d = 0;
        let mut v = ns;
        loop {
            digits[d] = b'0' + (v % 10) as u8;
            d += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        for k in (0..d).rev() {
            line[n] = digits[k];
            n += 1;
        }
        line[n] = b' ';
        n += 1;
        n += copy_name(&mut line[n..n + MAX_NAME_BYTES], name);
        line[n] = b'\n';
        n += 1;
        let line = &line[..n];

        // SAFETY: plain syscalls on an integer fd with valid buffers.
        unsafe {
            // The fd must still be the file it was at first use: an app may have
            // closed it and reused the number, and its data must never get our line.
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) != 0
                || st.st_dev as u64 != DEV.load(Ordering::Relaxed)
                || st.st_ino as u64 != INO.load(Ordering::Relaxed)
            {
                STATE.store(DISABLED, Ordering::Release);
                return;
            }
            let ptr = line.as_ptr().cast();
            match st.st_mode & libc::S_IFMT {
                libc::S_IFSOCK => retry(|| libc::send(fd, ptr, line.len(), libc::MSG_NOSIGNAL)),
                libc::S_IFIFO => write_pipe(fd, line),
                _ => retry(|| libc::write(fd, ptr, line.len())),
            }
        }
    }

    fn retry(mut f: impl FnMut() -> isize) {
        // SAFETY: reading errno.
        while f() < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {}
    }

    /// write(2) on a pipe without letting SIGPIPE reach the process.
    unsafe fn write_pipe(fd: i32, line: &[u8]) {
        let mut pipe_set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe_set);
        libc::sigaddset(&mut pipe_set, libc::SIGPIPE);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &pipe_set, &mut old) != 0 {
            return;
        }
        let was_pending =
            libc::sigpending(&mut pending) == 0 && libc::sigismember(&pending, libc::SIGPIPE) == 1;
        let mut r;
        loop {
            r = libc::write(fd, line.as_ptr().cast(), line.len());
            if !(r < 0 && *libc::__errno_location() == libc::EINTR) {
                break;
            }
        }
        if r < 0 && *libc::__errno_location() == libc::EPIPE && !was_pending {
            // Consume the SIGPIPE this write raised, so unblocking does not deliver it.
            let zero = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            while libc::sigtimedwait(&pipe_set, std::ptr::null_mut(), &zero) < 0
                && *libc::__errno_location() == libc::EINTR
            {}
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn parse_fd_is_strict() {
            assert_eq!(parse_fd(b"3"), Some(3));
            assert_eq!(parse_fd(b"003"), Some(3));
            assert_eq!(parse_fd(b"2147483647"), Some(i32::MAX));
            for bad in [
                &b""[..],
                b"-1",
                b"+3",
                b" 3",
                b"3 ",
                b"0x3",
                b"2147483648",
                b"99999999999",
            ] {
                assert_eq!(parse_fd(bad), None, "{:?}", String::from_utf8_lossy(bad));
            }
        }

        #[test]
        fn copy_name_cuts_at_char_boundary() {
            let mut buf = [0u8; MAX_NAME_BYTES];
            let name = format!("{}é", "a".repeat(1023));
            assert_eq!(copy_name(&mut buf, &name), 1023);
        }
    }
}
