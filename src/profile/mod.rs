//! `explain --profile`: the startup CPU profile. Each profiled run (a plain run
//! with coldstart_profile's inherited perf counter, see `run::run_profiled`) is
//! resolved to named stacks right after it ends (its runtimes' perf maps are
//! read then); the stacks of every measured run are merged per phase. The phase
//! boundaries are the explained (traced) run's, placed on each profiled run's own
//! clock: its exec-chain ends at its own final exec (from the perf records),
//! and the later boundaries keep their share of final exec → ready.
//! `Profile` is plain data (serde): stored with the explanation and rendered
//! by `render` (flame graph SVG, folded stacks, speedscope) and the reports.

pub mod render;
pub mod runtimes;

use crate::sample::{Phase, Sample};
use crate::stats::Summary;
use coldstart_profile::{Recording, Symbols};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// The startup CPU profile of an explain: every measured profiled run merged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Profile {
    /// How it was sampled, in words.
    pub method: String,
    /// `cycles` or `cpu-clock` (whichever the kernel allows).
    pub event: String,
    pub frequency_hz: u64,
    /// How callers were found: `frame pointers`.
    pub callchains: String,
    /// Whether kernel frames were sampled.
    pub kernel: bool,
    /// Profiled runs merged.
    pub runs: usize,
    /// Samples inside the startup windows (spawn → ready) of those runs.
    pub samples: u64,
    /// Records the kernel dropped (ring buffer full).
    pub lost: u64,
    /// Profiled runs' ready times, and profiled ÷ untraced (as the tracer's overhead).
    pub profiled_ms: Option<Summary>,
    pub overhead: Option<f64>,
    #[serde(default)]
    pub overhead_ci: Option<(f64, f64)>,
    /// Per phase, in time order: folded stacks (`thread;outer;…;leaf`) and counts.
    pub phases: Vec<PhaseProfile>,
    /// What each managed runtime's frames are named from (or why not).
    pub runtimes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseProfile {
    pub name: String,
    pub samples: u64,
    /// (folded stack, samples), sorted by stack.
    pub stacks: Vec<(String, u64)>,
}

impl Profile {
    /// The share of all samples whose stack holds a frame named `name`.
    pub fn share(&self, name: &str) -> f64 {
        let hit: u64 = self
            .phases
            .iter()
            .flat_map(|p| &p.stacks)
            .filter(|(s, _)| s.split(';').any(|f| f == name))
            .map(|(_, n)| n)
            .sum();
        hit as f64 / self.samples.max(1) as f64
    }

    /// Functions by samples in which they are on the stack (inclusive) and
    /// at its leaf (self), most inclusive first; the thread name is not a function.
    pub fn top(&self, n: usize) -> Vec<(String, u64, u64)> {
        let mut by: HashMap<&str, (u64, u64)> = HashMap::new();
        for (stack, count) in self.phases.iter().flat_map(|p| &p.stacks) {
            let frames: Vec<&str> = stack.split(';').skip(1).collect();
            let mut seen: Vec<&str> = Vec::new();
            for f in &frames {
                if !seen.contains(f) {
                    seen.push(f);
                    by.entry(f).or_default().0 += count;
                }
            }
            if let Some(leaf) = frames.last() {
                by.entry(leaf).or_default().1 += count;
            }
        }
        let mut v: Vec<(String, u64, u64)> =
            by.into_iter().map(|(k, (t, s))| (k.to_string(), t, s)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }
}

/// One profiled run, resolved: (ns since its time zero, stack id) per sample.
struct Run {
    ready_ns: u64,
    final_exec_ns: Option<u64>,
    /// The root's last library mapping before its own code ran (as the tracer's loader end).
    loader_end_ns: Option<u64>,
    samples: Vec<(u64, u32)>,
}

/// Collects the profiled runs of one explain.
#[derive(Default)]
pub struct Collector {
    syms: Symbols,
    ids: HashMap<String, u32>,
    stacks: Vec<String>,
    runs: Vec<Run>,
    lost: u64,
    event: Option<(String, u64, bool)>,
    /// pid → runtime seen, with whether a perf map named its code.
    runtimes: BTreeMap<String, (usize, usize)>,
}

impl Collector {
    pub fn new() -> Collector {
        Collector::default()
    }

