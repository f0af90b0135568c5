//! Output that fits an 80-column terminal: real bench, explain, show, compare and
//! history reports at COLUMNS=80 have no line wider than 80; a wide terminal keeps
//! every column; each comparison has its verdict in plain words; help lists every
//! probe and --name and never wraps an example mid-command; completions and the
//! man page are generated.

use crate::common::*;

fn with_columns(cols: &str, cmd: &mut Cs) -> Out {
    cmd.env("COLUMNS", cols).run()
}

fn ok80(cmd: &mut Cs) -> String {
    let o = with_columns("80", cmd);
    o.assert_ok();
    let text = stdout(&o);
    for line in text.lines() {
        assert!(
            line.chars().count() <= 80,
            "{}: a line of {} columns:\n{line}\n\n{text}",
            cmd.line(),
            line.chars().count()
        );
    }
    text
}

#[test]
fn real_reports_fit_80_columns_and_say_the_verdict_in_words() {
    let _turn = crate::common::beside();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let py = python_exe();
    let bench = [
        "bench",
        "--store",
        &store,
        "--runs",
        "12",
        "--name",
        "plain",
        "--",
        &py,
        "-c",
        "pass",
        "--name",
        "json",
        "--",
        &py,
        "-c",
        "import json",
    ];
    let text = ok80(cs(&bench).quiet());
    assert!(text.contains("left out to fit the terminal"), "{text}");
    // Under the Δ line (wrapped or not), the same in words, before the power line.
    let after = &text[text.find("Δ json vs plain").expect("Δ line")..];
    let after = &after[..after.find("could detect").unwrap_or(after.len())];
    let flat = after.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("json starts ") || flat.contains("no significant difference between json and plain"),
        "{text}"
    );
    ok80(
        cs(&[
            "explain",
            "--store",
            &store,
            "--runs",
            "2",
            "--ready",
            "exit",
            "--",
            &py,
            "-c",
            "import json",
        ])
        .quiet(),
    );
    ok80(&mut cs(&["show", "--store", &store, "1"]));
    ok80(&mut cs(&["show", "--store", &store, "2"]));
    ok80(&mut cs(&["compare", "--store", &store, "1:plain", "1:json"]));
    ok80(&mut cs(&["history", "--store", &store]));

    // A wide terminal keeps every column.
    let o = with_columns("200", &mut cs(&["show", "--store", &store, "1"]));
    let wide = stdout(&o);
    assert!(wide.contains("mean ± sd") && wide.contains("p99"), "{wide}");
    assert!(!wide.contains("left out"), "{wide}");
}

#[test]
fn help_lists_every_probe_and_name_and_never_wraps_an_example() {
    let _turn = crate::common::beside();
    let bench = ok80(&mut cs(&["bench", "--help"]));
    for needle in [
        "listen",
        "https://",
        "--name <NAME>",
        "tcp:[HOST:]PORT",
        "log:REGEX",
        "file:PATH",
    ] {
        assert!(bench.contains(needle), "bench --help lacks {needle}");
    }
    assert!(ok80(&mut cs(&["lambda", "--help"])).contains("--name <NAME>"));
    for cmd in [
        "bench",
        "explain",
        "lambda",
        "gate",
        "compare",
        "report",
        "history",
        "show",
        "demo",
        "completions",
    ] {
        let help = ok80(&mut cs(&[cmd, "--help"]));
        let Some(at) = help.find("\nEXAMPLES\n") else {
            continue;
        };
        let mut continued = false;
        for line in help[at + 10..].lines().take_while(|l| !l.is_empty()) {
            let t = line.trim_start();
            assert!(
                continued || t.starts_with("coldstart ") || t.starts_with('#') || t.starts_with('('),
                "{cmd} --help: an example wrapped mid-command: {line:?}\n{help}"
            );
            continued = line.ends_with('\\');
        }
    }
}

