//! coldstart: a cold-start lab for programs on Linux. The command line over the
//! `coldstart` library: argument parsing (cli.rs) and one module per command (cmd/).

mod cli;
mod cmd;
#[cfg(test)]
use coldstart_testkit as testkit;

use clap::Parser;
use coldstart::Lab;

fn main() {
    // explain's calibration target: coldstart's own binary, before anything else.
    if let Some(code) = coldstart::explain::estimate::calibration_target() {
        std::process::exit(code);
    }
    let code = match real_main() {
        // 130 is "interrupted": the exit code is 128 + the signal that did it.
        Ok(130) => Lab::get().map_or(130, Lab::exit_code),
        Ok(code) => code,
        Err(e) => {
            // Not eprintln!: it panics when stderr is closed.
            use std::io::Write;
            writeln!(std::io::stderr(), "coldstart: error: {e:#}").ok();
            2
        }
    };
    std::process::exit(code);
}

fn real_main() -> anyhow::Result<i32> {
    // Reports fit the terminal (or COLUMNS); without either they are left as they are.
    coldstart::report::width::detect();
    let raw: Vec<String> = std::env::args().collect();
    // `bench` variants use a grammar clap cannot express; cut them out first.
    let mut lambda_variants = Vec::new();
    let (args, variants) = match raw.get(1).map(String::as_str) {
        Some("lambda") => match cli::split_lambda_args(&raw[2..]) {
            Ok((globals, variants)) => {
                lambda_variants = variants;
                (raw[..2].iter().cloned().chain(globals).collect(), Vec::new())
            }
            Err(msg) => {
                coldstart::out::errln!("coldstart: error: {msg}");
                return Ok(2);
            }
        },
        Some("bench") => match cli::split_bench_args(&raw[2..]) {
            Ok((globals, variants)) => (raw[..2].iter().cloned().chain(globals).collect(), variants),
            Err(msg) => {
                coldstart::out::errln!("coldstart: error: {msg}");
                return Ok(2);
            }
        },
        // explain A vs B: `--name A -- … --name B -- …`, bench's grammar.
        Some("explain") if explain_names_builds(&raw[2..]) => match cli::split_bench_args(&raw[2..]) {
            Ok((globals, variants)) => (raw[..2].iter().cloned().chain(globals).collect(), variants),
            Err(msg) => {
                coldstart::out::errln!("coldstart: error: {msg}");
                return Ok(2);
            }
        },
        _ => (raw, Vec::new()),
    };
    let mut cli = cli::Cli::parse_from(args);
    // Commands that only print what clap knows need no Lab (no watchdog, no cgroup).
    match &cli.command {
        cli::Command::Completions(a) => return cmd::shell::completions(a),
        cli::Command::Man(a) => return cmd::shell::man(a),
        _ => {}
    }
    // Before any thread: it forks the watchdog.
    Lab::open()?;
    match &mut cli.command {
        cli::Command::Bench(b) => {
            b.variants = variants;
            cmd::bench::run(b)
        }
        cli::Command::Demo(d) => cmd::demo::run(d),
        cli::Command::Explain(a) => {
            a.variants = variants;
            cmd::explain::run(a)
        }
        cli::Command::History(a) => cmd::history::history(a),
        cli::Command::Show(a) => cmd::history::show(a),
        cli::Command::Compare(a) => cmd::history::compare(a),
        cli::Command::Gate(a) => cmd::history::gate(a),
        cli::Command::Report(a) => cmd::report::run(a),
        cli::Command::Completions(_) | cli::Command::Man(_) => Ok(0),
        cli::Command::Tune(a) => cmd::tune::run(a),
        cli::Command::Lambda(a) => {
            a.variants = lambda_variants;
            cmd::lambda::run(a)
        }
    }
}

/// Whether an explain command line names builds (`--name` before its first `--`).
fn explain_names_builds(args: &[String]) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--name" || a.starts_with("--name="))
}
