//! The catalogue of candidate optimizations: data, one TOML file per runtime
//! (`catalogue/*.toml`, built in), extended or overridden by the user's files
//! (`--catalogue PATH`). Format: docs/tune.md.

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The built-in files, one per runtime.
const BUILT_IN: [(&str, &str); 6] = [
    ("catalogue/jvm.toml", include_str!("../catalogue/jvm.toml")),
    ("catalogue/python.toml", include_str!("../catalogue/python.toml")),
    ("catalogue/node.toml", include_str!("../catalogue/node.toml")),
    ("catalogue/go.toml", include_str!("../catalogue/go.toml")),
    ("catalogue/beam.toml", include_str!("../catalogue/beam.toml")),
    ("catalogue/native.toml", include_str!("../catalogue/native.toml")),
];

/// One runtime's file.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct File {
    /// jvm, python, node, go, beam, native (explain's adapter names).
    pub runtime: String,
    /// Regex on argv[0]'s file name: when it matches, candidates' `args` go right after it.
    #[serde(default)]
    pub executable: Option<String>,
    /// Where `args` go when argv[0] is not the runtime (JAVA_TOOL_OPTIONS, NODE_OPTIONS).
    #[serde(default)]
    pub options_env: Option<String>,
    /// How to ask the runtime's executable its version, and the regex whose first group is it.
    #[serde(default)]
    pub version_args: Vec<String>,
    #[serde(default)]
    pub version_regex: Option<String>,
    /// How to tell that the runtime refused an archive a training run made.
    #[serde(default)]
    pub archive_check: Vec<ArchiveCheck>,
    #[serde(default, rename = "candidate")]
    pub candidates: Vec<Candidate>,
}

/// One candidate optimization.
#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    pub id: String,
    pub title: String,
    /// What it does.
    #[serde(default)]
    pub what: String,
    /// Why it can help cold start.
    #[serde(default)]
    pub why: String,
    /// Preconditions and risks.
    #[serde(default)]
    pub risks: String,
    /// How to apply it permanently.
    #[serde(default)]
    pub apply: String,
    /// Where the rationale comes from (a documentation URL).
    #[serde(default)]
    pub source: String,
    /// Flags inserted right after the runtime's executable (`{work}`: the candidate's directory).
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for the target.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Variables appended to (space- or comma-separated lists: GODEBUG takes commas).
    #[serde(default)]
    pub env_append: BTreeMap<String, String>,
    /// A training run of the program itself, once, untimed, before the measured runs.
    #[serde(default)]
    pub train: Option<Train>,
    /// A shell line run once before the measured runs (after the training run).
    #[serde(default)]
    pub setup: Option<String>,
    /// A shell line run once before the training run, whose output the training and
    /// the measured runs use (Spring Boot's extraction of the fat jar).
    #[serde(default)]
    pub prepare: Option<String>,
    /// The jar the command runs instead of its own `-jar` one (`{work}/app/{jar_name}`:
    /// the extracted application); only with `applies_when.app`.
    #[serde(default)]
    pub jar: Option<String>,
    #[serde(default)]
    pub applies_when: AppliesWhen,
    /// Candidates it cannot be combined with.
    #[serde(default)]
    pub conflicts: Vec<String>,
    /// It moves work to the first request (or later): flagged ⚠️ whatever ready says.
    #[serde(default)]
    pub shifts_work: bool,
    /// Not measurable by tune (a rebuild, a code change): listed with this reason.
    #[serde(default)]
    pub advice_only: Option<String>,
    /// The whole command instead of the baseline's argv (tune's own shim bypass,
    /// read off the traced run; never from a catalogue file).
    #[serde(skip)]
    pub argv: Option<Vec<String>>,
    /// Why it does not apply to this command (not the application `applies_when.app`
    /// names): set when the catalogue is fitted to the command, never from a file.
    #[serde(skip)]
    pub not_here: Option<String>,
}

/// A candidate whose flags map an archive (a flag starting with `flag`) has its
/// check run with `args` added: with them the runtime refuses to start when it
/// cannot use the archive (the JVM's -Xshare:on; -XX:AOTMode=on for an AOT
/// cache), where by default it runs on without it, silently, and the candidate
/// would be measured as no gain.
#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ArchiveCheck {
    pub flag: String,
    pub args: Vec<String>,
}

/// The training run: the program with these flags and variables added.
#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Train {
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The training run stops by itself (`-Dspring.context.exit=onRefresh`): it is
    /// done when it exits, whatever the measured runs' readiness.
    #[serde(default)]
    pub exits: bool,
}

