use super::*;
use std::collections::BTreeMap;
use std::process::Command;

use crate::testkit;

const SAMPLE: &str = "\
[7583979977004ns][2614554ns][startuptime] StubRoutines generation 1, 0.0001745 secs
[7584045224749ns][67862119ns][class,load ] java.lang.Object source: shared objects file
[7584059212759ns][81850109ns][startuptime] Initialize java.lang classes, 0.0064929 secs
[7584060000000ns][82637350ns][class,load ] sun.launcher.LauncherHelper$Helper source: jrt:/java.base
[7584071482155ns][94119504ns][startuptime] Create VM, 0.0931483 secs
[7584078467738ns][101105108ns][class,load ] com.acme.Main source: file:/tmp/app.jar
[7584083649749ns][106287099ns][class,load ] com.acme.Main$$Lambda$1/0x00007f5698000a08 source: com.acme.Main
[7584087172297ns][109809647ns][class,load ] java.lang.invoke.LambdaForm$MH/0x00007f5698000400 source: __JVM_LookupDefineClass__
[7584104660542ns][127297901ns][class,load ] jdk.proxy1.$Proxy0 source: __dynamic_proxy__
[7584104660600ns][127297959ns][class,load ] Top source: file:/tmp/classes/
[7584104660650ns][127297999ns][class,load ] opened: /tmp/lib.jar
[7584104660700ns][1272979";

/// A value's words with its numbers bare: enough to read labels and counts here
/// (units and precision are report/'s business, tested there).
fn text(value: &Value) -> String {
    match value {
        Value::Parts(parts) => parts.iter().map(text).collect(),
        Value::Text(s) => s.clone(),
        Value::Ns(n) | Value::AtNs(n) | Value::Count(n) | Value::Bytes(n) => n.to_string(),
        Value::Percent(p) => p.to_string(),
    }
}

#[test]
fn parses_class_loads_and_phases_and_skips_a_cut_line() {
    let log = parse_log(SAMPLE);
    assert_eq!(log.classes.len(), 7);
    assert_eq!(log.classes[0].name, "java.lang.Object");
    assert_eq!(log.classes[0].source, "shared objects file");
    assert_eq!(log.classes[0].mono_ns, 7584045224749);
    assert_eq!(log.classes[0].uptime_ns, 67862119);
    let names: Vec<&str> = log.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "StubRoutines generation 1",
            "Initialize java.lang classes",
            "Create VM"
        ]
    );
    assert_eq!(log.phases[2].dur_ns, 93_148_300);
}

#[test]
fn classifies_sources_and_packages() {
    let log = parse_log(SAMPLE);
    let origins: Vec<Origin> = log.classes.iter().map(|c| origin(&c.name, &c.source)).collect();
    use Origin::*;
    assert_eq!(origins, [Cds, Jrt, Jar, Generated, Generated, Generated, Dir]);
    assert_eq!(package("com.acme.Main$$Lambda$1/0x00007f5698000a08"), "com.acme");
    assert_eq!(package("Top"), "(default package)");
    assert_eq!(
        origin("org.x.Y", "jar:file:/app.jar!/BOOT-INF/lib/x-1.0.jar!/"),
        Origin::Jar
    );
    assert_eq!(
        source_label(Origin::Jar, "jar:file:/app.jar!/BOOT-INF/lib/x-1.0.jar!/"),
        "app.jar!BOOT-INF/lib/x-1.0.jar"
    );
    assert_eq!(source_label(Origin::Dir, "file:/tmp/classes/"), "classes/");
    assert_eq!(
        origin(
            "jdk.internal.reflect.GeneratedMethodAccessor1",
            "__JVM_DefineClass__"
        ),
        Origin::Generated
    );
}

