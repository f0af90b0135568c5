//! A run of a container image: the engine's client (`podman run …`, attached)
//! spawned like any target, its container named and labelled for this run, and
//! removed with the run's cleanup. The engine watches the client as it watches a
//! process: its exit is the container's (the client returns the entrypoint's
//! status), its output is the container's, and a SIGTERM to its group reaches
//! the container (the client proxies signals while attached).
//!
//! What the client does not cover: the container's own processes live under the
//! engine's monitor, outside the run's process group and cgroup, so CPU and
//! memory figures are the client's, and the run's cleanup removes the container
//! through the engine (a killed coldstart's are reaped by the next one).

use super::launcher::{Ended, Executor, Launched, Output, PlainExecutor, RootExit};
use super::read_set::ImageFiles;
use crate::launch::lab::Lab;
use crate::launch::{procfs, reaping};
use crate::sample::{Mark, MarkSource, ReadSet, Sample, Usage};
use crate::target::container::{self, Container};
use crate::target::Target;
use anyhow::{Context, Result};
use std::os::fd::RawFd;
use std::sync::Mutex;

/// A pod run's metric: when the kubelet would mark it Ready, by its manifest's
/// readiness (and startup) probes, for the program ready when the probe said so.
pub const KUBELET_READY_METRIC: &str = "kubelet_ready_ms";

/// This process as a container's owner: `PID:START_TIME` (a reused pid is
/// another owner).
fn owner_label() -> String {
    let pid = std::process::id() as i32;
    format!("{pid}:{}", procfs::start_time(pid).unwrap_or(0))
}

/// Whether the owner a label names is still running (a SIGKILLed coldstart may
/// linger as a zombie until its parent reaps it: gone).
fn owner_alive(label: &str) -> bool {
    let Some((pid, start)) = label.split_once(':') else {
        return false;
    };
    match (pid.parse::<i32>(), start.parse::<u64>()) {
        (Ok(pid), Ok(start)) => procfs::start_time(pid) == Some(start) && procfs::alive(pid),
        _ => false,
    }
}

/// How often orphans of the engine's monitor are reaped during a run (ns).
const TEND_NS: u64 = 2_000_000;

pub struct ContainerExecutor<'lab> {
    plain: PlainExecutor<'lab>,
    container: Container,
    /// The run's container, once its client was spawned.
    name: Option<String>,
    /// The engine's instants, read before the container is removed and added to
    /// the Sample's marks once the engine has set them ([`Executor::cleaned_up`]).
    marks: Vec<Mark>,
    /// A pod's run: its copy of the manifest, kept until the run ends.
    pod_file: Option<tempfile::NamedTempFile>,
    /// `--read-set`: the image's files, evicted before the spawn.
    read_set: bool,
    image: Option<ImageFiles>,
    read: Option<ReadSet>,
}

impl<'lab> ContainerExecutor<'lab> {
    pub fn new(lab: &'lab Lab, container: Container, read_set: bool) -> Self {
        ContainerExecutor {
            plain: PlainExecutor::new(lab),
            container,
            name: None,
            marks: Vec::new(),
            pod_file: None,
            read_set,
            image: None,
            read: None,
        }
    }

    /// Before the spawn (outside the timed window, which starts in the plain
    /// executor's launch): the image's files out of the page cache.
    fn evict_image(&mut self) {
        let listed = self
            .container
            .layer_dirs()
            .and_then(|dirs| ImageFiles::list(&dirs));
        match listed {
            Ok(mut image) => {
                image.evict();
                self.image = Some(image);
            }
            Err(e) => {
                // Once per process: each run would say the same.
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| crate::out::errln!("coldstart: no read set for this run: {e:#}"));
            }
        }
    }
}

/// Reap a killed coldstart's containers once per engine per process, before
/// this process starts its first (and before its first probe's port check: an
/// orphan may still hold the published port).
pub(super) fn reap_once(container: &Container) -> Result<()> {
    static REAPED: Mutex<Vec<container::EngineKind>> = Mutex::new(Vec::new());
    let mut reaped = REAPED.lock().unwrap_or_else(|p| p.into_inner());
    if reaped.contains(&container.engine.kind) {
        return Ok(());
    }
    let removed = container::reap_orphans(&container.engine, |owner| !owner_alive(owner))?;
    if !removed.is_empty() {
        crate::out::errln!(
            "removed {} container(s) or pod(s) a killed coldstart left: {}",
            removed.len(),
            removed.join(", ")
        );
    }
    reaped.push(container.engine.kind);
    Ok(())
}

