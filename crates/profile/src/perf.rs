//! The raw perf_event_open(2) counter and its ring buffer, each unsafe step
//! wrapped once here with its SAFETY argument.
//!
//! One sampling event per CPU is opened on the *calling thread* (pid 0),
//! disabled, with `inherit` and `enable_on_exec`: every process and thread the
//! thread then clones inherits a copy, and a copy switches itself on when its
//! task execs. The thread that spawns the target opens it right before the
//! spawn, so the sampling starts at the target's exec — before its first
//! instruction — and follows its forks and threads, with no stop of the child
//! needed between clone and exec. coldstart's own thread never execs, so its copy
//! stays off. The inherited copies write into their parent event's ring
//! buffer. Per CPU, because the kernel refuses to mmap an inherited event that
//! follows a task on any CPU (all children writing one buffer across CPUs).

use perf_event_open_sys as sys;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use sys::bindings as b;

/// What the kernel samples on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The hardware cycle counter (needs a PMU; VMs often have none).
    Cycles,
    /// The software CPU clock (an hrtimer per running task): always there.
    CpuClock,
}

impl Clock {
    pub fn name(self) -> &'static str {
        match self {
            Clock::Cycles => "cycles",
            Clock::CpuClock => "cpu-clock",
        }
    }
}

/// The sample layout this module asks for; `record.rs` parses exactly this.
pub const SAMPLE_TYPE: u64 =
    (b::PERF_SAMPLE_IP | b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME | b::PERF_SAMPLE_CALLCHAIN) as u64;

/// An open, disabled, inherited sampling counter: one event and ring buffer per CPU.
pub struct Counter {
    events: Vec<(OwnedFd, Ring)>,
    pub clock: Clock,
    /// Whether kernel frames are sampled too (refused to unprivileged users
    /// under perf_event_paranoid ≥ 2).
    pub kernel: bool,
}

/// The ring buffers' total size tried first: 16 MiB holds ~20 000 samples of
/// 100-frame stacks (10 s of CPU at 1999 Hz), more with shallower ones; what does
/// not fit is counted as lost. The kernel allocates and zeroes it at mmap (before
/// time zero, but on the same CPUs), so it is not larger. Smaller ones are tried
/// when the locked-memory limit refuses it.
const RING_BYTES: usize = 16 << 20;

impl Counter {
    /// Open the counter on the calling thread, sampling `freq_hz` times a second
    /// of CPU time. Cycles if the kernel has them, else the CPU clock; kernel
    /// frames if allowed.
    pub fn open_on_this_thread(freq_hz: u64) -> io::Result<Counter> {
        let cpus = online_cpus();
        let mut last = None;
        for clock in [Clock::Cycles, Clock::CpuClock] {
            for kernel in [true, false] {
                // The first CPU decides what the kernel allows; the others follow.
                match open(clock, kernel, freq_hz, cpus[0]) {
                    Ok(fd) => {
                        let mut events = Vec::with_capacity(cpus.len());
                        let per_cpu = ring_pages(cpus.len());
                        events.push((Ring::map(&fd, per_cpu)?, fd));
                        for &cpu in &cpus[1..] {
                            let fd = open(clock, kernel, freq_hz, cpu)?;
                            events.push((Ring::map(&fd, per_cpu)?, fd));
                        }
                        return Ok(Counter {
                            events: events.into_iter().map(|(r, f)| (f, r)).collect(),
                            clock,
                            kernel,
                        });
                    }
                    Err(e) => last = Some(e),
                }
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("perf_event_open failed")))
    }

    /// Stop sampling in this event and every inherited copy (the kernel applies
    /// the ioctl to the event's children).
    pub fn disable(&self) -> io::Result<()> {
        for (fd, _) in &self.events {
            // SAFETY: an ioctl on a perf event descriptor we own; the argument is a flag word.
            let r = unsafe { sys::ioctls::DISABLE(fd.as_raw_fd(), 0) };
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Move every complete record out of the ring buffers (appended to `out`,
    /// each record whole: header included; CPU by CPU, so not in time order).
    pub fn drain(&mut self, out: &mut Vec<u8>) {
        for (_, ring) in &mut self.events {
            ring.drain(out)
        }
    }
}

/// The CPUs a task may run on (/sys/devices/system/cpu/online: `0-3,6`).
fn online_cpus() -> Vec<i32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<i32>(), b.parse::<i32>()) {
            cpus.extend(a..=b);
        }
    }
    if cpus.is_empty() {
        // SAFETY: sysconf has no memory effects.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as i32;
        cpus.extend(0..n);
    }
    cpus
}

/// Data pages per CPU: a power of two, the total budget shared, at least 64.
fn ring_pages(cpus: usize) -> usize {
    let per = RING_BYTES / 4096 / cpus.max(1);
    let mut pages = 64;
    while pages * 2 <= per && pages < 8192 {
        pages *= 2;
    }
    pages
}

