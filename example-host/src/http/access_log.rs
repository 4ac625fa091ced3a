//! One line per request at `info`, under the log target `access` (so that
//! `LOG_LEVEL=info,access=warn` silences it alone): method, path with the
//! query but never its credentials, status, duration and the bytes of the
//! answer.

use std::time::Instant;

use axum::body::HttpBody as _;
use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;

/// The log target of the access log.
pub const TARGET: &str = "access";

/// The layer: logs each request once its answer's head is ready.
pub async fn log_requests(request: Request, next: Next) -> Response {
    if !log::log_enabled!(target: TARGET, log::Level::Info) {
        return next.run(request).await;
    }
    let started = Instant::now();
    let method = request.method().clone();
    let target = without_credentials(request.uri());
    let response = next.run(request).await;
    let bytes = response
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .or_else(|| response.body().size_hint().exact());
    let bytes = bytes.map_or_else(|| "-".to_string(), |n| format!("{n}B"));
    log::info!(
        target: TARGET,
        "{method} {target} {} {:.1}ms {bytes}",
        response.status().as_u16(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    response
}

/// The path and query of `uri` with the value of every parameter that
/// carries a token hidden, under any spelling of its name the credentials
/// are read from (`access%5Ftoken`: see `super::is_token_pair`).
fn without_credentials(uri: &axum::http::Uri) -> String {
    let path = uri.path();
    let Some(query) = uri.query() else {
        return path.to_string();
    };
    let query: Vec<String> = query
        .split('&')
        .map(|pair| {
            if super::is_token_pair(pair) {
                let name = pair.split_once('=').map_or(pair, |(name, _)| name);
                format!("{name}=***")
            } else {
                pair.to_string()
            }
        })
        .collect();
    format!("{path}?{}", query.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_the_query_are_hidden() {
        let uri: axum::http::Uri = "/svc/videos?limit=5&access_token=secret&page=2"
            .parse()
            .unwrap();
        assert_eq!(
            without_credentials(&uri),
            "/svc/videos?limit=5&access_token=***&page=2"
        );
        // Every spelling the credentials are read from.
        let encoded: axum::http::Uri =
            "/svc/videos?access%5Ftoken=one&%61ccess_token=two&access_token"
                .parse()
                .unwrap();
        assert_eq!(
            without_credentials(&encoded),
            "/svc/videos?access%5Ftoken=***&%61ccess_token=***&access_token=***"
        );
        let plain: axum::http::Uri = "/server/ping".parse().unwrap();
        assert_eq!(without_credentials(&plain), "/server/ping");
    }
}
