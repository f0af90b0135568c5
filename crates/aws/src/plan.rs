//! The variants as deployed functions, the plan `--dry-run` prints, and the cost
//! estimate `--max-cost` checks: all before the first call that changes anything.

use crate::calls::{Configuration, Function, RUN_VAR};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One variant: a function with the configuration its runs get.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// As the plan names it (`NAME[memory=512]` in a sweep).
    pub name: String,
    /// Name, partial ARN or ARN, as given.
    pub function: String,
    /// `--memory` (None: the function's own).
    pub memory_mb: Option<u64>,
    /// `--layer-arn`: the whole layer list (None: the function's own).
    pub layers: Option<Vec<String>>,
    /// `--env K=V`: set over the function's own environment.
    pub env: Vec<(String, String)>,
    /// `--snapstart`: SnapStart on published versions (false: the function's own
    /// setting, or off when another variant of the function turns it on).
    pub snapstart: bool,
    /// `--architecture`: what the function must be built for (None: any).
    pub architecture: Option<String>,
    /// The payload of this variant's invokes (its `--event`, else the shared
    /// one, else `{}`).
    pub event: Vec<u8>,
}

impl Variant {
    /// The configuration of one run: the function's, with this variant's memory,
    /// layers and variables, and the run's unique `COLDSTART_RUN`.
    pub fn configure(&self, original: &Configuration, marker: &str) -> Configuration {
        let mut env: BTreeMap<String, String> = original.env.clone();
        env.extend(self.env.iter().cloned());
        env.insert(RUN_VAR.to_string(), marker.to_string());
        // coldstart's checkpoint SDKs write their `cs1` lines to stderr, which is
        // the function's log: the run's marks come from its tail. A function
        // without the SDK never reads it; one that sets COLDSTART_FD keeps it.
        env.entry(FD_VAR.to_string()).or_insert_with(|| "2".to_string());
        Configuration {
            memory_mb: self.memory_mb.unwrap_or(original.memory_mb),
            layers: self.layers.clone().unwrap_or_else(|| original.layers.clone()),
            env,
            snapstart: if self.snapstart {
                Some(true)
            } else {
                original.snapstart
            },
        }
    }

    /// `--architecture` where the function allows it: a function is built for
    /// one architecture, and Lambda changes it only with new code
    /// (UpdateFunctionCode), which coldstart never calls.
    pub fn check_architecture(&self, f: &Function) -> Result<(), String> {
        match &self.architecture {
            Some(want) if *want != f.architecture => Err(format!(
                "variant {}: --architecture {want}, but function {} is built for {} (Lambda changes a function's architecture only with new code, and coldstart never deploys code): deploy a {want} build as another function and name it with --function",
                self.name, self.function, f.architecture
            )),
            _ => Ok(()),
        }
    }
}

/// `--mark NAME=REGEX`, each with the `ms` group that times it.
pub fn log_marks(given: &[String]) -> anyhow::Result<Vec<(String, regex::Regex)>> {
    given
        .iter()
        .map(|m| {
            let (name, regex) = coldstart_core::marks::parse_log_mark(m)?;
            if !regex.capture_names().any(|n| n == Some("ms")) {
                anyhow::bail!("--mark '{m}': with --aws the log tail has no times, so the line must carry its own: add a (?P<ms>[0-9.]+) group for the milliseconds it says");
            }
            Ok((name, regex))
        })
        .collect()
}

/// The checkpoint SDKs' variable: the fd their `cs1` lines go to.
pub const FD_VAR: &str = "COLDSTART_FD";

/// Public prices (US East (N. Virginia), first tier), for the estimate only.
pub const PRICE_SOURCE: &str = "AWS Lambda's public us-east-1 first-tier price as of 2026-05: $0.20 per 1M requests, $0.0000166667 per GB-s (x86_64), $0.0000133334 per GB-s (arm64); other regions and tiers differ; the free tier is not deducted";
const PER_REQUEST_USD: f64 = 0.20 / 1e6;
const X86_GB_S_USD: f64 = 0.000_016_666_7;
const ARM_GB_S_USD: f64 = 0.000_013_333_4;
/// Lambda's init phase limit: a cold start is billed for its init (since
/// 2025-08-01) of at most this long.
const INIT_LIMIT_S: f64 = 10.0;

fn gb_s_price(architecture: &str) -> f64 {
    if architecture == "arm64" {
        ARM_GB_S_USD
    } else {
        X86_GB_S_USD
    }
}

/// The most the runs can cost: every invoke billed for a whole init and the
/// function's whole timeout, at the variant's memory.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Estimate {
    pub invokes: usize,
    pub gb_seconds: f64,
    pub usd: f64,
}