#[test]
fn aligns_to_the_run_clock_and_nests_phases_under_create_vm() {
    let log = parse_log(SAMPLE);
    // Spawn 10 ms before the JVM's uptime zero (7583977362450 ns).
    let t0 = 7_583_977_362_450 - 10_000_000;
    let s = Summary::new(&log, t0, 0).section(None);
    let fact = |k: &str| s.facts.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone());
    assert_eq!(fact("classes"), Some(Value::Count(7)));
    assert_eq!(
        fact("generated (lambdas, proxies, reflection)"),
        Some(Value::Count(3))
    );
    assert_eq!(fact("JVM start after spawn"), Some(Value::AtNs(10_000_000)));
    // LauncherHelper$Helper at …060000000 ns, com.acme.Main at …078467738 ns.
    assert_eq!(
        fact("longest pause between loads"),
        Some(Value::parts([
            Value::Ns(18_467_738),
            " (after sun.launcher.LauncherHelper$Helper, before com.acme.Main)".into()
        ]))
    );
    let spans: Vec<(&str, usize)> = s.spans.iter().map(|s| (s.name.as_str(), s.depth)).collect();
    assert_eq!(
        spans,
        [
            ("JVM init (JVM start → Create VM done)", 0),
            ("app init (Create VM done → last class load)", 0),
            ("Create VM", 0),
            ("StubRoutines generation 1", 1),
            ("Initialize java.lang classes", 1),
            ("class loads", 0),
            ("longest pause in class loading", 0)
        ]
    );
    // Create VM's line is stamped 7584071482155 ns on CLOCK_MONOTONIC: JVM init
    // ends there, app init starts there; the first two classes are the JVM's.
    let vm_end = 7_584_071_482_155 - t0;
    assert_eq!(s.spans[2].start_ns + s.spans[2].dur_ns, vm_end);
    assert_eq!(s.spans[0].start_ns, 10_000_000);
    assert_eq!(s.spans[0].start_ns + s.spans[0].dur_ns, vm_end);
    assert_eq!(s.spans[1].start_ns, vm_end);
    assert_eq!(s.spans[0].args, [("classes".to_string(), Value::Count(2))]);
    assert_eq!(s.spans[1].args, [("classes".to_string(), Value::Count(5))]);
    assert_eq!(s.marks[0].name, "first app class com.acme.Main");

    // Ready before the last loads: those are left out and counted apart.
    let s = Summary::new(&log, t0, 120_000_000).section(None);
    let fact = |k: &str| s.facts.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone());
    assert_eq!(fact("classes"), Some(Value::Count(5)));
    assert_eq!(fact("loaded after ready (not counted)"), Some(Value::Count(2)));

    // No time zero: uptime, said in a note.
    let s = Summary::new(&log, 0, 0).section(None);
    assert!(
        s.notes
            .iter()
            .filter_map(Value::as_text)
            .any(|n| n.contains("uptime")),
        "{:?}",
        s.notes
    );
    assert_eq!(s.spans[2].start_ns + s.spans[2].dur_ns, 94_119_504);
}

#[test]
fn rolls_packages_up_to_a_depth() {
    assert_eq!(
        package_at("org.springframework.boot.SpringApplication", Some(2)),
        "org.springframework"
    );
    assert_eq!(
        package_at("org.springframework.boot.SpringApplication", Some(1)),
        "org"
    );
    assert_eq!(
        package_at("org.springframework.boot.SpringApplication", None),
        "org.springframework.boot"
    );
    assert_eq!(
        package_at("org.springframework.boot.SpringApplication", Some(9)),
        "org.springframework.boot"
    );
    assert_eq!(package_at("a.B$$Lambda$1/0x0000000800c01000", Some(2)), "a");
    assert_eq!(package_at("Top", Some(2)), "(default package)");
    let log = parse_log(SAMPLE);
    let rows: Vec<(String, usize)> = Summary::new(&log, 0, 0)
        .packages(Some(1))
        .into_iter()
        .map(|r| (r.package, r.classes))
        .collect();
    assert_eq!(
        rows,
        [
            ("com".to_string(), 2),
            ("java".to_string(), 2),
            ("(default package)".to_string(), 1),
            ("jdk".to_string(), 1),
            ("sun".to_string(), 1),
        ]
    );
}

#[test]
fn a_plain_path_source_is_a_jar_or_a_directory() {
    // The boot loader's appended path (-Xbootclasspath/a) logs no URL.
    assert_eq!(origin("p.M", "/x/app.jar"), Origin::Jar);
    assert_eq!(source_label(Origin::Jar, "/x/app.jar"), "app.jar");
    assert_eq!(origin("p.M", "/x/classes"), Origin::Dir);
    assert_eq!(origin("p.M", "file:/x/app.jar"), Origin::Jar);
    assert_eq!(origin("p.M", "shared objects file (top)"), Origin::Cds);
}

#[test]
fn option_goes_to_a_file_quoted_when_needed() {
    let plain = xlog_option(Path::new("/tmp/cs-x")).expect("plain dir");
    assert!(!plain.contains(' '), "{plain}");
    assert!(plain.contains("file=/tmp/cs-x/jvm-%p.log:"), "{plain}");
    let spaced = xlog_option(Path::new("/tmp/a b")).expect("dir with a space");
    assert!(
        spaced.starts_with("'-Xlog:") && spaced.ends_with('\''),
        "{spaced}"
    );
    for bad in ["/tmp/a:b", "/tmp/a'b", "/tmp/a%p", "/tmp/a\"b"] {
        assert!(xlog_option(Path::new(bad)).is_err(), "{bad} accepted");
    }
    let env = vec![("JAVA_TOOL_OPTIONS".to_string(), "-Xss2m".to_string())];
    let inj = Jvm::default()
        .inject(Path::new("/tmp/cs-x"), &env)
        .expect("inject");
    assert_eq!(inj.env[0].1, format!("-Xss2m {plain}"));
    assert!(inj.claims[0].is_match(&format!("Picked up JAVA_TOOL_OPTIONS: -Xss2m {plain}")));
}

