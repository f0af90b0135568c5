//! coldstart example target: minimal HTTP/1.1 server in Rust (std only, no deps).
//!
//! Used as the "native, no runtime" HTTP baseline next to the Python/Node/Go/Java
//! examples, with identical behaviour:
//!   * port: `--port N` (first args) > env PORT > 8080; PORT=0 picks a free port
//!   * env COLDSTART_EXAMPLE_DELAY_MS: sleep this long BEFORE binding (fake init)
//!   * binds 127.0.0.1 only, then prints exactly `listening on 127.0.0.1:PORT`
//!   * GET / and GET /health -> 200 "ok\n"; other GET paths -> 404; other methods -> 405
//!   * SIGTERM -> exit 0 promptly
//! One thread per connection, one request per connection (`Connection: close`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;
use std::{env, process, thread};

// std has no signal API; libc is linked anyway, so declare the two calls we need.
extern "C" {
    fn signal(signum: i32, handler: extern "C" fn(i32)) -> usize;
    fn _exit(status: i32) -> !;
}
const SIGTERM: i32 = 15;

extern "C" fn on_sigterm(_: i32) {
    // _exit is async-signal-safe; nothing to flush or clean up.
    unsafe { _exit(0) }
}

fn fail(msg: &str) -> ! {
    eprintln!("rust-server: {msg}");
    process::exit(2);
}

fn parse_port() -> u16 {
    let args: Vec<String> = env::args().skip(1).collect();
    let raw = if args.len() >= 2 && args[0] == "--port" {
        args[1].clone()
    } else {
        env::var("PORT").unwrap_or_else(|_| "8080".into())
    };
    raw.parse().unwrap_or_else(|_| fail(&format!("invalid port '{raw}'")))
}

fn delay_ms() -> u64 {
    match env::var("COLDSTART_EXAMPLE_DELAY_MS") {
        Ok(raw) if !raw.is_empty() => raw.parse().unwrap_or_else(|_| {
            fail(&format!("COLDSTART_EXAMPLE_DELAY_MS must be a non-negative integer, got '{raw}'"))
        }),
        _ => 0,
    }
}

fn handle(mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    // Read until the end of the request head (we ignore any body).
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let mut request_line = head.lines().next().unwrap_or("").split_whitespace();
    let method = request_line.next().unwrap_or("");
    let target = request_line.next().unwrap_or("");
    let path = target.split('?').next().unwrap_or("");

    let (status, body) = match (method, path) {
        ("GET", "/" | "/health") => ("200 OK", "ok\n"),
        ("GET", _) => ("404 Not Found", "not found\n"),
        _ => ("405 Method Not Allowed", "method not allowed\n"),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes());
}

fn main() {
    unsafe { signal(SIGTERM, on_sigterm) };

    let port = parse_port();
    let delay = delay_ms();
    if delay > 0 {
        thread::sleep(Duration::from_millis(delay));
    }
    let listener = TcpListener::bind(("127.0.0.1", port))
        .unwrap_or_else(|e| fail(&format!("bind 127.0.0.1:{port}: {e}")));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(port);
    // Stdout is line-buffered; write + flush explicitly so the line is out now.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "listening on 127.0.0.1:{port}");
    let _ = out.flush();
    drop(out);

    for stream in listener.incoming().flatten() {
        thread::spawn(move || handle(stream));
    }
}
