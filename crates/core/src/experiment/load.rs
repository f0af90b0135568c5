//! Was the machine busy while the experiment ran? Timings on a loaded machine are
//! slower and noisier, and an interval that is wide for that reason reads like "no
//! difference": the report says so in one line, and the experiment records it.
//!
//! What is read (cheap: two small /proc files): before the first run, after every
//! run (between runs, so the target itself is not counted) and after the last, the
//! run queue (`procs_running` of /proc/stat, minus coldstart's own running
//! threads, at least the one reading) and the 1-minute load average (/proc/loadavg); the whole
//! machine's CPU time (/proc/stat `cpu`) before and after.
//!
//! The rule (`classify`): busy when, in at least a quarter of the samples, other
//! runnable tasks numbered at least the CPUs (every CPU had something else to run
//! when a target would start), or when the 1-minute load average before the first
//! run was above the number of CPUs (the minute before was loaded; the load average
//! during the runs is not used, as it counts the targets themselves).

use serde::{Deserialize, Serialize};

/// The share of samples with a full run queue from which the machine is busy.
pub const QUEUED_SHARE: f64 = 0.25;

/// One reading of the machine between runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// 1-minute load average.
    pub load1: f64,
    /// Runnable tasks other than coldstart itself.
    pub others_runnable: u32,
}

impl Reading {
    /// Now, from /proc; None where /proc does not say.
    pub fn now() -> Option<Reading> {
        let load1 = std::fs::read_to_string("/proc/loadavg")
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let running: u32 = stat
            .lines()
            .find_map(|l| l.strip_prefix("procs_running ")?.trim().parse().ok())?;
        Some(Reading {
            load1,
            // coldstart's own running threads (at least the one reading) are not
            // load on the targets.
            others_runnable: running.saturating_sub(own_running().max(1)),
        })
    }
}

/// coldstart's own threads that are running or runnable now (state R).
fn own_running() -> u32 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 1;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("stat")).ok())
        // The state follows the parenthesised name, which may itself hold ") ".
        .filter(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('R'))
        })
        .count() as u32
}

/// The machine's CPU time so far (/proc/stat's `cpu` line, in ticks): busy and total.
fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest is inside user).
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    Some((total - idle.min(total), total))
}

/// What an experiment records of the machine's load (stored, and `load` in the JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// The CPUs coldstart may use (the unit of both thresholds).
    pub cpus: usize,
    /// Readings taken: before the first run, after each run, after the last.
    pub samples: usize,
    /// 1-minute load average before the first run and after the last.
    pub load1_before: f64,
    pub load1_after: f64,
    /// Share of the readings in which other runnable tasks numbered at least `cpus`.
    pub queued_share: f64,
    /// The most other runnable tasks seen in a reading.
    pub max_others_runnable: u32,
    /// Share of the whole machine's CPU time that was not idle from the first reading
    /// to the last (the targets' own included); null where /proc/stat did not say.
    #[serde(default)]
    pub machine_cpu_busy: Option<f64>,
    /// The measured runs' CPU time (the tree's user + sys) over their spawn → ready
    /// wall time, summed over the successful runs: far below the CPU-bound target's
    /// usual figure when it waited for a CPU; null without a successful run.
    #[serde(default)]
    pub runs_cpu_over_wall: Option<f64>,
    /// Whether the machine was busy by the rule above.
    pub busy: bool,
    /// Why, in words (null when not busy).
    #[serde(default)]
    pub why: Option<String>,
}

impl Load {
    /// The one warning line of a busy experiment.
    pub fn warning(&self) -> Option<String> {
        let why = self.why.as_deref().filter(|_| self.busy)?;
        Some(format!(
            "warning: the machine was busy during the runs ({why}): times are slower and noisier than on an idle \
             machine and differences are harder to see; rerun when it is idle"
        ))
    }
}

/// The rule, on the readings taken (pure: tested on recorded readings). Returns
/// (busy, why).
pub fn classify(cpus: usize, readings: &[Reading]) -> (bool, Option<String>) {
    let Some(first) = readings.first() else {
        return (false, None);
    };
    let cpus = cpus.max(1);
    let queued = readings
        .iter()
        .filter(|r| r.others_runnable as usize >= cpus)
        .count();
    let share = queued as f64 / readings.len() as f64;
    let mut why = Vec::new();
    if share >= QUEUED_SHARE {
        why.push(format!(
            "{queued} of {} readings between runs had ≥ {cpus} other runnable tasks on {cpus} CPUs",
            readings.len()
        ));
    }
    if first.load1 > cpus as f64 {
        why.push(format!(
            "1-minute load average {:.1} before the first run, above {cpus} CPUs",
            first.load1
        ));
    }
    if why.is_empty() {
        (false, None)
    } else {
        (true, Some(why.join("; ")))
    }
}

/// Takes the readings as an experiment runs.
pub struct Watch {
    cpus: usize,
    readings: Vec<Reading>,
    ticks_before: Option<(u64, u64)>,
}

