//! What a `java` command starts, read off its argv and the jar's manifest: a
//! Spring Boot fat jar (`BOOT-INF/` entries and `Spring-Boot-Version` in
//! `META-INF/MANIFEST.MF`), a plain jar (with or without a manifest
//! `Class-Path`), or an exploded class path (`-cp` with directories); and
//! whether Spring Boot is on its class path. tune offers the Spring Boot flow
//! (`spring.rs`) only for the first, Spring Boot's own properties wherever Spring
//! Boot is, and says which one it saw.

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// How the command names the application's code.
#[derive(Debug, Clone, PartialEq)]
pub enum AppKind {
    /// `-jar` with a Spring Boot fat jar: its version from the manifest.
    SpringBoot { version: Option<String> },
    /// `-jar` with a jar whose manifest has a `Class-Path` of this many entries.
    JarWithClassPath { entries: usize },
    /// `-jar` with a jar and no manifest class path.
    PlainJar,
    /// `-cp`/`-classpath`/`--class-path`: this many directories and jars.
    ClassPath { dirs: usize, jars: usize },
}

/// The application a `java` argv starts.
#[derive(Debug, Clone, PartialEq)]
pub struct JavaApp {
    /// The argv index of the jar (`-jar X`) or of the class path value.
    pub index: usize,
    /// That argument, resolved against the working directory.
    pub path: PathBuf,
    pub kind: AppKind,
    /// Spring Boot (`org.springframework.boot`) is on its class path: the fat
    /// jar, the jar itself (shaded), a jar its manifest or `-cp` names
    /// (`spring-boot-3.5.7.jar`), or a class directory.
    pub boot: bool,
}

impl JavaApp {
    /// `Spring Boot 3.5.7 fat jar app.jar`, `exploded class path (2 directories, 3 jars)`.
    pub fn describe(&self) -> String {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match &self.kind {
            AppKind::SpringBoot { version } => format!(
                "Spring Boot {}fat jar {name}",
                version.as_deref().map(|v| format!("{v} ")).unwrap_or_default()
            ),
            AppKind::JarWithClassPath { entries } => {
                format!(
                    "jar {name} with a manifest Class-Path of {}",
                    count(*entries, "entry", "entries")
                )
            }
            AppKind::PlainJar => format!("jar {name}"),
            AppKind::ClassPath { dirs, jars } => {
                let jars = count(*jars, "jar", "jars");
                if *dirs > 0 {
                    format!(
                        "exploded class path ({}, {jars})",
                        count(*dirs, "directory", "directories")
                    )
                } else {
                    format!("class path of {jars}")
                }
            }
        }
    }

    /// The Spring Boot version, for a fat jar.
    pub fn boot_version(&self) -> Option<&str> {
        match &self.kind {
            AppKind::SpringBoot { version } => version.as_deref(),
            _ => None,
        }
    }
}

/// `1 jar`, `3 jars`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Launcher options that take the next word as their value (so it is not taken
/// for the main class).
const WITH_VALUE: [&str; 9] = [
    "-p",
    "--module-path",
    "--upgrade-module-path",
    "--add-modules",
    "--add-opens",
    "--add-exports",
    "--add-reads",
    "--patch-module",
    "--limit-modules",
];

/// The application of `argv` (argv[0] the launcher): the jar after `-jar`, else
/// the class path option's value; None when there is neither, or the jar cannot
/// be read (the command then fails its own way).
pub fn of_argv(argv: &[String], cwd: Option<&Path>) -> Option<JavaApp> {
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].as_str();
        match a {
            "-jar" => {
                let path = resolve(argv.get(i + 1)?, cwd);
                let (kind, boot) = read_jar(&path).ok()?;
                return Some(JavaApp {
                    index: i + 1,
                    path,
                    kind,
                    boot,
                });
            }
            "-cp" | "-classpath" | "--class-path" => {
                let value = argv.get(i + 1)?;
                let entries: Vec<PathBuf> = value
                    .split(':')
                    .filter(|e| !e.is_empty())
                    .map(|e| resolve(e, cwd))
                    .collect();
                let dirs = entries.iter().filter(|e| e.is_dir()).count();
                return Some(JavaApp {
                    index: i + 1,
                    path: resolve(value, cwd),
                    kind: AppKind::ClassPath {
                        dirs,
                        jars: entries.len() - dirs,
                    },
                    boot: entries.iter().any(|e| boot_entry(e)),
                });
            }
            _ if WITH_VALUE.contains(&a) => i += 2,
            _ if a.starts_with('-') => i += 1,
            // The main class: options after it are the program's.
            _ => return None,
        }
    }
    None
}

fn resolve(p: &str, cwd: Option<&Path>) -> PathBuf {
    match cwd {
        Some(dir) if Path::new(p).is_relative() => dir.join(p),
        _ => PathBuf::from(p),
    }
}

/// Spring Boot's package, as jar entries and class directories spell it.
const BOOT_PACKAGE: &str = "org/springframework/boot/";

/// A Spring Boot jar's name: `spring-boot-3.5.7.jar`, `spring-boot-autoconfigure-…`.
fn boot_jar(name: &str) -> bool {
    name.starts_with("spring-boot") && name.ends_with(".jar")
}

