//! Builds the LD_PRELOAD listen shim (preload/listen.c) into OUT_DIR; the binary
//! embeds it and writes it out on first use, so `coldstart` stays one file.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=preload/listen.c");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let so = out.join("libcoldstart_listen.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-o"])
        .arg(&so)
        .arg("preload/listen.c")
        .args(["-ldl", "-lpthread"])
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cc} to build preload/listen.c (install gcc): {e}"));
    assert!(status.success(), "building preload/listen.c failed");
}
