//! Throttle settings, from the environment: Directus's `RATE_LIMITER_*`
//! and `IP_TRUST_PROXY`, and this host's `LOGIN_THROTTLE_*` and
//! `ASSETS_TRANSFORM_THROTTLE_*`.

use std::time::Duration;

use crate::env_settings::{env_var, parse_bool};

/// Where a limiter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// In this process: each host counts on its own, from zero at start.
    Memory,
    /// In the database's counters table: every host on the database
    /// counts into the same windows, which outlive a restart.
    Database,
}

/// Directus's rate limiter: `points` requests per client address per
/// `duration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestLimit {
    pub points: u32,
    pub duration: Duration,
    pub store: StoreKind,
}

/// The sign-in throttle: attempts per account and per client address per
/// `duration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginLimit {
    pub account_attempts: u32,
    pub address_attempts: u32,
    pub duration: Duration,
    pub store: StoreKind,
}

/// The throttle on first transformations: image transformations not kept
/// yet (so computed) per caller per `duration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransformLimit {
    pub points: u32,
    pub duration: Duration,
    pub store: StoreKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `None` unless `RATE_LIMITER_ENABLED` is true.
    pub requests: Option<RequestLimit>,
    /// `None` when `LOGIN_THROTTLE_ENABLED` is false.
    pub login: Option<LoginLimit>,
    /// `None` when `ASSETS_TRANSFORM_THROTTLE_ENABLED` is false.
    pub transforms: Option<TransformLimit>,
    /// `IP_TRUST_PROXY`: the client address is the last one of
    /// `X-Forwarded-For` (the one the proxy in front saw), not the peer's.
    pub trust_proxy: bool,
}

fn parse_points(name: &str, text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{name}={text}: use a whole number above 0")),
    }
}

/// A number of seconds, as Directus writes `RATE_LIMITER_DURATION`
/// (fractions allowed, at least a millisecond).
fn parse_seconds(name: &str, text: &str) -> Result<Duration, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if (0.001..=366.0 * 86_400.0).contains(&s) => {
            Ok(Duration::from_millis((s * 1000.0).round() as u64))
        }
        _ => Err(format!(
            "{name}={text}: use a number of seconds above 0 (at most a year)"
        )),
    }
}

fn parse_store(name: &str, text: &str) -> Result<StoreKind, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "memory" => Ok(StoreKind::Memory),
        "database" => Ok(StoreKind::Database),
        other => Err(format!(
            "{name}={other}: use memory, or database (shared by the hosts on one database)"
        )),
    }
}

