//! The Lambda API's shapes: errors (status, `X-Amzn-ErrorType`, `{"Type",
//! "Message"}`) and FunctionConfiguration.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// An error as the service returns it; SDKs take the code from the
/// `X-Amzn-ErrorType` header and the message from the body.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "ResourceNotFoundException",
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "InvalidParameterValueException",
            message: message.into(),
        }
    }
    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::CONFLICT,
            kind: "ResourceConflictException",
            message: message.into(),
        }
    }
    pub fn busy(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::TOO_MANY_REQUESTS,
            kind: "TooManyRequestsException",
            message: message.into(),
        }
    }
    pub fn service(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "ServiceException",
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"Type": "User", "Message": self.message});
        if self.kind == "TooManyRequestsException" {
            // The service's reason for a throttle; SDKs retry it.
            body["Reason"] = "ConcurrentInvocationLimitExceeded".into();
        }
        if self.kind == "ServiceException" {
            body["Type"] = "Service".into();
        }
        let mut r = (self.status, axum::Json(body)).into_response();
        r.headers_mut()
            .insert("X-Amzn-ErrorType", HeaderValue::from_static(self.kind));
        r
    }
}

/// The Lambda API operation a request is, for the message of one not served.
pub fn operation(method: &str, path: &str) -> String {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let op = match (method, parts.as_slice()) {
        ("POST", [_, "functions"]) => "CreateFunction",
        ("PUT", [_, "functions", _, "code"]) => "UpdateFunctionCode",
        ("GET", [_, "functions", _, "aliases"]) => "ListAliases",
        ("POST", [_, "functions", _, "aliases"]) => "CreateAlias",
        ("GET", [_, "functions", _, "aliases", _]) => "GetAlias",
        ("GET", [_, "functions", _, "policy"]) => "GetPolicy",
        ("POST", [_, "functions", _, "policy"]) => "AddPermission",
        ("GET", [_, "functions", _, "concurrency"]) => "GetFunctionConcurrency",
        ("PUT", [_, "functions", _, "concurrency"]) => "PutFunctionConcurrency",
        ("GET", [_, "functions", _, "url"]) => "GetFunctionUrlConfig",
        ("POST", [_, "functions", _, "invoke-async"]) => "InvokeAsync",
        ("GET", [_, "layers", ..]) => "ListLayers",
        ("GET", [_, "event-source-mappings", ..]) => "ListEventSourceMappings",
        ("GET", [_, "tags", _]) => "ListTags",
        _ => return format!("this operation ({method} {path})"),
    };
    op.to_string()
}

/// The fields of one function version that FunctionConfiguration shows.
pub struct Shown<'a> {
    pub def: &'a super::Definition,
    pub version: &'a str,
    pub arn: String,
    pub revision: &'a str,
    pub last_modified: &'a str,
    pub code_sha256: String,
    /// The layers' ARNs, in order.
    pub layer_arns: Vec<String>,
}

/// FunctionConfiguration: always `State: Active`, `LastUpdateStatus: Successful`
/// (an update is done when its response is sent).
pub fn configuration(s: &Shown) -> Value {
    let d = s.def;
    let vars: serde_json::Map<String, Value> = d
        .env
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    json!({
        "FunctionName": d.name,
        "FunctionArn": s.arn,
        "Runtime": d.runtime_id(),
        "Role": "arn:aws:iam::000000000000:role/coldstart-lambda-serve",
        "Handler": d.handler,
        "CodeSize": 0,
        "Description": "",
        "Timeout": d.timeout.as_secs(),
        "MemorySize": d.memory_mb,
        "LastModified": s.last_modified,
        "CodeSha256": s.code_sha256,
        "Version": s.version,
        "Environment": {"Variables": vars},
        "TracingConfig": {"Mode": "PassThrough"},
        "RevisionId": s.revision,
        "Layers": s.layer_arns.iter().map(|a| json!({"Arn": a, "CodeSize": 0})).collect::<Vec<_>>(),
        "State": "Active",
        "LastUpdateStatus": "Successful",
        "PackageType": "Zip",
        "Architectures": ["x86_64"],
        "EphemeralStorage": {"Size": 512},
        "SnapStart": {"ApplyOn": "None", "OptimizationStatus": "Off"},
        "LoggingConfig": {"LogFormat": "Text", "LogGroup": format!("/aws/lambda/{}", d.name)},
    })
}

/// LastModified as the service writes it: `2026-11-27T12:00:00.000+0000`.
pub fn last_modified_now() -> String {
    let iso = crate::telemetry::iso8601_now();
    match iso.strip_suffix('Z') {
        Some(t) => format!("{t}+0000"),
        None => iso,
    }
}

/// The last 4 KB of an invoke's log, as `X-Amz-Log-Result` carries it.
pub fn log_result(log: &[u8]) -> String {
    use base64::Engine;
    const TAIL: usize = 4096;
    let tail = &log[log.len().saturating_sub(TAIL)..];
    base64::engine::general_purpose::STANDARD.encode(tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_not_served_are_named_as_their_operation() {
        assert_eq!(operation("POST", "/2015-03-31/functions"), "CreateFunction");
        assert_eq!(
            operation("PUT", "/2015-03-31/functions/f/code"),
            "UpdateFunctionCode"
        );
        assert_eq!(operation("GET", "/2015-03-31/functions/f/aliases"), "ListAliases");
        assert_eq!(operation("PATCH", "/x"), "this operation (PATCH /x)");
    }

    #[test]
    fn the_log_tail_is_the_last_4_kb() {
        use base64::Engine;
        let log: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let tail = base64::engine::general_purpose::STANDARD
            .decode(log_result(&log))
            .unwrap();
        assert_eq!(tail, &log[10_000 - 4096..]);
        let short = base64::engine::general_purpose::STANDARD
            .decode(log_result(b"REPORT x\n"))
            .unwrap();
        assert_eq!(short, b"REPORT x\n");
    }
}
