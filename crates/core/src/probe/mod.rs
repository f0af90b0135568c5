//! Readiness probes: each tells when a run counts as started. Probes do not print
//! and do not spawn; the run loop drives them.
//!
//! - event-driven: `exit` (pidfd), `log` (output lines), `file` (inotify)
//! - attempts: `tcp`, `http` (a non-blocking connect or GET every poll interval;
//!   connects to a closed loopback port fail at once). An attempt in flight is a
//!   descriptor the run loop waits on ([`Probe::pollfd`]) next to the output
//!   pipes, and [`Probe::step`] advances it without blocking.

pub mod file;
pub mod http;
pub mod listen;
pub mod log;
pub mod tcp;

use crate::target::Readiness;
use anyhow::Result;
use std::collections::BTreeMap;
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
        if tcp::accepts(&tcp::resolve(&host, port)?, Duration::from_secs(1)) {
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

    /// What the run loop must wait on for this probe: the attempt in flight
    /// (tcp/http: POLLOUT while connecting or writing, POLLIN while reading) or
    /// the inotify descriptor (`file:`). None between attempts.
    pub fn pollfd(&self) -> Option<libc::pollfd> {
        let (fd, events) = match self {
            Probe::Tcp(p) => (p.fd()?, libc::POLLOUT),
            Probe::Http(p) => return p.pollfd(),
            Probe::File(f) => (f.event_fd()?, libc::POLLIN),
            _ => return None,
        };
        Some(libc::pollfd {
            fd,
            events,
            revents: 0,
        })
    }

    /// Whether an attempt is in flight (its descriptor, not the poll interval,
    /// decides when to step next).
    pub fn in_flight(&self) -> bool {
        match self {
            Probe::Tcp(p) => p.fd().is_some(),
            Probe::Http(p) => p.pollfd().is_some(),
            _ => false,
        }
    }

    /// Advance without blocking (https excepted, see `http`): called when the
    /// probe's descriptor reported an event, or when the next attempt is due.
    /// Returns the ready instant (CLOCK_MONOTONIC ns): for http, when the last
    /// byte of the response was read.
    pub fn step(&mut self, deadline_left: Duration) -> Option<u64> {
        match self {
            Probe::Tcp(p) => p.step().then(coldstart_sys::clock::now_ns),
            Probe::Http(p) => p.step(deadline_left),
            Probe::File(p) => p.check().then(coldstart_sys::clock::now_ns),
            Probe::Exit | Probe::Log(_) | Probe::Listen => None,
        }
    }

    /// Blocking check for loops that cannot wait on [`Probe::pollfd`] (the traced
    /// run): drive one attempt to its end, at most `deadline_left`.
    pub fn check(&mut self, deadline_left: Duration) -> bool {
        let until = coldstart_sys::clock::now_ns() + deadline_left.as_nanos() as u64;
        if self.step(deadline_left).is_some() {
            return true;
        }
        while self.in_flight() {
            let now = coldstart_sys::clock::now_ns();
            if now >= until {
                return false;
            }
            if let Some(pfd) = self.pollfd() {
                crate::launch::wait::ppoll(&mut [pfd], until - now);
            }
            if self
                .step(Duration::from_nanos(until.saturating_sub(now)))
                .is_some()
            {
                return true;
            }
        }
        false
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
