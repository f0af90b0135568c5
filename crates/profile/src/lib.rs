//! coldstart's startup CPU profiler. [`Recorder::start`] opens a sampling
//! perf event on the calling thread that the next spawned process tree
//! inherits and switches on at its exec (see `perf.rs`); [`Recorder::stop`] at
//! ready; [`Recording::resolve`] turns the ring buffer's records into named
//! stacks, using the mappings, forks and execs it recorded (so processes that
//! have exited are symbolised too) and the runtimes' perf maps.
//!
//! Callchains are the kernel's frame-pointer walk (PERF_SAMPLE_CALLCHAIN): code
//! built without frame pointers shows its leaf function and may lose callers.

pub mod perf;
pub mod record;
pub mod symbols;

pub use perf::Clock;
use record::{Ip, Record};
use std::collections::HashMap;
use std::time::SystemTime;
pub use symbols::Symbols;

/// Samples per second of CPU time per task: odd, so it does not beat in step
/// with a program's own millisecond timers.
pub const DEFAULT_FREQ_HZ: u64 = 1999;

/// A live recording (the counter and what was drained from it so far).
pub struct Recorder {
    counter: perf::Counter,
    bytes: Vec<u8>,
    started: SystemTime,
    freq_hz: u64,
}

impl Recorder {
    /// Open the inherited counter on this thread: call it on the thread that
    /// spawns the target, right before the spawn (every process the thread
    /// clones until [`Recorder::finish`] inherits it; only execs switch it on).
    pub fn start(freq_hz: u64) -> std::io::Result<Recorder> {
        Ok(Recorder {
            counter: perf::Counter::open_on_this_thread(freq_hz)?,
            bytes: Vec::new(),
            started: SystemTime::now(),
            freq_hz,
        })
    }

    /// Whether the kernel lets this process profile (opens a counter and closes
    /// it again; nothing is spawned in between): which event it would sample.
    pub fn available() -> std::io::Result<Clock> {
        Recorder::start(DEFAULT_FREQ_HZ).map(|r| r.counter.clock)
    }

    /// Stop sampling (the window ends) and take what the ring holds.
    pub fn stop(&mut self) {
        // A failed disable only lets samples past ready in; they are cut by time.
        let _ = self.counter.disable();
        self.counter.drain(&mut self.bytes);
    }

    /// Close the counter and parse everything recorded.
    pub fn finish(mut self) -> Recording {
        self.stop();
        Recording {
            clock: self.counter.clock,
            kernel: self.counter.kernel,
            freq_hz: self.freq_hz,
            started: self.started,
            records: record::parse(&self.bytes),
        }
    }
}

/// A finished recording: raw records, nothing named yet.
#[derive(Debug, Clone)]
pub struct Recording {
    pub clock: Clock,
    pub kernel: bool,
    pub freq_hz: u64,
    /// Wall clock at the start: perf maps older than this are some other process's.
    pub started: SystemTime,
    pub records: Vec<Record>,
}

/// One sample with its names: root first, the thread's name at the root.
#[derive(Debug, Clone)]
pub struct Stack {
    /// CLOCK_MONOTONIC ns.
    pub time: u64,
    pub pid: u32,
    pub frames: Vec<String>,
    /// Whether the innermost user frame is in the dynamic loader (None: no user frame).
    pub in_loader: Option<bool>,
}

/// A recording resolved to named stacks.
#[derive(Debug, Default)]
pub struct Resolved {
    /// The samples inside the window, in time order.
    pub stacks: Vec<Stack>,
    /// Samples outside the window (before the first exec cannot happen; after ready).
    pub outside: usize,
    /// Records the kernel dropped because the ring was full.
    pub lost: u64,
    /// (time, pid, new name) of each exec.
    pub execs: Vec<(u64, u32, String)>,
    /// The perf maps read (runtime JIT/interpreter names): (pid, path, entries).
    pub perf_maps: Vec<(u32, String, usize)>,
    /// (time, pid) of each shared library mapped (a `.so` file).
    pub libraries: Vec<(u64, u32)>,
}

