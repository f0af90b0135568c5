//! The page cache of one file: drop its clean pages (posix_fadvise DONTNEED),
//! count its resident pages (mmap + mincore), and the whole-system `sync(2)`.
//! Eviction needs no privilege: any process that can open a file for reading
//! may advise the kernel to drop its pages. Pages that are dirty or mapped by a
//! live process stay; callers sync first and verify with [`residency`].

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Pages of a file in the page cache, and its size in pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Residency {
    pub resident: u64,
    pub pages: u64,
}

/// The kernel's page size in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf reads a constant; no memory is passed.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as u64
    } else {
        4096
    }
}

/// Ask the kernel to drop `file`'s clean cached pages (all of the file).
pub fn drop_pages(file: &File) -> io::Result<()> {
    // SAFETY: posix_fadvise on a descriptor the borrow keeps open; no memory is
    // passed. It returns the error number instead of setting errno.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// How many of `file`'s pages are in the page cache now. Maps the file
/// read-only and shared (no page is read in by mapping it) and asks mincore(2).
pub fn residency(file: &File) -> io::Result<Residency> {
    let len = file.metadata()?.len();
    let page = page_size();
    let pages = len.div_ceil(page);
    if pages == 0 {
        return Ok(Residency::default());
    }
    let Ok(len) = usize::try_from(len) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "file too large to map",
        ));
    };
    // SAFETY: a fresh shared read-only mapping of `len` bytes of a file we hold
    // open; the kernel picks the address. Nothing reads through it (only
    // mincore looks at it), so a file truncated meanwhile cannot fault us.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let mut vec = vec![0u8; pages as usize];
    // SAFETY: `addr` is the page-aligned start of our mapping of `len` bytes and
    // `vec` holds one byte per page of it, as mincore requires.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    let err = (rc != 0).then(io::Error::last_os_error);
    // SAFETY: unmapping exactly the mapping made above, which nothing else uses.
    unsafe { libc::munmap(addr, len) };
    if let Some(e) = err {
        return Err(e);
    }
    let resident = vec.iter().filter(|b| **b & 1 != 0).count() as u64;
    Ok(Residency { resident, pages })
}

/// Flush every file system's dirty data (sync(2); it cannot fail).
pub fn sync_all() {
    // SAFETY: sync takes no arguments and touches no memory of ours.
    unsafe { libc::sync() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::path::PathBuf;

    /// A file under the target directory (/tmp may be tmpfs, whose pages cannot
    /// be dropped), removed when dropped.
    struct Temp(PathBuf, File);

    impl Drop for Temp {
        fn drop(&mut self) {
            std::fs::remove_file(&self.0).ok();
        }
    }

    fn temp(tag: &str) -> Temp {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/pagecache-tests");
        std::fs::create_dir_all(&dir).expect("test dir");
        let path = dir.join(format!("{tag}-{}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .expect("create");
        Temp(path, f)
    }

    #[test]
    fn dropped_pages_leave_the_cache_and_reading_brings_them_back() {
        let mut t = temp("evict");
        let chunk = vec![7u8; 1 << 20];
        for _ in 0..8 {
            t.1.write_all(&chunk).expect("write");
        }
        // Dirty pages cannot be dropped: write them back first.
        t.1.sync_all().expect("sync");
        let before = residency(&t.1).expect("mincore");
        assert_eq!(before.pages, 8 * (1 << 20) / page_size());
        drop_pages(&t.1).expect("fadvise");
        let after = residency(&t.1).expect("mincore");
        assert!(
            after.resident <= after.pages / 100,
            "evicted, at most 1% left: {after:?}"
        );
        let mut sink = Vec::new();
        File::open(&t.0)
            .expect("reopen")
            .read_to_end(&mut sink)
            .expect("read");
        let read = residency(&t.1).expect("mincore");
        assert!(read.resident >= read.pages * 99 / 100, "read back in: {read:?}");
    }

    #[test]
    fn an_empty_file_has_no_pages() {
        let t = temp("empty");
        assert_eq!(residency(&t.1).expect("mincore"), Residency::default());
        drop_pages(&t.1).expect("fadvise of an empty file");
    }
}
