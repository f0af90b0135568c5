//! The shared vectors in sdk/vectors/checkpoint.json, run against this crate.
mod common;

use coldstart_checkpoint::{__reset_for_tests, checkpoint, MAX_NAME_BYTES};
use common::*;
use std::sync::{Mutex, MutexGuard};

/// The SDK's state is process-wide; tests take turns.
static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a Rust string can hold, in the vectors' terms.
const CAPABILITIES: &[&str] = &["nul"];

fn use_fd_env(value: Option<&str>) {
    match value {
        Some(v) => std::env::set_var("COLDSTART_FD", v),
        None => std::env::remove_var("COLDSTART_FD"),
    }
    __reset_for_tests();
}

fn use_fd(fd: i32) {
    use_fd_env(Some(&fd.to_string()));
}

fn report(group: &str, results: Vec<(String, Result<(), String>)>) {
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(id, r)| r.as_ref().err().map(|e| format!("{group}/{id}: {e}")))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        results.len(),
        failures.join("\n")
    );
}

#[test]
fn max_name_bytes_matches() {
    assert_eq!(
        vectors().get("max_name_bytes").unwrap().num() as usize,
        MAX_NAME_BYTES
    );
}

#[test]
fn names() {
    let _g = lock();
    let v = vectors();
    let mut results = Vec::new();
    for c in v.get("names").unwrap().arr() {
        let id = c.get("id").unwrap().str().to_string();
        let requires = c.get("requires").map(|r| r.arr().to_vec()).unwrap_or_default();
        if !requires.iter().all(|r| CAPABILITIES.contains(&r.str())) {
            continue;
        }
        let name = segments(c.get("name").unwrap());
        let expect = segments(c.get("expect").unwrap());
        let (r, w) = packet_pipe();
        use_fd(w);
        let t0 = mono_ns();
        checkpoint(&name);
        let t1 = mono_ns();
        results.push((id, expect_line(r, &expect, t0, t1)));
        close(r);
        close(w);
    }
    assert!(results.len() >= 20, "too few name vectors ran: {}", results.len());
    report("names", results);
}

#[test]
fn env() {
    let _g = lock();
    let v = vectors();
    let mut results = Vec::new();
    for c in v.get("env").unwrap().arr() {
        let id = c.get("id").unwrap().str().to_string();
        let (r, w) = packet_pipe();
        let closed = unsafe { libc::open(b"/dev/null\0".as_ptr().cast(), libc::O_RDONLY) };
        close(closed);
        let value = match c.get("value").unwrap() {
            Json::Null => None,
            s => Some(
                s.str()
                    .replace("{fd}", &w.to_string())
                    .replace("{closed_fd}", &closed.to_string())
                    .replace("{read_fd}", &r.to_string()),
            ),
        };
        use_fd_env(value.as_deref());
        let t0 = mono_ns();
        checkpoint("env-case");
        let t1 = mono_ns();
        let res = match c.get("expect").unwrap().str() {
            "line" => expect_line(r, "env-case", t0, t1),
            _ => expect_nothing(r),
        };
        results.push((id, res));
        close(r);
        close(w);
    }
    report("env", results);
}

fn reader_gone() -> Result<(), String> {
    // Rust programs start with SIGPIPE ignored; put the default (terminate) back
    // so that a SIGPIPE reaching the process would kill this test binary.
    let old = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let (r, w) = packet_pipe();
    close(r);
    use_fd(w);
    checkpoint("into-a-broken-pipe");
    close(w);
    let mut s = [0i32; 2];
    unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, s.as_mut_ptr()) };
    close(s[0]);
    use_fd(s[1]);
    checkpoint("into-a-broken-socket");
    close(s[1]);
    let pending = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut set);
        libc::sigismember(&set, libc::SIGPIPE) == 1
    };
    unsafe { libc::signal(libc::SIGPIPE, old) };
    if pending {
        return Err("SIGPIPE left pending".into());
    }
    Ok(())
}

#[test]
fn lifecycle() {
    let _g = lock();
    let v = vectors();
    let mut results = Vec::new();
    for c in v.get("lifecycle").unwrap().arr() {
        let id = c.get("id").unwrap().str().to_string();
        let res = match id.as_str() {
            "closed-after-first-use" => (|| {
                let (r, w) = packet_pipe();
                use_fd(w);
                checkpoint("first");
                expect_line(r, "first", 0, u64::MAX)?;
                close(w);
                checkpoint("after-close");
                close(r);
                Ok(())
            })(),
            "fd-number-reused" => (|| {
                let (r, w) = packet_pipe();
                use_fd(w);
                checkpoint("first");
                expect_line(r, "first", 0, u64::MAX)?;
                let (r2, w2) = packet_pipe();
                unsafe { libc::dup2(w2, w) };
                checkpoint("must-not-arrive");
                let res = expect_nothing(r2);
                for fd in [r, w, r2, w2] {
                    close(fd);
                }
                res
            })(),
            "reader-gone" => reader_gone(),
            "env-read-once" => (|| {
                let (r, w) = packet_pipe();
                use_fd(w);
                checkpoint("first");
                expect_line(r, "first", 0, u64::MAX)?;
                std::env::remove_var("COLDSTART_FD");
                checkpoint("after-unset");
                expect_line(r, "after-unset", 0, u64::MAX)?;
                std::env::set_var("COLDSTART_FD", "junk");
                checkpoint("after-change");
                expect_line(r, "after-change", 0, u64::MAX)?;
                close(r);
                close(w);
                Ok(())
            })(),
            _ => Err("lifecycle case not implemented by the Rust tests".into()),
        };
        results.push((id, res));
    }
    report("lifecycle", results);
}

#[test]
fn threads_write_whole_lines() {
    let _g = lock();
    let mut p = [0i32; 2];
    assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_DIRECT) }, 0);
    use_fd(p[1]);
    let writers: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..250 {
                    checkpoint(&format!("t{t}-{i}-padding-padding-padding-padding"));
                }
            })
        })
        .collect();
    let mut buf = vec![0u8; 8192];
    for _ in 0..1000 {
        let n = unsafe { libc::read(p[0], buf.as_mut_ptr().cast(), buf.len()) };
        assert!(n > 0);
        let line = &buf[..n as usize];
        assert!(
            line.starts_with(b"cs1 ") && line.ends_with(b"\n"),
            "torn: {line:?}"
        );
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
    }
    for w in writers {
        w.join().unwrap();
    }
    close(p[0]);
    close(p[1]);
}

#[test]
fn errno_is_preserved() {
    let _g = lock();
    let (r, w) = packet_pipe();
    for value in [None, Some(w.to_string())] {
        use_fd_env(value.as_deref());
        unsafe { *libc::__errno_location() = 4242 };
        checkpoint("errno");
        assert_eq!(unsafe { *libc::__errno_location() }, 4242);
    }
    close(r);
    close(w);
}
