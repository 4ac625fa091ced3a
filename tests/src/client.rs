//! A keep-alive HTTP client for load: its failures are values, not
//! panics, so a writer can go on, or stop when its host is killed.

use std::io::Read;
use std::time::Duration;

use serde_json::Value;

use crate::assert_no_secrets;

/// One answer (status, body), or the transport failure that replaced it.
pub type Answer = Result<(u16, String), String>;

/// A keep-alive client of one host.
pub struct Client {
    agent: ureq::Agent,
    base: String,
}

impl Client {
    pub fn new(base: &str) -> Self {
        Self {
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(60))
                .build(),
            base: base.to_string(),
        }
    }

    /// One request; every answer is checked by [`assert_no_secrets`].
    pub fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Answer {
        let body = body.map(Value::to_string);
        let (status, text) = exchange(
            &self.agent,
            &self.base,
            method,
            path,
            token,
            body.as_deref().map(str::as_bytes),
        )?;
        assert_no_secrets(method, path, &text);
        Ok((status, text))
    }
}

/// Sends one request to `base` + `path` over `agent` (a JSON body, a
/// bearer token): the answer's status and text whatever the status, or the
/// transport failure that replaced it (`{method} {path}: transport error …`).
pub fn exchange(
    agent: &ureq::Agent,
    base: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
) -> Answer {
    let response = send(agent, base, method, path, token, body)?;
    let status = response.status();
    Ok((status, read_text(method, path, response)?))
}

/// [`exchange`]'s request: the response whatever its status (its headers
/// still to read), or the transport failure that replaced it.
pub fn send(
    agent: &ureq::Agent,
    base: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
) -> Result<ureq::Response, String> {
    let headers = request_headers(token, body.is_some());
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    send_with(agent, base, method, path, &headers, body)
}

/// The headers of a request: the bearer token if any, and the JSON
/// content type when it carries a JSON body.
pub fn request_headers(token: Option<&str>, json_body: bool) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    if let Some(t) = token {
        headers.push(("Authorization", format!("Bearer {t}")));
    }
    if json_body {
        headers.push(("Content-Type", "application/json".to_string()));
    }
    headers
}

/// A request with exactly `headers`; the response whatever its status.
pub fn send_with(
    agent: &ureq::Agent,
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Result<ureq::Response, String> {
    let mut req = agent.request(method, &format!("{base}{path}"));
    for (name, value) in headers {
        req = req.set(name, value);
    }
    let result = match body {
        Some(b) => req.send_bytes(b),
        None => req.call(),
    };
    match result {
        Ok(r) => Ok(r),
        Err(ureq::Error::Status(_, r)) => Ok(r),
        Err(e) => Err(format!("{method} {path}: transport error {e}")),
    }
}

/// A response's whole text (`into_string` would stop at 10 MiB).
pub fn read_text(method: &str, path: &str, response: ureq::Response) -> Result<String, String> {
    let mut text = String::new();
    response
        .into_reader()
        .read_to_string(&mut text)
        .map_err(|e| format!("{method} {path}: reading the answer failed: {e}"))?;
    Ok(text)
}
