//! `coldstart lambda --runtime python3.11|nodejs20.x|java17`: a zip's handler run
//! by the real runtime interface client from the ecosystem's registry (installed by
//! examples/lambda-ric/setup.sh into target/lambda-ric). The handlers write down
//! what they saw (working directory, environment, module search paths, where the
//! client and the layer's library were loaded from), so the tests check the
//! sandbox against the processes' own view, not against coldstart's report.

use crate::common::*;
use std::path::{Path, PathBuf};

/// The clients' directory when `sub` (python, node, java) is installed, else a
/// visible skip (a failure under COLDSTART_REQUIRE_LAMBDA_RIC).
fn clients(sub: &str) -> Option<PathBuf> {
    let dir = repo().join("target/lambda-ric");
    let marker = match sub {
        "python" => dir.join("python/awslambdaric/__main__.py"),
        "node" => dir.join("node/node_modules/aws-lambda-ric/bin/index.mjs"),
        _ => dir.join("java/.installed-from"),
    };
    testkit::need("LAMBDA_RIC", marker.exists().then_some(dir), || {
        format!(
            "the {sub} runtime interface client is not installed (run `bash examples/lambda-ric/setup.sh`)"
        )
    })
}

/// The modes a test runs in: on the host's paths, and in the sandbox's mount
/// namespace where it can be made (a visible skip otherwise; a failure under
/// COLDSTART_REQUIRE_SANDBOX). With each, where the function sees its code and
/// its (one) layer.
fn modes(code: &Path, layer: &Path) -> Vec<(&'static str, String, String)> {
    let mut out = vec![(
        "--no-sandbox",
        code.display().to_string(),
        layer.display().to_string(),
    )];
    let sandbox = testkit::need("SANDBOX", coldstart_lambda::namespace::available().ok(), || {
        "no mount namespace can be made here: the sandbox half is skipped".to_string()
    });
    if sandbox.is_some() {
        out.push(("--sandbox", "/var/task".into(), "/opt".into()));
    }
    out
}

/// The aws-lambda-java-core jar installed beside the Java client (handlers
/// compile against it).
fn java_core(clients: &Path) -> PathBuf {
    std::fs::read_dir(clients.join("java"))
        .expect("java clients")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("aws-lambda-java-core-"))
        })
        .expect("aws-lambda-java-core jar beside the client")
}

/// A scratch directory under the target directory (fixtures stay out of /tmp).
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("lambda-managed-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("scratch dir")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn report_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("REPORT "))
        .map(str::to_string)
        .collect()
}

struct Run {
    out: Out,
    log: String,
    reports: Vec<String>,
    response: Option<serde_json::Value>,
}

/// One cold start of `runtime` with these extra flags; nothing may be left running.
fn lambda(dir: &Path, clients: &Path, runtime: &str, code: &Path, handler: &str, extra: &[&str]) -> Run {
    let (log, response) = (dir.join("lambda.log"), dir.join("response.json"));
    // --log appends: each run reads only its own lines.
    let _ = std::fs::remove_file(&response);
    let _ = std::fs::remove_file(&log);
    let m = marker("lambda-managed");
    let out = lambda_once()
        .args([
            "--memory",
            "512",
            "--runtime",
            runtime,
            "--code",
            code.to_str().expect("utf-8"),
            "--handler",
            handler,
            "--log",
            log.to_str().expect("utf-8"),
            "--save-response",
            response.to_str().expect("utf-8"),
            "--env",
            &m,
        ])
        .args(extra)
        .env("COLDSTART_LAMBDA_RIC_DIR", clients)
        .run();
    assert!(
        processes_with(&m).is_empty(),
        "left behind: {:?}",
        processes_with(&m)
    );
    let response = std::fs::read(&response)
        .ok()
        .map(|b| serde_json::from_slice(&b).expect("the saved response is JSON"));
    Run {
        log: std::fs::read_to_string(&log).unwrap_or_default(),
        reports: report_lines(&log),
        out,
        response,
    }
}

/// `Key: value` of a REPORT line.
fn field<'a>(report: &'a str, key: &str) -> Option<&'a str> {
    let body = report.strip_prefix("REPORT ").unwrap_or(report);
    body.split('\t')
        .find_map(|f| f.split_once(": ").filter(|(k, _)| *k == key).map(|(_, v)| v))
}

