//! `http(s)://…`: ready when a GET answers 2xx/3xx, the whole response received.
//! Also the `--requests` GETs after ready.
//!
//! Plain http is a non-blocking HTTP/1.1 GET ([`Get`]) that the run loop drives
//! under the same ppoll(2) as the target's output pipes: connect → write the
//! request → read the head (httparse) → read the body by Content-Length, chunked
//! framing, or until the server closes. The run loop waits on [`Get::pollfd`] and
//! calls [`Get::step`]; nothing here blocks, so output lines printed while a GET is
//! outstanding are stamped when they are read. Redirects are not followed (3xx is
//! an answer).
//!
//! https is the documented exception: the GET is one blocking ureq call (rustls)
//! made inside `step`, so output lines written while an https GET is outstanding
//! are stamped when it returns.

use super::tcp::{self, Connect, Connecting};
use anyhow::{bail, Result};
use coldstart_sys::clock::now_ns;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// Largest response head accepted (status line + headers).
const MAX_HEAD: usize = 64 * 1024;

/// Where GETs go: resolved once, the request bytes prepared before the spawn.
#[derive(Clone)]
pub struct Endpoint {
    #[cfg(feature = "https")]
    url: url::Url,
    addr: SocketAddr,
    request: Vec<u8>,
}

impl Endpoint {
    pub fn new(url: &url::Url) -> Result<Self> {
        crate::target::https_supported(url)?;
        let host = url
            .host_str()
            .unwrap_or("127.0.0.1")
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = url.port_or_known_default().unwrap_or(80);
        // Resolve now so a bad host is an error before the spawn, not a timeout.
        let addr = tcp::resolve(&host, port)?;
        let mut target = url.path().to_string();
        if let Some(q) = url.query() {
            target.push('?');
            target.push_str(q);
        }
        let host_header = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or(&host)),
            None => url.host_str().unwrap_or(&host).to_string(),
        };
        let request = format!(
            "GET {target} HTTP/1.1\r\nHost: {host_header}\r\nUser-Agent: coldstart/{}\r\n\
             Accept: */*\r\nConnection: close\r\n\r\n",
            env!("CARGO_PKG_VERSION")
        )
        .into_bytes();
        Ok(Endpoint {
            #[cfg(feature = "https")]
            url: url.clone(),
            addr,
            request,
        })
    }

    #[cfg(feature = "https")]
    fn is_tls(&self) -> bool {
        self.url.scheme() == "https"
    }
}

/// How a GET ended.
#[derive(Debug)]
pub enum Answer {
    /// The whole response was read at `end_ns` (CLOCK_MONOTONIC).
    Response { status: u16, end_ns: u64 },
    /// No response: refused, reset, closed early, malformed (the run only
    /// needs to know that it must try again).
    Failed,
}

/// One GET in flight.
pub struct Get {
    state: State,
}

enum State {
    Connecting(Connecting),
    Writing {
        stream: TcpStream,
        sent: usize,
    },
    Reading {
        stream: TcpStream,
        reader: ResponseReader,
    },
    Over,
}

impl Get {
    /// Start a GET; it may be over at once (a refused loopback connect, or https).
    pub fn start(endpoint: &Endpoint, timeout: Duration) -> (Option<Get>, Option<Answer>) {
        // Without the feature an https Endpoint cannot be built (see `new`).
        #[cfg(feature = "https")]
        if endpoint.is_tls() {
            return (None, Some(blocking_get(&endpoint.url, timeout)));
        }
        #[cfg(not(feature = "https"))]
        let _ = timeout; // only the blocking https GET takes it; plain GETs are driven by the run loop
        let mut get = Get { state: State::Over };
        let answer = get.advance(connect_step(tcp::connect(&endpoint.addr)), endpoint);
        match answer {
            Some(a) => (None, Some(a)),
            None => (Some(get), None),
        }
    }

    /// The descriptor to wait on and for what (POLLOUT while connecting or writing).
    pub fn pollfd(&self) -> libc::pollfd {
        let (fd, events): (RawFd, i16) = match &self.state {
            State::Connecting(c) => (c.fd(), libc::POLLOUT),
            State::Writing { stream, .. } => (stream.as_raw_fd(), libc::POLLOUT),
            State::Reading { stream, .. } => (stream.as_raw_fd(), libc::POLLIN),
            State::Over => (-1, 0),
        };
        libc::pollfd {
            fd,
            events,
            revents: 0,
        }
    }

