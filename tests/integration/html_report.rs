//! The HTML report of real experiments (bench A/B, explain, lambda, and a history
//! over two benches), opened from a file:// URL in headless Chromium (Debian's
//! `chromium`) driven over the DevTools protocol: no console error, no uncaught
//! exception, no request leaving the file, every section the data has present in
//! the DOM, the hover script working; a screenshot of each under
//! target/html-report/ (CI keeps it). A negative test proves the checks see a
//! console error, an exception and a network request.
//!
//! Without chromium on PATH the tests skip visibly; COLDSTART_REQUIRE_CHROMIUM=1
//! turns that into a failure.

use crate::common::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// What a page did while it loaded.
#[derive(Debug, Default)]
struct Loaded {
    /// Console errors, uncaught exceptions and error log entries (CSP refusals included).
    errors: Vec<String>,
    /// Requests for anything but the file itself (and data: URLs).
    requests: Vec<String>,
    /// `data-section` of every section in the DOM, in order.
    sections: Vec<String>,
    /// The hover box's text after a mouseover on the first `data-tip` element.
    tip: String,
}

/// Headless Chromium over `--remote-debugging-pipe` (fd 3: our commands, fd 4: its
/// answers and events, each a JSON message ending in NUL).
struct Browser {
    child: Child,
    to: std::fs::File,
    from: mpsc::Receiver<Value>,
    next: u64,
    session: String,
    _profile: tempfile::TempDir,
}

const WAIT: Duration = Duration::from_secs(90);

impl Browser {
    fn start(chromium: &Path) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let (ours_r, theirs_w) = pipe();
        let (theirs_r, ours_w) = pipe();
        let (r, w) = (theirs_r.as_raw_fd(), theirs_w.as_raw_fd());
        let mut cmd = Command::new(chromium);
        cmd.args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--remote-debugging-pipe",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--mute-audio",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: between fork and exec only async-signal-safe calls (fcntl, dup2,
        // close) on descriptors this process owns; no allocation.
        unsafe {
            cmd.pre_exec(move || {
                // Out of the way first, in case a pipe end already sits on 3 or 4.
                let hi_r = libc::fcntl(r, libc::F_DUPFD, 10);
                let hi_w = libc::fcntl(w, libc::F_DUPFD, 10);
                if hi_r < 0 || hi_w < 0 || libc::dup2(hi_r, 3) < 0 || libc::dup2(hi_w, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(hi_r);
                libc::close(hi_w);
                Ok(())
            });
        }
        let child = cmd.spawn().expect("spawn chromium");
        drop((theirs_r, theirs_w));
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(std::fs::File::from(ours_r));
            let mut buf = Vec::new();
            while matches!(reader.read_until(0, &mut buf), Ok(n) if n > 0) {
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                buf.clear();
            }
        });
        let mut b = Browser {
            child,
            to: std::fs::File::from(ours_w),
            from: rx,
            next: 0,
            session: String::new(),
            _profile: profile,
        };
        let target = b.call(
            "Target.createTarget",
            json!({ "url": "about:blank" }),
            &mut |_| {},
        );
        let target = target["targetId"].as_str().expect("a target id").to_string();
        let attached = b.call(
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
            &mut |_| {},
        );
        b.session = attached["sessionId"].as_str().expect("a session").to_string();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable", "Network.enable"] {
            b.page(domain, json!({}), &mut |_| {});
        }
        b.page(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": 1000, "height": 900, "deviceScaleFactor": 1, "mobile": false }),
            &mut |_| {},
        );
        b
    }

    /// Send a browser-level command and wait for its answer; events meanwhile go to `on`.
    fn call(&mut self, method: &str, params: Value, on: &mut dyn FnMut(&Value)) -> Value {
        self.send(json!({ "method": method, "params": params }), on)
    }

    /// A command to the page's session.
    fn page(&mut self, method: &str, params: Value, on: &mut dyn FnMut(&Value)) -> Value {
        let session = self.session.clone();
        self.send(
            json!({ "method": method, "params": params, "sessionId": session }),
            on,
        )
    }

    fn send(&mut self, mut msg: Value, on: &mut dyn FnMut(&Value)) -> Value {
        self.next += 1;
        let id = self.next;
        msg["id"] = json!(id);
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).expect("write to chromium");
        loop {
            let v = self
                .from
                .recv_timeout(WAIT)
                .unwrap_or_else(|_| panic!("chromium did not answer {msg} within {WAIT:?}"));
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{}: {}", msg["method"], v["error"]);
                return v["result"].clone();
            }
            on(&v);
        }
    }

    /// Open `file` and wait for its load event, recording what it did.
    fn load(&mut self, file: &Path) -> Loaded {
        let url = format!("file://{}", file.canonicalize().unwrap().display());
        let mut seen = Loaded::default();
        let mut loaded = false;
        self.page("Page.navigate", json!({ "url": url }), &mut |v| {
            record(v, &mut seen, &mut loaded)
        });
        while !loaded {
            let v = self.from.recv_timeout(WAIT).expect("the page's load event");
            record(&v, &mut seen, &mut loaded);
        }
        let eval = |b: &mut Browser, seen: &mut Loaded, expr: &str| b.eval(seen, expr);
        let sections = eval(
            self,
            &mut seen,
            "[...document.querySelectorAll('[data-section]')].map(e => e.dataset.section)",
        );
        seen.sections = sections
            .as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let tip = eval(
            self,
            &mut seen,
            "(() => { const t = document.querySelector('[data-tip]'); if (!t) return '';
               t.dispatchEvent(new MouseEvent('mouseover', {bubbles: true, clientX: 10, clientY: 10}));
               const box = document.getElementById('tip');
               const shown = box && box.style.display === 'block' ? box.textContent : '';
               t.dispatchEvent(new MouseEvent('mouseout', {bubbles: true}));
               return shown; })()",
        );
        seen.tip = tip.as_str().unwrap_or("").to_string();
        seen
    }

    /// Evaluate `expr` in the page (its value), recording what it caused in `seen`.
    fn eval(&mut self, seen: &mut Loaded, expr: &str) -> Value {
        let mut events = Vec::new();
        let r = self.page(
            "Runtime.evaluate",
            json!({ "expression": expr, "returnByValue": true }),
            &mut |v| events.push(v.clone()),
        );
        let mut ignored = false;
        for v in &events {
            record(v, seen, &mut ignored);
        }
        r["result"]["value"].clone()
    }

    /// The whole page, and 1300 px from its first chart on (the README's picture), as PNG files.
    fn screenshot(&mut self, full: &Path, top: &Path) {
        let metrics = self.page("Page.getLayoutMetrics", json!({}), &mut |_| {});
        let height = metrics["cssContentSize"]["height"]
            .as_f64()
            .unwrap_or(900.0)
            .min(16000.0);
        let first = self.page(
            "Runtime.evaluate",
            json!({ "expression": "(() => { const f = document.querySelector('figure');
                      return f ? Math.max(0, f.getBoundingClientRect().top + window.scrollY - 60) : 0; })()",
                    "returnByValue": true }),
            &mut |_| {},
        );
        let from = first["result"]["value"].as_f64().unwrap_or(0.0);
        for (path, y, h) in [
            (full, 0.0, height),
            (top, from, (height - from).clamp(1.0, 1300.0)),
        ] {
            let shot = self.page(
                "Page.captureScreenshot",
                json!({ "format": "png", "captureBeyondViewport": true,
                        "clip": { "x": 0, "y": y, "width": 1000, "height": h, "scale": 1 } }),
                &mut |_| {},
            );
            use base64::Engine;
            let png = base64::engine::general_purpose::STANDARD
                .decode(shot["data"].as_str().expect("screenshot data"))
                .expect("base64");
            assert!(png.starts_with(b"\x89PNG"), "a PNG");
            std::fs::write(path, png).unwrap();
        }
    }
}

