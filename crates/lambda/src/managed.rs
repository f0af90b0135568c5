//! Managed runtimes (`--runtime python3.11|nodejs20.x|java17`): what Lambda's
//! bootstrap for that runtime execs, with the real runtime interface client from
//! the ecosystem's registry (awslambdaric from PyPI, aws-lambda-ric from npm, the
//! Java client from Maven Central) instead of a user's `bootstrap`.
//!
//! The clients are installed by `coldstart lambda setup RUNTIME` into the user's
//! cache (crates/lambda/src/setup.rs), or by examples/lambda-ric/setup.sh into a
//! project's target/lambda-ric (see [`clients_dir`] for the order); the
//! interpreters are the host's, found on PATH, and must be the runtime's version.
//! Each command is the one the runtime's bootstrap execs (sources in
//! docs/lambda.md, "Managed runtimes"), wrapped by AWS_LAMBDA_EXEC_WRAPPER when the
//! function sets it, as Lambda's bootstraps do.

use super::layout::SandboxPaths;
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A managed runtime coldstart can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Python311,
    Nodejs20,
    Java17,
}

/// The identifiers `--runtime` accepts, as Lambda names them.
pub const SUPPORTED: [Runtime; 3] = [Runtime::Python311, Runtime::Nodejs20, Runtime::Java17];

/// The Java client's entry point; the handler is its argument.
const JAVA_MAIN: &str = "com.amazonaws.services.lambda.runtime.api.client.AWSLambda";

impl Runtime {
    pub fn id(self) -> &'static str {
        match self {
            Runtime::Python311 => "python3.11",
            Runtime::Nodejs20 => "nodejs20.x",
            Runtime::Java17 => "java17",
        }
    }

    /// Lambda's runtime version name (`python:3.11.v29`), with coldstart's build.
    pub fn version_name(self) -> String {
        let name = match self {
            Runtime::Python311 => "python:3.11",
            Runtime::Nodejs20 => "nodejs:20",
            Runtime::Java17 => "java:17",
        };
        format!("{name}.coldstart")
    }

    pub fn parse(id: &str) -> Option<Self> {
        SUPPORTED.into_iter().find(|r| r.id() == id)
    }

    /// The client's subdirectory of a clients' directory.
    pub fn client_subdir(self) -> &'static str {
        self.client().0
    }

    /// The client's package, as its registry names it.
    pub fn client_name(self) -> &'static str {
        self.client().1
    }

    /// The client's subdirectory of the clients' directory and the package in it.
    fn client(self) -> (&'static str, &'static str) {
        match self {
            Runtime::Python311 => ("python", "awslambdaric (PyPI)"),
            Runtime::Nodejs20 => ("node", "aws-lambda-ric (npm)"),
            Runtime::Java17 => (
                "java",
                "com.amazonaws:aws-lambda-java-runtime-interface-client (Maven Central)",
            ),
        }
    }
}

/// What `--runtime VALUE` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeArg {
    Managed(Runtime),
    /// A `provided` runtime's executable.
    Bootstrap(PathBuf),
}

/// A managed runtime's identifier selects it (write `./python3.11` for a file of
/// that name); anything else is a bootstrap path. A bare word that is neither an
/// identifier nor a file is refused with the supported identifiers.
pub fn classify(value: &Path) -> Result<RuntimeArg> {
    let text = value.to_string_lossy();
    if let Some(rt) = Runtime::parse(&text) {
        return Ok(RuntimeArg::Managed(rt));
    }
    if !text.contains('/') && !value.exists() {
        bail!(
            "--runtime {text}: not a managed runtime coldstart runs ({}) and no such file; give one of those or a bootstrap's path",
            supported()
        );
    }
    Ok(RuntimeArg::Bootstrap(value.to_path_buf()))
}

fn supported() -> String {
    SUPPORTED.map(Runtime::id).join(", ")
}