fn ms(report: &str, key: &str) -> f64 {
    field(report, key)
        .and_then(|v| v.strip_suffix(" ms"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {report}"))
}

/// A Python function whose handler writes down what it saw, importing a package
/// that only its layer has.
fn python_function(dir: &Path) -> (PathBuf, PathBuf) {
    let (code, layer) = (dir.join("code"), dir.join("layer"));
    write(
        &code.join("app.py"),
        r#"import json, os, sys
import awslambdaric

def handler(event, context):
    import layerlib
    facts = {
        "cwd": os.getcwd(),
        "env": {k: os.environ.get(k) for k in ("AWS_EXECUTION_ENV", "_HANDLER", "LAMBDA_TASK_ROOT", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE")},
        "sys_path": sys.path,
        "ric": awslambdaric.__file__,
        "layerlib": layerlib.__file__,
        "function_name": context.function_name,
    }
    with open(os.environ["FACTS"], "a") as f:
        f.write(json.dumps(facts) + "\n")
    return {"echo": event, "greeting": layerlib.GREETING}

def fail(event, context):
    raise ValueError("the handler refused")

def big(event, context):
    return {"blob": "x" * (7 * 1024 * 1024)}
"#,
    );
    write(
        &layer.join("python/layerlib/__init__.py"),
        "GREETING = 'hello from the layer'\n",
    );
    (code, layer)
}

#[test]
fn python_ric_runs_the_handler_with_the_layers_package() {
    let _turn = crate::common::beside();
    let Some(clients) = clients("python") else { return };
    let dir = scratch();
    let (code, layer) = python_function(dir.path());
    let (facts, event) = (dir.path().join("facts.jsonl"), dir.path().join("event.json"));
    std::fs::write(&event, r#"{"n": 7}"#).expect("event");
    // The layer's extensions/ holds an external extension (as /opt/extensions).
    std::fs::create_dir_all(layer.join("extensions")).expect("mkdir");
    std::fs::copy(
        repo().join("examples/lambda/python/raw_extension.py"),
        layer.join("extensions/layer-ext"),
    )
    .expect("copy the extension");
    for (mode, code_dir, layer_dir) in modes(&code, &layer) {
        let _ = std::fs::remove_file(&facts);
        let ready = dir.path().join("ready");
        let _ = std::fs::remove_dir_all(&ready);
        std::fs::create_dir_all(&ready).expect("mkdir");
        let r = lambda(
            dir.path(),
            &clients,
            "python3.11",
            &code,
            "app.handler",
            &[
                "--layer",
                layer.to_str().expect("utf-8"),
                "--event",
                event.to_str().expect("utf-8"),
                "--invokes",
                "1",
                "--env",
                &format!("FACTS={}", facts.display()),
                "--env",
                &format!("CS_READY_DIR={}", ready.display()),
                mode,
            ],
        );
        assert!(r.out.status.success(), "{}\n{}", stderr(&r.out), r.log);
        assert_eq!(
            r.response,
            Some(serde_json::json!({"echo": {"n": 7}, "greeting": "hello from the layer"}))
        );
        assert!(
            ready.join("layer-ext").exists(),
            "the layer's extension did not get ready: {}",
            r.log
        );
        assert!(
            r.log
                .lines()
                .next()
                .is_some_and(|l| l.starts_with("INIT_START Runtime Version: python:3.11.")),
            "{}",
            r.log
        );
        // The cold invoke and the warm one each ran the handler and got a REPORT.
        let seen: Vec<serde_json::Value> = std::fs::read_to_string(&facts)
            .expect("the handler wrote its facts")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(r.reports.len(), 2, "{}", r.log);
        assert!(ms(&r.reports[0], "Init Duration") > 0.0, "{}", r.reports[0]);
        assert!(
            field(&r.reports[1], "Init Duration").is_none(),
            "a warm invoke has no init"
        );
        for rep in &r.reports {
            assert!(ms(rep, "Billed Duration") >= ms(rep, "Duration"), "{rep}");
            assert_eq!(field(rep, "Memory Size"), Some("512 MB"), "{rep}");
            assert!(field(rep, "Status").is_none(), "{rep}");
        }
        let f = &seen[0];
        assert_eq!(f["cwd"], code_dir.as_str());
        assert_eq!(f["env"]["AWS_EXECUTION_ENV"], "AWS_Lambda_python3.11");
        assert_eq!(f["env"]["_HANDLER"], "app.handler");
        assert_eq!(f["env"]["LAMBDA_TASK_ROOT"], code_dir.as_str());
        assert_eq!(f["env"]["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"], "512");
        assert_eq!(f["function_name"], "coldstart-function");
        // The real client from the registry, and the layer's package from the layer.
        let ric = f["ric"].as_str().expect("ric path");
        assert!(
            ric.starts_with(&clients.join("python").display().to_string()),
            "{ric}"
        );
        assert!(
            f["layerlib"]
                .as_str()
                .is_some_and(|p| p.starts_with(&format!("{layer_dir}/python/"))),
            "{f}"
        );
        // Lambda's order: the task root, the layer's site-packages then python/, then the runtime.
        let path: Vec<&str> = f["sys_path"]
            .as_array()
            .expect("sys.path")
            .iter()
            .filter_map(|p| p.as_str())
            .collect();
        let at = |p: &str| {
            path.iter()
                .position(|x| *x == p)
                .unwrap_or_else(|| panic!("{p} not in {path:?}"))
        };
        let order = [
            at(&code_dir),
            at(&format!("{layer_dir}/python/lib/python3.11/site-packages")),
            at(&format!("{layer_dir}/python")),
            at(&clients.join("python").display().to_string()),
        ];
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{mode}: {path:?}");
    }
}

#[test]
fn python_handler_exception_is_the_rics_error() {
    let _turn = crate::common::beside();
    let Some(clients) = clients("python") else { return };
    let dir = scratch();
    let (code, layer) = python_function(dir.path());
    let r = lambda(
        dir.path(),
        &clients,
        "python3.11",
        &code,
        "app.fail",
        &["--layer", layer.to_str().expect("utf-8")],
    );
    assert!(!r.out.status.success(), "{}", r.log);
    // awslambdaric logs the exception itself, and posts it to /error with the
    // type in the body only (no Lambda-Runtime-Function-Error-Type header), which
    // Lambda reports as Runtime.Unknown.
    assert!(
        r.log.contains("[ERROR] ValueError: the handler refused"),
        "{}",
        r.log
    );
    assert_eq!(r.reports.len(), 1, "{}", r.log);
    assert_eq!(field(&r.reports[0], "Status"), Some("error"), "{}", r.reports[0]);
    assert_eq!(field(&r.reports[0], "Error Type"), Some("Runtime.Unknown"));
    assert!(ms(&r.reports[0], "Init Duration") > 0.0);
    assert!(r.response.is_none(), "no successful response to save");
}

/// A response over Lambda's 6 MB limit: the invoke ends with
/// Function.ResponseSizeTooLarge, and what awslambdaric prints about the 413 after
/// its post (before its next /next) reaches the log before shutdown.
#[test]
fn what_the_ric_prints_after_a_413_is_logged() {
    let _turn = crate::common::beside();
    let Some(clients) = clients("python") else { return };
    let dir = scratch();
    let (code, layer) = python_function(dir.path());
    let r = lambda(
        dir.path(),
        &clients,
        "python3.11",
        &code,
        "app.big",
        &["--layer", layer.to_str().expect("utf-8")],
    );
    assert!(!r.out.status.success(), "{}", r.log);
    assert_eq!(r.reports.len(), 1, "{}", r.log);
    assert_eq!(
        field(&r.reports[0], "Error Type"),
        Some("Function.ResponseSizeTooLarge"),
        "{}",
        r.reports[0]
    );
    assert!(
        r.log
            .contains("Failed to post handler success response. Http response code: 413"),
        "{}",
        r.log
    );
}

#[test]
fn each_variant_runs_its_own_handler() {
    let _turn = crate::common::beside();
    let Some(clients) = clients("python") else { return };
    let dir = scratch();
    let (code, layer) = python_function(dir.path());
    write(
        &code.join("other.py"),
        "import os\ndef handler(event, context):\n    open(os.environ['FACTS'] + '.other', 'w').write(os.environ['_HANDLER'])\n    return 'other'\n",
    );
    let facts = dir.path().join("facts.jsonl");
    let (code, layer) = (code.to_str().expect("utf-8"), layer.to_str().expect("utf-8"));
    let facts_env = format!("FACTS={}", facts.display());
    let o = lambda_once()
        .args([
            "--runtime",
            "python3.11",
            "--code",
            code,
            "--layer",
            layer,
            "--env",
            &facts_env,
            "--name",
            "app",
            "--handler",
            "app.handler",
            "--name",
            "other",
            "--handler",
            "other.handler",
        ])
        .env("COLDSTART_LAMBDA_RIC_DIR", &clients)
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let app = std::fs::read_to_string(&facts).expect("app.handler ran");
    assert!(app.contains(r#""_HANDLER": "app.handler""#), "{app}");
    let other = std::fs::read_to_string(dir.path().join("facts.jsonl.other")).expect("other ran");
    assert_eq!(other, "other.handler");
}

#[test]
fn python_import_error_fails_init_as_lambda_does() {
    let _turn = crate::common::beside();
    let Some(clients) = clients("python") else { return };
    let dir = scratch();
    let (code, _) = python_function(dir.path());
    let r = lambda(dir.path(), &clients, "python3.11", &code, "missing.handler", &[]);
    assert!(!r.out.status.success(), "{}", r.log);
    // The client's own message, from its /runtime/init/error.
    assert!(
        r.log
            .contains("[ERROR] Runtime.ImportModuleError: Unable to import module 'missing'"),
        "{}",
        r.log
    );
    let init_reports: Vec<&str> = r.log.lines().filter(|l| l.starts_with("INIT_REPORT ")).collect();
    assert_eq!(init_reports.len(), 2, "init, then the suppressed init: {}", r.log);
    for (line, phase) in init_reports.iter().zip(["init", "invoke"]) {
        assert!(
            line.contains(&format!(
                "Phase: {phase}\tStatus: error\tError Type: Runtime.ImportModuleError"
            )),
            "{line}"
        );
    }
    assert_eq!(r.reports.len(), 1, "{}", r.log);
    assert_eq!(
        field(&r.reports[0], "Error Type"),
        Some("Runtime.ImportModuleError"),
        "{}",
        r.reports[0]
    );
}

#[test]
fn exec_wrapper_runs_in_front_of_the_runtime() {
    let _turn = crate::common::beside();
    let Some(clients) = clients("python") else { return };
    let dir = scratch();
    let (code, layer) = python_function(dir.path());
    let (wrapper, record) = (dir.path().join("wrapper.sh"), dir.path().join("wrapper.txt"));
    write(
        &wrapper,
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$AWS_EXECUTION_ENV\" \"$@\" > '{}'\nexec \"$@\"\n",
            record.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let facts = dir.path().join("facts.jsonl");
    let r = lambda(
        dir.path(),
        &clients,
        "python3.11",
        &code,
        "app.handler",
        &[
            "--layer",
            layer.to_str().expect("utf-8"),
            "--env",
            &format!("AWS_LAMBDA_EXEC_WRAPPER={}", wrapper.display()),
            "--env",
            &format!("FACTS={}", facts.display()),
        ],
    );
    assert!(r.out.status.success(), "{}\n{}", stderr(&r.out), r.log);
    let recorded = std::fs::read_to_string(&record).expect("the wrapper ran");
    let lines: Vec<&str> = recorded.lines().collect();
    // The wrapper got the bootstrap's command as its arguments and exec'd it: the
    // handler still ran, under the real interpreter with the client as a module.
    assert_eq!(lines.first(), Some(&"AWS_Lambda_python3.11"), "{recorded}");
    assert_eq!(lines[2..], ["-m", "awslambdaric", "app.handler"], "{recorded}");
    assert!(Path::new(lines[1]).is_absolute(), "{recorded}");
    assert!(facts.exists(), "the handler ran behind the wrapper");

    // A wrapper that is not there: one line, before any run.
    let o = cs(&[
        "lambda",
        "--runtime",
        "python3.11",
        "--code",
        code.to_str().expect("utf-8"),
        "--env",
        "AWS_LAMBDA_EXEC_WRAPPER=/nonexistent/wrapper",
    ])
    .no_store()
    .run();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("does not exist"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// The wrapper named as the function sees it: in the sandbox /opt is the
/// layers, so /opt/otel-instrument is the layer's file, not the host's /opt.
#[test]
fn exec_wrapper_under_opt_is_found_in_the_layers() {
    let _turn = crate::common::beside();
    let Some(clients) = clients("python") else { return };
    let sandbox = testkit::need("SANDBOX", coldstart_lambda::namespace::available().ok(), || {
        "no mount namespace can be made here: /opt is the host's without it".to_string()
    });
    if sandbox.is_none() {
        return;
    }
    let dir = scratch();
    let (code, layer) = python_function(dir.path());
    let (wl, record) = (dir.path().join("wl"), dir.path().join("wrapper.txt"));
    let wrapper = wl.join("otel-instrument");
    assert!(
        !Path::new("/opt/otel-instrument").exists(),
        "the host has an /opt/otel-instrument: this test needs the layer's to be the only one"
    );
    write(
        &wrapper,
        &format!("#!/bin/sh\necho \"$0\" > '{}'\nexec \"$@\"\n", record.display()),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let r = lambda(
        dir.path(),
        &clients,
        "python3.11",
        &code,
        "app.handler",
        &[
            "--layer",
            layer.to_str().expect("utf-8"),
            "--layer",
            wl.to_str().expect("utf-8"),
            "--env",
            "AWS_LAMBDA_EXEC_WRAPPER=/opt/otel-instrument",
            "--env",
            &format!("FACTS={}", dir.path().join("facts.jsonl").display()),
        ],
    );
    assert!(r.out.status.success(), "{}\n{}", stderr(&r.out), r.log);
    let ran = std::fs::read_to_string(&record).expect("the wrapper ran");
    assert_eq!(ran.trim(), "/opt/otel-instrument", "{ran}");
}

#[test]
fn java_ric_runs_a_compiled_handler_with_the_layers_jar() {
    let _turn = crate::common::beside();
    let Some(clients) = clients("java") else { return };
    let (Some(javac), Some(jar)) = (testkit::tool("JAVA", "javac"), testkit::tool("JAVA", "jar")) else {
        return;
    };
    let dir = scratch();
    let (src, code, layer) = (
        dir.path().join("src"),
        dir.path().join("code"),
        dir.path().join("layer"),
    );
    write(
        &src.join("layerlib/Greeting.java"),
        "package layerlib;\npublic class Greeting { public static String text() { return \"hello from the layer jar\"; } }\n",
    );
    write(
        &src.join("example/Hello.java"),
        r#"package example;
import com.amazonaws.services.lambda.runtime.Context;
import java.util.Map;
public class Hello {
    public String handleRequest(Map<String, Object> event, Context context) {
        if (event.containsKey("fail")) throw new IllegalStateException("asked to fail");
        return layerlib.Greeting.text() + "|" + context.getFunctionName() + "|" + System.getProperty("user.dir")
            + "|" + System.getenv("AWS_EXECUTION_ENV");
    }
}
"#,
    );
    let core = java_core(&clients);
    let classes = dir.path().join("classes");
    let ok = std::process::Command::new(&javac)
        .arg("-cp")
        .arg(&core)
        .arg("-d")
        .arg(&classes)
        .arg(src.join("layerlib/Greeting.java"))
        .arg(src.join("example/Hello.java"))
        .status()
        .expect("javac");
    assert!(ok.success());
    // The handler class in the zip's root, the helper only in the layer's java/lib.
    std::fs::create_dir_all(code.join("example")).expect("mkdir");
    std::fs::copy(
        classes.join("example/Hello.class"),
        code.join("example/Hello.class"),
    )
    .expect("copy");
    std::fs::create_dir_all(layer.join("java/lib")).expect("mkdir");
    let ok = std::process::Command::new(&jar)
        .arg("cf")
        .arg(layer.join("java/lib/greeting.jar"))
        .arg("-C")
        .arg(&classes)
        .arg("layerlib")
        .status()
        .expect("jar");
    assert!(ok.success());
    let layer_arg = ["--layer", layer.to_str().expect("utf-8")];
    for (mode, code_dir, _) in modes(&code, &layer) {
        let r = lambda(
            dir.path(),
            &clients,
            "java17",
            &code,
            "example.Hello::handleRequest",
            &[layer_arg[0], layer_arg[1], mode],
        );
        assert!(r.out.status.success(), "{mode}: {}\n{}", stderr(&r.out), r.log);
        assert_eq!(
            r.response,
            Some(serde_json::json!(format!(
                "hello from the layer jar|coldstart-function|{code_dir}|AWS_Lambda_java17"
            ))),
            "{mode}"
        );
        assert_eq!(r.reports.len(), 1, "{}", r.log);
        assert!(ms(&r.reports[0], "Init Duration") > 0.0);
    }

    // The Java client names its errors itself (Lambda-Runtime-Function-Error-Type).
    let event = dir.path().join("fail.json");
    std::fs::write(&event, r#"{"fail": true}"#).expect("event");
    let mut extra = layer_arg.to_vec();
    extra.extend(["--event", event.to_str().expect("utf-8")]);
    let r = lambda(
        dir.path(),
        &clients,
        "java17",
        &code,
        "example.Hello::handleRequest",
        &extra,
    );
    assert!(!r.out.status.success());
    assert_eq!(
        field(&r.reports[0], "Error Type"),
        Some("Runtime.UserException"),
        "{}",
        r.log
    );
}

#[test]
fn node_ric_runs_the_handler_with_the_layers_module() {
    let _turn = crate::common::beside();
    let Some(clients) = clients("node") else { return };
    let dir = scratch();
    let (code, layer) = (dir.path().join("code"), dir.path().join("layer"));
    write(
        &code.join("index.js"),
        r#"const greeting = require("greeting");
exports.handler = async (event, context) => ({
  greeting: greeting.text,
  from: require.resolve("greeting"),
  cwd: process.cwd(),
  node: process.versions.node.split(".")[0],
  env: process.env.AWS_EXECUTION_ENV,
  fn: context.functionName,
});
"#,
    );
    write(
        &layer.join("nodejs/node_modules/greeting/index.js"),
        "exports.text = 'hello from the layer module';\n",
    );
    for (mode, code_dir, layer_dir) in modes(&code, &layer) {
        let r = lambda(
            dir.path(),
            &clients,
            "nodejs20.x",
            &code,
            "index.handler",
            &["--layer", layer.to_str().expect("utf-8"), mode],
        );
        assert!(r.out.status.success(), "{mode}: {}\n{}", stderr(&r.out), r.log);
        let resp = r.response.expect("a response");
        assert_eq!(resp["greeting"], "hello from the layer module");
        assert_eq!(
            resp["from"],
            format!("{layer_dir}/nodejs/node_modules/greeting/index.js").as_str(),
            "{mode}"
        );
        assert_eq!(resp["cwd"], code_dir.as_str(), "{mode}");
        assert_eq!(resp["node"], "20");
        assert_eq!(resp["env"], "AWS_Lambda_nodejs20.x");
        assert_eq!(resp["fn"], "coldstart-function");
        // aws-lambda-ric's own start line, then the platform's.
        assert!(
            r.log.contains("Executing 'index.handler' in function directory"),
            "{}",
            r.log
        );
        assert_eq!(r.reports.len(), 1, "{}", r.log);
    }
}

/// A `python3.11` on PATH that is another version is passed over for the next
/// candidate (`python3`), and the header line says which ran and which not.
#[test]
fn the_header_names_the_interpreter_chosen_and_the_one_passed_over() {
    let _turn = crate::common::beside();
    let Some(clients) = clients("python") else { return };
    let dir = scratch();
    let (code, layer) = python_function(dir.path());
    let fake = dir.path().join("bin/python3.11");
    // Answers the version probe as a 3.12 would.
    write(&fake, "#!/bin/sh\necho \"$0\"\necho 3.12\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        dir.path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = coldstart()
        .args([
            "lambda",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--runtime",
            "python3.11",
            "--code",
            code.to_str().expect("utf-8"),
            "--handler",
            "app.handler",
            "--layer",
            layer.to_str().expect("utf-8"),
            "--env",
            &format!("FACTS={}", dir.path().join("facts.jsonl").display()),
        ])
        .no_store()
        .env("PATH", &path)
        .env("COLDSTART_LAMBDA_RIC_DIR", &clients)
        .run();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let header = err
        .lines()
        .find(|l| l.starts_with("coldstart lambda: 1 variant(s)"))
        .unwrap_or_else(|| panic!("no header: {err}"));
    assert!(header.contains("; python3.11: /"), "{header}");
    assert!(
        header.contains(&format!("not {} is 3.12", fake.display())),
        "{header}"
    );
}

#[test]
fn managed_runtime_input_errors_name_the_fix() {
    let _turn = crate::common::beside();
    let dir = scratch();
    for (args, want) in [
        (vec!["--runtime", "python3.12"], "python3.11, nodejs20.x, java17"),
        (vec!["--runtime", "python3.11"], "--code DIR"),
        (
            vec!["--runtime", "java17", "--code", "/nonexistent/code"],
            "not a directory",
        ),
    ] {
        let mut full = vec!["lambda"];
        full.extend(args.iter().copied());
        let o = coldstart()
            .args(&full)
            .no_store()
            .env("COLDSTART_LAMBDA_RIC_DIR", dir.path())
            .run();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }

    // An interpreter of another version is refused, naming what was found: a
    // `node` first on PATH that says it is Node 18 (the client itself is only
    // looked for, so an empty file stands in for it).
    write(
        &dir.path()
            .join("ric/node/node_modules/aws-lambda-ric/bin/index.mjs"),
        "",
    );
    let bin = dir.path().join("bin");
    write(&bin.join("node"), "#!/bin/sh\nprintf '%s\\n18.19.0\\n' \"$0\"\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("node"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let code = dir.path().join("code");
    std::fs::create_dir_all(&code).expect("mkdir");
    let o = coldstart()
        .args(["lambda", "--runtime", "nodejs20.x", "--code"])
        .no_store()
        .arg(&code)
        .env("COLDSTART_LAMBDA_RIC_DIR", dir.path().join("ric"))
        .env("PATH", path)
        .run();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("needs Node.js 20 on PATH") && err.contains("is 18.19.0"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// `coldstart lambda --tune` on a java17 handler: tune's JVM candidates set in
/// the function's JAVA_TOOL_OPTIONS and measured as Init Duration in the
/// emulator. The oracle is a known delay: the handler's class sleeps in its
/// static initialiser (the init phase) for `-Dhello.sleep` ms, and a team
/// candidate (coldstart.toml's [tune] catalogue) sets 400: its row must show
/// +400 ms of Init Duration, less the throttling the sleep saves. 400, not the
/// 150 it was: five inits a variant beside a parallel build put +150 ms at
/// [−90, +120] (issue 38); 400 stays clear of that noise. It runs alone: the
/// module's other Java inits beside it were most of that noise.
/// The runtime's own flags (C1 only, SerialGC) are not measured again; the
/// stored experiments are Lambda inits.
#[test]
fn java_tune_measures_each_candidate_s_init_duration() {
    let _turn = crate::common::alone();
    let Some(clients) = clients("java") else { return };
    let Some(javac) = testkit::tool("JAVA", "javac") else {
        return;
    };
    let dir = scratch();
    let (src, code) = (dir.path().join("src"), dir.path().join("code"));
    write(
        &src.join("example/Hello.java"),
        r#"package example;
import com.amazonaws.services.lambda.runtime.Context;
import java.util.Map;
public class Hello {
    static {
        try { Thread.sleep(Long.getLong("hello.sleep", 0L)); } catch (InterruptedException e) { throw new RuntimeException(e); }
    }
    public String handleRequest(Map<String, Object> event, Context context) { return "hello"; }
}
"#,
    );
    let core = java_core(&clients);
    let ok = std::process::Command::new(&javac)
        .arg("-cp")
        .arg(&core)
        .arg("-d")
        .arg(&code)
        .arg(src.join("example/Hello.java"))
        .status()
        .expect("javac");
    assert!(ok.success());
    let project = dir.path().join("project");
    write(
        &project.join("coldstart.toml"),
        "[tune]\ncatalogue = \"team.toml\"\n",
    );
    write(
        &project.join("team.toml"),
        r#"runtime = "jvm"

[[candidate]]
id = "slow-init"
title = "400 ms more init (the test's known delay)"
what = "-Dhello.sleep=400: the handler's static initialiser sleeps 400 ms."
why = "An oracle."
risks = "None."
apply = "-Dhello.sleep=400"
source = "tests/integration/lambda_managed.rs"
args = ["-Dhello.sleep=400"]
"#,
    );
    let json = dir.path().join("tune.json");
    let store = dir.path().join("store.db");
    let mut c = cs(&[
        "lambda",
        "--memory",
        "512",
        "--runtime",
        "java17",
        "--handler",
        "example.Hello::handleRequest",
        "--tune",
        "--runs",
        "5",
        "--warmup",
        "0",
        "--budget",
        "120",
    ]);
    c.arg("--code")
        .arg(&code)
        .arg("--store")
        .arg(&store)
        .arg("--export-json")
        .arg(&json)
        .current_dir(&project)
        .env("COLDSTART_LAMBDA_RIC_DIR", &clients);
    let o = c.run();
    assert!(o.status.success(), "{}", o.streams());
    let text = o.stdout();
    assert!(
        text.contains("java:17 function example.Hello::handleRequest at 512 MB"),
        "{text}"
    );
    let doc = json_file(&json);
    let row = |id: &str| -> serde_json::Value {
        doc["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no row {id}: {doc}"))
    };
    // Five Java inits a variant under a 512 MB CPU quota: the known delay is
    // `slower` when its interval clears the noise threshold or, on a machine busy
    // enough to blur it, undecided (never faster) and saying so; the delay's check
    // below (its interval holds it) holds both ways.
    let slow = row("slow-init");
    let kind = slow["status"]["kind"].as_str().unwrap_or_default();
    assert!(
        matches!(kind, "slower" | "no_gain" | "inconclusive"),
        "the injected delay is {kind}: {slow}"
    );
    if kind != "slower" {
        assert!(
            kind == "no_gain" || slow["status"]["runs_for_goal"].is_u64(),
            "undecided without the runs that would tell: {slow}"
        );
        eprintln!(
            "slow-init: undecided at this load ({}); its CI is checked below",
            slow["ready_verdict"]
        );
    }
    for id in ["tiered-c1", "serial-gc"] {
        let r = row(id);
        assert_eq!(r["status"]["kind"], "not_applicable", "{r}");
        assert!(
            r["status"]["why"]
                .as_str()
                .is_some_and(|w| w.contains("already has")),
            "{r}"
        );
    }
    // Applied in the function's terms: its environment, a training init in the
    // runtime's own image, never the emulator's command line.
    let appcds = row("appcds");
    let apply = appcds["apply"].as_str().unwrap_or_default();
    assert!(
        apply.starts_with("train once: one init with JAVA_TOOL_OPTIONS=-XX:ArchiveClassesAtExit=app.jsa ")
            && apply.ends_with("the function's environment: JAVA_TOOL_OPTIONS=-XX:SharedArchiveFile=app.jsa"),
        "{appcds}"
    );
    if let Some(command) = doc["recommended"]["command"].as_str() {
        assert!(command.starts_with("the function's environment: "), "{command}");
        for line in doc["recommended"]["train"].as_array().into_iter().flatten() {
            let line = line.as_str().unwrap_or_default();
            assert!(line.starts_with("one init of the function with "), "{line}");
        }
    }
    assert!(!text.contains("--max-runs"), "lambda's option is --runs: {text}");
    let flow = row("spring-extract-appcds");
    assert!(
        flow["status"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("Lambda runs a function's classes from its package")),
        "{flow}"
    );
    // No Spring Boot in the function's code: its property is not measured.
    let lazy = row("spring-lazy");
    assert!(
        lazy["status"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("the function's code and layers hold none")),
        "{lazy}"
    );
    // The stored candidates' experiment: Lambda inits, each run a REPORT's.
    let id = doc["experiments"][0].as_i64().expect("a stored experiment");
    let shown = dir.path().join("shown.json");
    cs(&["show", &id.to_string()])
        .arg("--store")
        .arg(&store)
        .arg("--export-json")
        .arg(&shown)
        .ok();
    let exp = json_file(&shown);
    for v in exp["variants"].as_array().expect("variants") {
        assert_eq!(v["readiness"], "lambda:init", "{v}");
    }
    let ready = exp["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .filter(|s| s["outcome"]["kind"] == "ready")
        .count();
    assert!(ready >= 10, "{exp}");
    assert!(
        exp["samples"][0]["metrics"]["billed_ms"].is_number(),
        "a REPORT's figures: {}",
        exp["samples"][0]
    );
    // The sleep adds 400 ms of wall time to init, less the CPU-quota throttling
    // it saves: the quota goes unused while the main thread sleeps, so the JVM's
    // other threads are throttled less afterwards (at 10240 MB, with no quota,
    // the shift was +158 ms; at 512 MB +136 ms, with 17 ms less throttling).
    let throttled =
        crate::lambda::median_by_variant(&exp, |s| s["metrics"]["throttled_ms"].as_f64().unwrap_or(0.0));
    let of = |name: &str| {
        throttled
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, ms)| *ms)
            .unwrap_or_else(|| panic!("no {name} in {throttled:?}"))
    };
    // How much throttling the sleep saves is itself measured under whatever load
    // the machine has (CI9: medians 216 vs 107 ms beside three other loads, while
    // the shift was +440 ms): the true shift lies between 400 ms less that saving
    // and the 400 ms, and the interval must meet that range.
    let expected = 400.0 - (of("baseline") - of("tune:slow-init")).max(0.0);
    let ci = &slow["shift_ci_ms"];
    let (lo, hi) = (ci[0].as_f64().expect("lo"), ci[1].as_f64().expect("hi"));
    eprintln!("slow-init: expected {expected:.1}..400 ms, shift CI [{lo:.1}, {hi:.1}] ms");
    assert!(
        lo <= 400.0 + 60.0 && hi >= expected - 40.0,
        "the injected 400 ms ({expected:.1} ms after throttling): shift CI [{lo}, {hi}] ms: {slow}\n{throttled:?}"
    );
}