#[test]
fn completions_and_man_page() {
    let _turn = crate::common::beside();
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef coldstart"),
        ("fish", "complete -c coldstart"),
    ] {
        let o = cs(&["completions", shell]).run();
        assert!(o.status.success(), "{}", stderr(&o));
        let s = stdout(&o);
        assert!(s.contains(marker), "{shell}: {s}");
        assert!(
            s.contains("report") && s.contains("export-html"),
            "{shell} completes every command and flag"
        );
    }
    let o = cs(&["man"]).run();
    assert!(o.status.success(), "{}", stderr(&o));
    let man = stdout(&o);
    assert!(man.contains(".TH coldstart"), "{man}");
    assert!(
        man.contains("bench") && man.contains("report"),
        "subcommands in the man page"
    );
    // Every page the main page refers to (`coldstart\-bench(1)` …) is generated.
    let refs: Vec<String> = man
        .split("coldstart\\-")
        .skip(1)
        .filter_map(|rest| rest.split_once("(1)").map(|(name, _)| name.to_string()))
        .filter(|name| name.chars().all(|c| c.is_ascii_lowercase()))
        .collect();
    assert!(
        refs.len() >= 10,
        "the main page lists the commands' pages: {refs:?}"
    );
    for name in &refs {
        let o = cs(&["man", name]).run();
        assert!(o.status.success(), "coldstart man {name}: {}", stderr(&o));
        assert!(
            stdout(&o).contains(&format!(".TH coldstart-{name} 1")),
            "coldstart man {name}"
        );
    }
    let o = cs(&["man", "nope"]).run();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no command `nope`"), "{}", stderr(&o));
    let o = cs(&["completions", "tcsh"]).run();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("tcsh"), "{}", stderr(&o));
}

/// `-h` is the short list: one line per flag, every flag there, within 80
/// columns; `--help` adds the reference, laid out for the width it is given.
#[test]
fn short_help_is_one_line_per_flag_and_long_help_fills_the_width() {
    let _turn = crate::common::beside();
    for cmd in [
        "bench", "explain", "lambda", "tune", "gate", "compare", "show", "report", "history",
    ] {
        let short = ok80(&mut cs(&[cmd, "-h"]));
        let long = ok80(&mut cs(&[cmd, "--help"]));
        let at = short.find("\nOptions:\n").expect("an Options section");
        for line in short[at..].lines().skip(2).filter(|l| !l.is_empty()) {
            assert!(
                line.trim_start().starts_with('-'),
                "{cmd} -h: a flag's help wrapped: {line:?}\n{short}"
            );
        }
        // Every flag --help lists (a line of its own: `  -r, --runs <RUNS>` or
        // `      --name <NAME>`) is in -h too.
        let flag_lines = long.lines().filter(|l| {
            (l.starts_with("      --") && !l.starts_with("       "))
                || (l.starts_with("  -") && l.get(4..8) == Some(", --"))
        });
        for flag in flag_lines.filter_map(|l| l.split([' ', ',']).find(|w| w.starts_with("--"))) {
            assert!(short.contains(flag), "{cmd} -h lacks {flag}\n{short}");
        }
        assert!(
            short.lines().count() * 2 < long.lines().count(),
            "{cmd} -h is short"
        );
    }
    // The prose is wrapped for the terminal, not in the source: wider, fewer lines.
    let at = |cols: &str| {
        stdout(&with_columns(cols, &mut cs(&["bench", "--help"])))
            .lines()
            .count()
    };
    assert!(at("120") < at("80"), "{} vs {}", at("120"), at("80"));
    for line in stdout(&with_columns("120", &mut cs(&["bench", "--help"]))).lines() {
        assert!(line.chars().count() <= 120, "{line}");
    }
    // Piped without COLUMNS: clap's default width, still whole examples.
    let piped = stdout(&cs(&["bench", "--help"]).env_remove("COLUMNS").run());
    assert!(
        piped.contains("\n  coldstart bench --ready exit -- python3 -c 'import json'\n"),
        "{piped}"
    );
}

/// A command's man page carries its reference as sections of its own.
#[test]
fn man_pages_carry_each_commands_reference() {
    let _turn = crate::common::beside();
    for (name, section) in [
        ("bench", ".SH \"READINESS (\\-\\-ready)\""),
        ("explain", ".SH \"TRUE TIMES\""),
        ("lambda", ".SH \"MANAGED RUNTIMES\""),
        ("gate", ".SH \"DECISION\""),
        ("tune", ".SH \"CANDIDATES\""),
    ] {
        let o = cs(&["man", name]).run();
        assert!(o.status.success(), "coldstart man {name}: {}", stderr(&o));
        let page = stdout(&o);
        assert!(
            page.contains(section),
            "coldstart man {name} lacks {section}:\n{page}"
        );
        assert!(
            page.contains(".SH \"EXAMPLES\"\n.PP\n.nf\n"),
            "{name}: examples unfilled"
        );
    }
}
