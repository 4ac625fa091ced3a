//! The load driver: `concurrency` workers on tokio, each with its own
//! keep-alive HTTP/1.1 connection (hyper), sending requests back to back;
//! latencies of the measured window go into an HDR histogram.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// One request to send.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: Method,
    pub path: String,
    /// The `Authorization` header, when authenticated.
    pub auth: Option<HeaderValue>,
    pub body: Option<Bytes>,
    /// A non-2xx status that is an expected answer, not an error (the 400
    /// of a like racing another).
    pub tolerated: Option<u16>,
    /// Other headers (a `Range`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The one status every answer must have (the 206 of a range): any
    /// other, 2xx included, is an error.
    pub expected: Option<u16>,
}

impl Req {
    pub fn new(method: Method, path: impl Into<String>) -> Self {
        Self {
            method,
            path: path.into(),
            auth: None,
            body: None,
            tolerated: None,
            headers: Vec::new(),
            expected: None,
        }
    }

    pub fn get(path: impl Into<String>) -> Self {
        Self::new(Method::GET, path)
    }

    pub fn token(mut self, token: &str) -> Self {
        self.auth = HeaderValue::from_str(&format!("Bearer {token}")).ok();
        self
    }

    pub fn body(mut self, body: Bytes) -> Self {
        self.body = Some(body);
        self
    }

    pub fn tolerate(mut self, status: u16) -> Self {
        self.tolerated = Some(status);
        self
    }

    /// Adds a header (a name and value the caller knows are valid).
    pub fn header(mut self, name: HeaderName, value: &'static str) -> Self {
        self.headers.push((name, HeaderValue::from_static(value)));
        self
    }

    /// Every answer must have `status`.
    pub fn expect(mut self, status: u16) -> Self {
        self.expected = Some(status);
        self
    }
}

/// Makes the `iteration`-th request of worker `worker`.
pub type Source = Arc<dyn Fn(usize, u64) -> Req + Send + Sync>;

/// How to drive one scenario.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub concurrency: usize,
    pub warmup: Duration,
    pub measure: Duration,
    /// Requests come in pairs (like, unlike): a worker always completes a
    /// pair, after the window if need be (not measured).
    pub paired: bool,
    /// Threads of the load client; `None` for one per core. Comparisons
    /// with figures measured by `wrk -t1` use one, as wrk did.
    pub client_threads: Option<usize>,
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Requests started in the measured window.
    pub requests: u64,
    pub window: Duration,
    /// Latencies in microseconds.
    pub histogram: Histogram<u64>,
    /// Unexpected statuses and transport errors, over the whole run
    /// (warm-up included).
    pub errors: u64,
    /// Expected non-2xx answers (see [`Req::tolerated`]).
    pub tolerated: u64,
    /// Answers received over the whole run (warm-up and the completion of
    /// pairs included): what the hosts served.
    pub answers: u64,
    /// Mean answer size in bytes.
    pub mean_bytes: f64,
    pub first_error: Option<String>,
}

impl Outcome {
    pub fn throughput(&self) -> f64 {
        self.requests as f64 / self.window.as_secs_f64().max(1e-9)
    }

    pub fn p50_ms(&self) -> f64 {
        self.histogram.value_at_quantile(0.5) as f64 / 1000.0
    }

    pub fn p99_ms(&self) -> f64 {
        self.histogram.value_at_quantile(0.99) as f64 / 1000.0
    }
}

/// Longest a single request may take before it counts as a transport error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest a worker may take to complete its pair after the window.
const PAIR_GRACE: Duration = Duration::from_secs(10);

fn histogram() -> Result<Histogram<u64>, String> {
    Histogram::new_with_bounds(1, 120_000_000, 3).map_err(|e| format!("histogram: {e}"))
}

/// `127.0.0.1:port` of `http://127.0.0.1:port`.
fn authority(base: &str) -> Result<String, String> {
    let rest = base
        .strip_prefix("http://")
        .ok_or_else(|| format!("{base}: only http:// is supported"))?;
    Ok(rest.trim_end_matches('/').to_string())
}

