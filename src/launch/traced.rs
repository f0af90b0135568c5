//! Starting a target under the tracer with what a plain spawn gets here: its
//! own run cgroup (entered before exec, so nothing of the tree escapes cleanup)
//! and coldstart's interrupt. The tracer crate knows neither; it takes both as
//! options.

use crate::target::Target;
use crate::trace::TraceOptions;

/// Trace options for `target`: argv, program, env and cwd, a fresh run cgroup's
/// `cgroup.procs` (none when cgroups are unavailable), and `signals::interrupted`.
pub fn options(target: &Target) -> TraceOptions {
    let mut opts = TraceOptions::new(target.argv.clone(), target.program.clone());
    opts.env = target.env.clone();
    opts.cwd = target.cwd.clone();
    opts.cgroup_procs = super::cgroup::RunCgroup::create().map(super::cgroup::RunCgroup::into_procs);
    opts.interrupted = super::signals::interrupted;
    opts
}
