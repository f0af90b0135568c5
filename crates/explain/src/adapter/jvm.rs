//! `jvm`: HotSpot's unified logging (JDK 9+), switched on through
//! JAVA_TOOL_OPTIONS: every class the JVM defines (`class+load`) and the VM's own
//! start-up phases (`startuptime`: "Genesis", "Create VM" …). The log goes to a
//! file in the adapter's directory, so the only thing the switch adds to the
//! program's output is the JVM's "Picked up JAVA_TOOL_OPTIONS" notice, which is
//! claimed.
//!
//! Each log line carries `timenanos` (the JVM's `os::javaTimeNanos`, which is
//! CLOCK_MONOTONIC on Linux, the clock of the run's time zero) and `uptimenanos`
//! (since the JVM's own start, which comes after exec by the launcher's work).
//! With the run's time zero the first puts every line on the run's clock; without
//! it the section falls back to uptime and says so.

use super::{append_option, Adapter, Collected, FinalExec, Injection};
use anyhow::{bail, Context, Result};
use coldstart_core::sample::section::{Section, Span, Table, Value};
use coldstart_core::sample::{Mark, MarkSource};
use regex::Regex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Default)]
pub struct Jvm {
    /// Roll packages up to their first N dot-separated parts (`--class-depth`);
    /// None keeps each class's whole package.
    pub class_depth: Option<usize>,
}

/// `%p` makes one file per JVM: JAVA_TOOL_OPTIONS is inherited by child JVMs,
/// which would otherwise rotate each other's file away.
const LOG_PREFIX: &str = "jvm-";
const LOG_SUFFIX: &str = ".log";
const TABLE_ROWS: usize = 20;
/// Sources named in a package's row; the rest are counted: a package rolled up
/// to `--class-depth 1` (`org`) draws on dozens of jars.
const SOURCES_IN_ROW: usize = 3;
const JARS_IN_FACTS: usize = 3;

impl Adapter for Jvm {
    fn name(&self) -> &'static str {
        "jvm"
    }

    /// The launcher is `java` wherever it lives (/usr/bin/java → a JDK's bin/java).
    fn detect(&self, exec: &FinalExec) -> bool {
        [exec.path, exec.exe]
            .iter()
            .any(|p| Path::new(p).file_name().is_some_and(|n| n == "java"))
    }

    fn inject(&self, dir: &Path, target_env: &[(String, String)]) -> Result<Injection> {
        let option = xlog_option(dir)?;
        Ok(Injection {
            env: vec![append_option(target_env, "JAVA_TOOL_OPTIONS", ' ', &option)],
            claims: vec![Regex::new(r"^Picked up JAVA_TOOL_OPTIONS: ").context("JVM claim regex")?],
        })
    }

    fn configure(&mut self, opts: &super::Options) {
        self.class_depth = opts.class_depth;
    }

    fn collect(&self, got: &Collected) -> Result<Section> {
        let logs = read_logs(got.dir)?;
        let Some(main) = logs.iter().max_by_key(|l| l.classes.len()) else {
            bail!(
                "the JVM wrote no log in {} (not a HotSpot JVM 9+, or a later -Xlog option on the \
                 command line overrode JAVA_TOOL_OPTIONS)",
                got.dir.display()
            );
        };
        let summary = Summary::new(main, got.t0_mono_ns, got.ready_ns);
        let mut section = summary.section(self.class_depth);
        if logs.len() > 1 {
            section.notes.push(
                format!(
                    "{} JVMs ran (JAVA_TOOL_OPTIONS is inherited by child JVMs); this is pid {}, the one \
                 that loaded the most classes",
                    logs.len(),
                    main.pid
                )
                .into(),
            );
        }
        Ok(section)
    }
}

