//! Kubernetes: an Indexed Job, one pod per node, Guaranteed QoS.

use super::{ordered, provenance, with_header, yaml, Recipe, Yaml, JOB};
use anyhow::Result;
use serde_json::{json, Value};

/// Each pod's CPU and memory, requests equal to limits: Guaranteed QoS, so the CPU
/// limit is a real share (and, with the static CPU manager, whole cores) rather
/// than whatever a busy node has left. Sized for a small service; the header says
/// to fit them to the nodes.
const CPU: &str = "2";
const MEMORY: &str = "4Gi";

/// Kubernetes expands `$(VAR)` in a container's command and args, and `$$` is a
/// literal `$`: every `$` of ours is doubled so bench gets the words as typed.
fn literal(word: &str) -> String {
    word.replace('$', "$$")
}

pub(super) fn job(recipe: &Recipe) -> Result<String> {
    let n = recipe.shards;
    let experiment = match &recipe.experiment {
        Some(name) => literal(name),
        // The Job's uid: new for every Job, the same for every retry of a pod.
        None => "k8s-$(JOB_UID)".to_string(),
    };
    let mut args = vec![
        Value::from("bench"),
        Value::from("--shard"),
        Value::from(format!("$(JOB_COMPLETION_INDEX)/{n}")),
        Value::from("--experiment"),
        Value::from(experiment),
    ];
    args.extend(recipe.bench.iter().map(|w| Value::from(literal(w))));
    let resources = json!({"cpu": CPU, "memory": MEMORY});
    let field = |path: &str| json!({"valueFrom": {"fieldRef": {"fieldPath": path}}});
    let mut uid = field("metadata.labels['batch.kubernetes.io/controller-uid']");
    uid["name"] = json!("JOB_UID");
    let mut node = field("spec.nodeName");
    node["name"] = json!("NODE_NAME");
    let container = ordered(vec![
        ("name", yaml(json!("bench"))),
        ("image", yaml(json!(recipe.image))),
        ("command", yaml(json!(["coldstart"]))),
        ("args", yaml(Value::Array(args))),
        (
            "env",
            yaml(json!([
                {"name": "COLDSTART_STORE", "valueFrom": {"secretKeyRef": {"name": recipe.secret(), "key": "dsn"}}},
                uid,
                node,
            ])),
        ),
        (
            "resources",
            yaml(json!({"requests": resources, "limits": resources})),
        ),
    ]);
    let pod = ordered(vec![
        ("restartPolicy", yaml(json!("Never"))),
        (
            "affinity",
            yaml(
                json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"batch.kubernetes.io/job-name": JOB}},
                    "topologyKey": "kubernetes.io/hostname",
                }]}}),
            ),
        ),
        ("containers", Yaml::Seq(vec![container])),
    ]);
    let labels = json!({"labels": {"app.kubernetes.io/name": JOB}});
    let spec = ordered(vec![
        ("completionMode", yaml(json!("Indexed"))),
        ("completions", yaml(json!(n))),
        ("parallelism", yaml(json!(recipe.parallelism.unwrap_or(n)))),
        // A shard that fails is retried on its own (its index), twice; the others
        // go on. Its retry replaces its partial block in the store.
        ("backoffLimitPerIndex", yaml(json!(2))),
        (
            "template",
            ordered(vec![("metadata", yaml(labels.clone())), ("spec", pod)]),
        ),
    ]);
    let mut metadata = labels;
    metadata["name"] = json!(JOB);
    let doc = ordered(vec![
        ("apiVersion", yaml(json!("batch/v1"))),
        ("kind", yaml(json!("Job"))),
        ("metadata", yaml(metadata)),
        ("spec", spec),
    ]);
    let mut header = provenance(recipe);
    header.extend([
        String::new(),
        "An Indexed Job: pod K runs shard K (JOB_COMPLETION_INDEX), at most one pod per node".to_string(),
        "(pod anti-affinity on the Job's pods). Requests equal limits (Guaranteed QoS): fit".to_string(),
        format!(
            "cpu {CPU} and memory {MEMORY} to your nodes. The store's DSN is the key `dsn` of the Secret"
        ),
        format!(
            "{:?}: kubectl create secret generic {} --from-literal=dsn=postgres://…",
            recipe.secret(),
            recipe.secret()
        ),
        format!("Run: kubectl apply -f FILE; kubectl wait --for=condition=complete job/{JOB}"),
    ]);
    with_header(&header, &doc)
}
