//! The init CPU boost: how much CPU an on-demand init gets, and for how long.
//!
//! AWS's guide "Effectively running Java on serverless" (serverlessland.com):
//! "On-demand Lambda functions use a full vCPU (non-throttled) but is limited to 10
//! seconds during its initialization phase … For provisioned concurrency, there is
//! no cpu burst". The re:Invent Java talk says "boosted host CPU access, up to 10
//! seconds". So by default an on-demand init (phase `init`) runs with
//! max(1 vCPU, memory/1769) for at most 10 s of init, then the memory-proportional
//! quota applies; a suppressed init (phase `invoke`, inside the function timeout)
//! gets no boost. Both numbers are settings (`--init-cpus`, `--init-boost-seconds`)
//! to calibrate against one's own REPORT lines; `--no-init-boost` is the worst case.

use super::sandbox::{self, CpuQuota};
use std::time::Duration;

/// AWS: "a full vCPU (non-throttled)".
pub const DEFAULT_VCPUS: f64 = 1.0;
/// AWS: "limited to 10 seconds during its initialization phase".
pub const DEFAULT_SECONDS: f64 = 10.0;

/// The boost an on-demand init gets (None in Options: no boost).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Boost {
    /// CPU during the boost, in vCPUs (never less than the memory's share).
    pub vcpus: f64,
    /// How long into init the boost lasts.
    pub seconds: Duration,
}

impl Default for Boost {
    fn default() -> Self {
        Boost {
            vcpus: DEFAULT_VCPUS,
            seconds: Duration::from_secs_f64(DEFAULT_SECONDS),
        }
    }
}

/// The CPU (vCPUs) an init of `phase` starts with at `memory_mb`, and when (since
/// T0) it falls to the memory's share; None: no boost for this init.
pub fn plan(boost: Option<Boost>, memory_mb: u64, phase: &str) -> (f64, Option<Duration>) {
    let share = sandbox::vcpus(memory_mb);
    match boost {
        Some(b) if phase == "init" && b.vcpus > share && !b.seconds.is_zero() => {
            (b.vcpus.min(sandbox::MAX_VCPUS), Some(b.seconds))
        }
        _ => (share, None),
    }
}

/// Lowers the quota to the memory's share when the boost's time is up, unless
/// init ended first (then the caller lowers it and drops this).
pub struct Timer(tokio::task::JoinHandle<()>);

impl Timer {
    pub fn start(quota: CpuQuota, after: Duration, memory_mb: u64) -> Timer {
        Timer(tokio::spawn(async move {
            tokio::time::sleep(after).await;
            // The cgroup still exists (the timer is aborted before cleanup); a
            // failed write leaves the boost on, which the run's end corrects.
            let _ = quota.set(Some(sandbox::vcpus(memory_mb)));
        }))
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_demand_init_is_boosted_suppressed_init_is_not() {
        let b = Some(Boost::default());
        assert_eq!(plan(b, 128, "init"), (1.0, Some(Duration::from_secs(10))));
        assert_eq!(plan(b, 128, "invoke").1, None);
        assert!((plan(b, 128, "invoke").0 - sandbox::vcpus(128)).abs() < 1e-9);
        // Above one vCPU's memory the share is already more than the boost.
        assert_eq!(plan(b, 3538, "init"), (2.0, None));
        assert_eq!(plan(None, 128, "init").1, None);
        let two = Some(Boost {
            vcpus: 2.0,
            seconds: Duration::from_secs(3),
        });
        assert_eq!(plan(two, 1769, "init"), (2.0, Some(Duration::from_secs(3))));
    }
}
