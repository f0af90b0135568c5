//! Reading a stopped tracee: its memory (strings, sockaddrs) and what /proc says
//! about it (fd targets, cwd, exe, tgid, listening sockets).
//!
//! Every function here returns `None`/empty on failure: a task can die between
//! two reads (it was SIGKILLed, or its whole thread group exited), and a missing
//! detail must never stop the tracer.

use super::SockAddr;
use std::ffi::OsStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Longest string we read from a tracee (PATH_MAX).
const MAX_STR: usize = 4096;
/// Chunks never cross a 4 KiB boundary, so one unmapped page after a string
/// cannot make the read fail (4 KiB divides every Linux page size).
const CHUNK: u64 = 4096;

/// Read up to `buf.len()` bytes at `addr` in `tid`'s memory; returns how many.
pub fn read_mem(tid: i32, addr: u64, buf: &mut [u8]) -> usize {
    if buf.is_empty() || addr == 0 {
        return 0;
    }
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: process_vm_readv writes at most `buf.len()` bytes into `buf`; the
    // remote range is only read, in the other process, with checks by the kernel.
    let n = unsafe { libc::process_vm_readv(tid, &local, 1, &remote, 1, 0) };
    if n >= 0 {
        return n as usize;
    }
    // Kernels without CONFIG_CROSS_MEMORY_ATTACH (ENOSYS), or policies refusing
    // it: fall back to PTRACE_PEEKDATA, one word per call.
    peek_mem(tid, addr, buf)
}

fn peek_mem(tid: i32, addr: u64, buf: &mut [u8]) -> usize {
    const W: usize = std::mem::size_of::<libc::c_long>();
    let mut done = 0;
    while done < buf.len() {
        let at = addr + done as u64;
        // PEEKDATA returns the word itself, so -1 is ambiguous: clear errno first.
        // SAFETY: errno is thread-local; ptrace(PEEKDATA) has no memory effects here.
        let word = unsafe {
            *libc::__errno_location() = 0;
            libc::ptrace(
                libc::PTRACE_PEEKDATA,
                tid,
                at as *mut libc::c_void,
                std::ptr::null_mut::<u8>(),
            )
        };
        // SAFETY: reading our own thread's errno.
        if word == -1 && unsafe { *libc::__errno_location() } != 0 {
            break;
        }
        let bytes = word.to_ne_bytes();
        let take = (buf.len() - done).min(W);
        buf[done..done + take].copy_from_slice(&bytes[..take]);
        done += take;
    }
    done
}

/// Read a NUL-terminated string (lossy UTF-8) of at most PATH_MAX bytes.
pub fn read_cstr(tid: i32, addr: u64) -> Option<String> {
    if addr == 0 {
        return None;
    }
    let mut out = Vec::new();
    let mut at = addr;
    let mut chunk = [0u8; CHUNK as usize];
    while out.len() < MAX_STR {
        let len = (CHUNK - at % CHUNK) as usize;
        let n = read_mem(tid, at, &mut chunk[..len]);
        if n == 0 {
            break;
        }
        if let Some(end) = chunk[..n].iter().position(|&b| b == 0) {
            out.extend_from_slice(&chunk[..end]);
            return Some(String::from_utf8_lossy(&out).into_owned());
        }
        out.extend_from_slice(&chunk[..n]);
        if n < len {
            break;
        }
        at += n as u64;
    }
    if out.is_empty() {
        None
    } else {
        Some(String::from_utf8_lossy(&out).into_owned())
    }
}

/// Read and decode a sockaddr of `len` bytes.
pub fn read_sockaddr(tid: i32, addr: u64, len: u64) -> Option<SockAddr> {
    let mut buf = [0u8; 128]; // sizeof(struct sockaddr_storage)
    let len = (len as usize).min(buf.len());
    let n = read_mem(tid, addr, &mut buf[..len]);
    decode_sockaddr(&buf[..n])
}