impl Executor for ContainerExecutor<'_> {
    fn checkpoint_fd(&self) -> Option<RawFd> {
        // Inside the container the Lab's descriptor does not exist.
        None
    }

    fn spawn(&mut self, target: &Target, env: &[(String, String)], output: Output) -> Result<Launched> {
        let name = container::run_name();
        let argv = match &self.container.pod {
            // A pod's name and owner are in its manifest: a copy of it, for this run.
            Some(pod) => {
                let file = pod.for_run(&name, &owner_label())?;
                let mut argv = target.argv[..target.argv.len().saturating_sub(1)].to_vec();
                argv.push(file.path().display().to_string());
                self.pod_file = Some(file);
                argv
            }
            None => self.container.run_argv(&target.argv, &name, &owner_label()),
        };
        let client = Target {
            argv,
            ..target.clone()
        };
        self.name = Some(name);
        if self.read_set {
            self.evict_image();
        }
        self.plain
            .spawn(&client, env, output)
            .with_context(|| format!("cannot start {}", self.container.engine.name()))
    }

    fn tend_every(&self) -> Option<u64> {
        Some(TEND_NS)
    }

    fn tend(&mut self, root: i32) {
        // The engine's monitor (podman's conmon) double-forks and is reparented to
        // us, the subreaper: once it exits it is a zombie of ours until reaped, and
        // to a client that checks whether it lives (kill(pid, 0)) a zombie still
        // does. Reaped as it exits, not at the cleanup. The root is left to the
        // engine, which reaps it with its status.
        for pid in procfs::children_of_self() {
            if pid != root && !procfs::alive(pid) {
                reaping::reap_exited(pid);
            }
        }
    }

    fn root_exited(&mut self, pid: i32, status_now: bool) -> RootExit {
        self.plain.root_exited(pid, status_now)
    }

    fn tree_gone(&self, pid: i32) -> bool {
        if self.container.pod.is_none() {
            return self.plain.tree_gone(pid);
        }
        // `kube play` returns once the pod runs: the pod lives on in its
        // monitors (conmon), reparented to us, the subreaper.
        !procfs::children_of_self()
            .into_iter()
            .any(|p| p != pid && procfs::alive(p))
    }

    fn tree_usage(&self, pid: i32) -> Usage {
        self.plain.tree_usage(pid)
    }

    fn window_ended(&mut self, pid: i32, ready: bool) {
        self.plain.window_ended(pid, ready);
        if ready {
            self.read = self.image.take().map(|i| i.read_set());
        }
    }

    fn terminate(&mut self, pid: i32) -> bool {
        // The attached client forwards the SIGTERM to the container's process.
        self.plain.terminate(pid)
    }

    fn finish(&mut self, _pid: i32, sample: &mut Sample, _end: &Ended) -> Result<()> {
        // The engine's records of the container's creation and start, as marks
        // (DESIGN: the engine's clock is converted once, with the offset measured here).
        let Some(name) = self.name.as_deref().filter(|_| sample.ok()) else {
            return Ok(());
        };
        let (offset, _) = coldstart_sys::clock::realtime_offset_ns();
        let t0 = sample.t0_mono_ns as i128;
        let Some(i) = self.container.instants(name, t0 + offset)? else {
            return Ok(());
        };
        if i.fetched_layers > 0 {
            // What this run pulled: the registry's bytes, as the store recorded them.
            sample
                .metrics
                .insert("pulled_mib".into(), i.fetched_bytes as f64 / (1024.0 * 1024.0));
            sample
                .metrics
                .insert("pulled_layers".into(), i.fetched_layers as f64);
        }
        let ready = sample.ready_ns.unwrap_or(u64::MAX) as i128;
        for (mark, at) in i.marks() {
            let t = at - offset - t0;
            // An instant outside the window is not one of this run's: none is made up.
            if (0..=ready).contains(&t) {
                self.marks.push(Mark::new(mark, MarkSource::Engine, t as u64));
            }
        }
        Ok(())
    }

    fn cleaned_up(&mut self, sample: &mut Sample) {
        sample.marks.append(&mut self.marks);
        sample.marks.sort_by_key(|m| m.t_ns);
        if let (Some(pod), Some(ready)) = (&self.container.pod, sample.ready_ns.filter(|_| sample.ok())) {
            // When the kubelet would mark this pod Ready, its probes' clock taken
            // to start at the spawn (the pod's containers start later: a bound).
            let ready_ms = ready as f64 / 1e6;
            let by = pod
                .probes
                .iter()
                .filter_map(|p| Some(p.readiness?.ready_by_ms(p.startup.as_ref(), ready_ms)))
                .max_by(f64::total_cmp);
            if let Some(by) = by {
                sample
                    .metrics
                    .insert(KUBELET_READY_METRIC.into(), by.max(ready_ms));
            }
        }
        if let Some(r) = self.read.take().filter(|_| sample.ok()) {
            let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
            sample.metrics.insert("image_read_mib".into(), mib(r.read_bytes));
            sample
                .metrics
                .insert("image_read_files".into(), r.files.len() as f64);
            sample.read_set = Some(Box::new(r));
        }
    }

    fn kill_all(&mut self, pid: i32) -> bool {
        let client_gone = self.plain.kill_all(pid);
        let Some(name) = self.name.take() else {
            return client_gone;
        };
        self.pod_file = None;
        match self.container.remove(&name) {
            Ok(()) => client_gone,
            Err(e) => {
                crate::out::errln!("{e:#}");
                false
            }
        }
    }

    fn output_tail(&mut self, lines: usize) -> Option<Vec<String>> {
        let mut tail = self.plain.output_tail(lines)?;
        if let Some(hint) = container::hint_for(&tail) {
            tail.push(format!("coldstart: {hint}"));
        }
        Some(tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_alive_only_with_its_own_start_time() {
        assert!(owner_alive(&owner_label()));
        let pid = std::process::id();
        assert!(
            !owner_alive(&format!("{pid}:1")),
            "a reused pid passed for the owner"
        );
        assert!(!owner_alive("garbage"));
        assert!(!owner_alive("999999999:5"));
    }
}
