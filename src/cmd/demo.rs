//! `coldstart demo`: builds the bundled examples and runs two experiments on them,
//! printing the equivalent `coldstart bench` command line for each so the demo
//! also teaches the CLI.

use crate::flags::{self, DemoArgs};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn run(args: &DemoArgs) -> Result<i32> {
    let root = repo_root()?;
    let out = root.join("target/examples");
    let want = |lang: &str| args.only.is_empty() || args.only.iter().any(|o| o == lang);
    // Only the compiled servers the demo runs: the rest of examples/build.sh (the
    // Lambda clients above all) is for the tests and would take minutes on a fresh clone.
    let parts: Vec<&str> = ["go", "java", "rust"].into_iter().filter(|l| want(l)).collect();
    if !parts.is_empty() {
        coldstart_core::out::errln!(
            "coldstart demo: building examples (examples/build.sh {})…",
            parts.join(" ")
        );
        let status = Command::new("bash")
            .arg(root.join("examples/build.sh"))
            .arg(&out)
            .args(&parts)
            .status()
            .context("running examples/build.sh")?;
        if !status.success() {
            bail!("examples/build.sh failed ({status}); run it by hand to see why");
        }
    }

    let mut servers: Vec<(&str, Vec<String>)> = Vec::new();
    let artifact = |p: &str| out.join(p);
    if want("rust") && artifact("rust-server").exists() {
        servers.push(("rust", vec![artifact("rust-server").display().to_string()]));
    }
    if want("go") && artifact("go-server").exists() {
        servers.push(("go", vec![artifact("go-server").display().to_string()]));
    }
    if want("node") && which("node") {
        servers.push((
            "node",
            vec![
                "node".into(),
                root.join("examples/node/server.js").display().to_string(),
            ],
        ));
    }
    if want("python") {
        if let Some(py) = real_python() {
            servers.push((
                "python",
                vec![py, root.join("examples/python/server.py").display().to_string()],
            ));
        }
    }
    if want("java") && artifact("java/Server.class").exists() && which("java") {
        servers.push((
            "java",
            vec![
                "java".into(),
                "-cp".into(),
                artifact("java").display().to_string(),
                "Server".into(),
            ],
        ));
    }
    if servers.is_empty() {
        bail!("no example could be built or found: install a toolchain (Rust, Go, Node, Python or Java) and retry");
    }

    let runs = args.runs.max(2).to_string();
    // 1. Languages side by side.
    let mut argv: Vec<String> = vec!["--runs".into(), runs.clone(), "--requests".into(), "3".into()];
    for (name, cmd) in &servers {
        let port = free_port()?;
        argv.extend([
            "--name".into(),
            (*name).into(),
            "--ready".into(),
            format!("http://127.0.0.1:{port}/health"),
        ]);
        argv.push("--".into());
        argv.extend(cmd.iter().cloned());
        argv.extend(["--port".into(), port.to_string()]);
    }
    let mut code = section(
        "1. Spawn → first 2xx on /health, one HTTP server per language (baseline: first)",
        &argv,
    )?;

    // 2. A known injected difference must come out as "slower", by about the delay.
    let (name, cmd) = &servers[0];
    let port = free_port()?;
    let html = out.join("demo-report.html");
    let mut argv: Vec<String> = vec![
        "--runs".into(),
        runs,
        "--ready".into(),
        format!("tcp:{port}"),
        "--export-html".into(),
        html.display().to_string(),
    ];
    for (variant, delay) in [(name.to_string(), "0"), (format!("{name}+50ms"), "50")] {
        argv.extend([
            "--name".into(),
            variant,
            "--env".into(),
            format!("COLDSTART_EXAMPLE_DELAY_MS={delay}"),
            "--".into(),
        ]);
        argv.extend(cmd.iter().cloned());
        argv.extend(["--port".into(), port.to_string()]);
    }
    code = code.max(section(
        "2. A known difference: the same server with a 50 ms init delay",
        &argv,
    )?);
    if !coldstart_core::out::closed() {
        let mut explain = vec!["--ready".to_string(), format!("tcp:{port}"), "--".into()];
        explain.extend(cmd.iter().cloned());
        explain.extend(["--port".into(), port.to_string()]);
        coldstart_core::out::out!("{}", next_steps(name, &explain, &html))?;
    }
    Ok(code)
}

/// Where to go from the demo: each command on a line of its own (never wrapped).
fn next_steps(name: &str, explain_args: &[String], html: &Path) -> String {
    let slow = format!("{name}+50ms");
    [
        "\n== What next".to_string(),
        "Where the time goes (traced timeline, phases, imports, classes):".into(),
        format!(
            "  coldstart explain {}",
            coldstart_core::target::shell_join(explain_args)
        ),
        "Every experiment above is stored; list them, or show one again:".into(),
        "  coldstart history".into(),
        "  coldstart show latest".into(),
        "Fail a CI job on a startup regression (here the 50 ms one fails):".into(),
        format!(
            "  coldstart gate --baseline latest:{} --candidate latest:{} --max-regression 5%",
            coldstart_core::target::shell_quote(name),
            coldstart_core::target::shell_quote(&slow)
        ),
        "See it: the HTML report of experiment 2 (distributions, runs, the verdict):".into(),
        format!("  {}", html.display()),
        "  coldstart report latest -o report.html   # any stored experiment".into(),
        String::new(),
    ]
    .join("\n")
}

fn section(title: &str, bench_args: &[String]) -> Result<i32> {
    coldstart_core::out::out!(
        "\n== {title}\n$ coldstart bench {}\n\n",
        coldstart_core::target::shell_join(bench_args)
    )?;
    if coldstart_core::out::closed() {
        // Nobody reads the demo any more (`coldstart demo | head`): stop here.
        return Ok(0);
    }
    let argv = ["coldstart", "bench"]
        .iter()
        .map(|s| s.to_string())
        .chain(bench_args.iter().cloned());
    let flags::Command::Bench(b) = flags::parse(argv).map_err(|e| anyhow::anyhow!("{e}"))? else {
        bail!("internal: demo built a non-bench command")
    };
    crate::cmd::bench::run(&b)
}

/// The repository this binary was built from (the examples live there), or the
/// current directory when it holds examples/.
fn repo_root() -> Result<PathBuf> {
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for dir in [std::env::current_dir().ok(), Some(built)].into_iter().flatten() {
        if dir.join("examples/build.sh").exists() {
            return Ok(dir);
        }
    }
    bail!("cannot find examples/build.sh: run `coldstart demo` from the coldstart repository")
}

fn which(cmd: &str) -> bool {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .any(|d| Path::new(d).join(cmd).is_file())
}

/// The interpreter itself, not a version-manager shim (pyenv's adds ~200 ms of bash).
fn real_python() -> Option<String> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !path.is_empty()).then_some(path)
}

/// A port nothing listens on right now, outside the ephemeral range.
fn free_port() -> Result<u16> {
    coldstart_core::probe::tcp::unused_port()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_ends_pointing_at_explain_history_gate_and_its_report() {
        let args: Vec<String> = ["--ready", "tcp:24567", "--", "/x/rust-server", "--port", "24567"]
            .map(String::from)
            .to_vec();
        let text = next_steps("rust", &args, Path::new("/x/target/examples/demo-report.html"));
        for line in [
            "  coldstart explain --ready tcp:24567 -- /x/rust-server --port 24567",
            "  coldstart history",
            "  coldstart gate --baseline latest:rust --candidate latest:rust+50ms --max-regression 5%",
            "  /x/target/examples/demo-report.html",
            "  coldstart report latest -o report.html   # any stored experiment",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
    }
}
