//! Chunked bulk import through the host's items API, as admin, with
//! progress lines.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use platform_tests::ADMIN_TOKEN;
use serde::Serialize;

use crate::api::Api;

/// Imports generated records into one collection after another.
pub struct Importer<'a> {
    api: &'a Api,
    quiet: bool,
    senders: usize,
}

impl<'a> Importer<'a> {
    pub fn new(api: &'a Api, quiet: bool) -> Self {
        Self {
            api,
            quiet,
            senders: 1,
        }
    }

    /// `n` requests in flight at once: the host parses and answers one
    /// batch while it writes another (its writes still take turns).
    pub fn with_senders(self, n: usize) -> Self {
        Self {
            senders: n.max(1),
            ..self
        }
    }

    /// Creates `total` records of `collection`, record `i` being `make(i)`,
    /// `chunk` per request (one transaction each). One request at a time
    /// (the host's writer is one), while the next body is being made: the
    /// generator's work overlaps the host's instead of adding to it.
    pub fn import<T: Serialize>(
        &self,
        collection: &str,
        total: usize,
        chunk: usize,
        mut make: impl FnMut(usize) -> T,
    ) -> Result<(), String> {
        let started = Instant::now();
        let chunk = chunk.max(1);
        let path = format!("/items/{collection}?fields=id");
        let (to_sender, bodies) = mpsc::sync_channel::<(usize, Vec<u8>)>(self.senders);
        let bodies = Mutex::new(bodies);
        let sent = AtomicUsize::new(0);
        let last_report = Mutex::new(Instant::now());
        let send_all = || -> Result<(), String> {
            loop {
                let next = match bodies.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return Err(format!("the importer of {collection} failed")),
                };
                let Ok((records, body)) = next else {
                    return Ok(());
                };
                self.api
                    .post(&path, Some(ADMIN_TOKEN), &body)
                    .map_err(|e| format!("import into {collection}: {e}"))?;
                let done = sent.fetch_add(records, Ordering::Relaxed) + records;
                if self.quiet {
                    continue;
                }
                if let Ok(mut last) = last_report.lock() {
                    if last.elapsed() >= Duration::from_secs(10) || done == total {
                        *last = Instant::now();
                        let secs = started.elapsed().as_secs_f64();
                        eprintln!(
                            "  {collection}: {done}/{total} in {secs:.1} s ({:.0}/s)",
                            done as f64 / secs.max(1e-9)
                        );
                    }
                }
            }
        };
        std::thread::scope(|scope| {
            let senders: Vec<_> = (0..self.senders).map(|_| scope.spawn(send_all)).collect();
            let mut batch = Vec::with_capacity(chunk.min(total));
            let mut done = 0;
            let mut made = Ok(());
            while done < total {
                batch.clear();
                let end = (done + chunk).min(total);
                batch.extend((done..end).map(&mut make));
                let body = match serde_json::to_vec(&batch) {
                    Ok(body) => body,
                    Err(e) => {
                        made = Err(format!("serializing {collection}: {e}"));
                        break;
                    }
                };
                let records = end - done;
                done = end;
                // A closed channel: every sender stopped on an error,
                // which their joins report.
                if to_sender.send((records, body)).is_err() {
                    break;
                }
            }
            drop(to_sender);
            let mut result = made;
            for sender in senders {
                let sent = sender
                    .join()
                    .unwrap_or_else(|_| Err(format!("the importer of {collection} panicked")));
                result = sent.and(result);
            }
            result
        })
    }
}