/// Drives `source` against the host at `base` and measures it.
pub fn run(base: &str, load: Load, source: Source) -> Result<Outcome, String> {
    run_across(&[base], load, source)
}

/// Drives `source` against several hosts of one platform, as a balancer
/// spreading connections would: worker `w` talks to host `w % n`.
pub fn run_across(bases: &[&str], load: Load, source: Source) -> Result<Outcome, String> {
    if bases.is_empty() {
        return Err("no host to drive".into());
    }
    let authorities = bases
        .iter()
        .map(|b| authority(b))
        .collect::<Result<Vec<_>, _>>()?;
    // A runtime per run: nothing of the driver runs between scenarios.
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = load.client_threads {
        builder.worker_threads(threads.max(1));
    }
    let runtime = builder
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(async move {
        let started = Instant::now();
        let warm_end = started + load.warmup;
        let end = warm_end + load.measure;
        let tasks: Vec<_> = (0..load.concurrency.max(1))
            .map(|w| {
                let worker = Worker {
                    id: w,
                    authority: authorities[w % authorities.len()].clone(),
                    source: source.clone(),
                    paired: load.paired,
                    warm_end,
                    end,
                };
                tokio::spawn(worker.run())
            })
            .collect();
        let mut total = Tally::new()?;
        for task in tasks {
            let tally = task
                .await
                .map_err(|e| format!("load worker failed: {e}"))??;
            total.merge(tally)?;
        }
        let window = Instant::now().min(end).saturating_duration_since(warm_end);
        Ok(Outcome {
            requests: total.histogram.len(),
            window: window.max(Duration::from_millis(1)),
            answers: total.answers,
            mean_bytes: total.bytes as f64 / total.answers.max(1) as f64,
            histogram: total.histogram,
            errors: total.errors,
            tolerated: total.tolerated,
            first_error: total.first_error,
        })
    })
}

/// One worker's counts.
struct Tally {
    histogram: Histogram<u64>,
    errors: u64,
    tolerated: u64,
    bytes: u64,
    answers: u64,
    first_error: Option<String>,
}

impl Tally {
    fn new() -> Result<Self, String> {
        Ok(Self {
            histogram: histogram()?,
            errors: 0,
            tolerated: 0,
            bytes: 0,
            answers: 0,
            first_error: None,
        })
    }

    fn error(&mut self, what: String) {
        self.errors += 1;
        self.first_error.get_or_insert(what);
    }

    fn merge(&mut self, other: Tally) -> Result<(), String> {
        self.histogram
            .add(&other.histogram)
            .map_err(|e| format!("merging histograms: {e}"))?;
        self.errors += other.errors;
        self.tolerated += other.tolerated;
        self.bytes += other.bytes;
        self.answers += other.answers;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        Ok(())
    }
}

struct Worker {
    id: usize,
    authority: String,
    source: Source,
    paired: bool,
    warm_end: Instant,
    end: Instant,
}

type Sender = SendRequest<Full<Bytes>>;

async fn connect(authority: &str) -> Result<Sender, String> {
    let stream = TcpStream::connect(authority)
        .await
        .map_err(|e| format!("connect {authority}: {e}"))?;
    stream
        .set_nodelay(true)
        .map_err(|e| format!("TCP_NODELAY: {e}"))?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake: {e}"))?;
    tokio::spawn(async move {
        // Ends when the sender is dropped or the host closes the connection;
        // a failure shows up as an error of the next request.
        let _ = connection.await;
    });
    Ok(sender)
}

/// What the driver keeps of an answer: its size and the first bytes (for
/// the message of an unexpected status).
struct Answer {
    status: u16,
    len: usize,
    head: Vec<u8>,
}

/// How much of an answer is kept for an error message.
const HEAD_BYTES: usize = 200;

