//! Settings from environment variables, read alike by every module that
//! has some (`mail`, `signin`, `throttle`, …): a variable that is empty
//! counts as unset, and a yes/no value is written the same way everywhere.

/// The variable `name` of the process environment; `None` when it is unset
/// or empty.
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A yes/no value: `true`, `1`, `yes`, `on` or `false`, `0`, `no`, `off`,
/// nothing, in any case and trimmed; `None` when it is none of them.
pub fn bool_value(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

/// The yes/no value of the variable `name`; an error names the variable.
pub fn parse_bool(name: &str, text: &str) -> Result<bool, String> {
    bool_value(text).ok_or_else(|| {
        let other = text.trim().to_ascii_lowercase();
        format!("{name}={other}: use true or false")
    })
}

/// The variables `vars` as a source of settings' `from_lookup` (tests).
#[cfg(test)]
pub fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: std::collections::HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yes_and_no_are_written_alike_everywhere() {
        for yes in ["true", " TRUE ", "1", "yes", "On"] {
            assert_eq!(bool_value(yes), Some(true), "{yes}");
        }
        for no in ["false", "0", "no", "OFF", "", "  "] {
            assert_eq!(bool_value(no), Some(false), "{no}");
        }
        assert_eq!(bool_value("maybe"), None);
        assert_eq!(
            parse_bool("X_ENABLED", " Maybe "),
            Err("X_ENABLED=maybe: use true or false".to_string())
        );
    }
}
