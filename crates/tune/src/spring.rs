//! The catalogue fitted to the command's application: candidates with
//! `applies_when.app = "spring-boot"` (Spring Boot's extract + AppCDS flow) run
//! only on a Spring Boot fat jar of a version they support. Their placeholders
//! are filled from the command: `{java}` (argv[0]), `{jar}` (the command's jar,
//! as written), `{jar_name}` (its file name), `{train}` and `{run}` (the command
//! as the user's Dockerfile would write it, on the extracted jar, with the
//! training or the candidate's flags); `jar` replaces the command's jar.

use super::catalogue::{version_cmp, Candidate, Catalogue};
use super::jar::{self, AppKind, JavaApp};
use super::show::SPRING_EXIT;
use coldstart_core::target::shell_join;
use std::path::Path;

/// The application kind `applies_when.app` names for a Spring Boot fat jar.
pub const SPRING_BOOT: &str = "spring-boot";
/// … and for any application with Spring Boot on its class path, however it is
/// packaged (Spring Boot's own properties).
pub const SPRING_BOOT_APP: &str = "spring-boot-app";

/// Fit `cat` to `argv` (run in `cwd`): the application it starts, described, when
/// it has one; each app-specific candidate made concrete, or marked as not for
/// this command with the reason.
pub fn fit(cat: &mut Catalogue, argv: &[String], cwd: Option<&Path>) -> Option<JavaApp> {
    let app = jar::of_argv(argv, cwd);
    for c in cat.file.candidates.iter_mut() {
        let Some(kind) = c.applies_when.app.clone() else {
            continue;
        };
        match why_not(c, &kind, app.as_ref()) {
            Some(why) => {
                c.not_here = Some(why);
                c.apply = generic_apply(c);
            }
            None => {
                if let Some(app) = app.as_ref().filter(|_| kind == SPRING_BOOT) {
                    concrete(c, argv, app);
                }
            }
        }
    }
    app
}

/// Why `c` (for applications of `kind`) does not apply to `app`; None when it does.
fn why_not(c: &Candidate, kind: &str, app: Option<&JavaApp>) -> Option<String> {
    if kind == SPRING_BOOT_APP {
        return match app {
            Some(a) if a.boot => None,
            Some(a) => Some(format!(
                "for Spring Boot applications: the command's {} has no Spring Boot on its class path",
                a.describe()
            )),
            None => Some(
                "for Spring Boot applications: the command names no -jar or -cp to look for Spring Boot in"
                    .to_string(),
            ),
        };
    }
    if kind != SPRING_BOOT {
        return Some(format!("for {kind} applications, which tune does not recognise"));
    }
    let Some(app) = app else {
        return Some("for a Spring Boot fat jar run with -jar: the command runs none".to_string());
    };
    let AppKind::SpringBoot { version } = &app.kind else {
        return Some(format!(
            "for a Spring Boot fat jar: the command runs a {}",
            app.describe()
        ));
    };
    let min = c.applies_when.min_app_version.as_deref()?;
    match version {
        Some(v) if version_cmp(v, min).is_ge() => None,
        Some(v) => Some(format!(
            "Spring Boot {v}: needs ≥ {min} (`-Djarmode=tools extract` arrived in 3.3; before it, `-Djarmode=layertools extract` writes layers that run with JarLauncher, not `-jar`)"
        )),
        None => Some(format!(
            "the fat jar's Spring Boot version is unknown, and this needs ≥ {min}"
        )),
    }
}

/// For a Lambda Java function, whose application is not on the runtime's command
/// line: Spring Boot's properties apply when its code or layers hold Spring Boot.
pub fn fit_function(cat: &mut Catalogue, code: &Path, layers: &[std::path::PathBuf]) {
    let boot = jar::boot_in_function(code, layers);
    for c in cat.file.candidates.iter_mut() {
        match c.applies_when.app.as_deref() {
            Some(SPRING_BOOT_APP) => {
                c.not_here = (!boot).then(|| {
                    "for Spring Boot applications: the function's code and layers hold none (org/springframework/boot/, spring-boot*.jar)"
                        .to_string()
                });
            }
            Some(_) => {
                c.not_here = Some(
                    "for a Spring Boot fat jar run with -jar: Lambda runs a function's classes from its package with the runtime's own command"
                        .to_string(),
                );
            }
            None => {}
        }
    }
}

