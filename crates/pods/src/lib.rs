//! A cluster's pod start-ups from the API's own objects: `kubectl get
//! pods,events -o json` (a List; a PodList alone works without the pulls).
//! Each pod's instants are the objects' timestamps, written by the API server,
//! the scheduler and the kubelet as things happened, not when a watch saw them:
//! created (`metadata.creationTimestamp`), scheduled (the `PodScheduled`
//! condition), its containers started (`containerStatuses[].state.running.
//! startedAt`, the latest) and Ready (the `Ready` condition). Image pulls come
//! from the kubelet's `Pulled` events, whose message carries the pull's own
//! duration ("Successfully pulled image … in 1.234s"). The API keeps these as
//! whole seconds (events' `eventTime` has microseconds), so each interval is
//! ±1 s: the summaries say so.

mod go_duration;
mod objects;
mod probes;

pub use probes::{ProbeFloor, ProbeSpec};

use anyhow::{bail, Context, Result};
use coldstart_stats::Summary;
use serde::Serialize;

/// One pod's start-up, ms from its creation (None: it has not got there).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PodStart {
    pub namespace: String,
    pub name: String,
    pub scheduled_ms: Option<f64>,
    /// Its containers' image pulls, as the kubelet measured them (summed: the
    /// kubelet pulls one image at a time by default); None without events.
    pub pull_ms: Option<f64>,
    pub started_ms: Option<f64>,
    pub ready_ms: Option<f64>,
    /// Created → all containers started, less the pulls: the kubelet's pod
    /// start-up SLI (Kubernetes' SLO: p99 ≤ 5 s). Init containers are not
    /// subtracted.
    pub sli_ms: Option<f64>,
    /// A readiness probe that could not have passed before its initial delay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_floor: Option<ProbeFloor>,
}

/// The pods and their figures over all pods.
#[derive(Debug, Clone, Serialize)]
pub struct Pods {
    pub pods: Vec<PodStart>,
    pub scheduled_ms: Option<Summary>,
    pub started_ms: Option<Summary>,
    pub ready_ms: Option<Summary>,
    pub sli_ms: Option<Summary>,
    /// Whether any Pulled event was there (without events no pull is known).
    pub events: bool,
}

/// Read `kubectl get pods,events -o json` (or `get pods -o json`).
pub fn read(json: &str) -> Result<Pods> {
    let list: objects::List = serde_json::from_str(json)
        .context("not the JSON of `kubectl get pods,events -o json` (a List of Pods and Events)")?;
    let (pods, events) = list.split();
    if pods.is_empty() {
        bail!("no Pod objects in it: give the output of `kubectl get pods,events -o json`");
    }
    let mut out = Vec::new();
    for pod in &pods {
        out.push(pod_start(pod, &events)?);
    }
    out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let over = |f: fn(&PodStart) -> Option<f64>| {
        let mut xs: Vec<f64> = out.iter().filter_map(f).collect();
        xs.sort_by(f64::total_cmp);
        coldstart_stats::summarize(&xs)
    };
    Ok(Pods {
        scheduled_ms: over(|p| p.scheduled_ms),
        started_ms: over(|p| p.started_ms),
        ready_ms: over(|p| p.ready_ms),
        sli_ms: over(|p| p.sli_ms),
        events: events.iter().any(|e| e.reason == "Pulled"),
        pods: out,
    })
}

fn pod_start(pod: &objects::Pod, events: &[objects::Event]) -> Result<PodStart> {
    let created = objects::instant(&pod.metadata.creation_timestamp)
        .with_context(|| format!("pod {}: no creationTimestamp", pod.metadata.name))?;
    let since = |t: Option<i128>| t.map(|t| (t - created) as f64 / 1e6);
    let started = pod.all_started();
    let pulled: Vec<f64> = events
        .iter()
        .filter(|e| e.reason == "Pulled" && e.is_about(pod))
        .filter_map(|e| go_duration::pulled_in(&e.message))
        .collect();
    let pull_ms = (!pulled.is_empty()).then(|| pulled.iter().sum::<f64>());
    let started_ms = since(started);
    let ready_ms = since(pod.condition("Ready"));
    Ok(PodStart {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone(),
        scheduled_ms: since(pod.condition("PodScheduled")),
        pull_ms,
        started_ms,
        ready_ms,
        sli_ms: started_ms.map(|s| (s - pull_ms.unwrap_or(0.0)).max(0.0)),
        probe_floor: probes::floor(pod, started, pod.condition("Ready")),
    })
}

#[cfg(test)]
mod tests;