/// Where `runtime`'s client is: COLDSTART_LAMBDA_RIC_DIR alone when set; else the
/// first of the user's cache (`coldstart lambda setup`), the project's
/// target/lambda-ric (examples/lambda-ric/setup.sh) and the one beside this
/// coldstart's build (target/{debug,release}/../lambda-ric) that holds it; else
/// the user's cache, where `coldstart lambda setup` would put it.
pub fn clients_dir(runtime: Runtime) -> PathBuf {
    if let Some(d) = std::env::var_os("COLDSTART_LAMBDA_RIC_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let project = coldstart_core::config::project_root().join("target/lambda-ric");
    let beside_exe = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("lambda-ric")));
    let cache = user_cache();
    [cache.clone(), Some(project.clone()), beside_exe]
        .into_iter()
        .flatten()
        .find(|d| client_marker(runtime, &d.join(runtime.client_subdir())).is_some_and(|m| m.is_file()))
        .or(cache)
        .unwrap_or(project)
}

/// The user's cache of clients (`coldstart lambda setup` installs there): `$XDG_CACHE_HOME/coldstart/lambda-ric`, else
/// `~/.cache/coldstart/lambda-ric` (None without either variable).
pub fn user_cache() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("XDG_CACHE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| var("HOME").map(|h| h.join(".cache")))
        .map(|c| c.join("coldstart").join("lambda-ric"))
}

/// The file that shows `runtime`'s client is installed in `client` (its directory).
fn client_marker(runtime: Runtime, client: &Path) -> Option<PathBuf> {
    match runtime {
        Runtime::Python311 => Some(client.join("awslambdaric/__main__.py")),
        Runtime::Nodejs20 => Some(client.join("node_modules/aws-lambda-ric/bin/index.mjs")),
        Runtime::Java17 => java_client_jar(client),
    }
}

/// The Python that runs python3.11 functions, for installing the client whose C
/// extension must match it.
pub fn python_for_clients() -> Result<PathBuf> {
    interpreter(Runtime::Python311).map(|(path, _, _)| path)
}

/// A managed runtime with its interpreter and client found, ready to give the
/// command for a function.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub runtime: Runtime,
    interpreter: PathBuf,
    /// The interpreter's version, as it said.
    version: String,
    /// Earlier candidates on PATH passed over (`/usr/bin/python3.11 is 3.12`).
    skipped: Vec<String>,
    /// The client's directory (LAMBDA_RUNTIME_DIR: /var/runtime on Lambda).
    client: PathBuf,
}

