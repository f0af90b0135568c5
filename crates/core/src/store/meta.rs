//! Where and how an experiment ran: git state, host, load. Collected once,
//! before the first spawn.

use serde::{Deserialize, Serialize};
use std::process::Command;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Metadata {
    pub command_line: String,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cores: i64,
    pub loadavg: String,
    pub coldstart_version: String,
}

/// coldstart's own store directories (`.coldstart/` anywhere in the work tree) are
/// not the project's changes: stores made before `.coldstart/.gitignore` existed
/// would otherwise mark every clean checkout dirty.
const STORE_DIRS: &str = ":(top,exclude,glob)**/.coldstart/**";

pub fn collect() -> Metadata {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let git_commit = git(&["rev-parse", "HEAD"]);
    let git_dirty = git_commit
        .as_ref()
        .and_then(|_| git(&["status", "--porcelain", "--", ":(top)", STORE_DIRS]))
        .map(|s| !s.is_empty());
    Metadata {
        command_line: crate::target::shell_join(&std::env::args().collect::<Vec<_>>()),
        git_commit,
        git_dirty,
        hostname: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpu_model: read("/proc/cpuinfo")
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
            })
            .unwrap_or_default(),
        cores: std::thread::available_parallelism()
            .map(|n| n.get() as i64)
            .unwrap_or(1),
        loadavg: read("/proc/loadavg")
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
        coldstart_version: env!("CARGO_PKG_VERSION").to_string(),
    }
}
