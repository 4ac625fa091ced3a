//! `platform-bench hit`: one request (a GET, or a POST of a file's body), driven against a server that is
//! already running (a host kept by `--keep`, under a profiler), with the
//! same driver and figures as the other benchmarks.

use std::sync::Arc;
use std::time::Duration;

use crate::driver::{self, Load, Req};

/// What to drive.
#[derive(Debug, Clone)]
pub struct Options {
    /// `http://127.0.0.1:port/path?query`.
    pub url: String,
    /// Sent as `Authorization: Bearer …`.
    pub token: Option<String>,
    /// A POST of this body (JSON) instead of a GET.
    pub body: Option<Vec<u8>>,
    pub concurrency: usize,
    pub measure: Duration,
}

/// The base and the path of `url`.
fn split(url: &str) -> Result<(&str, &str), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: only http:// URLs are supported"))?;
    let at = rest.find('/').map_or(url.len(), |i| i + "http://".len());
    let (base, path) = url.split_at(at);
    Ok((base, if path.is_empty() { "/" } else { path }))
}

pub fn run(opts: &Options) -> Result<(), String> {
    let (base, path) = split(&opts.url)?;
    let mut req = match &opts.body {
        Some(body) => Req::new(hyper::Method::POST, path).body(body.clone().into()),
        None => Req::get(path),
    };
    if let Some(token) = &opts.token {
        req = req.token(token);
    }
    let load = Load {
        concurrency: opts.concurrency,
        warmup: (opts.measure / 2).min(Duration::from_secs(2)),
        measure: opts.measure,
        paired: false,
        client_threads: Some(1),
    };
    let outcome = driver::run(base, load, Arc::new(move |_, _| req.clone()))?;
    println!(
        "{} {path}: {:.1} req/s, p50 {:.2} ms, p99 {:.2} ms, {:.1} KB an answer, errors {}{}",
        if opts.body.is_some() { "POST" } else { "GET" },
        outcome.throughput(),
        outcome.p50_ms(),
        outcome.p99_ms(),
        outcome.mean_bytes / 1000.0,
        outcome.errors,
        outcome
            .first_error
            .as_deref()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_splits_into_its_base_and_path() {
        assert_eq!(
            split("http://127.0.0.1:8055/items/videos?limit=5"),
            Ok(("http://127.0.0.1:8055", "/items/videos?limit=5"))
        );
        assert_eq!(
            split("http://127.0.0.1:8055"),
            Ok(("http://127.0.0.1:8055", "/"))
        );
        assert!(split("https://example.com/").is_err());
    }
}
