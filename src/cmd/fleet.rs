//! `coldstart fleet emit ENGINE --shards N -- BENCH ARGS`: the engine's file that
//! runs one experiment as N shards (crates/fleet writes it), to stdout or `-o`.

use crate::flags::FleetEmitArgs;
use anyhow::Result;

pub fn emit(args: &FleetEmitArgs) -> Result<i32> {
    let text = crate::fleet::emit(&args.recipe)?;
    match &args.output {
        None => crate::out::text(&text)?,
        Some(path) => {
            crate::report::export::write_new(path, text.as_bytes(), args.force)?;
            if path.as_os_str() != "-" {
                crate::out::errln!("wrote {}", path.display());
            }
        }
    }
    Ok(0)
}
