//! A blocking HTTP client for setting up data (bulk imports, lookups), with
//! errors returned, never panics: the load itself goes through `driver`.

use std::time::Duration;

use platform_tests::exchange;
use serde_json::Value;

/// The most items a host accepts in one array create by default
/// (`MAX_BATCH_MUTATION`): imports send at most this many per request.
pub use platform_tests::MAX_BATCH;

/// Talks to one host over keep-alive.
pub struct Api {
    base: String,
    agent: ureq::Agent,
}

/// The first characters of an answer, for error messages.
fn excerpt(body: &str) -> String {
    body.chars().take(300).collect()
}

impl Api {
    pub fn new(base: &str) -> Self {
        Self {
            base: base.trim_end_matches('/').to_string(),
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(600))
                .build(),
        }
    }

    /// Sends a request and returns the JSON answer of a 2xx status.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
    ) -> Result<Value, String> {
        let (status, text) = exchange(&self.agent, &self.base, method, path, token, body)?;
        if !(200..300).contains(&status) {
            return Err(format!("{method} {path}: {status} {}", excerpt(&text)));
        }
        if text.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| {
            format!(
                "{method} {path}: answer is not JSON ({e}): {}",
                excerpt(&text)
            )
        })
    }

    pub fn get(&self, path: &str, token: Option<&str>) -> Result<Value, String> {
        self.send("GET", path, token, None)
    }

    pub fn post(&self, path: &str, token: Option<&str>, body: &[u8]) -> Result<Value, String> {
        self.send("POST", path, token, Some(body))
    }
}