#[test]
fn detects_the_java_launcher() {
    let exec = |path, exe| FinalExec { path, exe };
    assert!(Jvm::default().detect(&exec(
        "/usr/bin/java",
        "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"
    )));
    assert!(!Jvm::default().detect(&exec("/usr/bin/javac", "/usr/lib/jvm/x/bin/javac")));
    assert!(!Jvm::default().detect(&exec("/usr/bin/python3", "/usr/bin/python3.11")));
}

/// `package → classes` from `-verbose:class` output, parsed without the adapter's code.
fn verbose_class_counts(stdout: &str) -> BTreeMap<String, usize> {
    let re = Regex::new(r"\[class,load\s*\] (\S+) source: ").expect("regex");
    let mut counts = BTreeMap::new();
    for cap in stdout.lines().filter_map(|l| re.captures(l)) {
        let name = cap[1].split('/').next().unwrap_or_default().to_string();
        let pkg = match name.rsplit_once('.') {
            Some((p, _)) => p.to_string(),
            None => "(default package)".to_string(),
        };
        *counts.entry(pkg).or_insert(0) += 1;
    }
    counts
}

const SOURCES: &[(&str, &str)] = &[
    ("com/acme/a/A1.java", "package com.acme.a; public class A1 { public int v() { return 1; } public static int twice(int x) { return 2 * x; } }"),
    ("com/acme/a/A2.java", "package com.acme.a; public class A2 { public int v() { return 2; } }"),
    ("com/acme/a/A3.java", "package com.acme.a; public class A3 { public int v() { return 3; } }"),
    ("com/acme/b/B1.java", "package com.acme.b; public class B1 { public int v() { return 4; } }"),
    ("com/acme/b/B2.java", "package com.acme.b; public class B2 { public int v() { return 5; } }"),
    ("com/acme/Main.java", r#"package com.acme;
import com.acme.a.*;
import com.acme.b.*;
import java.util.function.IntSupplier;
public class Main {
    public static void main(String[] args) throws Exception {
        int n = new A1().v() + new A2().v() + new A3().v() + new B1().v() + new B2().v();
        IntSupplier lambda = () -> 42;
        n += lambda.getAsInt();
        n += (Integer) A1.class.getMethod("twice", int.class).invoke(null, 4);
        System.out.println("sum " + n);
        System.err.println("ready");
    }
}
"#),
];

#[test]
fn counts_by_package_match_verbose_class() {
    let (Some(java), Some(javac), Some(jar)) = (
        testkit::tool("JAVA", "java"),
        testkit::tool("JAVA", "javac"),
        testkit::tool("JAVA", "jar"),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir_in(testkit::fixtures_dir()).expect("tempdir");
    let src = tmp.path().join("src");
    for (path, text) in SOURCES {
        let p = src.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write source");
    }
    let classes = tmp.path().join("classes");
    let status = Command::new(&javac)
        .arg("-d")
        .arg(&classes)
        .args(SOURCES.iter().map(|(p, _)| src.join(p)))
        .status()
        .expect("javac");
    assert!(status.success(), "javac failed");
    // com.acme.b goes to a jar on the boot loader's appended path, which the log
    // names as a plain path; the rest to app.jar, which it names as a file: URL.
    let app = tmp.path().join("app.jar");
    let lib = tmp.path().join("lib.jar");
    for (jar_path, include_b) in [(&app, false), (&lib, true)] {
        let mut cmd = Command::new(&jar);
        cmd.arg("cf").arg(jar_path);
        if include_b {
            cmd.arg("-C").arg(&classes).arg("com/acme/b");
        } else {
            cmd.arg("-C").arg(&classes).arg("com/acme/Main.class");
            cmd.arg("-C").arg(&classes).arg("com/acme/a");
        }
        assert!(cmd.status().expect("jar").success(), "jar failed");
    }
    let java_args = |c: &mut Command| {
        c.arg(format!("-Xbootclasspath/a:{}", lib.display()))
            .arg("-cp")
            .arg(&app)
            .arg("com.acme.Main");
    };

    // Adapted run: the adapter's environment only (an empty JAVA_TOOL_OPTIONS of
    // the target's own keeps whatever the test's environment holds out).
    let dir = tmp.path().join("adapter dir");
    std::fs::create_dir(&dir).expect("adapter dir");
    let inj = Jvm::default()
        .inject(&dir, &[("JAVA_TOOL_OPTIONS".into(), String::new())])
        .expect("inject");
    let t0 = coldstart_core::clock::now_ns();
    let mut cmd = Command::new(&java);
    java_args(&mut cmd);
    let out = cmd
        .envs(inj.env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("java (adapted)");
    let ready_ns = coldstart_core::clock::now_ns() - t0;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut claimed = Vec::new();
    let mut unclaimed = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&out.stderr).lines())
    {
        if inj.claims.iter().any(|re| re.is_match(line)) {
            claimed.push((0, line.to_string()));
        } else {
            unclaimed.push(line.to_string());
        }
    }
    assert_eq!(
        unclaimed,
        ["sum 65", "ready"],
        "the switch leaked into the program's output"
    );
    assert_eq!(claimed.len(), 1, "{claimed:?}");

    let got = Collected {
        dir: &dir,
        claimed: &claimed,
        ready_ns,
        t0_mono_ns: t0,
        trace: None,
    };
    let section = Jvm::default().collect(&got).expect("collect");

    // Independent run: -verbose:class on stdout, parsed here.
    let mut cmd = Command::new(&java);
    cmd.arg("-verbose:class");
    java_args(&mut cmd);
    let out = cmd
        .env_remove("JAVA_TOOL_OPTIONS")
        .output()
        .expect("java -verbose:class");
    assert!(out.status.success());
    let verbose = String::from_utf8_lossy(&out.stdout);
    let expected = verbose_class_counts(&verbose);
    let total: usize = expected.values().sum();

    let logs = read_logs(&dir).expect("read logs");
    assert_eq!(logs.len(), 1);
    let summary = Summary::new(&logs[0], t0, ready_ns);
    let got_counts: BTreeMap<String, usize> = summary
        .packages(None)
        .into_iter()
        .map(|r| (r.package, r.classes))
        .collect();
    assert_eq!(got_counts, expected);
    // Rolled up to two parts, like `cut -d. -f1-2 | sort | uniq -c`.
    let mut expected_2: BTreeMap<String, usize> = BTreeMap::new();
    for (pkg, n) in &expected {
        let cut: Vec<&str> = pkg.split('.').take(2).collect();
        *expected_2.entry(cut.join(".")).or_insert(0) += n;
    }
    let got_2: BTreeMap<String, usize> = summary
        .packages(Some(2))
        .into_iter()
        .map(|r| (r.package, r.classes))
        .collect();
    assert_eq!(got_2, expected_2);
    // Main, A1-A3, B1, B2 and the lambda (the reflection accessor may be generated
    // in jdk.internal.reflect instead, depending on inflation).
    assert!(
        expected_2.get("com.acme").is_some_and(|&n| n >= 7),
        "{expected_2:?}"
    );
    // Every line of the independent run names its source; the boot-appended jar
    // as a plain path (what the adapter must count as a jar).
    assert!(
        verbose.contains(&format!("com.acme.b.B1 source: {}", lib.display())),
        "{verbose}"
    );
    assert_eq!(expected.get("com.acme.a"), Some(&3));
    assert_eq!(expected.get("com.acme.b"), Some(&2));

    // The section itself: totals, sorted rows that agree, the jar, phases.
    let fact = |k: &str| section.facts.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone());
    assert_eq!(fact("classes"), Some(Value::count(total)));
    assert_eq!(fact("from jars"), Some(Value::Count(6)), "{:?}", section.facts);
    assert_eq!(fact("  app.jar"), Some(Value::Count(4)), "{:?}", section.facts);
    assert_eq!(fact("  lib.jar"), Some(Value::Count(2)), "{:?}", section.facts);
    // JVM init holds no app class; app init holds all of them.
    let phase = |name: &str| section.spans.iter().find(|s| s.name.starts_with(name)).cloned();
    let (vm, app_init) = (
        phase("JVM init").expect("JVM init"),
        phase("app init").expect("app init"),
    );
    assert_eq!(vm.start_ns + vm.dur_ns, app_init.start_ns);
    let classes = |s: &Span| s.args[0].1.as_count().expect("count") as usize;
    assert_eq!(classes(&vm) + classes(&app_init), total);
    assert!(classes(&app_init) >= 6 && classes(&vm) > 0, "{vm:?} {app_init:?}");
    assert!(fact("Create VM").is_some(), "{:?}", section.facts);
    assert!(fact("generated (lambdas, proxies, reflection)").is_some());
    let counts: Vec<usize> = section
        .table
        .rows
        .iter()
        .map(|r| r[1].as_count().expect("count") as usize)
        .collect();
    assert!(
        counts.windows(2).all(|w| w[0] >= w[1]),
        "not largest first: {counts:?}"
    );
    for row in &section.table.rows {
        assert_eq!(
            Some(&(row[1].as_count().expect("count") as usize)),
            expected.get(row[0].as_text().expect("a package"))
        );
    }
    // The whole table is in the JSON; the terminal shows the top rows.
    assert_eq!(section.table.rows.len(), expected.len());
    assert_eq!(section.table.omitted, 0);
    let json = serde_json::to_value(&section).expect("json");
    assert_eq!(
        json["table"]["rows"].as_array().map(Vec::len),
        Some(expected.len())
    );
    let (shown, more) = section.table.visible();
    assert_eq!(shown.len() + more, expected.len());
    assert!(shown.len() <= TABLE_ROWS);
    // On the run's clock: every span inside spawn → exit.
    assert!(section.spans.iter().all(|s| s.start_ns + s.dur_ns <= ready_ns));
}

