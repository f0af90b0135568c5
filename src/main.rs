//! coldstart: a cold-start lab for programs on Linux. The command line over the
//! `coldstart` library: argument parsing (flags/) and one module per command (cmd/).

mod cmd;
mod flags;
mod session;

#[cfg(test)]
use coldstart_testkit as testkit;

fn main() {
    // explain's calibration target: coldstart's own binary, before anything else.
    if let Some(code) = coldstart_explain::estimate::calibration_target() {
        std::process::exit(code);
    }
    let code = match real_main() {
        // 130 is "interrupted": the exit code is 128 + the signal that did it.
        Ok(130) => coldstart_core::Lab::get().map_or(130, coldstart_core::Lab::exit_code),
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
    coldstart_report::width::detect();
    let command = match flags::parse(std::env::args()) {
        Ok(command) => command,
        // clap's own: it prints help and versions, or its error, and exits.
        Err(flags::Error::Clap(e)) => e.exit(),
        Err(flags::Error::Usage(msg)) => {
            coldstart_core::out::errln!("coldstart: error: {msg}");
            return Ok(2);
        }
    };
    // Commands that only print what clap knows need no Lab (no watchdog, no cgroup).
    match &command {
        flags::Command::Completions(a) => return cmd::shell::completions(a),
        flags::Command::Man(a) => return cmd::shell::man(a),
        // Writes a file: nothing is run.
        flags::Command::FleetEmit(a) => return cmd::fleet::emit(a),
        // Runs the ecosystem's installer: nothing is measured.
        flags::Command::LambdaSetup(a) => return cmd::lambda::setup(a),
        // Reads a file: nothing is run.
        flags::Command::Pods(a) => return cmd::pods::run(a),
        _ => {}
    }
    // Before any thread: it forks the watchdog.
    coldstart_core::Lab::open()?;
    match &command {
        flags::Command::Bench(a) => cmd::bench::run(a),
        flags::Command::Demo(a) => cmd::demo::run(a),
        flags::Command::Explain(a) => cmd::explain::run(a),
        flags::Command::History(a) => cmd::history::history(a),
        flags::Command::Show(a) => cmd::history::show(a),
        flags::Command::Compare(a) => cmd::history::compare(a),
        flags::Command::Gate(a) => cmd::history::gate(a),
        flags::Command::Report(a) => cmd::report::run(a),
        flags::Command::FleetStatus(a) => cmd::fleet::status(a),
        flags::Command::Completions(_)
        | flags::Command::Man(_)
        | flags::Command::FleetEmit(_)
        | flags::Command::LambdaSetup(_)
        | flags::Command::Pods(_) => Ok(0),
        flags::Command::Tune(a) => cmd::tune::run(a),
        flags::Command::Lambda(a) => cmd::lambda::run(a),
        flags::Command::LambdaServe(a) => cmd::lambda::serve(a),
    }
}
