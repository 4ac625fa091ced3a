//! Where the bytes of files live: named locations (`STORAGE_LOCATIONS`,
//! the first one is where uploads go unless they name another), each a
//! folder on this machine (`local`) or an S3 bucket (`s3`), both behind
//! `object_store`'s one API.
//!
//! An upload is written as a multipart upload that is published only when
//! it completes: a local location stages it in a file of its own that is
//! renamed into place at the end, an S3 location completes the multipart
//! upload at the end. Readers never see part of an upload, and an aborted
//! one leaves nothing.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as Key;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, WriteMultipart};

use crate::settings::{declare, Env};

declare! {
    section "Files";
    /// The storage locations of files, comma-separated; uploads go to the
    /// first unless their form names another in `storage` (see [Files and
    /// assets](#files-and-assets)).
    STORAGE_LOCATIONS: "STORAGE_LOCATIONS" = "local";
    /// A location's driver: `local` (a folder) or `s3` (a bucket).
    STORAGE_DRIVER: "STORAGE_<NAME>_DRIVER" = "local";
    /// A `local` location's folder (created at start).
    STORAGE_ROOT: "STORAGE_<NAME>_ROOT" ~ "`uploads` beside the SQLite file; on PostgreSQL `./uploads` in the current directory";
    /// An `s3` location's access key.
    STORAGE_KEY: "STORAGE_<NAME>_KEY";
    /// An `s3` location's secret key.
    STORAGE_SECRET: "STORAGE_<NAME>_SECRET";
    /// An `s3` location's bucket (required).
    STORAGE_BUCKET: "STORAGE_<NAME>_BUCKET";
    /// An `s3` location's region.
    STORAGE_REGION: "STORAGE_<NAME>_REGION" ~ "`us-east-1`";
    /// An `s3` location's endpoint (`http://` allowed).
    STORAGE_ENDPOINT: "STORAGE_<NAME>_ENDPOINT" ~ "Amazon S3";
    /// An `s3` location's addressing: `false`, the bucket is the endpoint's
    /// first label; `true`, its first path segment (most S3-compatible
    /// servers).
    STORAGE_FORCE_PATH_STYLE: "STORAGE_<NAME>_FORCE_PATH_STYLE" = "false";
}

/// How one location keeps its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Driver {
    /// A folder (`STORAGE_<NAME>_ROOT`).
    Local { root: PathBuf },
    /// An S3 bucket (Amazon S3 or a server speaking its API).
    S3 {
        key: Option<String>,
        secret: Option<String>,
        bucket: String,
        region: Option<String>,
        endpoint: Option<String>,
        force_path_style: bool,
    },
}

/// One location's settings, as read from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocationSettings {
    pub name: String,
    pub driver: Driver,
}

/// The locations of `STORAGE_LOCATIONS` (default `local`), each described
/// by `STORAGE_<NAME>_*` variables (names upper-cased as Directus does).
/// A `local` location without a root keeps its files in `default_root`.
pub fn settings_from(env: &Env, default_root: &Path) -> Result<Vec<LocationSettings>, String> {
    let names: Vec<String> = STORAGE_LOCATIONS
        .get(env)
        .unwrap_or_default()
        .split(',')
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        return Err("STORAGE_LOCATIONS names no location".into());
    }
    let mut settings: Vec<LocationSettings> = Vec::new();
    for name in names {
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "STORAGE_LOCATIONS: \"{name}\" is not a location name (letters, digits, _ and - only)"
            ));
        }
        if settings.iter().any(|s| s.name == name) {
            return Err(format!("STORAGE_LOCATIONS names \"{name}\" twice"));
        }
        let driver = match STORAGE_DRIVER
            .get_for(env, &name)
            .unwrap_or_default()
            .as_str()
        {
            "local" => Driver::Local {
                root: STORAGE_ROOT
                    .get_for(env, &name)
                    .map_or_else(|| default_root.to_path_buf(), PathBuf::from),
            },
            "s3" => Driver::S3 {
                key: STORAGE_KEY.get_for(env, &name),
                secret: STORAGE_SECRET.get_for(env, &name),
                bucket: STORAGE_BUCKET.get_for(env, &name).ok_or_else(|| {
                    format!(
                        "{} must name the bucket of location \"{name}\"",
                        STORAGE_BUCKET.name_for(&name)
                    )
                })?,
                region: STORAGE_REGION.get_for(env, &name),
                endpoint: STORAGE_ENDPOINT.get_for(env, &name),
                force_path_style: match STORAGE_FORCE_PATH_STYLE
                    .get_for(env, &name)
                    .unwrap_or_default()
                    .as_str()
                {
                    "false" | "0" => false,
                    "true" | "1" => true,
                    other => {
                        return Err(format!(
                            "{} must be true or false, not \"{other}\"",
                            STORAGE_FORCE_PATH_STYLE.name_for(&name)
                        ))
                    }
                },
            },
            other => {
                return Err(format!(
                    "{}: \"{other}\" is not a storage driver (local or s3)",
                    STORAGE_DRIVER.name_for(&name)
                ))
            }
        };
        settings.push(LocationSettings { name, driver });
    }
    Ok(settings)
}