#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AppliesWhen {
    /// Inclusive lower bound of the runtime's version (dotted, compared numerically).
    #[serde(default)]
    pub min_version: Option<String>,
    /// Exclusive upper bound.
    #[serde(default)]
    pub max_version: Option<String>,
    /// Why it does not apply outside the range (shown in the table).
    #[serde(default)]
    pub unavailable: Option<String>,
    /// Only for this kind of application: "spring-boot" (a Spring Boot fat jar run with -jar).
    #[serde(default)]
    pub app: Option<String>,
    /// Inclusive lower bound of that application's framework version (Spring Boot's).
    #[serde(default)]
    pub min_app_version: Option<String>,
}

/// The catalogue for one runtime: the built-in file merged with the user's.
#[derive(Debug, Clone, Default)]
pub struct Catalogue {
    pub file: File,
}

fn parse(name: &str, text: &str) -> Result<File> {
    let file: File = toml::from_str(text).with_context(|| format!("reading the tune catalogue {name}"))?;
    for c in &file.candidates {
        if c.id.is_empty()
            || !c
                .id
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch))
        {
            bail!(
                "{name}: candidate id {:?} must be letters, digits, '-', '_' or '.'",
                c.id
            );
        }
        if c.advice_only.is_none()
            && c.args.is_empty()
            && c.env.is_empty()
            && c.env_append.is_empty()
            && c.jar.is_none()
        {
            bail!(
                "{name}: candidate '{}' changes nothing: give it args, env, env_append, jar or advice_only",
                c.id
            );
        }
    }
    if let Some(r) = &file.version_regex {
        regex::Regex::new(r).with_context(|| format!("{name}: bad version_regex"))?;
    }
    if let Some(r) = &file.executable {
        regex::Regex::new(r).with_context(|| format!("{name}: bad executable regex"))?;
    }
    Ok(file)
}

/// The catalogue of `runtime`: built in, then each user file for that runtime
/// (a file, or every *.toml in a directory), whose candidates replace built-in
/// ones of the same id and add the rest.
pub fn load(runtime: &str, user: &[std::path::PathBuf]) -> Result<Catalogue> {
    let mut merged = File {
        runtime: runtime.to_string(),
        ..File::default()
    };
    for (name, text) in BUILT_IN {
        let f = parse(name, text)?;
        if f.runtime == runtime {
            merge(&mut merged, f);
        }
    }
    for path in user_files(user)? {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading --catalogue {}", path.display()))?;
        let f = parse(&path.display().to_string(), &text)?;
        if f.runtime == runtime {
            merge(&mut merged, f);
        }
    }
    Ok(Catalogue { file: merged })
}

/// Every runtime a built-in file names.
pub fn runtimes() -> Vec<String> {
    BUILT_IN
        .iter()
        .filter_map(|(n, t)| parse(n, t).ok().map(|f| f.runtime))
        .collect()
}

fn user_files(paths: &[std::path::PathBuf]) -> Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut files: Vec<_> = std::fs::read_dir(p)
                .with_context(|| format!("listing --catalogue {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|e| e == "toml"))
                .collect();
            files.sort();
            out.extend(files);
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            bail!(
                "--catalogue {}: no such file or directory (give a TOML file or a directory of them)",
                p.display()
            );
        }
    }
    Ok(out)
}

fn merge(into: &mut File, f: File) {
    for field in [
        (&mut into.executable, f.executable),
        (&mut into.options_env, f.options_env),
        (&mut into.version_regex, f.version_regex),
    ] {
        if field.1.is_some() {
            *field.0 = field.1;
        }
    }
    if !f.archive_check.is_empty() {
        into.archive_check = f.archive_check;
    }
    if !f.version_args.is_empty() {
        into.version_args = f.version_args;
    }
    for c in f.candidates {
        match into.candidates.iter_mut().find(|o| o.id == c.id) {
            Some(old) => *old = c,
            None => into.candidates.push(c),
        }
    }
}

/// Dotted versions compared numerically (`3.9` < `3.11`); missing parts are 0.
pub fn version_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |s: &str| -> Vec<u64> { s.split('.').map(|p| p.trim().parse().unwrap_or(0)).collect() };
    let (a, b) = (parts(a), parts(b));
    for i in 0..a.len().max(b.len()) {
        let o = a.get(i).unwrap_or(&0).cmp(b.get(i).unwrap_or(&0));
        if o.is_ne() {
            return o;
        }
    }
    std::cmp::Ordering::Equal
}

