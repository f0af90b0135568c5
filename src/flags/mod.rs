//! The command line: raw arguments → checked options, as ripgrep's `flags/`.
//!
//! - `raw`: clap's definitions (every flag, its `-h` line and its `--help` text);
//! - `variants`: the variant grammar (`--name A … -- COMMAND`), cut in one place;
//! - `help`: each command's long reference, laid out for the terminal or roff;
//! - this module: [`parse`], which runs the three and checks what clap cannot,
//!   giving each command one type ([`Command`]) that `cmd/` receives whole.

mod checked;
pub mod help;
pub mod raw;
pub mod variants;

pub use checked::{BenchArgs, ExplainArgs, FleetEmitArgs, LambdaArgs, LambdaServeArgs, TuneArgs};
pub use raw::{
    CacheArg, CompareArgs, CompletionsArgs, DemoArgs, ExportArgs, GateArgs, HistoryArgs, HookArgs,
    LambdaInitCpuArgs, LambdaVariantArgs, LimitArgs, ManArgs, PodsArgs, ReportArgs, ShowArgs, StoreArgs,
    SweepArgs, VariantArgs,
};
pub use variants::{LambdaVariantSpec, VariantSpec};

use clap::{CommandFactory, FromArgMatches};

/// A command with its checked options.
#[derive(Debug)]
pub enum Command {
    Bench(Box<BenchArgs>),
    Demo(DemoArgs),
    Explain(Box<ExplainArgs>),
    History(HistoryArgs),
    Show(ShowArgs),
    Compare(CompareArgs),
    Gate(GateArgs),
    Lambda(Box<LambdaArgs>),
    LambdaServe(Box<LambdaServeArgs>),
    LambdaSetup(raw::LambdaSetupFlags),
    Tune(Box<TuneArgs>),
    Report(ReportArgs),
    Pods(PodsArgs),
    Completions(CompletionsArgs),
    Man(ManArgs),
    FleetEmit(FleetEmitArgs),
    FleetStatus(raw::FleetStatusFlags),
}

/// Why a command line was not parsed.
#[derive(Debug)]
pub enum Error {
    /// clap's own: a bad flag, or `--help`/`--version` to print.
    Clap(clap::Error),
    /// The variant grammar's or a check's: one line.
    Usage(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Clap(e) => write!(f, "{}", e.to_string().trim_end()),
            Error::Usage(msg) => f.write_str(msg),
        }
    }
}

impl From<clap::Error> for Error {
    fn from(e: clap::Error) -> Self {
        Error::Clap(e)
    }
}

/// The width help is laid out for: COLUMNS when set (as the reports), else the
/// terminal's (on any of stdout, stderr, stdin: `--help | less` still fits it),
/// else clap's default of 100.
pub fn help_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .or_else(|| terminal_size::terminal_size().map(|(w, _)| usize::from(w.0)))
        .unwrap_or(100)
        .max(40)
}

/// clap's command tree, for completions (no prose attached).
pub fn definitions() -> clap::Command {
    raw::Cli::command()
}

/// A flag's `-h` line and the rest of its doc as one paragraph in `--help`:
/// the line is its first sentence, not a title.
fn one_paragraph(arg: clap::Arg) -> clap::Arg {
    match arg.get_long_help().map(ToString::to_string) {
        Some(long) if long.contains("\n\n") => arg.long_help(long.replace("\n\n", " ")),
        _ => arg,
    }
}

/// `cmd` with the long help of its subcommand `name` laid out for `width`: its
/// flags' whole docs and its reference. Done for the one command shown, as every
/// command line passes here and the rest would cost each start.
pub fn with_long_help(cmd: clap::Command, name: &str, width: usize) -> clap::Command {
    if cmd.find_subcommand(name).is_none() {
        return cmd;
    }
    cmd.mut_subcommand(name, |sub| {
        let sub = sub.mut_args(one_paragraph);
        match help::page(name) {
            Some(text) => sub.after_long_help(help::render(text, width)),
            None => sub,
        }
    })
}

/// clap's command tree with every command's long help laid out for `width`.
#[cfg(test)]
pub fn command(width: usize) -> clap::Command {
    let root = definitions().term_width(width);
    let names: Vec<String> = root.get_subcommands().map(|s| s.get_name().to_string()).collect();
    names
        .iter()
        .fold(root, |cmd, name| with_long_help(cmd, name, width))
}

/// Parse a whole command line (the program's name first): the variant grammar,
/// then clap, then the checks.
pub fn parse<I, S>(args: I) -> Result<Command, Error>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut args: Vec<String> = args.into_iter().map(Into::into).collect();
    // `lambda serve` is its own command (its flags are not lambda's), spelled
    // `lambda-serve` to clap.
    // So is `lambda setup`.
    if args.get(1).is_some_and(|a| a == "lambda") {
        match args.get(2).map(String::as_str) {
            Some("serve") => drop(args.splice(1..3, ["lambda-serve".to_string()])),
            Some("setup") => drop(args.splice(1..3, ["lambda-setup".to_string()])),
            _ => {}
        }
    }
    let name = args.get(1).cloned().unwrap_or_default();
    let split = variants::split(&name, args.get(2..).unwrap_or_default()).map_err(Error::Usage)?;
    let clap_args = args.iter().take(2).cloned().chain(split.globals.iter().cloned());
    let width = help_width();
    let mut cmd = definitions().term_width(width);
    // Only `--help` (or `help COMMAND`) shows the long help.
    if name == "help" {
        cmd = with_long_help(cmd, args.get(2).map_or("", String::as_str), width);
    } else if args.iter().any(|a| a == "--help") {
        cmd = with_long_help(cmd, &name, width);
    }
    let matches = cmd.try_get_matches_from(clap_args)?;
    let cli = raw::Cli::from_arg_matches(&matches)?;
    checked::check(cli.command, split).map_err(Error::Usage)
}

#[cfg(test)]
mod tests;
