//! JSON text inspected without building it into a tree: how deeply it
//! nests (the host checks a route's depth rule with it before anything
//! parses a body; an extension checks a field it passes on as text).

/// Whether `text` nests arrays and objects deeper than `max` levels, found
/// by scanning its bytes (no tree, no allocation). Brackets inside strings
/// do not count; malformed JSON is left to a parser to refuse.
pub fn nests_deeper_than(text: &[u8], max: u32) -> bool {
    let mut depth = 0u32;
    let mut i = 0;
    while let Some(at) = next_token(text, i) {
        i = at + 1;
        match text[at] {
            b'"' => match string_end(text, i) {
                Some(end) => i = end,
                // Unterminated: left to the parser.
                None => return false,
            },
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            _ => depth = depth.saturating_sub(1),
        }
    }
    false
}

/// Bytes that matter outside strings: a quote or a bracket.
const TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    table[b'"' as usize] = true;
    table[b'[' as usize] = true;
    table[b']' as usize] = true;
    table[b'{' as usize] = true;
    table[b'}' as usize] = true;
    table
};

/// The position of the next quote or bracket from `from`. Bodies are
/// mostly strings, numbers and separators: a table lookup per byte, with
/// no branch on what the byte is until one matters.
fn next_token(text: &[u8], from: usize) -> Option<usize> {
    text.get(from..)?
        .iter()
        .position(|&b| TOKEN[b as usize])
        .map(|k| from + k)
}

/// Past the quote closing the string whose text starts at `from`, found
/// by jumping from quote or backslash to the next (`memchr`); `None` when
/// the string never ends.
fn string_end(text: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let k = memchr::memchr2(b'"', b'\\', text.get(from..)?)?;
        if text[from + k] == b'"' {
            return Some(from + k + 1);
        }
        // A backslash escapes the byte after it, whatever it is.
        from += k + 2;
    }
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

    /// The byte-at-a-time reading the scan must agree with.
    fn exceeds_bytewise(text: &[u8], max: u32) -> bool {
        let (mut depth, mut in_string, mut escaped) = (0u32, false, false);
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

    proptest::proptest! {
        #[test]
        fn agrees_with_the_bytewise_reading(
            text in proptest::collection::vec(
                proptest::sample::select(b"[]{}\"\\a1,: ".to_vec()),
                0..200,
            ),
            max in 0u32..6,
        ) {
            proptest::prop_assert_eq!(exceeds(&text, max), exceeds_bytewise(&text, max));
        }
    }

    #[test]
    fn a_hostile_depth_is_found_at_its_first_excess() {
        let deep = "[".repeat(100_000);
        assert!(exceeds(deep.as_bytes(), 32));
        let shallow = format!("[{}]", "1,".repeat(100_000) + "1");
        assert!(!exceeds(shallow.as_bytes(), 1));
    }
}
