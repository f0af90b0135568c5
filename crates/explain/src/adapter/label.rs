//! Labels for people: a class source's path or jar name, elided to fit a column.

/// `text` in at most `max` terminal columns: a longer one keeps its start and its
/// end (where a path's or a jar's name says the most) around a `…`.
pub fn elide_middle(text: &str, max: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let width = |s: &str| unicode_width::UnicodeWidthStr::width(s);
    if width(text) <= max {
        return text.to_string();
    }
    let room = max.saturating_sub(1);
    // The end gets the larger half: it holds the file name and its version.
    let (mut head_w, mut tail_w) = (room / 2, room - room / 2);
    let mut head = String::new();
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if w > head_w {
            break;
        }
        head_w -= w;
        head.push(c);
    }
    tail_w += head_w;
    let mut tail: Vec<char> = Vec::new();
    for c in text.chars().rev() {
        let w = c.width().unwrap_or(0);
        if w > tail_w {
            break;
        }
        tail_w -= w;
        tail.push(c);
    }
    tail.reverse();
    format!("{head}…{}", tail.into_iter().collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elides_the_middle_to_a_width() {
        assert_eq!(elide_middle("short", 10), "short");
        let long = format!("app.jar!BOOT-INF/lib/{}-1.0.jar", "x".repeat(1000));
        let e = elide_middle(&long, 40);
        assert_eq!(unicode_width::UnicodeWidthStr::width(e.as_str()), 40, "{e}");
        assert!(
            e.starts_with("app.jar!BOOT-INF/") && e.ends_with("x-1.0.jar"),
            "{e}"
        );
        // Wide characters count for two columns.
        let wide = elide_middle(&"漢".repeat(30), 11);
        assert!(
            unicode_width::UnicodeWidthStr::width(wide.as_str()) <= 11,
            "{wide}"
        );
    }
}
