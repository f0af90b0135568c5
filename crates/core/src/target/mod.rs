//! What is started (Target) and when a run counts as started (Readiness).
//! Parsing lives here so every bad input is rejected before the first spawn.

pub mod container;

use anyhow::{anyhow, bail, Context, Result};
use regex::Regex;
use std::fmt;
use std::path::{Path, PathBuf};

/// One program to cold-start: argv (no shell), extra env, cwd.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Target {
    /// argv[0] as the user wrote it.
    pub argv: Vec<String>,
    /// Resolved absolute path of argv[0] (PATH lookup done once, up front).
    pub program: PathBuf,
    /// Variables added to (or overriding) coldstart's own environment.
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// --cpus/--cpuset/--memory: applied to the whole tree from its first instruction.
    #[serde(default, skip_serializing_if = "crate::limits::Limits::is_none")]
    pub limits: crate::limits::Limits,
    /// A container image run through its engine (`--image`): argv is then the
    /// engine's `run` command line, and each run names its own container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<Box<container::Container>>,
}

/// The value of `key` the target will see: its own setting (the last one wins),
/// else the one it inherits from our environment.
pub fn effective_var(target_env: &[(String, String)], key: &str) -> Option<String> {
    target_env
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var(key).ok())
}

impl Target {
    pub fn new(argv: Vec<String>, env: Vec<(String, String)>, cwd: Option<PathBuf>) -> Result<Self> {
        let first = argv
            .first()
            .ok_or_else(|| anyhow!("no command given: put the program and its arguments after `--`"))?;
        let path_env = effective_var(&env, "PATH").unwrap_or_default();
        let program = resolve_program(first, &path_env, cwd.as_deref())?;
        if let Some(dir) = &cwd {
            if !dir.is_dir() {
                bail!("working directory {} does not exist: fix --cwd", dir.display());
            }
        }
        Ok(Target {
            argv,
            program,
            env,
            cwd,
            limits: Default::default(),
            container: None,
        })
    }

    /// A container of `container`'s image, `env` set inside it, `command`
    /// (empty: the image's own) as its command.
    pub fn container(
        container: container::Container,
        env: &[(String, String)],
        command: &[String],
    ) -> Target {
        Target {
            argv: container.base_argv(env, command),
            program: container.engine.path.clone(),
            env: Vec::new(),
            cwd: None,
            limits: Default::default(),
            container: Some(Box::new(container)),
        }
    }

