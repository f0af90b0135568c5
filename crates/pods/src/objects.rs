//! The few fields of the API's Pod and Event objects that a start-up needs
//! (Kubernetes API reference, core/v1), read leniently: anything else is ignored.

use serde::Deserialize;

#[derive(Deserialize)]
pub(crate) struct List {
    #[serde(default)]
    items: Vec<serde_json::Value>,
}

impl List {
    /// Its Pods and Events (other kinds are left out).
    pub(crate) fn split(self) -> (Vec<Pod>, Vec<Event>) {
        let mut pods = Vec::new();
        let mut events = Vec::new();
        for item in self.items {
            match item.get("kind").and_then(|k| k.as_str()) {
                Some("Pod") => pods.extend(serde_json::from_value(item).ok()),
                Some("Event") => events.extend(serde_json::from_value(item).ok()),
                _ => {}
            }
        }
        (pods, events)
    }
}

#[derive(Deserialize)]
pub(crate) struct Meta {
    pub name: String,
    pub namespace: Option<String>,
    #[serde(rename = "creationTimestamp")]
    pub creation_timestamp: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct Pod {
    pub metadata: Meta,
    #[serde(default)]
    pub spec: PodSpec,
    #[serde(default)]
    pub status: PodStatus,
}

#[derive(Deserialize, Default)]
pub(crate) struct PodSpec {
    #[serde(default)]
    pub containers: Vec<ContainerSpec>,
}

#[derive(Deserialize)]
pub(crate) struct ContainerSpec {
    pub name: String,
    #[serde(rename = "readinessProbe")]
    pub readiness_probe: Option<crate::ProbeSpec>,
    #[serde(rename = "startupProbe")]
    pub startup_probe: Option<crate::ProbeSpec>,
}

#[derive(Deserialize, Default)]
pub(crate) struct PodStatus {
    #[serde(default)]
    pub conditions: Vec<Condition>,
    #[serde(default, rename = "containerStatuses")]
    pub container_statuses: Vec<ContainerStatus>,
}

#[derive(Deserialize)]
pub(crate) struct Condition {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    #[serde(rename = "lastTransitionTime")]
    pub last_transition_time: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct ContainerStatus {
    #[serde(default)]
    pub state: serde_json::Value,
}

#[derive(Deserialize)]
pub(crate) struct Event {
    #[serde(rename = "involvedObject")]
    pub involved: Involved,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
}

#[derive(Deserialize)]
pub(crate) struct Involved {
    pub kind: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
}

impl Pod {
    /// When condition `kind` last became True.
    pub(crate) fn condition(&self, kind: &str) -> Option<i128> {
        let c = self
            .status
            .conditions
            .iter()
            .find(|c| c.kind == kind && c.status == "True")?;
        instant(&c.last_transition_time)
    }

    /// When the last of its containers started; None until all run.
    pub(crate) fn all_started(&self) -> Option<i128> {
        let s = &self.status.container_statuses;
        if s.is_empty() {
            return None;
        }
        s.iter()
            .map(|c| {
                c.state
                    .get("running")?
                    .get("startedAt")?
                    .as_str()
                    .map(String::from)
            })
            .map(|t| instant(&t))
            .collect::<Option<Vec<i128>>>()?
            .into_iter()
            .max()
    }
}

impl Event {
    pub(crate) fn is_about(&self, pod: &Pod) -> bool {
        self.involved.kind.as_deref() == Some("Pod")
            && self.involved.name.as_deref() == Some(pod.metadata.name.as_str())
            && self.involved.namespace == pod.metadata.namespace
    }
}

/// An RFC 3339 timestamp as the API writes it → Unix ns.
pub(crate) fn instant(t: &Option<String>) -> Option<i128> {
    time::OffsetDateTime::parse(t.as_deref()?, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp_nanos())
}
