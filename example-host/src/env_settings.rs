//! How settings' values are written, alike in every module that has some
//! (`mail`, `signin`, `throttle`, …): a yes/no value and a lifetime are
//! written the same way everywhere. The settings themselves are declared
//! and read through `settings`.

use std::time::Duration;

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

/// A lifetime as Directus writes them: `15m`, `7d`, `3600s`, `1h`, `500ms`
/// or a number of milliseconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("\"{text}\" is not a duration (15m, 7d, 3600s, or milliseconds)"))?;
    let ms = match unit.trim() {
        "" | "ms" => n,
        "s" => n * 1_000,
        "m" => n * 60_000,
        "h" => n * 3_600_000,
        "d" => n * 86_400_000,
        "w" => n * 7 * 86_400_000,
        _ => {
            return Err(format!(
                "\"{text}\" is not a duration (15m, 7d, 3600s, or milliseconds)"
            ))
        }
    };
    if ms == 0 {
        return Err(format!("\"{text}\": a lifetime must be longer than 0"));
    }
    Ok(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_read_as_directus_writes_them() {
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_duration("2500"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5y").is_err());
        assert!(parse_duration("0").is_err());
    }

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