/// Note a DevTools event: console errors, exceptions, error log entries,
/// requests leaving the file, the load event.
fn record(v: &Value, seen: &mut Loaded, loaded: &mut bool) {
    let p = &v["params"];
    match v["method"].as_str().unwrap_or("") {
        "Runtime.consoleAPICalled" if p["type"] == "error" || p["type"] == "assert" => seen.errors.push(
            format!("console.{}: {}", p["type"].as_str().unwrap_or("?"), p["args"]),
        ),
        "Runtime.exceptionThrown" => seen.errors.push(format!("exception: {}", p["exceptionDetails"])),
        "Log.entryAdded" if p["entry"]["level"] == "error" => {
            seen.errors.push(format!("log: {}", p["entry"]["text"]))
        }
        "Network.requestWillBeSent" => {
            let u = p["request"]["url"].as_str().unwrap_or("").to_string();
            if !(u.starts_with("file:") || u.starts_with("data:")) {
                seen.requests.push(u);
            }
        }
        "Page.loadEventFired" => *loaded = true,
        _ => {}
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let mut msg = serde_json::to_vec(&json!({ "id": 0, "method": "Browser.close" })).unwrap();
        msg.push(0);
        let closed = self.to.write_all(&msg).is_ok();
        // Browser.close ends every chromium process; wait for it rather than kill.
        for _ in 0..200 {
            if !closed || matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            let _ = self.from.recv_timeout(Duration::from_millis(50));
        }
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

fn pipe() -> (OwnedFd, OwnedFd) {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).expect("pipe")
}

fn chromium() -> Option<PathBuf> {
    testkit::tool("CHROMIUM", "chromium")
}

/// Where screenshots go: target/html-report/ (a CI artifact).
fn shots() -> PathBuf {
    let d = repo().join("target/html-report");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn set(xs: &[&str]) -> BTreeSet<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

/// Open `file`, check it, and save its screenshots as `name`.png / `name`-top.png.
fn check(browser: &mut Browser, file: &Path, name: &str, sections: &[&str]) -> Loaded {
    let seen = browser.load(file);
    assert!(seen.errors.is_empty(), "{name}: console errors {:?}", seen.errors);
    assert!(
        seen.requests.is_empty(),
        "{name}: network requests {:?}",
        seen.requests
    );
    let got: BTreeSet<String> = seen.sections.iter().cloned().collect();
    assert_eq!(got, set(sections), "{name}: sections in the DOM");
    assert!(
        !seen.tip.is_empty(),
        "{name}: hovering a chart element shows its details"
    );
    let dir = shots();
    browser.screenshot(
        &dir.join(format!("{name}.png")),
        &dir.join(format!("{name}-top.png")),
    );
    seen
}

#[test]
fn reports_of_real_experiments_load_clean_in_chromium() {
    let _turn = crate::common::beside();
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db").display().to_string();
    let path = |f: &str| dir.path().join(f);
    let py = python_exe();

    // bench A/B, twice (the second gives each target a history of two), the
    // second exported by bench itself.
    let ab = |export: &[&str]| {
        let mut a = vec!["bench", "--store", &store, "--runs", "12"];
        a.extend_from_slice(export);
        a.extend([
            "--name",
            "plain",
            "--",
            &py,
            "-c",
            "pass",
            "--name",
            "json",
            "--",
            &py,
            "-c",
            "import json",
        ]);
        cs(&a).quiet().ok();
    };
    ab(&[]);
    let bench_html = path("bench.html");
    ab(&["--export-html", bench_html.to_str().unwrap()]);
    // explain on a small target: the Python adapter gives the sections.
    let explain_html = path("explain.html");
    cs(&[
        "explain",
        "--store",
        &store,
        "--runs",
        "3",
        "--ready",
        "exit",
        "--export-html",
        explain_html.to_str().unwrap(),
        "--",
        &py,
        "-c",
        "import json",
    ])
    .quiet()
    .ok();
    // lambda: the stdlib-only runtime and extension, two memory sizes (a sweep).
    let ext = path("extensions");
    std::fs::create_dir(&ext).unwrap();
    std::fs::copy(
        repo().join("examples/lambda/python/raw_extension.py"),
        ext.join("py-ext"),
    )
    .unwrap();
    let lambda_html = path("lambda.html");
    cs(&[
        "lambda",
        "--store",
        &store,
        "--no-cgroup",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--memory",
        "256,512",
        "--runtime",
        repo()
            .join("examples/lambda/python/raw_runtime.py")
            .to_str()
            .unwrap(),
        "--extensions",
        ext.to_str().unwrap(),
        "--export-html",
        lambda_html.to_str().unwrap(),
    ])
    .quiet()
    .ok();
    // `report` over the store: the A/B (with history) and everything at once.
    let report_html = path("report.html");
    cs(&[
        "report",
        "--store",
        &store,
        "2",
        "-o",
        report_html.to_str().unwrap(),
    ])
    .quiet()
    .ok();
    let all_html = path("all.html");
    cs(&[
        "report",
        "--store",
        &store,
        "1",
        "2",
        "3",
        "4",
        "-o",
        all_html.to_str().unwrap(),
    ])
    .quiet()
    .ok();

    // compare and gate over two variants of the A/B.
    let compare_html = path("compare.html");
    cs(&[
        "compare",
        "--store",
        &store,
        "2:plain",
        "2:json",
        "--export-html",
        compare_html.to_str().unwrap(),
    ])
    .ok();
    let gate_html = path("gate.html");
    let o = cs(&[
        "gate",
        "--store",
        &store,
        "--baseline",
        "2:plain",
        "--candidate",
        "2:json",
        "--max",
        "60s",
        "--export-html",
        gate_html.to_str().unwrap(),
    ])
    .run();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));

    let mut b = Browser::start(&chromium);
    let ab_sections = ["settings", "distribution", "runs", "comparisons"];
    check(&mut b, &bench_html, "bench-ab", &ab_sections);
    check(
        &mut b,
        &report_html,
        "report-ab-history",
        &[&ab_sections[..], &["history"]].concat(),
    );
    check(
        &mut b,
        &explain_html,
        "explain",
        &[&ab_sections[..], &["headline", "waterfall", "sources"]].concat(),
    );
    check(
        &mut b,
        &lambda_html,
        "lambda",
        // One runtime at two memory sizes: each size is compared with the first
        // (compare-along is on by default for one variant and one parameter).
        &[
            "settings",
            "distribution",
            "runs",
            "comparisons",
            "sweep",
            "lambda",
        ],
    );
    check(&mut b, &compare_html, "compare", &ab_sections);
    check(
        &mut b,
        &gate_html,
        "gate",
        &[&ab_sections[..], &["gate"]].concat(),
    );
    check(
        &mut b,
        &all_html,
        "all",
        &[
            &ab_sections[..],
            &["headline", "waterfall", "sources", "sweep", "lambda", "history"],
        ]
        .concat(),
    );
}

