//! Files: where their bytes are kept (`storage`), and what the host reads
//! of an upload before keeping it: its type, an image's size, whether it
//! is allowed at all (`Files`, from `FILES_*`).

pub mod locations;
pub mod transform;

pub use locations::{Location, Storage, StorageError};

use crate::settings::{declare, Env};

declare! {
    section "Files";
    /// The largest upload (bytes, or `kb`, `mb`, `gb`, `kib`, `mib`,
    /// `gib`); a larger one is 413 `CONTENT_TOO_LARGE` and leaves nothing.
    FILES_MAX_UPLOAD_SIZE: "FILES_MAX_UPLOAD_SIZE" = "100mb";
    /// The fields an upload's form may have (each field is also at most
    /// 64 KiB); past it, 400 `INVALID_PAYLOAD` and nothing kept.
    FILES_MAX_FORM_FIELDS: "FILES_MAX_FORM_FIELDS" = "200";
    /// The bytes of an upload's form fields in all (names and values); past
    /// it, 400 `INVALID_PAYLOAD` and nothing kept.
    FILES_MAX_FORM_FIELDS_SIZE: "FILES_MAX_FORM_FIELDS_SIZE" = "1mb";
    /// Types uploads may have, comma-separated (`image/*,application/pdf`);
    /// another is 400 `INVALID_PAYLOAD` "File is of invalid content type".
    FILES_MIME_TYPE_ALLOW_LIST: "FILES_MIME_TYPE_ALLOW_LIST" = "*/*";

    section "Assets";
    /// `max-age` of an asset's `Cache-Control` (`30s`, `15m`, `2h`, `7d`,
    /// or milliseconds; `0`).
    ASSETS_CACHE_TTL: "ASSETS_CACHE_TTL" = "30d";
    /// A directive of the assets' `Content-Security-Policy`, which is
    /// `default-src 'none'` (Directus's): `__IMG_SRC="'self' data:"` (or
    /// `array:'self',data:`) adds or replaces `img-src`.
    ASSETS_CONTENT_SECURITY_POLICY_DIRECTIVES: "ASSETS_CONTENT_SECURITY_POLICY_DIRECTIVES__<NAME>";
    /// The assets' whole `Content-Security-Policy`, in place of the
    /// directives.
    ASSETS_CONTENT_SECURITY_POLICY: "ASSETS_CONTENT_SECURITY_POLICY";
}

/// The file storage and the rules of uploads.
#[derive(Debug)]
pub struct Files {
    pub storage: Storage,
    /// Largest upload, in bytes (`FILES_MAX_UPLOAD_SIZE`, default 100 MB).
    pub max_upload_size: u64,
    /// Form fields an upload's request may hold, and their bytes in all
    /// (`FILES_MAX_FORM_FIELDS`, default 200; `FILES_MAX_FORM_FIELDS_SIZE`,
    /// default 1 MB): a form is held whole until its file.
    pub max_form_fields: usize,
    pub max_form_fields_size: u64,
    /// Types an upload may have (`FILES_MIME_TYPE_ALLOW_LIST`: `type/sub`,
    /// `type/*` or `*/*`; default any).
    pub allowed_types: Vec<String>,
    /// How long clients may keep an asset (`ASSETS_CACHE_TTL`, default
    /// `30d`), in its `Cache-Control`.
    pub cache_ttl: std::time::Duration,
    /// Image transformations of assets (`ASSETS_TRANSFORM_*`).
    pub transforms: transform::Settings,
    /// Transformations running now, at most `transforms.max_concurrent`
    /// (one that ran past its time gives its slot back then).
    pub transform_slots: std::sync::Arc<tokio::sync::Semaphore>,
    /// The memory transformations may take at once, in KiB
    /// (`transforms.memory_budget`): each reserves its estimate first.
    pub transform_memory: std::sync::Arc<tokio::sync::Semaphore>,
    /// Every asset's `Content-Security-Policy`
    /// (`ASSETS_CONTENT_SECURITY_POLICY*`).
    pub content_security_policy: String,
}

/// How many first bytes of an upload are looked at for its type and an
/// image's size (a JPEG's size may follow its EXIF block).
pub const HEAD_LEN: usize = 256 * 1024;

