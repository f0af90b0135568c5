//! Finding what a run left behind: processes by an environment marker, and the
//! cgroup directories coldstart made.

/// A unique marker to put in a target's environment.
pub fn marker(tag: &str) -> String {
    format!(
        "COLDSTART_TEST_MARKER={tag}-{}-{}",
        std::process::id(),
        rand_suffix()
    )
}

fn rand_suffix() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64
        % 1_000_000_007
}

/// Live (non-zombie) processes whose environment holds `marker` (KEY=VALUE).
pub fn processes_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()) {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = state
                .rfind(')')
                .map(|i| state[i + 2..].starts_with('Z'))
                .unwrap_or(false);
            if !zombie {
                found.push(pid);
            }
        }
    }
    found
}

/// The cgroup directories coldstart made that a process is in, from that process's
/// /proc/PID/cgroup text (a `coldstart-…` component in the path), each with its
/// `coldstart-…` ancestors: resolved through the mount table, so the names are
/// the run's own.
pub fn coldstart_cgroup_dirs(own: &str) -> Vec<std::path::PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").expect("read /proc/self/mountinfo");
    let mut dirs = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if !path.contains("/coldstart-") {
            continue;
        }
        // The mount of this hierarchy: cgroup2 for "0::", else the v1 mount
        // whose options name one of the controllers.
        let mount = mountinfo.lines().find_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let pre: Vec<&str> = pre.split_whitespace().collect();
            let post: Vec<&str> = post.split_whitespace().collect();
            let fits = if ctrls.is_empty() {
                post.first() == Some(&"cgroup2")
            } else {
                post.first() == Some(&"cgroup")
                    && post
                        .get(2)
                        .is_some_and(|o| o.split(',').any(|c| ctrls.split(',').any(|x| x == c)))
            };
            fits.then(|| (pre[3].to_string(), pre[4].to_string()))
        });
        let Some((root, mp)) = mount else { continue };
        let rel = path
            .strip_prefix(root.as_str())
            .unwrap_or(path)
            .trim_start_matches('/');
        // The first coldstart-… directory and every one below it, down to the leaf.
        let comps: Vec<&str> = rel.split('/').collect();
        let Some(first) = comps.iter().position(|c| c.starts_with("coldstart-")) else {
            continue;
        };
        for end in first..comps.len() {
            let dir = std::path::Path::new(&mp).join(comps[..=end].join("/"));
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    dirs
}
