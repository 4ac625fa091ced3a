//! The bridge from the extension's `log` facade to the host's logger.
//!
//! A cdylib carries its own copy of the `log` crate and so its own global
//! logger; without this bridge an extension's log lines would vanish.

use abi_stable::std_types::RStr;
use log::{LevelFilter, Log, Metadata, Record};

use crate::abi::HostLogger_TO;

struct Bridge {
    target: String,
    host: HostLogger_TO<abi_stable::std_types::RArc<()>>,
}

impl Log for Bridge {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let message = record.args().to_string();
        self.host.log(
            record.level() as u8,
            RStr::from_str(&self.target),
            RStr::from_str(&message),
        );
    }

    fn flush(&self) {}
}

fn level_filter(level: u8) -> LevelFilter {
    match level {
        0 => LevelFilter::Off,
        1 => LevelFilter::Error,
        2 => LevelFilter::Warn,
        3 => LevelFilter::Info,
        4 => LevelFilter::Debug,
        _ => LevelFilter::Trace,
    }
}

/// Installs the bridge (once per library) and routes panic messages through it.
pub(crate) fn install(
    target: &str,
    host: HostLogger_TO<abi_stable::std_types::RArc<()>>,
    max_level: u8,
) {
    let bridge = Bridge {
        target: target.to_string(),
        host,
    };
    if log::set_boxed_logger(Box::new(bridge)).is_ok() {
        log::set_max_level(level_filter(max_level));
        // This library has its own copy of std, hence its own panic hook:
        // report panics in the host's log instead of bare stderr.
        std::panic::set_hook(Box::new(|info| {
            let location = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            log::error!("panic{location}: {message}");
        }));
    }
}
