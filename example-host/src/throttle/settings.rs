//! Throttle settings, from the environment: Directus's `RATE_LIMITER_*`
//! and `IP_TRUST_PROXY`, and this host's `LOGIN_THROTTLE_*` and
//! `ASSETS_TRANSFORM_THROTTLE_*`.

use std::time::Duration;

use crate::env_settings::parse_bool;
use crate::settings::{declare, Env, Setting};

declare! {
    section "Throttling";
    /// Directus's rate limiter: on, each client address may make `POINTS`
    /// requests per `DURATION`, then gets 429 (see
    /// [Throttling](#throttling)).
    RATE_LIMITER_ENABLED: "RATE_LIMITER_ENABLED" = "false";
    /// Requests per client address per window.
    RATE_LIMITER_POINTS: "RATE_LIMITER_POINTS" = "50";
    /// The window, in seconds.
    RATE_LIMITER_DURATION: "RATE_LIMITER_DURATION" = "1";
    /// Where the rate limiter counts: `memory`, or `database` (shared by
    /// every host on it).
    RATE_LIMITER_STORE: "RATE_LIMITER_STORE" = "memory";
    /// The sign-in throttle: sign-in attempts, password-reset requests and
    /// registrations per account (email) and per client address per
    /// window, then 429 (past the account's bound, an address that has not
    /// tried that account still gets one sign-in attempt; see
    /// [Throttling](#throttling)).
    LOGIN_THROTTLE_ENABLED: "LOGIN_THROTTLE_ENABLED" = "true";
    /// Attempts per account per window.
    LOGIN_THROTTLE_ACCOUNT_ATTEMPTS: "LOGIN_THROTTLE_ACCOUNT_ATTEMPTS" = "25";
    /// Attempts per client address per window.
    LOGIN_THROTTLE_ADDRESS_ATTEMPTS: "LOGIN_THROTTLE_ADDRESS_ATTEMPTS" = "100";
    /// The sign-in throttle's window, in seconds.
    LOGIN_THROTTLE_DURATION: "LOGIN_THROTTLE_DURATION" = "900";
    /// Where the sign-in throttle counts: `database` (shared by every host
    /// on it) or `memory`.
    LOGIN_THROTTLE_STORE: "LOGIN_THROTTLE_STORE" = "database";
    /// The throttle on image transformations not kept yet (so computed):
    /// each costs its caller a point, the user or, for a caller not signed
    /// in, the client address; past `POINTS` per `DURATION`, 429 (see
    /// [Throttling](#throttling)). Kept ones and originals cost nothing.
    ASSETS_TRANSFORM_THROTTLE_ENABLED: "ASSETS_TRANSFORM_THROTTLE_ENABLED" = "true";
    /// Transformations per caller per window.
    ASSETS_TRANSFORM_THROTTLE_POINTS: "ASSETS_TRANSFORM_THROTTLE_POINTS" = "100";
    /// The transformation throttle's window, in seconds.
    ASSETS_TRANSFORM_THROTTLE_DURATION: "ASSETS_TRANSFORM_THROTTLE_DURATION" = "60";
    /// `memory`: each host bounds the work it does itself; `database`: the
    /// hosts on one database count together.
    ASSETS_TRANSFORM_THROTTLE_STORE: "ASSETS_TRANSFORM_THROTTLE_STORE" = "memory";
    /// `false`: the client address is the connection's peer; `true`: the
    /// last address of `X-Forwarded-For`, the one a proxy in front appended
    /// (set it only behind one).
    IP_TRUST_PROXY: "IP_TRUST_PROXY" = "false";
}

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
    pub fn from_env(env: &Env) -> Result<Self, String> {
        // Every setting here has a default, so each reads as set.
        let flag = |s: Setting| parse_bool(s.env, &s.get(env).unwrap_or_default());
        let points = |s: Setting| parse_points(s.env, &s.get(env).unwrap_or_default());
        let seconds = |s: Setting| parse_seconds(s.env, &s.get(env).unwrap_or_default());
        let store = |s: Setting| parse_store(s.env, &s.get(env).unwrap_or_default());
        let requests = if flag(RATE_LIMITER_ENABLED)? {
            Some(RequestLimit {
                points: points(RATE_LIMITER_POINTS)?,
                duration: seconds(RATE_LIMITER_DURATION)?,
                store: store(RATE_LIMITER_STORE)?,
            })
        } else {
            None
        };
        let login = if flag(LOGIN_THROTTLE_ENABLED)? {
            Some(LoginLimit {
                account_attempts: points(LOGIN_THROTTLE_ACCOUNT_ATTEMPTS)?,
                address_attempts: points(LOGIN_THROTTLE_ADDRESS_ATTEMPTS)?,
                duration: seconds(LOGIN_THROTTLE_DURATION)?,
                store: store(LOGIN_THROTTLE_STORE)?,
            })
        } else {
            None
        };
        // Each host computes its own transformations: by default each
        // counts its own.
        let transforms = if flag(ASSETS_TRANSFORM_THROTTLE_ENABLED)? {
            Some(TransformLimit {
                points: points(ASSETS_TRANSFORM_THROTTLE_POINTS)?,
                duration: seconds(ASSETS_TRANSFORM_THROTTLE_DURATION)?,
                store: store(ASSETS_TRANSFORM_THROTTLE_STORE)?,
            })
        } else {
            None
        };
        Ok(Self {
            requests,
            login,
            transforms,
            trust_proxy: flag(IP_TRUST_PROXY)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> Result<Settings, String> {
        Settings::from_env(&Env::of(vars))
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