/// What went wrong with stored bytes.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("no such file in storage")]
    NotFound,
    #[error("storage: {0}")]
    Failed(String),
}

impl From<object_store::Error> for StorageError {
    fn from(e: object_store::Error) -> Self {
        match e {
            object_store::Error::NotFound { .. } => StorageError::NotFound,
            other => StorageError::Failed(other.to_string()),
        }
    }
}

/// Every location, opened.
pub struct Storage {
    locations: Vec<Location>,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.locations.iter().map(|l| &l.name))
            .finish()
    }
}

/// One location: a name and the store behind it.
#[derive(Clone)]
pub struct Location {
    pub name: String,
    store: Arc<dyn ObjectStore>,
}

impl Storage {
    /// Opens every location (a local root is created when missing).
    pub fn open(settings: Vec<LocationSettings>) -> Result<Self, String> {
        let mut locations = Vec::with_capacity(settings.len());
        for s in settings {
            let store: Arc<dyn ObjectStore> = match &s.driver {
                Driver::Local { root } => {
                    std::fs::create_dir_all(root).map_err(|e| {
                        format!(
                            "storage location \"{}\": cannot create {}: {e}",
                            s.name,
                            root.display()
                        )
                    })?;
                    Arc::new(LocalFileSystem::new_with_prefix(root).map_err(|e| {
                        format!(
                            "storage location \"{}\": cannot use {}: {e}",
                            s.name,
                            root.display()
                        )
                    })?)
                }
                Driver::S3 { .. } => Arc::new(
                    s3_builder(&s.driver)
                        .build()
                        .map_err(|e| format!("storage location \"{}\": {e}", s.name))?,
                ),
            };
            locations.push(Location {
                name: s.name,
                store,
            });
        }
        Ok(Self { locations })
    }

    /// Where uploads go unless they name a location: the first one.
    pub fn default_location(&self) -> &Location {
        &self.locations[0]
    }