/// `runs[v]` invokes of variant `v`, whose function is `functions[v]`.
pub fn estimate(variants: &[Variant], functions: &[&Function], runs: usize) -> Estimate {
    let mut e = Estimate::default();
    for (v, f) in variants.iter().zip(functions) {
        let mb = v.memory_mb.unwrap_or(f.configuration.memory_mb) as f64;
        let gb_s = runs as f64 * (mb / 1024.0) * (INIT_LIMIT_S + f.timeout_s as f64);
        e.invokes += runs;
        e.gb_seconds += gb_s;
        e.usd += gb_s * gb_s_price(&f.architecture) + runs as f64 * PER_REQUEST_USD;
    }
    e
}

/// The plan as `--dry-run` prints it. `order` is the scheduler's run order
/// (variant index, round, warmup) for this seed.
pub struct Printed<'a> {
    pub endpoint: &'a str,
    pub variants: &'a [Variant],
    pub functions: &'a [(String, Function)],
    pub order: &'a [(usize, usize, bool)],
    pub seed: u64,
    pub estimate: Estimate,
    /// `--parallel`: runs prepared at a time.
    pub parallel: usize,
}

fn variant_line(v: &Variant, f: &Function) -> String {
    let memory = match v.memory_mb {
        Some(mb) => format!("memory {mb} MB"),
        None => format!("memory {} MB (its own)", f.configuration.memory_mb),
    };
    let layers = match &v.layers {
        Some(l) if l.is_empty() => "no layers".to_string(),
        Some(l) => format!("layers {}", l.join(", ")),
        None => format!("its {} layer(s)", f.configuration.layers.len()),
    };
    let env: String = v.env.iter().map(|(k, val)| format!(", +{k}={val}")).collect();
    let snapstart = if v.snapstart { ", SnapStart" } else { "" };
    let architecture = match &v.architecture {
        Some(a) => format!(", {a}"),
        None => String::new(),
    };
    let event = if v.event == b"{}" {
        String::new()
    } else {
        format!(", event of {} bytes", v.event.len())
    };
    format!(
        "{}: {}{architecture}, {memory}, {layers}{env}{snapstart}{event}",
        v.name, v.function
    )
}

