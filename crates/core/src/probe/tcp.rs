//! `tcp:[HOST:]PORT`: ready when a connect succeeds. Also the connect path of the
//! http probe and the requests: one non-blocking connect that can never be a
//! connection of the probe to itself.
//!
//! Linux may pick the destination port itself as the source port of a connect to
//! a port in the ephemeral range (32768–60999): with nothing listening the SYN
//! meets its own socket and the "simultaneous open" succeeds. So the source port
//! is bound explicitly (port 0, re-picked if the kernel hands out the target
//! port), and a connection whose local address equals its peer is still refused.

use anyhow::{anyhow, Context, Result};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};

/// Resolve once, up front, so no DNS lookup sits inside a measured interval.
pub fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host}:{port}"))?
        .next()
        .ok_or_else(|| anyhow!("{host}:{port} resolves to no address"))
}

/// A loopback port nothing listens on, for servers coldstart starts itself (the
/// demo, tests): random in 20000–32000, below the kernel's ephemeral range
/// (32768–60999) where any client's source port could take it, and checked free
/// by binding it.
pub fn unused_port() -> Result<u16> {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    for _ in 0..1000 {
        let port = rng.gen_range(20000..32000);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    anyhow::bail!("no free loopback port in 20000–32000 after 1000 tries: too many listeners on 127.0.0.1?")
}

/// One non-blocking connect attempt in flight (or already finished).
pub struct Connecting {
    socket: Socket,
    target: SocketAddr,
}

/// Where an attempt stands.
pub enum Connect {
    /// Connected to a listener (never to itself); the stream is non-blocking.
    Done(TcpStream),
    /// Still in the handshake: wait for the descriptor to become writable.
    Pending(Connecting),
    /// Refused, reset, unreachable, or a self-connection.
    Failed(io::Error),
}

/// Start a connect to `target` without blocking.
pub fn connect(target: &SocketAddr) -> Connect {
    match start(target) {
        Ok(c) => c,
        Err(e) => Connect::Failed(e),
    }
}

fn start(target: &SocketAddr) -> io::Result<Connect> {
    let socket = source_socket(target)?;
    match socket.connect(&SockAddr::from(*target)) {
        Ok(()) => Ok(established(socket, target)),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
            let c = Connecting {
                socket,
                target: *target,
            };
            // On loopback the handshake (or the refusal) is usually over by now:
            // settle it here rather than costing the caller a wake-up.
            Ok(if c.settled() {
                c.finish()
            } else {
                Connect::Pending(c)
            })
        }
        Err(e) => Ok(Connect::Failed(e)),
    }
}