    pub fn location(&self, name: &str) -> Option<&Location> {
        self.locations.iter().find(|l| l.name == name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.locations.iter().map(|l| l.name.as_str())
    }
}

/// An S3 client for `driver`. With an endpoint, path style names the
/// bucket in the path (`endpoint/bucket/key`), as most S3-compatible
/// servers expect; otherwise the bucket is the endpoint's first label
/// (`bucket.endpoint/key`), as Amazon S3 does.
fn s3_builder(driver: &Driver) -> AmazonS3Builder {
    let Driver::S3 {
        key,
        secret,
        bucket,
        region,
        endpoint,
        force_path_style,
    } = driver
    else {
        unreachable!("an S3 location")
    };
    let mut builder = AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_region(region.clone().unwrap_or_else(|| "us-east-1".into()));
    if let Some(key) = key {
        builder = builder.with_access_key_id(key);
    }
    if let Some(secret) = secret {
        builder = builder.with_secret_access_key(secret);
    }
    match endpoint {
        Some(endpoint) => {
            let endpoint = endpoint.trim_end_matches('/');
            builder = builder.with_allow_http(endpoint.starts_with("http://"));
            if *force_path_style {
                builder = builder.with_endpoint(endpoint)
            } else {
                let (scheme, host) = endpoint.split_once("://").unwrap_or(("https", endpoint));
                builder = builder
                    .with_endpoint(format!("{scheme}://{bucket}.{host}"))
                    .with_virtual_hosted_style_request(true)
            }
        }
        None => builder = builder.with_virtual_hosted_style_request(!force_path_style),
    }
    builder
}

/// Metadata of stored bytes.
#[derive(Debug, Clone)]
pub struct Stored {
    pub size: u64,
    pub last_modified: chrono::DateTime<chrono::Utc>,
}

/// The bytes of one read: the whole object or a range of it.
pub struct Read {
    pub meta: Stored,
    pub range: Range<u64>,
    pub chunks: BoxStream<'static, Result<Bytes, StorageError>>,
}

impl Read {
    /// `range` (or all) of `bytes` held in memory, dated `last_modified`.
    pub fn of_bytes(
        bytes: Bytes,
        last_modified: chrono::DateTime<chrono::Utc>,
        range: Option<Range<u64>>,
    ) -> Self {
        let size = bytes.len() as u64;
        let range = range.map_or(0..size, |r| r.start.min(size)..r.end.min(size));
        let part = bytes.slice(range.start as usize..range.end as usize);
        Self {
            meta: Stored {
                size,
                last_modified,
            },
            range,
            chunks: futures_util::stream::once(async move { Ok(part) }).boxed(),
        }
    }
}

/// How much of a local file one blocking read takes.
const FILE_PIECE: u64 = 256 * 1024;

/// `range` of a local file as a stream of pieces, each read off the async
/// workers.
fn file_chunks(
    file: std::fs::File,
    range: Range<u64>,
) -> BoxStream<'static, Result<Bytes, StorageError>> {
    futures_util::stream::try_unfold((file, range), |(mut file, range)| async move {
        if range.is_empty() {
            return Ok(None);
        }
        let len = (range.end - range.start).min(FILE_PIECE);
        let (file, piece) = tokio::task::spawn_blocking(move || {
            use std::io::{Read, Seek, SeekFrom};
            let mut piece = vec![0; len as usize];
            file.seek(SeekFrom::Start(range.start))
                .and_then(|_| file.read_exact(&mut piece))
                .map(|()| (file, piece))
        })
        .await
        .map_err(|e| StorageError::Failed(e.to_string()))?
        .map_err(|e| StorageError::Failed(e.to_string()))?;
        let next = range.start + len..range.end;
        Ok(Some((Bytes::from(piece), (file, next))))
    })
    .boxed()
}

/// How much an upload keeps in memory: parts of this size, at most
/// [`PARTS_IN_FLIGHT`] being sent at once (S3's smallest part is 5 MiB).
const PART_SIZE: usize = 5 * 1024 * 1024;
const PARTS_IN_FLIGHT: usize = 2;

impl Location {
    /// Starts writing `key`: nothing is visible under it before
    /// [`Upload::finish`].
    pub async fn begin(&self, key: &str) -> Result<Upload, StorageError> {
        let upload = self.store.put_multipart(&Key::from(key)).await?;
        Ok(Upload {
            writer: WriteMultipart::new_with_chunk_size(upload, PART_SIZE),
            written: 0,
        })
    }

    /// Writes `bytes` under `key` as one upload: published only once
    /// whole, nothing left when it fails.
    pub async fn put(&self, key: &str, bytes: Bytes) -> Result<u64, StorageError> {
        let mut upload = self.begin(key).await?;
        match upload.put(bytes).await {
            Ok(()) => upload.finish().await,
            Err(e) => {
                upload.abort().await;
                Err(e)
            }
        }
    }

    /// The size and date of `key`.
    pub async fn head(&self, key: &str) -> Result<Stored, StorageError> {
        let meta = self.store.head(&Key::from(key)).await?;
        Ok(Stored {
            size: meta.size,
            last_modified: meta.last_modified,
        })
    }

    /// The bytes of `key`, or of `range` of them, as they are read.
    pub async fn read(&self, key: &str, range: Option<Range<u64>>) -> Result<Read, StorageError> {
        let options = GetOptions {
            range: range.map(GetRange::Bounded),
            ..Default::default()
        };
        let got = self.store.get_opts(&Key::from(key), options).await?;
        let meta = Stored {
            size: got.meta.size,
            last_modified: got.meta.last_modified,
        };
        let range = got.range.clone();
        let chunks = match got.payload {
            // The local driver's own stream reads 8 KiB a blocking call;
            // larger pieces serve a file in a few calls.
            object_store::GetResultPayload::File(file, _) => file_chunks(file, range.clone()),
            object_store::GetResultPayload::Stream(stream) => {
                stream.map(|c| c.map_err(Into::into)).boxed()
            }
        };
        Ok(Read {
            meta,
            range,
            chunks,
        })
    }

