//! The runtime and extension processes of one environment, started with
//! `launch::spawn` (own process group each, registered for Ctrl-C), watched for
//! exit through their pidfd (reaped by `launch::reaping`, as the run engine's
//! roots are, the moment they exit), their output
//! read line by line into the function's log and the Telemetry API. Each process
//! gets its own checkpoint pipe (COLDSTART_FD, the SDKs' `cs1` protocol), placed in
//! its descriptor table by the spawn itself, so processes started concurrently from
//! worker threads never share a descriptor number in ours; its lines become Marks
//! carrying the pid of the process whose pipe they came from.

use super::state::{Exit, Role, Shared};
use super::telemetry::Bus;
use anyhow::{Context, Result};
use coldstart_core::launch::lab::Lab;
use coldstart_core::launch::output::LineBuffer;
use coldstart_core::launch::spawn::{self, OutputMode};
use coldstart_core::launch::{reaping, signals};
use coldstart_core::marks;
use coldstart_core::sample::{ExitStatus, Mark};
use coldstart_core::target::Target;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::task::JoinHandle;

/// Where output lines go: the last few (for failure messages), the `--log` file
/// (a CloudWatch-like stream: platform lines and function output), telemetry.
pub struct Logs {
    tail: Mutex<LineBuffer>,
    file: Option<Arc<Mutex<std::fs::File>>>,
    /// The lines of the invoke in progress (`lambda serve`'s log tail), when asked for.
    capture: Mutex<Option<Vec<u8>>>,
}

/// How much of an invoke's log `capture` keeps: the service returns its last 4 KB;
/// more is kept so the cut is made once, at the end.
const CAPTURE_KEEP: usize = 64 * 1024;

impl Logs {
    pub fn new(keep: usize, file: Option<Arc<Mutex<std::fs::File>>>) -> Logs {
        Logs {
            tail: Mutex::new(LineBuffer::new(keep)),
            file,
            capture: Mutex::new(None),
        }
    }

    /// A platform line (START, REPORT, …) or a process's output line.
    pub fn line(&self, line: &str) {
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        self.tail
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .feed(&bytes, |_| {});
        if let Some(c) = self.capture.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            c.extend_from_slice(&bytes);
            if c.len() > 2 * CAPTURE_KEEP {
                c.drain(..c.len() - CAPTURE_KEEP);
            }
        }
        if let Some(f) = &self.file {
            let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
            // The log is a by-product: a full disk must not fail the measurement.
            f.write_all(&bytes).ok();
        }
    }

    /// Start collecting the lines logged from now on (an invoke's own log).
    pub fn capture(&self) {
        *self.capture.lock().unwrap_or_else(|p| p.into_inner()) = Some(Vec::new());
    }

    /// The lines collected since `capture` (at least their last 64 KB), and stop.
    pub fn captured(&self) -> Vec<u8> {
        self.capture
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_default()
    }

    pub fn tail(&self) -> Vec<String> {
        self.tail.lock().unwrap_or_else(|p| p.into_inner()).tail()
    }
}

pub struct Prepared {
    role: Role,
    target: Target,
    spawn: spawn::Prepared,
    /// Our end of the process's checkpoint pipe.
    checkpoints: OwnedFd,
}

