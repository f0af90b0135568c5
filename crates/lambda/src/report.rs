//! Lambda's platform log lines, in the production text format: fields separated by
//! tabs, durations with two decimals, `Init Duration` last, and `Billed Duration`
//! including the init (billed for every on-demand function since 2025-08-01).

/// `Status` and `Error Type` of a failed invoke or init.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// `error`, `timeout` or `failure`.
    pub status: String,
    pub error_type: Option<String>,
}

/// `version`: Lambda's runtime version name (`python:3.11.v29` there;
/// `python:3.11.coldstart` or `provided:coldstart` here).
pub fn init_start(region: &str, version: &str) -> String {
    format!(
        "INIT_START Runtime Version: {version}\tRuntime Version ARN: arn:aws:lambda:{region}::runtime:coldstart-emulator"
    )
}

pub fn start(request_id: &str, version: &str) -> String {
    format!("START RequestId: {request_id} Version: {version}")
}

pub fn end(request_id: &str) -> String {
    format!("END RequestId: {request_id}")
}

/// ceil(duration + init), in whole milliseconds.
pub fn billed_ms(duration_ms: f64, init_ms: Option<f64>) -> u64 {
    // Round to the printed hundredths first so the bill agrees with the line.
    let cents = (duration_ms * 100.0).round() as u64 + init_ms.map_or(0, |i| (i * 100.0).round() as u64);
    cents.div_ceil(100)
}

pub struct ReportLine<'a> {
    pub request_id: &'a str,
    pub duration_ms: f64,
    pub memory_mb: u64,
    pub max_memory_used_mb: u64,
    pub init_ms: Option<f64>,
    pub failure: Option<&'a Failure>,
}

pub fn report(r: &ReportLine) -> String {
    let mut s = format!(
        "REPORT RequestId: {}\tDuration: {:.2} ms\tBilled Duration: {} ms\tMemory Size: {} MB\tMax Memory Used: {} MB",
        r.request_id,
        r.duration_ms,
        billed_ms(r.duration_ms, r.init_ms),
        r.memory_mb,
        r.max_memory_used_mb
    );
    if let Some(init) = r.init_ms {
        s.push_str(&format!("\tInit Duration: {init:.2} ms"));
    }
    push_failure(&mut s, r.failure);
    s
}

/// Printed only when init fails (on-demand functions). A timeout has no Error
/// Type (AWS's example: `INIT_REPORT Init Duration: 1236.04 ms Phase: init
/// Status: timeout`).
pub fn init_report(init_ms: f64, phase: &str, failure: &Failure) -> String {
    let mut s = format!("INIT_REPORT Init Duration: {init_ms:.2} ms\tPhase: {phase}");
    if failure.status == "timeout" {
        s.push_str("\tStatus: timeout");
    } else {
        push_failure(&mut s, Some(failure));
    }
    s
}

fn push_failure(s: &mut String, failure: Option<&Failure>) {
    if let Some(f) = failure {
        s.push_str(&format!("\tStatus: {}", f.status));
        // A timeout is its own explanation: Lambda prints no Error Type with it.
        if let (Some(t), false) = (&f.error_type, f.status == "timeout") {
            s.push_str(&format!("\tError Type: {t}"));
        }
    }
}

/// The line(s) Lambda logs between START and END of a failed invoke: `Task timed
/// out after 3.00 seconds` (prefixed with the time and request id), `RequestId: …
/// Error: Runtime exited with error: exit status 1` then the error type, else the
/// generic `Unknown application error occurred` then the error type.
pub fn invoke_error(
    request_id: &str,
    failure: &Failure,
    runtime_exit: Option<&coldstart_core::sample::ExitStatus>,
    timeout_s: f64,
    now_iso: &str,
) -> Vec<String> {
    let kind = failure
        .error_type
        .clone()
        .unwrap_or_else(|| failure.status.clone());
    if failure.status == "timeout" {
        return vec![format!(
            "{now_iso} {request_id} Task timed out after {timeout_s:.2} seconds"
        )];
    }
    match (kind.as_str(), runtime_exit) {
        // Out of memory, Lambda still says how the runtime ended, then the type.
        ("Runtime.ExitError" | "Runtime.OutOfMemory", Some(x)) => {
            let how = match (x.code, x.signal) {
                (Some(c), _) => format!("exit status {c}"),
                (_, Some(9)) => "signal: killed".to_string(),
                (_, Some(s)) => format!("signal: {s}"),
                _ => "exit status unknown".to_string(),
            };
            vec![
                format!("RequestId: {request_id} Error: Runtime exited with error: {how}"),
                kind,
            ]
        }
        _ => vec!["Unknown application error occurred".to_string(), kind],
    }
}

/// Bytes → whole MB as Lambda prints Max Memory Used (rounded up).
pub fn mb(bytes: u64) -> u64 {
    bytes.div_ceil(1024 * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_format() {
        // The documented example: 62.14 + 162.08 → 225 billed.
        let line = report(&ReportLine {
            request_id: "r1",
            duration_ms: 62.14,
            memory_mb: 128,
            max_memory_used_mb: 78,
            init_ms: Some(162.08),
            failure: None,
        });
        assert_eq!(
            line,
            "REPORT RequestId: r1\tDuration: 62.14 ms\tBilled Duration: 225 ms\tMemory Size: 128 MB\tMax Memory Used: 78 MB\tInit Duration: 162.08 ms"
        );
        assert_eq!(billed_ms(1.0, None), 1);
        assert_eq!(billed_ms(1.001, None), 1);
        assert_eq!(billed_ms(1.01, Some(0.5)), 2);
        let timeout = Failure {
            status: "timeout".into(),
            error_type: Some("Sandbox.Timedout".into()),
        };
        assert_eq!(
            init_report(10009.131, "init", &timeout),
            "INIT_REPORT Init Duration: 10009.13 ms\tPhase: init\tStatus: timeout"
        );
        let exit = coldstart_core::sample::ExitStatus {
            code: Some(1),
            signal: None,
        };
        let crashed = Failure {
            status: "error".into(),
            error_type: Some("Runtime.ExitError".into()),
        };
        assert_eq!(
            invoke_error("r1", &crashed, Some(&exit), 3.0, "T"),
            [
                "RequestId: r1 Error: Runtime exited with error: exit status 1",
                "Runtime.ExitError"
            ]
        );
        assert_eq!(
            invoke_error("r1", &timeout, None, 3.0, "T"),
            ["T r1 Task timed out after 3.00 seconds"]
        );
        assert_eq!(mb(1), 1);
        assert_eq!(mb(78 * 1024 * 1024), 78);
    }
}