impl Default for Watch {
    fn default() -> Self {
        Watch::new()
    }
}

impl Watch {
    /// The first reading: call before the first run.
    pub fn new() -> Watch {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut w = Watch {
            cpus,
            readings: Vec::new(),
            ticks_before: cpu_ticks(),
        };
        w.read();
        w
    }

    /// A reading between runs (after one finished, before the next starts).
    pub fn read(&mut self) {
        if let Some(r) = Reading::now() {
            self.readings.push(r);
        }
    }

    /// The last reading, and the record; None when /proc gave nothing.
    pub fn finish(mut self, result: &super::ExperimentResult) -> Option<Load> {
        self.read();
        let first = *self.readings.first()?;
        let last = *self.readings.last()?;
        let (busy, why) = classify(self.cpus, &self.readings);
        let machine_cpu_busy = match (self.ticks_before, cpu_ticks()) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
                Some((b1.saturating_sub(b0)) as f64 / (t1 - t0) as f64)
            }
            _ => None,
        };
        let (cpu_us, wall_ns) = result
            .samples
            .iter()
            .filter(|s| !s.warmup && s.ok())
            .filter_map(|s| Some((s.usage.cpu_total_us, s.ready_ns?)))
            .fold((0u64, 0u64), |(c, w), (cu, wn)| (c + cu, w + wn));
        let max_others_runnable = self.readings.iter().map(|r| r.others_runnable).max().unwrap_or(0);
        let queued = self
            .readings
            .iter()
            .filter(|r| r.others_runnable as usize >= self.cpus.max(1))
            .count();
        Some(Load {
            cpus: self.cpus,
            samples: self.readings.len(),
            load1_before: first.load1,
            load1_after: last.load1,
            queued_share: queued as f64 / self.readings.len() as f64,
            max_others_runnable,
            machine_cpu_busy,
            runs_cpu_over_wall: (wall_ns > 0).then(|| cpu_us as f64 * 1e3 / wall_ns as f64),
            busy,
            why,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(load1: f64, others_runnable: u32) -> Reading {
        Reading {
            load1,
            others_runnable,
        }
    }

    #[test]
    fn a_quiet_machine_is_not_busy() {
        // Recorded on an idle 2-CPU machine: load under 1, at most one other task
        // runnable now and then (a kworker, the shell).
        let quiet = [
            r(0.21, 0),
            r(0.21, 0),
            r(0.19, 1),
            r(0.19, 0),
            r(0.18, 0),
            r(0.18, 1),
        ];
        assert_eq!(classify(2, &quiet), (false, None));
        // A brief burst (one reading in six) is not a busy experiment either.
        let burst = [r(0.5, 0), r(0.5, 3), r(0.6, 0), r(0.6, 0), r(0.6, 1), r(0.6, 0)];
        assert!(!classify(2, &burst).0);
        // Load equal to the CPUs is not above them.
        assert!(!classify(2, &[r(2.0, 0), r(2.0, 1)]).0);
        assert_eq!(classify(2, &[]), (false, None));
    }

    #[test]
    fn a_full_run_queue_or_a_loaded_minute_is_busy() {
        // Three CPU hogs on 2 CPUs, started with the experiment: the run queue is
        // full from the first reading, the load average still low.
        let hogs = [r(0.3, 3), r(0.5, 3), r(0.8, 4), r(1.0, 3), r(1.2, 2), r(1.4, 3)];
        let (busy, why) = classify(2, &hogs);
        assert!(busy);
        let why = why.expect("why");
        assert!(why.contains("6 of 6 readings"), "{why}");
        // Exactly a quarter is enough.
        assert!(classify(2, &[r(0.1, 2), r(0.1, 0), r(0.1, 0), r(0.1, 1)]).0);
        // A minute of load before the first run (other builds), whatever the queue
        // between runs showed.
        let (busy, why) = classify(2, &[r(9.7, 1), r(9.5, 0), r(9.4, 1)]);
        assert!(busy);
        assert!(why.expect("why").contains("load average 9.7"));
    }

    #[test]
    fn a_reading_comes_from_proc_and_leaves_out_the_reader() {
        // This test thread is running as it reads: it is subtracted.
        assert!(own_running() >= 1);
        let r = Reading::now().expect("/proc/loadavg and /proc/stat");
        assert!(r.load1 >= 0.0, "{r:?}");
    }

    #[test]
    fn the_warning_is_one_line() {
        let (busy, why) = classify(2, &[r(9.7, 3)]);
        let load = Load {
            cpus: 2,
            samples: 1,
            load1_before: 9.7,
            load1_after: 9.7,
            queued_share: 1.0,
            max_others_runnable: 3,
            machine_cpu_busy: None,
            runs_cpu_over_wall: None,
            busy,
            why,
        };
        let w = load.warning().expect("a warning");
        assert!(
            w.starts_with("warning: the machine was busy") && !w.contains('\n'),
            "{w}"
        );
        let quiet = Load {
            busy: false,
            why: None,
            ..load
        };
        assert_eq!(quiet.warning(), None);
    }
}
