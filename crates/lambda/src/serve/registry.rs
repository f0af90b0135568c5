//! The served functions: each one's $LATEST (the command line's definition as
//! configuration updates changed it), its published versions (immutable), the
//! layers' ARNs, and the execution environment each version has, if any.

use super::shapes::{self, ApiError, Shown};
use super::{Definition, Settings};
use crate::kept::Kept;
use crate::Options;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// Lambda's account in ARNs (as the emulator's environment variables show it).
pub const ACCOUNT: &str = "000000000000";
pub const LATEST: &str = "$LATEST";

/// An environment of one version; the lock is held for an invoke (and its init).
pub type Slot = Arc<tokio::sync::Mutex<Option<Live>>>;

pub struct Live {
    pub kept: Box<Kept>,
    pub last_used: Instant,
}

/// One version: its configuration and its environment.
struct Version {
    def: Definition,
    revision: String,
    last_modified: String,
    slot: Slot,
}

impl Version {
    fn new(def: Definition) -> Version {
        Version {
            def,
            revision: crate::state::uuid(),
            last_modified: shapes::last_modified_now(),
            slot: Slot::default(),
        }
    }
}

struct Function {
    latest: Version,
    published: BTreeMap<u64, Version>,
    /// Version numbers are never reused, also after a delete.
    next_version: u64,
    /// $LATEST's revision when it was last published, and as which version.
    last_publish: Option<(String, u64)>,
}

