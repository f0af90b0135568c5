//! coldstart: a cold-start lab for programs on Linux.

mod analysis;
// Beside analysis.rs, not inside it: the verdict code there changes independently.
#[cfg(test)]
#[path = "analysis_tests.rs"]
mod analysis_tests;
mod bench;
mod bounds;
mod cli;
/// The one clock (crates/sys).
use coldstart_sys::clock;
mod config;
mod demo;
mod elf;
mod experiment;
mod explain;
#[cfg(test)]
mod fuzz_tests;
mod gate;
mod history;
mod lambda;
mod launch;
mod marks;
mod out;
mod probe;
mod report;
#[cfg(test)]
#[path = "report/report_tests.rs"]
mod report_tests;
mod run;
mod sample;
/// Pure statistics: its own crate (crates/stats), named here as before.
use coldstart_stats as stats;
mod store;
mod target;
#[cfg(test)]
mod testkit;
mod timeline;
/// The syscall tracer: its own crate (crates/trace).
use coldstart_trace as trace;

use clap::Parser;

fn main() {
    let code = match real_main() {
        // 130 is "interrupted"; SIGQUIT's conventional code is 131.
        Ok(130) => launch::signals::exit_code(),
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
                crate::out::errln!("coldstart: error: {msg}");
                return Ok(2);
            }
        },
        Some("bench") => match cli::split_bench_args(&raw[2..]) {
            Ok((globals, variants)) => (raw[..2].iter().cloned().chain(globals).collect(), variants),
            Err(msg) => {
                crate::out::errln!("coldstart: error: {msg}");
                return Ok(2);
            }
        },
        _ => (raw, Vec::new()),
    };
    let mut cli = cli::Cli::parse_from(args);
    marks::install()?; // before any thread: it sets COLDSTART_FD in our environment
    launch::signals::install()?;
    match &mut cli.command {
        cli::Command::Bench(b) => {
            b.variants = variants;
            bench::run(b)
        }
        cli::Command::Demo(d) => demo::run(d),
        cli::Command::Explain(a) => explain::run(a),
        cli::Command::History(a) => history::history(a),
        cli::Command::Show(a) => history::show(a),
        cli::Command::Compare(a) => history::compare(a),
        cli::Command::Gate(a) => history::gate(a),
        cli::Command::Lambda(a) => {
            a.variants = lambda_variants;
            lambda::command::run(a)
        }
    }
}
