//! Hand-made samples and experiments for the analysis and report tests.

/// Two variants, `base` and `cand`, running `true`.
pub fn variants() -> Vec<crate::experiment::Variant> {
    ["base", "cand"]
        .iter()
        .map(|name| crate::experiment::Variant {
            name: name.to_string(),
            target: crate::target::Target::new(vec!["true".into()], Vec::new(), None)
                .expect("true is on PATH"),
            readiness: "exit".into(),
            params: Vec::new(),
        })
        .collect()
}

pub fn sample(variant: usize, round: usize, warmup: bool, ready_ms: Option<f64>) -> crate::sample::Sample {
    let mut s = crate::sample::Sample::begin(
        &crate::sample::RunId {
            variant,
            round,
            warmup,
        },
        1_000,
    );
    // A local run's: its process was seen (its usage measured).
    s.usage.processes = 1;
    match ready_ms {
        Some(ms) => {
            s.outcome = crate::sample::Outcome::Ready;
            s.ready_ns = Some((ms * 1e6).round() as u64);
        }
        None => s.outcome = crate::sample::Outcome::Timeout,
    }
    s
}

pub fn result(samples: Vec<crate::sample::Sample>) -> crate::experiment::ExperimentResult {
    crate::experiment::ExperimentResult {
        variants: variants(),
        samples,
        stopped: Some(crate::experiment::StopReason::Completed),
        design: coldstart_stats::Design::Interleaved,
        load: None,
        fleet: None,
    }
}