impl Settings {
    /// From the process environment; an error names the variable.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(env_var)
    }

    /// From any source of variables (tests pass a map).
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let flag =
            |name: &str, default: bool| var(name).map_or(Ok(default), |v| parse_bool(name, &v));
        let points =
            |name: &str, default: u32| var(name).map_or(Ok(default), |v| parse_points(name, &v));
        let seconds = |name: &str, default: u64| {
            var(name).map_or(Ok(Duration::from_secs(default)), |v| {
                parse_seconds(name, &v)
            })
        };
        let store = |name: &str, default: StoreKind| {
            var(name).map_or(Ok(default), |v| parse_store(name, &v))
        };
        let requests = if flag("RATE_LIMITER_ENABLED", false)? {
            Some(RequestLimit {
                points: points("RATE_LIMITER_POINTS", 50)?,
                duration: seconds("RATE_LIMITER_DURATION", 1)?,
                store: store("RATE_LIMITER_STORE", StoreKind::Memory)?,
            })
        } else {
            None
        };
        let login = if flag("LOGIN_THROTTLE_ENABLED", true)? {
            Some(LoginLimit {
                account_attempts: points("LOGIN_THROTTLE_ACCOUNT_ATTEMPTS", 25)?,
                address_attempts: points("LOGIN_THROTTLE_ADDRESS_ATTEMPTS", 100)?,
                duration: seconds("LOGIN_THROTTLE_DURATION", 900)?,
                store: store("LOGIN_THROTTLE_STORE", StoreKind::Database)?,
            })
        } else {
            None
        };
        // Each host computes its own transformations: by default each
        // counts its own.
        let transforms = if flag("ASSETS_TRANSFORM_THROTTLE_ENABLED", true)? {
            Some(TransformLimit {
                points: points("ASSETS_TRANSFORM_THROTTLE_POINTS", 100)?,
                duration: seconds("ASSETS_TRANSFORM_THROTTLE_DURATION", 60)?,
                store: store("ASSETS_TRANSFORM_THROTTLE_STORE", StoreKind::Memory)?,
            })
        } else {
            None
        };
        Ok(Self {
            requests,
            login,
            transforms,
            trust_proxy: flag("IP_TRUST_PROXY", false)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env_settings::lookup;

    fn with(vars: &[(&str, &str)]) -> Result<Settings, String> {
        Settings::from_lookup(lookup(vars))
    }

    #[test]
    fn by_default_the_rate_limiter_is_off_and_sign_ins_are_throttled() {
        let s = with(&[]).unwrap();
        assert_eq!(s.requests, None);
        assert_eq!(
            s.login,
            Some(LoginLimit {
                account_attempts: 25,
                address_attempts: 100,
                duration: Duration::from_secs(900),
                store: StoreKind::Database,
            })
        );
        assert!(!s.trust_proxy);
        assert_eq!(
            s.transforms,
            Some(TransformLimit {
                points: 100,
                duration: Duration::from_secs(60),
                store: StoreKind::Memory,
            })
        );
    }

    #[test]
    fn the_rate_limiter_takes_directus_defaults() {
        let s = with(&[("RATE_LIMITER_ENABLED", "true")]).unwrap();
        assert_eq!(
            s.requests,
            Some(RequestLimit {
                points: 50,
                duration: Duration::from_secs(1),
                store: StoreKind::Memory,
            })
        );
        let s = with(&[
            ("RATE_LIMITER_ENABLED", "true"),
            ("RATE_LIMITER_POINTS", "3"),
            ("RATE_LIMITER_DURATION", "0.5"),
            ("RATE_LIMITER_STORE", "database"),
            ("LOGIN_THROTTLE_ENABLED", "false"),
            ("ASSETS_TRANSFORM_THROTTLE_ENABLED", "false"),
            ("IP_TRUST_PROXY", "true"),
        ])
        .unwrap();
        assert_eq!(s.transforms, None);
        assert_eq!(
            s.requests,
            Some(RequestLimit {
                points: 3,
                duration: Duration::from_millis(500),
                store: StoreKind::Database,
            })
        );
        assert_eq!(s.login, None);
        assert!(s.trust_proxy);
    }

    #[test]
    fn bad_values_name_their_variable() {
        for (name, value) in [
            ("RATE_LIMITER_POINTS", "0"),
            ("RATE_LIMITER_DURATION", "0"),
            ("RATE_LIMITER_DURATION", "soon"),
            ("RATE_LIMITER_STORE", "redis"),
        ] {
            let e = with(&[("RATE_LIMITER_ENABLED", "true"), (name, value)]).unwrap_err();
            assert!(e.starts_with(name), "{e}");
        }
        let e = with(&[("LOGIN_THROTTLE_ACCOUNT_ATTEMPTS", "-1")]).unwrap_err();
        assert!(e.starts_with("LOGIN_THROTTLE_ACCOUNT_ATTEMPTS"), "{e}");
        let e = with(&[("ASSETS_TRANSFORM_THROTTLE_POINTS", "0")]).unwrap_err();
        assert!(e.starts_with("ASSETS_TRANSFORM_THROTTLE_POINTS"), "{e}");
        let e = with(&[("LOGIN_THROTTLE_ENABLED", "maybe")]).unwrap_err();
        assert!(e.starts_with("LOGIN_THROTTLE_ENABLED"), "{e}");
    }
}
