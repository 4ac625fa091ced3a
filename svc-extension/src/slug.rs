//! The slug rule (docs/service-api.md create rule 3; docs/decisions.md §7):
//! Unicode lower-casing as JavaScript's `toLowerCase`, each run of characters
//! outside `a-z0-9` replaced by one `-`, leading and trailing `-` removed.

pub fn slugify(title: &str) -> String {
    let lower = title.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut gap = false;
    for c in lower.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if gap && !out.is_empty() {
                out.push('-');
            }
            gap = false;
            out.push(c);
        } else {
            gap = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::slugify;

    #[test]
    fn runs_collapse_and_edges_are_trimmed() {
        assert_eq!(slugify("Hello, World!"), "hello-world");
        assert_eq!(slugify("  --Slow   Build--  "), "slow-build");
        assert_eq!(slugify("A_B__C"), "a-b-c");
        assert_eq!(slugify("Track 01 (live)"), "track-01-live");
    }

    #[test]
    fn non_ascii_letters_are_separators_after_lowercasing() {
        assert_eq!(slugify("Crème Brûlée"), "cr-me-br-l-e");
        assert_eq!(slugify("ÀB"), "b");
        assert_eq!(slugify("日本語"), "");
        // U+0130 lower-cases to "i̇" (i + combining dot): the i survives.
        assert_eq!(slugify("İstanbul"), "i-stanbul");
    }
}