/// The -Xlog option, ready for JAVA_TOOL_OPTIONS.
fn xlog_option(dir: &Path) -> Result<String> {
    let d = dir
        .to_str()
        .with_context(|| format!("JVM log directory {} is not UTF-8", dir.display()))?;
    // JAVA_TOOL_OPTIONS treats ' and " as quotes, -Xlog splits its argument at ':'
    // and expands %p/%t in file names: a directory with those cannot be passed.
    if let Some(c) = d
        .chars()
        .find(|&c| matches!(c, '\'' | '"' | ':' | '%') || c.is_control())
    {
        bail!("cannot pass the JVM log directory {d:?} through JAVA_TOOL_OPTIONS: it contains {c:?}");
    }
    let option = format!(
        "-Xlog:class+load=info,startuptime=info:file={d}/{LOG_PREFIX}%p{LOG_SUFFIX}\
         :timenanos,uptimenanos,tags:filecount=0"
    );
    // JAVA_TOOL_OPTIONS splits at whitespace unless quoted (JDK 9+).
    Ok(if d.chars().any(char::is_whitespace) {
        format!("'{option}'")
    } else {
        option
    })
}

/// One JVM's log.
#[derive(Debug, Default)]
pub struct JvmLog {
    pub pid: String,
    pub classes: Vec<ClassLoad>,
    pub phases: Vec<Phase>,
}

#[derive(Debug)]
pub struct ClassLoad {
    pub mono_ns: u64,
    pub uptime_ns: u64,
    pub name: String,
    pub source: String,
}

/// A `startuptime` line, logged when the phase ends.
#[derive(Debug)]
pub struct Phase {
    pub name: String,
    pub end_mono_ns: u64,
    pub end_uptime_ns: u64,
    pub dur_ns: u64,
}

/// Every `jvm-PID.log` in `dir`, in file-name order.
pub(crate) fn read_logs(dir: &Path) -> Result<Vec<JvmLog>> {
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .with_context(|| format!("reading the JVM log directory {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix(LOG_PREFIX)?
                .strip_suffix(LOG_SUFFIX)?
                .to_string();
            Some((pid, e.path()))
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|(pid, path)| {
            // Class names are UTF-8, but a source path need not be: be lenient.
            let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let mut log = parse_log(&String::from_utf8_lossy(&bytes));
            log.pid = pid;
            Ok(log)
        })
        .collect()
}

/// Parse `[<timenanos>ns][<uptimenanos>ns][<tags>] <message>` lines; others (a
/// line cut short by a kill) are skipped.
pub fn parse_log(text: &str) -> JvmLog {
    let mut log = JvmLog::default();
    for line in text.lines() {
        let Some((mono_ns, uptime_ns, tags, msg)) = split_line(line) else {
            continue;
        };
        match tags {
            "class,load" => {
                // Every class defined names its source; other class+load lines
                // are not classes ("opened: /x/lib.jar" when the boot loader
                // opens a -Xbootclasspath/a entry).
                let Some((name, source)) = msg.split_once(" source: ") else {
                    continue;
                };
                log.classes.push(ClassLoad {
                    mono_ns,
                    uptime_ns,
                    name: name.trim().to_string(),
                    source: source.trim().to_string(),
                });
            }
            "startuptime" => {
                // "Create VM, 0.0931483 secs"
                let Some((name, secs)) = msg.rsplit_once(", ") else {
                    continue;
                };
                let Some(secs) = secs
                    .strip_suffix(" secs")
                    .and_then(|s| s.trim().parse::<f64>().ok())
                else {
                    continue;
                };
                log.phases.push(Phase {
                    name: name.trim().to_string(),
                    end_mono_ns: mono_ns,
                    end_uptime_ns: uptime_ns,
                    dur_ns: (secs * 1e9).round() as u64,
                });
            }
            _ => {}
        }
    }
    log
}

fn split_line(line: &str) -> Option<(u64, u64, &str, &str)> {
    let rest = line.strip_prefix('[')?;
    let (mono, rest) = rest.split_once("ns][")?;
    let (uptime, rest) = rest.split_once("ns][")?;
    let (tags, msg) = rest.split_once("] ")?;
    Some((mono.parse().ok()?, uptime.parse().ok()?, tags.trim(), msg))
}

/// Where a class came from. Generated classes are told apart first, whatever
/// their source says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Origin {
    Cds,
    Jrt,
    Jar,
    Dir,
    Generated,
    Other,
}