/// Build the command (exactly `env` plus COLDSTART_FD, nothing inherited) before
/// time zero. The process enters `cgroups` (the sandbox's), then `namespace`
/// (the sandbox's mount namespace), before its exec.
pub fn prepare(
    lab: &Lab,
    role: Role,
    target: &Target,
    env: &[(String, String)],
    cgroups: Vec<OwnedFd>,
    namespace: Option<&super::namespace::Namespace>,
) -> Result<Prepared> {
    let mut p = spawn::prepare(lab, target, OutputMode::Pipes, &[])?;
    // The sandbox's cgroups hold the tree (and are killed with it); a run
    // cgroup besides would be a second placement wait per process.
    p.without_run_cgroup("--no-cgroup");
    p.enter_cgroups(cgroups);
    if let Some(ns) = namespace {
        let (mnt, user) = ns.for_child()?;
        p.enter_namespace(mnt, user);
    }
    let (read, write) = std::io::pipe().context("creating a checkpoint pipe")?;
    let (read, write) = (OwnedFd::from(read), OwnedFd::from(write));
    // The number bench's targets see too, when reserved; in the child only.
    let at = lab.checkpoint_fd();
    let mut env: Vec<(String, String)> = env.iter().filter(|(k, _)| k != marks::FD_ENV).cloned().collect();
    env.push((marks::FD_ENV.to_string(), at.to_string()));
    p.replace_env(&env);
    p.pass_fd(write, at);
    Ok(Prepared {
        role,
        target: target.clone(),
        spawn: p,
        checkpoints: read,
    })
}

pub struct Process {
    pub role: Role,
    pub pid: i32,
    /// The kernel's wait while it entered the sandbox before its exec (ns): the
    /// spawning thread was held that long (see `spawn::Child::placement_ns`).
    pub placement_ns: u64,
    _group: signals::Current,
    tasks: Vec<JoinHandle<()>>,
    /// Reads the checkpoint pipe to its end-of-file.
    checkpoints: Option<JoinHandle<()>>,
    /// One per output stream (`read_output`).
    flushers: Vec<tokio::sync::mpsc::UnboundedSender<Flush>>,
}

impl Drop for Process {
    fn drop(&mut self) {
        for t in self.tasks.iter().chain(&self.checkpoints) {
            t.abort();
        }
    }
}

/// Spawn a prepared process and start watching it. Call inside the tokio runtime,
/// after taking time zero (checkpoints are kept as absolute instants).
pub fn start(mut p: Prepared, shared: &Arc<Shared>, bus: &Arc<Bus>, logs: &Arc<Logs>) -> Result<Process> {
    let child = spawn::spawn(&mut p.spawn, &p.target)?;
    let group = signals::Current::set(child.pid);
    let pid = child.pid;
    let placement_ns = child.placement_ns;
    let mut tasks = Vec::new();
    let kind = match p.role {
        Role::Runtime => "function",
        Role::Extension(_) => "extension",
    };
    let mut flushers = Vec::new();
    for stream in [child.stdout.map(OwnedFd::from), child.stderr.map(OwnedFd::from)]
        .into_iter()
        .flatten()
    {
        let Ok(rx) = tokio::net::unix::pipe::Receiver::from_owned_fd(stream) else {
            continue;
        };
        let (bus, logs) = (bus.clone(), logs.clone());
        let (flush_tx, flush_rx) = tokio::sync::mpsc::unbounded_channel();
        flushers.push(flush_tx);
        tasks.push(tokio::spawn(read_output(rx, flush_rx, move |line| {
            logs.line(&line);
            bus.emit(kind, serde_json::Value::String(line));
        })));
    }
    let (state, role) = (shared.clone(), p.role.clone());
    let pidfd = child.pidfd;
    tasks.push(tokio::spawn(async move {
        // SAFETY: the AsyncFd owns the OwnedFd, so the descriptor stays open and the
        // same for the AsyncFd's whole life.
        if let Ok(fd) =
            unsafe { tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) }
        {
            // Readable once the process has exited.
            let _ = fd.readable().await;
        }
        // The status is unknown if something else reaped it first.
        let status = reaping::reap_exited(pid).map_or(
            ExitStatus {
                code: None,
                signal: None,
            },
            |r| r.status,
        );
        state.update(|s| s.exits.push(Exit { role, pid, status }));
    }));
    let checkpoints = tokio::net::unix::pipe::Receiver::from_owned_fd(p.checkpoints)
        .ok()
        .map(|rx| {
            let shared = shared.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(rx).split(b'\n');
                while let Ok(Some(line)) = lines.next_segment().await {
                    let line = String::from_utf8_lossy(&line);
                    // Absolute instants: T0 moves past the placements, known later.
                    if let Some(m) = marks::parse_checkpoint(&line, 0) {
                        // Not a state change anyone waits on: no wake-up.
                        shared.lock().checkpoints.push(m.in_pid(pid));
                    }
                }
            })
        });
    Ok(Process {
        role: p.role,
        pid,
        placement_ns,
        _group: group,
        tasks,
        checkpoints,
        flushers,
    })
}

