//! When a readiness probe can mark a container Ready, by the kubelet's rules:
//! its prober runs at the container's start and then every `periodSeconds`, a
//! run before `initialDelaySeconds` (whole seconds) does nothing, and a passing
//! probe marks it Ready. The kubelet also runs a not-yet-ready container's
//! readiness probe at once when the pod's status changes, so a tick is the
//! latest it is marked, and the initial delay the earliest. A startup probe
//! holds the readiness probe back until it passes, which is such a change.

use serde::{Deserialize, Serialize};

/// A probe's timing fields (core/v1 Probe; defaults as the API sets them).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeSpec {
    #[serde(rename = "initialDelaySeconds", default)]
    pub initial_delay_s: u32,
    #[serde(rename = "periodSeconds", default = "ten")]
    pub period_s: u32,
}

fn ten() -> u32 {
    10
}

impl ProbeSpec {
    /// The first instant (ms after the container's start) this probe can pass
    /// for a program ready at `ready_ms`: its first tick at or after both.
    pub fn passes_at_ms(&self, ready_ms: f64) -> f64 {
        let period = f64::from(self.period_s.max(1)) * 1000.0;
        let from = ready_ms.max(f64::from(self.initial_delay_s) * 1000.0);
        (from / period).ceil() * period
    }

    /// By when a container with this readiness probe (and `startup`, if any)
    /// is marked Ready, for a program ready at `ready_ms` after its start.
    pub fn ready_by_ms(&self, startup: Option<&ProbeSpec>, ready_ms: f64) -> f64 {
        match startup {
            // The startup probe passes on its own ticks; the readiness probe
            // runs at once after it, but not before its own initial delay.
            Some(s) => {
                let started = s.passes_at_ms(ready_ms);
                let delay = f64::from(self.initial_delay_s) * 1000.0;
                if started >= delay {
                    started
                } else {
                    self.passes_at_ms(started)
                }
            }
            None => self.passes_at_ms(ready_ms),
        }
    }
}

/// A pod whose Ready came when its readiness probe first could pass: the
/// probe's timing, not the program, decided it (the program may have been
/// ready long before; `coldstart bench` measures when).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeFloor {
    pub container: String,
    pub initial_delay_s: u32,
    pub period_s: u32,
    /// The earliest its probes let it be Ready: their initial delay (ms after the start).
    pub floor_ms: f64,
    /// When it was (ms after its containers started).
    pub ready_ms: f64,
}

/// The container whose readiness probe held `pod` back: Ready came within the
/// API's one-second resolution of the earliest its probes allow (their initial
/// delays), and that is at least a second.
pub(crate) fn floor(
    pod: &crate::objects::Pod,
    started: Option<i128>,
    ready: Option<i128>,
) -> Option<ProbeFloor> {
    let ready_ms = (ready? - started?) as f64 / 1e6;
    pod.spec
        .containers
        .iter()
        .filter_map(|c| {
            let r = c.readiness_probe?;
            let startup_delay = c.startup_probe.map_or(0, |s| s.initial_delay_s);
            let floor_ms = f64::from(r.initial_delay_s.max(startup_delay)) * 1000.0;
            (floor_ms >= 1000.0 && ready_ms <= floor_ms + 1000.0).then(|| ProbeFloor {
                container: c.name.clone(),
                initial_delay_s: r.initial_delay_s,
                period_s: r.period_s,
                floor_ms,
                ready_ms,
            })
        })
        .max_by(|a, b| a.floor_ms.total_cmp(&b.floor_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(delay: u32, period: u32) -> ProbeSpec {
        ProbeSpec {
            initial_delay_s: delay,
            period_s: period,
        }
    }

    #[test]
    fn a_slow_readiness_probe_marks_ready_at_its_first_tick_after_the_delay() {
        // Ready at 1.9 s; initialDelaySeconds 10, periodSeconds 10: Ready at 10 s,
        // 8.1 s lost per start.
        let slow = probe(10, 10);
        assert_eq!(slow.ready_by_ms(None, 1900.0), 10_000.0);
        // Ready later than the delay: the next tick.
        assert_eq!(slow.ready_by_ms(None, 12_500.0), 20_000.0);
        // A startup probe every second gates it instead: Ready at 2 s (with the
        // readiness probe's own delay dropped) …
        assert_eq!(probe(0, 10).ready_by_ms(Some(&probe(0, 1)), 1900.0), 2000.0);
        // … but not before a readiness delay that is kept.
        assert_eq!(slow.ready_by_ms(Some(&probe(0, 1)), 1900.0), 10_000.0);
        // The API's defaults: no delay, every 10 s: by the second run at the latest.
        let d: ProbeSpec = serde_json::from_str("{}").unwrap();
        assert_eq!(d, probe(0, 10));
        assert_eq!(d.ready_by_ms(None, 300.0), 10_000.0);
        assert_eq!(d.ready_by_ms(None, 0.0), 0.0);
    }
}
