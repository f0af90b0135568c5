//! What happens around each of bench's runs, outside its timed interval: the
//! variant's hooks (setup once, prepare before and conclude after every run,
//! cleanup at the end) and the page-cache state it starts from (`--cache cold`,
//! `--drop-caches`). Time zero is taken inside the run, after all of this.

use super::cache::{self, FileSet};
use super::hooks::{self, HookFailure, Hooks};
use super::{RunOptions, Spec};
use crate::sample::{describe_failure, Outcome, RunId, Sample};
use anyhow::{bail, Context, Result};
use coldstart_sys::clock::now_ns;

/// Which page-cache state each run starts from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Cache {
    /// As the previous run left it (the warmup fills it).
    #[default]
    Warm,
    /// The target's own files evicted before each run.
    Cold,
}

/// The conditions as given (per variant where they differ).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// One per variant, in the plan's order (missing ones: no hooks).
    pub hooks: Vec<Hooks>,
    /// The shell hooks run through (empty: none, the line split into words).
    pub shell: Vec<String>,
    pub cache: Cache,
    /// sync + drop the whole system's caches before each run (root).
    pub drop_caches: bool,
    /// Hooks' output to our terminal (`--show-output`).
    pub show_output: bool,
    /// No notes on stderr.
    pub quiet: bool,
    /// Output lines of a failed hook kept for its message.
    pub tail_lines: usize,
}

/// The settings and what was learnt per variant so far.
#[derive(Debug, Clone, Default)]
pub struct Conditions {
    pub settings: Settings,
    set_up: Vec<bool>,
    files: Vec<Option<FileSet>>,
}

impl Conditions {
    pub fn new(settings: Settings) -> Conditions {
        Conditions {
            settings,
            set_up: Vec::new(),
            files: Vec::new(),
        }
    }

    /// Whether runs need the target's file set (learnt by one traced run).
    fn wants_files(&self) -> bool {
        self.settings.cache == Cache::Cold || self.settings.drop_caches
    }

    /// One run of variant `v` with its conditions: `run` does the timed part.
    pub fn around(
        &mut self,
        v: usize,
        spec: &Spec,
        opts: &RunOptions,
        id: RunId,
        run: impl FnOnce() -> Result<Sample>,
    ) -> Result<Sample> {
        if self.set_up.len() <= v {
            self.set_up.resize(v + 1, false);
            self.files.resize(v + 1, None);
        }
        let hooks = self.settings.hooks.get(v).cloned().unwrap_or_default();
        let mut first_eviction = false;
        if !self.set_up[v] {
            if let Some(line) = &hooks.setup {
                hooks::require(self.hook("--setup", line, spec)?)?;
            }
            self.set_up[v] = true;
            if let (Some(c), Cache::Cold, false) =
                (&spec.target.container, self.settings.cache, self.settings.quiet)
            {
                crate::out::errln!(
                    "--cache cold with --image {}: the image is removed from {}'s store before each run, so each run pulls and unpacks it; what stays warm: layers that other images in the store share (the engine reuses them), the registry (its files in the page cache), {} and the OCI runtime",
                    c.image,
                    c.engine.name(),
                    c.engine.name()
                );
            }
            if self.wants_files() && spec.target.container.is_none() {
                if let Some(failed) = self.before_run(&hooks, spec, id)? {
                    return Ok(failed);
                }
                let set = match learn_files(spec, opts, id)? {
                    Ok(set) => set,
                    // Ctrl-C during the traced run: the scheduler ends the experiment.
                    Err(interrupted) => return Ok(interrupted),
                };
                self.after_run(&hooks, spec, &mut Sample::begin(&id, now_ns()))?;
                self.files[v] = Some(set);
                first_eviction = true;
            }
        }
        if let Some(failed) = self.before_run(&hooks, spec, id)? {
            return Ok(failed);
        }
        if let (Some(c), Cache::Cold) = (&spec.target.container, self.settings.cache) {
            // A pull-cold run: the image is not in the engine's store.
            c.remove_image()?;
        }
        if self.settings.drop_caches {
            cache::drop_system_caches()?;
        }
        let state = match (&self.files[v], self.settings.cache) {
            (Some(set), Cache::Cold) => Some(set.evict()),
            (Some(set), Cache::Warm) => Some(set.state()),
            (None, _) => None,
        };
        if let Some(s) = state.as_ref().filter(|_| first_eviction && !self.settings.quiet) {
            if self.settings.cache == Cache::Cold {
                if let Some(note) = cache::stuck_note(&spec.target.display_command(), s) {
                    crate::out::errln!("{note}");
                }
            }
        }
        let mut sample = run()?;
        if let Some(s) = &state {
            for (name, value) in s.metrics() {
                sample.metrics.insert(name.to_string(), value);
            }
        }
        self.after_run(&hooks, spec, &mut sample)?;
        Ok(sample)
    }

