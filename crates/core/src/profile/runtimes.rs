//! The managed runtimes' own names for their JIT and interpreter code, switched
//! on through the environment of the profiled runs only (the program is never
//! changed; the cost is in the profiled ÷ untraced overhead):
//!
//! - Node/V8: `NODE_OPTIONS=--perf-basic-prof-only-functions
//!   --interpreted-frames-native-stack` writes /tmp/perf-PID.map live; the
//!   second flag gives interpreted JS functions a frame of their own (else all
//!   are `InterpreterEntryTrampoline`). Not plain `--perf-basic-prof`: in V8 it
//!   implies `--log`, which writes `isolate-0x…-PID-v8.log` into the program's
//!   working directory (`--logfile`/`--no-logfile-per-isolate` are refused in
//!   NODE_OPTIONS), and it also maps every builtin and bytecode handler, which
//!   the node binary's own symbols name anyway. With only-functions V8 (11.x)
//!   opens no log file.
//! - JVM (HotSpot): `JAVA_TOOL_OPTIONS=-XX:+UnlockDiagnosticVMOptions
//!   -XX:+DumpPerfMapAtExit -XX:+PreserveFramePointer` writes the map when the JVM
//!   exits; a JVM still running at ready (a server) is asked with `jcmd PID
//!   Compiler.perfmap` then, before it is stopped. PreserveFramePointer lets the
//!   kernel's frame-pointer walk go through compiled Java frames.
//! - CPython: `PYTHONPERFSUPPORT=1` turns on the perf trampoline in Python ≥ 3.12
//!   (its map names each Python function); older Pythons ignore it, and their
//!   Python functions show as `_PyEval_EvalFrameDefault`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const JVM_OPTIONS: &str =
    "-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -XX:+PreserveFramePointer";
pub const NODE_OPTIONS: &str = "--perf-basic-prof-only-functions --interpreted-frames-native-stack";

/// `key`'s value in the target's environment (its own, else coldstart's) with
/// `extra` appended after a space. (explain's adapters do the same; not shared,
/// so profile does not depend on explain.)
fn append_option(target_env: &[(String, String)], key: &str, extra: &str) -> (String, String) {
    let value = match crate::target::effective_var(target_env, key).filter(|v| !v.trim().is_empty()) {
        Some(v) => format!("{} {extra}", v.trim()),
        None => extra.to_string(),
    };
    (key.to_string(), value)
}

/// Replaces [`NODE_OPTIONS`] in the profiled runs when set in coldstart's own
/// environment (not the target's): how bench/profile_overhead.py measures the
/// other V8 perf switches; empty adds none.
pub const NODE_OPTIONS_OVERRIDE: &str = "COLDSTART_PROFILE_NODE_OPTIONS";

/// The variables to add to the profiled runs' environment (appended to the
/// target's own JAVA_TOOL_OPTIONS / NODE_OPTIONS).
pub fn env(target_env: &[(String, String)]) -> Vec<(String, String)> {
    let node = std::env::var(NODE_OPTIONS_OVERRIDE).unwrap_or_else(|_| NODE_OPTIONS.to_string());
    let mut vars = vec![append_option(target_env, "JAVA_TOOL_OPTIONS", JVM_OPTIONS)];
    if !node.trim().is_empty() {
        vars.push(append_option(target_env, "NODE_OPTIONS", node.trim()));
    }
    vars.push(("PYTHONPERFSUPPORT".to_string(), "1".to_string()));
    vars
}

/// Which runtime an exec'd program is, by its name (the kernel's comm).
pub fn kind(comm: &str) -> Option<&'static str> {
    if comm == "java" {
        Some("jvm")
    } else if comm == "node" || comm.starts_with("node") && comm[4..].chars().all(|c| c.is_ascii_digit()) {
        Some("node")
    } else if comm.starts_with("python") {
        Some("python")
    } else {
        None
    }
}