/// A process's executable mappings: (start, end, file offset at start, path).
type Space = Vec<(u64, u64, u64, String)>;

impl Recording {
    /// Name every sample in `[from, to]` (CLOCK_MONOTONIC ns), reading the perf
    /// maps the run's processes wrote (fresh since the start); remove them
    /// afterwards with [`Recording::remove_perf_maps`].
    pub fn resolve(&self, syms: &mut Symbols, from: u64, to: u64) -> Resolved {
        let mut out = Resolved::default();
        let mut order: Vec<&Record> = Vec::with_capacity(self.records.len());
        for r in &self.records {
            match r {
                Record::Lost { count } => out.lost += count,
                _ => order.push(r),
            }
        }
        // Stable: records of one instant keep the kernel's order.
        order.sort_by_key(|r| time_of(r));
        let mut spaces: HashMap<u32, Space> = HashMap::new();
        let mut names: HashMap<u32, String> = HashMap::new();
        let mut maps: HashMap<u32, Option<symbols::Table>> = HashMap::new();
        for r in order {
            match r {
                Record::Fork {
                    pid, ppid, tid, ptid, ..
                } => {
                    if pid != ppid {
                        let parent = spaces.get(ppid).cloned().unwrap_or_default();
                        spaces.insert(*pid, parent);
                    }
                    if let Some(n) = names.get(ptid).cloned() {
                        names.insert(*tid, n);
                    }
                }
                Record::Comm {
                    pid,
                    tid,
                    time,
                    exec,
                    name,
                } => {
                    if *exec {
                        spaces.insert(*pid, Vec::new());
                        out.execs.push((*time, *pid, name.clone()));
                    }
                    names.insert(*tid, name.clone());
                }
                Record::Mmap {
                    pid,
                    time,
                    start,
                    len,
                    pgoff,
                    path,
                    ..
                } => {
                    if is_library(path) {
                        out.libraries.push((*time, *pid));
                    }
                    let space = spaces.entry(*pid).or_default();
                    let end = start + len;
                    space.retain(|m| m.1 <= *start || m.0 >= end);
                    space.push((*start, end, *pgoff, path.clone()));
                }
                Record::Sample {
                    pid,
                    tid,
                    time,
                    chain,
                } => {
                    if *time < from || *time > to {
                        out.outside += 1;
                        continue;
                    }
                    let space = spaces.get(pid);
                    let in_loader = chain.iter().find_map(|ip| match ip {
                        Ip::User(a) => Some(
                            space
                                .and_then(|s| s.iter().find(|m| (m.0..m.1).contains(a)))
                                .is_some_and(|m| is_loader(&m.3)),
                        ),
                        Ip::Kernel(_) => None,
                    });
                    let mut frames: Vec<String> = Vec::with_capacity(chain.len() + 1);
                    for (depth, ip) in chain.iter().enumerate() {
                        frames.push(match ip {
                            Ip::Kernel(a) => match syms.kernel(*a) {
                                Some(n) => format!("{n}_[k]"),
                                None => "[kernel]_[k]".to_string(),
                            },
                            // A caller's address is its return address: look up
                            // the call instruction before it.
                            Ip::User(a) => {
                                let a = if depth > 0 { a.saturating_sub(1) } else { *a };
                                let map = maps
                                    .entry(*pid)
                                    .or_insert_with(|| self.perf_map(*pid, &mut out.perf_maps));
                                user_frame(syms, space, map.as_ref(), a)
                            }
                        });
                    }
                    let thread = names
                        .get(tid)
                        .or_else(|| names.get(pid))
                        .cloned()
                        .unwrap_or_else(|| format!("pid {pid}"));
                    frames.push(thread);
                    frames.reverse();
                    for f in &mut frames {
                        // The folded format's separator and line end.
                        if f.contains([';', '\n']) {
                            *f = f.replace([';', '\n'], ":");
                        }
                    }
                    out.stacks.push(Stack {
                        time: *time,
                        pid: *pid,
                        frames,
                        in_loader,
                    });
                }
                Record::Exit { .. } | Record::Lost { .. } => {}
            }
        }
        out
    }

