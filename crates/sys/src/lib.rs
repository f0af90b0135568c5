//! The syscalls coldstart makes through `libc` directly, each wrapped once with
//! the argument for why it is sound. Everything above this crate (the tracer,
//! the launcher, the probes) calls these instead of repeating the unsafe block.

pub mod clock;
pub mod fd;
pub mod ns;
pub mod pagecache;
pub mod pipe;
pub mod process;
pub mod signal;
