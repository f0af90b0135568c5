//! pipe2(2).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// A pipe whose ends are both close-on-exec (a child gets one only through an
/// explicit dup), `(read, write)`. `nonblocking` sets O_NONBLOCK on both ends.
pub fn pipe(nonblocking: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    let flags = libc::O_CLOEXEC | if nonblocking { libc::O_NONBLOCK } else { 0 };
    // SAFETY: pipe2 writes two descriptors into the two-element array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh, open, and owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn ends_are_cloexec_and_connected() {
        let (r, w) = pipe(false).expect("pipe");
        for fd in [&r, &w] {
            use std::os::fd::AsRawFd;
            // SAFETY: F_GETFD on a descriptor we own.
            let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) };
            assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
        }
        let mut w = std::fs::File::from(w);
        w.write_all(b"x").expect("write");
        drop(w);
        let mut s = String::new();
        std::fs::File::from(r).read_to_string(&mut s).expect("read");
        assert_eq!(s, "x");
    }

    #[test]
    fn nonblocking_read_would_block() {
        let (r, _w) = pipe(true).expect("pipe");
        let mut buf = [0u8; 1];
        let e = std::fs::File::from(r).read(&mut buf).expect_err("empty pipe");
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }
}