/// An explain of Python behind a shim (pyenv's `python3`, else two shell
/// scripts): the page starts with the headline, the phases carry their ≈
/// untraced estimates, the blame list is there, process lanes are named by
/// their command, and the Python imports lane starts no earlier than the
/// interpreter's exec in the run drawn (its spans come from the adapted run,
/// laid out from that run's spawn).
#[test]
fn the_explain_page_leads_with_the_headline_and_draws_lanes_where_they_ran() {
    let _turn = crate::common::beside();
    let Some(chromium) = chromium() else {
        return;
    };
    let Some(real) = testkit::python() else {
        return;
    };
    let shim = testkit::which("python3")
        .filter(|p| std::fs::read(p).is_ok_and(|b| b.starts_with(b"#!")))
        .unwrap_or_else(|| testkit::shim_chain(&real));
    let dir = tempfile::tempdir().unwrap();
    let (page, json) = (dir.path().join("explain.html"), dir.path().join("explain.json"));
    cs(&[
        "explain",
        "--runs",
        "3",
        "--ready",
        "exit",
        "--export-html",
        page.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
        "--",
        shim.to_str().unwrap(),
        "-c",
        "import json",
    ])
    .quiet()
    .no_store()
    .ok();
    let e = json_file(&json);
    let items: Vec<String> = e["headline"]["items"]
        .as_array()
        .expect("a headline")
        .iter()
        .map(|i| i["what"].as_str().unwrap().to_string())
        .collect();
    assert!(!items.is_empty(), "{}", e["headline"]);
    let service = e["timeline"]["service"]["pid"].as_i64().unwrap();
    let last = e["timeline"]["exec_chain"].as_array().unwrap().last().unwrap();
    let program = last["path"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();

    let mut b = Browser::start(&chromium);
    let seen = check(
        &mut b,
        &page,
        "explain-headline",
        &[
            "settings",
            "distribution",
            "runs",
            "comparisons",
            "headline",
            "waterfall",
            "sources",
        ],
    );
    let mut seen = Loaded { ..seen };
    let got = b.eval(
        &mut seen,
        &format!(
            "(() => {{
               const exp = document.querySelector('section.experiment');
               const first = exp.querySelector(':scope > section');
               const heads = [...document.querySelectorAll('table.phases thead th')].map(t => t.textContent);
               const ests = [...document.querySelectorAll('table.phases tbody td')].map(t => t.textContent);
               const labels = [...document.querySelectorAll('text.lane-label')];
               const execs = [...document.querySelectorAll('path[data-mark=exec][data-pid=\"{service}\"]')]
                 .map(m => +m.getAttribute('d').slice(1).split(' ')[0]);
               const py = [...document.querySelectorAll('rect[data-source=python]')].map(r => +r.getAttribute('x'));
               return {{
                 first: first.dataset.section, headline: first.textContent,
                 heads, estimated: ests.filter(t => t.startsWith('≈ ')).length,
               noisy: (document.querySelector('div.estimates') || {{}}).textContent || '',
                 service_label: (labels.find(l => l.dataset.pid === '{service}') || {{}}).textContent || '',
                 labels: labels.map(l => l.textContent),
                 blame: document.querySelectorAll('table.blame tbody tr').length,
                 exec_x: execs.length ? Math.max(...execs) : null,
                 python_x: py.length ? Math.min(...py) : null,
               }}; }})()"
        ),
    );
    assert!(seen.errors.is_empty(), "{:?}", seen.errors);
    assert_eq!(
        got["first"], "headline",
        "the experiment starts with the headline: {got}"
    );
    let text = got["headline"].as_str().unwrap();
    for what in &items {
        assert!(
            text.contains(what.as_str()),
            "headline item {what:?} not in {text:?}"
        );
    }
    assert!(
        got["heads"].as_array().unwrap().iter().any(|h| h == "≈ untraced"),
        "the phases table's estimates column: {got}"
    );
    // Estimates where explain calls them reliable; else none, and the page says why.
    if e["estimate"]["reliable"] == true {
        assert!(
            got["estimated"].as_u64() > Some(0),
            "reliable estimates are shown: {got}"
        );
    } else {
        assert_eq!(
            got["estimated"].as_u64(),
            Some(0),
            "no estimate explain does not trust: {got}"
        );
        assert!(
            got["noisy"]
                .as_str()
                .unwrap()
                .contains("too noisy to estimate untraced times"),
            "the page says why: {got}"
        );
    }
    assert!(got["blame"].as_u64() > Some(0), "the blame list: {got}");
    assert!(
        got["service_label"].as_str().unwrap().contains(&program),
        "the service's lane is named by its command ({program}): {got}"
    );
    // Not `PID program` for every lane: no label is a bare pid and a name.
    assert!(
        !got["labels"].as_array().unwrap().iter().any(|l| l
            .as_str()
            .unwrap()
            .split(' ')
            .next()
            .is_some_and(|w| w.parse::<u32>().is_ok())),
        "{got}"
    );
    let (exec_x, python_x) = (got["exec_x"].as_f64(), got["python_x"].as_f64());
    let (Some(exec_x), Some(python_x)) = (exec_x, python_x) else {
        panic!("the interpreter's exec mark and the Python imports lane: {got}")
    };
    assert!(
        python_x >= exec_x - 0.5,
        "the Python imports lane starts at x={python_x}, before the interpreter's exec at x={exec_x}: {got}"
    );
}

