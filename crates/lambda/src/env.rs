//! The function's identity and the environment variables Lambda gives the runtime
//! (reserved + unreserved) and, reduced, the extensions.

use anyhow::{bail, Result};

/// The emulated function.
#[derive(Debug, Clone)]
pub struct Function {
    pub name: String,
    pub version: String,
    pub handler: String,
    pub memory_mb: u64,
    pub region: String,
    pub account_id: String,
    /// Directory of the bootstrap (LAMBDA_TASK_ROOT; /var/task on Lambda).
    pub task_root: String,
    pub log_stream: String,
}

impl Function {
    pub fn arn(&self) -> String {
        format!(
            "arn:aws:lambda:{}:{}:function:{}",
            self.region, self.account_id, self.name
        )
    }
}

/// Reserved by Lambda: a user's --env may not set these.
pub const RESERVED: [&str; 19] = [
    "_HANDLER",
    "_X_AMZN_TRACE_ID",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_EXECUTION_ENV",
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "AWS_LAMBDA_FUNCTION_VERSION",
    "AWS_LAMBDA_INITIALIZATION_TYPE",
    "AWS_LAMBDA_LOG_GROUP_NAME",
    "AWS_LAMBDA_LOG_STREAM_NAME",
    "AWS_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_LAMBDA_RUNTIME_API",
    "LAMBDA_TASK_ROOT",
    "LAMBDA_RUNTIME_DIR",
    "AWS_LAMBDA_MAX_CONCURRENCY",
];

/// Not given to extensions ([DG] runtimes-extensions-api; RIE also drops every `_` key).
const NOT_FOR_EXTENSIONS: [&str; 7] = [
    "AWS_EXECUTION_ENV",
    "AWS_LAMBDA_LOG_GROUP_NAME",
    "AWS_LAMBDA_LOG_STREAM_NAME",
    "AWS_XRAY_CONTEXT_MISSING",
    "AWS_XRAY_DAEMON_ADDRESS",
    "LAMBDA_RUNTIME_DIR",
    "LAMBDA_TASK_ROOT",
];

/// Refuse user variables that Lambda reserves (as the Lambda console does).
pub fn check_user_env(vars: &[(String, String)]) -> Result<()> {
    if let Some((k, _)) = vars.iter().find(|(k, _)| RESERVED.contains(&k.as_str())) {
        bail!(
            "--env {k}=… is reserved by Lambda and set by the emulator: remove it (reserved: {})",
            RESERVED.join(", ")
        );
    }
    Ok(())
}

/// The runtime's whole environment (nothing else of coldstart's is inherited).
/// PATH and LD_LIBRARY_PATH are the host's, since the bootstrap runs on this host.
pub fn runtime_env(f: &Function, api: &str, user: &[(String, String)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = Vec::new();
    let mut set = |k: &str, val: &str| v.push((k.to_string(), val.to_string()));
    set("AWS_LAMBDA_RUNTIME_API", api);
    set("_HANDLER", &f.handler);
    set("AWS_REGION", &f.region);
    set("AWS_DEFAULT_REGION", &f.region);
    set("AWS_LAMBDA_FUNCTION_NAME", &f.name);
    set("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", &f.memory_mb.to_string());
    set("AWS_LAMBDA_FUNCTION_VERSION", &f.version);
    set("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand");
    set("AWS_LAMBDA_LOG_GROUP_NAME", &format!("/aws/lambda/{}", f.name));
    set("AWS_LAMBDA_LOG_STREAM_NAME", &f.log_stream);
    // Placeholders: a local run must not carry real credentials into the function.
    set("AWS_ACCESS_KEY_ID", "ASIACOLDSTARTLOCAL00");
    set("AWS_ACCESS_KEY", "ASIACOLDSTARTLOCAL00");
    set("AWS_SECRET_ACCESS_KEY", "coldstart-local-secret");
    set("AWS_SESSION_TOKEN", "coldstart-local-session");
    set("LAMBDA_TASK_ROOT", &f.task_root);
    set("LAMBDA_RUNTIME_DIR", &f.task_root);
    set("LANG", "en_US.UTF-8");
    set("TZ", ":UTC");
    set("AWS_XRAY_CONTEXT_MISSING", "LOG_ERROR");
    set("AWS_XRAY_DAEMON_ADDRESS", "169.254.79.129:2000");
    set(
        "PATH",
        &std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
    );
    if let Ok(ld) = std::env::var("LD_LIBRARY_PATH") {
        set("LD_LIBRARY_PATH", &ld);
    }
    for (k, val) in user {
        v.retain(|(old, _)| old != k);
        v.push((k.clone(), val.clone()));
    }
    v
}

/// The extensions' environment: the runtime's minus what Lambda withholds.
pub fn extension_env(runtime_env: &[(String, String)]) -> Vec<(String, String)> {
    runtime_env
        .iter()
        .filter(|(k, _)| !k.starts_with('_') && !NOT_FOR_EXTENSIONS.contains(&k.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f() -> Function {
        Function {
            name: "fn".into(),
            version: "$LATEST".into(),
            handler: "h".into(),
            memory_mb: 512,
            region: "us-east-1".into(),
            account_id: "000000000000".into(),
            task_root: "/task".into(),
            log_stream: "s".into(),
        }
    }

    #[test]
    fn runtime_and_extension_envs() {
        let rt = runtime_env(&f(), "127.0.0.1:9", &[("MY".into(), "1".into())]);
        let get = |v: &[(String, String)], k: &str| v.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
        assert_eq!(get(&rt, "AWS_LAMBDA_RUNTIME_API").as_deref(), Some("127.0.0.1:9"));
        assert_eq!(
            get(&rt, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE").as_deref(),
            Some("512")
        );
        assert_eq!(get(&rt, "_HANDLER").as_deref(), Some("h"));
        assert_eq!(get(&rt, "MY").as_deref(), Some("1"));
        let ext = extension_env(&rt);
        assert_eq!(
            get(&ext, "AWS_LAMBDA_RUNTIME_API").as_deref(),
            Some("127.0.0.1:9")
        );
        assert_eq!(get(&ext, "MY").as_deref(), Some("1"));
        for hidden in [
            "_HANDLER",
            "LAMBDA_TASK_ROOT",
            "AWS_LAMBDA_LOG_GROUP_NAME",
            "AWS_XRAY_DAEMON_ADDRESS",
        ] {
            assert!(get(&ext, hidden).is_none(), "{hidden}");
        }
        assert!(check_user_env(&[("AWS_REGION".into(), "x".into())]).is_err());
        assert!(check_user_env(&[("MY".into(), "x".into())]).is_ok());
    }
}
