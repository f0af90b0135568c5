//! What a receiver keeps of what arrives, within its [`Limits`]: shared by the
//! receiver, which fills it, and the section, which reads it (so neither
//! imports the other).

use super::decode::Got;
use std::collections::BTreeSet;

/// What one receiver keeps, so a chatty (or hostile) local sender cannot grow
/// coldstart's memory without bound: spans beyond these are counted and dropped,
/// and the section says so.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Spans kept per run.
    pub spans: usize,
    /// Bytes the spans kept occupy (`Got::approx_bytes`: names, ids, attributes,
    /// events, as allocated). A run's section costs about as much again, and the
    /// explanation's JSON about as much once more: 16 MiB kept a whole explain at
    /// 84 MiB resident where 24 MiB reached 121 MiB, against the 128 MiB that
    /// `tests/integration/explain_otlp_memory.rs` holds it to.
    pub bytes: usize,
    /// Largest request body, on the wire and after decompression (413 beyond).
    /// SDKs batch at most 512 spans per request by default, far below this.
    pub body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            spans: 100_000,
            bytes: 16 << 20,
            body: 16 << 20,
        }
    }
}

/// Everything the handlers saw, in arrival order.
#[derive(Debug, Default)]
pub(super) struct Received {
    pub(super) spans: Vec<Got>,
    /// Trace export requests decoded.
    pub(super) requests: usize,
    /// How they came: "protobuf", "OTLP/JSON", with "+gzip"/"+deflate".
    pub(super) encodings: BTreeSet<String>,
    /// Metrics/logs export requests (accepted, not read).
    pub(super) other_signals: usize,
    /// Requests refused (bad body, unknown content type or encoding); the first few reasons.
    pub(super) refused: usize,
    pub(super) refusals: Vec<String>,
    pub(super) limits: Limits,
    /// Estimated size of `spans`.
    pub(super) kept_bytes: usize,
    /// Spans that arrived past `limits` and were not kept.
    pub(super) dropped: usize,
}

impl Received {
    /// Keep spans while within the limits; count the rest.
    pub(super) fn keep(&mut self, spans: impl IntoIterator<Item = Got>) {
        for g in spans {
            let size = g.approx_bytes();
            if self.spans.len() < self.limits.spans && self.kept_bytes + size <= self.limits.bytes {
                self.kept_bytes += size;
                self.spans.push(g);
            } else {
                self.dropped += 1;
            }
        }
    }

    pub(super) fn refuse(&mut self, why: String) {
        self.refused += 1;
        if self.refusals.len() < 3 {
            self.refusals.push(why);
        }
    }
}