/// A sweep, an explain with its startup CPU profile, and a tune, each from a real
/// run: their sections in the DOM, inferno's flame graph running inside the page
/// (under its Content-Security-Policy) and the tune table's rows.
#[test]
fn sweep_profile_and_tune_reports_load_clean_in_chromium() {
    let _turn = crate::common::beside();
    let Some(chromium) = chromium() else {
        return;
    };
    let Some(gcc) = testkit::tool("GCC", "gcc") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db").display().to_string();
    let path = |f: &str| dir.path().join(f);

    // A sweep: sleep 10, 20, 30 ms.
    let sweep_html = path("sweep.html");
    cs(&[
        "bench",
        "--store",
        &store,
        "--runs",
        "4",
        "--param",
        "n=1,2,3",
        "--ready",
        "exit",
        "--export-html",
        sweep_html.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "sleep 0.0{n}",
    ])
    .quiet()
    .ok();

    // tune on a native program: two winners, one candidate that breaks it.
    let sleeper = testkit::c_example("sleeper", &[]).expect("gcc is there");
    let cat = path("team.toml");
    std::fs::write(
        &cat,
        "runtime = \"native\"\n\
         [[candidate]]\nid = \"ms\"\ntitle = \"fewer ms\"\nenv = { COLDSTART_EXAMPLE_DELAY_MS = \"60\" }\n\
         [[candidate]]\nid = \"us\"\ntitle = \"in us\"\nenv = { COLDSTART_EXAMPLE_DELAY_US = \"30000\" }\n\
         [[candidate]]\nid = \"broken\"\ntitle = \"breaks it\"\nenv = { COLDSTART_EXAMPLE_DELAY_MS = \"x\" }\n",
    )
    .unwrap();
    let tune_html = path("tune.html");
    cs(&[
        "tune",
        "--store",
        &store,
        "--catalogue",
        cat.to_str().unwrap(),
        "--only",
        "ms,us,broken",
        "-w",
        "0",
        "--min-runs",
        "6",
        "--max-runs",
        "6",
        "-e",
        "COLDSTART_EXAMPLE_DELAY_MS=150",
        "--export-html",
        tune_html.to_str().unwrap(),
        "--",
        sleeper.to_str().unwrap(),
    ])
    .quiet()
    .ok();
    // The same table drawn again from the store (experiments 2 and 3).
    let tune_report = path("tune-report.html");
    cs(&[
        "report",
        "--store",
        &store,
        "2",
        "3",
        "--no-history",
        "-o",
        tune_report.to_str().unwrap(),
    ])
    .quiet()
    .ok();

    // explain --profile of a program that spends ~80 % of its start in hot_init.
    let src = repo().join("tests/fixtures/profile/hot.c");
    let hot = testkit::built("profile-hot", &[&src], |out| {
        let mut c = Command::new(&gcc);
        c.args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
            .arg(out)
            .arg(&src);
        c
    });
    let profile_html = path("profile.html");
    let o = cs(&[
        "explain",
        "--store",
        &store,
        "--profile",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--ready",
        "exit",
        "--export-html",
        profile_html.to_str().unwrap(),
        "--",
        hot.to_str().unwrap(),
    ])
    .quiet()
    .run();
    let profiled = if !o.status.success() && stderr(&o).contains("refuses perf_event_open") {
        testkit::skip("PERF", &format!("perf_event_open refused: {}", stderr(&o).trim()));
        false
    } else {
        assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
        true
    };

    let mut b = Browser::start(&chromium);
    let base = ["settings", "distribution", "runs"];
    // One variant, one parameter: each value is compared with the first.
    check(
        &mut b,
        &sweep_html,
        "sweep",
        &[&base[..], &["comparisons", "sweep"]].concat(),
    );
    let mut seen = Loaded::default();
    let points = b.eval(
        &mut seen,
        "[...document.querySelectorAll('[data-section=sweep] table tbody tr')].map(r => r.cells[1].textContent.trim())",
    );
    assert_eq!(points, json!(["1", "2", "3"]), "the sweep table's values");

    let tune_sections = [&base[..], &["comparisons", "tune"]].concat();
    for (file, name) in [(&tune_html, "tune"), (&tune_report, "tune-report")] {
        check(&mut b, file, name, &tune_sections);
        let rows = b.eval(
            &mut seen,
            "[...document.querySelectorAll('[data-section=tune] tbody tr')].map(r =>
               r.dataset.status + ' | ' + r.cells[1].textContent.trim() + ' | ' + r.cells[3].textContent.trim())",
        );
        let rows: Vec<&str> = rows
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r.as_str())
            .collect();
        // The candidates' experiment: its table; the recommended set's: its line.
        assert_eq!(rows.len(), 3, "{name}: {rows:?}");
        assert!(rows[0].starts_with("helps | fewer ms"), "{name}: {rows:?}");
        assert!(
            rows[1].starts_with("helps | in us")
                && rows[1].contains("| COLDSTART_EXAMPLE_DELAY_US=30000 ")
                && rows[1].ends_with("sleeper"),
            "{name}: {rows:?}"
        );
        assert!(rows[2].starts_with("broken | breaks it"), "{name}: {rows:?}");
        let sets = b.eval(
            &mut seen,
            "[...document.querySelectorAll('[data-section=tune] pre.recommended')].map(p => p.textContent)",
        );
        let sets: Vec<&str> = sets
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r.as_str())
            .collect();
        assert_eq!(sets.len(), 2, "{name}: {sets:?}");
        assert!(
            sets[0].contains("measured in tune's next experiment"),
            "{name}: {sets:?}"
        );
        // The two winners measured as nested sets: us + ms is us again (the sleeper
        // reads the µs variable first), so the set stops at us and says why.
        assert!(
            sets[1].starts_with("recommended set: us — −")
                && sets[1].contains("run: COLDSTART_EXAMPLE_DELAY_US=30000 ")
                && sets[1].contains(", so the set stops at us"),
            "{name}: {sets:?}"
        );
        let effect = b.eval(
            &mut seen,
            "document.querySelector('[data-section=tune] tbody tr').cells[2].textContent",
        );
        assert!(effect.as_str().unwrap().contains("ms ("), "{name}: {effect}");
    }

    if profiled {
        check(
            &mut b,
            &profile_html,
            "profile",
            &[
                &base[..],
                &["comparisons", "headline", "waterfall", "sources", "profile"],
            ]
            .concat(),
        );
        let got = b.eval(
            &mut seen,
            "(() => { const f = document.querySelector('[data-section=profile] iframe.flamegraph');
               const d = f && f.contentDocument; if (!d) return null;
               const gs = [...d.querySelectorAll('#frames g')];
               const hot = gs.find(g => g.querySelector('title').textContent.startsWith('hot_init '));
               if (hot) hot.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
               return { fluid: !d.querySelector('svg').hasAttribute('width'), frames: gs.length,
                        details: d.getElementById('details').textContent,
                        hot: [...document.querySelectorAll('[data-section=profile] table.hot td code')].map(c => c.textContent),
                        overhead: (document.querySelector('[data-section=profile] p.overhead') || {}).textContent || '' }; })()",
        );
        // inferno's init ran (its fluid drawing takes the fixed width off) and its
        // hover names the frame: its script works inside the page.
        assert_eq!(got["fluid"], json!(true), "{got}");
        assert!(got["frames"].as_u64().unwrap() >= 5, "{got}");
        assert!(
            got["details"]
                .as_str()
                .unwrap()
                .starts_with("Function: hot_init ("),
            "{got}"
        );
        assert!(
            got["hot"].as_array().unwrap().contains(&json!("hot_init")),
            "{got}"
        );
        assert!(
            got["overhead"].as_str().unwrap().contains("profiler overhead ×"),
            "{got}"
        );
    }
    assert!(
        seen.errors.is_empty(),
        "errors after the checks: {:?}",
        seen.errors
    );
    assert!(
        seen.requests.is_empty(),
        "requests after the checks: {:?}",
        seen.requests
    );
}