    /// Take a finished profiled run's recording: its samples from spawn to ready
    /// are named now (the perf maps its runtimes wrote are read, then removed).
    /// A warmup's (`measured` false) or a failed run's only has its maps removed.
    pub fn add(&mut self, sample: &mut Sample, measured: bool) {
        let Some(rec) = sample.profile.take() else { return };
        let Some(ready_ns) = sample.ready_ns.filter(|_| sample.ok() && measured) else {
            // Nothing to name, but what the runtimes wrote still goes.
            rec.remove_perf_maps();
            return;
        };
        let t0 = sample.t0_mono_ns;
        let r = rec.resolve(&mut self.syms, t0, t0 + ready_ns);
        rec.remove_perf_maps();
        self.note_runtimes(&rec, &r);
        self.event = Some((rec.clock.name().to_string(), rec.freq_hz, rec.kernel));
        self.lost += r.lost;
        let root = r.execs.first().map(|e| e.1);
        let final_exec_ns = r
            .execs
            .iter()
            .filter(|e| Some(e.1) == root && e.0 <= t0 + ready_ns)
            .map(|e| e.0.saturating_sub(t0))
            .next_back();
        // The first sample of the root outside the dynamic loader after its final
        // exec: the program's own code has taken over.
        let exec_abs = final_exec_ns.map(|e| e + t0);
        let own_code = r
            .stacks
            .iter()
            .find(|s| Some(s.pid) == root && Some(s.time) >= exec_abs && s.in_loader == Some(false))
            .map_or(t0 + ready_ns, |s| s.time);
        let loader_end_ns = r
            .libraries
            .iter()
            .filter(|(t, pid)| Some(*pid) == root && Some(*t) >= exec_abs && *t <= own_code)
            .map(|(t, _)| t.saturating_sub(t0))
            .max()
            .or(final_exec_ns);
        let samples = r
            .stacks
            .into_iter()
            .map(|s| {
                let folded = s.frames.join(";");
                let next = self.stacks.len() as u32;
                let id = *self.ids.entry(folded.clone()).or_insert(next);
                if id == next {
                    self.stacks.push(folded);
                }
                (s.time.saturating_sub(t0), id)
            })
            .collect();
        self.runs.push(Run {
            ready_ns,
            final_exec_ns,
            loader_end_ns,
            samples,
        });
    }

    fn note_runtimes(&mut self, rec: &Recording, r: &coldstart_profile::Resolved) {
        let _ = rec;
        for (_, pid, name) in &r.execs {
            if let Some(kind) = runtimes::kind(name) {
                let e = self.runtimes.entry(kind.to_string()).or_default();
                e.0 += 1;
                if r.perf_maps.iter().any(|m| m.0 == *pid && m.2 > 0) {
                    e.1 += 1;
                }
            }
        }
    }

    /// The merged profile. `phases`: the explained run's phases (ns since its
    /// time zero) and `final_exec_ns`/`ready_ns` of that run, to place them on
    /// each profiled run's clock.
    pub fn finish(self, phases: &[Phase], ref_ready_ns: u64) -> Option<Profile> {
        let (event, frequency_hz, kernel) = self.event.clone()?;
        let ref_exec = phases
            .iter()
            .find(|p| p.name == "exec-chain")
            .map_or(0, |p| p.end_ns);
        let ref_loader = phases
            .iter()
            .find(|p| p.name == "loader")
            .map_or(ref_exec, |p| p.end_ns)
            .max(ref_exec);
        let phases: Vec<&Phase> = phases.iter().filter(|p| p.start_ns < ref_ready_ns).collect();
        let mut counts: Vec<HashMap<u32, u64>> = vec![HashMap::new(); phases.len().max(1)];
        let mut total = 0;
        for run in &self.runs {
            // The run's own final exec and loader end; later boundaries keep
            // their share of loader end → ready.
            let exec = run.final_exec_ns.unwrap_or(0).min(run.ready_ns);
            let loader = run.loader_end_ns.unwrap_or(exec).clamp(exec, run.ready_ns);
            let lerp = |t: u64, (a, b): (u64, u64), (c, d): (u64, u64)| -> u64 {
                c + ((t.saturating_sub(a)) as f64 * (d - c) as f64 / b.saturating_sub(a).max(1) as f64) as u64
            };
            let place = |t: u64| -> u64 {
                if t <= ref_exec {
                    t.min(exec)
                } else if t <= ref_loader {
                    lerp(t, (ref_exec, ref_loader), (exec, loader))
                } else {
                    lerp(
                        t,
                        (ref_loader, ref_ready_ns.max(ref_loader)),
                        (loader, run.ready_ns),
                    )
                }
            };
            for &(t, id) in &run.samples {
                let i = phases
                    .iter()
                    .rposition(|p| {
                        let start = if p.name == "exec-chain" {
                            0
                        } else {
                            place(p.start_ns)
                        };
                        t >= start
                    })
                    .unwrap_or(0);
                *counts[i].entry(id).or_default() += 1;
                total += 1;
            }
        }
        let names: Vec<String> = if phases.is_empty() {
            vec!["startup".to_string()]
        } else {
            phases.iter().map(|p| p.name.clone()).collect()
        };
        let phases = names
            .into_iter()
            .zip(counts)
            .map(|(name, c)| {
                let mut stacks: Vec<(String, u64)> = c
                    .into_iter()
                    .map(|(id, n)| (self.stacks[id as usize].clone(), n))
                    .collect();
                stacks.sort();
                PhaseProfile {
                    name,
                    samples: stacks.iter().map(|s| s.1).sum(),
                    stacks,
                }
            })
            .collect();
        let runtimes = self
            .runtimes
            .iter()
            .map(|(kind, &(seen, named))| runtimes::note(kind, seen, named))
            .collect();
        Some(Profile {
            method: format!(
                "perf_event_open {event} at {frequency_hz} Hz per task, inherited by every process and thread from the exec to ready, {} frames",
                if kernel { "user and kernel" } else { "user" }
            ),
            event,
            frequency_hz,
            callchains: "frame pointers".to_string(),
            kernel,
            runs: self.runs.len(),
            samples: total,
            lost: self.lost,
            profiled_ms: None,
            overhead: None,
            overhead_ci: None,
            phases,
            runtimes,
        })
    }
}