/// The runtime's process: its argv (the wrapper's, when set) and the variables
/// its bootstrap sets, which the function's own `--env` may override.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl Resolved {
    /// The host interpreter the runtime's command starts.
    pub fn interpreter(&self) -> &Path {
        &self.interpreter
    }

    /// Which interpreter runs the runtime, and which earlier ones on PATH were
    /// passed over, and its client: `python3.11: /usr/bin/python3.11 (3.11.9), client /…/python`.
    pub fn chosen(&self) -> String {
        let mut s = format!(
            "{}: {} ({})",
            self.runtime.id(),
            self.interpreter.display(),
            self.version
        );
        if !self.skipped.is_empty() {
            s.push_str(&format!(", not {}", self.skipped.join(", not ")));
        }
        s.push_str(&format!(", client {}", self.client.display()));
        s
    }

    /// Find the interpreter on PATH (the runtime's version) and the installed client.
    pub fn find(runtime: Runtime, clients: &Path) -> Result<Self> {
        let (sub, package) = runtime.client();
        let client = clients.join(sub);
        if !client_marker(runtime, &client).is_some_and(|m| m.is_file()) {
            bail!(
                "--runtime {}: its runtime interface client {package} is not installed (looked in {}); \
                 run `coldstart lambda setup {}` once (or set COLDSTART_LAMBDA_RIC_DIR to where it is)",
                runtime.id(),
                client.display(),
                runtime.id()
            );
        }
        let (interpreter, version, skipped) = interpreter(runtime)?;
        Ok(Resolved {
            runtime,
            interpreter,
            version,
            skipped,
            client: std::path::absolute(&client).unwrap_or(client),
        })
    }

    /// The command and variables for a function with these paths and memory.
    /// `user`: the function's variables (AWS_LAMBDA_EXEC_WRAPPER, and overrides);
    /// `host_of`: the host file behind a path as the runtime sees it
    /// (`Layout::host_of`), to check the wrapper where it really is.
    pub fn launch(
        &self,
        paths: &SandboxPaths,
        handler: &str,
        memory_mb: u64,
        user: &[(String, String)],
        host_of: &dyn Fn(&Path) -> Option<PathBuf>,
    ) -> Result<Launch> {
        let client = self.client.display().to_string();
        let mut env = paths.path_vars();
        env.push((
            "AWS_EXECUTION_ENV".into(),
            format!("AWS_Lambda_{}", self.runtime.id()),
        ));
        env.push(("LAMBDA_RUNTIME_DIR".into(), client.clone()));
        let interp = self.interpreter.display().to_string();
        let argv: Vec<String> = match self.runtime {
            Runtime::Python311 => {
                // Lambda's sys.path for 3.11: /var/task, each layer's
                // site-packages then python/, then the runtime (/var/runtime).
                let mut path = vec![paths.task_root.clone()];
                for opt in &paths.opt_roots {
                    path.push(format!("{opt}/python/lib/python3.11/site-packages"));
                    path.push(format!("{opt}/python"));
                }
                path.push(client.clone());
                // A function's own PYTHONPATH replaces the platform's, as on
                // Lambda; the client stays importable (Lambda starts it by path).
                if let Some((_, own)) = user.iter().rev().find(|(k, _)| k == "PYTHONPATH") {
                    path = vec![own.clone(), client.clone()];
                }
                env.push(("PYTHONPATH".into(), path.join(":")));
                vec![interp, "-m".into(), "awslambdaric".into(), handler.into()]
            }
            Runtime::Nodejs20 => {
                let mut path = Vec::new();
                for opt in &paths.opt_roots {
                    path.push(format!("{opt}/nodejs/node20/node_modules"));
                    path.push(format!("{opt}/nodejs/node_modules"));
                }
                path.push(format!("{client}/node_modules"));
                path.push(client.clone());
                path.push(paths.task_root.clone());
                env.push(("NODE_PATH".into(), path.join(":")));
                // The nodejs bootstrap sizes V8's heap from the memory setting.
                let new_space = memory_mb / 10;
                vec![
                    interp,
                    "--expose-gc".into(),
                    "--max-http-header-size".into(),
                    "81920".into(),
                    format!("--max-semi-space-size={}", new_space / 2),
                    format!("--max-old-space-size={}", memory_mb - new_space),
                    format!("{client}/node_modules/aws-lambda-ric/bin/index.mjs"),
                    handler.into(),
                ]
            }
            Runtime::Java17 => {
                // Lambda's class path is the client's jars alone: its class loader
                // takes the function's classes from /var/task, /var/task/lib and
                // /opt/java/lib (so a class-data archive of the class path can be
                // made: the JVM refuses one with a non-empty directory on it). Off
                // the sandbox those paths are not Lambda's, so they go on the class path.
                let mut cp = vec![format!("{client}/*")];
                let lambdas = paths.task_root == super::layout::TASK_ROOT
                    && paths.opt_roots == [super::layout::OPT.to_string()];
                if !lambdas {
                    cp.push(paths.task_root.clone());
                    cp.push(format!("{}/lib/*", paths.task_root));
                    cp.extend(paths.under_opt("java/lib/*"));
                }
                vec![
                    interp,
                    // The java17 runtime's JVM flags: 85 % of memory as heap,
                    // serial GC, C1 only.
                    format!("-XX:MaxHeapSize={}k", memory_mb * 1024 * 85 / 100),
                    "-XX:+UseSerialGC".into(),
                    "-XX:+TieredCompilation".into(),
                    "-XX:TieredStopAtLevel=1".into(),
                    "--add-opens=java.base/java.io=ALL-UNNAMED".into(),
                    "-XX:+ErrorFileToStderr".into(),
                    "-classpath".into(),
                    cp.join(":"),
                    JAVA_MAIN.into(),
                    handler.into(),
                ]
            }
        };
        Ok(Launch {
            argv: wrapped(argv, user, host_of)?,
            env,
        })
    }
}