/// Every form of source HotSpot logs, labelled by the file it is and, inside an
/// archive, the entry: Spring Boot 3.2+ (`jar:nested:`), Spring Boot 2 and other
/// `jar:file:` URLs, plain jars and directories, jrt modules, the CDS archive.
#[test]
fn labels_name_the_file_and_the_entry_inside_it() {
    let cases = [
        // Spring Boot 3.2+: the app's own classes and a library, nested in app.jar.
        (
            "jar:nested:/srv/app/app.jar/!BOOT-INF/classes/!/",
            Origin::Dir,
            "app.jar!BOOT-INF/classes",
        ),
        (
            "jar:nested:/srv/app/app.jar/!BOOT-INF/lib/spring-core-6.1.jar!/",
            Origin::Jar,
            "app.jar!BOOT-INF/lib/spring-core-6.1.jar",
        ),
        // Spring Boot 2 (and a war's WEB-INF).
        (
            "jar:file:/srv/app/app.jar!/BOOT-INF/classes!/",
            Origin::Dir,
            "app.jar!BOOT-INF/classes",
        ),
        (
            "jar:file:/srv/app/app.jar!/BOOT-INF/lib/x-1.0.jar!/",
            Origin::Jar,
            "app.jar!BOOT-INF/lib/x-1.0.jar",
        ),
        (
            "jar:file:/srv/app.war!/WEB-INF/lib/y.jar!/",
            Origin::Jar,
            "app.war!WEB-INF/lib/y.jar",
        ),
        // The launcher's own classes at the fat jar's root.
        ("file:/srv/app/app.jar", Origin::Jar, "app.jar"),
        ("file:/srv/my%20app/lib%201.jar", Origin::Jar, "lib 1.jar"),
        ("file:/srv/app/classes/", Origin::Dir, "classes/"),
        ("/srv/boot/lib.jar", Origin::Jar, "lib.jar"),
        // A plain directory may hold a '!'; only a jar: URL separates entries with it.
        ("file:/srv/a!b/classes/", Origin::Dir, "classes/"),
        ("jrt:/java.base", Origin::Jrt, "java.base"),
        ("shared objects file", Origin::Cds, "CDS"),
        ("shared objects file (top)", Origin::Cds, "CDS"),
    ];
    for (source, want_origin, want_label) in cases {
        let o = origin("p.C", source);
        assert_eq!(o, want_origin, "{source}");
        assert_eq!(source_label(o, source), want_label, "{source}");
    }
}