#[test]
fn the_checks_see_console_errors_exceptions_and_network_requests() {
    let _turn = crate::common::beside();
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.html");
    // No CSP here: the request must really be attempted (to a loopback port where
    // nothing listens; Chromium refuses well-known ports such as 9 before any request).
    let pixel = format!("http://127.0.0.1:{}/pixel.png", free_port());
    std::fs::write(
        &bad,
        format!(
            "<!doctype html><html><body><section data-section=\"x\"></section>\
             <img src=\"{pixel}\" alt=\"\">\
             <script>console.error('boom'); undefinedFunction();</script></body></html>"
        ),
    )
    .unwrap();
    let clean = dir.path().join("clean.html");
    std::fs::write(
        &clean,
        "<!doctype html><html><body><section data-section=\"y\"></section>\
         <script>console.log('fine')</script></body></html>",
    )
    .unwrap();
    let mut b = Browser::start(&chromium);
    let seen = b.load(&bad);
    assert!(
        seen.errors
            .iter()
            .any(|e| e.contains("console.error") && e.contains("boom")),
        "{:?}",
        seen.errors
    );
    assert!(
        seen.errors.iter().any(|e| e.contains("undefinedFunction")),
        "{:?}",
        seen.errors
    );
    assert!(seen.requests.contains(&pixel), "{:?}", seen.requests);
    assert_eq!(seen.sections, ["x"]);
    let seen = b.load(&clean);
    assert!(seen.errors.is_empty() && seen.requests.is_empty(), "{seen:?}");
    assert_eq!(seen.sections, ["y"]);
}

