//! A run's processes as procfs shows them: /proc/PID/stat and the kernel's
//! per-thread children lists. Read-only; killing and reaping are `tree`'s.

/// Parse the fields we need from /proc/PID/stat. The comm field may hold spaces
/// and parentheses, so split after the last ')'.
pub fn parse_stat(text: &str) -> Option<(i32, Vec<&str>)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let fields: Vec<&str> = text.get(close + 2..)?.split_whitespace().collect();
    Some((pid, fields))
}

/// Children of every thread of `pid` ("self" allowed).
fn children_of(pid: &str) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut kids = Vec::new();
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            kids.extend(text.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
        }
    }
    kids
}

/// Running (not a zombie waiting to be reaped, not dead).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| parse_stat(&t).map(|(_, f)| f.first().is_some_and(|s| *s != "Z" && *s != "X")))
        .unwrap_or(false)
}

/// Every live process of the run rooted at `root`: root and its descendants, and
/// the subtrees reparented to coldstart (whose only children are run processes).
pub fn members(root: i32) -> Vec<i32> {
    let mut stack = children_of("self");
    stack.push(root);
    live_below(stack)
}

/// coldstart's own children (orphans reparented to it included), live or not.
pub fn children_of_self() -> Vec<i32> {
    children_of("self")
}

/// Every live descendant of coldstart (its targets and, through the subreaper
/// attribute, their orphans).
pub fn members_of_self() -> Vec<i32> {
    live_below(children_of("self"))
}

/// The live processes among `stack` and their descendants.
fn live_below(mut stack: Vec<i32>) -> Vec<i32> {
    let mut seen = std::collections::HashSet::new();
    let mut live = Vec::new();
    while let Some(pid) = stack.pop() {
        if !seen.insert(pid) {
            continue;
        }
        if alive(pid) {
            live.push(pid);
        }
        stack.extend(children_of(&pid.to_string()));
    }
    live
}

/// When `pid` started (clock ticks after boot): with the pid it names one
/// process for good, so a reused pid does not pass for a dead one.
pub fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, fields) = parse_stat(&stat)?;
    // Field 22 of proc_pid_stat(5); `fields` starts at field 3.
    fields.get(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_odd_comm() {
        let (pid, f) = parse_stat("42 (a) b (c)) S 7 42 42 0").unwrap();
        assert_eq!(pid, 42);
        assert_eq!(&f[..3], ["S", "7", "42"]);
    }
}