/// `c`'s apply text for a generic `java -jar app.jar`: a candidate not for this
/// command still reads as commands, never as `{java}` placeholders.
fn generic_apply(c: &Candidate) -> String {
    let argv: Vec<String> = ["java", "-jar", "app.jar"].map(String::from).to_vec();
    let app = JavaApp {
        index: 2,
        path: "app.jar".into(),
        kind: AppKind::PlainJar,
        boot: false,
    };
    let mut shown = c.clone();
    concrete(&mut shown, &argv, &app);
    shown.apply
}

/// `c` made concrete for `app` in `argv`.
fn concrete(c: &mut Candidate, argv: &[String], app: &JavaApp) {
    let written = &argv[app.index];
    let name = Path::new(written)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| written.clone());
    // The command with this jar and these flags after the launcher, as a shell line.
    // (A flag the command already has is not written twice; the run, unlike the
    // training, never keeps the flag that stops the program once it is up.)
    let line = |jar: &str, flags: &[String], run: bool| {
        let flags: Vec<String> = flags
            .iter()
            .map(|f| f.replace("{work}/", ""))
            .filter(|f| !argv.contains(f))
            .collect();
        let mut words = vec![argv[0].clone()];
        words.extend(flags.iter().cloned());
        words.extend(argv[1..].iter().cloned());
        words[app.index + flags.len()] = jar.to_string();
        if run {
            words.retain(|w| w != SPRING_EXIT);
        }
        shell_join(&words)
    };
    let train_flags = c.train.as_ref().map(|t| t.args.clone()).unwrap_or_default();
    let fill = |s: &str| {
        s.replace("{java}", &argv[0])
            .replace("{jar_name}", &name)
            .replace("{jar}", &app.path.to_string_lossy())
            .replace("{train}", &line(&name, &train_flags, false))
            .replace("{run}", &line(&name, &c.args, true))
    };
    c.prepare = c.prepare.as_deref().map(fill);
    c.apply = fill(&c.apply);
    if let Some(j) = c.jar.as_deref().map(fill) {
        let mut replaced = argv.to_vec();
        replaced[app.index] = j;
        c.argv = Some(replaced);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_spring_candidates_need_a_fat_jar_of_a_version_they_support() {
        let mut cat = catalogue::load("jvm", &[]).unwrap();
        // No jar: the Spring flow is listed as not for this command.
        let app = fit(&mut cat, &argv(&["java", "-cp", "x", "Main"]), None);
        assert!(matches!(app.map(|a| a.kind), Some(AppKind::ClassPath { .. })));
        let flow = cat
            .file
            .candidates
            .iter()
            .find(|c| c.id == "spring-extract-appcds")
            .unwrap();
        let why = flow.unavailable(Some("17.0.15")).unwrap();
        assert!(why.contains("class path"), "{why}");
        // Its apply text still reads as commands.
        assert!(!flow.apply.contains('{'), "{}", flow.apply);
        assert!(
            flow.apply
                .contains("ENTRYPOINT java -XX:SharedArchiveFile=app.jsa -jar app.jar"),
            "{}",
            flow.apply
        );
        // The plain candidates stay; Spring Boot's property goes with Spring Boot.
        let appcds = cat.file.candidates.iter().find(|c| c.id == "appcds").unwrap();
        assert!(appcds.unavailable(Some("17.0.15")).is_none());
        let lazy = |cat: &Catalogue| {
            cat.file
                .candidates
                .iter()
                .find(|c| c.id == "spring-lazy")
                .unwrap()
                .unavailable(Some("17.0.15"))
        };
        let why = lazy(&cat).unwrap();
        assert!(why.contains("no Spring Boot on its class path"), "{why}");
        let mut cat = catalogue::load("jvm", &[]).unwrap();
        fit(
            &mut cat,
            &argv(&["java", "-cp", "lib/spring-boot-3.5.7.jar", "Main"]),
            None,
        );
        assert!(lazy(&cat).is_none());
        let mut cat = catalogue::load("jvm", &[]).unwrap();
        fit(&mut cat, &argv(&["java", "-Xshare:auto", "Main"]), None);
        assert!(lazy(&cat).unwrap().contains("names no -jar or -cp"));
    }

    #[test]
    fn a_spring_boot_3_2_jar_is_told_why_not() {
        let c = Candidate {
            applies_when: catalogue::AppliesWhen {
                app: Some(SPRING_BOOT.into()),
                min_app_version: Some("3.3".into()),
                ..Default::default()
            },
            ..Candidate::default()
        };
        let app = JavaApp {
            index: 2,
            path: "/x/app.jar".into(),
            kind: AppKind::SpringBoot {
                version: Some("3.2.5".into()),
            },
            boot: true,
        };
        let why = why_not(&c, SPRING_BOOT, Some(&app)).unwrap();
        assert!(why.contains("3.2.5") && why.contains("layertools"), "{why}");
        let new = JavaApp {
            kind: AppKind::SpringBoot {
                version: Some("3.5.7".into()),
            },
            ..app
        };
        assert!(why_not(&c, SPRING_BOOT, Some(&new)).is_none());
    }

    #[test]
    fn the_apply_text_is_the_command_on_the_extracted_jar() {
        let mut cat = catalogue::load("jvm", &[]).unwrap();
        let app = JavaApp {
            index: 3,
            path: "/srv/target/app.jar".into(),
            kind: AppKind::SpringBoot {
                version: Some("3.5.7".into()),
            },
            boot: true,
        };
        let cmd = argv(&["java", "-Xmx512m", "-jar", "target/app.jar", "--server.port=8080"]);
        let c = cat
            .file
            .candidates
            .iter_mut()
            .find(|c| c.id == "spring-extract-appcds")
            .unwrap();
        concrete(c, &cmd, &app);
        assert_eq!(
            c.argv.as_deref().unwrap(),
            [
                "java",
                "-Xmx512m",
                "-jar",
                "{work}/app/app.jar",
                "--server.port=8080"
            ]
        );
        let prepare = c.prepare.as_deref().unwrap();
        assert!(
            prepare.contains("-Djarmode=tools -jar /srv/target/app.jar extract --destination {work}/app"),
            "{prepare}"
        );
        assert!(
            c.apply.contains(
                "java -XX:ArchiveClassesAtExit=app.jsa -Dspring.context.exit=onRefresh -Xmx512m -jar app.jar --server.port=8080"
            ),
            "{}",
            c.apply
        );
        assert!(
            c.apply
                .contains("java -XX:SharedArchiveFile=app.jsa -Xmx512m -jar app.jar --server.port=8080"),
            "{}",
            c.apply
        );
        assert!(
            c.apply.contains("-Djarmode=tools -jar app.jar extract"),
            "{}",
            c.apply
        );
        // Measured as the docs say (the context's refresh ends the program): the
        // training keeps the flag, the ENTRYPOINT does not.
        let mut cat = catalogue::load("jvm", &[]).unwrap();
        let c = cat
            .file
            .candidates
            .iter_mut()
            .find(|c| c.id == "spring-extract-appcds")
            .unwrap();
        let app = JavaApp { index: 3, ..app };
        let cmd = argv(&["java", SPRING_EXIT, "-jar", "target/app.jar", "--server.port=0"]);
        concrete(c, &cmd, &app);
        let (train, run) = c.apply.split_once("ENTRYPOINT").unwrap();
        assert!(
            train.contains(&format!(
                "-XX:ArchiveClassesAtExit=app.jsa {SPRING_EXIT} -jar app.jar"
            )),
            "{train}"
        );
        assert_eq!(
            run.trim(),
            "java -XX:SharedArchiveFile=app.jsa -jar app.jar --server.port=0"
        );
    }
}
