//! A profile as files: folded stacks (Brendan Gregg's format, one line per
//! stack, the phase as the root frame), an interactive flame graph SVG (inferno:
//! one tower per phase, in time order; click to zoom, Ctrl-F to search) and
//! speedscope JSON (one profile per phase).

use super::Profile;
use anyhow::{Context, Result};
use serde_json::json;
use std::collections::HashMap;

/// `phase;thread;outer;…;leaf count` lines, phases in time order.
pub fn folded(p: &Profile) -> String {
    let mut out = String::new();
    for phase in &p.phases {
        for (stack, n) in &phase.stacks {
            out.push_str(&format!("{};{stack} {n}\n", phase.name));
        }
    }
    out
}

/// The flame graph of the startup window: the phases at the root.
pub fn flamegraph(p: &Profile, command: &str) -> Result<Vec<u8>> {
    let folded = folded(p);
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = format!("startup CPU profile: {command}");
    opts.subtitle = Some(format!(
        "{} samples from {} runs, spawn → ready ({}, {} Hz, stacks by {}); the phases along the top, in time order",
        p.samples, p.runs, p.event, p.frequency_hz, p.callchains
    ));
    opts.count_name = "samples".to_string();
    // Kernel frames (_[k]) orange, runtime JIT/interpreter frames (_[j]) green.
    opts.colors = inferno::flamegraph::color::Palette::Multi(inferno::flamegraph::color::MultiPalette::Java);
    opts.deterministic = true;
    // Icicle: the phases along the top, where they are seen without scrolling
    // past a runtime's deep stacks.
    opts.direction = inferno::flamegraph::Direction::Inverted;
    // The lines are grouped by phase in time order (sorted within each): kept
    // in that order, so the towers read left to right as time. Flame-chart mode
    // is the one that takes lines unsorted (still merging neighbours); it
    // reverses them, so they go in last first.
    opts.flame_chart = true;
    let mut svg = Vec::new();
    if folded.is_empty() {
        // inferno refuses empty input; an empty window still gets a picture.
        let line = "no samples 1";
        inferno::flamegraph::from_lines(&mut opts, std::iter::once(line), &mut svg)
    } else {
        inferno::flamegraph::from_lines(&mut opts, folded.lines().rev(), &mut svg)
    }
    .context("rendering the flame graph")?;
    Ok(svg)
}

/// The terminal section: how it was sampled, the hottest functions, per-phase counts.
pub fn terminal(p: &Profile) -> String {
    let pct = |n: u64| 100.0 * n as f64 / p.samples.max(1) as f64;
    let mut out = format!(
        "\n── startup CPU profile: {} samples from {} profiled runs ({} at {} Hz, stacks by {}{}) ──\n",
        p.samples,
        p.runs,
        p.event,
        p.frequency_hz,
        p.callchains,
        if p.kernel {
            ", user + kernel"
        } else {
            ", user only"
        }
    );
    let phases: Vec<String> = p
        .phases
        .iter()
        .map(|ph| format!("{} {:.0}%", ph.name, pct(ph.samples)))
        .collect();
    out.push_str(&format!("  by phase: {}\n", phases.join(" · ")));
    out.push_str("  on the stack   at the top   function\n");
    for (name, total, own) in p.top(12) {
        out.push_str(&format!(
            "  {:>11.1}%  {:>10.1}%   {name}\n",
            pct(total),
            pct(own)
        ));
    }
    if p.lost > 0 {
        out.push_str(&format!(
            "  note: the kernel dropped {} records (ring buffer full)\n",
            p.lost
        ));
    }
    for r in &p.runtimes {
        out.push_str(&format!("  note: {r}\n"));
    }
    if let Some(cut) = &p.cut {
        out.push_str(&format!("  note: {}\n", cut.note()));
    }
    out.push_str("  (--export-flamegraph PATH for the flame graph, --export-folded / --export-speedscope for the stacks)\n");
    out
}

/// speedscope's file format (https://www.speedscope.app/file-format-schema.json):
/// one "sampled" profile per phase, weights in samples.
pub fn speedscope(p: &Profile, command: &str) -> serde_json::Value {
    let mut frames: Vec<serde_json::Value> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut profiles = Vec::new();
    for phase in &p.phases {
        let mut samples = Vec::with_capacity(phase.stacks.len());
        let mut weights = Vec::with_capacity(phase.stacks.len());
        for (stack, n) in &phase.stacks {
            let ids: Vec<usize> = stack
                .split(';')
                .map(|f| {
                    *index.entry(f).or_insert_with(|| {
                        frames.push(json!({ "name": f }));
                        frames.len() - 1
                    })
                })
                .collect();
            samples.push(ids);
            weights.push(*n);
        }
        profiles.push(json!({
            "type": "sampled",
            "name": phase.name,
            "unit": "none",
            "startValue": 0,
            "endValue": phase.samples,
            "samples": samples,
            "weights": weights,
        }));
    }
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "name": format!("startup CPU profile: {command}"),
        "exporter": format!("coldstart {}", env!("CARGO_PKG_VERSION")),
        "activeProfileIndex": 0,
        "shared": { "frames": frames },
        "profiles": profiles,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{PhaseProfile, Profile};
    use super::*;

    fn profile() -> Profile {
        Profile {
            method: String::new(),
            event: "cpu-clock".into(),
            frequency_hz: 1999,
            callchains: "frame pointers".into(),
            kernel: true,
            runs: 1,
            samples: 5,
            lost: 0,
            profiled_ms: None,
            overhead: None,
            overhead_ci: None,
            phases: vec![
                PhaseProfile {
                    name: "loader".into(),
                    samples: 1,
                    stacks: vec![("app;_dl_start".into(), 1)],
                },
                PhaseProfile {
                    name: "init".into(),
                    samples: 4,
                    stacks: vec![("app;main;hot".into(), 3), ("app;main;cold".into(), 1)],
                },
            ],
            runtimes: Vec::new(),
            functions: Vec::new(),
            cut: None,
        }
    }

    #[test]
    fn folded_lines_carry_the_phase_at_the_root_in_time_order() {
        assert_eq!(
            folded(&profile()),
            "loader;app;_dl_start 1\ninit;app;main;hot 3\ninit;app;main;cold 1\n"
        );
        assert!((profile().share("hot") - 0.6).abs() < 1e-9);
        assert_eq!(profile().top(1), vec![("main".to_string(), 4, 0)]);
    }

    #[test]
    fn the_svg_has_a_frame_per_function_and_the_phases() {
        let svg = String::from_utf8(flamegraph(&profile(), "./app").unwrap()).unwrap();
        assert!(svg.starts_with("<?xml"), "{}", &svg[..50]);
        for name in ["loader", "init", "hot (3 samples, 60.00%)", "_dl_start"] {
            assert!(svg.contains(name), "{name} missing");
        }
    }

    #[test]
    fn speedscope_frames_are_shared_and_weights_are_counts() {
        let v = speedscope(&profile(), "./app");
        assert_eq!(v["profiles"][1]["name"], "init");
        assert_eq!(v["profiles"][1]["weights"], json!([3, 1]));
        let frames = v["shared"]["frames"].as_array().unwrap();
        assert_eq!(frames.iter().filter(|f| f["name"] == "app").count(), 1);
        let hot = &v["profiles"][1]["samples"][0];
        assert_eq!(frames[hot[2].as_u64().unwrap() as usize]["name"], "hot");
    }
}
