//! `platform-bench assets`: files and assets on one host.
//!
//! On one host (svc loaded, the database of `--db`), with files uploaded
//! as the administrator (who reads them back):
//!
//! 1. the host's peak RSS through concurrent 100 MB uploads (multipart
//!    `POST /files`, each streamed by the client from a small block, so
//!    neither side needs to hold a file), against its idle RSS;
//! 2. requests per second of `GET /assets/:id` of a ~100 KB JPEG, of the
//!    same image transformed (`?width=320&format=webp`, requested once
//!    before the load, so the load reads the kept transformation) and of a
//!    1 MiB range of an 8 MB file (206), each against `GET /server/ping`
//!    of the same run (the same client and concurrency: the mean of a
//!    ping before and after them);
//! 3. the latency of the first request of a transformation of a
//!    4000×3000 JPEG (five widths, each asked for the first time: decoded,
//!    resized, encoded and kept) against the second (the kept one read).
//!
//! Every answer's status is checked (206 for the range, 200 otherwise) and
//! its length: the run fails on any other.

use std::io::{Cursor, Read};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::header::RANGE;
use platform_tests::multipart::Form;
use platform_tests::{Host, ADMIN_TOKEN};
use serde_json::Value;

use crate::driver::{self, Load, Req};
use crate::hosts;
use crate::report::{self, mb, Check, Row};
use crate::rng::Rng;
use crate::scenarios::{Class, Scenario};
use crate::stats::{ms, Samples};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Measured per row of the throughput table.
    pub measure: Duration,
    pub warmup: Duration,
    pub concurrency: usize,
    /// Concurrent uploads of the memory phase.
    pub uploads: usize,
    /// Bytes of each of them.
    pub upload_bytes: u64,
}

impl Options {
    pub fn new(measure: Duration) -> Self {
        Self {
            measure,
            warmup: Duration::from_secs(1),
            concurrency: 16,
            uploads: 8,
            // The host's default FILES_MAX_UPLOAD_SIZE.
            upload_bytes: 100_000_000,
        }
    }
}

/// The small image: a JPEG of about 100 KB.
const SMALL: (u32, u32) = (624, 468);
/// The large image, transformed for the first time.
const LARGE: (u32, u32) = (4000, 3000);
/// The file read by ranges, and the range.
const RANGED_BYTES: usize = 8_000_000;
const RANGE_LEN: f64 = 1_048_576.0;
/// Widths asked of the large image, each once for the first time.
const FIRST_WIDTHS: [u32; 5] = [800, 640, 960, 1024, 1280];
/// Largest growth of the host's RSS through the concurrent uploads, MB.
const UPLOAD_GROWTH_MB: f64 = 256.0;
/// How long the host is left alone before its idle RSS is read.
const SETTLE: Duration = Duration::from_secs(3);

/// A JPEG of `width` × `height`, the same bytes every run: a colour
/// gradient with noise, so that it compresses as a photograph does rather
/// than as a flat colour.
pub fn jpeg(width: u32, height: u32, seed: u64) -> Result<Vec<u8>, String> {
    let mut rng = Rng::new(seed);
    let (w, h) = (width.max(1) as u64, height.max(1) as u64);
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        let noise = rng.next_u64();
        let n = |shift: u32| (noise >> shift) & 0x1f;
        let (x, y) = (x as u64, y as u64);
        image::Rgb([
            ((x * 200 / w) + n(0)) as u8,
            ((y * 200 / h) + n(8)) as u8,
            (((x + y) * 100 / (w + h)) + 100 + n(16)) as u8,
        ])
    });
    let mut out = Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(image)
        .write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(
            &mut out, 85,
        ))
        .map_err(|e| format!("encoding a JPEG: {e}"))?;
    Ok(out.into_inner())
}

/// `len` pseudo-random bytes of `seed`.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        bytes.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