    /// `--prepare`: a failure is that run's, recorded as a failed sample.
    fn before_run(&self, hooks: &Hooks, spec: &Spec, id: RunId) -> Result<Option<Sample>> {
        let Some(line) = &hooks.prepare else {
            return Ok(None);
        };
        Ok(self.hook("--prepare", line, spec)?.err().map(|f| failed(id, f)))
    }

    /// `--conclude`: a failure fails the run it follows.
    fn after_run(&self, hooks: &Hooks, spec: &Spec, sample: &mut Sample) -> Result<()> {
        let Some(line) = &hooks.conclude else {
            return Ok(());
        };
        if let Err(f) = self.hook("--conclude", line, spec)? {
            if sample.ok() {
                let id = RunId {
                    variant: sample.variant,
                    round: sample.round,
                    warmup: sample.warmup,
                };
                let mut f = failed(id, f);
                f.t0_mono_ns = sample.t0_mono_ns;
                *sample = f;
            }
        }
        Ok(())
    }

    fn hook(&self, flag: &str, line: &str, spec: &Spec) -> Result<std::result::Result<(), HookFailure>> {
        hooks::run(
            flag,
            line,
            &self.settings.shell,
            &spec.target,
            self.settings.show_output,
            self.settings.tail_lines,
        )
    }

    /// `--cleanup` of every variant that was set up; all are tried, the first
    /// failure is returned.
    pub fn finish(&mut self, specs: &[Spec]) -> Result<()> {
        let mut first_err = None;
        for (v, spec) in specs.iter().enumerate() {
            if !self.set_up.get(v).copied().unwrap_or(false) {
                continue;
            }
            self.set_up[v] = false;
            let Some(line) = self.settings.hooks.get(v).and_then(|h| h.cleanup.clone()) else {
                continue;
            };
            let r = self.hook("--cleanup", &line, spec).and_then(hooks::require);
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// One traced run of the variant (unrecorded): the files it used, or the
/// run itself when it was interrupted.
fn learn_files(spec: &Spec, opts: &RunOptions, id: RunId) -> Result<std::result::Result<FileSet, Sample>> {
    let sample = super::run_traced(&spec.target, &spec.readiness, opts, id).with_context(|| {
        format!(
            "cold runs need one traced run of {} to learn its files",
            spec.target.display_command()
        )
    })?;
    if sample.outcome == Outcome::Interrupted {
        return Ok(Err(sample));
    }
    if !sample.ok() {
        bail!(
            "cold runs need one traced run to learn the target's files, and it failed:\n{}",
            describe_failure(&spec.target.display_command(), &sample)
        );
    }
    let Some(trace) = &sample.trace else {
        bail!(
            "the traced run of {} returned no trace",
            spec.target.display_command()
        )
    };
    Ok(Ok(FileSet::from_trace(trace)))
}

fn failed(id: RunId, f: HookFailure) -> Sample {
    let mut s = Sample::begin(&id, now_ns());
    s.outcome = if crate::launch::signals::interrupted() {
        Outcome::Interrupted
    } else {
        Outcome::Failed {
            error_type: format!("{} ({})", f.hook, f.how),
        }
    };
    s.output_tail = f.tail;
    s
}
