//! Mark: a named instant inside a run, from any source. One type for all of them,
//! so a timeline, a report or a comparison never needs to know where one came from.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum MarkSource {
    /// An SDK's checkpoint("name") on COLDSTART_FD.
    Checkpoint,
    /// The first output line matching a --mark regex.
    Log,
    /// The syscall tracer: an exec, a first library mmap, a listen, an accept.
    Tracer,
    /// A runtime adapter: an import, a class load, a package init.
    Adapter,
    /// An OpenTelemetry span's start, from the app's own SDK.
    Otlp,
    /// The Lambda emulator: a registration, a runtime's first /next.
    Lambda,
    /// A container engine's own record: a container's creation, its process's start.
    Engine,
}

impl MarkSource {
    /// Short name for tables ("sdk", "log", …).
    pub fn label(self) -> &'static str {
        match self {
            MarkSource::Checkpoint => "sdk",
            MarkSource::Log => "log",
            MarkSource::Tracer => "tracer",
            MarkSource::Adapter => "adapter",
            MarkSource::Otlp => "otlp",
            MarkSource::Lambda => "lambda",
            MarkSource::Engine => "engine",
        }
    }
}

/// A named instant inside a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Mark {
    pub name: String,
    pub source: MarkSource,
    /// Since time zero (the spawn), ns.
    pub t_ns: u64,
    /// The process it happened in, when the source knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// What else the source says about it (a path, an address).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

impl Mark {
    pub fn new(name: impl Into<String>, source: MarkSource, t_ns: u64) -> Mark {
        Mark {
            name: name.into(),
            source,
            t_ns,
            pid: None,
            detail: String::new(),
        }
    }

    pub fn in_pid(mut self, pid: i32) -> Mark {
        self.pid = Some(pid);
        self
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Mark {
        self.detail = detail.into();
        self
    }
}
