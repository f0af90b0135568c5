//! The spans received → the run's [`Section`] (source "otlp"): wall clock moved
//! onto the run's clock, duplicates dropped, the span forest in depth-first
//! order, the largest spans in a table, and notes on whatever was lost.

use super::decode::Got;
use super::receiver::Received;
use crate::sample::section::{ms_cell, Section, Span, Table};
use crate::sample::{Mark, MarkSource};
use std::collections::{BTreeSet, HashMap};

/// Rows kept in the section's table.
pub(super) const TABLE_ROWS: usize = 20;

/// How wall-clock span times map onto the run's clock.
pub(super) struct Clock {
    pub(super) offset_start: i128,
    pub(super) offset_end: i128,
    pub(super) t0_mono_ns: u64,
}

impl Clock {
    /// The offset used: the mean of the two samples.
    fn offset(&self) -> i128 {
        (self.offset_start + self.offset_end) / 2
    }

    /// Unix ns → ns since t0; negative when before the spawn.
    fn since_t0(&self, unix_ns: u64) -> i128 {
        unix_ns as i128 - self.offset() - self.t0_mono_ns as i128
    }
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn build_section(received: Received, clock: &Clock) -> Section {
    let mut notes = Vec::new();
    let drift = (clock.offset_end - clock.offset_start).abs();
    notes.push(format!(
        "span times are wall clock (CLOCK_REALTIME), moved onto the run's monotonic clock with an offset \
         sampled before and after the run (they differ by {}); the alignment is as good as the two clocks' \
         agreement (NTP slewing during the run, ms-level at worst, is ignored)",
        ms_cell(drift.min(u64::MAX as i128) as u64)
    ));

    // Keep the first copy of a span sent twice (an exporter retrying a batch whose
    // response it lost).
    let total = received.spans.len();
    let mut seen = std::collections::HashSet::new();
    let spans: Vec<Got> = received
        .spans
        .into_iter()
        .filter(|g| g.span_id.is_empty() || seen.insert((g.trace_id.clone(), g.span_id.clone())))
        .collect();
    if spans.len() < total {
        notes.push(format!(
            "{} spans arrived twice and are counted once",
            total - spans.len()
        ));
    }

    let (order, orphans) = tree_order(&spans);
    if orphans > 0 {
        notes.push(format!(
            "{orphans} spans name a parent that never arrived (another process's, or not yet exported) \
             and are shown as roots"
        ));
    }

    let mut clamped = 0usize;
    let mut inverted = 0usize;
    let mut out_spans = Vec::with_capacity(spans.len());
    let mut marks = Vec::new();
    let mut rows: Vec<(u64, Vec<String>)> = Vec::with_capacity(spans.len());
    for (i, depth) in order {
        let g = &spans[i];
        let start = clock.since_t0(g.start_unix_ns);
        let end = clock.since_t0(g.end_unix_ns);
        if end < start {
            inverted += 1;
        }
        let dur_ns = (end - start).clamp(0, u64::MAX as i128) as u64;
        let start_ns = if start < 0 {
            clamped += 1;
            0
        } else {
            start.min(u64::MAX as i128) as u64
        };
        let mut args = vec![("service".to_string(), g.service.clone())];
        if !g.scope.is_empty() {
            args.push(("scope".into(), g.scope.clone()));
        }
        args.push(("trace".into(), hex(&g.trace_id)));
        args.extend(g.args.iter().cloned());
        for (name, at) in &g.events {
            marks.push(Mark::new(
                format!("{}: {name}", g.name),
                MarkSource::Otlp,
                clock.since_t0(*at).clamp(0, u64::MAX as i128) as u64,
            ));
        }
        rows.push((
            dur_ns,
            vec![
                g.name.clone(),
                g.service.clone(),
                ms_cell(dur_ns),
                ms_cell(start_ns),
            ],
        ));
        out_spans.push(Span {
            name: g.name.clone(),
            start_ns,
            dur_ns,
            depth,
            args,
        });
    }
    if clamped > 0 {
        notes.push(format!(
            "{clamped} spans start before the spawn by the clocks' reckoning (clock skew, or a \
             start time the program set itself) and are drawn from 0, keeping their length"
        ));
    }
    if inverted > 0 {
        notes.push(format!(
            "{inverted} spans end before they start and are shown with no duration"
        ));
    }
    marks.sort_by_key(|m| m.t_ns);

    // Largest first; ties in tree order (the sort is stable).
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut table = Table::new(&["span", "service", "duration", "start"]);
    table.rows = rows.into_iter().map(|(_, r)| r).collect();
    table.truncate(TABLE_ROWS);

    let traces: BTreeSet<&[u8]> = spans.iter().map(|g| g.trace_id.as_slice()).collect();
    let services: BTreeSet<&str> = spans.iter().map(|g| g.service.as_str()).collect();
    let services_cell = if services.is_empty() {
        "none".to_string()
    } else {
        services.iter().copied().collect::<Vec<_>>().join(", ")
    };

    let encodings_cell = if received.encodings.is_empty() {
        "none".to_string()
    } else {
        received.encodings.iter().cloned().collect::<Vec<_>>().join(", ")
    };

    if spans.is_empty() {
        notes.push(
            "no spans arrived: the program exported none over OTLP/HTTP (no exporter configured, a \
             gRPC-only exporter, or spans still buffered when it was stopped: batch processors \
             export every few seconds and at shutdown)"
                .to_string(),
        );
    }
    if received.refused > 0 {
        notes.push(format!(
            "{} export requests were refused: {}",
            received.refused,
            received.refusals.join("; ")
        ));
    }
    if received.dropped > 0 {
        notes.push(format!(
            "{} spans were dropped: the receiver keeps at most {} spans and {} MiB of them per run \
             (the first that arrived are shown)",
            received.dropped,
            received.limits.spans,
            received.limits.bytes >> 20
        ));
    }
    if received.other_signals > 0 {
        notes.push(format!(
            "{} metrics/logs export requests were accepted and not read",
            received.other_signals
        ));
    }

    Section {
        source: "otlp".into(),
        title: "OpenTelemetry spans (OTLP/HTTP)".into(),
        facts: vec![
            ("spans".into(), spans.len().to_string()),
            ("traces".into(), traces.len().to_string()),
            ("services".into(), services_cell),
            ("requests".into(), received.requests.to_string()),
            ("encoding".into(), encodings_cell),
            ("dropped".into(), received.dropped.to_string()),
        ],
        table,
        spans: out_spans,
        marks,
        notes,
    }
}

/// Depth-first order of the span forest: (index, depth), every parent before its
/// children, roots and siblings by start time. A span is a child when its parent
/// arrived in the same trace; the others are roots (the count of those that named
/// a missing parent is returned). Spans caught in a parent cycle (malformed input)
/// are rooted where the walk first meets them, so every span appears exactly once.
fn tree_order(spans: &[Got]) -> (Vec<(usize, usize)>, usize) {
    let mut by_id: HashMap<(&[u8], &[u8]), usize> = HashMap::new();
    for (i, g) in spans.iter().enumerate() {
        if !g.span_id.is_empty() {
            by_id
                .entry((g.trace_id.as_slice(), g.span_id.as_slice()))
                .or_insert(i);
        }
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); spans.len()];
    let mut roots = Vec::new();
    let mut orphans = 0;
    for (i, g) in spans.iter().enumerate() {
        let parent = if g.parent_id.is_empty() {
            None
        } else {
            let p = by_id
                .get(&(g.trace_id.as_slice(), g.parent_id.as_slice()))
                .copied();
            if p.is_none() {
                orphans += 1;
            }
            p.filter(|&p| p != i)
        };
        match parent {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    let by_start = |a: &usize, b: &usize| spans[*a].start_unix_ns.cmp(&spans[*b].start_unix_ns);
    for c in &mut children {
        c.sort_by(by_start);
    }
    roots.sort_by(by_start);
    // Cycle members are unreachable from the roots: after the roots, start from them.
    let rest: Vec<usize> = (0..spans.len()).collect();

    let mut order = Vec::with_capacity(spans.len());
    let mut visited = vec![false; spans.len()];
    for start in roots.into_iter().chain(rest) {
        if visited[start] {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        while let Some((i, depth)) = stack.pop() {
            if visited[i] {
                continue;
            }
            visited[i] = true;
            order.push((i, depth));
            // Reversed so the earliest child is popped first.
            for &c in children[i].iter().rev() {
                if !visited[c] {
                    stack.push((c, depth + 1));
                }
            }
        }
    }
    (order, orphans)
}
