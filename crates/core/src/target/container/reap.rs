//! Nothing left behind, for containers: each run's container carries its
//! owner (the coldstart process that made it, as the caller names it), and a
//! coldstart that starts containers first removes those whose owner is gone (a
//! SIGKILLed coldstart cannot remove its own: the engine's monitor keeps the
//! container alive after our process group is killed).

use super::Engine;
use anyhow::{Context, Result};

/// The label naming the coldstart process that made a container.
pub const OWNER_LABEL: &str = "io.coldstart.owner";

/// Remove every container (and, with podman, pod) of coldstart's whose owner
/// `gone` says is gone; the names removed.
pub fn reap_orphans(engine: &Engine, gone: impl Fn(&str) -> bool) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    if engine.kind == super::EngineKind::Podman {
        // Pods first: removing one removes its containers.
        removed.extend(reap(
            engine,
            &gone,
            &["pod", "ps"],
            &["pod", "rm", "-f", "--time", "0"],
            ".Name",
        )?);
    }
    let rm = engine.rm_args("");
    removed.extend(reap(engine, &gone, &["ps", "-a"], &rm[..rm.len() - 1], ".Names")?);
    Ok(removed)
}

/// `list` filtered to coldstart's, `rm NAME` for each whose owner is gone.
fn reap(
    engine: &Engine,
    gone: &impl Fn(&str) -> bool,
    list: &[&str],
    rm: &[&str],
    name: &str,
) -> Result<Vec<String>> {
    let filter = format!("label={OWNER_LABEL}");
    let format = format!("{{{{{name}}}}}\t{{{{index .Labels \"{OWNER_LABEL}\"}}}}");
    let mut args = list.to_vec();
    args.extend(["--filter", &filter, "--format", &format]);
    let out = engine
        .quiet(&args)
        .output()
        .with_context(|| format!("cannot run {} to list coldstart's containers", engine.name()))?;
    if !out.status.success() {
        anyhow::bail!(
            "{} could not list coldstart's containers: {}",
            engine.name(),
            super::engine::first_line(&out.stderr)
        );
    }
    let mut removed = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((name, owner)) = line.split_once('\t') else {
            continue;
        };
        if !gone(owner.trim()) {
            continue;
        }
        let mut args = rm.to_vec();
        args.push(name.trim());
        let out = engine.quiet(&args).output()?;
        if out.status.success() || super::engine::no_such(&out.stderr) {
            removed.push(name.trim().to_string());
        }
    }
    Ok(removed)
}