/// One line on how a runtime's frames were named (`seen` processes, `named` with a perf map).
pub fn note(kind: &str, seen: usize, named: usize) -> String {
    let how = match kind {
        "jvm" => "JIT-compiled methods (and the interpreter, as one blob) from the JVM's perf map (-XX:+DumpPerfMapAtExit, or jcmd Compiler.perfmap at ready)",
        "node" => "JS frames from V8's perf map (--perf-basic-prof-only-functions --interpreted-frames-native-stack)",
        _ => "Python frames from the perf trampoline's map (PYTHONPERFSUPPORT=1, Python ≥ 3.12)",
    };
    if named > 0 && kind == "node" {
        // Checked with NODE_DEBUG_NATIVE=CODE_CACHE: the example server's 48
        // lazily compiled built-in modules are all "rejected" with any
        // non-default V8 flag (even --stack-trace-limit=11), none without.
        format!("{kind}: {how}: {named} of {seen} processes; any V8 flag changes V8's flag hash, so Node's built-in code cache is rejected and its own modules compile from source in these runs: most of the profiler's overhead on Node")
    } else if named > 0 {
        format!("{kind}: {how}: {named} of {seen} processes")
    } else if kind == "python" {
        format!("{kind}: no perf map from its {seen} processes: the perf trampoline needs Python ≥ 3.12, so Python functions show as _PyEval_EvalFrameDefault")
    } else {
        format!("{kind}: no perf map from its {seen} processes: JIT code shows as [unknown]")
    }
}

/// HotSpot's template interpreter as its perf map names it: one blob for
/// every interpreted method (the `_[j]` suffix is the resolver's).
pub const JVM_INTERPRETER: &str = "Interpreter_[j]";

/// Why interpreted Java methods have no names, with their share of the samples.
/// A perf map names code by its address range, and HotSpot runs every
/// interpreted method through the same template-interpreter code (one
/// `Interpreter` entry of ~100 KB in the map); the method is only in the
/// frame's slots, which a frame-pointer sampler does not read. JDK 17 has no
/// switch that gives interpreted methods code of their own (V8's
/// --interpreted-frames-native-stack does); -Xcomp would compile everything
/// and so change the startup being measured.
pub fn jvm_interpreter_note(interpreted: u64, total: u64) -> String {
    format!(
        "jvm: {:.0}% of samples are in interpreted Java code, shown as one `Interpreter` frame (a tower of them merged): HotSpot runs every interpreted method in the same template-interpreter code, so its perf map cannot tell them apart (JDK 17 has no switch for it; -Xcomp would change the startup measured); JIT-compiled methods are named",
        100.0 * interpreted as f64 / total.max(1) as f64
    )
}

/// At ready, before the stop: a JVM that is still running has written no perf
/// map yet (it does at exit): ask it for one with `jcmd PID Compiler.perfmap`
/// (the jcmd beside its java, bounded to 20 s). Not timed: ready is already taken.
pub fn at_ready(pids: &[i32]) {
    for &pid in pids {
        let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
            continue;
        };
        if exe.file_name().and_then(|n| n.to_str()) != Some("java") {
            continue;
        }
        if Path::new(&format!("/tmp/perf-{pid}.map")).exists() {
            continue;
        }
        let jcmd = exe.with_file_name("jcmd");
        let Ok(mut child) = Command::new(&jcmd)
            .args([&pid.to_string(), "Compiler.perfmap"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        else {
            continue;
        };
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() >= until => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                // jcmd reports nothing to wait on but its exit.
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes_are_told_apart_by_their_exec_name() {
        assert_eq!(kind("java"), Some("jvm"));
        assert_eq!(kind("node"), Some("node"));
        assert_eq!(kind("node20"), Some("node"));
        assert_eq!(kind("python3.11"), Some("python"));
        assert_eq!(kind("nodejs-helper"), None);
        assert_eq!(kind("sh"), None);
    }

    #[test]
    fn the_target_s_own_options_are_kept() {
        let env = env(&[("NODE_OPTIONS".into(), "--max-old-space-size=64".into())]);
        let node = env.iter().find(|(k, _)| k == "NODE_OPTIONS").unwrap();
        assert_eq!(node.1, format!("--max-old-space-size=64 {NODE_OPTIONS}"));
    }
}