    /// The whole of `key` in memory (small objects only).
    pub async fn read_all(&self, key: &str) -> Result<Bytes, StorageError> {
        Ok(self.store.get(&Key::from(key)).await?.bytes().await?)
    }

    /// Removes every key under the folder `prefix`.
    pub async fn delete_under(&self, prefix: &str) -> Result<(), StorageError> {
        let mut listed = self.store.list(Some(&Key::from(prefix)));
        while let Some(meta) = listed.next().await {
            let meta = meta?;
            match self.store.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// How many keys under the folder `prefix` are `counted`, listing no
    /// further than `at_most` of them.
    pub async fn count_under(
        &self,
        prefix: &str,
        counted: impl Fn(&str) -> bool,
        at_most: usize,
    ) -> Result<usize, StorageError> {
        let mut listed = self.store.list(Some(&Key::from(prefix)));
        let mut count = 0;
        while count < at_most {
            match listed.next().await {
                None => break,
                Some(meta) => count += usize::from(counted(meta?.location.as_ref())),
            }
        }
        Ok(count)
    }

    /// Removes `key`; one that is already gone is no error.
    pub async fn delete(&self, key: &str) -> Result<(), StorageError> {
        match self.store.delete(&Key::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// An upload under way.
pub struct Upload {
    writer: WriteMultipart,
    written: u64,
}

impl Upload {
    /// Appends `chunk`, waiting while too many parts are being sent.
    pub async fn put(&mut self, chunk: Bytes) -> Result<(), StorageError> {
        self.writer.wait_for_capacity(PARTS_IN_FLIGHT).await?;
        self.written += chunk.len() as u64;
        self.writer.put(chunk);
        Ok(())
    }

    /// Bytes appended so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Publishes the upload; returns its size.
    pub async fn finish(self) -> Result<u64, StorageError> {
        let written = self.written;
        self.writer.finish().await?;
        Ok(written)
    }

    /// Gives the upload up: nothing of it stays.
    pub async fn abort(self) {
        if let Err(e) = self.writer.abort().await {
            log::warn!("aborting an upload failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<Vec<LocationSettings>, String> {
        settings_from(&Env::of(pairs), Path::new("/data/uploads"))
    }

    #[test]
    fn one_local_location_by_default() {
        assert_eq!(
            settings(&[]).unwrap(),
            vec![LocationSettings {
                name: "local".into(),
                driver: Driver::Local {
                    root: "/data/uploads".into()
                }
            }]
        );
    }

    #[test]
    fn locations_read_their_variables() {
        let s = settings(&[
            ("STORAGE_LOCATIONS", "s3, disk"),
            ("STORAGE_S3_DRIVER", "s3"),
            ("STORAGE_S3_KEY", "k"),
            ("STORAGE_S3_SECRET", "s"),
            ("STORAGE_S3_BUCKET", "b"),
            ("STORAGE_S3_ENDPOINT", "http://127.0.0.1:9000"),
            ("STORAGE_S3_FORCE_PATH_STYLE", "true"),
            ("STORAGE_DISK_ROOT", "/srv/files"),
        ])
        .unwrap();
        assert_eq!(s[0].name, "s3");
        assert_eq!(
            s[0].driver,
            Driver::S3 {
                key: Some("k".into()),
                secret: Some("s".into()),
                bucket: "b".into(),
                region: None,
                endpoint: Some("http://127.0.0.1:9000".into()),
                force_path_style: true,
            }
        );
        assert_eq!(
            s[1].driver,
            Driver::Local {
                root: "/srv/files".into()
            }
        );
    }

    #[test]
    fn wrong_settings_are_named() {
        let err = |pairs: &[(&str, &str)]| settings(pairs).unwrap_err();
        assert!(err(&[("STORAGE_LOCAL_DRIVER", "ftp")]).contains("STORAGE_LOCAL_DRIVER"));
        assert!(err(&[("STORAGE_LOCAL_DRIVER", "s3")]).contains("STORAGE_LOCAL_BUCKET"));
        assert!(err(&[
            ("STORAGE_LOCAL_DRIVER", "s3"),
            ("STORAGE_LOCAL_BUCKET", "b"),
            ("STORAGE_LOCAL_FORCE_PATH_STYLE", "maybe")
        ])
        .contains("FORCE_PATH_STYLE"));
        assert!(err(&[("STORAGE_LOCATIONS", "a,a")]).contains("twice"));
        assert!(err(&[("STORAGE_LOCATIONS", " , ")]).contains("no location"));
        assert!(err(&[("STORAGE_LOCATIONS", "a/b")]).contains("a/b"));
    }

    fn local(dir: &Path) -> Storage {
        Storage::open(vec![LocationSettings {
            name: "local".into(),
            driver: Driver::Local {
                root: dir.to_path_buf(),
            },
        }])
        .unwrap()
    }

    fn files_in(dir: &Path) -> Vec<String> {
        let mut names = Vec::new();
        for entry in walk(dir) {
            names.push(entry.strip_prefix(dir).unwrap().display().to_string());
        }
        names.sort();
        names
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
        out
    }

    #[tokio::test]
    async fn an_upload_is_seen_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let storage = local(dir.path());
        let location = storage.default_location();
        let mut upload = location.begin("a.bin").await.unwrap();
        let big = Bytes::from(vec![7u8; PART_SIZE + 10]);
        upload.put(Bytes::from_static(b"head")).await.unwrap();
        upload.put(big.clone()).await.unwrap();
        assert!(matches!(
            location.head("a.bin").await,
            Err(StorageError::NotFound)
        ));
        assert_eq!(upload.finish().await.unwrap(), PART_SIZE as u64 + 14);
        assert_eq!(
            location.head("a.bin").await.unwrap().size,
            PART_SIZE as u64 + 14
        );
        assert_eq!(files_in(dir.path()), vec!["a.bin".to_string()]);

        let read = location.read("a.bin", Some(2..6)).await.unwrap();
        assert_eq!(read.range, 2..6);
        let bytes: Vec<Bytes> = read.chunks.map(|c| c.unwrap()).collect().await;
        assert_eq!(bytes.concat(), b"ad\x07\x07");
        // Whole, and across the pieces a local read takes.
        let read = location.read("a.bin", None).await.unwrap();
        let whole: Vec<Bytes> = read.chunks.map(|c| c.unwrap()).collect().await;
        assert!(whole.len() > 1);
        let whole = whole.concat();
        assert_eq!(whole.len(), PART_SIZE + 14);
        assert_eq!(&whole[..4], b"head");
        assert!(whole[4..].iter().all(|b| *b == 7));
        let span = FILE_PIECE - 2..FILE_PIECE + 3;
        let read = location.read("a.bin", Some(span)).await.unwrap();
        let part: Vec<Bytes> = read.chunks.map(|c| c.unwrap()).collect().await;
        assert_eq!(part.concat(), vec![7u8; 5]);

        let mut failed = location.begin("b.bin").await.unwrap();
        failed.put(big).await.unwrap();
        failed.abort().await;
        assert_eq!(files_in(dir.path()), vec!["a.bin".to_string()]);

        location.delete("a.bin").await.unwrap();
        location.delete("a.bin").await.unwrap();
        assert!(files_in(dir.path()).is_empty());
        assert!(matches!(
            location.read("a.bin", None).await,
            Err(StorageError::NotFound)
        ));
    }

    #[test]
    fn s3_addressing_follows_force_path_style() {
        let driver = |force_path_style| Driver::S3 {
            key: Some("k".into()),
            secret: Some("s".into()),
            bucket: "b".into(),
            region: None,
            endpoint: Some("http://127.0.0.1:9000".into()),
            force_path_style,
        };
        use object_store::aws::AmazonS3ConfigKey as K;
        let path = s3_builder(&driver(true));
        assert_eq!(
            path.get_config_value(&K::Endpoint).as_deref(),
            Some("http://127.0.0.1:9000")
        );
        let virtual_hosted = s3_builder(&driver(false));
        assert_eq!(
            virtual_hosted.get_config_value(&K::Endpoint).as_deref(),
            Some("http://b.127.0.0.1:9000")
        );
    }
}