pub(crate) fn origin(name: &str, source: &str) -> Origin {
    if is_generated(name, source) {
        return Origin::Generated;
    }
    if source.starts_with("shared objects file") {
        Origin::Cds
    } else if source.starts_with("jrt:/") {
        Origin::Jrt
    } else if source.starts_with("file:") || source.starts_with("jar:") || source.starts_with('/') {
        // The app loader names a URL (`file:/x/app.jar`); the boot loader's
        // appended path (-Xbootclasspath/a) names the plain path (`/x/app.jar`);
        // a jar inside a jar is a `jar:` URL (Spring Boot's BOOT-INF/lib).
        if containers(source).last().is_some_and(|c| c.ends_with(".jar")) {
            Origin::Jar
        } else {
            Origin::Dir
        }
    } else {
        Origin::Other
    }
}

/// Lambdas and LambdaForms (hidden classes, "Name/0x…"), dynamic proxies,
/// reflection accessors and anything defined without a code source
/// (`__JVM_LookupDefineClass__`, `__dynamic_proxy__`, `__JVM_DefineClass__`).
fn is_generated(name: &str, source: &str) -> bool {
    name.contains('/')
        || name.contains("$$Lambda")
        || (source.starts_with("__") && source.ends_with("__"))
        || name.starts_with("jdk.internal.reflect.Generated")
        || name.rsplit('.').next().is_some_and(|s| s.starts_with("$Proxy"))
}

/// A class's source as the chain of its containers: the file on disk, then each
/// entry inside the one before, without URL schemes, percent-escapes or the
/// slashes at either end. `file:/x/classes/` → [x/classes]; Spring Boot 3.2+'s
/// `jar:nested:/x/app.jar/!BOOT-INF/lib/y.jar!/` and Boot 2's
/// `jar:file:/x/app.jar!/BOOT-INF/lib/y.jar!/` → [x/app.jar, BOOT-INF/lib/y.jar].
fn containers(source: &str) -> Vec<String> {
    let mut s = source;
    let mut in_archive = false;
    while let Some(rest) = s.strip_prefix("jar:") {
        s = rest;
        in_archive = true;
    }
    for scheme in ["nested:", "file:"] {
        if let Some(rest) = s.strip_prefix(scheme) {
            s = rest;
            break;
        }
    }
    let decode = |p: &str| {
        percent_encoding::percent_decode_str(p.trim_matches('/'))
            .decode_utf8_lossy()
            .into_owned()
    };
    // Only a jar: URL separates its entries with '!'; a plain path may hold one.
    let parts: Vec<String> = if in_archive {
        s.split('!').map(decode).collect()
    } else {
        vec![decode(s)]
    };
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The widest source label a table cell or fact gets (the middle is elided);
/// Spring Boot's longest usual one, `app.jar!BOOT-INF/lib/spring-boot-autoconfigure-3.5.7.jar`,
/// is 55.
const LABEL_MAX: usize = 60;

/// The label a class's source gets in the table: a jar's or directory's name,
/// with the entry inside an archive after `!` (`app.jar!BOOT-INF/classes`,
/// `app.jar!BOOT-INF/lib/spring-core-6.1.jar`), a jrt module, "CDS", "generated".
fn source_label(origin: Origin, source: &str) -> String {
    match origin {
        Origin::Cds => "CDS".into(),
        Origin::Jrt => source.trim_start_matches("jrt:/").to_string(),
        Origin::Jar | Origin::Dir => {
            let parts = containers(source);
            let Some((file, inner)) = parts.split_first() else {
                return super::label::elide_middle(source, LABEL_MAX);
            };
            let file = file.rsplit('/').next().unwrap_or(file);
            if inner.is_empty() {
                // A directory on disk reads as one (`classes/`); one inside a
                // jar is told apart by its `!`.
                let slash = if origin == Origin::Dir { "/" } else { "" };
                return super::label::elide_middle(&format!("{file}{slash}"), LABEL_MAX);
            }
            nested_label(file, inner)
        }
        Origin::Generated => "generated".into(),
        Origin::Other => super::label::elide_middle(source, LABEL_MAX),
    }
}

/// `app.jar!BOOT-INF/lib/x.jar` in at most [`LABEL_MAX`] columns, giving up
/// first the entries' directories (`app.jar!…/x.jar`), then the middle of the
/// outer file's name: the innermost name says the most.
fn nested_label(file: &str, inner: &[String]) -> String {
    use super::label::elide_middle;
    use unicode_width::UnicodeWidthStr;
    let full = format!("{file}!{}", inner.join("!"));
    if full.width() <= LABEL_MAX {
        return full;
    }
    let names: Vec<String> = inner
        .iter()
        .map(|e| match e.rsplit_once('/') {
            Some((_, name)) => format!("…/{name}"),
            None => e.clone(),
        })
        .collect();
    let names = names.join("!");
    let short = format!("{file}!{names}");
    if short.width() <= LABEL_MAX {
        return short;
    }
    // The outer name keeps at least a few columns, or the whole is cut in the middle.
    match LABEL_MAX.checked_sub(names.width() + 1) {
        Some(room) if room >= 8 => format!("{}!{names}", elide_middle(file, room)),
        _ => elide_middle(&short, LABEL_MAX),
    }
}

/// `agent premain (agent.jar)`: the phase of the -javaagent(s) whose classes
/// came from `files` (the Premain-Class's first).
fn agent_name(files: &[String]) -> String {
    const NAMED: usize = 2;
    let mut names: Vec<String> = files
        .iter()
        .take(NAMED)
        .map(|f| super::label::elide_middle(f, LABEL_MAX))
        .collect();
    if files.len() > NAMED {
        names.push(format!("+{} more", files.len() - NAMED));
    }
    if names.is_empty() {
        "agent premain (-javaagent)".into()
    } else {
        format!("agent premain ({})", names.join(", "))
    }
}

/// The file on disk a class came from, by name (`app.jar` for everything in a
/// Spring Boot fat jar): how a -javaagent is named.
fn outer_file(source: &str) -> Option<String> {
    let parts = containers(source);
    let file = parts.first()?;
    Some(file.rsplit('/').next().unwrap_or(file).to_string())
}

/// A class's package; hidden classes lose their "/0x…" suffix first.
pub(crate) fn package(name: &str) -> &str {
    let name = name.split('/').next().unwrap_or(name);
    match name.rfind('.') {
        Some(i) => &name[..i],
        None => "(default package)",
    }
}

/// A class's package cut to its first `depth` parts (`org.springframework.boot.x`
/// at 2 is `org.springframework`), as `cut -d. -f1-N | sort | uniq -c` would
/// roll up `-verbose:class`; None or a shallower package keeps it whole.
pub(crate) fn package_at(name: &str, depth: Option<usize>) -> &str {
    let pkg = package(name);
    match depth {
        Some(d) if d > 0 && pkg != "(default package)" => match pkg.match_indices('.').nth(d - 1) {
            Some((i, _)) => &pkg[..i],
            None => pkg,
        },
        _ => pkg,
    }
}

struct Load<'a> {
    at_ns: u64,
    name: &'a str,
    source: &'a str,
    origin: Origin,
}