/// Uploads `bytes` as `filename` (multipart, as the administrator); the
/// new file's id.
fn upload(host: &Host, filename: &str, mime: &str, bytes: &[u8]) -> Result<String, String> {
    let form = Form::new().file("file", filename, mime, bytes);
    let r = host.send_form("POST", "/files", Some(ADMIN_TOKEN), &form);
    if r.status != 200 {
        return Err(format!(
            "POST /files ({filename}): {} {}",
            r.status,
            r.body.chars().take(300).collect::<String>()
        ));
    }
    let answer: Value = serde_json::from_str(&r.body)
        .map_err(|e| format!("POST /files ({filename}): answer is not JSON: {e}"))?;
    let data = &answer["data"];
    if data["filesize"].as_u64() != Some(bytes.len() as u64) {
        return Err(format!(
            "POST /files ({filename}): filesize {} for {} bytes sent",
            data["filesize"],
            bytes.len()
        ));
    }
    data["id"]
        .as_str()
        .map(String::from)
        .ok_or_else(|| format!("POST /files ({filename}): no id in {answer}"))
}

/// A blocking client for single requests (binary answers, timed).
fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(600))
        .build()
}

/// `GET path` as the administrator: the answer's type and bytes, which
/// must come with status 200.
fn get_bytes(agent: &ureq::Agent, base: &str, path: &str) -> Result<(String, Vec<u8>), String> {
    let answer = agent
        .get(&format!("{base}{path}"))
        .set("Authorization", &format!("Bearer {ADMIN_TOKEN}"))
        .call();
    let response = match answer {
        Ok(r) => r,
        Err(ureq::Error::Status(status, r)) => {
            let text = r.into_string().unwrap_or_default();
            return Err(format!(
                "GET {path}: {status} {}",
                text.chars().take(300).collect::<String>()
            ));
        }
        Err(e) => return Err(format!("GET {path}: {e}")),
    };
    if response.status() != 200 {
        return Err(format!("GET {path}: {} (200 expected)", response.status()));
    }
    let mime = response.content_type().to_string();
    let mut bytes = Vec::new();
    response
        .into_reader()
        .read_to_end(&mut bytes)
        .map_err(|e| format!("GET {path}: reading the answer: {e}"))?;
    Ok((mime, bytes))
}

/// `len` bytes repeating a 64 KiB block of noise: an upload's content,
/// made as it is sent.
struct Pattern {
    block: Vec<u8>,
    at: usize,
    left: u64,
}

impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf
            .len()
            .min(self.block.len() - self.at)
            .min(self.left.min(usize::MAX as u64) as usize);
        buf[..n].copy_from_slice(&self.block[self.at..self.at + n]);
        self.at = (self.at + n) % self.block.len();
        self.left -= n as u64;
        Ok(n)
    }
}

/// One streamed upload of `len` bytes (multipart `POST /files` with a
/// `Content-Length`); the new file's id.
fn streamed_upload(base: &str, index: usize, len: u64) -> Result<String, String> {
    let form = Form::new().field("title", &format!("upload {index}"));
    let (head, tail) = form.head_and_tail("file", &format!("upload-{index}.bin"));
    let total = head.len() as u64 + len + tail.len() as u64;
    let body = Cursor::new(head)
        .chain(Pattern {
            block: noise(64 * 1024, 0xF11E + index as u64),
            at: 0,
            left: len,
        })
        .chain(Cursor::new(tail));
    let what = format!("POST /files (upload {index}, {len} bytes)");
    let answer = agent()
        .post(&format!("{base}/files"))
        .set("Authorization", &format!("Bearer {ADMIN_TOKEN}"))
        .set("Content-Type", &form.content_type())
        .set("Content-Length", &total.to_string())
        .send(body);
    let text = match answer {
        Ok(r) => r.into_string(),
        Err(ureq::Error::Status(status, r)) => {
            let text = r.into_string().unwrap_or_default();
            return Err(format!(
                "{what}: {status} {}",
                text.chars().take(300).collect::<String>()
            ));
        }
        Err(e) => return Err(format!("{what}: {e}")),
    }
    .map_err(|e| format!("{what}: reading the answer: {e}"))?;
    let answer: Value =
        serde_json::from_str(&text).map_err(|e| format!("{what}: answer is not JSON: {e}"))?;
    if answer["data"]["filesize"].as_u64() != Some(len) {
        return Err(format!("{what}: filesize {}", answer["data"]["filesize"]));
    }
    answer["data"]["id"]
        .as_str()
        .map(String::from)
        .ok_or_else(|| format!("{what}: no id in the answer"))
}