/// A request to pass on a stream's unfinished line, answered once done.
type Flush = tokio::sync::oneshot::Sender<()>;

/// Read a process's output stream into lines for `emit`. A line still without
/// its newline (`sys.stdout.write("x")`, Java's `LambdaLogger.log`) is passed on
/// at end-of-file, or when a `Flush` asks (an invoke ends: Lambda's log shows
/// that output before END and REPORT, not after).
async fn read_output(
    rx: tokio::net::unix::pipe::Receiver,
    mut flushes: tokio::sync::mpsc::UnboundedReceiver<Flush>,
    emit: impl Fn(String),
) {
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 8192];
    let complete = |pending: &mut Vec<u8>| {
        while let Some(at) = pending.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = pending.drain(..=at).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            emit(String::from_utf8_lossy(&line).into_owned());
        }
    };
    let rest = |pending: &mut Vec<u8>| {
        if !pending.is_empty() {
            emit(String::from_utf8_lossy(pending).into_owned());
            pending.clear();
        }
    };
    loop {
        tokio::select! {
            ready = rx.readable() => {
                if ready.is_err() {
                    break;
                }
                match rx.try_read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        pending.extend_from_slice(&chunk[..n]);
                        complete(&mut pending);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => break,
                }
            }
            Some(ack) = flushes.recv() => {
                // What the process wrote before the invoke's end is in the pipe
                // by now: read it all before passing the unfinished line on.
                let mut eof = false;
                loop {
                    match rx.try_read(&mut chunk) {
                        Ok(0) => {
                            eof = true;
                            break;
                        }
                        Ok(n) => pending.extend_from_slice(&chunk[..n]),
                        Err(_) => break,
                    }
                }
                complete(&mut pending);
                rest(&mut pending);
                ack.send(()).ok();
                if eof {
                    return;
                }
            }
        }
    }
    rest(&mut pending);
}

impl Process {
    /// Pass on the output the process left without a newline, into the log and
    /// telemetry, before the caller's next line (an invoke's END).
    pub async fn flush_output(&self) {
        for f in &self.flushers {
            let (ack, done) = tokio::sync::oneshot::channel();
            if f.send(ack).is_ok() {
                // A reader that already ended has flushed at its end-of-file.
                tokio::time::timeout(std::time::Duration::from_secs(1), done)
                    .await
                    .ok();
            }
        }
    }

    /// Wait (until `within` passes) for the checkpoint pipe's end-of-file: every
    /// holder of its write end gone, every line read. Call once the process tree is
    /// dead.
    pub async fn checkpoints_read(&mut self, within: std::time::Duration) {
        if let Some(reader) = self.checkpoints.as_mut() {
            // A descendant that escaped the kill keeps the pipe open: what it
            // wrote so far is read, later lines are lost.
            tokio::time::timeout(within, reader).await.ok();
        }
    }
}

/// The checkpoints read so far, in time order, since `t0`.
pub fn checkpoint_marks(shared: &Shared, t0: u64) -> Vec<Mark> {
    let mut marks = shared.lock().checkpoints.clone();
    for m in &mut marks {
        m.t_ns = m.t_ns.saturating_sub(t0);
    }
    marks.sort_by_key(|m| m.t_ns);
    marks
}

/// Send `signal` to a process's group (it is its group's leader).
pub fn signal_group(pid: i32, signal: i32) {
    let _ = coldstart_sys::signal::kill_group(pid, signal); // a group we created
}
