//! The variant names of an explain experiment: the store tells an explain by them.

/// The three arms of `coldstart explain`, as the experiment's variants (in this
/// order): stored under these names, so `compare` pairs two explains arm by arm.
pub const ARMS: [&str; 3] = ["untraced", "traced", "adapted"];

/// Whether an experiment with these variant names is an explain (its variants
/// are exactly the arms, whether or not it ran to its explanation).
/// With `--profile`, a fourth arm [`PROFILED_ARM`] follows them.
pub fn is_arms<'a>(names: impl IntoIterator<Item = &'a str>) -> bool {
    let names: Vec<&str> = names.into_iter().collect();
    names == ARMS
        || names
            .split_last()
            .is_some_and(|(last, arms)| *last == PROFILED_ARM && arms == ARMS)
}
/// The arm `explain --profile` adds: plain runs under the CPU profiler.
pub const PROFILED_ARM: &str = "profiled";