/// The memory phase: idle RSS, then the peak through the concurrent
/// uploads (whose files are deleted again); the growth's check.
fn uploads(opts: &Options, host: &Host) -> Result<Check, String> {
    std::thread::sleep(SETTLE);
    let idle = host.rss_kib().ok_or("the host's RSS is not readable")?;
    hosts::reset_peak_rss(host)?;
    eprintln!(
        "== {} concurrent uploads of {} bytes",
        opts.uploads, opts.upload_bytes
    );
    let started = Instant::now();
    let ids: Vec<Result<String, String>> = std::thread::scope(|scope| {
        let sending: Vec<_> = (0..opts.uploads)
            .map(|i| scope.spawn(move || streamed_upload(&host.base, i, opts.upload_bytes)))
            .collect();
        sending
            .into_iter()
            .map(|s| {
                s.join()
                    .unwrap_or_else(|_| Err("an upload panicked".into()))
            })
            .collect()
    });
    let took = started.elapsed();
    let peak = host
        .peak_rss_kib()
        .ok_or("the host's peak RSS is not readable")?;
    let ids = ids.into_iter().collect::<Result<Vec<_>, _>>()?;
    for id in &ids {
        let r = host.delete(&format!("/files/{id}"), Some(ADMIN_TOKEN));
        if r.status != 204 {
            return Err(format!("DELETE /files/{id}: {} {}", r.status, r.body));
        }
    }
    let growth = mb(peak.saturating_sub(idle));
    let sent_mb = (opts.uploads as u64 * opts.upload_bytes) as f64 / 1e6;
    println!(
        "\nHost memory through {} concurrent multipart uploads of {:.0} MB (POST /files, streamed; {sent_mb:.0} MB in {:.1} s, {:.0} MB/s)\n",
        opts.uploads,
        opts.upload_bytes as f64 / 1e6,
        took.as_secs_f64(),
        sent_mb / took.as_secs_f64().max(1e-9)
    );
    println!("| host RSS | MB |");
    println!("|---|---:|");
    println!(
        "| idle ({:.0} s after the bench's files were uploaded) | {:.0} |",
        SETTLE.as_secs_f64(),
        mb(idle)
    );
    println!(
        "| peak through the {} uploads | {:.0} |",
        opts.uploads,
        mb(peak)
    );
    println!("| growth | {growth:.0} |");
    Ok(Check::at_most(
        format!(
            "host peak RSS growth through {} concurrent {:.0} MB uploads, MB ({sent_mb:.0} MB sent)",
            opts.uploads,
            opts.upload_bytes as f64 / 1e6
        ),
        growth,
        UPLOAD_GROWTH_MB,
    ))
}

/// Drives one request at the options' concurrency; fails on any answer
/// of another status or length than `expected_len` bytes.
fn measure(
    opts: &Options,
    host: &Host,
    id: &'static str,
    label: &'static str,
    req: Req,
    expected_len: Option<f64>,
) -> Result<Row, String> {
    let scenario = Scenario {
        id,
        label,
        class: Class::Point,
        paired: false,
        source: Arc::new(move |_, _| req.clone()),
    };
    let load = Load {
        concurrency: opts.concurrency,
        warmup: opts.warmup,
        measure: opts.measure,
        paired: false,
        client_threads: None,
    };
    let outcome =
        driver::run(&host.base, load, scenario.source.clone()).map_err(|e| format!("{id}: {e}"))?;
    let row = Row::new(&scenario, opts.concurrency, &outcome, host.peak_rss_kib());
    eprintln!(
        "  {:<12} c={:<3} {:>8.0} req/s  p50 {:>8.2} ms  p99 {:>8.2} ms  errors {}",
        id, opts.concurrency, row.throughput, row.p50_ms, row.p99_ms, row.errors
    );
    if row.errors > 0 {
        return Err(format!(
            "{label}: {} errors under load, first: {}",
            row.errors,
            row.first_error.as_deref().unwrap_or("?")
        ));
    }
    if row.requests == 0 {
        return Err(format!("{label}: no request measured"));
    }
    if let Some(len) = expected_len {
        if (row.mean_bytes - len).abs() > 0.5 {
            return Err(format!(
                "{label}: answers of {:.1} bytes on average, {len} expected",
                row.mean_bytes
            ));
        }
    }
    Ok(row)
}

