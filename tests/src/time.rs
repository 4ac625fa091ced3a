//! Instants as the platform writes them (RFC 3339 UTC with milliseconds,
//! docs/decisions.md §6), without a date library.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// Milliseconds in a day.
pub const DAY_MS: f64 = 86_400_000.0;

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}

/// Milliseconds since the epoch of an RFC 3339 UTC timestamp
/// (`2026-11-22T10:00:00.000Z`, docs/decisions.md §6); panics on anything else.
pub fn ts_ms(v: &Value) -> i64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("timestamp is not a string: {v}"));
    let b = s.as_bytes();
    assert!(
        b.len() >= 20 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':',
        "not RFC 3339: {s}"
    );
    assert!(s.ends_with('Z') || s.ends_with("+00:00"), "not UTC: {s}");
    let num = |r: std::ops::Range<usize>| -> i64 {
        s[r].parse().unwrap_or_else(|_| panic!("not RFC 3339: {s}"))
    };
    let (y, mo, d) = (num(0..4), num(5..7), num(8..10));
    let (h, mi, sec) = (num(11..13), num(14..16), num(17..19));
    let mut ms = 0;
    if b[19] == b'.' {
        let frac: String = s[20..].chars().take_while(|c| c.is_ascii_digit()).collect();
        assert!(!frac.is_empty(), "not RFC 3339: {s}");
        let padded = format!("{frac:0<3}");
        ms = padded[..3].parse::<i64>().expect("millis");
    }
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = if y2 >= 0 { y2 } else { y2 - 399 } / 400;
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    ((days * 24 + h) * 60 + mi) * 60_000 + sec * 1000 + ms
}

/// RFC 3339 UTC with milliseconds of an epoch-millisecond instant.
pub fn iso(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

pub fn days_ago(days: f64) -> String {
    iso(now_ms() - (days * DAY_MS) as i64)
}

/// Polls `probe` every 50 ms until it answers `Ok` (then answers that),
/// for at most `within`; past it, panics naming `what` and the last
/// `Err` the probe gave.
pub fn eventually<T>(
    what: &str,
    within: std::time::Duration,
    mut probe: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = std::time::Instant::now() + within;
    loop {
        match probe() {
            Ok(value) => return value,
            Err(last) if std::time::Instant::now() >= deadline => {
                panic!("{what}: not within {within:?}; last: {last}")
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        for ms in [0, 951_782_400_123, 1_795_000_000_000, 4_102_444_799_999] {
            assert_eq!(ts_ms(&Value::String(iso(ms))), ms);
        }
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(951_782_400_123), "2000-02-29T00:00:00.123Z");
    }
}