/// One class path entry holds Spring Boot: a Spring Boot jar, a class directory
/// with its package, or a `dir/*` wildcard (the launcher's: every jar in `dir`)
/// with a Spring Boot jar.
fn boot_entry(e: &Path) -> bool {
    if e.file_name().is_some_and(|n| n == "*") {
        return e.parent().is_some_and(|dir| boot_dir(dir, false));
    }
    e.file_name().and_then(|n| n.to_str()).is_some_and(boot_jar) || e.join(BOOT_PACKAGE).is_dir()
}

/// `dir` holds Spring Boot: its package, or a Spring Boot jar in it (or, with
/// `lib`, in its `lib/`: a Lambda Java function's code and layers).
fn boot_dir(dir: &Path, lib: bool) -> bool {
    let jars = |d: &Path| {
        std::fs::read_dir(d)
            .is_ok_and(|rd| rd.flatten().any(|f| f.file_name().to_str().is_some_and(boot_jar)))
    };
    dir.join(BOOT_PACKAGE).is_dir() || jars(dir) || (lib && jars(&dir.join("lib")))
}

/// Spring Boot in a Lambda Java function: its code directory (classes and
/// `lib/`) or a layer's `java/lib/`, as Lambda's class path holds them.
pub fn boot_in_function(code: &Path, layers: &[PathBuf]) -> bool {
    boot_dir(code, true) || layers.iter().any(|l| boot_dir(&l.join("java"), true))
}

/// What the jar at `path` is, from its entries and manifest, and whether Spring
/// Boot is in it or on its manifest `Class-Path`.
fn read_jar(path: &Path) -> Result<(AppKind, bool)> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut zip =
        zip::ZipArchive::new(file).with_context(|| format!("reading {} as a jar", path.display()))?;
    let boot_inf = zip
        .file_names()
        .any(|n| n.is_ok_and(|n| n.starts_with("BOOT-INF/")));
    let shaded = zip
        .file_names()
        .any(|n| n.is_ok_and(|n| n.starts_with(BOOT_PACKAGE)));
    let manifest = match zip.by_name("META-INF/MANIFEST.MF") {
        Ok(mut entry) => {
            let mut text = String::new();
            entry
                .read_to_string(&mut text)
                .with_context(|| format!("reading the manifest of {}", path.display()))?;
            parse_manifest(&text)
        }
        Err(_) => BTreeMap::new(),
    };
    let version = manifest.get("Spring-Boot-Version").cloned();
    let class_path: Vec<&str> = manifest
        .get("Class-Path")
        .map(|cp| cp.split_whitespace().collect())
        .unwrap_or_default();
    // Manifest entries are relative to the jar's directory.
    let here = path.parent().unwrap_or(Path::new(""));
    let listed = class_path.iter().any(|e| boot_entry(&here.join(e)));
    Ok(if boot_inf && version.is_some() {
        (AppKind::SpringBoot { version }, true)
    } else if manifest.contains_key("Class-Path") {
        (
            AppKind::JarWithClassPath {
                entries: class_path.len(),
            },
            shaded || listed,
        )
    } else {
        (AppKind::PlainJar, shaded)
    })
}

