//! Deno: V8's own start-up report, switched on through `DENO_V8_FLAGS`
//! (comma-separated, appended to the target's own): `--profile-deserialization`
//! prints the snapshot's deserialization (read-only space, isolate, context),
//! each code-cache hit, and each code cache Deno writes for the next start.
//! The lines go to stdout, where they are claimed (see `v8.rs`).
//!
//! V8 prints with C stdio, which is block-buffered on a pipe: a server stopped
//! by a signal would lose the lines still in the buffer. So the adapter also
//! preloads coreutils' `libstdbuf` with `_STDBUF_O=L` (what `stdbuf -oL` does),
//! making C stdio's stdout line-buffered. Deno's own output does not go through
//! C stdio, so the program's output is unchanged.
//!
//! V8 checks a code cache against a hash of its flags, so a cache written
//! with `--profile-deserialization` is rejected (and rewritten) by a run
//! without it, and the other way round: adapted runs interleaved with plain
//! ones would make every run recompile and rewrite Deno's code cache. So the
//! adapted runs get a DENO_DIR of their own, `coldstart-adapted/` inside the
//! real one, holding their own code cache and a symlink to every other entry
//! (downloaded modules, npm packages, analysis caches) of the real one.

use super::{append_option, v8, Adapter, Collected, FinalExec, Injection};
use anyhow::Result;
use coldstart_core::sample::section::Section;
use std::path::{Path, PathBuf};

pub struct Deno;

/// Where distributions install coreutils' stdbuf helper library.
const LIBSTDBUF: &[&str] = &[
    "/usr/libexec/coreutils/libstdbuf.so",
    "/usr/lib/coreutils/libstdbuf.so",
    "/usr/lib64/coreutils/libstdbuf.so",
    "/usr/local/libexec/coreutils/libstdbuf.so",
];

/// The adapted runs' DENO_DIR, inside the real one.
const ADAPTED_DIR: &str = "coldstart-adapted";

/// The DENO_DIR the target uses: its own setting, else Deno's default
/// (`$XDG_CACHE_HOME/deno`, `~/.cache/deno`). None for a relative DENO_DIR
/// (relative to a working directory this does not know).
fn real_deno_dir(target_env: &[(String, String)]) -> Option<PathBuf> {
    let dir = match coldstart_core::target::effective_var(target_env, "DENO_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => coldstart_core::target::effective_var(target_env, "XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                coldstart_core::target::effective_var(target_env, "HOME")
                    .map(|h| PathBuf::from(h).join(".cache"))
            })?
            .join("deno"),
    };
    dir.is_absolute().then_some(dir)
}

/// `<real>/coldstart-adapted`, with a symlink to each entry of `real` except
/// the V8 code cache (its database and SQLite's -wal/-shm files): those the
/// adapted runs keep apart. Entries already there are left as they are.
fn adapted_deno_dir(real: &Path) -> Result<PathBuf> {
    use anyhow::Context;
    let own = real.join(ADAPTED_DIR);
    std::fs::create_dir_all(&own).with_context(|| format!("creating {}", own.display()))?;
    for entry in std::fs::read_dir(real).with_context(|| format!("reading {}", real.display()))? {
        let entry = entry.with_context(|| format!("reading {}", real.display()))?;
        let name = entry.file_name();
        let text = name.to_string_lossy();
        if text == ADAPTED_DIR || text.starts_with("v8_code_cache") {
            continue;
        }
        let link = own.join(&name);
        if link.symlink_metadata().is_ok() {
            continue;
        }
        std::os::unix::fs::symlink(Path::new("..").join(&name), &link)
            .with_context(|| format!("linking {}", link.display()))?;
    }
    Ok(own)
}

fn libstdbuf() -> Option<PathBuf> {
    LIBSTDBUF.iter().map(PathBuf::from).find(|p| p.is_file())
}