/// Sends one request and reads the whole answer. Frames are counted as they
/// arrive, not gathered: copying a multi-megabyte answer into one buffer
/// would be the driver's cost, paid on the cores the host runs on.
async fn send(sender: &mut Sender, authority: &str, req: &Req) -> Result<Answer, String> {
    let mut builder = Request::builder()
        .method(req.method.clone())
        .uri(req.path.as_str())
        .header(HOST, authority);
    if let Some(auth) = &req.auth {
        builder = builder.header(AUTHORIZATION, auth.clone());
    }
    for (name, value) in &req.headers {
        builder = builder.header(name, value.clone());
    }
    let body = match &req.body {
        Some(b) => {
            builder = builder.header(CONTENT_TYPE, "application/json");
            Full::new(b.clone())
        }
        None => Full::new(Bytes::new()),
    };
    let request = builder
        .body(body)
        .map_err(|e| format!("building the request: {e}"))?;
    sender
        .ready()
        .await
        .map_err(|e| format!("connection: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("sending: {e}"))?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let (mut len, mut head) = (0, Vec::new());
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("reading the answer: {e}"))?;
        if let Ok(data) = frame.into_data() {
            len += data.len();
            let room = HEAD_BYTES.saturating_sub(head.len()).min(data.len());
            head.extend_from_slice(&data[..room]);
        }
    }
    Ok(Answer { status, len, head })
}

impl Worker {
    async fn run(self) -> Result<Tally, String> {
        let mut tally = Tally::new()?;
        let mut sender: Option<Sender> = None;
        let mut iteration = 0u64;
        loop {
            let now = Instant::now();
            let pair_open = self.paired && iteration % 2 == 1;
            if now >= self.end && (!pair_open || now >= self.end + PAIR_GRACE) {
                break;
            }
            let measuring = now >= self.warm_end && now < self.end;
            let req = (self.source)(self.id, iteration);
            iteration += 1;
            let conn = match sender.as_mut() {
                Some(s) => s,
                None => match connect(&self.authority).await {
                    Ok(s) => sender.insert(s),
                    Err(e) => {
                        tally.error(e);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                },
            };
            let started = Instant::now();
            let answer =
                tokio::time::timeout(REQUEST_TIMEOUT, send(conn, &self.authority, &req)).await;
            let elapsed = started.elapsed();
            let Answer { status, len, head } = match answer {
                Ok(Ok(answer)) => answer,
                Ok(Err(e)) => {
                    sender = None;
                    tally.error(format!("{} {}: {e}", req.method, req.path));
                    continue;
                }
                Err(_) => {
                    sender = None;
                    tally.error(format!("{} {}: timed out", req.method, req.path));
                    continue;
                }
            };
            if measuring {
                let micros = (elapsed.as_micros() as u64).max(1);
                tally.histogram.saturating_record(micros);
            }
            tally.bytes += len as u64;
            tally.answers += 1;
            if req
                .expected
                .map_or((200..300).contains(&status), |e| e == status)
            {
                continue;
            }
            if req.tolerated == Some(status) {
                tally.tolerated += 1;
                continue;
            }
            let excerpt = String::from_utf8_lossy(&head);
            tally.error(format!("{} {}: {status} {excerpt}", req.method, req.path));
        }
        Ok(tally)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authority_of_a_base_url() {
        assert_eq!(
            authority("http://127.0.0.1:8055").as_deref(),
            Ok("127.0.0.1:8055")
        );
        assert!(authority("https://x").is_err());
    }

    #[test]
    fn requests_carry_a_bearer_token() {
        let r = Req::get("/svc/stats").token("t").tolerate(400);
        assert_eq!(
            r.auth.as_ref().and_then(|h| h.to_str().ok()),
            Some("Bearer t")
        );
        assert_eq!(r.tolerated, Some(400));
        let r = Req::get("/assets/x")
            .header(hyper::header::RANGE, "bytes=0-9")
            .expect(206);
        assert_eq!(r.headers.len(), 1);
        assert_eq!(r.expected, Some(206));
    }
}