/// The numbers of an axis's tick labels (`"6500 %"`, `"-1.5 %"`, `"40"`), as read
/// back from the page.
fn ticks(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .filter_map(|t| {
            let t = t.as_str()?.trim().trim_end_matches('%').trim().replace('−', "-");
            t.parse::<f64>().ok()
        })
        .collect()
}

/// Two variants of one program that differ only by an environment variable (the
/// demo's `rust` and `rust+50ms`, here the C sleeper at 50 and 100 ms): the page
/// opens with the verdict in the terminal's very words, the variants table shows
/// the variable that differs beside the identical commands, and the A/B axis
/// spans the data (≈ +100 %), not 0 to the data.
#[test]
fn an_ab_page_leads_with_the_terminals_verdict_shows_the_env_and_spans_the_data() {
    let _turn = crate::common::beside();
    let Some(chromium) = chromium() else {
        return;
    };
    let Some(sleeper) = testkit::c_example("sleeper", &[]) else {
        return;
    };
    let sleeper = sleeper.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (page, json) = (dir.path().join("ab.html"), dir.path().join("ab.json"));
    // Unwrapped (COLUMNS would wrap the sentence), as a pipe gets it.
    let o = coldstart()
        .env_remove("COLUMNS")
        .args([
            "bench",
            "--runs",
            "12",
            "--ready",
            "exit",
            "--export-html",
            page.to_str().unwrap(),
            "--export-json",
            json.to_str().unwrap(),
            "--name",
            "sleeper",
            "--env",
            "COLDSTART_EXAMPLE_DELAY_MS=50",
            "--",
            sleeper,
            "--name",
            "sleeper+50ms",
            "--env",
            "COLDSTART_EXAMPLE_DELAY_MS=100",
            "--",
            sleeper,
        ])
        .quiet()
        .no_store()
        .run();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    // The terminal's sentence: the line under `Δ sleeper+50ms vs sleeper: …`.
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with("Δ sleeper+50ms vs sleeper"))
        .unwrap_or_else(|| panic!("no comparison in the terminal output:\n{out}"));
    let sentence = lines[at + 1].trim();
    let doc = json_file(&json);
    let rel = &doc["variants"][1]["stats"]["vs_baseline"]["relative"];
    let est = rel["estimate"].as_f64().unwrap();
    let (lo, hi) = (
        rel["ci"][0].as_f64().unwrap().min(est),
        rel["ci"][1].as_f64().unwrap().max(est),
    );

    let mut b = Browser::start(&chromium);
    let mut seen = check(
        &mut b,
        &page,
        "ab-env-verdict",
        &["settings", "distribution", "runs", "comparisons"],
    );
    let got = b.eval(
        &mut seen,
        "(() => ({
           first: (document.querySelector('.verdict') || {}).textContent || '',
           rows: [...document.querySelectorAll('[data-section=settings] table tbody tr')].map(r => r.textContent),
           ticks: [...document.querySelectorAll('[data-section=comparisons] svg g.axis text:not(.label)')].map(t => t.textContent),
         }))()",
    );
    assert!(seen.errors.is_empty(), "{:?}", seen.errors);
    assert_eq!(
        got["first"].as_str().unwrap(),
        sentence,
        "the page's first verdict is the terminal's: {got}"
    );
    let rows: Vec<&str> = got["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r.as_str())
        .collect();
    assert_eq!(rows.len(), 2, "{got}");
    assert!(
        rows[0].contains("COLDSTART_EXAMPLE_DELAY_MS=50")
            && !rows[0].contains("COLDSTART_EXAMPLE_DELAY_MS=100"),
        "the baseline's row shows its setting: {rows:?}"
    );
    assert!(
        rows[1].contains("COLDSTART_EXAMPLE_DELAY_MS=100"),
        "the candidate's row shows the variable that differs: {rows:?}"
    );
    // The axis spans the data's CI plus a margin of one CI width each side (room
    // for padding and round ticks), not 0 … +100 %.
    let t = ticks(&got["ticks"]);
    assert!(t.len() >= 2, "{got}");
    let span = hi - lo;
    let (t_lo, t_hi) = (
        t.iter().copied().fold(f64::MAX, f64::min),
        t.iter().copied().fold(f64::MIN, f64::max),
    );
    assert!(
        t_lo >= (lo - span) * 100.0 && t_hi <= (hi + span) * 100.0,
        "axis ticks {t:?} reach beyond the data's CI [{:.1} %, {:.1} %] plus its width",
        lo * 100.0,
        hi * 100.0
    );
}