/// AWS_LAMBDA_EXEC_WRAPPER: the bootstrap execs the wrapper with its own command
/// as the arguments. Lambda's bootstrap exits 127 ("does not exist") or 126 ("is
/// not an executable") when the wrapper is unusable; coldstart says so up front,
/// looking where the runtime will (in the sandbox, /opt is the layers).
fn wrapped(
    argv: Vec<String>,
    user: &[(String, String)],
    host_of: &dyn Fn(&Path) -> Option<PathBuf>,
) -> Result<Vec<String>> {
    use std::os::unix::fs::PermissionsExt;
    let Some((_, wrapper)) = user
        .iter()
        .rev()
        .find(|(k, _)| k == "AWS_LAMBDA_EXEC_WRAPPER")
        .filter(|(_, v)| !v.is_empty())
    else {
        return Ok(argv);
    };
    // The host's file goes into the command; the sandbox maps it back to
    // where the runtime sees it (`init::inside_target`).
    let host = host_of(Path::new(wrapper));
    let meta = host
        .as_ref()
        .and_then(|h| std::fs::metadata(h).ok())
        .filter(|m| m.is_file());
    match meta {
        None => bail!(
            "AWS_LAMBDA_EXEC_WRAPPER={wrapper}: does not exist (Lambda's bootstrap would exit 127): give the wrapper script's path"
        ),
        Some(m) if m.permissions().mode() & 0o111 == 0 => bail!(
            "AWS_LAMBDA_EXEC_WRAPPER={wrapper}: is not an executable (Lambda's bootstrap would exit 126): `chmod +x` it"
        ),
        Some(_) => Ok(host
            .map(|h| h.display().to_string())
            .into_iter()
            .chain(argv)
            .collect()),
    }
}

fn java_client_jar(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("aws-lambda-java-runtime-interface-client-") && n.ends_with(".jar")
            })
        })
}

/// The runtime's interpreter from PATH, of the runtime's version, with its
/// version and the candidates passed over. Candidates, in order: `python3.11`
/// then `python3`; `node`; `java`, each the first on PATH; one of another
/// version is passed over for the next. Python's is asked where it is (a
/// version manager's `python3.11` may be a shim script that would add its own
/// start-up to every init).
fn interpreter(runtime: Runtime) -> Result<(PathBuf, String, Vec<String>)> {
    let (names, probe, want): (&[&str], &[&str], &str) = match runtime {
        Runtime::Python311 => (
            &["python3.11", "python3"],
            &[
                "-c",
                "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])",
            ],
            "3.11",
        ),
        Runtime::Nodejs20 => (
            &["node"],
            &["-p", "process.execPath + '\\n' + process.versions.node"],
            "20",
        ),
        Runtime::Java17 => (&["java"], &["-XshowSettings:properties", "-version"], "17"),
    };
    let mut seen = Vec::new();
    for name in names {
        let Some(found) = which(name) else { continue };
        let out = Command::new(&found)
            .args(probe)
            .output()
            .with_context(|| format!("running {} to ask its version", found.display()))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        let (path, version) = match runtime {
            Runtime::Java17 => (
                property(&text, "java.home").map(|h| PathBuf::from(h).join("bin/java")),
                property(&text, "java.specification.version"),
            ),
            _ => {
                let mut lines = text.lines();
                (lines.next().map(PathBuf::from), lines.next().map(str::to_string))
            }
        };
        let version = version.unwrap_or_default();
        let major_matches = version == want || version.starts_with(&format!("{want}."));
        match path.filter(|p| p.is_file()) {
            Some(p) if out.status.success() && major_matches => return Ok((p, version, seen)),
            _ => seen.push(format!(
                "{} is {}",
                found.display(),
                if version.is_empty() { "unusable" } else { &version }
            )),
        }
    }
    Err(anyhow!(
        "--runtime {}: needs {} {want} on PATH ({}); install it or put it first on PATH",
        runtime.id(),
        match runtime {
            Runtime::Python311 => "Python",
            Runtime::Nodejs20 => "Node.js",
            Runtime::Java17 => "Java",
        },
        if seen.is_empty() {
            "none found".to_string()
        } else {
            seen.join("; ")
        }
    ))
}

/// `key = value` from `java -XshowSettings:properties`.
fn property(text: &str, key: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| l.trim().split_once(" = "))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.trim().to_string())
}

fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_select_managed_runtimes_and_paths_stay_bootstraps() {
        assert_eq!(
            classify(Path::new("python3.11")).expect("id"),
            RuntimeArg::Managed(Runtime::Python311)
        );
        assert_eq!(
            classify(Path::new("java17")).expect("id"),
            RuntimeArg::Managed(Runtime::Java17)
        );
        assert_eq!(
            classify(Path::new("./python3.11")).expect("path"),
            RuntimeArg::Bootstrap(PathBuf::from("./python3.11"))
        );
        let err = classify(Path::new("python3.99")).expect_err("unknown id");
        let msg = err.to_string();
        assert!(
            msg.contains("python3.11, nodejs20.x, java17") && !msg.contains('\n'),
            "{msg}"
        );
    }

    fn resolved(runtime: Runtime) -> Resolved {
        Resolved {
            runtime,
            interpreter: PathBuf::from("/interp"),
            version: "1.0".into(),
            skipped: Vec::new(),
            client: PathBuf::from("/ric"),
        }
    }

    fn paths() -> SandboxPaths {
        SandboxPaths {
            task_root: "/var/task".into(),
            opt_roots: vec!["/l1".into(), "/l2".into()],
        }
    }

    fn same(p: &Path) -> Option<PathBuf> {
        Some(p.to_path_buf())
    }

    fn var<'a>(l: &'a Launch, k: &str) -> &'a str {
        &l.env.iter().find(|(x, _)| x == k).expect(k).1
    }

    #[test]
    fn each_runtime_gets_its_bootstraps_command_and_paths() {
        let py = resolved(Runtime::Python311)
            .launch(&paths(), "app.handler", 512, &[], &same)
            .expect("python");
        assert_eq!(py.argv, ["/interp", "-m", "awslambdaric", "app.handler"]);
        assert_eq!(
            var(&py, "PYTHONPATH"),
            "/var/task:/l1/python/lib/python3.11/site-packages:/l1/python:/l2/python/lib/python3.11/site-packages:/l2/python:/ric"
        );
        assert_eq!(var(&py, "AWS_EXECUTION_ENV"), "AWS_Lambda_python3.11");
        let node = resolved(Runtime::Nodejs20)
            .launch(&paths(), "index.handler", 1000, &[], &same)
            .expect("node");
        assert_eq!(
            var(&node, "NODE_PATH"),
            "/l1/nodejs/node20/node_modules:/l1/nodejs/node_modules:/l2/nodejs/node20/node_modules:/l2/nodejs/node_modules:/ric/node_modules:/ric:/var/task"
        );
        assert!(node.argv.contains(&"--max-old-space-size=900".to_string()));
        assert!(node.argv.contains(&"--max-semi-space-size=50".to_string()));
        let java = resolved(Runtime::Java17)
            .launch(&paths(), "a.B::handleRequest", 1024, &[], &same)
            .expect("java");
        let cp = &java.argv[java.argv.iter().position(|a| a == "-classpath").expect("cp") + 1];
        assert_eq!(
            cp,
            "/ric/*:/var/task:/var/task/lib/*:/l1/java/lib/*:/l2/java/lib/*"
        );
        assert_eq!(
            java.argv[java.argv.len() - 2..],
            [JAVA_MAIN, "a.B::handleRequest"]
        );
        assert!(java.argv.contains(&"-XX:MaxHeapSize=891289k".to_string()));
    }

    #[test]
    fn the_wrapper_runs_the_bootstraps_command() {
        let tmp = tempfile::tempdir().expect("tmp");
        let w = tmp.path().join("wrapper");
        let user = |p: &Path| vec![("AWS_LAMBDA_EXEC_WRAPPER".to_string(), p.display().to_string())];
        let err = resolved(Runtime::Python311)
            .launch(&paths(), "h", 128, &user(&w), &same)
            .expect_err("missing");
        assert!(err.to_string().contains("does not exist"), "{err}");
        std::fs::write(&w, "#!/bin/sh\nexec \"$@\"\n").expect("write");
        let err = resolved(Runtime::Python311)
            .launch(&paths(), "h", 128, &user(&w), &same)
            .expect_err("not executable");
        assert!(err.to_string().contains("is not an executable"), "{err}");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let l = resolved(Runtime::Python311)
            .launch(&paths(), "h", 128, &user(&w), &same)
            .expect("wrapped");
        assert_eq!(
            l.argv,
            [
                w.display().to_string().as_str(),
                "/interp",
                "-m",
                "awslambdaric",
                "h"
            ]
        );
    }
}