pub struct PackageRow {
    pub package: String,
    pub classes: usize,
    pub first_ns: u64,
    pub last_ns: u64,
    /// Source label → classes, largest first.
    pub sources: Vec<(String, usize)>,
}

/// `a.jar 389, b.jar 343, c.jar 238, +11 more sources: 52 classes`, largest first.
fn sources_cell(sources: &[(String, usize)]) -> Value {
    let shown = sources.len().min(SOURCES_IN_ROW);
    let mut cell = vec![Value::list(
        sources[..shown]
            .iter()
            .map(|(l, n)| (l.clone(), Value::count(*n))),
    )];
    let rest = &sources[shown..];
    if !rest.is_empty() {
        let classes: usize = rest.iter().map(|(_, n)| n).sum();
        cell.extend([
            Value::Text(format!("{}+", if shown > 0 { ", " } else { "" })),
            Value::count(rest.len()),
            Value::Text(format!(
                " more {}: ",
                if rest.len() == 1 { "source" } else { "sources" }
            )),
            Value::count(classes),
            Value::Text(format!(" {}", if classes == 1 { "class" } else { "classes" })),
        ]);
    }
    Value::Parts(cell)
}

/// One JVM's log on the run's clock, cut at ready.
pub struct Summary<'a> {
    /// Times are on the run's clock (else: the JVM's uptime).
    aligned: bool,
    /// Spawn → the JVM's uptime zero, when aligned.
    jvm_start_ns: Option<u64>,
    loads: Vec<Load<'a>>,
    after_ready: usize,
    log: &'a JvmLog,
    t0_mono_ns: u64,
    ready_ns: u64,
}

