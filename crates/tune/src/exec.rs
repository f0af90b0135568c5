//! Where tune's runs happen: this machine's processes, as bench runs them
//! ([`Local`]), or an executor of the caller's (`coldstart lambda --tune`: a
//! target is a function's runtime, run in the Lambda emulator, ready at the end
//! of its init). The set-ups, checks and experiments are the same either way.

use anyhow::Result;
use coldstart_core::experiment::Runner;
use coldstart_core::run::conditions::{Conditions, Settings};
use coldstart_core::run::{run_once, Plain, RunId, RunOptions, Spec};
use coldstart_core::sample::Sample;
use coldstart_core::target::{Readiness, Target};

/// How a user applies what tune measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// On the command line, as tune ran it.
    Command,
    /// In a Lambda function's environment: the runtime's command line is Lambda's,
    /// and a training run is one init of the function in the runtime's own image.
    FunctionEnvironment,
}

/// Runs for tune: single untimed ones and whole experiments.
pub trait Executor {
    /// How the user applies a set measured by these runs.
    fn applied(&self) -> Applied {
        Applied::Command
    }

    /// One untimed run of `target` (the estimate's, a training run, a check).
    fn once(&self, target: &Target, readiness: &Readiness, opts: &RunOptions, id: RunId) -> Result<Sample>;

    /// A candidate's training run (untimed): as [`Executor::once`], ended so that
    /// what the program writes at exit (an archive) is written.
    fn train(&self, target: &Target, readiness: &Readiness, opts: &RunOptions, id: RunId) -> Result<Sample> {
        self.once(target, readiness, opts, id)
    }

    /// The runner of one experiment of `specs`, in the plan's variant order.
    fn runner<'a>(&'a self, specs: &[Spec], opts: &RunOptions, quiet: bool) -> Result<Box<dyn Finish + 'a>>;
}

/// A runner with something to do after its experiment (`--cleanup` hooks).
pub trait Finish: Runner {
    fn finish(&mut self) -> Result<()>;
}

/// This machine's processes, as bench runs them.
pub struct Local;

impl Executor for Local {
    fn once(&self, target: &Target, readiness: &Readiness, opts: &RunOptions, id: RunId) -> Result<Sample> {
        run_once(target, readiness, opts, id)
    }

    fn runner<'a>(&'a self, specs: &[Spec], opts: &RunOptions, quiet: bool) -> Result<Box<dyn Finish + 'a>> {
        Ok(Box::new(Plain {
            specs: specs.to_vec(),
            opts: opts.clone(),
            conditions: Conditions::new(Settings {
                quiet,
                ..Settings::default()
            }),
        }))
    }
}

impl Finish for Plain {
    fn finish(&mut self) -> Result<()> {
        Plain::finish(self)
    }
}
