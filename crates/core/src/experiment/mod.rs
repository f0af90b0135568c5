//! An experiment: variants × runs, scheduled (warmups, interleaving, adaptive
//! stopping) and executed one run at a time. Produces raw samples only; statistics
//! and output are other modules' business.

pub mod arms;
pub mod load;
pub mod plan;
pub mod point;
pub mod schedule;
pub mod settings;
pub mod shard;
pub mod sweep;

pub use plan::{CiOf, Order, Plan, StopRule, Variant};
pub use schedule::{execute_with, ExperimentResult, Observer, Runner, StopReason};
pub use settings::{ExperimentSettings, Kind, Runs};
pub use sweep::{Param, Sweep};