pub fn render(p: &Printed) -> String {
    let mut s = String::new();
    let find = |name: &str| p.functions.iter().find(|(n, _)| n == name).map(|(_, f)| f);
    let _ = writeln!(
        s,
        "coldstart lambda --aws: the plan (a dry run: nothing was changed)"
    );
    let _ = writeln!(s, "  API: {}", p.endpoint);
    let _ = writeln!(s, "  functions (read with GetFunction; restored afterwards):");
    for (name, f) in p.functions {
        let _ = writeln!(
            s,
            "    {name}: {}, {} MB, timeout {} s, {} layer(s), {} variable(s){}",
            f.architecture,
            f.configuration.memory_mb,
            f.timeout_s,
            f.configuration.layers.len(),
            f.configuration.env.len(),
            if f.snapstart {
                ", SnapStart on published versions"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(s, "  variants:");
    for v in p.variants {
        if let Some(f) = find(&v.function) {
            let _ = writeln!(s, "    {}", variant_line(v, f));
        }
    }
    let runs = p.order.len();
    let _ = writeln!(
        s,
        "  each run: UpdateFunctionConfiguration (the variant's configuration + {RUN_VAR}=<experiment>-<run>), wait until LastUpdateStatus is Successful, PublishVersion, Invoke that version (RequestResponse, LogType Tail)"
    );
    let _ = writeln!(
        s,
        "  runs: {runs}: {runs} configuration updates, {runs} versions published, {runs} invokes; afterwards the {runs} versions are deleted and {} configuration(s) restored",
        p.functions.len()
    );
    if p.parallel > 1 {
        let _ = writeln!(
            s,
            "  prepared ahead: up to {} runs' versions made or waiting at a time (--parallel {}), one function's updates one after another; the invokes one at a time, in this order",
            p.parallel, p.parallel
        );
    }
    let _ = write!(
        s,
        "  order (seed {}; give --seed {} to run this order):",
        p.seed, p.seed
    );
    for (i, (v, round, warmup)) in p.order.iter().enumerate() {
        let name = p.variants.get(*v).map_or("?", |v| v.name.as_str());
        let kind = if *warmup { " warmup" } else { "" };
        let _ = write!(
            s,
            "{}{}. {name} (round {}{kind})",
            if i % 4 == 0 { "\n    " } else { "  " },
            i + 1,
            round + 1
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "  cost, an estimate: at most ${:.4} ({} invokes, {:.1} GB-s if every invoke were billed a whole init of {INIT_LIMIT_S} s and its whole timeout); the control-plane calls are not billed",
        p.estimate.usd, p.estimate.invokes, p.estimate.gb_seconds
    );
    let _ = writeln!(s, "    prices: {PRICE_SOURCE}");
    let _ = writeln!(
        s,
        "  wall time, an estimate: {runs} × (the update, its wait and the publish, a few seconds on the service, + the invoke)"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(mb: u64, arch: &str, timeout_s: u64) -> Function {
        Function {
            configuration: Configuration {
                memory_mb: mb,
                layers: vec!["arn:aws:lambda:us-east-1:123456789012:layer:a:1".into()],
                env: [("A".to_string(), "1".to_string())].into_iter().collect(),
                snapstart: Some(false),
            },
            architecture: arch.into(),
            timeout_s,
            snapstart: false,
        }
    }

    #[test]
    fn a_run_keeps_the_function_s_own_settings_unless_the_variant_sets_them() {
        let f = function(128, "x86_64", 3);
        let v = Variant {
            name: "b".into(),
            function: "fn".into(),
            memory_mb: None,
            layers: None,
            env: vec![("B".into(), "2".into())],
            snapstart: false,
            architecture: None,
            event: b"{}".to_vec(),
        };
        let c = v.configure(&f.configuration, "7-3");
        assert_eq!(c.memory_mb, 128);
        assert_eq!(c.layers, f.configuration.layers);
        assert_eq!(c.env.get("A").map(String::as_str), Some("1"));
        assert_eq!(c.env.get("B").map(String::as_str), Some("2"));
        assert_eq!(c.env.get(RUN_VAR).map(String::as_str), Some("7-3"));
        assert_eq!(
            c.env.get(FD_VAR).map(String::as_str),
            Some("2"),
            "cs1 lines to the log"
        );
        let own = Variant {
            env: vec![(FD_VAR.into(), String::new())],
            ..v.clone()
        };
        assert_eq!(
            own.configure(&f.configuration, "7-3")
                .env
                .get(FD_VAR)
                .map(String::as_str),
            Some(""),
            "a variant's own COLDSTART_FD (here: off) is kept"
        );
        let v = Variant {
            memory_mb: Some(1024),
            layers: Some(Vec::new()),
            ..v
        };
        let c = v.configure(&f.configuration, "7-4");
        assert_eq!(c.memory_mb, 1024);
        assert!(c.layers.is_empty(), "--layer-arn replaces the list");
        assert_eq!(c.snapstart, Some(false), "the function's own SnapStart");
        let on = Variant { snapstart: true, ..v };
        assert_eq!(on.configure(&f.configuration, "7-5").snapstart, Some(true));
        let untouched = Configuration {
            snapstart: None,
            ..f.configuration.clone()
        };
        assert_eq!(on.configure(&untouched, "7-6").snapstart, Some(true));
    }

    #[test]
    fn an_architecture_the_function_is_not_built_for_is_refused() {
        let v = Variant {
            name: "b".into(),
            function: "fn".into(),
            memory_mb: None,
            layers: None,
            env: Vec::new(),
            snapstart: false,
            architecture: Some("arm64".into()),
            event: b"{}".to_vec(),
        };
        let why = v
            .check_architecture(&function(128, "x86_64", 3))
            .expect_err("x86_64 function, arm64 asked");
        assert!(
            why.contains("built for x86_64") && why.contains("--function"),
            "{why}"
        );
        assert_eq!(v.check_architecture(&function(128, "arm64", 3)), Ok(()));
        let any = Variant {
            architecture: None,
            ..v
        };
        assert_eq!(any.check_architecture(&function(128, "x86_64", 3)), Ok(()));
    }

    /// A journal row written before `--snapstart` existed has no `snapstart`:
    /// it still reads, and its restore leaves SnapStart alone.
    #[test]
    fn an_older_journal_configuration_still_reads() {
        let c: Configuration = serde_json::from_str(r#"{"memory_mb": 128, "layers": [], "env": {"A": "1"}}"#)
            .expect("an older row");
        assert_eq!(c.snapstart, None);
        assert_eq!(c.memory_mb, 128);
    }

    /// The bound by hand: 10 invokes × 0.5 GB × (10 s + 3 s) = 65 GB-s at x86's
    /// price, plus 10 requests; arm64's price is lower.
    #[test]
    fn the_estimate_is_the_bound_worked_by_hand() {
        let v = Variant {
            name: "a".into(),
            function: "fn".into(),
            memory_mb: Some(512),
            layers: None,
            env: Vec::new(),
            snapstart: false,
            architecture: None,
            event: b"{}".to_vec(),
        };
        let f = function(128, "x86_64", 3);
        let e = estimate(std::slice::from_ref(&v), &[&f], 10);
        assert_eq!(e.invokes, 10);
        assert!((e.gb_seconds - 65.0).abs() < 1e-9, "{e:?}");
        assert!(
            (e.usd - (65.0 * 0.0000166667 + 10.0 * 0.2e-6)).abs() < 1e-12,
            "{e:?}"
        );
        let arm = function(128, "arm64", 3);
        assert!(estimate(std::slice::from_ref(&v), &[&arm], 10).usd < e.usd);
    }
}