/// Decode the bytes of a sockaddr (family in native byte order, ports and IPv4/6
/// addresses in network byte order, as the kernel reads them).
pub fn decode_sockaddr(b: &[u8]) -> Option<SockAddr> {
    let family = u16::from_ne_bytes(b.get(0..2)?.try_into().ok()?);
    match family as i32 {
        libc::AF_INET => {
            let port = u16::from_be_bytes(b.get(2..4)?.try_into().ok()?);
            let ip: [u8; 4] = b.get(4..8)?.try_into().ok()?;
            Some(SockAddr::Inet {
                ip: IpAddr::V4(Ipv4Addr::from(ip)),
                port,
            })
        }
        libc::AF_INET6 => {
            let port = u16::from_be_bytes(b.get(2..4)?.try_into().ok()?);
            let ip: [u8; 16] = b.get(8..24)?.try_into().ok()?;
            Some(SockAddr::Inet {
                ip: IpAddr::V6(Ipv6Addr::from(ip)),
                port,
            })
        }
        libc::AF_UNIX => {
            let path = b.get(2..).unwrap_or_default();
            Some(SockAddr::Unix {
                path: unix_path(path),
            })
        }
        _ => Some(SockAddr::Other { af: family }),
    }
}

/// sun_path: NUL-terminated, or abstract (leading NUL; shown as `@name`,
/// length given by addrlen), or empty (unnamed / autobind).
fn unix_path(p: &[u8]) -> String {
    match p.first() {
        None => String::new(),
        Some(0) => format!("@{}", String::from_utf8_lossy(&p[1..])),
        Some(_) => {
            let end = p.iter().position(|&b| b == 0).unwrap_or(p.len());
            String::from_utf8_lossy(&p[..end]).into_owned()
        }
    }
}

pub fn readlink(path: &str) -> Option<String> {
    std::fs::read_link(path)
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

pub fn fd_target(tid: i32, fd: i32) -> Option<String> {
    readlink(&format!("/proc/{tid}/fd/{fd}"))
}

pub fn exe(tid: i32) -> Option<String> {
    readlink(&format!("/proc/{tid}/exe"))
}

/// The argv of `tid`'s current program, from /proc/pid/cmdline (at most 8 KiB:
/// enough for a program, its script and its options; a long tail is cut).
pub fn argv(tid: i32) -> Option<Vec<String>> {
    use std::io::Read;
    let f = std::fs::File::open(format!("/proc/{tid}/cmdline")).ok()?;
    let mut buf = Vec::with_capacity(1024);
    f.take(8192).read_to_end(&mut buf).ok()?;
    if buf.last() == Some(&0) {
        buf.pop();
    }
    Some(
        buf.split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

/// The name of a task (`/proc/tid/comm`: a thread's name as the program set
/// it, a process's program name otherwise). Readable only while it lives.
pub fn comm(tid: i32) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/comm")).ok()?;
    Some(s.trim_end_matches('\n').to_string())
}

/// A process's main thread's scheduler accounting (`/proc/PID/schedstat`):
/// ns on a CPU and ns waiting on a run queue, since it started (exec keeps
/// them: they count the task, not the program).
pub fn schedstat(pid: i32) -> Option<(u64, u64)> {
    schedstat_at(&format!("/proc/{pid}/schedstat"))
}

/// The calling thread's [`schedstat`].
pub fn own_schedstat() -> Option<(u64, u64)> {
    schedstat_at("/proc/thread-self/schedstat")
}

fn schedstat_at(path: &str) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(path).ok()?;
    let mut it = s.split_ascii_whitespace().map(|x| x.parse::<u64>().ok());
    Some((it.next()??, it.next()??))
}

/// Every live thread of process `tgid` with its name.
pub fn thread_names(tgid: i32) -> Vec<(i32, String)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{tgid}/task")) else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|tid| Some((tid, comm(tid)?)))
        .collect()
}

