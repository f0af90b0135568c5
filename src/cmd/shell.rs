//! `coldstart completions SHELL` and `coldstart man`: generated from the clap
//! definitions, so they list every command and flag the binary has.

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use anyhow::{bail, Context, Result};
use clap::CommandFactory;

pub fn completions(args: &CompletionsArgs) -> Result<i32> {
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "coldstart", &mut buf);
    crate::out::bytes(&buf)?;
    Ok(0)
}

/// The main page, or one command's (named `coldstart-COMMAND(1)`, as the main
/// page's list of commands refers to it).
pub fn man(args: &ManArgs) -> Result<i32> {
    let mut root = Cli::command();
    // Built, so clap's own `help` command (which the main page lists too) is there.
    root.build();
    let page = match &args.command {
        None => root,
        Some(name) => {
            let names: Vec<String> = root.get_subcommands().map(|c| c.get_name().to_string()).collect();
            let Some(sub) = root.find_subcommand(name).cloned() else {
                bail!("no command `{name}`: give one of {}", names.join(", "));
            };
            // clap_mangen titles a page by the command's name: coldstart-bench.
            sub.display_name(format!("coldstart-{name}"))
        }
    };
    let mut buf = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut buf)
        .context("rendering the man page")?;
    crate::out::bytes(&buf)?;
    Ok(0)
}
