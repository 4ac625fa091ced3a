//! The logger handed to each extension: its lines come out in the host's
//! log with the extension id as target.

use abi_stable::std_types::RStr;
use host_sdk::abi::HostLogger;
use log::Level;

#[derive(Clone)]
pub struct ExtLogger {
    id: String,
}

impl ExtLogger {
    pub fn new(id: &str) -> Self {
        Self { id: id.to_string() }
    }
}

impl HostLogger for ExtLogger {
    fn log(&self, level: u8, _target: RStr<'_>, message: RStr<'_>) {
        let level = match level {
            1 => Level::Error,
            2 => Level::Warn,
            3 => Level::Info,
            4 => Level::Debug,
            _ => Level::Trace,
        };
        // The host names the target, so an extension cannot log as another.
        log::logger().log(
            &log::Record::builder()
                .level(level)
                .target(&self.id)
                .args(format_args!("{}", message.as_str()))
                .build(),
        );
    }
}
