//! One *adapted* run: untraced, with the runtime adapters' switches on, the
//! OTLP receiver listening and checkpoints collected. The sources inside the
//! runtime speak here; the tracer's view comes from the traced runs.

use super::adapter::{Adapter, Collected};
use super::otlp;
use anyhow::{Context, Result};
use coldstart_core::run::{run_once, RunId, RunOptions};
use coldstart_core::sample::section::{Section, Table, Value};
use coldstart_core::sample::{Mark, Sample};
use coldstart_core::target::{Readiness, Target};
use coldstart_core::trace::Trace;
use tempfile::TempDir;

/// A finished adapted run, its adapters' files still on disk until collected.
pub struct AdaptedRun {
    pub sample: Sample,
    dirs: Vec<TempDir>,
    otlp: Option<Kept>,
}

/// A run's OpenTelemetry section until the explanation picks its run. Only the
/// run nearest the adapted median is shown, and each may hold 100,000 spans
/// (tens of MB), so every run's section waits on disk (gzip'd JSON, removed when
/// the run is dropped) rather than all of them in memory.
enum Kept {
    Disk(tempfile::NamedTempFile),
    /// Where the temporary directory cannot take it: memory, as before.
    Memory(Section),
}

impl Kept {
    /// None for a section without spans (nothing to show).
    fn new(section: Section) -> Option<Kept> {
        if section.spans.is_empty() {
            return None;
        }
        Some(match spill(&section) {
            Ok(file) => Kept::Disk(file),
            Err(_) => Kept::Memory(section),
        })
    }

    fn load(&self) -> Section {
        match self {
            Kept::Memory(s) => s.clone(),
            Kept::Disk(file) => unspill(file).unwrap_or_else(|e| Section {
                source: "otlp".into(),
                title: "OpenTelemetry spans (OTLP/HTTP)".into(),
                notes: vec![format!(
                    "could not read the spans back from {}: {e:#}",
                    file.path().display()
                )
                .into()],
                ..Section::default()
            }),
        }
    }
}

fn spill(section: &Section) -> Result<tempfile::NamedTempFile> {
    use std::io::Write;
    let file = tempfile::Builder::new()
        .prefix("coldstart-otlp-")
        .suffix(".json.gz")
        .tempfile()
        .context("creating a file for the run's spans")?;
    let mut w = flate2::write::GzEncoder::new(
        std::io::BufWriter::new(file.as_file()),
        flate2::Compression::fast(),
    );
    serde_json::to_writer(&mut w, section).context("writing the run's spans")?;
    w.finish()
        .and_then(|mut b| b.flush())
        .context("writing the run's spans")?;
    Ok(file)
}

fn unspill(file: &tempfile::NamedTempFile) -> Result<Section> {
    let f = file.reopen().context("opening")?;
    let r = std::io::BufReader::new(flate2::read::GzDecoder::new(std::io::BufReader::new(f)));
    serde_json::from_reader(r).context("reading")
}

/// Run once with every adapter's switch on, and the OTLP receiver if `with_otlp`.
pub fn run(
    target: &Target,
    readiness: &Readiness,
    opts: &RunOptions,
    adapters: &[Box<dyn Adapter>],
    with_otlp: bool,
    id: RunId,
) -> Result<AdaptedRun> {
    let mut adapted = target.clone();
    let mut claims = opts.claims.clone();
    let mut dirs = Vec::new();
    for a in adapters {
        let dir = tempfile::Builder::new()
            .prefix(&format!("coldstart-{}-", a.name()))
            .tempdir()
            .context("creating an adapter's directory")?;
        let inj = a
            .inject(dir.path(), &adapted.env)
            .with_context(|| format!("preparing the {} adapter", a.name()))?;
        adapted.env.extend(inj.env);
        claims.extend(inj.claims);
        dirs.push(dir);
    }
    let receiver = if with_otlp {
        Some(otlp::Receiver::start().context("starting the OTLP receiver (--no-otlp runs without it)")?)
    } else {
        None
    };
    if let Some(r) = &receiver {
        adapted.env.extend(r.env());
    }
    let mut opts = opts.clone();
    opts.claims = claims;
    let sample = run_once(&adapted, readiness, &opts, id)?;
    // The tree is gone: whatever the app exported (at exit, or before ready) is in.
    let otlp = match receiver {
        Some(r) => Kept::new(r.finish(sample.t0_mono_ns)?),
        None => None,
    };
    Ok(AdaptedRun { sample, dirs, otlp })
}

impl AdaptedRun {
    /// Every source's section: adapters (in order), checkpoints, OpenTelemetry.
    pub fn sections(&self, adapters: &[Box<dyn Adapter>], trace: Option<&Trace>) -> Vec<Section> {
        let mut out = Vec::new();
        for (a, dir) in adapters.iter().zip(&self.dirs) {
            let got = Collected {
                dir: dir.path(),
                claimed: &self.sample.claimed,
                ready_ns: self.sample.ready_ns.unwrap_or(0),
                t0_mono_ns: self.sample.t0_mono_ns,
                trace,
            };
            out.extend(a.collect_all(&got).unwrap_or_else(|e| {
                vec![Section {
                    source: a.name().to_string(),
                    title: format!("{} adapter", a.name()),
                    notes: vec![format!("could not read what the runtime reported: {e:#}").into()],
                    ..Section::default()
                }]
            }));
        }
        if let Some(s) = checkpoints(&self.sample.marks) {
            out.push(s);
        }
        if let Some(s) = &self.otlp {
            out.push(s.load());
        }
        out
    }
}

/// The app's own checkpoints (SDK lines on COLDSTART_FD) and `--mark` log marks,
/// with the delta from the previous one: the table the seeds built by hand.
pub fn checkpoints(marks: &[Mark]) -> Option<Section> {
    if marks.is_empty() {
        return None;
    }
    let mut marks = marks.to_vec();
    marks.sort_by_key(|m| m.t_ns);
    let mut table = Table::new(&["checkpoint", "source", "at", "delta"]);
    let mut rows: Vec<(u64, Vec<Value>)> = Vec::new();
    let mut prev = 0;
    for m in &marks {
        let delta = m.t_ns.saturating_sub(prev);
        prev = m.t_ns;
        let source = m.source.label();
        rows.push((
            delta,
            vec![
                m.name.clone().into(),
                source.into(),
                Value::AtNs(m.t_ns),
                Value::Ns(delta),
            ],
        ));
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    table.rows = rows.into_iter().map(|(_, r)| r).collect();
    let last = marks.last().map_or(0, |m| m.t_ns);
    Some(Section {
        source: "checkpoints".into(),
        title: "Checkpoints (the app's own marks)".into(),
        facts: vec![
            ("checkpoints".into(), Value::count(marks.len())),
            ("last at".into(), Value::AtNs(last)),
        ],
        table,
        spans: Vec::new(),
        marks,
        notes: vec![
            "delta = time since the previous checkpoint (the first: since spawn); largest first".into(),
        ],
    })
}
