//! The REPORT line in an Invoke's log tail (`LogType=Tail`: the last 4 KB of the
//! invoke's log, base64), read into numbers. The line's fields are `Name: value
//! [unit]`, separated by tabs in CloudWatch (some renderings show spaces), in an
//! order that varies with the function: `Init Duration` on an on-demand cold
//! start, `Restore Duration` and `Billed Restore Duration` on a SnapStart
//! restore, `Status` and `Error Type` on a failure, the X-Ray fields when traced.
//! Fields this parser does not know are ignored.

use regex::Regex;
use std::sync::OnceLock;

/// What one REPORT line says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub request_id: Option<String>,
    pub duration_ms: Option<f64>,
    pub billed_ms: Option<f64>,
    pub memory_size_mb: Option<f64>,
    pub max_memory_used_mb: Option<f64>,
    /// On-demand cold start: the environment's init.
    pub init_ms: Option<f64>,
    /// SnapStart: the snapshot's restore, the runtime's load and afterRestore hooks.
    pub restore_ms: Option<f64>,
    pub billed_restore_ms: Option<f64>,
    /// `error`, `timeout`, … (absent when the invoke succeeded).
    pub status: Option<String>,
    pub error_type: Option<String>,
}

impl Report {
    /// A new execution environment served this invoke: init ran (Init Duration)
    /// or a snapshot was restored (Restore Duration).
    pub fn cold(&self) -> bool {
        self.init_ms.is_some() || self.restore_ms.is_some()
    }

    /// The run's time to ready: Init Duration, or for SnapStart Restore Duration.
    pub fn ready_ms(&self) -> Option<f64> {
        self.init_ms.or(self.restore_ms)
    }

    /// The figures as sample metrics, the unit in each name.
    pub fn metrics(&self) -> Vec<(&'static str, f64)> {
        [
            ("duration_ms", self.duration_ms),
            ("billed_ms", self.billed_ms),
            ("memory_size_mb", self.memory_size_mb),
            ("max_memory_mb", self.max_memory_used_mb),
            ("init_ms", self.init_ms),
            ("restore_ms", self.restore_ms),
            ("billed_restore_ms", self.billed_restore_ms),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// The field names, longest first where one ends another (`Billed Duration`
/// before `Duration`): at a given start, the first alternative that matches wins.
fn fields() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(Billed Restore Duration|Restore Duration|Billed Duration|Init Duration|Max Memory Used|Memory Size|Duration|Status|Error Type|RequestId|XRAY TraceId|SegmentId|Sampled): ",
        )
        .expect("a valid regex")
    })
}

/// A number with an optional unit (`12.34 ms`, `128 MB`).
fn number(v: &str) -> Option<f64> {
    v.split_whitespace().next()?.parse().ok()
}

/// The last REPORT line of a decoded log tail, parsed; None when the tail holds
/// none (cut before it, or the service wrote none).
pub fn find(tail: &str) -> Option<Report> {
    let line = tail
        .lines()
        .rev()
        .find_map(|l| l.find("REPORT RequestId:").map(|at| &l[at..]))?;
    Some(parse(line))
}

