//! coldstart: a cold-start lab for programs on Linux.

mod analysis;
mod bench;
mod cli;
mod clock;
mod config;
mod demo;
mod elf;
mod experiment;
mod explain;
mod gate;
mod history;
mod lambda;
mod launch;
mod marks;
mod probe;
mod report;
mod run;
mod sample;
mod stats;
mod store;
mod target;
mod trace;

use clap::Parser;

fn main() {
    let code = match real_main() {
        // 130 is "interrupted"; SIGQUIT's conventional code is 131.
        Ok(130) => launch::signals::exit_code(),
        Ok(code) => code,
        Err(e) => {
            eprintln!("coldstart: error: {e:#}");
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
                eprintln!("coldstart: error: {msg}");
                return Ok(2);
            }
        },
        Some("bench") => match cli::split_bench_args(&raw[2..]) {
            Ok((globals, variants)) => (raw[..2].iter().cloned().chain(globals).collect(), variants),
            Err(msg) => {
                eprintln!("coldstart: error: {msg}");
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
