//! The host's log: `LOG_LEVEL` or `RUST_LOG` (default `info`), to stderr.

pub fn init() {
    let filter = std::env::var("RUST_LOG")
        .or_else(|_| std::env::var("LOG_LEVEL"))
        .unwrap_or_else(|_| "info".into());
    let _ = env_logger::Builder::new()
        .parse_filters(&filter)
        .format_timestamp_millis()
        .try_init();
}