impl<'a> Summary<'a> {
    /// The longest stretch with no class defined: where the JVM or the app did
    /// something else (I/O, a lock, a sleep, a remote call): the gap engineers
    /// look for by hand in `-verbose:class` output.
    fn longest_pause(&self) -> Option<(u64, &Load<'a>, &Load<'a>)> {
        self.loads
            .windows(2)
            .map(|w| (w[1].at_ns.saturating_sub(w[0].at_ns), &w[0], &w[1]))
            .max_by_key(|(gap, _, _)| *gap)
    }

    pub fn new(log: &'a JvmLog, t0_mono_ns: u64, ready_ns: u64) -> Summary<'a> {
        // The JVM's uptime zero in CLOCK_MONOTONIC; it cannot precede the spawn,
        // so a zero before t0 means the clocks do not match: use uptime.
        // The two stamps are taken a few hundred ns apart: take the earliest.
        let jvm_zero = log
            .classes
            .iter()
            .map(|c| (c.mono_ns, c.uptime_ns))
            .chain(log.phases.iter().map(|p| (p.end_mono_ns, p.end_uptime_ns)))
            .map(|(m, u)| m.saturating_sub(u))
            .min();
        let aligned = t0_mono_ns > 0 && jvm_zero.is_some_and(|z| z >= t0_mono_ns);
        let jvm_start_ns = jvm_zero.filter(|_| aligned).map(|z| z - t0_mono_ns);
        let mut loads = Vec::with_capacity(log.classes.len());
        let mut after_ready = 0;
        for c in &log.classes {
            let at_ns = if aligned {
                c.mono_ns.saturating_sub(t0_mono_ns)
            } else {
                c.uptime_ns
            };
            // Without alignment "after ready" cannot be told: everything counts.
            if aligned && ready_ns > 0 && at_ns > ready_ns {
                after_ready += 1;
                continue;
            }
            loads.push(Load {
                at_ns,
                name: &c.name,
                source: &c.source,
                origin: origin(&c.name, &c.source),
            });
        }
        Summary {
            aligned,
            jvm_start_ns,
            loads,
            after_ready,
            log,
            t0_mono_ns,
            ready_ns,
        }
    }

    /// Every package (rolled up to `depth` parts), most classes first (then by name).
    pub fn packages(&self, depth: Option<usize>) -> Vec<PackageRow> {
        #[derive(Default)]
        struct Acc {
            classes: usize,
            first_ns: Option<u64>,
            last_ns: u64,
            sources: HashMap<String, usize>,
        }
        let mut by: HashMap<&str, Acc> = HashMap::new();
        for l in &self.loads {
            let e = by.entry(package_at(l.name, depth)).or_default();
            e.classes += 1;
            e.first_ns = Some(e.first_ns.map_or(l.at_ns, |f| f.min(l.at_ns)));
            e.last_ns = e.last_ns.max(l.at_ns);
            *e.sources.entry(source_label(l.origin, l.source)).or_default() += 1;
        }
        let mut rows: Vec<PackageRow> = by
            .into_iter()
            .map(|(package, acc)| {
                let mut sources: Vec<(String, usize)> = acc.sources.into_iter().collect();
                sources.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                PackageRow {
                    package: package.to_string(),
                    classes: acc.classes,
                    first_ns: acc.first_ns.unwrap_or(0),
                    last_ns: acc.last_ns,
                    sources,
                }
            })
            .collect();
        rows.sort_by(|a, b| b.classes.cmp(&a.classes).then_with(|| a.package.cmp(&b.package)));
        rows
    }

    fn count(&self, o: Origin) -> usize {
        self.loads.iter().filter(|l| l.origin == o).count()
    }

    fn phase_time(&self, p: &Phase) -> u64 {
        if self.aligned {
            p.end_mono_ns.saturating_sub(self.t0_mono_ns)
        } else {
            p.end_uptime_ns
        }
    }

    /// Create VM's end on the run's clock (uptime when not aligned): where the
    /// JVM's own initialisation ends and the application's (main()) begins.
    fn create_vm_end(&self) -> Option<u64> {
        self.log
            .phases
            .iter()
            .find(|p| p.name == "Create VM")
            .map(|p| self.phase_time(p))
    }

    pub fn section(&self, depth: Option<usize>) -> Section {
        let mut s = Section {
            source: "jvm".into(),
            title: "JVM class loading (-Xlog:class+load, startuptime)".into(),
            ..Section::default()
        };
        s.facts.push(("classes".into(), Value::count(self.loads.len())));
        for (o, label) in [
            (Origin::Cds, "from the CDS archive"),
            (Origin::Jrt, "from jrt modules"),
            (Origin::Jar, "from jars"),
            (Origin::Dir, "from directories"),
            (Origin::Generated, "generated (lambdas, proxies, reflection)"),
            (Origin::Other, "from other sources"),
        ] {
            let n = self.count(o);
            if n > 0 {
                s.facts.push((label.into(), Value::count(n)));
            }
        }
        for (jar, n) in self.top_jars() {
            s.facts.push((format!("  {jar}"), Value::count(n)));
        }
        let phases = self.init_phases();
        let agent = phases
            .iter()
            .find(|p| p.name.starts_with("agent premain"))
            .cloned();
        if let Some(vm) = self.log.phases.iter().find(|p| p.name == "Create VM") {
            let v = match &agent {
                Some(a) => Value::parts([
                    Value::Ns(vm.dur_ns),
                    " (of which agent premain ".into(),
                    Value::Ns(a.dur_ns),
                    ")".into(),
                ]),
                None => Value::Ns(vm.dur_ns),
            };
            s.facts.push(("Create VM".into(), v));
        }
        if let Some(z) = self.jvm_start_ns {
            s.facts.push(("JVM start after spawn".into(), Value::AtNs(z)));
        }
        for p in &phases {
            let classes = p.args.first().map_or(Value::Count(0), |a| a.1.clone());
            s.facts.push((
                p.name.clone(),
                Value::parts([Value::Ns(p.dur_ns), " (".into(), classes, " classes)".into()]),
            ));
        }
        if let Some((gap, before, after)) = self.longest_pause() {
            s.facts.push((
                "longest pause between loads".into(),
                Value::parts([
                    Value::Ns(gap),
                    format!(" (after {}, before {})", before.name, after.name).into(),
                ]),
            ));
        }
        if self.after_ready > 0 {
            s.facts.push((
                "loaded after ready (not counted)".into(),
                Value::count(self.after_ready),
            ));
        }

        if let Some(d) = depth {
            s.facts.push((
                "packages rolled up to".into(),
                Value::parts([Value::count(d), " parts (--class-depth)".into()]),
            ));
        }
        s.table = self.package_table(depth);
        // Every package stays in the JSON; the terminal shows the top ones.
        s.table.show_first(TABLE_ROWS);

        s.spans = phases;
        s.spans.extend(self.phase_spans());
        if let (Some(first), Some(last)) = (self.loads.first(), self.loads.last()) {
            s.spans.push(Span {
                name: "class loads".into(),
                start_ns: first.at_ns,
                dur_ns: last.at_ns.saturating_sub(first.at_ns),
                depth: 0,
                args: vec![("classes".into(), Value::count(self.loads.len()))],
            });
        }
        if let Some((gap, before, after)) = self.longest_pause() {
            s.spans.push(Span {
                name: "longest pause in class loading".into(),
                start_ns: before.at_ns,
                dur_ns: gap,
                depth: 0,
                args: vec![
                    ("after".into(), before.name.into()),
                    ("before".into(), after.name.into()),
                ],
            });
        }
        // The app's first class comes after Create VM: a -javaagent's come before.
        let app_from = self.create_vm_end().map_or(0, |e| e.saturating_add(1));
        if let Some(app) = self
            .loads
            .iter()
            .find(|l| l.at_ns >= app_from && matches!(l.origin, Origin::Jar | Origin::Dir))
        {
            s.marks.push(Mark::new(
                format!("first app class {}", app.name),
                MarkSource::Adapter,
                app.at_ns,
            ));
        }

        s.notes = self.notes(agent.as_ref());
        s
    }

    /// One row per package (rolled up to `depth` parts): its classes, their
    /// sources, the first load and the span to the last.
    fn package_table(&self, depth: Option<usize>) -> Table {
        let mut table = Table::new(&["package", "classes", "sources", "first load", "span"]);
        for r in self.packages(depth) {
            table.rows.push(vec![
                r.package.into(),
                Value::count(r.classes),
                sources_cell(&r.sources),
                Value::AtNs(r.first_ns),
                Value::Ns(r.last_ns.saturating_sub(r.first_ns)),
            ]);
        }
        table
    }

    /// What the section cannot see, and how its times are placed.
    fn notes(&self, agent: Option<&Span>) -> Vec<Value> {
        let mut notes: Vec<Value> = Vec::new();
        notes.push(
            "Classes are counted when the JVM defines them; the time to load, link and initialise \
             each one is not measured."
                .into(),
        );
        notes.push(
            "Generated classes (lambdas, LambdaForms, dynamic proxies, reflection accessors, classes \
             defined without a code source) are counted apart from where they came from."
                .into(),
        );
        notes.push(if self.aligned {
            "Times are on the run's clock (the JVM's CLOCK_MONOTONIC timestamps); the launcher's work \
             before the JVM starts is the gap before \"JVM start after spawn\"."
                .into()
        } else {
            "Times are the JVM's uptime, from its own start (after exec and the launcher's work), not \
             from spawn: the run's time zero was not available."
                .into()
        });
        if let Some(a) = agent {
            notes.push(
                format!(
                    "The JVM runs a -javaagent's premain inside Create VM, before main: {} is that time, \
                 from the JVM's first java.lang.instrument class (the agent's start) to Create VM \
                 done; JVM init is the JVM's own work before it. JVM init pays for the agent too: \
                 -javaagent adds the java.instrument module, which turns off CDS's archived module \
                 graph (-Xlog:cds says so), so the module system is built at start.",
                    a.name
                )
                .into(),
            );
        }
        if self.log.phases.is_empty() {
            notes.push("The JVM logged no startuptime phases (no \"Create VM\" time).".into());
        }
        notes
    }

    /// Where java.lang.instrument agents (`-javaagent`, also from
    /// JAVA_TOOL_OPTIONS) start, and their files, when they ran before `vm_end`.
    ///
    /// The signal is the JVM's own: HotSpot runs every agent's premain in its
    /// VMInit event, inside Create VM and before the main class is loaded, and
    /// the agent library (libinstrument) first defines
    /// `java.lang.instrument.Instrumentation` and `sun.instrument.InstrumentationImpl`,
    /// then appends the agent's jar to the class path and loads its Premain-Class
    /// from it. No application code has run before Create VM is done, so nothing
    /// else defines those classes by then: the first of them is where the agents'
    /// work starts (the JVM's own init is over), and the jars and directories
    /// that classes came from between it and Create VM's end are the agents'
    /// (the Premain-Class's jar first). Measured: a premain that sleeps 300 ms
    /// lies entirely inside it (jvm_tests.rs).
    fn agent_premain(&self, vm_end: u64) -> Option<(u64, Vec<String>)> {
        let start = self
            .loads
            .iter()
            .take_while(|l| l.at_ns <= vm_end)
            .find(|l| {
                matches!(
                    l.name,
                    "java.lang.instrument.Instrumentation" | "sun.instrument.InstrumentationImpl"
                )
            })?
            .at_ns;
        let mut files: Vec<String> = Vec::new();
        for l in self
            .loads
            .iter()
            .filter(|l| (start..=vm_end).contains(&l.at_ns))
            .filter(|l| matches!(l.origin, Origin::Jar | Origin::Dir))
        {
            if let Some(f) = outer_file(l.source) {
                if !files.contains(&f) {
                    files.push(f);
                }
            }
        }
        Some((start, files))
    }

    /// JVM init (the JVM's start → Create VM done: `JNI_CreateJavaVM`, before
    /// main), split where a -javaagent's premain starts (see [`Self::agent_premain`]):
    /// its time is the agent's, not the JVM's. Then app init (Create VM done →
    /// ready, or → the last class load when ready is not known); each with the
    /// classes defined in it.
    fn init_phases(&self) -> Vec<Span> {
        let Some(vm_end) = self.create_vm_end() else {
            return Vec::new();
        };
        let jvm_start = self.jvm_start_ns.unwrap_or(0);
        let to_ready = self.aligned && self.ready_ns > 0;
        let app_end = if to_ready {
            self.ready_ns
        } else {
            self.loads.last().map_or(vm_end, |l| l.at_ns)
        }
        .max(vm_end);
        let classes = |from: u64, to: u64| {
            self.loads
                .iter()
                .filter(|l| (from..to).contains(&l.at_ns))
                .count()
        };
        let span = |name: String, start_ns: u64, end_ns: u64, classes: usize| Span {
            name,
            start_ns,
            dur_ns: end_ns.saturating_sub(start_ns),
            depth: 0,
            args: vec![("classes".into(), Value::count(classes))],
        };
        // Every class up to Create VM's line is the JVM's (or the agents'), a
        // load stamped at the same instant included.
        let mut out = Vec::new();
        match self.agent_premain(vm_end) {
            Some((agent_start, files)) => {
                out.push(span(
                    "JVM init (JVM start → agent premain)".into(),
                    jvm_start,
                    agent_start,
                    classes(0, agent_start),
                ));
                out.push(span(
                    agent_name(&files),
                    agent_start,
                    vm_end,
                    classes(agent_start, vm_end.saturating_add(1)),
                ));
            }
            None => out.push(span(
                "JVM init (JVM start → Create VM done)".into(),
                jvm_start,
                vm_end,
                classes(0, vm_end.saturating_add(1)),
            )),
        }
        out.push(span(
            if to_ready {
                "app init (Create VM done → ready)".into()
            } else {
                "app init (Create VM done → last class load)".into()
            },
            vm_end,
            app_end,
            classes(vm_end.saturating_add(1), u64::MAX),
        ));
        out
    }

    /// Jars by classes loaded, largest first, at most [`JARS_IN_FACTS`].
    fn top_jars(&self) -> Vec<(String, usize)> {
        let mut by: HashMap<String, usize> = HashMap::new();
        for l in self.loads.iter().filter(|l| l.origin == Origin::Jar) {
            *by.entry(source_label(l.origin, l.source)).or_default() += 1;
        }
        let mut v: Vec<(String, usize)> = by.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.truncate(JARS_IN_FACTS);
        v
    }

    /// startuptime phases as spans: a phase logged inside another (everything
    /// inside "Create VM") is its child.
    fn phase_spans(&self) -> Vec<Span> {
        let spans: Vec<Span> = self
            .log
            .phases
            .iter()
            .map(|p| {
                let end = self.phase_time(p);
                Span {
                    name: p.name.clone(),
                    start_ns: end.saturating_sub(p.dur_ns),
                    dur_ns: p.dur_ns,
                    depth: 0,
                    args: Vec::new(),
                }
            })
            .collect();
        // p contains c; of two equal intervals the earlier line is the parent.
        let inside = |ci: usize, pi: usize| {
            let (c, p) = (&spans[ci], &spans[pi]);
            ci != pi
                && p.start_ns <= c.start_ns
                && c.start_ns + c.dur_ns <= p.start_ns + p.dur_ns
                && (p.dur_ns > c.dur_ns || pi < ci)
        };
        let mut roots: Vec<usize> = (0..spans.len())
            .filter(|&c| !(0..spans.len()).any(|p| inside(c, p)))
            .collect();
        roots.sort_by_key(|&i| spans[i].start_ns);
        let mut out = Vec::with_capacity(spans.len());
        for &root in &roots {
            out.push(spans[root].clone());
            // Each child goes under the first root that holds it.
            let mut children: Vec<usize> = (0..spans.len())
                .filter(|&c| inside(c, root) && roots.iter().find(|&&r| inside(c, r)) == Some(&root))
                .collect();
            children.sort_by_key(|&i| spans[i].start_ns);
            out.extend(children.into_iter().map(|c| Span {
                depth: 1,
                ..spans[c].clone()
            }));
        }
        out
    }
}

#[cfg(test)]
#[path = "jvm_tests.rs"]
mod tests;