impl Candidate {
    /// None when it applies to this runtime version; else why not.
    pub fn unavailable(&self, version: Option<&str>) -> Option<String> {
        if let Some(why) = &self.advice_only {
            return Some(format!("advice only: {why}"));
        }
        if let Some(why) = &self.not_here {
            return Some(why.clone());
        }
        let w = &self.applies_when;
        if w.min_version.is_none() && w.max_version.is_none() {
            return None;
        }
        let Some(v) = version else {
            return Some("the runtime's version is unknown, and this candidate needs a version range".into());
        };
        let below = w
            .min_version
            .as_deref()
            .is_some_and(|m| version_cmp(v, m).is_lt());
        let above = w
            .max_version
            .as_deref()
            .is_some_and(|m| version_cmp(v, m).is_ge());
        if !(below || above) {
            return None;
        }
        let range = match (&w.min_version, &w.max_version) {
            (Some(lo), Some(hi)) => format!("needs version ≥ {lo} and < {hi}"),
            (Some(lo), None) => format!("needs version ≥ {lo}"),
            (None, Some(hi)) => format!("needs version < {hi}"),
            (None, None) => String::new(),
        };
        Some(match &w.unavailable {
            Some(why) => format!("unavailable on {v}: {why} ({range})"),
            None => format!("unavailable on {v}: {range}"),
        })
    }
}

/// `--only a,b` / `--skip c`: the ids must exist in the catalogue.
pub fn select<'a>(cat: &'a Catalogue, only: &[String], skip: &[String]) -> Result<Vec<&'a Candidate>> {
    let known = |id: &String| -> Result<()> {
        if cat.file.candidates.iter().any(|c| &c.id == id) {
            return Ok(());
        }
        let ids: Vec<&str> = cat.file.candidates.iter().map(|c| c.id.as_str()).collect();
        Err(anyhow!(
            "no candidate '{id}' for {}: it has {} (see `coldstart tune --list`)",
            cat.file.runtime,
            ids.join(", ")
        ))
    };
    for id in only.iter().chain(skip) {
        known(id)?;
    }
    Ok(cat
        .file
        .candidates
        .iter()
        .filter(|c| only.is_empty() || only.contains(&c.id))
        .filter(|c| !skip.contains(&c.id))
        .collect())
}

/// `{work}` in a catalogue string.
pub fn expand(s: &str, work: &Path) -> String {
    s.replace("{work}", &work.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_file_parses_and_has_sources() {
        for (name, text) in BUILT_IN {
            let f = parse(name, text).unwrap();
            assert!(!f.candidates.is_empty(), "{name}");
            for c in &f.candidates {
                assert!(c.source.starts_with("https://"), "{name}: {} has no source", c.id);
                assert!(!c.why.is_empty() && !c.apply.is_empty(), "{name}: {}", c.id);
            }
        }
        assert_eq!(runtimes().len(), 6);
    }

    #[test]
    fn docs_list_every_built_in_candidate() {
        let docs = include_str!("../../../docs/tune.md");
        for (name, text) in BUILT_IN {
            for c in parse(name, text).unwrap().candidates {
                assert!(
                    docs.contains(&format!("**`{}` — ", c.id)),
                    "docs/tune.md lacks {}",
                    c.id
                );
                assert!(
                    docs.contains(&c.source),
                    "docs/tune.md lacks the source of {}",
                    c.id
                );
            }
        }
    }

    #[test]
    fn versions_compare_numerically() {
        assert!(version_cmp("3.9", "3.11").is_lt());
        assert!(version_cmp("17", "13").is_gt());
        assert!(version_cmp("22.1", "22.1.0").is_eq());
        let cat = load("node", &[]).unwrap();
        let cc = cat
            .file
            .candidates
            .iter()
            .find(|c| c.id == "compile-cache")
            .unwrap();
        let why = cc.unavailable(Some("20.19.1")).unwrap();
        assert!(why.contains("22.1"), "{why}");
        assert!(cc.unavailable(Some("22.4.0")).is_none());
    }

    #[test]
    fn user_files_override_and_add() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mine.toml");
        std::fs::write(
            &p,
            "runtime = \"go\"\n[[candidate]]\nid = \"gogc-off\"\ntitle = \"mine\"\nenv = { GOGC = \"400\" }\n\
             [[candidate]]\nid = \"new\"\ntitle = \"new\"\nenv = { X = \"1\" }\n",
        )
        .unwrap();
        let cat = load("go", &[dir.path().to_path_buf()]).unwrap();
        let ids: Vec<&str> = cat.file.candidates.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.iter().filter(|i| **i == "gogc-off").count(), 1);
        assert!(ids.contains(&"new"));
        assert_eq!(cat.file.candidates[0].title, "mine");
        assert!(select(&cat, &["nope".into()], &[]).is_err());
        assert_eq!(select(&cat, &["new".into()], &[]).unwrap().len(), 1);
    }
}
