//! `http(s)://…`: ready when a GET answers 2xx/3xx, the whole body received.
//! A cheap TCP connect gates each attempt so refused ports cost microseconds.

use crate::clock::now_ns;
use anyhow::Result;
use std::io::Read;
use std::net::SocketAddr;
use std::time::Duration;

pub struct HttpProbe {
    url: url::Url,
    addr: SocketAddr,
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
        let port = url.port_or_known_default().unwrap_or(80);
        let addr = super::tcp::resolve(&host, port)?;
        Ok(HttpProbe {
            url,
            addr,
            agent: agent(),
        })
    }

    pub fn check(&self, deadline_left: Duration) -> bool {
        if !super::tcp::accepts(&self.addr) {
            return false;
        }
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
