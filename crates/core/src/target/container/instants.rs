//! A container run's own instants as the engine recorded them, and the phases
//! they cut a run into. Podman logs an event for each step of `podman run`:
//! the image's `pull` (also when the image was already there: then it marks the
//! end of the lookup), the container's `create`, `init` (the OCI runtime's
//! create returned: namespaces, mounts and cgroup made, the process waiting to
//! exec) and `start` (the runtime's start returned, the process released).

/// The marks a container run gets (MarkSource::Engine), in the order they happen.
/// The pull's start is podman's `pull` event (logged as the pull begins, also
/// when the image is there already: then it is only the lookup); the last
/// fetched layer's and the image's records in the store end its fetch and its
/// unpacking (`store.rs`), for a run that pulled.
/// Started is written once the runtime's start returned: detached on this
/// machine it lay within −3.6…+0.2 ms of the program's own main(); under load
/// its recording may come later (docs/containers.md).
pub const PULL_MARK: &str = "image.pull";
pub const FETCHED_MARK: &str = "image.fetched";
pub const STORED_MARK: &str = "image.stored";
pub const CREATED_MARK: &str = "container.created";
pub const INITIALIZED_MARK: &str = "container.initialized";
pub const STARTED_MARK: &str = "container.started";
/// The container's process exited (podman's `died`): with exit readiness the
/// client still has to notice and return.
pub const EXITED_MARK: &str = "container.exited";

/// One phase of a container run: its name and the engine mark it ends at
/// (None: it ends at ready).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    pub name: &'static str,
    pub ends_at: Option<&'static str>,
}

/// The phases up to the runtime's start, shared by both chains.
const UP_TO_START: [Phase; 6] = [
    Phase {
        // The client's own start, its configuration and store opened.
        name: "client",
        ends_at: Some(PULL_MARK),
    },
    Phase {
        // The blobs fetched from the registry (and every layer but the last unpacked).
        name: "fetch",
        ends_at: Some(FETCHED_MARK),
    },
    Phase {
        // The last layer unpacked, the image recorded.
        name: "unpack",
        ends_at: Some(STORED_MARK),
    },
    Phase {
        // The image looked up, the container's storage (its layer on the image)
        // and configuration.
        name: "create",
        ends_at: Some(CREATED_MARK),
    },
    Phase {
        // The monitor (conmon) and the OCI runtime's create.
        name: "runtime create",
        ends_at: Some(INITIALIZED_MARK),
    },
    Phase {
        name: "runtime start",
        ends_at: Some(STARTED_MARK),
    },
];

/// Spawn → ready cut at the engine's marks, for a run that is ready when it
/// exits (`exit`) or when a probe says so. Each phase starts where the one
/// before ends (the first at spawn), so in every run they add up to spawn → ready.
pub fn phases(exit: bool) -> Vec<Phase> {
    let mut chain = UP_TO_START.to_vec();
    if exit {
        chain.push(Phase {
            // exec of the entrypoint and the program, to its exit.
            name: "program",
            ends_at: Some(EXITED_MARK),
        });
        chain.push(Phase {
            // The monitor reports the exit, the client cleans up and returns.
            name: "client exit",
            ends_at: None,
        });
    } else {
        chain.push(Phase {
            // exec of the entrypoint, the program's init, and the probe noticing.
            name: "init → ready",
            ends_at: None,
        });
    }
    chain
}

/// The engine's instants of one run (its wall clock, Unix ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Instants {
    /// The image's pull (or its lookup) began; None where the engine logs no events.
    pub pull: Option<i128>,
    /// This run's pull: its last layer fetched, the image stored (None for a
    /// run that found the image there), and the layers and bytes it fetched.
    pub fetched: Option<i128>,
    pub stored: Option<i128>,
    pub fetched_layers: usize,
    pub fetched_bytes: u64,
    /// Created: its image pulled and unpacked, its configuration written.
    pub created: i128,
    /// The OCI runtime's create returned; None where the engine logs no events.
    pub initialized: Option<i128>,
    /// The OCI runtime's start returned, which released the process to exec its
    /// entrypoint; None for a container that never started.
    pub started: Option<i128>,
    /// Its process exited; None where the engine logs no events (or it still runs).
    pub exited: Option<i128>,
}

