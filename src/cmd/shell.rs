//! `coldstart completions SHELL` and `coldstart man`: generated from the clap
//! definitions, so they list every command and flag the binary has.

use crate::cli::{Cli, CompletionsArgs};
use anyhow::{Context, Result};
use clap::CommandFactory;

pub fn completions(args: &CompletionsArgs) -> Result<i32> {
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "coldstart", &mut buf);
    coldstart::out::bytes(&buf)?;
    Ok(0)
}

pub fn man() -> Result<i32> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut buf)
        .context("rendering the man page")?;
    coldstart::out::bytes(&buf)?;
    Ok(0)
}