/// A manifest's main section: `Name: value` lines, a line starting with one space
/// continuing the one before (lines are at most 72 bytes).
pub fn parse_manifest(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut last: Option<String> = None;
    for line in text.lines() {
        if line.is_empty() {
            // The main section ends at the first blank line; per-entry sections follow.
            break;
        }
        if let Some(more) = line.strip_prefix(' ') {
            if let Some(v) = last.as_ref().and_then(|k| out.get_mut(k)) {
                let v: &mut String = v;
                v.push_str(more);
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            out.insert(k.trim().to_string(), v.trim_start().to_string());
            last = Some(k.trim().to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A jar with these entries (name, content).
    fn jar(dir: &Path, name: &str, entries: &[(&str, &str)]) -> PathBuf {
        let path = dir.join(name);
        let mut w = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        for (n, content) in entries {
            w.start_file(*n, opts).unwrap();
            w.write_all(content.as_bytes()).unwrap();
        }
        w.finish().unwrap();
        path
    }

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_spring_boot_fat_jar_is_told_from_plain_jars_and_class_paths() {
        let dir = tempfile::tempdir().unwrap();
        let boot = "Manifest-Version: 1.0\r\nMain-Class: org.springframework.boot.loader.launch.JarLauncher\r\nSpring-Boot-Version: 3.5.7\r\n\r\n";
        jar(
            dir.path(),
            "app.jar",
            &[("META-INF/MANIFEST.MF", boot), ("BOOT-INF/classes/A.class", "x")],
        );
        let app = of_argv(
            &argv(&["java", "-Xmx1g", "-jar", "app.jar", "--server.port=0"]),
            Some(dir.path()),
        )
        .unwrap();
        assert_eq!(app.index, 3);
        assert_eq!(app.boot_version(), Some("3.5.7"));
        assert_eq!(app.describe(), "Spring Boot 3.5.7 fat jar app.jar");
        // The manifest's version without BOOT-INF/ is no fat jar (a thin launcher's jar).
        jar(dir.path(), "thin.jar", &[("META-INF/MANIFEST.MF", boot)]);
        let thin = of_argv(&argv(&["java", "-jar", "thin.jar"]), Some(dir.path())).unwrap();
        assert_eq!(thin.kind, AppKind::PlainJar);
        // A Class-Path continued on the next line (72-byte lines).
        let cp = "Manifest-Version: 1.0\nClass-Path: lib/a.jar lib/b\n .jar lib/c.jar\nMain-Class: M\n";
        jar(dir.path(), "cp.jar", &[("META-INF/MANIFEST.MF", cp)]);
        let with_cp = of_argv(&argv(&["java", "-jar", "cp.jar"]), Some(dir.path())).unwrap();
        assert_eq!(with_cp.kind, AppKind::JarWithClassPath { entries: 3 });
        // An exploded class path: a directory and a jar; options with values are skipped.
        std::fs::create_dir(dir.path().join("classes")).unwrap();
        let exploded = of_argv(
            &argv(&["java", "--add-opens", "a/b=ALL", "-cp", "classes:cp.jar", "Main"]),
            Some(dir.path()),
        )
        .unwrap();
        assert_eq!(exploded.kind, AppKind::ClassPath { dirs: 1, jars: 1 });
        assert_eq!(exploded.index, 4);
        assert!(exploded.describe().starts_with("exploded class path"));
        // A main class first: no application option after it counts.
        assert!(of_argv(&argv(&["java", "Main", "-jar", "app.jar"]), Some(dir.path())).is_none());
        // Not a jar at all.
        std::fs::write(dir.path().join("junk.jar"), "not a zip").unwrap();
        assert!(of_argv(&argv(&["java", "-jar", "junk.jar"]), Some(dir.path())).is_none());
    }

    /// Spring Boot on the class path, however it is packaged; and not where only
    /// its name or other Spring jars are.
    #[test]
    fn spring_boot_is_found_on_the_class_path_however_packaged() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let boot = |words: &[&str]| {
            of_argv(&argv(words), Some(d))
                .unwrap_or_else(|| panic!("{words:?}"))
                .boot
        };
        let fat = "Manifest-Version: 1.0\nSpring-Boot-Version: 3.5.7\n";
        jar(
            d,
            "fat.jar",
            &[("META-INF/MANIFEST.MF", fat), ("BOOT-INF/lib/x.jar", "x")],
        );
        assert!(boot(&["java", "-jar", "fat.jar"]));
        // The extracted application: a thin jar whose manifest names the libraries.
        let thin =
            "Manifest-Version: 1.0\nClass-Path: lib/spring-core-6.2.12.jar lib/spring-boot-3\n .5.7.jar\n";
        jar(d, "app.jar", &[("META-INF/MANIFEST.MF", thin)]);
        assert!(boot(&["java", "-jar", "app.jar"]));
        // Spring without Boot: the property means nothing there.
        let core =
            "Manifest-Version: 1.0\nClass-Path: lib/spring-core-6.2.12.jar lib/spring-context-6.2.12.jar\n";
        jar(d, "core.jar", &[("META-INF/MANIFEST.MF", core)]);
        assert!(!boot(&["java", "-jar", "core.jar"]));
        // Shaded into the jar itself.
        jar(
            d,
            "shaded.jar",
            &[("org/springframework/boot/SpringApplication.class", "x")],
        );
        assert!(boot(&["java", "-jar", "shaded.jar"]));
        jar(d, "plain.jar", &[("Main.class", "x")]);
        assert!(!boot(&["java", "-jar", "plain.jar"]));
        // A class path: a named jar, a wildcard over a directory, a class directory.
        assert!(boot(&["java", "-cp", "classes:lib/spring-boot-3.5.7.jar", "M"]));
        std::fs::create_dir_all(d.join("libs")).unwrap();
        std::fs::write(d.join("libs/spring-boot-autoconfigure-3.5.7.jar"), "x").unwrap();
        assert!(boot(&["java", "-cp", "libs/*", "M"]));
        assert!(!boot(&["java", "-cp", "plain.jar:core.jar", "M"]));
        std::fs::create_dir_all(d.join("exploded/org/springframework/boot")).unwrap();
        assert!(boot(&["java", "-cp", "exploded", "M"]));
        // A Lambda function: its code's lib/, or a layer's java/lib/.
        let code = d.join("code");
        std::fs::create_dir_all(code.join("lib")).unwrap();
        let layer = d.join("layer");
        std::fs::create_dir_all(layer.join("java/lib")).unwrap();
        assert!(!boot_in_function(&code, std::slice::from_ref(&layer)));
        std::fs::write(layer.join("java/lib/spring-boot-3.5.7.jar"), "x").unwrap();
        assert!(boot_in_function(&code, &[layer]));
        std::fs::write(code.join("lib/spring-boot-3.5.7.jar"), "x").unwrap();
        assert!(boot_in_function(&code, &[]));
    }
}
