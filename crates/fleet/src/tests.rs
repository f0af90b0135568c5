use super::*;

fn recipe(engine: Engine, shards: u32) -> Recipe {
    Recipe {
        engine,
        shards,
        image: Some("registry.example/app:1".into()),
        store_secret: None,
        experiment: None,
        parallelism: None,
        bench: ["--runs", "30", "--", "./server", "it's $(HOME) ${{ x }}"]
            .map(String::from)
            .to_vec(),
    }
}

fn parse(text: &str) -> serde_norway::Value {
    serde_norway::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn get<'a>(v: &'a serde_norway::Value, path: &[&str]) -> &'a serde_norway::Value {
    path.iter().fold(v, |v, k| match k.parse::<usize>() {
        Ok(i) => &v[i],
        Err(_) => &v[*k],
    })
}

fn strings(v: &serde_norway::Value) -> Vec<String> {
    v.as_sequence()
        .expect("a sequence")
        .iter()
        .map(|w| w.as_str().expect("a string").to_string())
        .collect()
}

#[test]
fn k8s_is_an_indexed_job_one_pod_per_node_with_guaranteed_qos() {
    let doc = parse(&emit(&recipe(Engine::Kubernetes, 5)).unwrap());
    let spec = &doc["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    assert_eq!(spec["completions"].as_u64(), Some(5));
    assert_eq!(spec["parallelism"].as_u64(), Some(5));
    assert!(spec["backoffLimitPerIndex"].as_u64().is_some());
    let pod = get(spec, &["template", "spec"]);
    let anti = get(
        pod,
        &[
            "affinity",
            "podAntiAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "0",
        ],
    );
    assert_eq!(anti["topologyKey"].as_str(), Some("kubernetes.io/hostname"));
    let c = get(pod, &["containers", "0"]);
    assert_eq!(
        c["resources"]["requests"], c["resources"]["limits"],
        "Guaranteed QoS"
    );
    let args = strings(&c["args"]);
    // bench's own options before its words: after them they would be the target's.
    assert_eq!(
        args[..5],
        [
            "bench",
            "--shard",
            "$(JOB_COMPLETION_INDEX)/5",
            "--experiment",
            "k8s-$(JOB_UID)"
        ]
    );
    // Kubernetes would expand $(HOME): escaped as $$(HOME).
    assert_eq!(
        args[5..],
        ["--runs", "30", "--", "./server", "it's $$(HOME) $${{ x }}"]
    );
    let env = c["env"].as_sequence().unwrap();
    assert_eq!(
        get(&env[0], &["valueFrom", "secretKeyRef", "name"]).as_str(),
        Some("coldstart-store")
    );
}

#[test]
fn github_has_a_shard_matrix_and_the_dsn_from_secrets() {
    let mut r = recipe(Engine::Github, 3);
    r.bench.pop();
    r.bench.push("on".into());
    let doc = parse(&emit(&r).unwrap());
    // Quoted: a YAML 1.1 reader would take a bare `on` for true.
    assert!(doc.get("on").is_some());
    let job = get(&doc, &["jobs", "coldstart-fleet"]);
    assert_eq!(job["strategy"]["fail-fast"].as_bool(), Some(false));
    let shards: Vec<u64> = job["strategy"]["matrix"]["shard"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_u64())
        .collect();
    assert_eq!(shards, [0, 1, 2]);
    assert_eq!(
        job["env"]["COLDSTART_STORE"].as_str(),
        Some("${{ secrets.COLDSTART_STORE }}")
    );
    assert_eq!(job["container"].as_str(), Some("registry.example/app:1"));
    let run = get(job, &["steps", "1", "run"]).as_str().unwrap();
    assert!(run.ends_with("--runs 30 -- ./server on"), "{run}");
    // An expression in bench's words is refused: GitHub would evaluate it.
    let err = emit(&recipe(Engine::Github, 3)).unwrap_err().to_string();
    assert!(err.contains("GitHub Actions would evaluate"), "{err}");
}

#[test]
fn gitlab_converts_its_one_based_node_index() {
    let mut r = recipe(Engine::Gitlab, 4);
    r.store_secret = Some("PG_DSN".into());
    let doc = parse(&emit(&r).unwrap());
    let job = &doc["coldstart-fleet"];
    assert_eq!(job["parallel"].as_u64(), Some(4));
    assert_eq!(job["variables"]["COLDSTART_STORE"].as_str(), Some("$PG_DSN"));
    let script = strings(&job["script"]);
    assert_eq!(script[0], "SHARD=$(( ${CI_NODE_INDEX:-1} - 1 ))");
    assert!(script[1]
        .starts_with("coldstart bench --shard \"$SHARD/4\" --experiment \"gitlab-$CI_PIPELINE_ID\" "));
    assert!(
        script[1].ends_with("'it'\\''s $(HOME) ${{ x }}'"),
        "{}",
        script[1]
    );
}

#[test]
fn slurm_is_an_exclusive_array() {
    let text = emit(&recipe(Engine::Slurm, 4)).unwrap();
    assert!(text.starts_with("#!/bin/bash\n"));
    assert!(text.contains("\n#SBATCH --array=0-3\n"));
    assert!(text.contains("\n#SBATCH --exclusive\n"));
    assert!(text.contains("--shard \"$SLURM_ARRAY_TASK_ID/4\" --experiment \"slurm-$SLURM_ARRAY_JOB_ID\""));
}

#[test]
fn bad_input_is_one_line() {
    let cases = [
        (
            Recipe {
                shards: 0,
                ..recipe(Engine::Slurm, 1)
            },
            "at least 1",
        ),
        (
            Recipe {
                bench: vec![],
                ..recipe(Engine::Slurm, 1)
            },
            "no bench arguments",
        ),
        (
            Recipe {
                image: None,
                ..recipe(Engine::Kubernetes, 1)
            },
            "needs --image",
        ),
        (recipe(Engine::Gitlab, 201), "at most 200"),
        (
            Recipe {
                parallelism: Some(5),
                ..recipe(Engine::Slurm, 4)
            },
            "give 1 to --shards (4)",
        ),
        (
            Recipe {
                parallelism: Some(2),
                ..recipe(Engine::Gitlab, 4)
            },
            "no limit of its own",
        ),
        (
            Recipe {
                store_secret: Some("Bad_Name".into()),
                ..recipe(Engine::Kubernetes, 1)
            },
            "is not a Secret's name",
        ),
    ];
    for (r, want) in cases {
        let err = r.check().unwrap_err().to_string();
        assert!(err.contains(want) && !err.contains('\n'), "{err}");
    }
    assert!(Engine::parse("nomad")
        .unwrap_err()
        .to_string()
        .contains("one of k8s"));
}

mod yaml_strings {
    use crate::yaml::{ordered, to_string, Yaml};
    use proptest::prelude::*;

    /// A string read back by a YAML 1.2 reader (serde_norway) as itself, as a value
    /// and as a key.
    fn round_trips(s: &str) {
        // Key and value in separate documents, so the string as a key cannot collide
        // with the fixed key (proptest found "k").
        let read = |doc: Yaml| {
            let text = to_string(&doc);
            let back: serde_norway::Value =
                serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            (back, text)
        };
        let (back, text) = read(ordered(vec![(
            s.to_string(),
            Yaml::Seq(vec![Yaml::Str(s.to_string())]),
        )]));
        assert_eq!(back[s][0].as_str(), Some(s), "{text}");
        let (back, text) = read(ordered(vec![("k".to_string(), Yaml::Str(s.to_string()))]));
        assert_eq!(back["k"].as_str(), Some(s), "{text}");
    }

    #[test]
    fn tricky_words_stay_strings() {
        for s in [
            "on",
            "Off",
            "y",
            "N",
            "yes",
            "null",
            "~",
            "",
            "0",
            "0x1F",
            "1_000",
            "1:20",
            ".inf",
            "-",
            "--",
            "---",
            "- a",
            "#x",
            "a #b",
            "a: b",
            "a:",
            "{x}",
            "[x]",
            "*x",
            "&x",
            "!x",
            "%x",
            "@x",
            "`x",
            "|",
            ">",
            "'",
            "\"",
            "\\",
            "=",
            "<<",
            "\u{7f}",
            "\u{85}",
            "\u{feff}x",
            "\t",
            "a\nb",
            "é",
            "😀",
            "\u{fffe}",
            "k",
        ] {
            round_trips(s);
        }
    }

    proptest! {
        // A failure is printed with its input; never written into the source tree.
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn any_string_stays_itself(s in "\\PC*|[ -~]{0,12}|[\\x00-\\x7f\\u{80}-\\u{ff}]{0,8}") {
            round_trips(&s);
        }
    }
}

/// `--parallelism P`: each engine's own limit on shards at once.
#[test]
fn parallelism_is_each_engines_limit() {
    let limited = |engine| {
        let r = Recipe {
            parallelism: Some(3),
            bench: ["--runs", "30", "--", "./server"].map(String::from).to_vec(),
            ..recipe(engine, 10)
        };
        r.check().unwrap();
        emit(&r).unwrap()
    };
    let k8s = parse(&limited(Engine::Kubernetes));
    assert_eq!(get(&k8s, &["spec", "parallelism"]).as_u64(), Some(3));
    assert_eq!(get(&k8s, &["spec", "completions"]).as_u64(), Some(10));
    let gh = parse(&limited(Engine::Github));
    let job = get(&gh, &["jobs", "coldstart-fleet", "strategy", "max-parallel"]);
    assert_eq!(job.as_u64(), Some(3));
    assert!(limited(Engine::Slurm).contains("\n#SBATCH --array=0-9%3\n"));
    let all = parse(&emit(&recipe(Engine::Kubernetes, 10)).unwrap());
    assert_eq!(get(&all, &["spec", "parallelism"]).as_u64(), Some(10));
}
