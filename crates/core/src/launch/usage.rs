//! Resource use of a run's process tree up to the ready instant.

use super::procfs::parse_stat;
use crate::sample::Usage;

pub fn from_rusage(ru: &libc::rusage) -> Usage {
    from_root(&coldstart_trace::RootUsage::from_rusage(ru))
}

/// A reaped root's wait4 figures (ours, or the tracer's for a traced run).
pub fn from_root(ru: &coldstart_trace::RootUsage) -> Usage {
    Usage {
        cpu_total_us: ru.user_us + ru.sys_us,
        cpu_user_us: ru.user_us,
        cpu_sys_us: ru.sys_us,
        peak_rss_kb: Some(ru.maxrss_kb).filter(|kb| *kb > own_peak_rss_kb()),
        minor_faults: ru.minor_faults,
        major_faults: ru.major_faults,
        processes: 1,
        threads: 0,
    }
}

/// Sum of se.sum_exec_runtime (ms with ns decimals) over the live threads of a
/// process; 0 where the kernel does not expose /proc/PID/task/TID/sched.
fn thread_runtime_us(pid: i32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    let mut ms = 0.0;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("sched")) else {
            continue;
        };
        ms += text
            .lines()
            .find(|l| l.starts_with("se.sum_exec_runtime"))
            .and_then(|l| l.rsplit(':').next()?.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
    }
    (ms * 1000.0) as u64
}

/// coldstart's own high-water RSS: a floor under any child's ru_maxrss.
fn own_peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Sum over live processes. CPU comes from /proc/PID/stat (clock-tick resolution,
/// usually 10 ms), including children those processes already waited for.
pub fn snapshot(pids: &[i32]) -> Usage {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let mut u = Usage::default();
    for pid in pids {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, f)) = parse_stat(&text) else {
            continue;
        };
        // Fields after comm, 0-based: minflt 7, cminflt 8, majflt 9, cmajflt 10,
        // utime 11, stime 12, cutime 13, cstime 14, num_threads 17.
        let n = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        u.minor_faults += n(7) + n(8);
        u.major_faults += n(9) + n(10);
        let tick_us = |ticks: u64| ticks * 1_000_000 / hz;
        u.cpu_user_us += tick_us(n(11) + n(13));
        u.cpu_sys_us += tick_us(n(12) + n(14));
        let precise = thread_runtime_us(*pid) + tick_us(n(13) + n(14));
        u.cpu_total_us += precise.max(tick_us(n(11) + n(12) + n(13) + n(14)));
        u.threads += n(17);
        u.processes += 1;
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            *u.peak_rss_kb.get_or_insert(0) += status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    u
}
