//! Files: where their bytes are kept (`storage`), and what the host reads
//! of an upload before keeping it: its type, an image's size, whether it
//! is allowed at all (`Files`, from `FILES_*`).

pub mod storage;
pub mod transform;

pub use storage::{Location, Storage, StorageError};

/// The file storage and the rules of uploads.
#[derive(Debug)]
pub struct Files {
    pub storage: Storage,
    /// Largest upload, in bytes (`FILES_MAX_UPLOAD_SIZE`, default 100 MB).
    pub max_upload_size: u64,
    /// Types an upload may have (`FILES_MIME_TYPE_ALLOW_LIST`: `type/sub`,
    /// `type/*` or `*/*`; default any).
    pub allowed_types: Vec<String>,
    /// How long clients may keep an asset (`ASSETS_CACHE_TTL`, default
    /// `30d`), in its `Cache-Control`.
    pub cache_ttl: std::time::Duration,
    /// Image transformations of assets (`ASSETS_TRANSFORM_*`).
    pub transforms: transform::Settings,
    /// Transformations running now, at most `transforms.max_concurrent`
    /// (one that ran past its time holds its slot until it ends).
    pub transform_slots: std::sync::Arc<tokio::sync::Semaphore>,
}

/// How many first bytes of an upload are looked at for its type and an
/// image's size (a JPEG's size may follow its EXIF block).
pub const HEAD_LEN: usize = 256 * 1024;

impl Files {
    /// The storage locations and the upload rules from the environment; a
    /// `local` location without a root keeps its files in `default_root`.
    pub fn from_env(default_root: &std::path::Path) -> Result<Self, String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let transforms = transform::Settings::from_vars(&var)?;
        Ok(Self {
            storage: Storage::from_env(default_root)?,
            transform_slots: std::sync::Arc::new(tokio::sync::Semaphore::new(
                transforms.max_concurrent,
            )),
            transforms,
            max_upload_size: match var("FILES_MAX_UPLOAD_SIZE") {
                None => 100 * 1000 * 1000,
                Some(v) => parse_size(&v)
                    .ok_or_else(|| format!("FILES_MAX_UPLOAD_SIZE: \"{v}\" is not a size (bytes, or a number with kb, mb or gb)"))?,
            },
            allowed_types: var("FILES_MIME_TYPE_ALLOW_LIST")
                .map(|v| {
                    v.split(',')
                        .map(|t| t.trim().to_ascii_lowercase())
                        .filter(|t| !t.is_empty())
                        .collect()
                })
                .unwrap_or_else(|| vec!["*/*".into()]),
            cache_ttl: match var("ASSETS_CACHE_TTL") {
                None => std::time::Duration::from_secs(30 * 86_400),
                Some(v) if v.trim() == "0" => std::time::Duration::ZERO,
                Some(v) => crate::env_settings::parse_duration(&v)
                    .map_err(|e| format!("ASSETS_CACHE_TTL: {e}"))?,
            },
        })
    }

    /// Whether an upload of type `mime` is allowed.
    pub fn allows(&self, mime: &str) -> bool {
        let mime = mime.to_ascii_lowercase();
        let (kind, _) = mime.split_once('/').unwrap_or((&mime, ""));
        self.allowed_types.iter().any(|allowed| {
            allowed == "*" || allowed == "*/*" || *allowed == mime || {
                allowed
                    .strip_suffix("/*")
                    .is_some_and(|allowed_kind| allowed_kind == kind)
            }
        })
    }
}

/// `100`, `100b`, `10kb`, `100mb`, `1gb` (1000-based, as Directus's
/// examples read; `kib`, `mib`, `gib` 1024-based) in bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim().to_ascii_lowercase();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor: f64 = match unit.trim() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    (number >= 0.0).then_some((number * factor) as u64)
}

/// The type of an upload: what its first bytes say, else what the client
/// declared, else `application/octet-stream`.
pub fn content_type(head: &[u8], declared: Option<&str>) -> String {
    infer::get(head)
        .map(|t| t.mime_type().to_string())
        .or_else(|| {
            declared
                .map(|d| d.trim().to_ascii_lowercase())
                .filter(|d| !d.is_empty())
        })
        .unwrap_or_else(|| "application/octet-stream".into())
}

