use super::*;
use std::io::BufRead;
use std::process::{Command, Stdio};

use crate::testkit;

fn lines(v: &[(u64, &str)]) -> Vec<(u64, String)> {
    v.iter().map(|(t, l)| (*t, l.to_string())).collect()
}

#[test]
fn parses_lines_in_the_runtimes_formats() {
    let claimed = lines(&[
        (0, "init internal/bytealg @0 ms, 0 ms clock, 0 bytes, 0 allocs"),
        (0, "init runtime @0.30 ms, 0.10 ms clock, 0 bytes, 0 allocs"),
        (0, "init net/http @2.0 ms, 0.042 ms clock, 4712 bytes, 49 allocs"),
        (
            0,
            "init example.com/app/heavy @21 ms, 12 ms clock, 524312 bytes, 3 allocs",
        ),
    ]);
    let (inits, ignored) = parse(&claimed).expect("parse");
    assert_eq!(ignored, 0);
    assert_eq!(inits.len(), 4);
    assert_eq!(inits[2].package, "net/http");
    assert_eq!((inits[2].start_ns, inits[2].clock_ns), (2_000_000, 42_000));
    assert_eq!((inits[2].bytes, inits[2].allocs), (4712, 49));
    assert_eq!((inits[3].start_ns, inits[3].clock_ns), (21_000_000, 12_000_000));
    // No read times: not aligned, and the section says so.
    assert_eq!(runtime_start(&inits), None);
    let s = section(&inits, 0);
    assert!(
        s.notes
            .iter()
            .filter_map(Value::as_text)
            .any(|n| n.contains("not from spawn")),
        "{:?}",
        s.notes
    );
    assert_eq!(s.table.rows[0][0], "example.com/app/heavy".into());
    assert_eq!(s.spans[0].name, "package inits");
    assert!(s.spans[1..].iter().all(|s| s.depth == 1));
}

#[test]
fn a_second_processs_inits_are_left_out() {
    let claimed = lines(&[
        (0, "init runtime @0.30 ms, 0.10 ms clock, 0 bytes, 0 allocs"),
        (0, "init os @0.5 ms, 0.01 ms clock, 448 bytes, 9 allocs"),
        (0, "init runtime @0.28 ms, 0.10 ms clock, 0 bytes, 0 allocs"),
        (0, "init os @0.4 ms, 0.01 ms clock, 448 bytes, 9 allocs"),
    ]);
    let (inits, ignored) = parse(&claimed).expect("parse");
    assert_eq!((inits.len(), ignored), (2, 2));
}

#[test]
fn runtime_start_is_the_tightest_read_bound() {
    let claimed = lines(&[
        // ends at 0.4 ms, read at 5 ms → start ≤ 4.6 ms
        (
            5_000_000,
            "init runtime @0.30 ms, 0.10 ms clock, 0 bytes, 0 allocs",
        ),
        // ends at 1 ms, read at 4.5 ms → start ≤ 3.5 ms (the estimate)
        (4_500_000, "init os @0.9 ms, 0.10 ms clock, 448 bytes, 9 allocs"),
    ]);
    let (inits, _) = parse(&claimed).expect("parse");
    assert_eq!(runtime_start(&inits), Some(3_500_000));
    let s = section(&inits, 0);
    assert_eq!(s.spans[1].start_ns, 3_500_000 + 300_000);
}

#[test]
fn godebug_is_appended_with_a_comma() {
    let env = vec![("GODEBUG".to_string(), "http2client=0,".to_string())];
    assert_eq!(godebug(&env).1, "http2client=0,inittrace=1");
    let env = vec![("GODEBUG".to_string(), " ".to_string())];
    assert_eq!(godebug(&env).1, "inittrace=1");
    let inj = Go.inject(Path::new("/tmp"), &env).expect("inject");
    assert!(inj.claims[0].is_match("init crypto/tls @1.9 ms, 0.006 ms clock, 2312 bytes, 13 allocs"));
    assert!(!inj.claims[0].is_match("init done"));
    assert!(!inj.claims[0].is_match("ready"));
}

const MAIN: &str = r#"package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	"example.com/app/heavy"
)

func main() {
	b, _ := json.Marshal(heavy.Table[:2])
	_ = http.DefaultClient
	_ = tls.VersionTLS13
	fmt.Fprintln(os.Stdout, string(b))
	fmt.Fprintln(os.Stderr, "ready")
}
"#;

