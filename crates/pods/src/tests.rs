//! On objects written from the Kubernetes API reference (core/v1 Pod and Event,
//! as `kubectl get pods,events -o json` lists them): no cluster ran here.

use super::*;

/// Written from the API reference (tests/fixtures/pods/list.json): web-1 pulled
/// its image in 1.5 s and has a readinessProbe with a 10 s delay, web-2 has two
/// containers and its image was there, web-3 is unschedulable; an Event for a
/// pod of the same name in another namespace, and a Service.
const LIST: &str = include_str!("../../../tests/fixtures/pods/list.json");

#[test]
fn each_pods_start_up_from_its_own_timestamps() {
    let p = read(LIST).unwrap();
    assert!(p.events);
    let names: Vec<&str> = p.pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["web-1", "web-2", "web-3"]);
    let web1 = &p.pods[0];
    assert_eq!(
        (
            web1.scheduled_ms,
            web1.pull_ms,
            web1.started_ms,
            web1.ready_ms,
            web1.sli_ms
        ),
        (
            Some(0.0),
            Some(1500.0),
            Some(3000.0),
            Some(13_000.0),
            Some(1500.0)
        )
    );
    // Ready 10 s after its start: its readiness probe's 10 s delay decided that.
    let floor = web1.probe_floor.as_ref().unwrap();
    assert_eq!(
        (floor.container.as_str(), floor.initial_delay_s, floor.ready_ms),
        ("app", 10, 10_000.0)
    );
    // Two containers: started when the last did; its pull was the image already
    // there (the other namespace's web-2 is another pod).
    let web2 = &p.pods[1];
    assert_eq!(
        (
            web2.scheduled_ms,
            web2.pull_ms,
            web2.started_ms,
            web2.ready_ms,
            web2.sli_ms
        ),
        (Some(1000.0), Some(0.0), Some(2000.0), Some(3000.0), Some(2000.0))
    );
    assert_eq!(web2.probe_floor, None);
    // Not scheduled: nothing to measure yet, and it is not counted.
    let web3 = &p.pods[2];
    assert_eq!(
        (web3.scheduled_ms, web3.started_ms, web3.sli_ms),
        (None, None, None)
    );
    assert_eq!(p.sli_ms.as_ref().unwrap().n, 2);
    assert_eq!(p.started_ms.as_ref().unwrap().max, 3000.0);
}

#[test]
fn without_events_there_are_no_pulls_and_the_sli_is_not_reduced() {
    // `kubectl get pods -o json`: a PodList.
    let list: serde_json::Value = serde_json::from_str(LIST).unwrap();
    let pods: Vec<&serde_json::Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "Pod")
        .collect();
    let pod_list = serde_json::json!({"apiVersion": "v1", "kind": "PodList", "items": pods});
    let p = read(&pod_list.to_string()).unwrap();
    assert!(!p.events);
    assert_eq!(p.pods[0].pull_ms, None);
    assert_eq!(p.pods[0].sli_ms, Some(3000.0));
}

#[test]
fn what_is_not_a_pod_list_is_named() {
    let e = read("<html>").unwrap_err().to_string();
    assert!(e.contains("kubectl get pods,events -o json"), "{e}");
    let e = read(r#"{"kind": "List", "items": [{"kind": "Service"}]}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no Pod objects"), "{e}");
}