impl Adapter for Deno {
    fn name(&self) -> &'static str {
        "deno"
    }

    fn detect(&self, exec: &FinalExec) -> bool {
        [exec.exe, exec.path]
            .iter()
            .any(|p| Path::new(p).file_name().is_some_and(|n| n == "deno"))
    }

    fn inject(&self, _dir: &Path, target_env: &[(String, String)]) -> Result<Injection> {
        let mut env = vec![append_option(target_env, "DENO_V8_FLAGS", ',', v8::FLAG)];
        if let Some(real) = real_deno_dir(target_env) {
            let own = adapted_deno_dir(&real)?;
            env.push(("DENO_DIR".into(), own.display().to_string()));
        }
        if let Some(lib) = libstdbuf() {
            let lib = lib.display().to_string();
            let value = match coldstart_core::target::effective_var(target_env, "LD_PRELOAD") {
                Some(e) if !e.trim().is_empty() => format!("{lib}:{e}"),
                _ => lib,
            };
            env.push(("LD_PRELOAD".into(), value));
            env.push(("_STDBUF_O".into(), "L".into()));
        }
        Ok(Injection {
            env,
            claims: v8::claims()?,
        })
    }

    fn collect(&self, got: &Collected) -> Result<Section> {
        let report = v8::parse(got.claimed.iter().map(|(_, l)| l.as_str()));
        let mut s = Section {
            source: "deno".into(),
            title: "Deno: V8 start-up report (DENO_V8_FLAGS=--profile-deserialization)".into(),
            ..Section::default()
        };
        v8::add_to(&mut s, &report, true);
        s.table = v8::table(&report);
        s.notes.push(
            format!(
                "the adapted runs keep their own V8 code cache ({ADAPTED_DIR}/ in DENO_DIR, the rest \
             linked): V8 rejects a code cache written under other flags, so sharing it would make \
             plain and adapted runs rewrite each other's"
            )
            .into(),
        );
        s.notes
            .push("V8 reports durations, not instants: these are facts, not spans on the timeline".into());
        if libstdbuf().is_none() {
            s.notes.push(
                "coreutils' libstdbuf was not found: V8's lines stay in a stdio buffer until exit, \
                 so a server stopped by a signal loses them"
                    .into(),
            );
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coldstart_core::sample::section::Value;
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    #[test]
    fn detects_deno_and_appends_to_its_v8_flags() {
        let exec = |p| FinalExec { path: p, exe: p };
        assert!(Deno.detect(&exec("/opt/fixture/.deno/bin/deno")));
        assert!(!Deno.detect(&exec("/usr/bin/node")));
        let tmp = tempfile::tempdir_in(crate::testkit::fixtures_dir()).expect("tempdir");
        let mut env = fixture_deno_dir(tmp.path());
        env.push(("DENO_V8_FLAGS".to_string(), "--max-old-space-size=64".to_string()));
        let inj = Deno.inject(tmp.path(), &env).expect("inject");
        assert!(inj
            .env
            .iter()
            .any(|(k, v)| k == "DENO_DIR" && v.ends_with("deno-dir/coldstart-adapted")));
        assert_eq!(
            inj.env[0],
            (
                "DENO_V8_FLAGS".to_string(),
                "--max-old-space-size=64,--profile-deserialization".to_string()
            )
        );
    }

    fn claimed_and_own(raw: &str, inj: &Injection) -> (Vec<(u64, String)>, Vec<String>) {
        let (mut claimed, mut own) = (Vec::new(), Vec::new());
        for line in raw.lines() {
            if inj.claims.iter().any(|re| re.is_match(line)) {
                claimed.push((0, line.to_string()));
            } else {
                own.push(line.to_string());
            }
        }
        (claimed, own)
    }

    /// `[Deserializing <part> (<n> bytes) took <ms> ms]` lines that are not
    /// code-cache hits, summed with string operations only.
    fn grep_snapshot(raw: &str) -> (usize, u64) {
        let mut n = 0;
        let mut ns = 0;
        for line in raw.lines() {
            if line.starts_with("[Deserializing ")
                && !line.starts_with("[Deserializing from ")
                && line.ends_with(" ms]")
            {
                let ms: f64 = line
                    .rsplit(" took ")
                    .next()
                    .and_then(|t| t.strip_suffix(" ms]"))
                    .and_then(|t| t.parse().ok())
                    .expect("a time");
                n += 1;
                ns += (ms * 1e6).round() as u64;
            }
        }
        (n, ns)
    }

    fn collect(claimed: &[(u64, String)]) -> Section {
        Deno.collect(&Collected {
            dir: Path::new("/nonexistent"),
            claimed,
            ready_ns: 0,
            trace: None,
            t0_mono_ns: 0,
        })
        .expect("collect")
    }

    /// The target's own DENO_DIR, under the fixture (never the user's cache).
    fn fixture_deno_dir(dir: &Path) -> Vec<(String, String)> {
        vec![("DENO_DIR".into(), dir.join("deno-dir").display().to_string())]
    }

    fn deno_command(deno: &Path, dir: &Path, inj: &Injection) -> Command {
        let mut cmd = Command::new(deno);
        cmd.current_dir(dir)
            .envs(fixture_deno_dir(dir))
            .env("NO_COLOR", "1")
            .env_remove("DENO_V8_FLAGS")
            .envs(inj.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// A real Deno: the section's snapshot deserialization is the sum of V8's
    /// lines grepped from the raw output, and the program's output is untouched.
    #[test]
    fn real_deno_snapshot_deserialization_matches_a_grep() {
        let Some(deno) = crate::testkit::tool("DENO", "deno") else {
            return;
        };
        let tmp = tempfile::tempdir_in(crate::testkit::fixtures_dir()).expect("tempdir");
        std::fs::write(tmp.path().join("app.js"), "console.log('hello', 1 + 1);\n").expect("write");
        let inj = Deno
            .inject(tmp.path(), &fixture_deno_dir(tmp.path()))
            .expect("inject");
        let out = deno_command(&deno, tmp.path(), &inj)
            .args(["run", "app.js"])
            .output()
            .expect("run deno");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let raw = String::from_utf8_lossy(&out.stdout);
        let (claimed, own) = claimed_and_own(&raw, &inj);
        assert_eq!(own, ["hello 2"]);
        let s = collect(&claimed);
        let (parts, ns) = grep_snapshot(&raw);
        assert!(parts >= 2, "isolate and context at least: {raw}");
        let fact = s
            .facts
            .iter()
            .find(|f| f.0 == "snapshot deserialization (V8)")
            .map(|f| f.1.clone());
        // "T (part T, …; S)": the total agrees with the grep.
        assert!(
            matches!(&fact, Some(Value::Parts(p)) if p[0] == Value::Ns(ns)),
            "{fact:?} vs {ns} ns in {parts} lines"
        );
        let rows: usize = s
            .table
            .rows
            .iter()
            .filter(|r| r[0].as_text().is_some_and(|k| k.starts_with("snapshot: ")))
            .count();
        assert_eq!(rows, parts, "{:?}", s.table.rows);
    }

    /// A Deno server stopped by SIGTERM after ready: V8's lines reached the
    /// output anyway (line-buffered through libstdbuf).
    #[test]
    fn a_deno_server_stopped_by_a_signal_keeps_its_report() {
        let Some(deno) = crate::testkit::tool("DENO", "deno") else {
            return;
        };
        if libstdbuf().is_none() {
            eprintln!("skipped: coreutils' libstdbuf.so not found in {LIBSTDBUF:?}");
            return;
        }
        let tmp = tempfile::tempdir_in(crate::testkit::fixtures_dir()).expect("tempdir");
        std::fs::write(
            tmp.path().join("server.js"),
            "Deno.serve({ port: 0, hostname: '127.0.0.1', onListen() { console.log('listening'); } }, \
             () => new Response('x'));\n",
        )
        .expect("write");
        let inj = Deno
            .inject(tmp.path(), &fixture_deno_dir(tmp.path()))
            .expect("inject");
        let mut child = deno_command(&deno, tmp.path(), &inj)
            .args(["run", "--allow-net=127.0.0.1", "server.js"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn deno");
        let mut raw = String::new();
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        for line in lines.by_ref() {
            let line = line.expect("read");
            raw.push_str(&line);
            raw.push('\n');
            if line == "listening" {
                break;
            }
        }
        // SAFETY: kill(2) on our own child's pid, which we have not reaped yet.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        child.wait().expect("wait");
        for line in lines.map_while(|l| l.ok()) {
            raw.push_str(&line);
            raw.push('\n');
        }
        let (claimed, own) = claimed_and_own(&raw, &inj);
        assert_eq!(own, ["listening"]);
        let (parts, _) = grep_snapshot(&raw);
        assert!(parts >= 2, "the snapshot lines were lost: {raw}");
        let s = collect(&claimed);
        assert!(
            s.facts.iter().any(|f| f.0 == "snapshot deserialization (V8)"),
            "{:?}",
            s.facts
        );
    }

    /// Hits and writes of the code cache in a flagged run's raw output.
    fn cache_lines(raw: &str) -> (usize, usize) {
        let hits = raw
            .lines()
            .filter(|l| l.starts_with("[Deserializing from "))
            .count();
        let writes = raw.lines().filter(|l| l.starts_with("[Serializing to ")).count();
        (hits, writes)
    }

    /// Plain and adapted runs interleaved do not spoil each other's code cache:
    /// an adapted run after a plain one hits its own cache, and leaves the
    /// plain runs' cache file as it was.
    #[test]
    fn adapted_runs_keep_their_own_code_cache() {
        let Some(deno) = crate::testkit::tool("DENO", "deno") else {
            return;
        };
        let tmp = tempfile::tempdir_in(crate::testkit::fixtures_dir()).expect("tempdir");
        std::fs::write(
            tmp.path().join("app.js"),
            "import * as path from 'node:path';\nconsole.log(path.join('a', 'b'));\n",
        )
        .expect("write");
        let real = tmp.path().join("deno-dir");
        let target_env = vec![("DENO_DIR".to_string(), real.display().to_string())];
        let run = |env: &[(String, String)]| -> String {
            let out = Command::new(&deno)
                .current_dir(tmp.path())
                .env_remove("DENO_V8_FLAGS")
                .env("NO_COLOR", "1")
                .envs(env.iter().map(|(k, v)| (k, v)))
                .args(["run", "app.js"])
                .output()
                .expect("run deno");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        // The plain runs' code cache: SQLite's database and its write-ahead log.
        let cache = || -> Vec<u8> {
            let mut bytes = std::fs::read(real.join("v8_code_cache_v2")).unwrap_or_default();
            bytes.extend(std::fs::read(real.join("v8_code_cache_v2-wal")).unwrap_or_default());
            bytes
        };
        let plain = || {
            assert_eq!(run(&target_env), "a/b\n");
            cache()
        };
        let adapted = || -> (usize, usize) {
            let inj = Deno.inject(tmp.path(), &target_env).expect("inject");
            let mut env = target_env.clone();
            env.extend(inj.env);
            cache_lines(&run(&env))
        };
        plain();
        let before = plain();
        assert!(!before.is_empty(), "the plain runs wrote no code cache");
        let (_, first_writes) = adapted();
        assert!(first_writes > 0, "the adapted runs' own cache starts empty");
        assert!(
            cache() == before,
            "an adapted run rewrote the plain runs' code cache"
        );
        plain();
        let (hits, writes) = adapted();
        assert_eq!(writes, 0, "a plain run spoiled the adapted runs' cache");
        assert!(hits > 0);
        assert!(real.join(ADAPTED_DIR).join("v8_code_cache_v2").is_file());
    }
}