/// Thread group id of `tid` (its process), from /proc/tid/status.
pub fn tgid(tid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Whether `tid` is a thread of process `tgid` (one stat of /proc/tgid/task/tid).
pub fn is_thread_of(tgid: i32, tid: i32) -> bool {
    Path::new(&format!("/proc/{tgid}/task/{tid}")).exists()
}

/// An absolute form of `path` as seen by `tid` (relative to `dirfd`, or to the
/// cwd for AT_FDCWD). Left as is when the base cannot be read.
pub fn resolve_at(tid: i32, dirfd: i32, path: String) -> String {
    if path.starts_with('/') {
        return path;
    }
    let base = if dirfd == libc::AT_FDCWD {
        readlink(&format!("/proc/{tid}/cwd"))
    } else {
        fd_target(tid, dirfd)
    };
    match base {
        Some(base) if base.starts_with('/') => join(&base, &path),
        _ => path,
    }
}

pub fn join(base: &str, rel: &str) -> String {
    let rel = rel.trim_start_matches("./");
    if rel.is_empty() || rel == "." || rel == "./" {
        return base.to_string();
    }
    if base.ends_with('/') {
        format!("{base}{rel}")
    } else {
        format!("{base}/{rel}")
    }
}

/// The inode of a socket fd ("socket:[12345]").
pub fn socket_inode(tid: i32, fd: i32) -> Option<u64> {
    let target = fd_target(tid, fd)?;
    target.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// The local address of socket `fd` of thread `tid` (process `tgid`), asked of the
/// socket itself: a copy of the fd through `pidfd_getfd(2)` (Linux >= 5.6; we are
/// the tracer, so the ptrace access check passes), then `getsockname(2)`. About
/// ten microseconds, where [`socket_local_addr`] reads /proc/net tables whose
/// cost grows with the size of the kernel's TCP hash (~2.5 ms *per read* of
/// /proc/net/tcp on a 256 Ki-bucket table, and a table takes two reads).
///
/// The pidfd is opened on the process (a non-leader tid needs `PIDFD_THREAD`,
/// Linux >= 6.9); a thread that unshared its fd table would then show another
/// socket, so the copy is used only if its inode is `inode` (from `tid`'s own
/// /proc/tid/fd). `None` when any step fails: the caller falls back to the tables.
pub fn socket_name(tgid: i32, fd: i32, inode: u64) -> Option<SockAddr> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let pidfd = coldstart_sys::process::pidfd_open(tgid).ok()?;
    // SAFETY: pidfd_getfd takes integers; a returned fd is a new one of ours.
    let sock = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if sock < 0 {
        return None;
    }
    // SAFETY: fresh descriptor we own.
    let sock = unsafe { OwnedFd::from_raw_fd(sock as i32) };
    // SAFETY: an all-zero stat is a valid out-buffer; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes into our local.
    if unsafe { libc::fstat(sock.as_raw_fd(), &mut st) } != 0 || st.st_ino != inode {
        return None;
    }
    // SAFETY: an all-zero sockaddr_storage is valid; getsockname writes at most `len` bytes.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: as above.
    let r = unsafe {
        libc::getsockname(
            sock.as_raw_fd(),
            (&mut ss as *mut libc::sockaddr_storage).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return None;
    }
    // SAFETY: the kernel wrote `len` bytes (at most the storage's size) into `ss`.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            (&ss as *const libc::sockaddr_storage).cast::<u8>(),
            (len as usize).min(std::mem::size_of::<libc::sockaddr_storage>()),
        )
    };
    decode_sockaddr(bytes)
}

/// The local address of the socket with `inode`, from the tables of `tid`'s
/// network namespace (/proc/tid/net/{tcp,tcp6,udp,udp6,unix}). Slow (see
/// [`socket_name`]): never call it while a tracee is held stopped.
pub fn socket_local_addr(tid: i32, inode: u64) -> Option<SockAddr> {
    for table in ["tcp", "tcp6", "udp", "udp6"] {
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{tid}/net/{table}")) {
            if let Some(a) = find_inet(&text, inode) {
                return Some(a);
            }
        }
    }
    let text = std::fs::read(format!("/proc/{tid}/net/unix")).ok()?;
    find_unix(OsStr::from_bytes(&text).to_string_lossy().as_ref(), inode)
}

/// Find `inode` in a /proc/net/tcp-style table and decode its local address.
/// Lines: `sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...`;
/// addresses are the kernel's in-memory words printed as hex (so each 32-bit
/// word is in host byte order), the port is plain hex.
pub fn find_inet(table: &str, inode: u64) -> Option<SockAddr> {
    for line in table.lines().skip(1) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() < 10 || cols[9].parse::<u64>().ok() != Some(inode) {
            continue;
        }
        let (addr, port) = cols[1].split_once(':')?;
        let port = u16::from_str_radix(port, 16).ok()?;
        let words: Option<Vec<u32>> = (0..addr.len() / 8)
            .map(|i| u32::from_str_radix(addr.get(i * 8..i * 8 + 8)?, 16).ok())
            .collect();
        let bytes: Vec<u8> = words?.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let ip = match bytes.len() {
            4 => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(bytes.as_slice()).ok()?)),
            16 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(bytes.as_slice()).ok()?)),
            _ => return None,
        };
        return Some(SockAddr::Inet { ip, port });
    }
    None
}