    /// Advance as far as possible without blocking; `Some` when the GET is over.
    pub fn step(&mut self, endpoint: &Endpoint) -> Option<Answer> {
        let next = match std::mem::replace(&mut self.state, State::Over) {
            State::Connecting(c) => connect_step(c.finish()),
            other => Ok(other),
        };
        self.advance(next, endpoint)
    }

    // io::Result, not anyhow: a refused attempt (every 200 µs until the target
    // listens) must cost nothing but its syscalls. An anyhow error captures a
    // backtrace under RUST_BACKTRACE=1, which made each http attempt several
    // times dearer than a tcp one and the probe late on a busy CPU (issue 26 #8).
    fn advance(&mut self, state: io::Result<State>, endpoint: &Endpoint) -> Option<Answer> {
        let mut state = match state {
            Ok(s) => s,
            Err(_) => return Some(Answer::Failed),
        };
        loop {
            state = match state {
                State::Connecting(c) => {
                    self.state = State::Connecting(c);
                    return None;
                }
                State::Writing { mut stream, mut sent } => {
                    match write_some(&mut stream, &endpoint.request[sent..]) {
                        Ok(n) => sent += n,
                        Err(_) => return Some(Answer::Failed),
                    }
                    if sent < endpoint.request.len() {
                        self.state = State::Writing { stream, sent };
                        return None;
                    }
                    State::Reading {
                        stream,
                        reader: ResponseReader::default(),
                    }
                }
                State::Reading {
                    mut stream,
                    mut reader,
                } => {
                    return match reader.read_from(&mut stream) {
                        Ok(Some(status)) => Some(Answer::Response {
                            status,
                            end_ns: now_ns(),
                        }),
                        Ok(None) => {
                            self.state = State::Reading { stream, reader };
                            None
                        }
                        Err(_) => Some(Answer::Failed),
                    };
                }
                State::Over => return Some(Answer::Failed),
            }
        }
    }
}

fn connect_step(c: Connect) -> io::Result<State> {
    Ok(match c {
        Connect::Done(stream) => {
            // The request is one write of a few hundred bytes, so Nagle could
            // not hold it; without delay it also cannot hold any later segment.
            stream.set_nodelay(true)?;
            State::Writing { stream, sent: 0 }
        }
        Connect::Pending(c) => State::Connecting(c),
        Connect::Failed(e) => return Err(e),
    })
}