/// Requests per second of the assets against ping's.
fn throughput(
    opts: &Options,
    host: &Host,
    image: (&str, usize),
    ranged: &str,
) -> Result<(), String> {
    let (image_id, image_len) = image;
    // The transformation asked once, so that the load reads the kept one.
    let transformed = format!("/assets/{image_id}?width=320&format=webp");
    let (mime, kept) = get_bytes(&agent(), &host.base, &transformed)?;
    if mime != "image/webp" {
        return Err(format!("GET {transformed}: {mime}, image/webp expected"));
    }
    let admin = |path: String| Req::get(path).token(ADMIN_TOKEN).expect(200);
    eprintln!("== throughput, c={}", opts.concurrency);
    let ping = || {
        measure(
            opts,
            host,
            "ping",
            "GET /server/ping",
            Req::get("/server/ping").expect(200),
            None,
        )
    };
    let first_ping = ping()?;
    let rows = vec![
        measure(
            opts,
            host,
            "asset",
            "GET /assets/:id (JPEG)",
            admin(format!("/assets/{image_id}")),
            Some(image_len as f64),
        )?,
        measure(
            opts,
            host,
            "asset-webp",
            "GET /assets/:id?width=320&format=webp (kept)",
            admin(transformed),
            Some(kept.len() as f64),
        )?,
        measure(
            opts,
            host,
            "asset-range",
            "GET /assets/:id, Range: bytes=0-1048575 (206)",
            Req::get(format!("/assets/{ranged}"))
                .token(ADMIN_TOKEN)
                .header(RANGE, "bytes=0-1048575")
                .expect(206),
            Some(RANGE_LEN),
        )?,
    ];
    let second_ping = ping()?;
    let pings = [first_ping, second_ping];
    let mut table = vec![pings[0].clone()];
    table.extend(rows.iter().cloned());
    table.push(pings[1].clone());
    report::print_table(
        &format!(
            "Assets: requests per second (c={}, {:.1} s measured per row after {:.1} s warm-up, one client, administrator's token; ping anonymous, before and after)",
            opts.concurrency,
            opts.measure.as_secs_f64(),
            opts.warmup.as_secs_f64()
        ),
        &table,
    );
    let floor = (pings[0].throughput + pings[1].throughput) / 2.0;
    report::print_against_floor(
        &format!("Assets against GET /server/ping (mean of the two pings, {floor:.0} req/s)"),
        &rows,
        floor,
    );
    Ok(())
}

