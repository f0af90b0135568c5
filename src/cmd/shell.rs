//! `coldstart completions SHELL` and `coldstart man`: generated from the clap
//! definitions, so they list every command and flag the binary has.

use crate::flags::{self, CompletionsArgs, ManArgs};
use anyhow::{bail, Context, Result};

pub fn completions(args: &CompletionsArgs) -> Result<i32> {
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut flags::definitions(), "coldstart", &mut buf);
    coldstart_core::out::bytes(&buf)?;
    Ok(0)
}

/// The main page, or one command's (named `coldstart-COMMAND(1)`, as the main
/// page's list of commands refers to it), with the command's reference (the
/// end of its `--help`) as sections of their own.
pub fn man(args: &ManArgs) -> Result<i32> {
    // The flags' whole docs, as `--help` shows them (the width is roff's business).
    let mut root = match &args.command {
        Some(name) => flags::with_long_help(flags::definitions(), name, flags::help_width()),
        None => flags::definitions(),
    };
    // Built, so clap's own `help` command (which the main page lists too) is there.
    root.build();
    let (page, reference) = match &args.command {
        None => (root, None),
        Some(name) => {
            let names: Vec<String> = root.get_subcommands().map(|c| c.get_name().to_string()).collect();
            let Some(sub) = root.find_subcommand(name).cloned() else {
                bail!("no command `{name}`: give one of {}", names.join(", "));
            };
            // clap_mangen titles a page by the command's name: coldstart-bench.
            (
                sub.display_name(format!("coldstart-{name}")),
                flags::help::page(name),
            )
        }
    };
    let has_options = page.get_arguments().any(|a| !a.is_hide_set());
    let has_commands = page.get_subcommands().any(|c| !c.is_hide_set());
    // The subcommands' pages carry no version (clap_mangen would panic on one).
    let has_version = page.get_version().is_some() || page.get_long_version().is_some();
    let man = clap_mangen::Man::new(page);
    let mut buf = Vec::new();
    let rendered: std::io::Result<()> = (|| {
        man.render_title(&mut buf)?;
        man.render_name_section(&mut buf)?;
        man.render_synopsis_section(&mut buf)?;
        man.render_description_section(&mut buf)?;
        if has_options {
            man.render_options_section(&mut buf)?;
        }
        if has_commands {
            man.render_subcommands_section(&mut buf)?;
        }
        if let Some(text) = reference {
            buf.extend_from_slice(flags::help::roff(text).as_bytes());
        }
        if has_version {
            man.render_version_section(&mut buf)?;
        }
        Ok(())
    })();
    rendered.context("rendering the man page")?;
    coldstart_core::out::bytes(&buf)?;
    Ok(0)
}