/// A sweep of `python3 -c 'import {m}'`: each point's label on the charts shows
/// its value (`m=json`), not the shared command cut short.
#[test]
fn sweep_labels_show_each_points_values() {
    let _turn = crate::common::beside();
    let Some(chromium) = chromium() else {
        return;
    };
    let py = python_exe();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("sweep-labels.html");
    cs(&[
        "bench",
        "--runs",
        "3",
        "--param",
        "m=json,os",
        "--ready",
        "exit",
        "--export-html",
        page.to_str().unwrap(),
        "--",
        &py,
        "-c",
        "import {m}",
    ])
    .quiet()
    .no_store()
    .ok();
    let mut b = Browser::start(&chromium);
    let mut seen = check(
        &mut b,
        &page,
        "sweep-labels",
        &["settings", "distribution", "runs", "comparisons", "sweep"],
    );
    let labels = b.eval(
        &mut seen,
        "[...document.querySelectorAll('[data-section=distribution] svg g:not(.axis) > text')].map(t => t.textContent)",
    );
    let labels: Vec<&str> = labels
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert_eq!(labels.len(), 2, "{labels:?}");
    assert!(
        labels[0].contains("m=json") && labels[1].contains("m=os"),
        "each label shows its point's value: {labels:?}"
    );
    assert_ne!(labels[0], labels[1]);
}