/// Write until done or the socket would block.
fn write_some(stream: &mut TcpStream, mut buf: &[u8]) -> Result<usize> {
    let mut n = 0;
    while !buf.is_empty() {
        match stream.write(buf) {
            Ok(0) => bail!("connection closed while sending the request"),
            Ok(k) => {
                n += k;
                buf = &buf[k..];
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(n)
}

/// An HTTP/1.1 response read incrementally: the head is kept until parsed, the
/// body is only framed and counted.
#[derive(Default)]
struct ResponseReader {
    /// Bytes not yet consumed (the head, or a partial chunk-size line).
    pending: Vec<u8>,
    status: Option<u16>,
    body: Body,
}

#[derive(Default, Debug, PartialEq)]
enum Body {
    #[default]
    Head,
    /// Content-Length: bytes still to come.
    Length(u64),
    /// Chunked: waiting for a size line.
    ChunkSize,
    /// Chunked: bytes of the current chunk still to come, then its CRLF.
    ChunkData(u64),
    ChunkCrlf(usize),
    /// After the last chunk: trailer lines up to an empty one.
    Trailers,
    UntilClose,
    Complete,
}

impl ResponseReader {
    /// Read what is available; the status once the whole response is in.
    fn read_from(&mut self, stream: &mut impl Read) -> Result<Option<u16>> {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => return self.closed().map(Some),
                Ok(n) => {
                    if self.feed(&buf[..n])? {
                        return Ok(self.status);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The server closed its side: complete only if the framing says so.
    fn closed(&mut self) -> Result<u16> {
        match (&self.body, self.status) {
            (Body::UntilClose | Body::Complete, Some(s)) => Ok(s),
            (Body::Head, _) => bail!("connection closed before a response"),
            _ => bail!("connection closed in the middle of the response body"),
        }
    }

    /// Take bytes; true when the response is complete.
    fn feed(&mut self, mut data: &[u8]) -> Result<bool> {
        loop {
            match self.body {
                Body::Complete => return Ok(true),
                Body::Head => {
                    self.pending.extend_from_slice(data);
                    let Some(used) = self.parse_head()? else {
                        if self.pending.len() > MAX_HEAD {
                            bail!("response head larger than {MAX_HEAD} bytes");
                        }
                        return Ok(false);
                    };
                    let rest = self.pending.split_off(used);
                    self.pending.clear();
                    if rest.is_empty() {
                        return Ok(self.body == Body::Complete);
                    }
                    // Re-enter with the bytes after the head (body or a final head).
                    return self.feed(&rest);
                }
                Body::Length(left) => {
                    let k = left.min(data.len() as u64);
                    self.body = if left == k {
                        Body::Complete
                    } else {
                        Body::Length(left - k)
                    };
                    return Ok(self.body == Body::Complete);
                }
                Body::UntilClose => return Ok(false),
                Body::ChunkData(left) => {
                    if data.is_empty() {
                        return Ok(false);
                    }
                    let k = left.min(data.len() as u64);
                    data = &data[k as usize..];
                    self.body = if left == k {
                        Body::ChunkCrlf(2)
                    } else {
                        Body::ChunkData(left - k)
                    };
                }
                Body::ChunkCrlf(left) => {
                    if data.is_empty() {
                        return Ok(false);
                    }
                    let k = left.min(data.len());
                    data = &data[k..];
                    self.body = if left == k {
                        Body::ChunkSize
                    } else {
                        Body::ChunkCrlf(left - k)
                    };
                }
                Body::ChunkSize => {
                    self.pending.extend_from_slice(data);
                    match httparse::parse_chunk_size(&self.pending) {
                        Ok(httparse::Status::Complete((used, size))) => {
                            let rest = self.pending.split_off(used);
                            self.pending.clear();
                            self.body = if size == 0 {
                                Body::Trailers
                            } else {
                                Body::ChunkData(size)
                            };
                            return self.feed(&rest);
                        }
                        Ok(httparse::Status::Partial) if self.pending.len() <= 1024 => return Ok(false),
                        _ => bail!("malformed chunk size in the response body"),
                    }
                }
                Body::Trailers => {
                    self.pending.extend_from_slice(data);
                    // Trailer fields end with an empty line; without trailers that
                    // is the CRLF right after the zero-size chunk.
                    if self.pending.starts_with(b"\r\n") || find(&self.pending, b"\r\n\r\n").is_some() {
                        self.pending.clear();
                        self.body = Body::Complete;
                        return Ok(true);
                    }
                    if self.pending.len() > MAX_HEAD {
                        bail!("response trailers larger than {MAX_HEAD} bytes");
                    }
                    return Ok(false);
                }
            }
        }
    }

    /// Parse a complete head from `pending`: bytes used, or None when partial.
    /// An interim 1xx head is skipped (the final one follows).
    fn parse_head(&mut self) -> Result<Option<usize>> {
        let mut headers = [httparse::EMPTY_HEADER; 100];
        let mut resp = httparse::Response::new(&mut headers);
        let used = match resp.parse(&self.pending) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => bail!("malformed response head: {e}"),
        };
        let status = resp.code.unwrap_or(0);
        if (100..200).contains(&status) && status != 101 {
            // Stay in Head: the caller re-feeds the rest.
            return Ok(Some(used));
        }
        let header = |name: &str| {
            resp.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
        };
        self.status = Some(status);
        self.body = if status == 204 || status == 304 || status == 101 {
            Body::Complete
        } else if header("transfer-encoding").is_some_and(|te| te.ends_with("chunked")) {
            Body::ChunkSize
        } else if let Some(len) = header("content-length") {
            match len.parse::<u64>() {
                Ok(0) => Body::Complete,
                Ok(n) => Body::Length(n),
                Err(_) => bail!("bad Content-Length {len:?} in the response"),
            }
        } else {
            Body::UntilClose
        };
        Ok(Some(used))
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// https: one blocking GET through ureq (rustls); see the module note.
#[cfg(feature = "https")]
fn blocking_get(url: &url::Url, timeout: Duration) -> Answer {
    let agent = ureq::AgentBuilder::new().redirects(0).build();
    let response = match agent
        .get(url.as_str())
        .timeout(timeout.max(Duration::from_millis(1)))
        .call()
    {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(_) => return Answer::Failed,
    };
    let status = response.status();
    match io::copy(&mut response.into_reader(), &mut io::sink()) {
        Ok(_) => Answer::Response {
            status,
            end_ns: now_ns(),
        },
        Err(_) => Answer::Failed,
    }
}

/// `http(s)://` readiness: a GET every poll interval until one answers 2xx/3xx.
pub struct HttpProbe {
    endpoint: Endpoint,
    get: Option<Get>,
}

impl HttpProbe {
    pub fn new(url: url::Url) -> Result<Self> {
        Ok(HttpProbe {
            endpoint: Endpoint::new(&url)?,
            get: None,
        })
    }

    /// The descriptor of the GET in flight.
    pub fn pollfd(&self) -> Option<libc::pollfd> {
        self.get.as_ref().map(Get::pollfd)
    }

    /// Advance the GET in flight, or start one; the instant its last byte was
    /// read when it answered 2xx/3xx.
    pub fn step(&mut self, deadline_left: Duration) -> Option<u64> {
        let answer = match self.get.as_mut() {
            Some(get) => get.step(&self.endpoint),
            None => {
                let (get, answer) = Get::start(&self.endpoint, deadline_left);
                self.get = get;
                answer
            }
        };
        match answer? {
            Answer::Response { status, end_ns } => {
                self.get = None;
                (200..400).contains(&status).then_some(end_ns)
            }
            Answer::Failed => {
                self.get = None;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed a response in pieces of `piece` bytes; the status when complete.
    fn framed(resp: &[u8], piece: usize) -> Result<Option<u16>> {
        let mut r = ResponseReader::default();
        for part in resp.chunks(piece) {
            if r.feed(part)? {
                return Ok(r.status);
            }
        }
        Ok(None)
    }

    #[test]
    fn frames_responses_by_length_chunks_and_close() {
        let cases: &[(&[u8], Option<u16>)] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", Some(200)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhell", None),
            (b"HTTP/1.1 204 No Content\r\n\r\n", Some(204)),
            (b"HTTP/1.1 302 Found\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n", Some(302)),
            (
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 No\r\ncontent-length: 2\r\n\r\nno",
                Some(503),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;x=y\r\nabc\r\n0\r\n\r\n",
                Some(200),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
                Some(200),
            ),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n", None),
            (b"HTTP/1.1 200 OK\r\n\r\nuntil close", None),
        ];
        for (resp, want) in cases {
            for piece in [1, 3, 7, resp.len()] {
                assert_eq!(
                    framed(resp, piece).unwrap(),
                    *want,
                    "{} in pieces of {piece}",
                    String::from_utf8_lossy(resp)
                );
            }
        }
        let mut r = ResponseReader::default();
        assert!(!r.feed(b"HTTP/1.0 200 OK\r\n\r\npartial").unwrap());
        assert_eq!(r.closed().unwrap(), 200, "no framing: complete at close");
        let mut r = ResponseReader::default();
        assert!(!r
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc")
            .unwrap());
        assert!(r.closed().is_err(), "closed before Content-Length bytes");
        assert!(framed(b"garbage\r\n\r\n", 4).is_err());
    }

    #[test]
    fn a_get_against_a_real_listener() {
        use std::io::{BufRead, BufReader};
        let port = tcp::unused_port().unwrap();
        let l = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        let url = url::Url::parse(&format!("http://{}/health?x=1", l.local_addr().unwrap())).unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut lines = BufReader::new(s.try_clone().unwrap()).lines();
            let first = lines.next().unwrap().unwrap();
            let mut w = s;
            w.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
                .unwrap();
            first
        });
        let endpoint = Endpoint::new(&url).unwrap();
        let (mut get, mut answer) = Get::start(&endpoint, Duration::from_secs(5));
        while answer.is_none() {
            let g = get.as_mut().unwrap();
            let mut fds = [g.pollfd()];
            crate::launch::wait::ppoll(&mut fds, 5_000_000_000);
            answer = g.step(&endpoint);
        }
        assert!(
            matches!(answer, Some(Answer::Response { status: 200, .. })),
            "{answer:?}"
        );
        assert_eq!(server.join().unwrap(), "GET /health?x=1 HTTP/1.1");
    }
}
