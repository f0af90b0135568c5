//! `emit PREFIX COUNT`: checkpoints PREFIX:begin, PREFIX:0:café .. PREFIX:COUNT-1:café,
//! PREFIX:end (used by sdk/test_all.sh).
use coldstart_checkpoint::checkpoint;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: emit PREFIX COUNT");
        std::process::exit(2);
    }
    let (prefix, count): (&str, u32) = (&args[1], args[2].parse().expect("COUNT"));
    checkpoint(&format!("{prefix}:begin"));
    for i in 0..count {
        checkpoint(&format!("{prefix}:{i}:café"));
    }
    checkpoint(&format!("{prefix}:end"));
}
