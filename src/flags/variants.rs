//! The variant grammar, in one place: `--name A [OPTIONS] -- COMMAND --name B …`
//! (bench, explain A vs B), `--name A [OPTIONS] --name B …` (lambda), and the
//! command after `--` (bench, explain, tune). clap cannot express "argv until the
//! next --name", so the blocks are cut here and each block's options are parsed
//! by clap; what comes before the first block is left to clap.

use super::raw::{LambdaVariantArgs, VariantArgs};
use clap::Parser;

#[derive(Parser, Debug)]
#[command(no_binary_name = true)]
struct VariantCli {
    #[arg(long)]
    name: String,
    #[command(flatten)]
    args: VariantArgs,
}

#[derive(Parser, Debug)]
#[command(no_binary_name = true)]
struct LambdaVariantCli {
    #[arg(long)]
    name: String,
    #[command(flatten)]
    args: LambdaVariantArgs,
}

/// One variant of bench (or one build of explain): its name, its own options, its command.
#[derive(Debug, Clone)]
pub struct VariantSpec {
    pub name: Option<String>,
    pub args: VariantArgs,
    pub argv: Vec<String>,
}

/// One variant of lambda.
#[derive(Debug, Clone)]
pub struct LambdaVariantSpec {
    pub name: String,
    pub args: LambdaVariantArgs,
}

/// What the grammar cut out of a command's arguments.
#[derive(Debug, Default)]
pub struct Split {
    /// The arguments for clap: everything before the first variant or `--`.
    pub globals: Vec<String>,
    /// bench's and explain's variants; an unnamed one is the command after `--`.
    pub variants: Vec<VariantSpec>,
    pub lambda: Vec<LambdaVariantSpec>,
}

/// Cut `command`'s arguments (those after its name): the one entry point of the
/// grammar. Commands without one keep their arguments whole.
pub fn split(command: &str, args: &[String]) -> Result<Split, String> {
    match command {
        "bench" | "explain" => {
            let (globals, variants) = split_bench_args(args)?;
            Ok(Split {
                globals,
                variants,
                ..Split::default()
            })
        }
        "lambda" | "lambda-serve" => {
            let (globals, lambda) = split_lambda_args(args)?;
            Ok(Split {
                globals,
                lambda,
                ..Split::default()
            })
        }
        "tune" => {
            // No variants of its own (the catalogue's candidates are): only the command.
            let (globals, command) = match args.iter().position(|a| a == "--") {
                Some(sep) => (args[..sep].to_vec(), Some(args[sep + 1..].to_vec())),
                None => (args.to_vec(), None),
            };
            Ok(Split {
                globals,
                variants: command
                    .map(|argv| VariantSpec {
                        name: None,
                        args: VariantArgs::default(),
                        argv,
                    })
                    .into_iter()
                    .collect(),
                ..Split::default()
            })
        }
        _ => Ok(Split {
            globals: args.to_vec(),
            ..Split::default()
        }),
    }
}

fn is_name(a: &String) -> bool {
    a == "--name" || a.starts_with("--name=")
}

/// Split raw `lambda` arguments at each `--name`: global options first, then one
/// block per variant, each parsed by clap.
pub fn split_lambda_args(args: &[String]) -> Result<(Vec<String>, Vec<LambdaVariantSpec>), String> {
    let Some(first) = args.iter().position(is_name) else {
        return Ok((args.to_vec(), Vec::new()));
    };
    let mut specs = Vec::new();
    let mut i = first;
    while i < args.len() {
        let end = args[i + 1..]
            .iter()
            .position(is_name)
            .map_or(args.len(), |p| p + i + 1);
        let parsed = LambdaVariantCli::try_parse_from(&args[i..end]).map_err(|e| variant_error(&e))?;
        specs.push(LambdaVariantSpec {
            name: parsed.name,
            args: parsed.args,
        });
        i = end;
    }
    Ok((args[..first].to_vec(), specs))
}

/// A variant block's clap error in one line (the caller adds `error:`): an
/// option that is not per-variant says where it belongs.
fn variant_error(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::UnknownArgument {
        if let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) {
            let flag = arg.split('=').next().unwrap_or(arg);
            return format!(
                "{flag} is not a per-variant option: options for all variants go before the first --name"
            );
        }
    }
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