pub struct Registry {
    pub lab: &'static coldstart_core::Lab,
    pub settings: Settings,
    functions: Mutex<BTreeMap<String, Function>>,
    /// The functions' names in the command line's order (ListFunctions', and
    /// the runtime interface emulator's `function`).
    order: Vec<String>,
    /// Layer ARN → directory: each `--layer` directory, and each directory an
    /// update named by its path.
    layers: Mutex<Vec<(String, PathBuf)>>,
    /// Environments started so far (names their cgroups apart).
    started: AtomicUsize,
    /// Environments being stopped in the background (awaited at shutdown).
    pub stopping: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// What an invoke needs of a version.
pub struct Target {
    pub function: String,
    pub version: String,
    pub def: Definition,
    pub slot: Slot,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Registry {
    pub fn new(lab: &'static coldstart_core::Lab, settings: Settings, defs: Vec<Definition>) -> Registry {
        let reg = Registry {
            lab,
            settings,
            functions: Mutex::new(BTreeMap::new()),
            order: defs.iter().map(|d| d.name.clone()).collect(),
            layers: Mutex::new(Vec::new()),
            started: AtomicUsize::new(0),
            stopping: Mutex::new(Vec::new()),
        };
        for d in defs {
            for l in &d.layers {
                reg.layer_arn(l);
            }
            let f = Function {
                latest: Version::new(d.clone()),
                published: BTreeMap::new(),
                next_version: 1,
                last_publish: None,
            };
            lock(&reg.functions).insert(d.name.clone(), f);
        }
        reg
    }

    /// Every function's $LATEST configuration, in the command line's order.
    pub fn list(&self) -> Vec<Value> {
        self.order
            .iter()
            .filter_map(|name| self.configuration(name, LATEST).ok())
            .collect()
    }

    pub fn function_arn(&self, name: &str) -> String {
        format!(
            "arn:aws:lambda:{}:{ACCOUNT}:function:{name}",
            self.settings.region
        )
    }

    /// The ARN of a layer directory (registered on first sight):
    /// `arn:aws:lambda:REGION:000000000000:layer:DIRNAME:N`, N counting
    /// directories of the same name.
    pub fn layer_arn(&self, dir: &Path) -> String {
        let mut layers = lock(&self.layers);
        if let Some((arn, _)) = layers.iter().find(|(_, d)| d == dir) {
            return arn.clone();
        }
        let base: String = dir
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let base = if base.is_empty() {
            "layer".to_string()
        } else {
            base
        };
        let prefix = format!("arn:aws:lambda:{}:{ACCOUNT}:layer:{base}:", self.settings.region);
        let n = layers.iter().filter(|(a, _)| a.starts_with(&prefix)).count() + 1;
        let arn = format!("{prefix}{n}");
        layers.push((arn.clone(), dir.to_path_buf()));
        arn
    }

    /// A layer named in an update: a known ARN, or an absolute directory path.
    fn layer_dir(&self, name: &str) -> Result<PathBuf, ApiError> {
        if let Some((_, d)) = lock(&self.layers).iter().find(|(a, _)| a == name) {
            return Ok(d.clone());
        }
        let p = Path::new(name);
        if p.is_absolute() && p.is_dir() {
            self.layer_arn(p);
            return Ok(p.to_path_buf());
        }
        Err(ApiError::invalid(format!(
            "Layer {name} is not known: give the ARN of a layer coldstart lambda serve listed (one per --layer directory) or an absolute directory path"
        )))
    }

    /// A function name as the API takes it (a name, `name:qualifier`, or an
    /// ARN with or without the qualifier) and a Qualifier → (name, version).
    /// `function` (the runtime interface emulator's path) is the first function
    /// when none has that name.
    pub fn resolve(&self, name: &str, qualifier: Option<&str>) -> Result<(String, String), ApiError> {
        let rest = name
            .strip_prefix("arn:aws:lambda:")
            .and_then(|r| r.split_once(":function:").map(|(_, f)| f))
            .unwrap_or(name);
        let (fname, in_name) = match rest.split_once(':') {
            Some((f, q)) => (f.to_string(), Some(q.to_string())),
            None => (rest.to_string(), None),
        };
        let version = match (in_name.as_deref(), qualifier) {
            (Some(a), Some(b)) if a != b => {
                return Err(ApiError::invalid(format!(
                    "The derived qualifier from the function name ({a}) does not match the specified qualifier ({b})."
                )))
            }
            (Some(q), _) | (None, Some(q)) => q.to_string(),
            (None, None) => LATEST.to_string(),
        };
        let functions = lock(&self.functions);
        let fname = if fname == "function" && !functions.contains_key("function") {
            self.order.first().cloned().unwrap_or(fname)
        } else {
            fname
        };
        if !functions.contains_key(&fname) {
            return Err(ApiError::not_found(format!(
                "Function not found: {}",
                self.function_arn(&fname)
            )));
        }
        Ok((fname, version))
    }

    /// Run `f` on a version (`$LATEST` or a published number).
    fn with_version<R>(
        &self,
        name: &str,
        version: &str,
        f: impl FnOnce(&Version) -> R,
    ) -> Result<R, ApiError> {
        let functions = lock(&self.functions);
        let func = functions.get(name);
        let v = match (func, version) {
            (Some(func), LATEST) => Some(&func.latest),
            (Some(func), n) => n.parse::<u64>().ok().and_then(|n| func.published.get(&n)),
            (None, _) => None,
        };
        match v {
            Some(v) => Ok(f(v)),
            None => Err(ApiError::not_found(format!(
                "Function not found: {}:{version}",
                self.function_arn(name)
            ))),
        }
    }

    pub fn target(&self, name: &str, version: &str) -> Result<Target, ApiError> {
        self.with_version(name, version, |v| Target {
            function: name.to_string(),
            version: version.to_string(),
            def: v.def.clone(),
            slot: v.slot.clone(),
        })
    }

    fn shown(&self, v: &Version, version: &str, qualified: bool) -> Value {
        let mut arn = self.function_arn(&v.def.name);
        if qualified {
            arn = format!("{arn}:{version}");
        }
        shapes::configuration(&Shown {
            def: &v.def,
            version,
            arn,
            revision: &v.revision,
            last_modified: &v.last_modified,
            code_sha256: code_sha256(&v.def),
            layer_arns: v.def.layers.iter().map(|l| self.layer_arn(l)).collect(),
        })
    }

    /// GetFunctionConfiguration.
    pub fn configuration(&self, name: &str, version: &str) -> Result<Value, ApiError> {
        self.with_version(name, version, |v| self.shown(v, version, version != LATEST))
    }

    /// ListVersionsByFunction: $LATEST, then the published versions in order.
    pub fn versions(&self, name: &str) -> Result<Vec<Value>, ApiError> {
        let functions = lock(&self.functions);
        let func = functions
            .get(name)
            .ok_or_else(|| ApiError::not_found(format!("Function not found: {}", self.function_arn(name))))?;
        let mut out = vec![self.shown(&func.latest, LATEST, true)];
        for (n, v) in &func.published {
            out.push(self.shown(v, &n.to_string(), true));
        }
        Ok(out)
    }

    /// UpdateFunctionConfiguration of $LATEST: MemorySize, Environment, Layers,
    /// Handler, Timeout (other fields are accepted and ignored). $LATEST's
    /// environment is retired, so its next invoke is cold.
    pub fn update(&self, name: &str, body: &Value) -> Result<Value, ApiError> {
        let current = self.with_version(name, LATEST, |v| (v.def.clone(), v.revision.clone()))?;
        check_revision(body, &current.1)?;
        let def = self.updated(current.0, body)?;
        def.config(LATEST)
            .map_err(|e| ApiError::invalid(format!("{e:#}")))?;
        let old = {
            let mut functions = lock(&self.functions);
            let func = functions.get_mut(name).ok_or_else(|| {
                ApiError::not_found(format!("Function not found: {}", self.function_arn(name)))
            })?;
            std::mem::replace(&mut func.latest, Version::new(def))
        };
        self.retire(old.slot);
        self.configuration(name, LATEST)
    }

    /// The definition with an update's fields applied.
    fn updated(&self, mut def: Definition, body: &Value) -> Result<Definition, ApiError> {
        if let Some(m) = body.get("MemorySize") {
            let mb = m
                .as_u64()
                .filter(|mb| (128..=10_240).contains(mb))
                .ok_or_else(|| ApiError::invalid(format!("MemorySize {m}: Lambda allows 128 to 10240 MB")))?;
            def.memory_mb = mb;
        }
        if let Some(t) = body.get("Timeout") {
            let s = t
                .as_u64()
                .filter(|s| (1..=900).contains(s))
                .ok_or_else(|| ApiError::invalid(format!("Timeout {t}: give 1 to 900 seconds")))?;
            def.timeout = std::time::Duration::from_secs(s);
        }
        if let Some(h) = body.get("Handler").and_then(Value::as_str) {
            def.handler = h.to_string();
        }
        if let Some(env) = body.get("Environment") {
            let vars = env
                .get("Variables")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let mut pairs = Vec::new();
            for (k, v) in vars {
                let v = v.as_str().ok_or_else(|| {
                    ApiError::invalid(format!("Environment variable {k}: the value must be a string"))
                })?;
                pairs.push((k, v.to_string()));
            }
            crate::env::check_user_env(&pairs).map_err(|e| ApiError::invalid(format!("{e:#}")))?;
            def.env = pairs;
        }
        if let Some(layers) = body.get("Layers") {
            let names = layers
                .as_array()
                .ok_or_else(|| ApiError::invalid("Layers must be a list of layer ARNs"))?;
            let mut dirs = Vec::new();
            for n in names {
                let n = n
                    .as_str()
                    .ok_or_else(|| ApiError::invalid("Layers must be a list of layer ARNs"))?;
                dirs.push(self.layer_dir(n)?);
            }
            def.layers = dirs;
        }
        Ok(def)
    }

    /// PublishVersion: $LATEST as a new immutable version (or the last one, when
    /// $LATEST did not change since it was published, as the service does).
    pub fn publish(&self, name: &str, body: &Value) -> Result<Value, ApiError> {
        let n = {
            let mut functions = lock(&self.functions);
            let func = functions.get_mut(name).ok_or_else(|| {
                ApiError::not_found(format!("Function not found: {}", self.function_arn(name)))
            })?;
            check_revision(body, &func.latest.revision)?;
            match &func.last_publish {
                Some((rev, n)) if *rev == func.latest.revision && func.published.contains_key(n) => *n,
                _ => {
                    let n = func.next_version;
                    func.next_version += 1;
                    let mut v = Version::new(func.latest.def.clone());
                    v.last_modified = func.latest.last_modified.clone();
                    if self.settings.reuse_environments {
                        if let Some(before) = func.published.values().next_back() {
                            v.slot = before.slot.clone();
                        }
                    }
                    func.published.insert(n, v);
                    func.last_publish = Some((func.latest.revision.clone(), n));
                    n
                }
            }
        };
        self.configuration(name, &n.to_string())
    }

    /// DeleteFunction with a Qualifier: the version and its environment. The
    /// functions themselves are the command line's: deleting one (no qualifier or
    /// $LATEST) is refused.
    pub fn delete(&self, name: &str, version: &str) -> Result<(), ApiError> {
        if version == LATEST {
            return Err(ApiError::conflict(format!(
                "{name} is defined on coldstart lambda serve's command line and is not deleted; delete a published version with Qualifier=N"
            )));
        }
        let removed = {
            let mut functions = lock(&self.functions);
            let func = functions.get_mut(name).ok_or_else(|| {
                ApiError::not_found(format!("Function not found: {}", self.function_arn(name)))
            })?;
            version
                .parse::<u64>()
                .ok()
                .and_then(|n| func.published.remove(&n))
        };
        match removed {
            Some(v) => {
                // A slot other versions share (--reuse-environments) ends with the last.
                if !self.settings.reuse_environments || Arc::strong_count(&v.slot) == 1 {
                    self.retire(v.slot);
                }
                Ok(())
            }
            None => Err(ApiError::not_found(format!(
                "Function not found: {}:{version}",
                self.function_arn(name)
            ))),
        }
    }

    /// The options of one environment of `def`.
    pub fn options(&self, def: &Definition) -> Options {
        let s = &self.settings;
        Options {
            event: Vec::new(),
            init_timeout: s.init_timeout,
            function_timeout: def.timeout,
            init_boost: s.init_boost,
            cgroups: s.cgroups.clone(),
            function_name: def.name.clone(),
            region: s.region.clone(),
            log: s.log.clone(),
            save_response: None,
            tail_lines: 20,
            invokes: 0,
            runtime_grace: None,
        }
    }

    /// A new environment's run id (its cgroup's name).
    pub fn next_id(&self) -> coldstart_core::run::RunId {
        coldstart_core::run::RunId {
            variant: 0,
            round: self.started.fetch_add(1, Ordering::SeqCst),
            warmup: false,
        }
    }

    /// Stop a slot's environment in the background, once its invoke (if one is
    /// running) is over.
    pub fn retire(&self, slot: Slot) {
        let task = tokio::spawn(async move {
            let live = slot.lock().await.take();
            if let Some(live) = live {
                live.kept.stop().await;
            }
        });
        lock(&self.stopping).push(task);
    }

    /// Every version's slot, as `name:version` (for the idle timeout and shutdown).
    pub fn slots(&self) -> Vec<(String, Slot)> {
        let functions = lock(&self.functions);
        let mut out = Vec::new();
        for (name, f) in functions.iter() {
            out.push((format!("{name}:{LATEST}"), f.latest.slot.clone()));
            for (n, v) in &f.published {
                out.push((format!("{name}:{n}"), v.slot.clone()));
            }
        }
        out
    }
}

/// A request's RevisionId, when given, must be the current one.
fn check_revision(body: &Value, current: &str) -> Result<(), ApiError> {
    match body.get("RevisionId").and_then(Value::as_str) {
        Some(r) if r != current => Err(ApiError {
            status: axum::http::StatusCode::PRECONDITION_FAILED,
            kind: "PreconditionFailedException",
            message: format!("The Revision Id provided does not match the latest Revision Id ({current})."),
        }),
        _ => Ok(()),
    }
}

/// A stand-in for the code's SHA-256: the local code is not zipped, so this is
/// a hash of where it is, stable for the server's life (base64, as the service's).
fn code_sha256(def: &Definition) -> String {
    use base64::Engine;
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    def.runtime.hash(&mut h);
    def.code.hash(&mut h);
    base64::engine::general_purpose::STANDARD.encode(h.finish().to_be_bytes())
}