/// A non-blocking socket bound to a source port that is not the target's.
fn source_socket(target: &SocketAddr) -> io::Result<Socket> {
    let fresh = || -> io::Result<Socket> {
        let s = Socket::new(
            Domain::for_address(*target),
            Type::STREAM.nonblocking(),
            Some(Protocol::TCP),
        )?;
        let any: SocketAddr = match target {
            SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
            SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        s.bind(&any.into())?;
        Ok(s)
    };
    let first = fresh()?;
    if local_port(&first) != Some(target.port()) {
        return Ok(first);
    }
    // The kernel handed out the target port itself: keep it bound while asking
    // again, so the second pick cannot be the same port.
    let second = fresh()?;
    drop(first);
    if local_port(&second) == Some(target.port()) {
        return Err(io::Error::other("no source port other than the target's"));
    }
    Ok(second)
}

fn local_port(s: &Socket) -> Option<u16> {
    s.local_addr().ok()?.as_socket().map(|a| a.port())
}

fn established(socket: Socket, target: &SocketAddr) -> Connect {
    match (socket.local_addr(), socket.peer_addr()) {
        (Ok(local), Ok(peer)) if is_self_connection(&local, &peer) => Connect::Failed(io::Error::other(
            format!("connected to itself on {target} (nothing listens there)"),
        )),
        (_, Ok(_)) => Connect::Done(socket.into()),
        (_, Err(e)) => Connect::Failed(e),
    }
}

/// Local address == peer address: the TCP simultaneous open of a socket with
/// itself, which Linux allows when the source port equals the destination's.
pub fn is_self_connection(local: &SockAddr, peer: &SockAddr) -> bool {
    match (local.as_socket(), peer.as_socket()) {
        (Some(l), Some(p)) => l == p,
        _ => false,
    }
}

impl Connecting {
    pub fn fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    /// Whether the handshake is over (writable or errored), without waiting.
    fn settled(&self) -> bool {
        let mut fds = [libc::pollfd {
            fd: self.fd(),
            events: libc::POLLOUT,
            revents: 0,
        }];
        crate::launch::wait::ppoll(&mut fds, 0) > 0
    }

    /// Call when the descriptor polled writable (or errored).
    pub fn finish(self) -> Connect {
        match self.socket.take_error() {
            Ok(None) => {}
            Ok(Some(e)) | Err(e) => return Connect::Failed(e),
        }
        match self.socket.peer_addr() {
            Ok(_) => established(self.socket, &self.target),
            // ENOTCONN: not finished after all (a spurious wake-up).
            Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => Connect::Pending(self),
            Err(e) => Connect::Failed(e),
        }
    }
}

/// Whether something accepts connections on `addr` right now (blocking, up to
/// `timeout`; on loopback a closed port refuses at once). A self-connection is
/// not a listener.
pub fn accepts(addr: &SocketAddr, timeout: std::time::Duration) -> bool {
    let deadline = coldstart_sys::clock::now_ns() + timeout.as_nanos() as u64;
    let mut attempt = connect(addr);
    loop {
        match attempt {
            Connect::Done(_) => return true,
            Connect::Failed(_) => return false,
            Connect::Pending(c) => {
                let now = coldstart_sys::clock::now_ns();
                if now >= deadline {
                    return false;
                }
                let mut fds = [libc::pollfd {
                    fd: c.fd(),
                    events: libc::POLLOUT,
                    revents: 0,
                }];
                crate::launch::wait::ppoll(&mut fds, deadline - now);
                attempt = c.finish();
            }
        }
    }
}

/// `tcp:` readiness: a connect attempt every poll interval until one succeeds.
pub struct TcpProbe {
    addr: SocketAddr,
    attempt: Option<Connecting>,
}

impl TcpProbe {
    pub fn new(host: &str, port: u16) -> Result<Self> {
        Ok(TcpProbe {
            addr: resolve(host, port)?,
            attempt: None,
        })
    }

    /// The descriptor of the attempt in flight (wait for POLLOUT).
    pub fn fd(&self) -> Option<RawFd> {
        self.attempt.as_ref().map(Connecting::fd)
    }

    /// Advance: finish the attempt in flight, or start one when none is. True
    /// when connected; false when the next attempt is due after the interval
    /// (or the one in flight needs more waiting, see [`TcpProbe::fd`]).
    pub fn step(&mut self) -> bool {
        let outcome = match self.attempt.take() {
            Some(c) => c.finish(),
            None => connect(&self.addr),
        };
        match outcome {
            Connect::Done(_) => true,
            Connect::Pending(c) => {
                self.attempt = Some(c);
                false
            }
            Connect::Failed(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_connected_to_itself_is_recognised() {
        // Build the self-connection deliberately: bind a port, then connect to it
        // from the same socket (TCP simultaneous open with itself).
        let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        s.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into()).unwrap();
        let me = s.local_addr().unwrap();
        s.connect(&me)
            .expect("Linux lets a socket connect to its own address");
        let (local, peer) = (s.local_addr().unwrap(), s.peer_addr().unwrap());
        assert!(is_self_connection(&local, &peer), "{local:?} vs {peer:?}");
        assert!(matches!(
            established(s, &me.as_socket().unwrap()),
            Connect::Failed(_)
        ));

        let l = std::net::TcpListener::bind(("127.0.0.1", unused_port().unwrap())).unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (local, peer) = (
            SockAddr::from(c.local_addr().unwrap()),
            SockAddr::from(c.peer_addr().unwrap()),
        );
        assert!(!is_self_connection(&local, &peer));
    }

    #[test]
    fn repeated_attempts_on_an_ephemeral_port_never_connect_to_themselves() {
        // The kernel walks the ephemeral range connect after connect, so within
        // one lap an unbound socket's connect to a free port of that range picks
        // the port itself and "connects" (a blocking std connect does so after
        // ~5 000–50 000 attempts here). Ours must see nothing, lap after lap.
        let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .unwrap_or_else(|_| "32768 60999".into());
        let mut it = range.split_whitespace().filter_map(|n| n.parse::<u32>().ok());
        let (lo, hi) = (it.next().unwrap_or(32768), it.next().unwrap_or(60999));
        let port = (lo..=hi)
            .filter(|p| p % 2 == 0)
            .skip(17)
            .map(|p| p as u16)
            .find(|&p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
            .expect("a free even port in the ephemeral range");
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let laps = 2 * (hi - lo + 1);
        for i in 0..laps {
            assert!(
                !accepts(&addr, std::time::Duration::from_secs(1)),
                "attempt {i}: port {port} looked open with nothing listening"
            );
        }
    }
}
