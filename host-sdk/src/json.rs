//! JSON text inspected without building it into a tree: how deeply it
//! nests (the host checks a route's depth rule with it before anything
//! parses a body; an extension checks a field it passes on as text).

/// Whether `text` nests arrays and objects deeper than `max` levels, found
/// by scanning its bytes (no tree, no allocation). Brackets inside strings
/// do not count; malformed JSON is left to a parser to refuse.
pub fn nests_deeper_than(text: &[u8], max: u32) -> bool {
    let mut depth = 0u32;
    let mut in_string = false;
    let mut escaped = false;
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::nests_deeper_than as exceeds;

    #[test]
    fn counts_nesting_of_arrays_and_objects() {
        assert!(!exceeds(br#"{"a":[1,{"b":2}]}"#, 3));
        assert!(exceeds(br#"{"a":[1,{"b":2}]}"#, 2));
        assert!(!exceeds(b"[][][]", 1));
        assert!(!exceeds(b"", 0));
        assert!(exceeds(b"[", 0));
    }

    #[test]
    fn brackets_in_strings_do_not_count() {
        assert!(!exceeds(br#"{"a":"[[[[{{{{"}"#, 1));
        assert!(!exceeds(br#"{"a":"\"[[[["}"#, 1));
        assert!(!exceeds(br#"["\\",[]]"#, 2));
        assert!(exceeds(br#"["\\",[[]]]"#, 2));
    }

    #[test]
    fn a_hostile_depth_is_found_at_its_first_excess() {
        let deep = "[".repeat(100_000);
        assert!(exceeds(deep.as_bytes(), 32));
        let shallow = format!("[{}]", "1,".repeat(100_000) + "1");
        assert!(!exceeds(shallow.as_bytes(), 1));
    }
}
