//! How deeply a JSON body nests, found by scanning its bytes (no tree, no
//! allocation), so a route's depth rule is checked before anything parses
//! the body.

/// Whether `body` nests arrays and objects deeper than `max` levels.
/// Brackets inside strings do not count; a malformed body is left to the
/// parser to refuse.
pub fn exceeds(body: &[u8], max: u32) -> bool {
    let mut depth = 0u32;
    let mut in_string = false;
    let mut escaped = false;
    for &b in body {
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
    use super::exceeds;

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