/// A package drawing on many sources names the largest three and counts the rest.
#[test]
fn a_row_names_three_sources_and_counts_the_rest() {
    let sources: Vec<(String, usize)> = (0..14).map(|i| (format!("j{i}.jar"), 100 - i)).collect();
    let rest: usize = sources[3..].iter().map(|s| s.1).sum();
    let cell = |s: &[(String, usize)]| text(&sources_cell(s));
    assert_eq!(
        cell(&sources),
        format!("j0.jar 100, j1.jar 99, j2.jar 98, +11 more sources: {rest} classes")
    );
    assert_eq!(
        cell(&sources[..4]),
        "j0.jar 100, j1.jar 99, j2.jar 98, +1 more source: 97 classes"
    );
    assert_eq!(cell(&sources[..2]), "j0.jar 100, j1.jar 99");
}

/// A source of 1,000 characters (a deep path, a long jar name) in the section of
/// a real-format log: the label keeps its ends, and the rendered section stays
/// inside the terminal's width with its table whole (each row's figures on the
/// row's first line, the header on one line).
#[test]
fn a_long_source_fits_the_terminal() {
    // A deep directory and a jar name of 1,000 characters inside the fat jar.
    let dir = "d".repeat(200);
    let long = format!(
        "jar:nested:/{dir}/{dir}/app.jar/!BOOT-INF/lib/{}-1.0.jar!/",
        "n".repeat(1000)
    );
    assert!(long.len() > 1000, "{}", long.len());
    let log = parse_log(&format!(
        "[7584071482155ns][94119504ns][startuptime] Create VM, 0.0931483 secs\n\
         [7584078467738ns][101105108ns][class,load ] com.acme.Main source: {long}\n\
         [7584078467800ns][101105170ns][class,load ] com.acme.Other source: {long}\n\
         [7584078467900ns][101105270ns][class,load ] com.acme.Third source: file:/tmp/app.jar\n"
    ));
    let section = Summary::new(&log, 0, 0).section(None);
    // The outer jar, the name's start and its end (version), the middle elided.
    let cell = text(&section.table.rows[0][2]);
    let label = cell.strip_suffix(" 2, app.jar 1").expect("two sources");
    assert!(
        label.starts_with("app.jar!…/nnn")
            && label.ends_with("nnn-1.0.jar")
            && label.matches('…').count() == 2,
        "{label}"
    );
    assert!(label.chars().count() <= LABEL_MAX, "{label}");
}