    /// The same target under `limits`.
    pub fn with_limits(mut self, limits: crate::limits::Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The command line as a person would type it (for tables and errors).
    pub fn display_command(&self) -> String {
        shell_join(&self.argv)
    }
}

/// Quote one word for a POSIX shell only when it needs it.
pub fn shell_quote(a: &str) -> String {
    if !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// Words joined into a command line a person can paste into a shell.
pub fn shell_join<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| shell_quote(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Find the executable the way execvp would, so a typo is one clear error up front
/// and each spawn can use an absolute path (keeping std on its posix_spawn path).
pub(crate) fn resolve_program(name: &str, path_env: &str, cwd: Option<&Path>) -> Result<PathBuf> {
    let is_exec = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if name.contains('/') {
        let p = match cwd {
            Some(dir) if Path::new(name).is_relative() => dir.join(name),
            _ => PathBuf::from(name),
        };
        if !p.exists() {
            bail!("command not found: {name} (no such file; check the path after `--`)");
        }
        if !is_exec(&p) {
            bail!("{name} is not an executable file: check the path or `chmod +x` it");
        }
        return std::fs::canonicalize(&p).with_context(|| format!("resolving {name}"));
    }
    for dir in path_env.split(':').filter(|d| !d.is_empty()) {
        let candidate = Path::new(dir).join(name);
        if is_exec(&candidate) {
            return Ok(candidate);
        }
    }
    bail!("command not found: {name} (not in PATH; give a path such as ./{name})")
}

/// How `coldstart lambda` variants show (and are stored) as their readiness: the
/// end of an emulated Lambda init, which no probe of a plain run can see.
pub const LAMBDA_INIT: &str = "lambda:init";

/// argv[0] of a `coldstart lambda --aws` variant's target: a deployed function,
/// measured on the service (its argv[1] names the function).
pub const LAMBDA_SERVICE: &str = "aws:lambda";

/// When a run counts as started.
#[derive(Debug, Clone)]
pub enum Readiness {
    /// The process exits (with any status; a non-zero status is recorded).
    Exit,
    /// A TCP connect to host:port succeeds.
    Tcp { host: String, port: u16 },
    /// A GET returns 2xx/3xx; the time includes receiving the whole response.
    Http { url: url::Url },
    /// A line on stdout or stderr matches; named groups are captured.
    Log { regex: Regex },
    /// The file exists.
    File { path: PathBuf },
    /// The target calls listen(2) (LD_PRELOAD shim; the tracer for static binaries).
    Listen,
}

/// An `https://` URL needs the `https` cargo feature (ureq with rustls); a build
/// without it refuses one at plan time instead of failing every probe.
pub fn https_supported(url: &url::Url) -> Result<()> {
    https_check(url, cfg!(feature = "https"))
}

fn https_check(url: &url::Url, built_with_https: bool) -> Result<()> {
    if url.scheme() == "https" && !built_with_https {
        bail!(
            "{url}: this coldstart was built without https support: rebuild it with the `https` \
             feature (`cargo build --features https`, on by default) or probe over http://"
        );
    }
    Ok(())
}

impl Readiness {
    pub fn parse(spec: &str) -> Result<Self> {
        const KINDS: &str =
            "expected one of: exit, tcp:[HOST:]PORT, http://HOST:PORT/PATH, https://…, log:REGEX, file:PATH, listen";
        if spec == "exit" {
            return Ok(Readiness::Exit);
        }
        if spec == LAMBDA_INIT {
            bail!(
                "readiness {LAMBDA_INIT} is the end of an emulated Lambda init: measure it with `coldstart lambda`"
            );
        }
        if spec.starts_with("http://") || spec.starts_with("https://") || spec.starts_with("http:") {
            let raw = spec
                .strip_prefix("http:")
                .filter(|r| r.starts_with("http"))
                .unwrap_or(spec);
            let url = url::Url::parse(raw).map_err(|e| {
                anyhow!("bad URL in --ready '{spec}': {e}; write it like http://127.0.0.1:8080/health")
            })?;
            if url.host_str().is_none() {
                bail!("bad URL in --ready '{spec}': no host; write it like http://127.0.0.1:8080/health");
            }
            if url.port_or_known_default().is_none() {
                bail!("bad URL in --ready '{spec}': no port; write it like http://127.0.0.1:8080/health");
            }
            https_supported(&url)?;
            return Ok(Readiness::Http { url });
        }
        if let Some(rest) = spec.strip_prefix("tcp:") {
            let (host, port) = match rest.rsplit_once(':') {
                Some((h, p)) => (h.trim_start_matches('[').trim_end_matches(']').to_string(), p),
                None => ("127.0.0.1".to_string(), rest),
            };
            let port: u16 = port.parse().ok().filter(|p| *p != 0).ok_or_else(|| {
                anyhow!("bad port in --ready '{spec}': write tcp:8080 or tcp:127.0.0.1:8080")
            })?;
            if host.is_empty() {
                bail!("empty host in --ready '{spec}': write tcp:8080 or tcp:127.0.0.1:8080");
            }
            return Ok(Readiness::Tcp { host, port });
        }
        if let Some(pattern) = spec.strip_prefix("log:") {
            if pattern.is_empty() {
                bail!(
                    "empty pattern in --ready 'log:': give a regex, e.g. log:'listening on (?P<port>\\d+)'"
                );
            }
            let regex = Regex::new(pattern)
                .map_err(|e| anyhow!("bad regex in --ready '{spec}': {}", first_line(&e.to_string())))?;
            return Ok(Readiness::Log { regex });
        }
        if let Some(path) = spec.strip_prefix("file:") {
            if path.is_empty() {
                bail!("empty path in --ready 'file:': write file:/tmp/ready");
            }
            return Ok(Readiness::File {
                path: PathBuf::from(path),
            });
        }
        if spec == "listen" {
            return Ok(Readiness::Listen);
        }
        bail!("unknown readiness '{spec}': {KINDS}")
    }

    /// The address a stale server could already occupy (checked before each spawn).
    pub fn socket_addr(&self) -> Option<(String, u16)> {
        match self {
            Readiness::Tcp { host, port } => Some((host.clone(), *port)),
            Readiness::Http { url } => Some((
                url.host_str()?
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string(),
                url.port_or_known_default()?,
            )),
            _ => None,
        }
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or(s)
        .trim()
        .to_string()
}

impl fmt::Display for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Readiness::Exit => write!(f, "exit"),
            Readiness::Tcp { host, port } => write!(f, "tcp:{host}:{port}"),
            Readiness::Http { url } => write!(f, "{url}"),
            Readiness::Log { regex } => write!(f, "log:{}", regex.as_str()),
            Readiness::File { path } => write!(f, "file:{}", path.display()),
            Readiness::Listen => write!(f, "listen"),
        }
    }
}

impl serde::Serialize for Readiness {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// Parse `KEY=VALUE` (for --env).
pub fn parse_env(s: &str) -> Result<(String, String)> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => bail!("bad --env '{s}': write KEY=VALUE"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_is_refused_at_plan_time_only_without_the_feature() {
        let https = url::Url::parse("https://127.0.0.1:8443/health").unwrap();
        let http = url::Url::parse("http://127.0.0.1:8080/health").unwrap();
        let e = https_check(&https, false).expect_err("refused").to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        assert!(
            e.contains("`https` feature") && e.contains("https://127.0.0.1:8443/health"),
            "{e}"
        );
        assert!(https_check(&http, false).is_ok());
        assert!(https_check(&https, true).is_ok());
        // The parse (plan time) goes through the same check for this build.
        let parsed = Readiness::parse("https://127.0.0.1:8443/health");
        assert_eq!(parsed.is_ok(), cfg!(feature = "https"), "{parsed:?}");
    }

    #[test]
    fn lambda_init_is_refused_with_the_command_that_measures_it() {
        // Not a probe: bench, explain and coldstart.toml refuse it before any spawn.
        let e = Readiness::parse(LAMBDA_INIT).expect_err("refused").to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        assert!(e.contains("`coldstart lambda`"), "{e}");
    }

    #[test]
    fn parses_each_kind() {
        assert!(matches!(Readiness::parse("exit").unwrap(), Readiness::Exit));
        match Readiness::parse("tcp:8080").unwrap() {
            Readiness::Tcp { host, port } => assert_eq!((host.as_str(), port), ("127.0.0.1", 8080)),
            other => panic!("{other:?}"),
        }
        match Readiness::parse("tcp:[::1]:9").unwrap() {
            Readiness::Tcp { host, port } => assert_eq!((host.as_str(), port), ("::1", 9)),
            other => panic!("{other:?}"),
        }
        let http = Readiness::parse("http://127.0.0.1:8080/health").unwrap();
        assert_eq!(http.socket_addr(), Some(("127.0.0.1".into(), 8080)));
        assert!(matches!(
            Readiness::parse("http:http://127.0.0.1:1/").unwrap(),
            Readiness::Http { .. }
        ));
        match Readiness::parse(r"log:listening on (?P<port>\d+)").unwrap() {
            Readiness::Log { regex } => assert!(regex.is_match("listening on 80")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            Readiness::parse("file:/tmp/x").unwrap(),
            Readiness::File { .. }
        ));
    }

    #[test]
    fn bad_input_names_the_fix() {
        let e = Readiness::parse("carrier-pigeon").unwrap_err().to_string();
        assert!(e.contains("unknown readiness") && e.contains("tcp:"), "{e}");
        let e = Readiness::parse("log:(unclosed").unwrap_err().to_string();
        assert!(e.contains("bad regex"), "{e}");
        let e = Readiness::parse("tcp:http").unwrap_err().to_string();
        assert!(e.contains("bad port"), "{e}");
        let e = Readiness::parse("http://").unwrap_err().to_string();
        assert!(e.contains("bad URL"), "{e}");
        assert_eq!(shell_join(&["a", "b c", "it's", ""]), "a 'b c' 'it'\\''s' ''");
        let e = Target::new(vec!["definitely-not-a-command-xyz".into()], vec![], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("command not found"), "{e}");
        assert!(parse_env("NOEQUALS").is_err());
        assert_eq!(parse_env("A=b=c").unwrap(), ("A".into(), "b=c".into()));
    }
}
