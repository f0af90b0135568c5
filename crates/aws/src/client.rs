//! The Lambda client (the official AWS SDK for Rust: the standard credential
//! chain, SigV4, retries) and the service's errors in one line each.

use anyhow::{anyhow, Result};
use aws_sdk_lambda::config::http::HttpResponse;
use aws_sdk_lambda::error::{ProvideErrorMetadata, SdkError};

/// Where the API is: the service by the standard chain's region, or any
/// Lambda-compatible API at `endpoint_url`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Endpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

impl Endpoint {
    /// For messages: the URL, or the service in its region.
    pub fn describe(&self) -> String {
        match (&self.endpoint_url, &self.region) {
            (Some(u), _) => u.clone(),
            (None, Some(r)) => format!("AWS Lambda in {r}"),
            (None, None) => "AWS Lambda (the region of the default AWS configuration)".into(),
        }
    }
}

/// A client for `endpoint`. Credentials and region come from the SDK's default
/// chain (environment, profile, SSO, web identity, instance role); `--region`
/// overrides the chain's region. The https client is rustls on ring: see the
/// workspace's Cargo.toml for why not the SDK's default.
pub async fn connect(endpoint: &Endpoint) -> Result<aws_sdk_lambda::Client> {
    use aws_smithy_http_client::{tls, Builder};
    let http = Builder::new()
        .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
        .build_https();
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest()).http_client(http);
    if let Some(r) = &endpoint.region {
        loader = loader.region(aws_config::Region::new(r.clone()));
    }
    if let Some(u) = &endpoint.endpoint_url {
        loader = loader.endpoint_url(u.clone());
    }
    let config = loader.load().await;
    if config.region().is_none() {
        anyhow::bail!(
            "no AWS region: give --region, or set AWS_REGION (or a profile's region in ~/.aws/config)"
        );
    }
    Ok(aws_sdk_lambda::Client::new(&config))
}

/// What the service said about a failed call.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceError {
    /// The error code (`AccessDeniedException`, `TooManyRequestsException`…);
    /// None when no response came (network, timeout).
    pub code: Option<String>,
    pub message: String,
    /// The HTTP status, when a response came.
    pub status: Option<u16>,
}

impl ServiceError {
    pub fn from_sdk<E>(err: &SdkError<E, HttpResponse>) -> ServiceError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        match err {
            SdkError::ServiceError(s) => {
                // An error body the SDK could not read (an XML one from a proxy or
                // an emulator) still says its code and message.
                let body = s
                    .raw()
                    .body()
                    .bytes()
                    .map(|b| String::from_utf8_lossy(b).into_owned());
                let (code, message) = match (s.err().code(), s.err().message()) {
                    (Some(c), m) => (Some(c.to_string()), m.map(str::to_string)),
                    (None, m) => {
                        let (c, bm) = body.as_deref().map(from_body).unwrap_or_default();
                        (c, m.map(str::to_string).or(bm))
                    }
                };
                let status = s.raw().status().as_u16();
                ServiceError {
                    message: message
                        .unwrap_or_else(|| format!("HTTP {status} with an error the SDK could not read")),
                    code,
                    status: Some(status),
                }
            }
            _ => ServiceError {
                code: None,
                message: aws_sdk_lambda::error::DisplayErrorContext(err).to_string(),
                status: None,
            },
        }
    }

    pub fn is(&self, code: &str) -> bool {
        self.code.as_deref() == Some(code)
    }

    /// The service refused for want of a permission (a 403 that is not about
    /// the credentials themselves).
    pub fn denied(&self) -> bool {
        !self.bad_credentials()
            && (matches!(
                self.code.as_deref(),
                Some("AccessDeniedException" | "AccessDenied" | "UnauthorizedOperation")
            ) || self.status == Some(403))
    }

    /// The credentials or the request's signature were refused.
    pub fn bad_credentials(&self) -> bool {
        matches!(
            self.code.as_deref(),
            Some(
                "UnrecognizedClientException"
                    | "InvalidSignatureException"
                    | "SignatureDoesNotMatch"
                    | "InvalidClientTokenId"
                    | "ExpiredTokenException"
                    | "ExpiredToken"
            )
        )
    }

    /// `CODE: message` (or the message alone).
    pub fn short(&self) -> String {
        match &self.code {
            Some(c) => format!("{c}: {}", self.message),
            None => self.message.clone(),
        }
    }
}

/// The code and message of an error body: JSON (`__type`/`code`, `message`) or
/// XML (`<Code>`, `<Message>`).
fn from_body(body: &str) -> (Option<String>, Option<String>) {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        let field = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| v.get(*n).and_then(|x| x.as_str()))
                .map(|s| s.rsplit('#').next().unwrap_or(s).to_string())
        };
        return (
            field(&["__type", "code", "Code", "Type"]),
            field(&["message", "Message"]),
        );
    }
    let tag = |t: &str| {
        let open = format!("<{t}>");
        let start = body.find(&open)? + open.len();
        let end = body[start..].find(&format!("</{t}>"))? + start;
        Some(body[start..end].trim().to_string())
    };
    (tag("Code"), tag("Message"))
}