/// An image's width and height as shown, from its header alone: a JPEG
/// whose EXIF turns it a quarter has them swapped, as Directus records them.
pub fn image_size(mime: &str, head: &[u8]) -> Option<(u64, u64)> {
    if !mime.starts_with("image/") {
        return None;
    }
    let size = imagesize::blob_size(head).ok()?;
    let (w, h) = (size.width as u64, size.height as u64);
    Some(if turned_quarter(mime, head) {
        (h, w)
    } else {
        (w, h)
    })
}

/// Whether a JPEG's EXIF orientation (5 to 8) turns it a quarter.
fn turned_quarter(mime: &str, head: &[u8]) -> bool {
    use image::metadata::Orientation;
    use image::ImageDecoder;
    mime == "image/jpeg"
        && image::codecs::jpeg::JpegDecoder::new(std::io::Cursor::new(head))
            .ok()
            .and_then(|mut decoder| decoder.orientation().ok())
            .is_some_and(|o| {
                matches!(
                    o,
                    Orientation::Rotate90
                        | Orientation::Rotate270
                        | Orientation::Rotate90FlipH
                        | Orientation::Rotate270FlipH
                )
            })
}

/// A title from a file name, as Directus makes one: the name without its
/// extension, words split at `-`, `_` and spaces, each capitalised.
pub fn title_from_filename(filename: &str) -> String {
    let stem = std::path::Path::new(filename)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(filename);
    stem.split(['-', '_', ' '])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut chars = w.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The extension of a file name, with its dot (`.jpg`), or empty; only
/// letters and digits, so that it is safe in a storage key.
pub fn extension_of(filename: &str) -> String {
    std::path::Path::new(filename)
        .extension()
        .and_then(|e| e.to_str())
        .filter(|e| !e.is_empty() && e.len() <= 16 && e.chars().all(|c| c.is_ascii_alphanumeric()))
        .map(|e| format!(".{}", e.to_ascii_lowercase()))
        .unwrap_or_default()
}

/// Where a `local` location without `STORAGE_<NAME>_ROOT` keeps its files:
/// `uploads` beside the SQLite database file; for a PostgreSQL database,
/// which has no folder of its own here, `uploads` in the current directory.
pub fn default_root(database: &crate::storage::Location) -> std::path::PathBuf {
    match database {
        crate::storage::Location::File(file) => file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| std::path::Path::new("."))
            .join("uploads"),
        crate::storage::Location::Postgres(_) => std::path::PathBuf::from("uploads"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_directus_writes_them() {
        assert_eq!(parse_size("100"), Some(100));
        assert_eq!(parse_size("100mb"), Some(100_000_000));
        assert_eq!(parse_size("1.5KB"), Some(1500));
        assert_eq!(parse_size("2MiB"), Some(2 * 1024 * 1024));
        assert_eq!(parse_size("ten"), None);
        assert_eq!(parse_size("10 furlongs"), None);
    }

    #[test]
    fn types_come_from_the_content_first() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x03\0\0\0\x02\x08\x06\0\0\0";
        assert_eq!(content_type(png, Some("text/plain")), "image/png");
        assert_eq!(image_size("image/png", png), Some((3, 2)));
        assert_eq!(content_type(b"hello", Some("Text/Plain")), "text/plain");
        assert_eq!(content_type(b"hello", None), "application/octet-stream");
        assert_eq!(image_size("text/plain", png), None);
        let turned = transform::tests::jpeg_turned_quarter();
        assert_eq!(image_size("image/jpeg", &turned), Some((20, 40)));
    }

    #[test]
    fn allow_lists_match_types_and_families() {
        let files = |allowed: &[&str]| Files {
            storage: Storage::open(vec![]).unwrap_or_else(|_| unreachable!()),
            max_upload_size: 1,
            allowed_types: allowed.iter().map(|s| s.to_string()).collect(),
            cache_ttl: std::time::Duration::ZERO,
            transforms: transform::Settings::from_vars(&|_| None).unwrap(),
            transform_slots: std::sync::Arc::new(tokio::sync::Semaphore::new(1)),
        };
        let images = files(&["image/*", "application/pdf"]);
        assert!(images.allows("image/png"));
        assert!(images.allows("application/pdf"));
        assert!(!images.allows("text/plain"));
        assert!(files(&["*/*"]).allows("text/plain"));
    }

    #[test]
    fn titles_and_extensions_come_from_the_name() {
        assert_eq!(
            title_from_filename("my-holiday_photo.JPG"),
            "My Holiday Photo"
        );
        assert_eq!(extension_of("a.JPG"), ".jpg");
        assert_eq!(extension_of("a"), "");
        assert_eq!(extension_of("a.j/p"), "");
    }
}