/// One target stored twice, measured differently (http readiness with requests,
/// then tcp): the history draws two series with a legend entry each, not one
/// line through both, on an axis from 0.
#[test]
fn history_joins_only_experiments_that_measure_the_same_thing() {
    let _turn = crate::common::beside();
    let Some(chromium) = chromium() else {
        return;
    };
    let py = python_exe();
    let server = repo().join("examples/python/server.py");
    let server = server.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db").display().to_string();
    let port = free_port().to_string();
    let http = format!("http://127.0.0.1:{port}/health");
    let tcp = format!("tcp:{port}");
    for ready in [&["--ready", &http, "--requests", "2"][..], &["--ready", &tcp][..]] {
        let mut a = vec!["bench", "--store", &store, "--runs", "3"];
        a.extend_from_slice(ready);
        a.extend(["--name", "srv", "--", &py, server, "--port", &port]);
        cs(&a).quiet().ok();
    }
    let page = dir.path().join("history.html");
    cs(&["report", "--store", &store, "2", "-o", page.to_str().unwrap()])
        .quiet()
        .ok();
    let mut b = Browser::start(&chromium);
    let mut seen = check(
        &mut b,
        &page,
        "history-series",
        &["settings", "distribution", "runs", "history"],
    );
    let got = b.eval(
        &mut seen,
        "(() => ({
           legend: [...document.querySelectorAll('[data-section=history] ul.legend li')].map(l => l.textContent),
           colours: new Set([...document.querySelectorAll('[data-section=history] svg circle')].map(c => c.getAttribute('fill'))).size,
           y: [...document.querySelectorAll('[data-section=history] svg g.axis text[text-anchor=end]')].map(t => t.textContent),
         }))()",
    );
    assert!(seen.errors.is_empty(), "{:?}", seen.errors);
    let legend: Vec<&str> = got["legend"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert_eq!(legend.len(), 2, "one series per way of measuring: {got}");
    assert!(
        legend.iter().any(|l| l.contains("http")) && legend.iter().any(|l| l.contains("tcp")),
        "the legend says how each was measured: {legend:?}"
    );
    assert_eq!(got["colours"], json!(2), "two series drawn: {got}");
    let y = ticks(&got["y"]);
    assert_eq!(
        y.iter().copied().fold(f64::MAX, f64::min),
        0.0,
        "the y axis starts at 0: {got}"
    );
}

/// A fleet experiment (three shards run as local processes into one store):
/// `show --export-html` and `gate --export-html` of its two variants load clean,
/// with the per-machine section: a table row per shard and the pooled row, a
/// forest-plot mark per shard and the pooled diamond (its hover details
/// working), the stratified test and the heterogeneity.
#[test]
fn a_fleet_experiments_report_has_its_per_machine_view_in_chromium() {
    let _turn = crate::common::beside();
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db").display().to_string();
    let sleeper = example("sleeper");
    for k in 0..3 {
        let shard = format!("{k}/3");
        let mut c = cs(&[
            "bench",
            "--shard",
            &shard,
            "--experiment",
            "fv",
            "--store",
            &store,
            "--runs",
            "6",
        ]);
        for (name, ms) in [("fast", "20"), ("slow", "45")] {
            c.args(["--name", name, "--env"])
                .arg(format!("COLDSTART_EXAMPLE_DELAY_MS={ms}"))
                .args(["--", &sleeper]);
        }
        c.quiet().ok();
    }
    let (show_html, gate_html) = (dir.path().join("show.html"), dir.path().join("gate.html"));
    cs(&["show", "--store", &store, "fv", "--export-html"])
        .arg(&show_html)
        .ok();
    cs(&[
        "gate",
        "--store",
        &store,
        "--baseline",
        "fv:fast",
        "--candidate",
        "fv:slow",
        "--max-regression",
        "400%",
        "--export-html",
    ])
    .arg(&gate_html)
    .ok();

    let mut b = Browser::start(&chromium);
    let sections = ["settings", "distribution", "runs", "comparisons", "machines"];
    let mut seen = check(&mut b, &show_html, "fleet", &sections);
    check(
        &mut b,
        &gate_html,
        "fleet-gate",
        &[&sections[..], &["gate"]].concat(),
    );
    let mut seen2 = b.load(&show_html);
    let got = b.eval(
        &mut seen2,
        "(() => {
           const m = document.querySelector('[data-section=machines]');
           const mark = m.querySelector('rect.shard');
           mark.dispatchEvent(new MouseEvent('mouseover', {bubbles: true, clientX: 10, clientY: 10}));
           const box = document.getElementById('tip');
           const tip = box && box.style.display === 'block' ? box.textContent : '';
           mark.dispatchEvent(new MouseEvent('mouseout', {bubbles: true}));
           return {
             rows: [...m.querySelectorAll('tbody tr[data-shard]')].map(r => r.dataset.shard),
             pooled: (m.querySelector('tfoot tr.pooled') || {}).textContent || '',
             marks: m.querySelectorAll('svg rect.shard').length,
             diamond: m.querySelectorAll('svg polygon.pooled').length,
             facts: (m.querySelector('dl.facts') || {}).textContent || '',
             tip,
           }; })()",
    );
    seen.errors.append(&mut seen2.errors);
    assert!(seen.errors.is_empty(), "console errors {:?}", seen.errors);
    assert_eq!(got["rows"], json!(["0", "1", "2"]), "{got}");
    let pooled = got["pooled"].as_str().unwrap();
    assert!(
        pooled.contains("pooled over 3 machines") && pooled.contains("slower"),
        "{got}"
    );
    assert_eq!(got["marks"], 3, "{got}");
    assert_eq!(got["diamond"], 1, "{got}");
    let facts = got["facts"].as_str().unwrap();
    assert!(
        facts.contains("van Elteren") && facts.contains("I² = ") && facts.contains("Cochran's Q"),
        "{got}"
    );
    assert!(
        got["tip"].as_str().unwrap().starts_with("shard 0 ("),
        "hovering a shard's mark shows its interval: {got}"
    );
}
