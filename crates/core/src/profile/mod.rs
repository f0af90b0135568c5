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
use coldstart_profile::{Recording, Symbols};
use coldstart_stats::Summary;
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
    /// The hottest functions of every sample, counted before the stacks were
    /// bounded (see [`MAX_STACK_BYTES`]): (name, on the stack, at the leaf).
    #[serde(default)]
    pub functions: Vec<(String, u64, u64)>,
    /// How the stacks were cut to fit [`MAX_STACK_BYTES`], if they were.
    #[serde(default)]
    pub cut: Option<Cut>,
}

/// The most folded-stack text a profile keeps, all phases together (each line
/// `phase;thread;…;leaf count` as `--export-folded` writes it). It bounds the
/// stored explanation, the JSON export and the folded, flame graph and
/// speedscope exports whatever the program does: a JVM's startup sampled
/// three times can hold 40,000 distinct 128-frame stacks (~140 MB of text).
pub const MAX_STACK_BYTES: usize = 4 << 20;

/// The frame that ends a stack cut short to fit [`MAX_STACK_BYTES`].
pub const CUT_FRAME: &str = "[deeper frames cut]";

/// How a profile's stacks were bounded: the stacks with the most samples are
/// kept whole (up to half the bytes), every other stack keeps its `depth`
/// outermost frames (after the thread) and ends in [`CUT_FRAME`]; sample
/// counts, per phase and in all, are unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cut {
    pub max_bytes: usize,
    /// The folded text's size before the cut.
    pub bytes_before: usize,
    /// Distinct stacks (per phase) before the cut, and how many were kept whole.
    pub stacks_before: usize,
    pub kept_whole: usize,
    /// Frames kept below the thread in the cut stacks.
    pub depth: usize,
    /// Samples whose stack was cut.
    pub samples_cut: u64,
}

impl Cut {
    pub fn note(&self) -> String {
        format!(
            "the stacks are bounded to {} MiB: {} of {} distinct stacks kept whole (the most sampled), the other {} samples' stacks cut to their {} outer frames (ending in {CUT_FRAME}); the hottest functions count every frame",
            self.max_bytes >> 20,
            self.kept_whole,
            self.stacks_before,
            self.samples_cut,
            self.depth
        )
    }
}

/// A folded line's length: `phase;stack count\n`.
fn line_bytes(phase: &str, stack: &str, count: u64) -> usize {
    phase.len() + stack.len() + count.to_string().len() + 3
}

