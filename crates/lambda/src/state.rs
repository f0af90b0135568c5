//! The execution environment's state, shared by the API handlers (which change
//! it) and the orchestrator in `mod.rs` (which waits on it). Every change bumps a
//! watch channel, so waiting is event-driven: no polling, no sleeps.

use coldstart_core::clock::now_ns;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use tokio::sync::watch;

/// Most extensions one environment accepts (RIE `MaxAgentsAllowed`).
pub const MAX_EXTENSIONS: usize = 10;

/// One registered extension (external: started from the extensions directory;
/// internal: registered by the runtime process under another name).
#[derive(Debug)]
pub struct Extension {
    pub name: String,
    pub id: String,
    pub external: bool,
    pub invoke: bool,
    pub shutdown: bool,
    /// Instants (CLOCK_MONOTONIC ns) of /register and of the first /event/next.
    pub registered_ns: u64,
    pub ready_ns: Option<u64>,
    /// Last /event/next (marks the end of its work on an invoke).
    pub last_next_ns: Option<u64>,
    /// Blocked in /event/next right now.
    pub waiting: bool,
    pub events: VecDeque<Value>,
    pub telemetry: Option<Vec<String>>,
}

/// The invocation in flight.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub request_id: String,
    pub event: Vec<u8>,
    pub deadline_ms: u64,
    pub trace_id: String,
    pub arn: String,
    /// Set when the runtime's /next returned it.
    pub delivered_ns: Option<u64>,
    pub result: Option<InvokeResult>,
}

#[derive(Debug, Clone)]
pub struct InvokeResult {
    pub at_ns: u64,
    /// None: a response; Some(type): an /error.
    pub error_type: Option<String>,
    pub body: Vec<u8>,
}

/// Who a spawned process was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    Runtime,
    Extension(String),
}

#[derive(Debug, Clone)]
pub struct Exit {
    pub role: Role,
    pub pid: i32,
    pub status: coldstart_core::sample::ExitStatus,
}

#[derive(Debug, Default)]
pub struct State {
    pub registration_open: bool,
    pub extensions: Vec<Extension>,
    /// Runtime's first /invocation/next.
    pub runtime_ready_ns: Option<u64>,
    pub runtime_waiting: bool,
    /// Invocations queued for the runtime's /next.
    pub runtime_queue: VecDeque<Invocation>,
    pub current: Option<Invocation>,
    /// /runtime/init/error: (error type, body).
    pub init_error: Option<(String, String)>,
    /// /extension/init/error or /exit/error: (extension, Lambda's error type, the
    /// extension's own function error type).
    pub extension_error: Option<(String, String, String)>,
    pub exits: Vec<Exit>,
    pub interrupted: bool,
    /// SDK checkpoints of every process, as read (pid: whose pipe).
    pub checkpoints: Vec<coldstart_core::sample::Mark>,
}

impl State {
    pub fn extension_by_id(&mut self, id: &str) -> Option<&mut Extension> {
        self.extensions.iter_mut().find(|e| e.id == id)
    }

    pub fn exited(&self, role: &Role) -> Option<&Exit> {
        self.exits.iter().find(|e| &e.role == role)
    }
}

/// State plus its change signal.
pub struct Shared {
    state: Mutex<State>,
    changed: watch::Sender<u64>,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            state: Mutex::new(State {
                registration_open: true,
                ..State::default()
            }),
            changed: watch::Sender::new(0),
        }
    }
}

impl Shared {
    /// Read without signalling.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A handler that panicked mid-update cannot leave a half-made invariant we
        // rely on (each field is set whole), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Change the state and wake every waiter.
    pub fn update<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let r = f(&mut self.lock());
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
        r
    }

    /// Wait until `cond` holds (true) or CLOCK_MONOTONIC passes `deadline_ns` (false).
    pub async fn wait_until(&self, deadline_ns: u64, mut cond: impl FnMut(&State) -> bool) -> bool {
        let mut rx = self.changed.subscribe();
        let left = std::time::Duration::from_nanos(deadline_ns.saturating_sub(now_ns()));
        let waited = tokio::time::timeout(left, rx.wait_for(|_| cond(&self.lock()))).await;
        matches!(waited, Ok(Ok(_)))
    }

    /// Wait for `take` to yield a value (checked on every change); None if the
    /// deadline passes first. Used by the blocking /next handlers.
    pub async fn wait_take<T>(&self, mut take: impl FnMut(&mut State) -> Option<T>) -> T {
        let mut rx = self.changed.subscribe();
        loop {
            if let Some(v) = self.update_if(&mut take) {
                return v;
            }
            if rx.changed().await.is_err() {
                // The sender lives as long as `self`; this cannot happen while we borrow it.
                std::future::pending::<()>().await;
            }
        }
    }

    fn update_if<T>(&self, take: &mut impl FnMut(&mut State) -> Option<T>) -> Option<T> {
        let v = take(&mut self.lock());
        if v.is_some() {
            self.changed.send_modify(|n| *n = n.wrapping_add(1));
        }
        v
    }
}

/// A random UUID (version 4) for extension ids and request ids.
pub fn uuid() -> String {
    let b: [u8; 16] = rand::random();
    let h = |r: std::ops::Range<usize>| b[r].iter().map(|x| format!("{x:02x}")).collect::<String>();
    format!(
        "{}-{}-4{}-{:x}{}-{}",
        h(0..4),
        h(4..6),
        &h(6..8)[1..],
        8 | (b[8] & 0x3),
        &h(8..10)[1..],
        h(10..16)
    )
}

pub fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts.iter().all(|p| p.chars().all(|c| c.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_v4_shaped_and_unique() {
        let a = uuid();
        assert!(is_uuid(&a), "{a}");
        assert_eq!(&a[14..15], "4");
        assert!("89ab".contains(&a[19..20]), "{a}");
        assert_ne!(a, uuid());
        assert!(!is_uuid("not-a-uuid"));
    }

    #[tokio::test]
    async fn waiters_wake_on_update_not_on_timers() {
        let shared = std::sync::Arc::new(Shared::default());
        let s2 = shared.clone();
        let waiter = tokio::spawn(async move {
            s2.wait_until(now_ns() + 10_000_000_000, |s| s.runtime_ready_ns.is_some())
                .await
        });
        tokio::task::yield_now().await;
        shared.update(|s| s.runtime_ready_ns = Some(1));
        assert!(waiter.await.unwrap());
        assert!(!shared.wait_until(now_ns(), |s| s.init_error.is_some()).await);
    }
}
