//! Readiness probes: each tells when a run counts as started. Probes do not print
//! and do not spawn; the run loop drives them.
//!
//! - event-driven: `exit` (pidfd), `log` (output lines), `file` (inotify)
//! - polling: `tcp`, `http` (a connect attempt every poll interval; connects to a
//!   closed loopback port fail at once, so each attempt is a few microseconds)

pub mod file;
pub mod http;
pub mod listen;
pub mod log;
pub mod tcp;

use crate::target::Readiness;
use anyhow::Result;
use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::time::Duration;

pub enum Probe {
    Exit,
    Tcp(tcp::TcpProbe),
    Http(http::HttpProbe),
    Log(log::LogProbe),
    File(file::FileProbe),
    /// Seen through the marks: the shim's `@listen` checkpoint.
    Listen,
}

/// A port that already accepts connections before the spawn would make every run
/// look instant (a stale server answers the probe): refuse it.
pub fn refuse_if_port_taken(readiness: &Readiness) -> Result<()> {
    if let Some((host, port)) = readiness.socket_addr() {
        if tcp::accepts(&tcp::resolve(&host, port)?) {
            anyhow::bail!(
                "port {port} on {host} already accepts connections before the spawn, so a stale server \
                 would make the run look instant: stop it (see `ss -ltnp 'sport = :{port}'`) or use another port"
            );
        }
    }
    Ok(())
}

impl Probe {
    pub fn new(readiness: &Readiness) -> Result<Probe> {
        Ok(match readiness {
            Readiness::Exit => Probe::Exit,
            Readiness::Tcp { host, port } => Probe::Tcp(tcp::TcpProbe::new(host, *port)?),
            Readiness::Http { url } => Probe::Http(http::HttpProbe::new(url.clone())?),
            Readiness::Log { regex } => Probe::Log(log::LogProbe::new(regex.clone())),
            Readiness::File { path } => Probe::File(file::FileProbe::new(path)?),
            Readiness::Listen => Probe::Listen,
            Readiness::LambdaInit => anyhow::bail!(
                "readiness {readiness} is the end of an emulated Lambda init: measure it with `coldstart lambda`"
            ),
        })
    }

    /// Whether the target's output must be read live.
    pub fn needs_pipes(&self) -> bool {
        matches!(self, Probe::Log(_))
    }

    /// How often `check` must be called, for polling probes.
    pub fn poll_interval(&self, configured: Duration) -> Option<Duration> {
        match self {
            Probe::Tcp(_) | Probe::Http(_) => Some(configured),
            Probe::File(f) if f.event_fd().is_none() => Some(configured),
            _ => None,
        }
    }

    /// A descriptor that becomes readable when `check` may now succeed.
    pub fn event_fd(&self) -> Option<RawFd> {
        match self {
            Probe::File(f) => f.event_fd(),
            _ => None,
        }
    }

    /// Polling or event check; true when ready. `deadline_left` bounds blocking work.
    pub fn check(&mut self, deadline_left: Duration) -> bool {
        match self {
            Probe::Tcp(p) => p.check(),
            Probe::Http(p) => p.check(deadline_left),
            Probe::File(p) => p.check(),
            Probe::Exit | Probe::Log(_) | Probe::Listen => false,
        }
    }

    /// Offer one output line; true when it makes the run ready.
    pub fn on_line(&mut self, line: &str) -> bool {
        match self {
            Probe::Log(p) => p.on_line(line),
            _ => false,
        }
    }

    pub fn captures(&self) -> BTreeMap<String, String> {
        match self {
            Probe::Log(p) => p.captures.clone(),
            _ => BTreeMap::new(),
        }
    }
}