/// Split raw `bench` arguments: global options, then variant blocks
/// (`--name NAME [OPTIONS] -- COMMAND...`, each until the next `--name`), or
/// one unnamed variant: everything after `--`, verbatim.
pub fn split_bench_args(args: &[String]) -> Result<(Vec<String>, Vec<VariantSpec>), String> {
    let first = args.iter().position(|a| a == "--" || is_name(a));
    let Some(first) = first else {
        return Ok((args.to_vec(), Vec::new()));
    };
    let globals = args[..first].to_vec();
    let rest = &args[first..];
    if rest[0] == "--" {
        return Ok((
            globals,
            vec![VariantSpec {
                name: None,
                args: VariantArgs::default(),
                argv: rest[1..].to_vec(),
            }],
        ));
    }
    let mut specs = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        // An image's (or pod's) variant needs no command: its block may end at the next --name.
        let next_name = rest[i + 1..].iter().position(is_name).map(|p| p + i + 1);
        let next_sep = rest[i..].iter().position(|a| a == "--").map(|p| p + i);
        let options_only = match (next_name, next_sep) {
            (Some(n), Some(s)) => n < s,
            (None, None) => true,
            (Some(_), None) => true,
            (None, Some(_)) => false,
        };
        if options_only {
            let end = next_name.unwrap_or(rest.len());
            let image = |a: &String| {
                ["--image", "--pod"]
                    .iter()
                    .any(|f| a == f || a.starts_with(&format!("{f}=")))
            };
            if !rest[i..end].iter().any(image) {
                return Err(format!(
                    "variant starting at `{}` has no `--` before its command",
                    rest[i..end].join(" ")
                ));
            }
            let parsed = VariantCli::try_parse_from(&rest[i..end]).map_err(|e| variant_error(&e))?;
            specs.push(VariantSpec {
                name: Some(parsed.name),
                args: parsed.args,
                argv: Vec::new(),
            });
            i = end;
            continue;
        }
        let sep = rest[i..]
            .iter()
            .position(|a| a == "--")
            .map(|p| p + i)
            .ok_or_else(|| {
                format!(
                    "variant starting at `{}` has no `--` before its command",
                    rest[i..].join(" ")
                )
            })?;
        let parsed = VariantCli::try_parse_from(&rest[i..sep]).map_err(|e| variant_error(&e))?;
        let end = rest[sep + 1..]
            .iter()
            .position(is_name)
            .map(|p| p + sep + 1)
            .unwrap_or(rest.len());
        let argv = rest[sep + 1..end].to_vec();
        if argv.is_empty() && parsed.args.container.image.is_none() && parsed.args.container.pod.is_none() {
            return Err(format!("variant '{}' has no command after `--`", parsed.name));
        }
        specs.push(VariantSpec {
            name: Some(parsed.name),
            args: parsed.args,
            argv,
        });
        i = end;
    }
    Ok((globals, specs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn single_variant_keeps_argv_verbatim() {
        let (g, v) = split_bench_args(&s(&["--runs", "5", "--", "prog", "--name", "x"])).unwrap();
        assert_eq!(g, s(&["--runs", "5"]));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].argv, s(&["prog", "--name", "x"]));
    }

    #[test]
    fn named_variants_split_at_name() {
        let (g, v) = split_bench_args(&s(&[
            "--ready", "exit", "--name", "a", "--env", "K=1", "--", "./a", "-x", "--name", "b", "--", "./b",
        ]))
        .unwrap();
        assert_eq!(g, s(&["--ready", "exit"]));
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].name.as_deref(), Some("a"));
        assert_eq!(v[0].args.env, s(&["K=1"]));
        assert_eq!(v[0].argv, s(&["./a", "-x"]));
        assert_eq!(v[1].argv, s(&["./b"]));
    }

    #[test]
    fn lambda_variants_split_at_name() {
        let (g, v) = split_lambda_args(&s(&[
            "--runtime",
            "./bootstrap",
            "--runs",
            "3",
            "--name",
            "v98",
            "--extensions",
            "./v98",
            "--name",
            "new",
            "--extensions",
            "./new",
            "--memory",
            "128,512",
        ]))
        .unwrap();
        assert_eq!(g, s(&["--runtime", "./bootstrap", "--runs", "3"]));
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].name, "v98");
        assert_eq!(v[1].args.memory, [128, 512]);
        let e = split_lambda_args(&s(&["--name", "a", "--runs", "3"])).unwrap_err();
        assert_eq!(
            e,
            "--runs is not a per-variant option: options for all variants go before the first --name"
        );
    }

    #[test]
    fn missing_separator_is_an_error() {
        let e = split_bench_args(&s(&["--name", "a", "./a"])).unwrap_err();
        assert!(e.contains("no `--`"), "{e}");
        let e = split_bench_args(&s(&["--name", "a", "--"])).unwrap_err();
        assert!(e.contains("no command"), "{e}");
    }

    /// Every error of the grammar is one line that names what is wrong.
    #[test]
    fn grammar_errors_are_one_clear_line() {
        let cases: &[(&str, &[&str], &str)] = &[
            (
                "bench",
                &["--name", "a", "./a"],
                "variant starting at `--name a ./a` has no `--`",
            ),
            (
                "bench",
                &["--name", "a", "--"],
                "variant 'a' has no command after `--`",
            ),
            (
                "bench",
                &["--name", "a", "--runs", "3", "--", "true"],
                "--runs is not a per-variant option: options for all variants go before the first --name",
            ),
            (
                "explain",
                &["--name", "a", "--profile", "--", "true"],
                "--profile is not a per-variant option",
            ),
            (
                "bench",
                &["--name", "a", "--cpus", "--", "true"],
                "a value is required for '--cpus <N>'",
            ),
            (
                "lambda",
                &["--name", "a", "--memory", "big"],
                "invalid value 'big' for '--memory <MB>'",
            ),
            (
                "lambda",
                &["--name", "a", "--order", "x"],
                "--order is not a per-variant option",
            ),
            (
                "bench",
                &["--name", "--", "true"],
                "a value is required for '--name <NAME>'",
            ),
        ];
        for (command, args, expected) in cases {
            let e = split(command, &s(args)).unwrap_err();
            assert!(e.starts_with(expected), "{command} {args:?}: {e}");
            assert_eq!(e.lines().count(), 1, "{command} {args:?}: {e}");
        }
    }

    #[test]
    fn tune_takes_only_the_command() {
        let sp = split("tune", &s(&["--list", "--", "java", "--name", "x"])).unwrap();
        assert_eq!(sp.globals, s(&["--list"]));
        assert_eq!(sp.variants.len(), 1);
        assert_eq!(sp.variants[0].argv, s(&["java", "--name", "x"]));
        // `--name` before `--` is not tune's: clap refuses it as today.
        let sp = split("tune", &s(&["--name", "x", "--", "a"])).unwrap();
        assert_eq!(sp.globals, s(&["--name", "x"]));
        let sp = split("history", &s(&["--", "x"])).unwrap();
        assert_eq!(sp.globals, s(&["--", "x"]));
    }
}
