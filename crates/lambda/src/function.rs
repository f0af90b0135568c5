//! The function a variant runs, from its flags: `--runtime` (a managed runtime's
//! identifier or a bootstrap), `--code`, `--layer`s and `--extensions` → the
//! runtime's command, working directory and platform variables at each memory
//! size, and the external extensions.

use super::layout::{Layout, SandboxPaths};
use super::managed::{self, Resolved, RuntimeArg};
use anyhow::{anyhow, bail, Context, Result};
use coldstart_core::target::Target;
use std::path::{Path, PathBuf};

/// A variant's function flags.
pub struct Flags<'a> {
    pub runtime: &'a Path,
    pub code: Option<&'a Path>,
    pub layers: &'a [PathBuf],
    pub extensions: Option<&'a Path>,
    pub handler: &'a str,
    /// The function's own variables (`--env`).
    pub env: &'a [(String, String)],
    /// `--bare`: no extensions.
    pub bare: bool,
    /// In the sandbox's mount namespace (code at /var/task, layers at /opt).
    pub sandboxed: bool,
}

/// The function, checked: what it runs and where.
pub struct Function {
    kind: Kind,
    /// Where the code, layers and extensions are, on the host and inside.
    pub layout: Layout,
    paths: SandboxPaths,
    handler: String,
    env: Vec<(String, String)>,
    pub extensions: Vec<PathBuf>,
}

enum Kind {
    Managed(Resolved),
    Bootstrap(Target),
}

/// The runtime at one memory size.
pub struct AtMemory {
    pub runtime: Target,
    pub platform_env: Vec<(String, String)>,
    /// As Lambda names runtime versions: `python:3.11.v29` there, `.coldstart` here.
    pub runtime_version: String,
}

impl Function {
    pub fn new(f: &Flags) -> Result<Self> {
        // A bootstrap without --code: its directory is the task root, as before.
        let (runtime, code) = match managed::classify(f.runtime)? {
            RuntimeArg::Managed(rt) => {
                let code = f.code.ok_or_else(|| {
                    anyhow!(
                        "--runtime {}: give the function's code with --code DIR (its unpacked .zip; the task root)",
                        rt.id()
                    )
                })?;
                (Ok(rt), code.to_path_buf())
            }
            RuntimeArg::Bootstrap(path) => {
                if !path.exists() {
                    bail!(
                        "--runtime {}: no such file; give the bootstrap's path or a managed runtime ({})",
                        path.display(),
                        managed::SUPPORTED.map(managed::Runtime::id).join(", ")
                    );
                }
                let t = Target::new(vec![path.display().to_string()], Vec::new(), None)
                    .with_context(|| format!("--runtime {}", path.display()))?;
                let code = match f.code {
                    Some(c) => c.to_path_buf(),
                    None => t.program.parent().map(PathBuf::from).unwrap_or_default(),
                };
                (Err(t), code)
            }
        };
        let layout = Layout::new(&code, f.layers, f.extensions, f.sandboxed)?;
        if let Err(t) = &runtime {
            layout.check_visible(&t.program, "--runtime")?;
        }
        super::namespace::check(&layout)?;
        let kind = match runtime {
            Ok(rt) => Kind::Managed(Resolved::find(rt, &managed::clients_dir(rt))?),
            Err(t) => Kind::Bootstrap(t),
        };
        if let Kind::Managed(r) = &kind {
            layout.check_visible(r.interpreter(), "--runtime's interpreter")?;
        }
        let extensions = if f.bare {
            Vec::new()
        } else {
            layout.discover_extensions()?
        };
        let paths = layout.paths();
        Ok(Function {
            kind,
            layout,
            paths,
            handler: f.handler.to_string(),
            env: f.env.to_vec(),
            extensions,
        })
    }

    /// A managed runtime's interpreter, as `Resolved::chosen` says it.
    pub fn interpreter_note(&self) -> Option<String> {
        match &self.kind {
            Kind::Managed(r) => Some(r.chosen()),
            Kind::Bootstrap(_) => None,
        }
    }

    /// The variant's name when it has none: the identifier, or the bootstrap's command.
    pub fn label(&self) -> String {
        match &self.kind {
            Kind::Managed(r) => r.runtime.id().to_string(),
            Kind::Bootstrap(t) => t.display_command(),
        }
    }

    /// The runtime's process at `memory_mb` (a managed runtime sizes its heap by it).
    pub fn at(&self, memory_mb: u64) -> Result<AtMemory> {
        // The host's code directory: in the sandbox the runtime starts in
        // /var/task instead (init's `inside_target`), which the host may lack.
        let task_root = self.layout.code.clone();
        let (runtime, platform_env) = match &self.kind {
            Kind::Managed(r) => {
                let launch = r.launch(&self.paths, &self.handler, memory_mb, &self.env, &|p| {
                    self.layout.host_of(p)
                })?;
                // Lambda starts the runtime in the task root (the Java client
                // loads the function from its working directory).
                let t = Target::new(launch.argv, Vec::new(), Some(task_root))?;
                (t, launch.env)
            }
            Kind::Bootstrap(t) => (
                Target {
                    cwd: Some(task_root),
                    ..t.clone()
                },
                // Layers still add their bin/ and lib/ (an OS-only runtime has no
                // language paths and no wrapper scripts).
                if self.layout.layers.is_empty() {
                    Vec::new()
                } else {
                    self.paths.path_vars()
                },
            ),
        };
        let runtime_version = match &self.kind {
            Kind::Managed(r) => r.runtime.version_name(),
            Kind::Bootstrap(_) => "provided:coldstart".to_string(),
        };
        Ok(AtMemory {
            runtime,
            platform_env,
            runtime_version,
        })
    }
}