/// One REPORT line's fields.
pub fn parse(line: &str) -> Report {
    let mut r = Report::default();
    let found: Vec<_> = fields().captures_iter(line).collect();
    for (i, c) in found.iter().enumerate() {
        let (Some(whole), Some(name)) = (c.get(0), c.get(1)) else {
            continue;
        };
        let end = found
            .get(i + 1)
            .and_then(|n| n.get(0))
            .map_or(line.len(), |m| m.start());
        let value = line[whole.end()..end].trim();
        match name.as_str() {
            "RequestId" => r.request_id = Some(value.to_string()),
            "Duration" => r.duration_ms = number(value),
            "Billed Duration" => r.billed_ms = number(value),
            "Memory Size" => r.memory_size_mb = number(value),
            "Max Memory Used" => r.max_memory_used_mb = number(value),
            "Init Duration" => r.init_ms = number(value),
            "Restore Duration" => r.restore_ms = number(value),
            "Billed Restore Duration" => r.billed_restore_ms = number(value),
            "Status" => r.status = Some(value.to_string()),
            "Error Type" => r.error_type = Some(value.to_string()),
            _ => {}
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cold start with X-Ray's fields after Init Duration: the line Baselime's
    /// documentation shows for the keys it discovers (rendered with spaces).
    #[test]
    fn on_demand_cold_start_with_xray() {
        let r = parse(
            "REPORT RequestId: 8fc6f963-411b-58b5-8483-a32130c0f45d Duration: 201.67 ms Billed Duration: 202 ms Memory Size: 2048 MB Max Memory Used: 81 MB Init Duration: 480.25 ms XRAY TraceId: 1-61c86fa4-59b3c6d959653c527fd10966 SegmentId: 107ea78a5750a811 Sampled: true",
        );
        assert_eq!(
            r.request_id.as_deref(),
            Some("8fc6f963-411b-58b5-8483-a32130c0f45d")
        );
        assert_eq!(r.duration_ms, Some(201.67));
        assert_eq!(r.billed_ms, Some(202.0));
        assert_eq!(r.memory_size_mb, Some(2048.0));
        assert_eq!(r.max_memory_used_mb, Some(81.0));
        assert_eq!(r.init_ms, Some(480.25));
        assert!(r.cold());
        assert_eq!(r.ready_ms(), Some(480.25));
        assert_eq!(r.status, None);
    }

    /// The same line with CloudWatch's tabs between the fields parses alike.
    #[test]
    fn tabs_or_spaces() {
        let r = parse(
            "REPORT RequestId: 8fc6f963-411b-58b5-8483-a32130c0f45d\tDuration: 201.67 ms\tBilled Duration: 202 ms\tMemory Size: 2048 MB\tMax Memory Used: 81 MB\tInit Duration: 480.25 ms\t",
        );
        assert_eq!(r.duration_ms, Some(201.67));
        assert_eq!(r.billed_ms, Some(202.0));
        assert_eq!(r.init_ms, Some(480.25));
    }

    /// A warm invoke: no Init Duration, no Restore Duration, so not cold. The line
    /// from an issue of the Python runtime interface client, with its trailing tab.
    #[test]
    fn warm_invoke_is_not_cold() {
        let r = parse(
            "REPORT RequestId: eedc7f6f-d42d-4154-9b53-c9d2c984b603\tDuration: 317.51 ms\tBilled Duration: 318 ms\tMemory Size: 2000 MB\tMax Memory Used: 15 MB\t",
        );
        assert_eq!(r.duration_ms, Some(317.51));
        assert_eq!(r.max_memory_used_mb, Some(15.0));
        assert!(!r.cold());
        assert_eq!(r.ready_ms(), None);
    }

    /// SnapStart: a restored environment's REPORT has Restore Duration and Billed
    /// Restore Duration and no Init Duration (AWS's "Monitoring for Lambda
    /// SnapStart"). The line as `sam logs` printed it for a SnapStart Java function
    /// in a public sample's README (with its trailing tab), and one with X-Ray's
    /// fields and spaces (a CloudWatch export in another project's test data).
    #[test]
    fn snapstart_restore() {
        let tail = "2023/06/02/[72]88ab219a63d343d294d0a9947e8ab36a 2023-06-02T11:27:25.060000 END RequestId: 8c360c87-d4b7-4423-b5f3-af02be3c1763\n2023/06/02/[72]88ab219a63d343d294d0a9947e8ab36a 2023-06-02T11:27:25.060000 REPORT RequestId: 8c360c87-d4b7-4423-b5f3-af02be3c1763\tDuration: 2338.66 ms\tBilled Duration: 2521 ms\tMemory Size: 3009 MB\tMax Memory Used: 173 MB\tRestore Duration: 398.97 ms\tBilled Restore Duration: 182 ms\t\n";
        let r = find(tail).unwrap();
        assert_eq!(
            r.request_id.as_deref(),
            Some("8c360c87-d4b7-4423-b5f3-af02be3c1763")
        );
        assert_eq!(r.duration_ms, Some(2338.66));
        assert_eq!(r.billed_ms, Some(2521.0));
        assert_eq!(r.memory_size_mb, Some(3009.0));
        assert_eq!(r.init_ms, None);
        assert_eq!(r.restore_ms, Some(398.97));
        assert_eq!(r.billed_restore_ms, Some(182.0));
        assert!(r.cold());
        assert_eq!(r.ready_ms(), Some(398.97));
        let m = r.metrics();
        assert!(m.contains(&("restore_ms", 398.97)));
        assert!(m.contains(&("billed_restore_ms", 182.0)));
        assert!(!m.iter().any(|(k, _)| *k == "init_ms"));
        let r = parse(
            "REPORT RequestId: 24addd09-6e64-49fb-b187-94ba9b60b59a Duration: 127.10 ms Billed Duration: 154 ms Memory Size: 2048 MB Max Memory Used: 212 MB Restore Duration: 325.93 ms Billed Restore Duration: 26 ms XRAY TraceId: 1-66d978e5-56c7378e556e94b5461da07c SegmentId: 29c3839e6ecb5895 Sampled: true",
        );
        assert_eq!(r.restore_ms, Some(325.93));
        assert_eq!(r.billed_restore_ms, Some(26.0));
        assert_eq!(r.max_memory_used_mb, Some(212.0));
    }

    /// A failed invoke: Status and Error Type after the figures. No public line
    /// with both was found to copy: these are in the format the emulator writes
    /// (crates/lambda/src/report.rs, checked there against AWS's documented
    /// INIT_REPORT and REPORT fields).
    #[test]
    fn failed_invoke_status_and_error_type() {
        let r = parse(
            "REPORT RequestId: r1\tDuration: 3000.00 ms\tBilled Duration: 3162 ms\tMemory Size: 128 MB\tMax Memory Used: 78 MB\tInit Duration: 162.08 ms\tStatus: timeout",
        );
        assert_eq!(r.status.as_deref(), Some("timeout"));
        assert_eq!(r.error_type, None);
        let r = parse(
            "REPORT RequestId: r2\tDuration: 12.00 ms\tBilled Duration: 200 ms\tMemory Size: 128 MB\tMax Memory Used: 40 MB\tInit Duration: 187.50 ms\tStatus: error\tError Type: Runtime.ExitError",
        );
        assert_eq!(r.status.as_deref(), Some("error"));
        assert_eq!(r.error_type.as_deref(), Some("Runtime.ExitError"));
        assert_eq!(r.init_ms, Some(187.5));
    }

    /// The REPORT is found as the last such line of a whole tail; a tail cut
    /// before it has none.
    #[test]
    fn finds_the_report_in_a_tail() {
        let tail = "START RequestId: r1 Version: 3\nhello\nEND RequestId: r1\nREPORT RequestId: r1\tDuration: 1.50 ms\tBilled Duration: 120 ms\tMemory Size: 128 MB\tMax Memory Used: 30 MB\tInit Duration: 118.20 ms\t\n";
        let r = find(tail).unwrap();
        assert_eq!(r.init_ms, Some(118.2));
        assert_eq!(find("START RequestId: r1 Version: 3\nhello\n"), None);
    }
}
