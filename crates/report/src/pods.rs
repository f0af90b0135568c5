//! `coldstart pods`: a cluster's pod start-ups, one row per pod and the
//! figures over them, with the kubelet's SLO and the probes that decided.

use super::format::{median_with_ci, ms, tail};
use super::terminal::{right_align, table};
use coldstart_pods::{PodStart, Pods};
use coldstart_stats::Summary;

/// Kubernetes' pod start-up SLO: p99 of the SLI within 5 s.
const SLO_MS: f64 = 5000.0;

pub fn terminal(p: &Pods) -> String {
    let started = p.pods.iter().filter(|x| x.started_ms.is_some()).count();
    let mut out = format!(
        "{} pods ({started} started), ms after each pod's creation, from the objects' own timestamps (whole seconds: each figure ±1 s)\n",
        p.pods.len()
    );
    let mut t = table();
    t.set_header(["pod", "scheduled", "pull", "started", "ready", "SLI"]);
    for x in &p.pods {
        let cell = |v: Option<f64>| v.map_or_else(|| "—".to_string(), ms);
        t.add_row(vec![
            pod_name(x),
            cell(x.scheduled_ms),
            cell(x.pull_ms),
            cell(x.started_ms),
            cell(x.ready_ms),
            cell(x.sli_ms),
        ]);
    }
    right_align(&mut t, 1..6);
    super::width::fit_table(&mut t, &[]);
    out.push_str(&format!("{t}\n"));
    out.push_str("  SLI: created → all containers started, less the image pulls (the kubelet's Pulled events); init containers are not subtracted\n");
    if !p.events {
        out.push_str("  no Pulled events: pulls unknown, the SLI includes them (`kubectl get pods,events -o json` lists both)\n");
    }
    for (what, s) in [
        ("scheduled", &p.scheduled_ms),
        ("started", &p.started_ms),
        ("ready", &p.ready_ms),
        ("SLI", &p.sli_ms),
    ] {
        if let Some(s) = s {
            out.push_str(&format!("  {what}: {}\n", over(s)));
        }
    }
    if let Some(s) = &p.sli_ms {
        let verdict = match (s.p99 <= SLO_MS, s.p99_reliable) {
            (true, true) => "meets it",
            (false, true) => "misses it",
            (true, false) => "within it, from too few pods to be reliable",
            (false, false) => "over it, from too few pods to be reliable",
        };
        out.push_str(&format!(
            "  Kubernetes' pod start-up SLO (p99 of the SLI ≤ 5 s): p99 {} {verdict}\n",
            tail(s.p99, s.p99_reliable)
        ));
    }
    for x in &p.pods {
        if let Some(f) = &x.probe_floor {
            out.push_str(&format!(
                "  {}: Ready {} after its containers started, the earliest its readinessProbe allows ({}: initialDelaySeconds {}, periodSeconds {}): the probe decided, not the program. Measure the program's own ready time (coldstart bench --image … --ready http://…); a startupProbe with periodSeconds 1 and no readiness delay marks it Ready within a second of it\n",
                pod_name(x),
                ms(f.ready_ms),
                f.container,
                f.initial_delay_s,
                f.period_s
            ));
        }
    }
    out
}

fn pod_name(x: &PodStart) -> String {
    match x.namespace.as_str() {
        "" => x.name.clone(),
        ns => format!("{ns}/{}", x.name),
    }
}

fn over(s: &Summary) -> String {
    format!(
        "p50 {}, p90 {}, p99 {}, max {} (n = {} pods)",
        median_with_ci(s),
        tail(s.p90, s.p90_reliable),
        tail(s.p99, s.p99_reliable),
        ms(s.max),
        s.n
    )
}
