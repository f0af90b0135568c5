//! An execution environment kept between invokes (`lambda serve`): init once,
//! then an invoke whenever one is asked for, then shutdown when its owner says.
//! The experiment path (`cold_start`) runs the same phases (`init`, `invoke`,
//! `shutdown`) in one go; this only holds the environment between them.

use super::report::Failure;
use super::state::Role;
use super::{init, invoke, shutdown, Config, Environment, Options};
use anyhow::Result;
use coldstart_core::run::RunId;

/// A live environment: init succeeded, its runtime waits for events.
pub struct Kept {
    e: Environment,
    cfg: Config,
    opts: Options,
    /// The Init Duration (ms, as the platform lines show it) until the first
    /// invoke reports it; None after.
    cold: Option<f64>,
    /// What the emulator measured for this environment's init (ns).
    pub init_ns: u64,
}

/// How starting an environment ended.
pub enum Started {
    Ready(Box<Kept>),
    /// Init failed (or was interrupted); the environment is already gone.
    Failed(InitFailed),
}

pub struct InitFailed {
    pub failure: Failure,
    /// The log from INIT_START on (INIT_REPORT last).
    pub log: Vec<u8>,
}

/// One invoke's outcome, as the Invoke API returns it.
pub struct Reply {
    pub request_id: String,
    /// The runtime's response or error document (None: it posted neither).
    pub body: Option<Vec<u8>>,
    pub failure: Option<Failure>,
    /// The invoke's log (with the init's lines before it on the cold one),
    /// REPORT last.
    pub log: Vec<u8>,
    /// The cold invoke's Init Duration as measured (ns); None when warm.
    pub init_ns: Option<u64>,
    /// Whether the environment may take the next invoke: Lambda replaces one
    /// whose runtime exited, crashed an extension, or timed out.
    pub reusable: bool,
}

impl Kept {
    /// Prepare and init one environment (`cfg.version` is the version it runs).
    pub async fn start(
        lab: &'static coldstart_core::Lab,
        cfg: Config,
        opts: Options,
        id: RunId,
    ) -> Result<Started> {
        let (mut e, pending) = init::prepare(lab, &cfg, &opts, &id, "init").await?;
        // Other environments live beside this one: its cleanup kills only its own.
        e.alone = false;
        // The cold invoke's log starts at INIT_START.
        e.logs.capture();
        let init = match init::run(&mut e, pending, &cfg, &opts).await {
            Ok(init) => init,
            Err(err) => {
                shutdown::cleanup(e).await;
                return Err(err);
            }
        };
        match init.result {
            Ok(ns) if !init.interrupted => Ok(Started::Ready(Box::new(Kept {
                e,
                cfg,
                opts,
                cold: Some(init.ms),
                init_ns: ns,
            }))),
            result => {
                let failure = result.err().unwrap_or(Failure {
                    status: "failure".into(),
                    error_type: Some("Runtime.Unknown".into()),
                });
                let log = e.logs.captured();
                stop_environment(e).await;
                Ok(Started::Failed(InitFailed { failure, log }))
            }
        }
    }

    /// One invoke of `event`: START … END, REPORT (with Init Duration on the
    /// first one only).
    pub async fn invoke(&mut self, event: &[u8]) -> Reply {
        let which = match self.cold.take() {
            Some(ms) => invoke::Which::Cold(ms),
            None => {
                self.e.logs.capture();
                invoke::Which::Warm
            }
        };
        let init_ns = matches!(which, invoke::Which::Cold(_)).then_some(self.init_ns);
        let inv = invoke::run(&self.e, &self.cfg, &self.opts, event, which).await;
        let log = self.e.logs.captured();
        let reusable = {
            let st = self.e.env.shared.lock();
            // A handled error (the runtime's /error) keeps the environment.
            st.exits.is_empty()
                && !st.interrupted
                && inv.failure.as_ref().is_none_or(|f| {
                    f.status == "error" && st.exited(&Role::Runtime).is_none() && inv.body.is_some()
                })
        };
        Reply {
            request_id: inv.request_id,
            body: inv.body,
            failure: inv.failure,
            log,
            init_ns,
            reusable,
        }
    }

    /// Lambda's shutdown (SIGTERM, SHUTDOWN to the extensions, their deadline),
    /// then nothing of the environment is left: processes, cgroup, namespace.
    pub async fn stop(self) {
        stop_environment(self.e).await;
    }
}

async fn stop_environment(mut e: Environment) {
    if !coldstart_core::launch::signals::interrupted() {
        invoke::after_last(&e, None).await;
        e.seen = shutdown::members(&e.procs, e.sandbox.as_ref());
        shutdown::run(&e, None).await;
    }
    shutdown::cleanup(e).await;
}