    /// The perf map a process of this run wrote, read once.
    fn perf_map(&self, pid: u32, read: &mut Vec<(u32, String, usize)>) -> Option<symbols::Table> {
        let path = format!("/tmp/perf-{pid}.map");
        let meta = std::fs::metadata(&path).ok()?;
        // Older than the run: another process that once had this pid.
        if meta.modified().ok()? < self.started {
            return None;
        }
        let text = std::fs::read_to_string(&path).ok()?;
        let table = symbols::perf_map(&text);
        read.push((pid, path, table.len()));
        Some(table)
    }
}

impl Recording {
    /// Every process the recording saw (forked, exec'd, mapped or sampled).
    pub fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Sample { pid, .. }
                | Record::Mmap { pid, .. }
                | Record::Comm { pid, .. }
                | Record::Fork { pid, .. }
                | Record::Exit { pid, .. } => Some(*pid),
                Record::Lost { .. } => None,
            })
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// Remove the perf maps this run's processes wrote (fresh since its start),
    /// read or not: a warmup's, a failed run's, or one of a process with no
    /// sample in the window would otherwise pile up in /tmp. Returns the
    /// paths removed.
    pub fn remove_perf_maps(&self) -> Vec<String> {
        let mut removed = Vec::new();
        for pid in self.pids() {
            let path = format!("/tmp/perf-{pid}.map");
            let fresh = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= self.started);
            if fresh && std::fs::remove_file(&path).is_ok() {
                removed.push(path);
            }
        }
        removed
    }
}

/// A shared library's file (`libc.so.6`, `libjvm.so`, `_ssl.cpython-311-x86_64-linux-gnu.so`).
fn is_library(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with(".so") || name.contains(".so.")
}

/// The dynamic loader (`ld-linux-x86-64.so.2`, `ld-musl-x86_64.so.1`, `ld.so`).
fn is_loader(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.starts_with("ld-linux") || name.starts_with("ld-musl") || name == "ld.so"
}

fn time_of(r: &Record) -> u64 {
    match r {
        Record::Sample { time, .. }
        | Record::Mmap { time, .. }
        | Record::Comm { time, .. }
        | Record::Fork { time, .. }
        | Record::Exit { time, .. } => *time,
        Record::Lost { .. } => 0,
    }
}

fn user_frame(syms: &mut Symbols, space: Option<&Space>, map: Option<&symbols::Table>, addr: u64) -> String {
    let mapping = space.and_then(|s| s.iter().find(|m| (m.0..m.1).contains(&addr)));
    let file = mapping.filter(|m| {
        let p = &m.3;
        p.starts_with('/')
            && !p.starts_with("//anon")
            && !p.starts_with("/memfd:")
            && !p.ends_with(" (deleted)")
    });
    if let Some((start, _, pgoff, path)) = file {
        if let Some(name) = syms.elf(path, addr - start + pgoff) {
            return name;
        }
    }
    // JIT code (anonymous or memfd mappings, or a file the runtime mapped
    // itself): the runtime's perf map names it.
    if let Some(name) = map.and_then(|m| m.lookup(addr)) {
        return format!("{name}_[j]");
    }
    match mapping {
        Some((_, _, _, path)) if file.is_some() => {
            let base = path.rsplit('/').next().unwrap_or(path);
            format!("[{base}]")
        }
        Some((_, _, _, path)) if path.starts_with('[') => path.clone(),
        _ => "[unknown]".to_string(),
    }
}
