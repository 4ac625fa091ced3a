//! Chunked bulk import through the host's items API, as admin, with
//! progress lines.

use std::time::{Duration, Instant};

use platform_tests::ADMIN_TOKEN;
use serde::Serialize;

use crate::api::Api;

/// Imports generated records into one collection after another.
pub struct Importer<'a> {
    api: &'a Api,
    quiet: bool,
}

impl<'a> Importer<'a> {
    pub fn new(api: &'a Api, quiet: bool) -> Self {
        Self { api, quiet }
    }

    /// Creates `total` records of `collection`, record `i` being `make(i)`,
    /// `chunk` per request (one transaction each).
    pub fn import<T: Serialize>(
        &self,
        collection: &str,
        total: usize,
        chunk: usize,
        mut make: impl FnMut(usize) -> T,
    ) -> Result<(), String> {
        let started = Instant::now();
        let mut last_report = Instant::now();
        let chunk = chunk.max(1);
        let mut batch = Vec::with_capacity(chunk.min(total));
        let mut done = 0;
        while done < total {
            batch.clear();
            let end = (done + chunk).min(total);
            batch.extend((done..end).map(&mut make));
            let body =
                serde_json::to_vec(&batch).map_err(|e| format!("serializing {collection}: {e}"))?;
            self.api
                .post(
                    &format!("/items/{collection}?fields=id"),
                    Some(ADMIN_TOKEN),
                    &body,
                )
                .map_err(|e| format!("import into {collection}: {e}"))?;
            done = end;
            if !self.quiet && (last_report.elapsed() >= Duration::from_secs(10) || done == total) {
                last_report = Instant::now();
                let secs = started.elapsed().as_secs_f64();
                eprintln!(
                    "  {collection}: {done}/{total} in {secs:.1} s ({:.0}/s)",
                    done as f64 / secs.max(1e-9)
                );
            }
        }
        Ok(())
    }
}