/// The independent count: `source → classes` from the log file itself, by awk,
/// without the adapter's parser.
fn awk_sources(log: &Path) -> BTreeMap<String, usize> {
    let out = Command::new("awk")
        .args([
            "-F",
            " source: ",
            r#"/\]\[class,load *\] / && NF == 2 { n[$2]++ } END { for (s in n) print n[s] "\t" s }"#,
        ])
        .arg(log)
        .output()
        .expect("awk");
    assert!(
        out.status.success(),
        "awk: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (n, s) = l.split_once('\t')?;
            Some((s.to_string(), n.parse().ok()?))
        })
        .collect()
}

/// One adapted run of `java ARGS` (the adapter's environment only), collected.
struct AdaptedRun {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    t0: u64,
    ready_ns: u64,
    stdout: String,
    stderr: String,
    section: Section,
}

fn adapted_run(java: &Path, args: &[std::ffi::OsString]) -> AdaptedRun {
    let tmp = tempfile::tempdir_in(testkit::fixtures_dir()).expect("tempdir");
    let dir = tmp.path().join("adapter");
    std::fs::create_dir(&dir).expect("adapter dir");
    let inj = Jvm::default()
        .inject(&dir, &[("JAVA_TOOL_OPTIONS".into(), String::new())])
        .expect("inject");
    let t0 = coldstart_core::clock::now_ns();
    let out = Command::new(java)
        .args(args)
        .envs(inj.env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("java (adapted)");
    let ready_ns = coldstart_core::clock::now_ns() - t0;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "java {args:?}\n{stdout}\n{stderr}");
    let got = Collected {
        dir: &dir,
        claimed: &[],
        ready_ns,
        t0_mono_ns: t0,
        trace: None,
    };
    let section = Jvm::default().collect(&got).expect("collect");
    AdaptedRun {
        _tmp: tmp,
        dir,
        t0,
        ready_ns,
        stdout,
        stderr,
        section,
    }
}