impl Instants {
    /// (mark, instant) for each instant the engine recorded.
    pub fn marks(&self) -> Vec<(&'static str, i128)> {
        [
            (PULL_MARK, self.pull),
            (FETCHED_MARK, self.fetched),
            (STORED_MARK, self.stored),
            (CREATED_MARK, Some(self.created)),
            (INITIALIZED_MARK, self.initialized),
            (STARTED_MARK, self.started),
            (EXITED_MARK, self.exited),
        ]
        .into_iter()
        .filter_map(|(m, t)| Some((m, t?)))
        .collect()
    }
}

/// `podman events` lines: `TYPE STATUS UNIX_NS NAME`.
pub(super) const EVENTS_FORMAT: &str = "{{.Type}} {{.Status}} {{.Time.UnixNano}} {{.Name}}";
/// `podman container inspect`: `CREATED STARTED FINISHED IMAGE_ID`.
pub(super) const INSPECT_FORMAT: &str =
    "{{.Created.UnixNano}} {{.State.StartedAt.UnixNano}} {{.State.FinishedAt.UnixNano}} {{.Image}}";

/// Run `name`'s instants from the event log: its container's create, init and
/// start, and the last pull of `image` before that create. None when the log
/// has no create for it (an engine that logs no events).
pub(super) fn parse_events(text: &str, image: &str, name: &str) -> Option<Instants> {
    let mut created = None;
    let mut initialized = None;
    let mut started = None;
    let mut exited = None;
    let mut pulls = Vec::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(kind), Some(status), Some(t), Some(who)) = (f.next(), f.next(), f.next(), f.next()) else {
            continue;
        };
        let Some(t) = t.parse::<i128>().ok().filter(|t| *t > 0) else {
            continue;
        };
        match (kind, status) {
            ("image", "pull") if same_image(who, image) => pulls.push(t),
            ("container", s) if who == name => {
                // The first of each: a restarted container's later ones are not its start.
                let slot = match s {
                    "create" => &mut created,
                    "init" => &mut initialized,
                    "start" => &mut started,
                    "died" => &mut exited,
                    _ => continue,
                };
                slot.get_or_insert(t);
            }
            _ => {}
        }
    }
    let created = created?;
    Some(Instants {
        pull: pulls.into_iter().filter(|t| *t <= created).max(),
        created,
        initialized,
        started,
        exited,
        ..Instants::default()
    })
}

/// `CREATED STARTED FINISHED IMAGE_ID` on the output's last line (anything
/// before it, such as an engine's warning, is not one); Go's zero time (before
/// 1970) is no instant. The instants, and the image's id.
pub(super) fn parse_inspect(text: &str) -> Option<(Instants, Option<String>)> {
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = |i: usize| {
        words
            .get(i)
            .and_then(|w| w.parse::<i128>().ok())
            .filter(|t| *t > 0)
    };
    let i = Instants {
        created: at(0)?,
        started: at(1),
        exited: at(2),
        ..Instants::default()
    };
    Some((i, words.get(3).map(|w| w.to_string())))
}

/// The container's own state (`inspect`) with what only the event log has: the
/// pull and the runtime's create. The state's instants are the closer ones:
/// its start is written as the runtime's start returns (the `start` event
/// after it, 1.5–5 ms later here), its finish is the monitor's exit file (the
/// `died` event is when the engine noticed it).
pub(super) fn merge(state: Instants, events: Option<Instants>) -> Instants {
    Instants {
        pull: events.and_then(|e| e.pull),
        initialized: events.and_then(|e| e.initialized),
        exited: state.exited.or(events.and_then(|e| e.exited)),
        ..state
    }
}