impl Files {
    /// The storage locations and the upload rules from the environment; a
    /// `local` location without a root keeps its files in `default_root`.
    /// The storage is opened once every setting has been read.
    pub fn from_env(env: &Env, default_root: &std::path::Path) -> Result<Self, String> {
        let transforms = transform::Settings::from_env(env)?;
        let locations = locations::settings_from(env, default_root)?;
        let policy = content_security_policy(
            ASSETS_CONTENT_SECURITY_POLICY_DIRECTIVES
                .each(env)
                .into_iter()
                .chain(
                    ASSETS_CONTENT_SECURITY_POLICY
                        .get(env)
                        .map(|v| (ASSETS_CONTENT_SECURITY_POLICY.env.to_string(), v)),
                ),
        )?;
        let size = |s: crate::settings::Setting| -> Result<u64, String> {
            let v = s.get_unless_blank(env).unwrap_or_default();
            parse_size(&v).ok_or_else(|| {
                format!(
                    "{}: \"{v}\" is not a size (bytes, or a number with kb, mb or gb)",
                    s.env
                )
            })
        };
        let max_upload_size = size(FILES_MAX_UPLOAD_SIZE)?;
        let max_form_fields = {
            let v = FILES_MAX_FORM_FIELDS
                .get_unless_blank(env)
                .unwrap_or_default();
            v.trim()
                .parse()
                .map_err(|_| format!("FILES_MAX_FORM_FIELDS: \"{v}\" is not a whole number"))?
        };
        let max_form_fields_size = size(FILES_MAX_FORM_FIELDS_SIZE)?;
        let allowed_types = FILES_MIME_TYPE_ALLOW_LIST
            .get_unless_blank(env)
            .unwrap_or_default()
            .split(',')
            .map(|t| t.trim().to_ascii_lowercase())
            .filter(|t| !t.is_empty())
            .collect();
        let cache_ttl = match ASSETS_CACHE_TTL.get_unless_blank(env) {
            Some(v) if v.trim() == "0" => std::time::Duration::ZERO,
            v => crate::env_settings::parse_duration(&v.unwrap_or_default())
                .map_err(|e| format!("ASSETS_CACHE_TTL: {e}"))?,
        };
        Ok(Self {
            storage: Storage::open(locations)?,
            transform_slots: std::sync::Arc::new(tokio::sync::Semaphore::new(
                transforms.max_concurrent,
            )),
            transform_memory: std::sync::Arc::new(tokio::sync::Semaphore::new(
                transforms.memory_budget_kib(),
            )),
            transforms,
            content_security_policy: policy,
            max_upload_size,
            max_form_fields,
            max_form_fields_size,
            allowed_types,
            cache_ttl,
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

/// An asset's `Content-Security-Policy`, as Directus sends it: `default-src
/// 'none'`, with any directive set or replaced by
/// `ASSETS_CONTENT_SECURITY_POLICY_DIRECTIVES__<NAME>` (`IMG_SRC` is
/// `img-src`; a value `array:a,b` is the list `a b`), or the whole header
/// by `ASSETS_CONTENT_SECURITY_POLICY`.
pub fn content_security_policy(
    vars: impl Iterator<Item = (String, String)>,
) -> Result<String, String> {
    const WHOLE: &str = "ASSETS_CONTENT_SECURITY_POLICY";
    const DIRECTIVE: &str = "ASSETS_CONTENT_SECURITY_POLICY_DIRECTIVES__";
    let mut whole = None;
    let mut directives = vec![("default-src".to_string(), "'none'".to_string())];
    for (name, value) in vars {
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        // A header value cannot hold a line break, and a `;` or `,` would
        // smuggle in directives or a second policy.
        let checked = |v: &str| -> Result<String, String> {
            if v.chars().any(|c| c.is_control() || c == ';' || c == ',') {
                Err(format!("{name}: \"{v}\" cannot be part of a policy"))
            } else {
                Ok(v.to_string())
            }
        };
        if name == WHOLE {
            if value.chars().any(char::is_control) {
                return Err(format!("{WHOLE}: a policy is one line"));
            }
            whole = Some(value.to_string());
        } else if let Some(directive) = name.strip_prefix(DIRECTIVE) {
            let directive = directive.to_ascii_lowercase().replace('_', "-");
            let value = match value.strip_prefix("array:") {
                Some(list) => list
                    .split(',')
                    .map(|v| checked(v.trim()))
                    .collect::<Result<Vec<_>, _>>()?
                    .join(" "),
                None => checked(value)?,
            };
            match directives.iter_mut().find(|(d, _)| *d == directive) {
                Some(existing) => existing.1 = value,
                None => directives.push((directive, value)),
            }
        }
    }
    if let Some(whole) = whole {
        return Ok(whole);
    }
    directives.sort_by(|a, b| {
        (a.0 != "default-src")
            .cmp(&(b.0 != "default-src"))
            .then(a.0.cmp(&b.0))
    });
    Ok(directives
        .iter()
        .map(|(d, v)| format!("{d} {v}"))
        .collect::<Vec<_>>()
        .join("; "))
}

/// Whether a browser may show an asset of type `mime` in place, on the
/// platform's origin: only types it renders without running anything in
/// the page (raster images, audio, video, plain text, PDF). Any other
/// (HTML, SVG, XML, JavaScript, what is unknown) is served as an
/// attachment, so that an upload cannot run script as the site.
pub fn shown_inline(mime: &str) -> bool {
    const SAFE: &[&str] = &[
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "image/avif",
        "image/bmp",
        "image/x-icon",
        "image/vnd.microsoft.icon",
        "text/plain",
        "application/pdf",
    ];
    let essence = essence_of(mime);
    SAFE.contains(&essence.as_str())
        || ["audio/", "video/"].iter().any(|family| {
            essence.strip_prefix(family).is_some_and(|sub| {
                !sub.is_empty()
                    && sub
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            })
        })
}

/// `type/subtype` of a media type, in lower case, without parameters.
fn essence_of(mime: &str) -> String {
    mime.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The `Content-Type` an asset of the recorded type `mime` is served with:
/// the type itself when it is a well-formed `type/subtype`, else
/// `application/octet-stream` (never nothing, which a browser would
/// sniff).
pub fn served_type(mime: &str) -> String {
    let essence = essence_of(mime);
    let token = |t: &str| {
        !t.is_empty()
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&^_.+-".contains(c))
    };
    match essence.split_once('/') {
        Some((kind, sub)) if token(kind) && token(sub) => essence,
        _ => "application/octet-stream".into(),
    }
}

/// The type of an upload: what its first bytes say, else what the client
/// declared, else `application/octet-stream`. Bytes that merely look like
/// text (HTML, XML, a script) never set the type: sniffing would turn a
/// `text/plain` upload into a page a browser runs.
pub fn content_type(head: &[u8], declared: Option<&str>) -> String {
    infer::get(head)
        .filter(|t| t.matcher_type() != infer::MatcherType::Text)
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
pub fn default_root(database: &platform_store::storage::Location) -> std::path::PathBuf {
    match database {
        platform_store::storage::Location::File(file) => file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| std::path::Path::new("."))
            .join("uploads"),
        platform_store::storage::Location::Postgres(_) => std::path::PathBuf::from("uploads"),
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
    fn text_that_looks_like_a_page_keeps_its_declared_type() {
        let page = b"<!doctype html><html><script>alert(1)</script></html>";
        assert_eq!(content_type(page, Some("text/plain")), "text/plain");
        assert_eq!(content_type(page, None), "application/octet-stream");
        assert_eq!(
            content_type(b"<?xml version=\"1.0\"?><svg/>", Some("text/plain")),
            "text/plain"
        );
    }

    #[test]
    fn only_types_that_run_nothing_are_shown_in_place() {
        for safe in [
            "image/png",
            "IMAGE/JPEG",
            "video/webm",
            "audio/mpeg",
            "text/plain; charset=utf-8",
            "application/pdf",
        ] {
            assert!(shown_inline(safe), "{safe}");
        }
        for unsafe_type in [
            "text/html",
            "image/svg+xml",
            "text/xml",
            "application/xhtml+xml",
            "application/javascript",
            "text/javascript",
            "application/octet-stream",
            "video/",
            "multipart/x-mixed-replace",
            "",
        ] {
            assert!(!shown_inline(unsafe_type), "{unsafe_type}");
        }
        assert_eq!(served_type("Image/PNG"), "image/png");
        assert_eq!(served_type("text/html\r\nX: y"), "application/octet-stream");
        assert_eq!(served_type("nonsense"), "application/octet-stream");
    }

    #[test]
    fn the_asset_policy_is_directus_default_or_the_settings() {
        let vars = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert_eq!(
            content_security_policy(vars(&[])).unwrap(),
            "default-src 'none'"
        );
        assert_eq!(
            content_security_policy(vars(&[
                (
                    "ASSETS_CONTENT_SECURITY_POLICY_DIRECTIVES__IMG_SRC",
                    "array:'self', data:"
                ),
                (
                    "ASSETS_CONTENT_SECURITY_POLICY_DIRECTIVES__MEDIA_SRC",
                    "'self'"
                ),
            ]))
            .unwrap(),
            "default-src 'none'; img-src 'self' data:; media-src 'self'"
        );
        assert_eq!(
            content_security_policy(vars(&[("ASSETS_CONTENT_SECURITY_POLICY", "sandbox")]))
                .unwrap(),
            "sandbox"
        );
        assert!(content_security_policy(vars(&[(
            "ASSETS_CONTENT_SECURITY_POLICY_DIRECTIVES__SCRIPT_SRC",
            "'self'; script-src *"
        )]))
        .is_err());
    }

    #[test]
    fn allow_lists_match_types_and_families() {
        let files = |allowed: &[&str]| Files {
            storage: Storage::open(vec![]).unwrap_or_else(|_| unreachable!()),
            max_upload_size: 1,
            max_form_fields: 1,
            max_form_fields_size: 1,
            allowed_types: allowed.iter().map(|s| s.to_string()).collect(),
            cache_ttl: std::time::Duration::ZERO,
            transforms: transform::Settings::from_env(&Env::default()).unwrap(),
            transform_slots: std::sync::Arc::new(tokio::sync::Semaphore::new(1)),
            transform_memory: std::sync::Arc::new(tokio::sync::Semaphore::new(1)),
            content_security_policy: String::new(),
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
