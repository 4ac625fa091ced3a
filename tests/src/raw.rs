//! Requests written as bytes on a `TcpStream`: the ones an HTTP client
//! cannot (or will not) send, and exchanges a test must hold open.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::Host;

/// A raw HTTP exchange: `None` status when the host closed the connection
/// without an answer.
#[derive(Debug)]
pub struct Raw {
    pub status: Option<u16>,
    pub head: String,
    pub body: String,
}

/// Writes `request` as is on a new connection and reads the answer until
/// the host closes it (requests carry `Connection: close`). Write errors
/// are tolerated: a host may answer and close before reading everything.
pub fn raw(host: &Host, request: &[u8]) -> Raw {
    let addr = host.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let _ = stream.write_all(request);
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                panic!("no answer within 30 s (hang)")
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                panic!("no answer within 30 s (hang)")
            }
            // A reset after the answer (unread request bytes).
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok());
    crate::assert_no_secrets("RAW", "raw", body);
    Raw {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}

/// A request head with `Connection: close`, plus extra header lines.
pub fn head(method: &str, target: &str, extra: &[&str]) -> Vec<u8> {
    let mut h = format!("{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for line in extra {
        h.push_str(line);
        h.push_str("\r\n");
    }
    h.push_str("\r\n");
    h.into_bytes()
}

pub fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}")
}

/// `body` in chunked transfer encoding, 8 KiB a chunk.
pub fn chunked(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in body.chunks(8192) {
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Opens a connection and writes `request` on it, leaving it open (a
/// client still sending its body).
pub fn open(host: &Host, request: &[u8]) -> TcpStream {
    let addr = host.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(request).expect("write");
    stream
}
