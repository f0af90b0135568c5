//! `tcp:[HOST:]PORT`: ready when a connect succeeds.

use anyhow::{anyhow, Context, Result};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

pub struct TcpProbe {
    addr: SocketAddr,
}

impl TcpProbe {
    pub fn new(host: &str, port: u16) -> Result<Self> {
        Ok(TcpProbe {
            addr: resolve(host, port)?,
        })
    }

    pub fn check(&self) -> bool {
        accepts(&self.addr)
    }
}

/// Resolve once, up front, so no DNS lookup sits inside a measured interval.
pub fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host}:{port}"))?
        .next()
        .ok_or_else(|| anyhow!("{host}:{port} resolves to no address"))
}

/// One connect attempt. On loopback a closed port refuses at once; the timeout
/// only matters for remote hosts.
pub fn accepts(addr: &SocketAddr) -> bool {
    TcpStream::connect_timeout(addr, Duration::from_secs(1)).is_ok()
}