/// The IAM action a denial names: the one in the service's message (`… is not
/// authorized to perform: lambda:PublishVersion on resource …`), else the one the
/// call needs.
pub fn denied_action(message: &str, needed: &str) -> String {
    message
        .split("perform: ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .filter(|a| a.contains(':'))
        .unwrap_or(needed)
        .to_string()
}

/// A failed call as one error line: a denial names the IAM action; anything
/// else says what was being done and what the service said.
pub fn explain(e: &ServiceError, action: &str, function: &str, endpoint: &Endpoint) -> anyhow::Error {
    if e.denied() {
        return anyhow!(
            "access denied: the caller may not {} on {function} ({}); grant it (docs/lambda-aws.md lists the minimal policy)",
            denied_action(&e.message, action),
            e.short()
        );
    }
    if e.bad_credentials() {
        return anyhow!(
            "{action} on {function}: the credentials were refused ({}): check AWS_PROFILE, the access keys or the SSO session",
            e.short()
        );
    }
    match &e.code {
        Some(_) => anyhow!("{action} on {function}: {}", e.short()),
        None => anyhow!(
            "{action} on {function}: no answer from {}: {}",
            endpoint.describe(),
            e.message
        ),
    }
}

/// `explain` for an SDK error.
pub fn fail<E>(
    err: SdkError<E, HttpResponse>,
    action: &str,
    function: &str,
    endpoint: &Endpoint,
) -> anyhow::Error
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    explain(&ServiceError::from_sdk(&err), action, function, endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AccessDeniedException's message as Lambda words it (the AWS docs'
    /// "troubleshooting execution" page's form), and one with no action in it.
    #[test]
    fn a_denial_names_the_iam_action_in_one_line() {
        let e = ServiceError {
            code: Some("AccessDeniedException".into()),
            message: "User: arn:aws:iam::123456789012:user/dev is not authorized to perform: lambda:UpdateFunctionConfiguration on resource: arn:aws:lambda:us-east-1:123456789012:function:my-fn because no identity-based policy allows the lambda:UpdateFunctionConfiguration action".into(),
            status: Some(403),
        };
        let text = explain(
            &e,
            "lambda:UpdateFunctionConfiguration",
            "my-fn",
            &Endpoint::default(),
        )
        .to_string();
        assert!(
            text.starts_with("access denied: the caller may not lambda:UpdateFunctionConfiguration on my-fn"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1);
        let e = ServiceError {
            code: Some("AccessDeniedException".into()),
            message: "Access denied".into(),
            status: Some(403),
        };
        let text = explain(&e, "lambda:PublishVersion", "f", &Endpoint::default()).to_string();
        assert!(
            text.starts_with("access denied: the caller may not lambda:PublishVersion on f"),
            "{text}"
        );
    }

    #[test]
    fn an_unread_error_body_still_gives_its_code_and_message() {
        let xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<ErrorResponse><Errors><Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided.</Message><Type>Sender</Type></Error></Errors></ErrorResponse>";
        assert_eq!(
            from_body(xml),
            (
                Some("SignatureDoesNotMatch".into()),
                Some("The request signature we calculated does not match the signature you provided.".into())
            )
        );
        let json = r#"{"__type":"com.amazon.coral.service#AccessDeniedException","message":"no"}"#;
        assert_eq!(
            from_body(json),
            (Some("AccessDeniedException".into()), Some("no".into()))
        );
        let e = ServiceError {
            code: Some("SignatureDoesNotMatch".into()),
            message: "The request signature we calculated does not match".into(),
            status: Some(403),
        };
        assert!(!e.denied());
        let text = explain(&e, "lambda:GetFunction", "fn", &Endpoint::default()).to_string();
        assert!(
            text.starts_with("lambda:GetFunction on fn: the credentials were refused (SignatureDoesNotMatch"),
            "{text}"
        );
    }

    #[test]
    fn other_errors_say_the_call_and_the_service_message() {
        let e = ServiceError {
            code: Some("ResourceNotFoundException".into()),
            message: "Function not found: arn:aws:lambda:us-east-1:123456789012:function:nope".into(),
            status: Some(404),
        };
        let text = explain(&e, "lambda:GetFunction", "nope", &Endpoint::default()).to_string();
        assert_eq!(
            text,
            "lambda:GetFunction on nope: ResourceNotFoundException: Function not found: arn:aws:lambda:us-east-1:123456789012:function:nope"
        );
    }
}