/// Find `inode` in /proc/net/unix: `Num RefCount Protocol Flags Type St Inode [Path]`.
pub fn find_unix(table: &str, inode: u64) -> Option<SockAddr> {
    table.lines().skip(1).find_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() >= 7 && cols[6].parse::<u64>().ok() == Some(inode) {
            Some(SockAddr::Unix {
                path: cols.get(7).map(|p| p.to_string()).unwrap_or_default(),
            })
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_inet_inet6_unix() {
        let mut v4 = vec![0u8; 16];
        v4[0..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        v4[2..4].copy_from_slice(&8080u16.to_be_bytes());
        v4[4..8].copy_from_slice(&[127, 0, 0, 1]);
        assert_eq!(decode_sockaddr(&v4).unwrap().to_string(), "127.0.0.1:8080");

        let mut v6 = vec![0u8; 28];
        v6[0..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        v6[2..4].copy_from_slice(&443u16.to_be_bytes());
        v6[23] = 1;
        assert_eq!(decode_sockaddr(&v6).unwrap().to_string(), "[::1]:443");

        let mut un = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        un.extend_from_slice(b"/run/x.sock\0garbage");
        assert_eq!(decode_sockaddr(&un).unwrap().to_string(), "unix:/run/x.sock");
        let mut abs = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        abs.extend_from_slice(b"\0name");
        assert_eq!(decode_sockaddr(&abs).unwrap().to_string(), "unix:@name");

        assert_eq!(decode_sockaddr(&[1]), None);
        let netlink = (libc::AF_NETLINK as u16).to_ne_bytes();
        assert_eq!(decode_sockaddr(&netlink), Some(SockAddr::Other { af: 16 }));
    }

    #[test]
    fn finds_sockets_in_proc_net_tables() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n";
        let want = SockAddr::Inet {
            ip: "127.0.0.1".parse().unwrap(),
            port: 8080,
        };
        if cfg!(target_endian = "little") {
            assert_eq!(find_inet(tcp, 4242), Some(want));
        }
        assert_eq!(find_inet(tcp, 4243), None);
        let tcp6 = "header\n   0: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1\n";
        if cfg!(target_endian = "little") {
            assert_eq!(find_inet(tcp6, 77).unwrap().to_string(), "[::1]:80");
        }
        let unix = "Num       RefCount Protocol Flags    Type St Inode Path\n0000: 00000002 00000000 00010000 0001 01 99 /tmp/s.sock\n0000: 00000002 00000000 00010000 0001 01 100\n";
        assert_eq!(find_unix(unix, 99).unwrap().to_string(), "unix:/tmp/s.sock");
        assert_eq!(find_unix(unix, 100).unwrap().to_string(), "unix:(unnamed)");
    }

    #[test]
    fn names_a_socket_through_a_copy_of_its_fd() {
        use std::os::fd::AsRawFd;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let want = l.local_addr().unwrap();
        let me = std::process::id() as i32;
        let fd = l.as_raw_fd();
        let ino = socket_inode(me, fd).expect("a socket inode");
        // pidfd_getfd needs Linux >= 5.6; older kernels use the /proc/net fallback.
        if let Some(got) = socket_name(me, fd, ino) {
            assert_eq!(got.to_string(), want.to_string());
        }
        assert_eq!(socket_name(me, fd, ino + 1), None, "another socket's inode");
        assert_eq!(
            socket_local_addr(me, ino).map(|a| a.to_string()),
            Some(want.to_string())
        );
    }

    #[test]
    fn reads_strings_across_page_ends_and_resolves_paths() {
        // Our own memory: a string that ends 3 bytes before a page boundary and
        // one that straddles it.
        let mut page = vec![b'x'; 3 * CHUNK as usize];
        let base = page.as_ptr() as u64;
        let boundary = (base / CHUNK + 1) * CHUNK;
        let start = (boundary - base) as usize - 5;
        page[start + 10] = 0;
        let me = std::process::id() as i32;
        let s = read_cstr(me, base + start as u64).unwrap();
        assert_eq!(s, "x".repeat(10));
        assert_eq!(read_cstr(me, 0), None);

        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            resolve_at(me, libc::AT_FDCWD, "a/b".into()),
            format!("{}/a/b", cwd.display())
        );
        assert_eq!(resolve_at(me, libc::AT_FDCWD, "/abs".into()), "/abs");
        assert_eq!(join("/x/", "./y"), "/x/y");
        assert_eq!(tgid(me), Some(me));
    }
}
