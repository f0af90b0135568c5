//! fcntl(2) on descriptors we own.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Set O_NONBLOCK on `fd` (keeping its other status flags).
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on a descriptor the borrow keeps open; no memory is passed.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Clear FD_CLOEXEC on `fd`: a child started after this inherits it.
pub fn set_inheritable(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: F_SETFD on a descriptor the borrow keeps open; no memory is passed.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A close-on-exec copy of `fd` numbered `min` or higher (F_DUPFD_CLOEXEC).
pub fn dup_at_least(fd: BorrowedFd<'_>, min: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: fcntl on a descriptor the borrow keeps open; no memory is passed.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, min) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn fl(fd: &OwnedFd, cmd: i32) -> i32 {
        // SAFETY: F_GETFL/F_GETFD on a descriptor we own.
        unsafe { libc::fcntl(fd.as_raw_fd(), cmd) }
    }

    #[test]
    fn set_nonblocking_sets_only_o_nonblock() {
        let (r, _w) = crate::pipe::pipe(false).expect("pipe");
        assert_eq!(fl(&r, libc::F_GETFL) & libc::O_NONBLOCK, 0);
        set_nonblocking(r.as_fd()).expect("set");
        let flags = fl(&r, libc::F_GETFL);
        assert_eq!(flags & libc::O_NONBLOCK, libc::O_NONBLOCK);
        assert_eq!(flags & libc::O_ACCMODE, libc::O_RDONLY);
        assert_eq!(
            fl(&r, libc::F_GETFD) & libc::FD_CLOEXEC,
            libc::FD_CLOEXEC,
            "FD flags untouched"
        );
    }

    #[test]
    fn set_inheritable_clears_cloexec() {
        let (r, _w) = crate::pipe::pipe(false).expect("pipe");
        set_inheritable(r.as_fd()).expect("set");
        assert_eq!(fl(&r, libc::F_GETFD) & libc::FD_CLOEXEC, 0);
    }

    #[test]
    fn dup_at_least_is_high_and_cloexec() {
        let (r, _w) = crate::pipe::pipe(false).expect("pipe");
        let copy = dup_at_least(r.as_fd(), 200).expect("dup");
        assert!(copy.as_raw_fd() >= 200);
        assert_ne!(copy.as_raw_fd(), r.as_raw_fd());
        assert_eq!(fl(&copy, libc::F_GETFD) & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
    }
}