fn open(clock: Clock, kernel: bool, freq_hz: u64, cpu: i32) -> io::Result<OwnedFd> {
    let mut attr = b::perf_event_attr {
        size: std::mem::size_of::<b::perf_event_attr>() as u32,
        ..Default::default()
    };
    match clock {
        Clock::Cycles => {
            attr.type_ = b::PERF_TYPE_HARDWARE;
            attr.config = b::PERF_COUNT_HW_CPU_CYCLES as u64;
        }
        Clock::CpuClock => {
            attr.type_ = b::PERF_TYPE_SOFTWARE;
            attr.config = b::PERF_COUNT_SW_CPU_CLOCK as u64;
        }
    }
    attr.__bindgen_anon_1.sample_freq = freq_hz;
    attr.set_freq(1);
    attr.sample_type = SAMPLE_TYPE;
    attr.set_disabled(1);
    attr.set_inherit(1);
    attr.set_enable_on_exec(1);
    attr.set_exclude_kernel(u64::from(!kernel));
    attr.set_exclude_hv(1);
    // Side-band records: executable mappings (with file offsets), process
    // names (and which are execs), forks and exits — the address spaces of
    // processes that are gone by the time the samples are read.
    attr.set_mmap(1);
    attr.set_mmap2(1);
    attr.set_comm(1);
    attr.set_comm_exec(1);
    attr.set_task(1);
    attr.set_sample_id_all(1);
    // Timestamps on coldstart's clock, so the window is [t0, ready] exactly.
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    // SAFETY: `attr` is a fully initialised perf_event_attr with its size set;
    // pid 0 is the calling thread (and, inherited, what it clones), on `cpu`; no group.
    let fd = unsafe { sys::perf_event_open(&mut attr, 0, cpu, -1, b::PERF_FLAG_FD_CLOEXEC as libc::c_ulong) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor the kernel returned, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The mmap'd ring: one metadata page, then a power-of-two data area the kernel
/// writes records into (`data_head`) and we free by advancing `data_tail`.
struct Ring {
    base: *mut u8,
    len: usize,
    data_offset: usize,
    data_size: usize,
}

// SAFETY: the mapping is owned by this struct alone and only read/written
// through &mut self (or dropped); the kernel is the only other writer.
unsafe impl Send for Ring {}

impl Ring {
    fn map(fd: &OwnedFd, max_pages: usize) -> io::Result<Ring> {
        // SAFETY: sysconf has no memory effects.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let mut last = None;
        let tries = [max_pages, max_pages / 8, max_pages / 64, 16];
        for pages in tries.into_iter().filter(|&p| p >= 16) {
            let len = (pages + 1) * page;
            // SAFETY: a new shared mapping of the perf descriptor, checked below;
            // writable so data_tail can be set (the kernel then never overwrites
            // records we have not read).
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                last = Some(io::Error::last_os_error());
                continue;
            }
            let meta = base as *const b::perf_event_mmap_page;
            // SAFETY: the first page of the mapping is the metadata page; these
            // two fields are set once by the kernel at mmap time.
            let (off, size) = unsafe {
                (
                    std::ptr::read_volatile(&(*meta).data_offset) as usize,
                    std::ptr::read_volatile(&(*meta).data_size) as usize,
                )
            };
            // Kernels before 4.1 leave these 0: the data then starts at page 1.
            let (data_offset, data_size) = if size == 0 {
                (page, pages * page)
            } else {
                (off, size)
            };
            return Ok(Ring {
                base: base.cast(),
                len,
                data_offset,
                data_size,
            });
        }
        Err(last.unwrap_or_else(|| io::Error::other("mmap of the perf ring failed")))
    }

    fn head_tail(&self) -> (&AtomicU64, &AtomicU64) {
        let meta = self.base as *const b::perf_event_mmap_page;
        // SAFETY: data_head and data_tail are 8-byte aligned u64 fields of the
        // metadata page, shared with the kernel: accessed only atomically.
        unsafe {
            (
                AtomicU64::from_ptr(std::ptr::addr_of!((*meta).data_head) as *mut u64),
                AtomicU64::from_ptr(std::ptr::addr_of!((*meta).data_tail) as *mut u64),
            )
        }
    }

    fn drain(&mut self, out: &mut Vec<u8>) {
        let (head, tail) = self.head_tail();
        // Acquire: the records up to head are written before head is published.
        let head_v = head.load(Ordering::Acquire);
        let mut pos = tail.load(Ordering::Relaxed);
        let size = self.data_size as u64;
        // SAFETY: the data area lies inside the mapping.
        let data = unsafe { std::slice::from_raw_parts(self.base.add(self.data_offset), self.data_size) };
        let byte = |i: u64| data[(i % size) as usize];
        while head_v - pos >= 8 {
            let rec_len = u16::from_le_bytes([byte(pos + 6), byte(pos + 7)]) as u64;
            if rec_len < 8 || head_v - pos < rec_len {
                break;
            }
            let start = (pos % size) as usize;
            let end = start + rec_len as usize;
            if end <= data.len() {
                out.extend_from_slice(&data[start..end]);
            } else {
                out.extend_from_slice(&data[start..]);
                out.extend_from_slice(&data[..end - data.len()]);
            }
            pos += rec_len;
        }
        // Release: our reads of the freed space happen before the kernel may reuse it.
        tail.store(pos, Ordering::Release);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `map`, used by no one after.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}
