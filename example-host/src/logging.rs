//! The host's log: `LOG_LEVEL` or `RUST_LOG` (default `info`), to stderr.

use crate::settings::{declare, Env};

declare! {
    section "First start and log";
    /// What is logged, as `env_logger` reads it. At `info` every request is
    /// logged once under the target `access` (`GET /svc/videos?limit=5 200
    /// 1.2ms 5321B`: method, path and query with any `access_token`
    /// hidden, status, duration, bytes of the answer);
    /// `LOG_LEVEL=info,access=warn` silences that line alone.
    LOG_LEVEL: "LOG_LEVEL" = "info";
    /// Read in place of `LOG_LEVEL` when set.
    RUST_LOG: "RUST_LOG";
}

/// The log's filter.
pub fn filter(env: &Env) -> String {
    RUST_LOG
        .get(env)
        .or_else(|| LOG_LEVEL.get(env))
        .unwrap_or_default()
}

pub fn init(env: &Env) {
    let _ = env_logger::Builder::new()
        .parse_filters(&filter(env))
        .format_timestamp_millis()
        .try_init();
}
