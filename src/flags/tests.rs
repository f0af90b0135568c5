//! The command line as users meet it: `-h` short and complete, `--help` laid out
//! for the terminal, one export group, the grammar's variants in the options.

use super::*;

fn argv(args: &[&str]) -> Vec<String> {
    std::iter::once("coldstart")
        .chain(args.iter().copied())
        .map(String::from)
        .collect()
}

fn parsed(args: &[&str]) -> Command {
    parse(argv(args)).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn usage_error(args: &[&str]) -> String {
    match parse(argv(args)) {
        Err(Error::Usage(msg)) => msg,
        other => panic!("{args:?}: expected a usage error, got {other:?}"),
    }
}

/// Each command's `-h` at `width`, and the long flags it must list.
fn short_helps(width: usize) -> Vec<(String, String, Vec<String>)> {
    let mut root = command(width);
    root.build();
    root.get_subcommands_mut()
        // clap's own `help` command has nothing to list.
        .filter(|sub| sub.get_name() != "help")
        .map(|sub| {
            let flags = sub
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
                .collect();
            (sub.get_name().to_string(), sub.render_help().to_string(), flags)
        })
        .collect()
}

#[test]
fn short_help_is_one_line_per_flag_and_fits_80_columns() {
    for width in [80, 120] {
        for (name, help, flags) in short_helps(width) {
            for line in help.lines() {
                let w = unicode_width::UnicodeWidthStr::width(line);
                assert!(
                    w <= width,
                    "{name} -h at {width}: a line of {w} columns:\n{line}\n\n{help}"
                );
            }
            // Below a section title every line is a flag's: a help that wrapped
            // would continue on a line that starts with spaces only.
            let options = &help[help.find("\nOptions:\n").expect("an Options section")..];
            for line in options
                .lines()
                .skip(2)
                .filter(|l| !l.is_empty() && !l.ends_with(':'))
            {
                let t = line.trim_start();
                assert!(
                    t.starts_with('-') || t.starts_with('<') || t.starts_with('['),
                    "{name} -h at {width}: a flag's help wrapped: {line:?}\n\n{help}"
                );
            }
            for flag in flags {
                assert!(
                    help.lines()
                        .any(|l| l.trim_start().split([',', ' ']).any(|w| w == flag)),
                    "{name} -h lacks {flag}:\n{help}"
                );
            }
            assert!(
                !help.contains("EXAMPLES"),
                "{name} -h is short: the reference is --help's"
            );
        }
    }
}

#[test]
fn the_list_of_commands_is_one_line_each() {
    let help = command(80).render_help().to_string();
    let at = help.find("\nCommands:\n").expect("a Commands section");
    for line in help[at..].lines().skip(2).take_while(|l| !l.is_empty()) {
        assert!(
            !line.starts_with("   "),
            "a command's line wrapped: {line:?}\n{help}"
        );
        assert!(line.chars().count() <= 80, "{line}");
    }
}

#[test]
fn long_help_carries_the_reference_wrapped_to_the_width() {
    for width in [80, 120] {
        let mut root = command(width);
        root.build();
        for (name, _) in help::PAGES {
            let sub = root.find_subcommand_mut(name).expect("a command with a page");
            let long = sub.render_long_help().to_string();
            assert!(
                long.contains("\nEXAMPLES\n") || long.contains("\nREFERENCES\n"),
                "{name}"
            );
            for line in long.lines() {
                let w = unicode_width::UnicodeWidthStr::width(line);
                assert!(
                    w <= width,
                    "{name} --help at {width}: a line of {w} columns:\n{line}"
                );
            }
        }
    }
    // Prose fills the width it has: at 120 the bench reference is shorter.
    let lines = |w: usize| {
        let mut root = command(w);
        root.build();
        let sub = root.find_subcommand_mut("bench").expect("bench");
        sub.render_long_help().to_string().lines().count()
    };
    assert!(lines(120) < lines(80), "{} vs {}", lines(120), lines(80));
}

#[test]
fn variants_arrive_in_the_checked_options() {
    let Command::Bench(b) = parsed(&[
        "bench", "-r", "3", "--name", "a", "-e", "K=1", "--", "./a", "--name", "b", "--", "./b",
    ]) else {
        panic!("bench")
    };
    assert_eq!(b.runs, Some(3));
    assert_eq!(b.variants.len(), 2);
    assert_eq!(b.variants[0].args.env, ["K=1"]);
    assert_eq!(b.variants[1].argv, ["./b"]);

    let Command::Explain(e) = parsed(&["explain", "--ready", "exit", "--", "python3", "--name", "x"]) else {
        panic!("explain")
    };
    assert_eq!(e.command, ["python3", "--name", "x"]);
    assert!(e.variants.is_empty());
    let Command::Explain(e) = parsed(&["explain", "--name", "A", "--", "./a", "--name", "B", "--", "./b"])
    else {
        panic!("explain")
    };
    assert!(e.command.is_empty());
    assert_eq!(e.variants.len(), 2);

    let Command::Tune(t) = parsed(&["tune", "--list", "--", "node", "server.js"]) else {
        panic!("tune")
    };
    assert_eq!(t.command, ["node", "server.js"]);

    let Command::Lambda(l) = parsed(&["lambda", "--runtime", "./b", "--name", "x", "--memory", "128,512"])
    else {
        panic!("lambda")
    };
    assert_eq!(l.variants[0].args.memory, [128, 512]);
    assert_eq!(l.shared.runtime.as_deref(), Some(std::path::Path::new("./b")));
}

#[test]
fn one_export_group_with_the_formats_each_command_writes() {
    let Command::Gate(g) = parsed(&["gate", "--max", "1s", "--markdown", "g.md"]) else {
        panic!("gate")
    };
    assert_eq!(
        g.export.export_markdown.as_deref(),
        Some(std::path::Path::new("g.md"))
    );
    let Command::Gate(g) = parsed(&["gate", "--max", "1s", "--export-markdown", "g.md"]) else {
        panic!("gate")
    };
    assert_eq!(
        g.export.export_markdown.as_deref(),
        Some(std::path::Path::new("g.md"))
    );
    let Command::Compare(c) = parsed(&["compare", "1", "2", "--export-json", "c.json"]) else {
        panic!("compare")
    };
    assert!(c.export.export_json.is_some());
    for (args, flag) in [
        (&["gate", "--export-json", "x"][..], "gate has no --export-json"),
        (
            &["compare", "1", "2", "--export-csv", "x"][..],
            "compare has no --export-csv",
        ),
        (
            &["tune", "--export-csv", "x", "--", "t"][..],
            "tune has no --export-csv",
        ),
        (
            &["explain", "--export-markdown", "x", "--", "t"][..],
            "explain has no --export-markdown",
        ),
    ] {
        let e = usage_error(args);
        assert!(e.starts_with(flag), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1);
    }
}

#[test]
fn grammar_errors_come_back_as_one_line() {
    let e = usage_error(&["bench", "--name", "a", "--runs", "3", "--", "true"]);
    assert_eq!(
        e,
        "--runs is not a per-variant option: options for all variants go before the first --name"
    );
    let e = usage_error(&["explain", "--name", "a", "./a"]);
    assert!(e.contains("no `--` before its command"), "{e}");
}

#[test]
fn times_are_seconds_or_durations_wherever_a_time_is_asked() {
    let Command::Tune(t) = parsed(&["tune", "--budget", "20m", "--list", "--", "node", "server.js"]) else {
        panic!("tune")
    };
    assert_eq!(t.budget, 1200.0);
    let Command::Bench(b) = parsed(&["bench", "--timeout", "1m30s", "--grace", "500ms", "--", "true"]) else {
        panic!("bench")
    };
    assert_eq!((b.timeout, b.grace), (Some(90.0), 0.5));
    let Command::Bench(b) = parsed(&["bench", "--timeout", "2.5", "--", "true"]) else {
        panic!("bench")
    };
    assert_eq!(b.timeout, Some(2.5));
    let Err(Error::Clap(e)) = parse(argv(&["bench", "--timeout", "soon", "--", "true"])) else {
        panic!("a bad time was accepted")
    };
    assert!(e.to_string().contains("'soon' is not a time"), "{e}");
}