/// Fit the phases' stacks into `max_bytes` of folded text (see [`Cut`]);
/// None when they fit already.
pub fn bound(phases: &mut [PhaseProfile], max_bytes: usize) -> Option<Cut> {
    let bytes_before: usize = phases
        .iter()
        .flat_map(|p| p.stacks.iter().map(|(s, n)| line_bytes(&p.name, s, *n)))
        .sum();
    if bytes_before <= max_bytes {
        return None;
    }
    let mut all: Vec<(usize, String, u64)> = phases
        .iter_mut()
        .enumerate()
        .flat_map(|(i, p)| {
            std::mem::take(&mut p.stacks)
                .into_iter()
                .map(move |(s, n)| (i, s, n))
        })
        .collect();
    let stacks_before = all.len();
    all.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then_with(|| a.0.cmp(&b.0))
            .then_with(|| a.1.cmp(&b.1))
    });
    let mut whole_bytes = 0;
    let mut kept_whole = 0;
    for (i, s, n) in &all {
        let b = line_bytes(&phases[*i].name, s, *n);
        if whole_bytes + b > max_bytes / 2 {
            break;
        }
        whole_bytes += b;
        kept_whole += 1;
    }
    let (whole, rest) = all.split_at(kept_whole);
    // The rest cut to `depth` frames below the thread, merged with each other
    // and with the whole stacks they now equal.
    let merged = |depth: usize| -> HashMap<(usize, String), u64> {
        let mut m: HashMap<(usize, String), u64> = HashMap::new();
        for (i, s, n) in whole {
            *m.entry((*i, s.clone())).or_default() += n;
        }
        for (i, s, n) in rest {
            let key = match s.match_indices(';').nth(depth) {
                Some((at, _)) => format!("{};{CUT_FRAME}", &s[..at]),
                None => s.clone(),
            };
            *m.entry((*i, key)).or_default() += n;
        }
        m
    };
    let size = |m: &HashMap<(usize, String), u64>| -> usize {
        m.iter()
            .map(|((i, s), n)| line_bytes(&phases[*i].name, s, *n))
            .sum()
    };
    // The deepest cut that fits (a binary search: the size grows with depth).
    let max_depth = rest
        .iter()
        .map(|(_, s, _)| s.matches(';').count())
        .max()
        .unwrap_or(0);
    let (mut lo, mut hi) = (0, max_depth);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if size(&merged(mid)) <= max_bytes {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let depth = lo;
    let samples_cut = rest
        .iter()
        .filter(|(_, s, _)| s.matches(';').count() > depth)
        .map(|(_, _, n)| n)
        .sum();
    for ((i, s), n) in merged(depth) {
        phases[i].stacks.push((s, n));
    }
    for p in phases.iter_mut() {
        p.stacks.sort();
    }
    Some(Cut {
        max_bytes,
        bytes_before,
        stacks_before,
        kept_whole,
        depth,
        samples_cut,
    })
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
    /// at its leaf (self), most inclusive first; the thread name is not a
    /// function. Counted before the stacks were bounded where that was kept.
    pub fn top(&self, n: usize) -> Vec<(String, u64, u64)> {
        if !self.functions.is_empty() {
            return self.functions.iter().take(n).cloned().collect();
        }
        self.top_of_stacks(n)
    }

    fn top_of_stacks(&self, n: usize) -> Vec<(String, u64, u64)> {
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
            .map(|mut s| {
                // An anonymous interpreter tower says nothing its one frame
                // does not (runtimes::JVM_INTERPRETER), and every depth of
                // it would be a stack of its own.
                s.frames
                    .dedup_by(|a, b| a == b && a.as_str() == runtimes::JVM_INTERPRETER);
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
        let interpreted: u64 = counts
            .iter()
            .flatten()
            .filter(|(id, _)| {
                self.stacks[**id as usize]
                    .split(';')
                    .any(|f| f == runtimes::JVM_INTERPRETER)
            })
            .map(|(_, n)| n)
            .sum();
        let names: Vec<String> = if phases.is_empty() {
            vec!["startup".to_string()]
        } else {
            phases.iter().map(|p| p.name.clone()).collect()
        };
        let phases: Vec<PhaseProfile> = names
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
        let mut runtimes: Vec<String> = self
            .runtimes
            .iter()
            .map(|(kind, &(seen, named))| runtimes::note(kind, seen, named))
            .collect();
        if self.runtimes.contains_key("jvm") {
            runtimes.push(runtimes::jvm_interpreter_note(interpreted, total));
        }
        let mut p = Profile {
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
            functions: Vec::new(),
            cut: None,
        };
        // The hottest functions from every frame, before the bound cuts any.
        p.functions = p.top_of_stacks(TOP_FUNCTIONS);
        p.cut = bound(&mut p.phases, MAX_STACK_BYTES);
        Some(p)
    }
}

/// How many of the hottest functions a profile keeps (the reports show up to 15).
const TOP_FUNCTIONS: usize = 50;

#[cfg(test)]
mod tests {
    use super::*;

    /// A JVM-like startup: `n` distinct deep stacks sampled once each (an
    /// interpreter tower over varying Java frames) and one hot stack.
    fn synthetic(n: usize, depth: usize) -> Collector {
        let mut c = Collector::new();
        c.event = Some(("cpu-clock".into(), 1999, true));
        let mut samples = Vec::new();
        let hot = "java;start_thread;JavaMain;Interpreter_[j];org.example.Hot::spin_[j]".to_string();
        c.stacks.push(hot);
        samples.extend((0..5000).map(|k| (1_000_000 + k, 0)));
        for i in 0..n {
            let mut frames = vec!["java".to_string(), "start_thread".into(), "JavaMain".into()];
            frames.extend((0..depth).map(|d| {
                if d == depth - 5 {
                    "org.example.Deep::work_[j]".to_string()
                } else {
                    format!("org.example.pkg{}.Class{}::method_[j]", d % 7, (i + d) % 997)
                }
            }));
            frames.push(format!("leaf{i}"));
            c.stacks.push(frames.join(";"));
            samples.push((2_000_000 + i as u64, c.stacks.len() as u32 - 1));
        }
        c.runs.push(Run {
            ready_ns: 10_000_000,
            final_exec_ns: Some(0),
            loader_end_ns: Some(500_000),
            samples,
        });
        c
    }

    fn phases() -> Vec<Phase> {
        let p = |name: &str, a: u64, b: u64| Phase {
            name: name.into(),
            start_ns: a,
            end_ns: b,
            dur_ns: b - a,
        };
        vec![
            p("exec-chain", 0, 0),
            p("loader", 0, 500_000),
            p("init", 500_000, 10_000_000),
        ]
    }

    #[test]
    fn a_large_profile_is_bounded_with_every_sample_kept() {
        // 57 MB of folded text unbounded.
        let (n, depth) = (15_000, 100);
        let p = synthetic(n, depth).finish(&phases(), 10_000_000).unwrap();
        let folded = render::folded(&p);
        assert!(folded.len() <= MAX_STACK_BYTES, "{} bytes", folded.len());
        let cut = p.cut.as_ref().expect("a cut");
        assert!(cut.bytes_before > 10 * MAX_STACK_BYTES, "{cut:?}");
        assert_eq!(cut.stacks_before, n + 1);
        // Every sample is still counted, in its phase.
        assert_eq!(p.samples, 5000 + n as u64);
        let counted: u64 = p.phases.iter().flat_map(|ph| &ph.stacks).map(|s| s.1).sum();
        assert_eq!(counted, p.samples);
        for ph in &p.phases {
            assert_eq!(
                ph.samples,
                ph.stacks.iter().map(|s| s.1).sum::<u64>(),
                "{}",
                ph.name
            );
        }
        // The hot stack is whole; the others keep their outer frames, cut
        // as deep as the bound allows (not to the thread alone).
        let init = p.phases.iter().find(|ph| ph.name == "init").unwrap();
        assert!(init
            .stacks
            .iter()
            .any(|(s, n)| s.ends_with("org.example.Hot::spin_[j]") && *n == 5000));
        assert!(cut.depth >= 10 && cut.depth < depth, "{cut:?}");
        let cut_lines: Vec<&(String, u64)> = init
            .stacks
            .iter()
            .filter(|(s, _)| s.ends_with(CUT_FRAME))
            .collect();
        assert!(!cut_lines.is_empty());
        for (s, _) in &cut_lines {
            assert_eq!(s.split(';').count(), cut.depth + 2, "{s}");
            assert!(s.starts_with("java;start_thread;JavaMain;org.example."), "{s}");
        }
        assert_eq!(cut.samples_cut, cut_lines.iter().map(|s| s.1).sum::<u64>());
        // The hottest functions are counted from the whole stacks: a frame
        // deeper than the cut is on every one of the n samples.
        assert!(cut.depth < depth - 5, "{cut:?}");
        let in_stacks = p.share("org.example.Deep::work_[j]") * p.samples as f64;
        assert!(in_stacks < n as f64 / 2.0, "{in_stacks} of {n}");
        let top = p.top(10);
        assert!(
            top.contains(&("org.example.Deep::work_[j]".to_string(), n as u64, 0)),
            "{top:?}"
        );
        assert!(
            top.contains(&("org.example.Hot::spin_[j]".to_string(), 5000, 5000)),
            "{top:?}"
        );
        assert_eq!(p.functions.len(), TOP_FUNCTIONS);
        // The note says so, and the profile survives the store's serde.
        assert!(render::terminal(&p).contains("bounded to 4 MiB"));
        let back: Profile = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back.cut, p.cut);
        assert!(serde_json::to_string(&p).unwrap().len() < MAX_STACK_BYTES * 11 / 10);
    }

    #[test]
    fn a_small_profile_is_kept_as_it_is() {
        let p = synthetic(100, 20).finish(&phases(), 10_000_000).unwrap();
        assert_eq!(p.cut, None);
        let stacks: usize = p.phases.iter().map(|ph| ph.stacks.len()).sum();
        assert_eq!(stacks, 101);
        assert!(!render::folded(&p).contains(CUT_FRAME));
    }

    #[test]
    fn a_stored_profile_from_before_the_bound_still_reads() {
        let p = synthetic(10, 5).finish(&phases(), 10_000_000).unwrap();
        let mut v = serde_json::to_value(&p).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("functions");
        o.remove("cut");
        let back: Profile = serde_json::from_value(v).unwrap();
        assert_eq!(back.top(1), p.top(1));
    }
}
