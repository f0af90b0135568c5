//! `coldstart lambda setup RUNTIME`: one managed runtime's interface client,
//! pinned, installed once into the user's cache, from any directory. The pins are
//! the repository's (examples/lambda-ric), built into the binary so an installed
//! coldstart needs no checkout. Installation is the ecosystem's own tool (pip,
//! npm, Maven), each into a fresh directory moved into place whole, so a failed or
//! interrupted install leaves none half-written.

use crate::managed::Runtime;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const REQUIREMENTS: &str = include_str!("../../../examples/lambda-ric/requirements.txt");
const PACKAGE_JSON: &str = include_str!("../../../examples/lambda-ric/package.json");
const PACKAGE_LOCK: &str = include_str!("../../../examples/lambda-ric/package-lock.json");
const POM: &str = include_str!("../../../examples/lambda-ric/pom.xml");

/// What one runtime's install is made of: its pin files (name, text), the
/// marker that says it was installed from them, and how to install.
fn pins(runtime: Runtime) -> Vec<(&'static str, &'static str)> {
    match runtime {
        Runtime::Python311 => vec![("requirements.txt", REQUIREMENTS)],
        Runtime::Nodejs20 => vec![
            ("package.json", PACKAGE_JSON),
            ("package-lock.json", PACKAGE_LOCK),
        ],
        Runtime::Java17 => vec![("pom.xml", POM)],
    }
}

/// The pins as one text: the `.installed-from` marker's content.
fn fingerprint(runtime: Runtime) -> String {
    pins(runtime)
        .iter()
        .map(|(name, text)| format!("== {name}\n{text}"))
        .collect()
}

/// Whether `dir/<client>` holds this coldstart's pinned client of `runtime`.
pub fn installed(runtime: Runtime, dir: &Path) -> bool {
    std::fs::read_to_string(dir.join(runtime.client_subdir()).join(".installed-from"))
        .is_ok_and(|t| t == fingerprint(runtime))
}

/// Install `runtime`'s client into `dir/<client>` unless this pin is there;
/// `progress` gets a line per step. Returns whether anything was installed.
pub fn install(runtime: Runtime, dir: &Path, progress: &mut dyn FnMut(&str)) -> Result<bool> {
    let sub = runtime.client_subdir();
    let dest = dir.join(sub);
    if installed(runtime, dir) {
        progress(&format!(
            "{}: {} is installed in {} (pinned; nothing to do)",
            runtime.id(),
            runtime.client_name(),
            dest.display()
        ));
        return Ok(false);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let fresh = dir.join(format!(".{sub}.new-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    std::fs::create_dir_all(&fresh).with_context(|| format!("creating {}", fresh.display()))?;
    let started = Instant::now();
    let result = (|| -> Result<()> {
        for (name, text) in pins(runtime) {
            std::fs::write(fresh.join(name), text).with_context(|| format!("writing {name}"))?;
        }
        progress(&format!(
            "{}: installing {} with {} into {} …",
            runtime.id(),
            runtime.client_name(),
            tool(runtime),
            dest.display()
        ));
        run(runtime, &fresh)?;
        std::fs::write(fresh.join(".installed-from"), fingerprint(runtime))?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&fresh);
        return Err(e);
    }
    // Replace the old install whole: a reader sees the old one or the new one.
    let old = dir.join(format!(".{sub}.old-{}", std::process::id()));
    if dest.exists() {
        std::fs::rename(&dest, &old).with_context(|| format!("moving {} aside", dest.display()))?;
    }
    std::fs::rename(&fresh, &dest).with_context(|| format!("moving the install to {}", dest.display()))?;
    let _ = std::fs::remove_dir_all(&old);
    progress(&format!(
        "{}: installed in {:.0} s; `coldstart lambda --runtime {}` finds it from any directory",
        runtime.id(),
        started.elapsed().as_secs_f64(),
        runtime.id()
    ));
    Ok(true)
}

fn tool(runtime: Runtime) -> &'static str {
    match runtime {
        Runtime::Python311 => "pip",
        Runtime::Nodejs20 => "npm ci",
        Runtime::Java17 => "Maven",
    }
}

/// The ecosystem's installer in `dir`, quiet, without colours; its own error
/// output is kept for the message when it fails.
fn run(runtime: Runtime, dir: &Path) -> Result<()> {
    let mut cmd = match runtime {
        Runtime::Python311 => {
            let python = crate::managed::python_for_clients()?;
            let mut c = Command::new(python);
            c.args([
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--no-warn-script-location",
                "--target",
            ])
            .arg(dir)
            .arg("-r")
            .arg(dir.join("requirements.txt"));
            c
        }
        Runtime::Nodejs20 => {
            let mut c = Command::new("npm");
            c.args([
                "ci",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--color=false",
            ])
            .current_dir(dir);
            c
        }
        Runtime::Java17 => {
            let mut c = Command::new("mvn");
            c.args(["-q", "-B", "-f"])
                .arg(dir.join("pom.xml"))
                .arg("dependency:copy-dependencies")
                .arg(format!("-DoutputDirectory={}", dir.display()));
            c
        }
    };
    cmd.env("NO_COLOR", "1")
        .env("PIP_ROOT_USER_ACTION", "ignore")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let what = tool(runtime);
    let out = cmd
        .output()
        .with_context(|| format!("starting {what} (is it installed and on PATH?)"))?;
    if out.status.success() {
        return Ok(());
    }
    // Debian's pip refuses a system interpreter ("externally managed") even for a
    // private --target directory; the flag only quiets that refusal.
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    if runtime == Runtime::Python311 && text.contains("externally-managed-environment") {
        let again = cmd.arg("--break-system-packages").output()?;
        if again.status.success() {
            return Ok(());
        }
    }
    let tail: Vec<&str> = text
        .lines()
        .rev()
        .take(8)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    bail!("{what} failed ({}): {}", out.status, tail.join(" | "))
}
