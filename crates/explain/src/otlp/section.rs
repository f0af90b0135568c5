//! The spans received → the run's [`Section`] (source "otlp"): wall clock moved
//! onto the run's clock, duplicates dropped, the span forest in depth-first
//! order, the largest spans in a table, and notes on whatever was lost.

use super::decode::Got;
use super::kept::Received;
use coldstart_core::sample::section::{Section, Span, Table, Value};
use coldstart_core::sample::{Mark, MarkSource};
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
    let mut notes: Vec<Value> = Vec::new();
    let drift = (clock.offset_end - clock.offset_start).unsigned_abs();
    notes.push(Value::parts([
        "span times are wall clock (CLOCK_REALTIME), moved onto the run's monotonic clock with an offset \
         sampled before and after the run (they differ by "
            .into(),
        Value::Ns(u64::try_from(drift).unwrap_or(u64::MAX)),
        "); the alignment is as good as the two clocks' agreement (NTP slewing during the run, ms-level at \
         worst, is ignored)"
            .into(),
    ]));

    // Keep the first copy of a span sent twice (an exporter retrying a batch whose
    // response it lost).
    let Received {
        spans: all,
        requests,
        encodings,
        other_signals,
        refused,
        refusals,
        limits,
        dropped,
        ..
    } = received;
    let spans = once_each(all, &mut notes);

    let traces = spans
        .iter()
        .map(|g| g.trace_id.as_slice())
        .collect::<BTreeSet<&[u8]>>()
        .len();
    let services: BTreeSet<&str> = spans.iter().map(|g| g.service.as_str()).collect();
    let services_cell = if services.is_empty() {
        "none".to_string()
    } else {
        services.iter().copied().collect::<Vec<_>>().join(", ")
    };
    drop(services);

    let (order, orphans) = tree_order(&spans);
    if orphans > 0 {
        notes.push(
            format!(
                "{orphans} spans name a parent that never arrived (another process's, or not yet exported) \
             and are shown as roots"
            )
            .into(),
        );
    }

    let span_count = spans.len();
    let placed = place(spans, order, clock, &mut notes);
    let table = largest(&placed.spans, placed.by_dur);

    let encodings_cell = if encodings.is_empty() {
        "none".to_string()
    } else {
        encodings.iter().cloned().collect::<Vec<_>>().join(", ")
    };

    if span_count == 0 {
        notes.push(
            "no spans arrived: the program exported none over OTLP/HTTP (no exporter configured, a \
             gRPC-only exporter, or spans still buffered when it was stopped: batch processors \
             export every few seconds and at shutdown)"
                .into(),
        );
    }
    if refused > 0 {
        notes.push(
            format!(
                "{} export requests were refused: {}",
                refused,
                refusals.join("; ")
            )
            .into(),
        );
    }
    if dropped > 0 {
        notes.push(
            format!(
                "{} spans were dropped: the receiver keeps at most {} spans and {} MiB of them per run \
             (the first that arrived are shown)",
                dropped,
                limits.spans,
                limits.bytes >> 20
            )
            .into(),
        );
    }
    if other_signals > 0 {
        notes.push(
            format!(
                "{} metrics/logs export requests were accepted and not read",
                other_signals
            )
            .into(),
        );
    }

    Section {
        source: "otlp".into(),
        title: "OpenTelemetry spans (OTLP/HTTP)".into(),
        facts: vec![
            ("spans".into(), Value::count(span_count)),
            ("traces".into(), Value::count(traces)),
            ("services".into(), Value::Text(services_cell)),
            ("requests".into(), Value::count(requests)),
            ("encoding".into(), Value::Text(encodings_cell)),
            ("dropped".into(), Value::count(dropped)),
        ],
        table,
        spans: placed.spans,
        marks: placed.marks,
        notes,
    }
}

/// The spans with a first copy each: an exporter retrying a batch whose response it
/// lost sends them twice.
fn once_each(all: Vec<Got>, notes: &mut Vec<Value>) -> Vec<Got> {
    let total = all.len();
    let mut seen = std::collections::HashSet::new();
    let spans: Vec<Got> = all
        .into_iter()
        .filter(|g| g.span_id.is_empty() || seen.insert((g.trace_id.clone(), g.span_id.clone())))
        .collect();
    drop(seen);
    if spans.len() < total {
        notes.push(format!("{} spans arrived twice and are counted once", total - spans.len()).into());
    }

    spans
}

/// The spans on the run's clock, in tree order, with their events as marks.
struct Placed {
    spans: Vec<Span>,
    marks: Vec<Mark>,
    /// (duration, index in `spans`): the table's rows are made for the largest only.
    by_dur: Vec<(u64, usize)>,
}

fn place(mut spans: Vec<Got>, order: Vec<(usize, usize)>, clock: &Clock, notes: &mut Vec<Value>) -> Placed {
    let mut clamped = 0usize;
    let mut inverted = 0usize;
    let mut out_spans = Vec::with_capacity(spans.len());
    let mut marks = Vec::new();
    // (duration, index in out_spans): the table's rows are made for the largest only.
    let mut by_dur: Vec<(u64, usize)> = Vec::with_capacity(spans.len());
    for (i, depth) in order {
        // Each span is visited once: its strings move into the section rather than
        // being copied, so the received spans and the section are never both whole
        // in memory (a run may send 100,000 spans).
        let g = &mut spans[i];
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
        let name = std::mem::take(&mut g.name);
        let mut args = Vec::with_capacity(3 + g.args.len());
        args.push(("service".to_string(), Value::Text(std::mem::take(&mut g.service))));
        if !g.scope.is_empty() {
            args.push(("scope".into(), Value::Text(std::mem::take(&mut g.scope))));
        }
        args.push(("trace".into(), Value::Text(hex(&g.trace_id))));
        // An attribute's unit is the sender's to know: its value stays text.
        args.extend(g.args.drain(..).map(|(k, v)| (k, Value::Text(v))));
        for (event, at) in std::mem::take(&mut g.events) {
            marks.push(Mark::new(
                format!("{name}: {event}"),
                MarkSource::Otlp,
                clock.since_t0(at).clamp(0, u64::MAX as i128) as u64,
            ));
        }
        *g = Got::default();
        by_dur.push((dur_ns, out_spans.len()));
        out_spans.push(Span {
            name,
            start_ns,
            dur_ns,
            depth,
            args,
        });
    }
    drop(spans);
    if clamped > 0 {
        notes.push(
            format!(
                "{clamped} spans start before the spawn by the clocks' reckoning (clock skew, or a \
             start time the program set itself) and are drawn from 0, keeping their length"
            )
            .into(),
        );
    }
    if inverted > 0 {
        notes.push(format!("{inverted} spans end before they start and are shown with no duration").into());
    }
    marks.sort_by_key(|m| m.t_ns);

    Placed {
        spans: out_spans,
        marks,
        by_dur,
    }
}

/// The largest spans first (ties in tree order), the rest counted as omitted.
fn largest(out_spans: &[Span], mut by_dur: Vec<(u64, usize)>) -> Table {
    by_dur.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut table = Table::new(&["span", "service", "duration", "start"]);
    table.rows = by_dur
        .iter()
        .take(TABLE_ROWS)
        .map(|&(dur_ns, k)| {
            let s = &out_spans[k];
            vec![
                Value::Text(s.name.clone()),
                s.args[0].1.clone(),
                Value::Ns(dur_ns),
                Value::AtNs(s.start_ns),
            ]
        })
        .collect();
    table.omitted += by_dur.len().saturating_sub(TABLE_ROWS);

    table
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
