//! `http(s)://…`: ready when a GET answers 2xx/3xx, the whole body received.
//! Each attempt is a full GET: a refused loopback connect fails in microseconds,
//! and a separate connect check would only add a round trip at the ready instant.

use crate::clock::now_ns;
use anyhow::Result;
use std::io::Read;
use std::time::Duration;

pub struct HttpProbe {
    url: url::Url,
    agent: ureq::Agent,
}

impl HttpProbe {
    pub fn new(url: url::Url) -> Result<Self> {
        let host = url
            .host_str()
            .unwrap_or("127.0.0.1")
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        // Resolve now so a bad host is an error before the spawn, not a timeout.
        super::tcp::resolve(&host, url.port_or_known_default().unwrap_or(80))?;
        Ok(HttpProbe { url, agent: agent() })
    }

    pub fn check(&self, deadline_left: Duration) -> bool {
        matches!(get(&self.agent, self.url.as_str(), deadline_left), Ok((status, _)) if (200..400).contains(&status))
    }
}

/// An agent that reports redirects instead of following them (3xx counts as ready).
pub fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new().redirects(0).build()
}

/// One GET; returns the status and the latency until the body was fully read.
pub fn get(agent: &ureq::Agent, url: &str, timeout: Duration) -> Result<(u16, u64)> {
    let start = now_ns();
    let response = match agent
        .get(url)
        .timeout(timeout.max(Duration::from_millis(1)))
        .call()
    {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => return Err(e.into()),
    };
    let status = response.status();
    let mut sink = Vec::new();
    response.into_reader().take(16 << 20).read_to_end(&mut sink)?;
    Ok((status, now_ns() - start))
}