/// Half a MiB and a few million multiplications: measurable on any machine.
const HEAVY: &str = r#"package heavy

var Table = build()

func build() []uint64 {
	t := make([]uint64, 1<<16)
	for i := range t {
		x := uint64(i)
		for j := 0; j < 64; j++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		t[i] = x
	}
	return t
}
"#;

#[test]
fn a_real_go_program_reports_its_package_inits() {
    let Some(go) = testkit::tool("GO", "go") else {
        return;
    };
    let tmp = tempfile::tempdir_in(testkit::fixtures_dir()).expect("tempdir");
    let src = tmp.path();
    std::fs::write(src.join("go.mod"), "module example.com/app\n\ngo 1.22\n").expect("go.mod");
    std::fs::write(src.join("main.go"), MAIN).expect("main.go");
    std::fs::create_dir(src.join("heavy")).expect("heavy dir");
    std::fs::write(src.join("heavy/heavy.go"), HEAVY).expect("heavy.go");
    let bin = src.join("app");
    let out = Command::new(&go)
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(src)
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=mod")
        .env("CGO_ENABLED", "0")
        .output()
        .expect("go build");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let path = bin.to_str().expect("utf-8 path");
    assert!(Go.detect(&FinalExec { path, exe: path }));
    assert!(!Go.detect(&FinalExec {
        path: "/bin/sh",
        exe: "/bin/sh"
    }));

    let dir = tmp.path().join("adapter");
    std::fs::create_dir(&dir).expect("adapter dir");
    let inj = Go
        .inject(&dir, &[("GODEBUG".into(), String::new())])
        .expect("inject");
    // Read stderr as it comes, stamping each line like the adapted run does.
    let t0 = coldstart_core::clock::now_ns();
    let mut child = Command::new(&bin)
        .envs(inj.env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the program");
    let stderr = child.stderr.take().expect("stderr pipe");
    let mut claimed = Vec::new();
    let mut own = Vec::new();
    for line in std::io::BufReader::new(stderr).lines() {
        let line = line.expect("stderr line");
        let at = coldstart_core::clock::now_ns() - t0;
        if inj.claims.iter().any(|re| re.is_match(&line)) {
            claimed.push((at, line));
        } else {
            own.push(line);
        }
    }
    let status = child.wait().expect("wait");
    let ready_ns = coldstart_core::clock::now_ns() - t0;
    assert!(status.success());
    assert_eq!(
        own,
        ["ready"],
        "the program's own line was claimed, or a stray line"
    );

    let got = Collected {
        dir: &dir,
        claimed: &claimed,
        ready_ns,
        t0_mono_ns: t0,
        trace: None,
    };
    let s = Go.collect(&got).expect("collect");
    let (inits, ignored) = parse(&claimed).expect("parse");
    assert_eq!(ignored, 0);
    let find = |p: &str| inits.iter().find(|i| i.package == p);
    let heavy = find("example.com/app/heavy").expect("heavy package initialised");
    assert!(heavy.clock_ns > 0 && heavy.bytes >= 512 * 1024, "{heavy:?}");
    if let Some(main) = find("main") {
        assert!(heavy.clock_ns >= main.clock_ns);
    }
    for p in ["runtime", "net/http", "crypto/tls", "encoding/json"] {
        assert!(find(p).is_some(), "{p} not counted");
    }
    assert_eq!(
        s.facts[0],
        ("packages initialised".to_string(), Value::count(inits.len()))
    );
    // Largest first; the heavy package is in the table.
    let clock_of = |package: &str| find(package).map(|i| i.clock_ns).expect("row is a package");
    let clocks: Vec<u64> = s
        .table
        .rows
        .iter()
        .map(|r| clock_of(r[0].as_text().unwrap_or_default()))
        .collect();
    assert!(
        clocks.windows(2).all(|w| w[0] >= w[1]),
        "not largest first: {clocks:?}"
    );
    assert!(s
        .table
        .rows
        .iter()
        .any(|r| r[0] == "example.com/app/heavy".into()));
    // Aligned through the read times: every init ends before the program did.
    let zero = runtime_start(&inits).expect("read times give the runtime's start");
    assert!(s
        .spans
        .iter()
        .all(|sp| sp.start_ns >= zero && sp.start_ns + sp.dur_ns <= ready_ns));
}