/// Whether two references name one image as an engine writes them: the default
/// registry's and localhost's prefixes and the `latest` tag are implied.
fn same_image(a: &str, b: &str) -> bool {
    fn norm(r: &str) -> String {
        let r = ["docker.io/library/", "docker.io/", "localhost/"]
            .iter()
            .find_map(|p| r.strip_prefix(p))
            .unwrap_or(r);
        let last = r.rsplit('/').next().unwrap_or(r);
        match last.contains(':') || last.contains('@') {
            true => r.to_string(),
            false => format!("{r}:latest"),
        }
    }
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As podman 4.3 printed them for `podman run --name r1 localhost/app:1`, with
    /// another run's and another image's events between.
    const LOG: &str = "\
image pull 1796694500000000000 localhost/app:1
container create 1796694568137310412 r0
image pull 1796694568105942292 localhost/app:1
image pull 1796694568120000000 localhost/other:2
container create 1796694568137310412 r1
container init 1796694568298679540 r1
container start 1796694568313146638 r1
container attach 1796694568313489591 r1
container died 1796694568317374546 r1
image pull 1796694569000000000 localhost/app:1
container start 1796694569313146638 r1
";

    #[test]
    fn events_give_each_step_of_this_run_only() {
        let i = parse_events(LOG, "app:1", "r1").unwrap();
        assert_eq!(
            i,
            Instants {
                pull: Some(1796694568105942292),
                created: 1796694568137310412,
                initialized: Some(1796694568298679540),
                started: Some(1796694568313146638),
                exited: Some(1796694568317374546),
                ..Instants::default()
            }
        );
        assert_eq!(
            i.marks().iter().map(|m| m.0).collect::<Vec<_>>(),
            [
                PULL_MARK,
                CREATED_MARK,
                INITIALIZED_MARK,
                STARTED_MARK,
                EXITED_MARK
            ]
        );
        // No create of this run logged: the events say nothing of it.
        assert_eq!(parse_events(LOG, "app:1", "r9"), None);
        assert_eq!(parse_events("", "app:1", "r1"), None);
        // An image never pulled before the create: no pull instant.
        assert_eq!(parse_events(LOG, "third:1", "r1").unwrap().pull, None);
    }

    #[test]
    fn the_state_s_instants_win_and_the_events_add_the_pull_and_the_runtime_create() {
        let (state, id) = parse_inspect("100 300 400 0e86661f").unwrap();
        assert_eq!(id.as_deref(), Some("0e86661f"));
        let events = parse_events(
            "image pull 50 app:1\ncontainer create 110 r\ncontainer init 250 r\ncontainer start 305 r\ncontainer died 410 r\n",
            "app:1",
            "r",
        );
        let m = merge(state, events);
        assert_eq!(
            m,
            Instants {
                pull: Some(50),
                created: 100,
                initialized: Some(250),
                started: Some(300),
                exited: Some(400),
                ..Instants::default()
            }
        );
        // No event log: the state alone; a state without a finish takes the died event.
        assert_eq!(merge(state, None), state);
        let (running, _) = parse_inspect("100 300 -6795364578871345152").unwrap();
        assert_eq!(merge(running, events).exited, Some(410));
    }

    #[test]
    fn image_references_match_as_the_engine_writes_them() {
        assert!(same_image("localhost/app:1", "app:1"));
        assert!(same_image("docker.io/library/alpine:latest", "alpine"));
        assert!(same_image("127.0.0.1:5000/t/app:1", "127.0.0.1:5000/t/app:1"));
        assert!(!same_image("127.0.0.1:5000/t/app:1", "127.0.0.1:5000/t/app:2"));
        assert!(!same_image("localhost/app", "app:1"));
    }

    #[test]
    fn inspect_is_the_last_line_and_after_1970() {
        let both = Instants {
            created: 1765148400123456789,
            started: Some(1765148400234567890),
            ..Instants::default()
        };
        assert_eq!(
            parse_inspect("1765148400123456789 1765148400234567890\n"),
            Some((both, None))
        );
        let exited = parse_inspect("1765148400123456789 1765148400234567890 1765148400334567890");
        assert_eq!(exited.unwrap().0.exited, Some(1765148400334567890));
        assert_eq!(
            parse_inspect("WARN[0000] a warning\n1765148400123456789 1765148400234567890"),
            Some((both, None))
        );
        let never_started = parse_inspect("1765148400123456789 -6795364578871345152").unwrap();
        assert_eq!(never_started.0.started, None);
        assert_eq!(parse_inspect("-6795364578871345152 1"), None);
        assert_eq!(parse_inspect(""), None);
    }
}
