//! `coldstart pods FILE.json`: a cluster's pod start-ups from `kubectl get
//! pods,events -o json` (crates/pods reads them, report prints them).

use crate::flags::PodsArgs;
use anyhow::{Context, Result};
use std::io::Read;

pub fn run(args: &PodsArgs) -> Result<i32> {
    let text = if args.file.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).context("reading stdin")?;
        s
    } else {
        std::fs::read_to_string(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?
    };
    let pods = coldstart_pods::read(&text).with_context(|| format!("{}", args.file.display()))?;
    if args.json {
        let json = serde_json::json!({"schema": "coldstart.pods/1", "pods": pods});
        coldstart_core::out::outln!("{}", serde_json::to_string_pretty(&json)?)?;
    } else {
        coldstart_core::out::out!("{}", coldstart_report::pods::terminal(&pods))?;
    }
    Ok(0)
}