/// The first request of each transformation against the second (kept).
fn first_transforms(host: &Host, large: (&str, usize)) -> Result<(), String> {
    let (id, len) = large;
    eprintln!(
        "== first transformations of the {}x{} JPEG",
        LARGE.0, LARGE.1
    );
    let agent = agent();
    hosts::reset_peak_rss(host)?;
    let (mut first, mut second) = (Samples::default(), Samples::default());
    println!(
        "\nFirst transformation of a {}x{} JPEG ({:.1} MB): each width asked for the first time (decoded, resized, encoded as JPEG, kept), then again (the kept one read); one client, sequential\n",
        LARGE.0,
        LARGE.1,
        len as f64 / 1e6
    );
    println!("| `GET /assets/:id?width=W` | first ms | second ms | answer KB |");
    println!("|---|---:|---:|---:|");
    for width in FIRST_WIDTHS {
        let path = format!("/assets/{id}?width={width}");
        let mut answers = Vec::new();
        let mut times = Vec::new();
        for _ in 0..2 {
            let started = Instant::now();
            let answer = get_bytes(&agent, &host.base, &path)?;
            times.push(started.elapsed());
            answers.push(answer);
        }
        first.push(times[0]);
        second.push(times[1]);
        let (mime, bytes) = &answers[0];
        if mime != "image/jpeg" || answers[1].1 != *bytes {
            return Err(format!(
                "GET {path}: {mime}, then {} ({} and {} bytes): the same JPEG expected",
                answers[1].0,
                bytes.len(),
                answers[1].1.len()
            ));
        }
        let size = image::load_from_memory(bytes)
            .map(|i| (i.width(), i.height()))
            .map_err(|e| format!("GET {path}: not an image: {e}"))?;
        let expected = (width, width * LARGE.1 / LARGE.0);
        if size != expected {
            return Err(format!("GET {path}: {size:?}, {expected:?} expected"));
        }
        println!(
            "| {width} | {:.1} | {:.2} | {:.0} |",
            ms(times[0]),
            ms(times[1]),
            bytes.len() as f64 / 1e3
        );
    }
    let peak = host.peak_rss_kib().map_or(f64::NAN, mb);
    println!(
        "\n| {} widths | p50 ms | max ms |\n|---|---:|---:|",
        FIRST_WIDTHS.len()
    );
    for (what, s) in [
        ("first request (transformed)", &first),
        ("second request (kept)", &second),
    ] {
        println!(
            "| {what} | {:.1} | {:.1} |",
            ms(s.median()),
            ms(s.quantile(1.0))
        );
    }
    println!(
        "\nfirst / second request, p50: {:.0}x; host peak RSS through the transformations {peak:.0} MB",
        ms(first.median()) / ms(second.median()).max(1e-9)
    );
    Ok(())
}

/// Runs the three phases on one host and prints their figures and the
/// target; fails on an unexpected answer or a missed target.
pub fn run(opts: &Options) -> Result<(), String> {
    let started = Instant::now();
    println!(
        "platform-bench assets: {} host, {} cores",
        platform_tests::profile(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let small = jpeg(SMALL.0, SMALL.1, 1)?;
    let large = jpeg(LARGE.0, LARGE.1, 2)?;
    let ranged = noise(RANGED_BYTES, 3);
    let host = hosts::dynamic(None)?;
    let small_id = upload(&host, "photo.jpg", "image/jpeg", &small)?;
    let large_id = upload(&host, "large.jpg", "image/jpeg", &large)?;
    let ranged_id = upload(&host, "data.bin", "application/octet-stream", &ranged)?;
    println!(
        "files (uploaded as the administrator): a {}x{} JPEG of {:.1} KB, a {}x{} JPEG of {:.2} MB, {:.0} MB of noise",
        SMALL.0,
        SMALL.1,
        small.len() as f64 / 1e3,
        LARGE.0,
        LARGE.1,
        large.len() as f64 / 1e6,
        ranged.len() as f64 / 1e6
    );
    let memory = uploads(opts, &host)?;
    // Let the disk settle after the uploads' writes; the peak RSS of the
    // tables below is theirs.
    std::thread::sleep(Duration::from_secs(2));
    hosts::reset_peak_rss(&host)?;
    throughput(opts, &host, (&small_id, small.len()), &ranged_id)?;
    first_transforms(&host, (&large_id, large.len()))?;
    println!("\nTarget\n\n{}", memory.line());
    println!("\ntotal time {:.0?}", started.elapsed());
    if memory.pass() {
        Ok(())
    } else {
        Err(format!("missed: {}", memory.line()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_the_same_every_run() {
        let a = jpeg(64, 48, 1).unwrap();
        assert_eq!(a, jpeg(64, 48, 1).unwrap());
        assert_ne!(a, jpeg(64, 48, 2).unwrap());
        let decoded = image::load_from_memory(&a).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (64, 48));
    }

    #[test]
    fn an_upload_is_made_as_it_is_read() {
        let mut pattern = Pattern {
            block: noise(1000, 1),
            at: 0,
            left: 2500,
        };
        let mut out = Vec::new();
        pattern.read_to_end(&mut out).unwrap();
        assert_eq!(out.len(), 2500);
        assert_eq!(out[..1000], out[1000..2000]);
        assert_eq!(out[2000..], noise(1000, 1)[..500]);
    }
}