fn the_log(dir: &Path) -> PathBuf {
    let logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("adapter dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs[0].clone()
}

/// tests/fixtures/spring-boot built by Maven into the fixtures directory (never
/// the source tree), once; or a skip under MAVEN.
fn spring_boot_jar() -> Option<PathBuf> {
    let mvn = testkit::tool("MAVEN", "mvn")?;
    let fixture = testkit::repo().join("tests/fixtures/spring-boot");
    let java_dir = fixture.join("src/main/java/dev/coldstart/fixture");
    let sources = [
        fixture.join("pom.xml"),
        java_dir.join("App.java"),
        java_dir.join("Greeter.java"),
    ];
    let refs: Vec<&Path> = sources.iter().map(PathBuf::as_path).collect();
    Some(testkit::built("spring-boot-app.jar", &refs, |out| {
        // Maven writes a directory; the jar alone is moved to where built() wants it.
        let build = testkit::fixtures_dir().join(format!("spring-boot-build.{}", std::process::id()));
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(r#""$1" -B -q -f "$2" -Dout="$3" package && mv "$3/app.jar" "$4" && rm -rf "$3""#)
            .arg("sh")
            .arg(mvn)
            .arg(fixture.join("pom.xml"))
            .arg(build)
            .arg(out);
        c
    }))
}

/// A real Spring Boot fat jar (Boot 3.5, `jar:nested:` URLs): the app's classes
/// are labelled `app.jar!BOOT-INF/classes`, each library by its nested jar, and
/// the count per source equals awk's count of the same log's lines.
#[test]
fn spring_boot_classes_are_labelled_by_their_nested_source() {
    let (Some(java), Some(jar)) = (testkit::tool("JAVA", "java"), spring_boot_jar()) else {
        return;
    };
    let run = adapted_run(&java, &["-jar".into(), jar.clone().into()]);
    assert!(run.stdout.contains("ready from the fixture"), "{}", run.stdout);
    let name = jar.file_name().expect("jar name").to_string_lossy().into_owned();
    let expected = awk_sources(&the_log(&run.dir));

    // awk's nested sources by the entry's name (`BOOT-INF/lib/x.jar` → x.jar,
    // `BOOT-INF/classes` → classes), which each label ends with, however shortened.
    let nested = Regex::new(r"^jar:nested:.*/([^/]+)/!(.+?)/?!/$").expect("regex");
    let entry = |path: &str| path.rsplit('/').next().unwrap_or_default().to_string();
    let mut want: BTreeMap<String, usize> = BTreeMap::new();
    for (source, n) in &expected {
        if let Some(c) = nested.captures(source) {
            assert_eq!(c[1], name, "{source}");
            *want.entry(entry(&c[2])).or_default() += n;
        }
    }
    assert!(want.len() > 5, "too few nested jars in the log: {expected:?}");

    let logs = read_logs(&run.dir).expect("read logs");
    let summary = Summary::new(&logs[0], run.t0, run.ready_ns);
    let rows = summary.packages(None);
    let mut got: BTreeMap<String, usize> = BTreeMap::new();
    for r in &rows {
        for (label, n) in &r.sources {
            if let Some(inner) = label.strip_prefix(&format!("{name}!")) {
                *got.entry(entry(inner)).or_default() += n;
            }
        }
    }
    assert_eq!(got, want);
    // The app's own two classes, named by where they are.
    let app = rows
        .iter()
        .find(|r| r.package == "dev.coldstart.fixture")
        .expect("app row");
    assert_eq!(app.sources, [(format!("{name}!BOOT-INF/classes"), 2)]);
    // A library's label in full when it fits, else without its directories.
    let labels: Vec<&str> = rows
        .iter()
        .flat_map(|r| r.sources.iter().map(|(l, _)| l.as_str()))
        .collect();
    for lib in ["spring-core-6.2.12.jar", "spring-boot-autoconfigure-3.5.7.jar"] {
        let full = format!("{name}!BOOT-INF/lib/{lib}");
        let want = if full.chars().count() <= LABEL_MAX {
            full
        } else {
            format!("{name}!…/{lib}")
        };
        assert!(labels.contains(&want.as_str()), "no {want}: {labels:?}");
    }
    // The launcher's classes at the jar's root are the plain jar.
    assert!(labels.contains(&name.as_str()), "no launcher classes from {name}");
    // No label is empty or a bare slash, as the app's classes were.
    for l in &labels {
        assert!(!l.is_empty() && *l != "/", "{labels:?}");
    }
    // The top jar's fact agrees with awk.
    let (top, n) = want.iter().max_by_key(|(_, n)| **n).expect("a jar");
    assert!(
        run.section
            .facts
            .iter()
            .any(|(k, v)| k.starts_with(&format!("  {name}!"))
                && k.ends_with(top.as_str())
                && *v == Value::count(*n)),
        "{top} {n}: {:?}",
        run.section.facts
    );
}

const AGENT_SLEEP_MS: u64 = 300;

/// A -javaagent whose premain loads classes of its own and sleeps 300 ms
/// between two System.nanoTime() readings (CLOCK_MONOTONIC on Linux), printed
/// for the test; and an app whose main says it is ready.
const AGENT_SOURCES: &[(&str, &str)] = &[
    (
        "agent/Agent.java",
        r#"package agent;
public class Agent {
    public static void premain(String args) throws Exception {
        new H1(); new H2(); new H3();
        long a = System.nanoTime();
        Thread.sleep(300);
        long b = System.nanoTime();
        System.err.println("agent-sleep " + a + " " + b);
    }
}
class H1 {}
class H2 {}
class H3 {}
"#,
    ),
    (
        "app/Main.java",
        r#"package app;
public class Main {
    public static void main(String[] args) {
        System.out.println("ready");
    }
}
"#,
    ),
];

/// A real -javaagent: its premain is the agent's own phase, named by its jar,
/// holding the injected 300 ms sleep (the agent's own clock readings lie inside
/// it), and JVM init ends before the sleep starts.
#[test]
fn a_javaagent_premain_is_its_own_phase() {
    let (Some(java), Some(javac), Some(jar)) = (
        testkit::tool("JAVA", "java"),
        testkit::tool("JAVA", "javac"),
        testkit::tool("JAVA", "jar"),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir_in(testkit::fixtures_dir()).expect("tempdir");
    let src = tmp.path().join("src");
    for (path, text) in AGENT_SOURCES {
        let p = src.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write source");
    }
    let classes = tmp.path().join("classes");
    let ok = Command::new(&javac)
        .arg("-d")
        .arg(&classes)
        .args(AGENT_SOURCES.iter().map(|(p, _)| src.join(p)))
        .status()
        .expect("javac");
    assert!(ok.success(), "javac failed");
    let manifest = tmp.path().join("manifest.txt");
    std::fs::write(&manifest, "Premain-Class: agent.Agent\n").expect("manifest");
    let agent_jar = tmp.path().join("my-agent.jar");
    let app_jar = tmp.path().join("app.jar");
    for (cmd, what) in [
        (
            Command::new(&jar)
                .arg("cfm")
                .arg(&agent_jar)
                .arg(&manifest)
                .arg("-C")
                .arg(&classes)
                .arg("agent")
                .status(),
            "agent jar",
        ),
        (
            Command::new(&jar)
                .arg("cf")
                .arg(&app_jar)
                .arg("-C")
                .arg(&classes)
                .arg("app")
                .status(),
            "app jar",
        ),
    ] {
        assert!(cmd.expect("jar").success(), "{what} failed");
    }
    let run = adapted_run(
        &java,
        &[
            format!("-javaagent:{}", agent_jar.display()).into(),
            "-cp".into(),
            app_jar.into(),
            "app.Main".into(),
        ],
    );
    assert!(run.stdout.contains("ready"), "{}", run.stdout);
    // The agent's own record of its sleep, on the run's clock.
    let (sleep_from, sleep_to) = run
        .stderr
        .lines()
        .find_map(|l| {
            let mut w = l.strip_prefix("agent-sleep ")?.split(' ');
            Some((w.next()?.parse::<u64>().ok()?, w.next()?.parse::<u64>().ok()?))
        })
        .map(|(a, b)| (a - run.t0, b - run.t0))
        .unwrap_or_else(|| panic!("no agent-sleep line: {}", run.stderr));
    assert!(sleep_to - sleep_from >= AGENT_SLEEP_MS * 1_000_000);

    let span = |prefix: &str| {
        run.section
            .spans
            .iter()
            .find(|s| s.name.starts_with(prefix))
            .cloned()
            .unwrap_or_else(|| panic!("no span {prefix}: {:#?}", run.section.spans))
    };
    let (vm, agent, app) = (span("JVM init"), span("agent premain"), span("app init"));
    assert_eq!(agent.name, "agent premain (my-agent.jar)");
    // ≥ 80 % of the injected sleep, and all of the agent's own reading of it.
    assert!(
        agent.dur_ns >= AGENT_SLEEP_MS * 1_000_000 * 8 / 10,
        "agent premain {} ms",
        agent.dur_ns / 1_000_000
    );
    assert!(
        agent.start_ns <= sleep_from && sleep_to <= agent.start_ns + agent.dur_ns,
        "sleep {sleep_from}..{sleep_to} outside {agent:?}"
    );
    // JVM init ends where the agent starts, before the sleep; the phases tile.
    assert_eq!(vm.start_ns + vm.dur_ns, agent.start_ns);
    assert!(vm.start_ns + vm.dur_ns <= sleep_from);
    assert_eq!(agent.start_ns + agent.dur_ns, app.start_ns);
    // The agent's four classes (independently: awk's count of the log's lines
    // from its jar) are in its phase.
    let from_agent_jar: usize = awk_sources(&the_log(&run.dir))
        .iter()
        .filter(|(s, _)| s.ends_with("/my-agent.jar"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(from_agent_jar, 4);
    let classes = |s: &Span| s.args[0].1.as_count().expect("count") as usize;
    assert!(classes(&agent) >= from_agent_jar, "{agent:?}");
    let total = run.section.facts[0].1.as_count().expect("classes") as usize;
    assert_eq!(classes(&vm) + classes(&agent) + classes(&app), total);
    let fact = |k: &str| {
        run.section
            .facts
            .iter()
            .find(|(f, _)| f == k)
            .map(|(_, v)| v.clone())
    };
    assert!(
        fact("Create VM").is_some_and(|v| text(&v).contains("of which agent premain")),
        "{:?}",
        run.section.facts
    );
    assert!(
        fact("agent premain (my-agent.jar)").is_some(),
        "{:?}",
        run.section.facts
    );
    // The app's first class is the app's, not the agent's.
    assert_eq!(run.section.marks[0].name, "first app class app.Main");
}
