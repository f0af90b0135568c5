//! The baseline for the emulator's overhead: spawn the runtime with the same
//! environment and time T0 → the first `GET …/runtime/invocation/next` request
//! line read by a minimal blocking listener (no HTTP framework, no extensions, no
//! cgroup, no telemetry). `coldstart lambda --bare` measures this.

use super::{env, Config, Options};
use anyhow::{bail, Context, Result};
use coldstart_core::clock::now_ns;
use coldstart_core::launch::lab::Lab;
use coldstart_core::launch::spawn::{self, OutputMode};
use coldstart_core::launch::wait::{pollfd, ppoll};
use coldstart_core::launch::{output::tail_of_file, signals, tree};
use coldstart_core::marks::Marks;
use coldstart_core::run::RunId;
use coldstart_core::sample::{Outcome, Sample, Usage};
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;

const NEXT: &[u8] = b"GET /2018-06-01/runtime/invocation/next";

pub fn first_next(lab: &Lab, cfg: &Config, opts: &Options, id: RunId) -> Result<Sample> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).context("binding 127.0.0.1 for --bare")?;
    listener.set_nonblocking(true).context("non-blocking listener")?;
    let addr = listener.local_addr().context("listener address")?;
    let function = cfg.function(opts, "coldstart/[$LATEST]bare");
    let mut vars = env::runtime_env(&function, &addr.to_string(), &cfg.runtime_vars());
    let runtime = match &opts.cgroups {
        Some(_) => cfg.runtime.clone().with_limits(super::sandbox::limits(
            cfg.memory_mb,
            opts.init_boost.map(|b| b.vcpus),
        )),
        None => cfg.runtime.clone(),
    };
    // In the same mount namespace as an emulated run: the comparison is the
    // emulator's difference, not the namespace's.
    let namespace = if cfg.layout.sandboxed {
        Some(super::namespace::make(&cfg.layout)?)
    } else {
        None
    };
    let runtime = super::init::inside_target(&runtime, &cfg.layout, None);
    let mut prepared = spawn::prepare(lab, &runtime, OutputMode::MemFile, &[])?;
    if let Some(ns) = &namespace {
        let (mnt, user) = ns.for_child()?;
        prepared.enter_namespace(mnt, user);
    }
    // Checkpoints as in an emulated run, so --bare compares like with like.
    let mut marks = Marks::new(&[], Some(lab.checkpoint_fd()))?;
    if let Some((write, at)) = marks.for_child() {
        vars.retain(|(k, _)| k != coldstart_core::marks::FD_ENV);
        vars.push((coldstart_core::marks::FD_ENV.to_string(), at.to_string()));
        prepared.pass_fd(write, at);
    }
    prepared.replace_env(&vars);
    let deadline = now_ns() + opts.init_timeout.as_nanos() as u64;

    let t0 = now_ns();
    let child = spawn::spawn(&mut prepared, &runtime)?;
    let t0 = t0 + child.placement_ns; // the cgroup placement's kernel wait is not the runtime's
    marks.spawned(t0);

    let _group = signals::Current::set(child.pid);
    let mut conns: Vec<(TcpStream, Vec<u8>)> = Vec::new();
    let mut outcome = Outcome::Timeout;
    let mut ready_ns = None;
    'wait: loop {
        let now = now_ns();
        if now >= deadline || signals::interrupted() {
            if signals::interrupted() {
                outcome = Outcome::Interrupted;
            }
            break;
        }
        let mut fds = vec![pollfd(listener.as_raw_fd()), pollfd(child.pidfd.as_raw_fd())];
        fds.extend(conns.iter().map(|(c, _)| pollfd(c.as_raw_fd())));
        // At most 100 ms, so the interrupt flag is seen promptly.
        ppoll(&mut fds, (deadline - now).min(100_000_000));
        let woke = now_ns();
        for (i, (conn, buf)) in conns.iter_mut().enumerate() {
            if fds[i + 2].revents == 0 {
                continue;
            }
            let mut chunk = [0u8; 4096];
            if let Ok(n) = conn.read(&mut chunk) {
                buf.extend_from_slice(&chunk[..n]);
            }
            if buf.windows(NEXT.len()).any(|w| w == NEXT) {
                outcome = Outcome::Ready;
                ready_ns = Some(woke - t0);
                break 'wait;
            }
        }
        while let Ok((c, _)) = listener.accept() {
            c.set_nonblocking(true).ok();
            conns.push((c, Vec::new()));
        }
        if fds[1].revents != 0 {
            outcome = Outcome::ExitedEarly;
            break;
        }
    }
    let usage = if ready_ns.is_some() {
        coldstart_core::launch::usage::snapshot(&tree::members(child.pid))
    } else {
        Usage::default()
    };
    let _ = coldstart_sys::signal::kill_group(child.pid, libc::SIGKILL); // the group we created
    if !tree::kill_all_in(lab, child.pid) {
        bail!(
            "could not kill every process of {}: check `ps -o pid,stat,cmd --ppid {}`",
            cfg.runtime.display_command(),
            std::process::id()
        );
    }
    let output_tail = match (&outcome, prepared.output_file.as_mut()) {
        (Outcome::Ready, _) | (_, None) => Vec::new(),
        (_, Some(f)) => tail_of_file(f, opts.tail_lines),
    };
    // Every writer is dead: the pipe is read to its end.
    let marks = marks.finish().into_iter().map(|m| m.in_pid(child.pid)).collect();
    Ok(Sample {
        outcome,
        ready_ns,
        usage,
        killed: true,
        output_tail,
        marks,
        ..Sample::begin(&id, t0)
    })
}
