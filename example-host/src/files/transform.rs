//! Image transformations of assets, as Directus's query parameters ask
//! them: `width`, `height`, `fit`, `quality`, `format` (`auto`: WebP when
//! the client takes it), `withoutEnlargement`, a preset by `key`
//! (`ASSETS_TRANSFORM_PRESETS`) and `transforms` (a JSON list of steps).
//! Other parameters are ignored. A transformation is computed off the
//! async workers and kept beside the original under a key derived from it
//! (`__transforms/<file id>/<hash>.<ext>`, a preset's
//! `__transforms/<file id>/preset-<hash>.<ext>`): presets always, others
//! up to `ASSETS_TRANSFORM_MAX_KEPT_PER_FILE` a file.

use std::io::Cursor;

use image::{DynamicImage, ImageDecoder, ImageFormat};
use serde_json::Value;
use sha2::Digest;

use crate::settings::{declare, Env, Setting};

declare! {
    section "Assets";
    /// Named transformations: a JSON array of `{key, width, height, fit,
    /// quality, format, withoutEnlargement, transforms}`, asked for with
    /// `?key=`.
    ASSETS_TRANSFORM_PRESETS: "ASSETS_TRANSFORM_PRESETS";
    /// Pixels an original or output may be wide or tall; larger is 400.
    ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION: "ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION" = "6000";
    /// Transformations at once; past it 503 with `Retry-After`.
    ASSETS_TRANSFORM_MAX_CONCURRENT: "ASSETS_TRANSFORM_MAX_CONCURRENT" = "25";
    /// Longest a transformation may take; past it 503 (the slot is given
    /// back then, and the work stops at its next check).
    ASSETS_TRANSFORM_TIMEOUT: "ASSETS_TRANSFORM_TIMEOUT" = "7500ms";
    /// Which transformations are made for signed-in callers (Directus's
    /// `storage_asset_transform`): `all` (as Directus, so a public site's
    /// `?width=…&format=…` thumbnails work), `presets` (only `?key=`;
    /// others 400 `INVALID_QUERY` "Only configured presets can be used in
    /// asset generation."), `none` (400 "Dynamic asset generation has been
    /// disabled for this project.").
    ASSETS_TRANSFORM_ALLOWED: "ASSETS_TRANSFORM_ALLOWED" = "all";
    /// The same for callers who are not signed in: `presets` locks them to
    /// the presets.
    ASSETS_TRANSFORM_PUBLIC_ALLOWED: "ASSETS_TRANSFORM_PUBLIC_ALLOWED" = "all";
    /// Transformations other than presets kept of one file. Past it a new
    /// one is still made and served, with its usual headers, but not kept
    /// (made again when asked again); presets are always kept. Nothing is
    /// evicted, so hosts sharing a storage need no agreement: each counts
    /// the file's `__transforms/<id>/` folder before keeping and again
    /// after writing, and one past the bound removes itself. The kept
    /// transformations are thus at most files × (this + presets) outputs,
    /// each within `ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION`; `0` keeps
    /// presets only.
    ASSETS_TRANSFORM_MAX_KEPT_PER_FILE: "ASSETS_TRANSFORM_MAX_KEPT_PER_FILE" = "32";
    /// Steps `transforms` may have (more: 400 `INVALID_QUERY`
    /// "\"transforms\" Parameter is only allowed 5 transformations", as
    /// Directus).
    ASSETS_TRANSFORM_MAX_OPERATIONS: "ASSETS_TRANSFORM_MAX_OPERATIONS" = "5";
    /// The memory all transformations at once may take (a size, as
    /// `FILES_MAX_UPLOAD_SIZE`): each reserves its estimate (from the
    /// image's header: the original, its decoded pixels, its 8-bit working
    /// copies and the output) before it decodes, and one that does not fit
    /// beside those running is 503 `SERVICE_UNAVAILABLE` "Server too busy"
    /// with `Retry-After` (the timeout, in seconds, plus one).
    ASSETS_TRANSFORM_MEMORY_BUDGET: "ASSETS_TRANSFORM_MEMORY_BUDGET" = "1gib";
    /// The most one transformation may take (at most the budget): a larger
    /// estimate is 400 `ILLEGAL_ASSET_TRANSFORMATION` before anything is
    /// decoded, and the decoder is held to it (`image`'s `max_alloc`).
    ASSETS_TRANSFORM_MAX_IMAGE_MEMORY: "ASSETS_TRANSFORM_MAX_IMAGE_MEMORY" = "512mib";
}

/// How an image fills the box of `width` × `height`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Both sides covered, the overflow cropped (the default).
    Cover,
    /// Inside the box, the rest padded transparent.
    Contain,
    /// Inside the box, as large as fits.
    Inside,
    /// Covering the box, as small as covers, uncropped.
    Outside,
}

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jpeg,
    Png,
    Webp,
    Gif,
    /// WebP for clients that take it, else the original's format.
    Auto,
}

impl Format {
    fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "jpg" | "jpeg" => Some(Self::Jpeg),
            "png" => Some(Self::Png),
            "webp" => Some(Self::Webp),
            "gif" => Some(Self::Gif),
            "auto" => Some(Self::Auto),
            _ => None,
        }
    }

    pub fn mime(self) -> &'static str {
        match self {
            Self::Jpeg => "image/jpeg",
            Self::Png => "image/png",
            Self::Webp => "image/webp",
            Self::Gif => "image/gif",
            Self::Auto => "application/octet-stream",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Self::Jpeg => "jpg",
            Self::Png => "png",
            Self::Webp => "webp",
            Self::Gif => "gif",
            Self::Auto => "bin",
        }
    }

    fn of_mime(mime: &str) -> Option<Self> {
        match mime {
            "image/jpeg" => Some(Self::Jpeg),
            "image/png" => Some(Self::Png),
            "image/webp" => Some(Self::Webp),
            "image/gif" => Some(Self::Gif),
            _ => None,
        }
    }
}

/// One step of `transforms`.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Degrees, a multiple of 90.
    Rotate(i64),
    Flip,
    Flop,
    Blur(f32),
    Grayscale,
}

/// A transformation asked for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transform {
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub fit: Option<Fit>,
    pub quality: Option<u8>,
    pub format: Option<Format>,
    pub without_enlargement: bool,
    pub steps: Vec<Step>,
}

/// Which transformations are made (Directus's `storage_asset_transform`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// Any, asked by parameters or by a preset.
    All,
    /// Presets (`key`) only.
    Presets,
    /// None.
    None,
}

impl Allowed {
    fn parse(name: &str, text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "all" => Ok(Self::All),
            "presets" => Ok(Self::Presets),
            "none" => Ok(Self::None),
            other => Err(format!("{name}={other}: use all, presets or none")),
        }
    }

    /// Whether a transformation asked by `query` may be made; the refusal
    /// in Directus's words otherwise (400 `INVALID_QUERY`).
    pub fn permits(self, query: Option<&str>) -> Result<(), String> {
        match self {
            Self::All => Ok(()),
            Self::Presets if is_preset(query) => Ok(()),
            Self::Presets => Err("Only configured presets can be used in asset generation.".into()),
            Self::None => {
                Err("Dynamic asset generation has been disabled for this project.".into())
            }
        }
    }
}

/// The transformation settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `ASSETS_TRANSFORM_ALLOWED` (`all`): which transformations signed-in
    /// callers may have made (and kept).
    pub allowed: Allowed,
    /// `ASSETS_TRANSFORM_PUBLIC_ALLOWED` (`all`, as Directus): the same
    /// for callers who are not signed in; `presets` locks them to presets.
    pub public_allowed: Allowed,
    /// `ASSETS_TRANSFORM_MAX_KEPT_PER_FILE` (32): transformations other
    /// than presets kept of one file; past it a new one is made and served
    /// but not kept, so no caller grows the storage without bound.
    pub max_kept_per_file: usize,
    /// `ASSETS_TRANSFORM_PRESETS`: named transformations (`key`).
    pub presets: Vec<(String, Transform)>,
    /// `ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION` (6000): larger originals are
    /// not transformed.
    pub max_dimension: u64,
    /// `ASSETS_TRANSFORM_MAX_CONCURRENT` (25): transformations at once;
    /// past it 503.
    pub max_concurrent: usize,
    /// `ASSETS_TRANSFORM_TIMEOUT` (7500 ms): past it 503, and the work
    /// stops at its next check.
    pub timeout: std::time::Duration,
    /// `ASSETS_TRANSFORM_MAX_OPERATIONS` (5): steps `transforms` may have.
    pub max_operations: usize,
    /// `ASSETS_TRANSFORM_MAX_IMAGE_MEMORY` (512 MiB, at most the budget):
    /// the most one transformation may take; a larger one is refused (400)
    /// before anything is decoded, and the decoder is held to it.
    pub max_image_memory: u64,
    /// `ASSETS_TRANSFORM_MEMORY_BUDGET` (1 GiB): the most all
    /// transformations at once may take; one that does not fit beside the
    /// others is 503 with `Retry-After`.
    pub memory_budget: u64,
}

impl Settings {
    /// From the environment; a blank variable counts as unset.
    pub fn from_env(env: &Env) -> Result<Self, String> {
        let var = |s: Setting| s.get_unless_blank(env);
        let number = |s: Setting| -> Result<u64, String> {
            let v = var(s).unwrap_or_default();
            v.trim()
                .parse()
                .map_err(|_| format!("{}: \"{v}\" is not a whole number", s.env))
        };
        let size = |s: Setting| -> Result<u64, String> {
            let v = var(s).unwrap_or_default();
            super::parse_size(&v).filter(|n| *n > 0).ok_or_else(|| {
                format!("{}: \"{v}\" is not a size (bytes, or a number with kb, mb, gb, kib, mib or gib)", s.env)
            })
        };
        let memory_budget = size(ASSETS_TRANSFORM_MEMORY_BUDGET)?;
        let max_image_memory = size(ASSETS_TRANSFORM_MAX_IMAGE_MEMORY)?;
        let presets = match var(ASSETS_TRANSFORM_PRESETS) {
            None => Vec::new(),
            Some(text) => {
                let list: Value = serde_json::from_str(&text)
                    .map_err(|e| format!("ASSETS_TRANSFORM_PRESETS is not JSON: {e}"))?;
                let Value::Array(list) = list else {
                    return Err("ASSETS_TRANSFORM_PRESETS must be a JSON array".into());
                };
                let mut presets = Vec::new();
                for preset in list {
                    let key = preset
                        .get("key")
                        .and_then(Value::as_str)
                        .ok_or("ASSETS_TRANSFORM_PRESETS: every preset needs a \"key\"")?
                        .to_string();
                    let get = |name: &str| -> Option<String> {
                        preset.get(name).and_then(|v| match v {
                            Value::String(s) => Some(s.clone()),
                            Value::Null => None,
                            other => Some(other.to_string()),
                        })
                    };
                    let transform = Transform::from_params(&get, None)
                        .map_err(|e| format!("ASSETS_TRANSFORM_PRESETS, preset \"{key}\": {e}"))?;
                    presets.push((key, transform));
                }
                presets
            }
        };
        let allowed = |s: Setting| Allowed::parse(s.env, &var(s).unwrap_or_default());
        Ok(Self {
            allowed: allowed(ASSETS_TRANSFORM_ALLOWED)?,
            public_allowed: allowed(ASSETS_TRANSFORM_PUBLIC_ALLOWED)?,
            max_kept_per_file: usize::try_from(number(ASSETS_TRANSFORM_MAX_KEPT_PER_FILE)?)
                .unwrap_or(usize::MAX),
            presets,
            max_dimension: number(ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION)?,
            max_concurrent: number(ASSETS_TRANSFORM_MAX_CONCURRENT)?.max(1) as usize,
            timeout: crate::env_settings::parse_duration(
                &var(ASSETS_TRANSFORM_TIMEOUT).unwrap_or_default(),
            )
            .map_err(|e| format!("ASSETS_TRANSFORM_TIMEOUT: {e}"))?,
            max_operations: number(ASSETS_TRANSFORM_MAX_OPERATIONS)? as usize,
            max_image_memory: max_image_memory.min(memory_budget),
            memory_budget,
        })
    }

    /// The budget in KiB, as the semaphore that keeps it counts.
    pub fn memory_budget_kib(&self) -> usize {
        usize::try_from(self.memory_budget / 1024)
            .unwrap_or(usize::MAX)
            .min(tokio::sync::Semaphore::MAX_PERMITS)
    }
}

impl Transform {
    /// The transformation of an asset request's parameters (`None`: the
    /// original); an error is a 400.
    pub fn from_query(query: Option<&str>, settings: &Settings) -> Result<Option<Self>, String> {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let asked = Self::from_params(&get, Some(settings.max_operations))?;
        if let Some(key) = get("key") {
            if asked != Self::default() {
                return Err(
                    "You can't combine the \"key\" query parameter with any other transformation."
                        .into(),
                );
            }
            return match settings.presets.iter().find(|(k, _)| *k == key) {
                Some((_, preset)) => Ok(Some(preset.clone())),
                None => Err(format!("Key \"{key}\" isn't configured.")),
            };
        }
        Ok((asked != Self::default()).then_some(asked))
    }

    /// The transformation of parameters; `transforms` within
    /// `max_operations` steps, when given.
    fn from_params(
        get: &dyn Fn(&str) -> Option<String>,
        max_operations: Option<usize>,
    ) -> Result<Self, String> {
        let dimension = |name: &str| -> Result<Option<u32>, String> {
            match get(name) {
                None => Ok(None),
                Some(v) if v.trim().is_empty() => Ok(None),
                Some(v) => v
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .map(Some)
                    .ok_or_else(|| format!("\"{name}\" must be a positive integer")),
            }
        };
        let fit = match get("fit").as_deref() {
            None | Some("") => None,
            Some("cover") => Some(Fit::Cover),
            Some("contain") => Some(Fit::Contain),
            Some("inside") => Some(Fit::Inside),
            Some("outside") => Some(Fit::Outside),
            Some(other) => return Err(format!("\"fit\" cannot be \"{other}\"")),
        };
        let quality = match get("quality") {
            None => None,
            Some(v) => Some(
                v.trim()
                    .parse::<u8>()
                    .ok()
                    .filter(|q| (1..=100).contains(q))
                    .ok_or("\"quality\" must be between 1 and 100")?,
            ),
        };
        let format = match get("format") {
            None => None,
            Some(v) => {
                Some(Format::parse(&v).ok_or_else(|| format!("\"format\" cannot be \"{v}\""))?)
            }
        };
        let without_enlargement = matches!(
            get("withoutEnlargement").as_deref().map(str::trim),
            Some("true") | Some("1") | Some("")
        );
        let steps = match get("transforms") {
            None => Vec::new(),
            Some(text) => steps(&text, max_operations)?,
        };
        Ok(Self {
            width: dimension("width")?,
            height: dimension("height")?,
            fit,
            quality,
            format,
            without_enlargement,
            steps,
        })
    }

    /// The format written for a client that says what it `accept`s.
    pub fn output_format(&self, source: &str, accept: &str) -> Option<Format> {
        match self.format {
            Some(Format::Auto) => {
                if accept.contains("image/webp") {
                    Some(Format::Webp)
                } else {
                    Format::of_mime(source)
                }
            }
            Some(other) => Some(other),
            None => Format::of_mime(source),
        }
    }

    /// The key of this transformation of the file `id` written as
    /// `format`; a preset's is named apart, as it is not counted against
    /// the variants kept of the file.
    pub fn key(&self, id: &str, format: Format, preset: bool) -> String {
        let mut digest = sha2::Sha256::new();
        digest.update(format!("{self:?}/{format:?}").as_bytes());
        format!(
            "{}/{}{}.{}",
            prefix_of(id),
            if preset { PRESET_MARK } else { "" },
            &hex::encode(digest.finalize())[..24],
            format.extension()
        )
    }

    /// The bytes transforming `bytes` takes at most, from the image's
    /// header alone (nothing is decoded): the original, the decoded
    /// pixels, its 8-bit working copies through the steps, and the
    /// resized output with its encoding, in the phase that holds the most
    /// at once. Past `bounds` (a side, or the memory), too large.
    pub fn estimate(&self, bytes: &[u8], bounds: &Bounds) -> Result<u64, TransformError> {
        let reader = image::ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .map_err(failed)?;
        let decoder = reader.into_decoder().map_err(failed)?;
        let (w0, h0) = decoder.dimensions();
        if w0 > bounds.max_side || h0 > bounds.max_side {
            return Err(TransformError::TooLarge);
        }
        let area = |w: u32, h: u32| u64::from(w) * u64::from(h);
        let decoded = area(w0, h0) * u64::from(decoder.color_type().bytes_per_pixel());
        let pixels = area(w0, h0) * 4;
        // Either way up (an EXIF orientation or a step may turn it); an
        // output past the bound is refused before it is made.
        let output = [(w0, h0), (h0, w0)]
            .into_iter()
            .filter_map(|(w, h)| self.sizes(w, h, bounds.max_side).ok().flatten())
            .map(|s| area(s.width, s.height).max(area(s.resized.0, s.resized.1)) * 4)
            .max()
            .unwrap_or(pixels);
        let phases = [
            // Decoding, then the conversion to eight bits a channel.
            decoded + pixels,
            // A step: its input, its output, a blur's scratch.
            3 * pixels,
            // Resizing: the source, the resized, a `contain` canvas.
            pixels + 3 * output,
            // Encoding: the output, its converted copy, the encoding.
            3 * output,
        ];
        // The original, and the copy a decoder may make of it.
        let total = 2 * bytes.len() as u64 + phases.into_iter().max().unwrap_or(0);
        if total > bounds.max_memory {
            return Err(TransformError::TooLarge);
        }
        Ok(total)
    }

    /// Transforms the image `bytes` into `format` (blocking, CPU-bound),
    /// within `bounds`: the decoded original and the output within its
    /// sides whatever the record says, the decoder within its memory, and
    /// stopped at the next check once its flag is set. Unless the steps
    /// rotate it, the image is first turned as its EXIF orientation says,
    /// as Directus does.
    pub fn apply(
        &self,
        bytes: &[u8],
        format: Format,
        bounds: &Bounds,
    ) -> Result<Vec<u8>, TransformError> {
        let rotates = self.steps.iter().any(|s| matches!(s, Step::Rotate(_)));
        let mut img = decode(bytes, bounds, !rotates)?;
        for step in &self.steps {
            bounds.check()?;
            img = match step {
                Step::Rotate(d) => match d.rem_euclid(360) {
                    90 => img.rotate90(),
                    180 => img.rotate180(),
                    270 => img.rotate270(),
                    _ => img,
                },
                Step::Flip => img.flipv(),
                Step::Flop => img.fliph(),
                // A box blur: its cost does not grow with sigma.
                Step::Blur(sigma) => img.fast_blur(*sigma),
                Step::Grayscale => img.grayscale(),
            };
        }
        bounds.check()?;
        img = self.resized(img, bounds.max_side)?;
        bounds.check()?;
        let mut out = Checked {
            inner: Cursor::new(Vec::new()),
            cancel: bounds.cancel.clone(),
        };
        match format {
            Format::Jpeg => {
                let rgb = eight_bits(img, false);
                let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(
                    &mut out,
                    self.quality.unwrap_or(80),
                );
                rgb.write_with_encoder(encoder).map_err(failed)?;
            }
            Format::Webp => {
                let rgba = eight_bits(img, true);
                rgba.write_with_encoder(image::codecs::webp::WebPEncoder::new_lossless(&mut out))
                    .map_err(failed)?;
            }
            Format::Png => img.write_to(&mut out, ImageFormat::Png).map_err(failed)?,
            Format::Gif | Format::Auto => eight_bits(img, true)
                .write_to(&mut out, ImageFormat::Gif)
                .map_err(failed)?,
        }
        bounds.check()?;
        Ok(out.inner.into_inner())
    }

    /// The sizes an image of `w0` × `h0` is resized to: the box asked
    /// (`width`, `height`) and the resized image within it; `None` when
    /// no size is asked. Past `max` a side, too large, before a pixel is
    /// allocated.
    fn sizes(&self, w0: u32, h0: u32, max: u32) -> Result<Option<Sizes>, TransformError> {
        let (w0, h0) = (w0.max(1), h0.max(1));
        let (mut w, mut h) = match (self.width, self.height) {
            (None, None) => return Ok(None),
            (Some(w), None) => (w, scaled(h0, w, w0)),
            (None, Some(h)) => (scaled(w0, h, h0), h),
            (Some(w), Some(h)) => (w, h),
        };
        if self.without_enlargement && (w > w0 || h > h0) {
            let scale = (w0 as f64 / w as f64).min(h0 as f64 / h as f64);
            w = ((w as f64 * scale).round() as u32).max(1);
            h = ((h as f64 * scale).round() as u32).max(1);
        }
        let fit = match (self.width, self.height) {
            (Some(_), Some(_)) => self.fit.unwrap_or(Fit::Cover),
            _ => Fit::Cover,
        };
        let (rw, rh) = match fit {
            Fit::Cover => (w, h),
            Fit::Inside | Fit::Contain => inside(w0, h0, w, h),
            Fit::Outside => {
                let scale = (w as f64 / w0 as f64).max(h as f64 / h0 as f64);
                (
                    (w0 as f64 * scale).round().max(1.0).min(u32::MAX as f64) as u32,
                    (h0 as f64 * scale).round().max(1.0).min(u32::MAX as f64) as u32,
                )
            }
        };
        if [w, h, rw, rh].into_iter().any(|side| side > max) {
            return Err(TransformError::TooLarge);
        }
        Ok(Some(Sizes {
            width: w,
            height: h,
            resized: (rw, rh),
            fit,
        }))
    }

    fn resized(&self, img: DynamicImage, max: u32) -> Result<DynamicImage, TransformError> {
        let Some(sizes) = self.sizes(img.width(), img.height(), max)? else {
            return Ok(img);
        };
        let (w, h) = (sizes.width, sizes.height);
        let (rw, rh) = sizes.resized;
        let resized = resize(img, rw, rh, sizes.fit == Fit::Cover)?;
        if sizes.fit != Fit::Contain {
            return Ok(resized);
        }
        let inner = resized.to_rgba8();
        let mut canvas = image::RgbaImage::new(w, h);
        let x = (w - inner.width()) / 2;
        let y = (h - inner.height()) / 2;
        image::imageops::overlay(&mut canvas, &inner, x as i64, y as i64);
        Ok(DynamicImage::ImageRgba8(canvas))
    }
}

/// What a transformation resizes to (see [`Transform::sizes`]).
struct Sizes {
    width: u32,
    height: u32,
    resized: (u32, u32),
    fit: Fit,
}

/// What one transformation may use: pixels a side, bytes of memory, and
/// the flag that stops it (set when its time is up).
#[derive(Debug, Clone)]
pub struct Bounds {
    pub max_side: u32,
    pub max_memory: u64,
    pub cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Bounds {
    pub fn new(max_side: u32, max_memory: u64) -> Self {
        Self {
            max_side,
            max_memory,
            cancel: Default::default(),
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn check(&self) -> Result<(), TransformError> {
        if self.cancelled() {
            Err(TransformError::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// A reader or writer that fails once `cancel` is set: a decoder reading
/// the original, or an encoder writing the output, stops at its next
/// read or write instead of running to its end.
struct Checked<T> {
    inner: T,
    cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<T> Checked<T> {
    fn check(&self) -> std::io::Result<()> {
        if self.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            Err(std::io::Error::other("the transformation was stopped"))
        } else {
            Ok(())
        }
    }
}

impl<T: std::io::Read> std::io::Read for Checked<T> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.check()?;
        self.inner.read(buf)
    }
}

impl<T: std::io::Seek> std::io::Seek for Checked<T> {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

impl<T: std::io::Write> std::io::Write for Checked<T> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.check()?;
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `img` at eight bits a channel, with alpha when `alpha` (or it has it
/// and `alpha` is not asked): the pixel types the resizer and encoders
/// take; unchanged when it already is one.
fn eight_bits(img: DynamicImage, alpha: bool) -> DynamicImage {
    match img {
        DynamicImage::ImageRgba8(_) if alpha => img,
        DynamicImage::ImageRgb8(_) if !alpha => img,
        other if alpha => DynamicImage::ImageRgba8(other.to_rgba8()),
        other => DynamicImage::ImageRgb8(other.to_rgb8()),
    }
}

/// Why a transformation was not made.
#[derive(Debug, thiserror::Error)]
pub enum TransformError {
    /// The original or the output is past `ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION`.
    #[error("the image is too large to be transformed")]
    TooLarge,
    /// The bytes do not decode, or the output cannot be written.
    #[error("{0}")]
    Failed(String),
    /// Its flag was set: the answer went out already.
    #[error("the transformation was stopped")]
    Cancelled,
    /// Its memory does not fit beside the transformations running now.
    #[error("too many transformations at once")]
    Busy,
}

fn failed(e: impl std::fmt::Display) -> TransformError {
    TransformError::Failed(e.to_string())
}

/// Decodes an image within `bounds`, turned as its EXIF orientation says
/// when `orient`, at eight bits a channel (a deeper original's decoded
/// pixels are let go at once).
fn decode(bytes: &[u8], bounds: &Bounds, orient: bool) -> Result<DynamicImage, TransformError> {
    let source = std::io::BufReader::new(Checked {
        inner: Cursor::new(bytes),
        cancel: bounds.cancel.clone(),
    });
    let mut reader = image::ImageReader::new(source)
        .with_guessed_format()
        .map_err(|e| match bounds.check() {
            Ok(()) => failed(e),
            Err(stopped) => stopped,
        })?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(bounds.max_side);
    limits.max_image_height = Some(bounds.max_side);
    limits.max_alloc = Some(bounds.max_memory);
    reader.limits(limits);
    let stopped_or = |e: image::ImageError, bounds: &Bounds| match e {
        _ if bounds.cancelled() => TransformError::Cancelled,
        image::ImageError::Limits(_) => TransformError::TooLarge,
        e => failed(e),
    };
    let mut decoder = reader.into_decoder().map_err(|e| stopped_or(e, bounds))?;
    let orientation = decoder
        .orientation()
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    let img = DynamicImage::from_decoder(decoder).map_err(|e| stopped_or(e, bounds))?;
    let alpha = img.color().has_alpha();
    let mut img = eight_bits(img, alpha);
    if orient {
        img.apply_orientation(orientation);
    }
    Ok(img)
}

/// `side` scaled by `to / from`, at least 1.
fn scaled(side: u32, to: u32, from: u32) -> u32 {
    ((u64::from(side) * u64::from(to)) / u64::from(from.max(1))).max(1) as u32
}

/// The largest size of the original's shape within `w` × `h`.
fn inside(w0: u32, h0: u32, w: u32, h: u32) -> (u32, u32) {
    let scale = (w as f64 / w0 as f64).min(h as f64 / h0 as f64);
    (
        ((w0 as f64 * scale).round() as u32).clamp(1, w),
        ((h0 as f64 * scale).round() as u32).clamp(1, h),
    )
}

/// `img` resized to exactly `w` × `h` (Lanczos3, SIMD where the CPU has
/// it); `fill` crops the original, centred, to the new shape first.
fn resize(img: DynamicImage, w: u32, h: u32, fill: bool) -> Result<DynamicImage, TransformError> {
    // Eight bits a channel, with alpha only where the original has it:
    // the pixel types the resizer takes.
    let alpha = img.color().has_alpha();
    let src = eight_bits(img, alpha);
    let mut dst = DynamicImage::new(w, h, src.color());
    let mut options = fast_image_resize::ResizeOptions::new().resize_alg(
        fast_image_resize::ResizeAlg::Convolution(fast_image_resize::FilterType::Lanczos3),
    );
    if fill {
        options = options.fit_into_destination(None);
    }
    fast_image_resize::Resizer::new()
        .resize(&src, &mut dst, &options)
        .map_err(failed)?;
    Ok(dst)
}

/// `transforms`: `[["rotate", 90], ["blur", 2], ["grayscale"], ["flip"],
/// ["flop"]]`; other steps are refused.
fn steps(text: &str, max_operations: Option<usize>) -> Result<Vec<Step>, String> {
    let bad = || "\"transforms\" must be a JSON array of [name, ...arguments]".to_string();
    let list: Value = serde_json::from_str(text).map_err(|_| bad())?;
    let Value::Array(list) = list else {
        return Err(bad());
    };
    if let Some(max) = max_operations.filter(|max| list.len() > *max) {
        // Directus's words.
        return Err(format!(
            "\"transforms\" Parameter is only allowed {max} transformations"
        ));
    }
    let mut steps = Vec::new();
    for step in list {
        let Value::Array(parts) = step else {
            return Err(bad());
        };
        let name = parts.first().and_then(Value::as_str).ok_or_else(bad)?;
        let number = || parts.get(1).and_then(Value::as_f64);
        steps.push(match name {
            "rotate" => Step::Rotate(number().unwrap_or(0.0) as i64),
            "flip" => Step::Flip,
            "flop" => Step::Flop,
            "blur" => Step::Blur(number().unwrap_or(1.0).clamp(0.3, 100.0) as f32),
            "grayscale" | "greyscale" => Step::Grayscale,
            other => return Err(format!("the transform \"{other}\" is not supported")),
        });
    }
    Ok(steps)
}

/// The folder of the transformations kept of file `id`.
pub fn prefix_of(id: &str) -> String {
    format!("__transforms/{id}")
}

/// How a kept preset's name begins.
const PRESET_MARK: &str = "preset-";

/// Whether the kept transformation `key` counts against its file's
/// variants (every one but a preset).
pub fn counts_as_variant(key: &str) -> bool {
    !key.rsplit('/')
        .next()
        .unwrap_or(key)
        .starts_with(PRESET_MARK)
}

/// Whether a transformation asked by `query` is a preset (`key`, which
/// takes no other parameter).
pub fn is_preset(query: Option<&str>) -> bool {
    form_urlencoded::parse(query.unwrap_or("").as_bytes()).any(|(k, _)| k == "key")
}

/// Whether transformations apply to a file of type `mime`.
pub fn transformable(mime: &str) -> bool {
    Format::of_mime(mime).is_some()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings::from_env(&Env::of(&[(
            "ASSETS_TRANSFORM_PRESETS",
            r#"[{"key": "thumb", "width": 10, "height": 10, "fit": "contain"}]"#,
        )]))
        .expect("settings")
    }

    #[test]
    fn parameters_read_as_directus_reads_them() {
        let s = settings();
        assert_eq!(Transform::from_query(Some("x=1&download"), &s), Ok(None));
        let t = Transform::from_query(
            Some("width=20&fit=inside&format=auto&withoutEnlargement=true&foo=1"),
            &s,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (t.width, t.height, t.fit),
            (Some(20), None, Some(Fit::Inside))
        );
        assert!(t.without_enlargement);
        assert_eq!(
            t.output_format("image/png", "image/webp,*/*"),
            Some(Format::Webp)
        );
        assert_eq!(t.output_format("image/png", "*/*"), Some(Format::Png));
        let preset = Transform::from_query(Some("key=thumb"), &s)
            .unwrap()
            .unwrap();
        assert_eq!(preset.fit, Some(Fit::Contain));
        assert!(Transform::from_query(Some("key=thumb&width=3"), &s).is_err());
        assert!(Transform::from_query(Some("key=nope"), &s).is_err());
        assert!(Transform::from_query(Some("width=-1"), &s).is_err());
        assert!(Transform::from_query(Some("transforms=[[\"explode\"]]"), &s).is_err());
    }

    fn bounds(max_side: u32) -> Bounds {
        Bounds::new(max_side, 1 << 30)
    }

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
            w,
            h,
            image::Rgba([200, 10, 10, 255]),
        ));
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, ImageFormat::Png).unwrap();
        out.into_inner()
    }

    fn size_of(bytes: &[u8]) -> (u32, u32) {
        let img = image::load_from_memory(bytes).unwrap();
        (img.width(), img.height())
    }

    /// A 40x20 JPEG whose EXIF says "turn a quarter clockwise" (6).
    pub(crate) fn jpeg_turned_quarter() -> Vec<u8> {
        use image::ImageEncoder;
        let img = image::RgbImage::from_pixel(40, 20, image::Rgb([10, 200, 10]));
        let mut out = Cursor::new(Vec::new());
        let mut encoder = image::codecs::jpeg::JpegEncoder::new(&mut out);
        // A little-endian TIFF block with one entry: orientation (0x0112) = 6.
        let exif = [
            b"II\x2a\x00\x08\x00\x00\x00\x01\x00".as_slice(),
            &[0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0],
        ]
        .concat();
        encoder.set_exif_metadata(exif).unwrap();
        encoder
            .write_image(img.as_raw(), 40, 20, image::ExtendedColorType::Rgb8)
            .unwrap();
        out.into_inner()
    }

    #[test]
    fn the_exif_orientation_is_applied_first() {
        let t = Transform::from_query(Some("width=10"), &settings())
            .unwrap()
            .unwrap();
        let out = t
            .apply(&jpeg_turned_quarter(), Format::Png, &bounds(6000))
            .unwrap();
        // Shown 20 wide and 40 high, so 10 wide is 20 high.
        assert_eq!(size_of(&out), (10, 20));
    }

    #[test]
    fn outputs_and_originals_past_the_bound_are_refused() {
        let s = settings();
        let t = |q: &str| Transform::from_query(Some(q), &s).unwrap().unwrap();
        let too_large = |q: &str, max: u32| {
            matches!(
                t(q).apply(&png(40, 2), Format::Png, &bounds(max)),
                Err(TransformError::TooLarge)
            )
        };
        assert!(too_large("width=10", 30), "the original");
        assert!(too_large("width=100", 60), "the output");
        assert!(too_large("width=50&height=50&fit=outside", 60), "outside");
        assert!(!too_large("width=100&withoutEnlargement", 60));
        assert!(!too_large("width=50&height=50&fit=inside", 60));
        assert!(matches!(
            t("width=10").apply(&b"not an image"[..], Format::Png, &bounds(6000)),
            Err(TransformError::Failed(_))
        ));
    }

    #[test]
    fn which_transformations_are_made_is_a_setting() {
        assert_eq!(Allowed::All.permits(Some("width=3")), Ok(()));
        assert_eq!(Allowed::Presets.permits(Some("key=thumb")), Ok(()));
        assert!(Allowed::Presets.permits(Some("width=3")).is_err());
        assert!(Allowed::None.permits(Some("key=thumb")).is_err());
        let s = settings();
        assert_eq!((s.allowed, s.public_allowed), (Allowed::All, Allowed::All));
        assert_eq!(s.max_kept_per_file, 32);
    }

    #[test]
    fn presets_are_kept_apart_from_the_variants_a_file_counts() {
        let t = Transform::from_query(Some("width=10"), &settings())
            .unwrap()
            .unwrap();
        let variant = t.key("f1", Format::Png, false);
        let preset = t.key("f1", Format::Png, true);
        assert!(variant.starts_with("__transforms/f1/"), "{variant}");
        assert!(counts_as_variant(&variant));
        assert!(!counts_as_variant(&preset));
        assert!(is_preset(Some("key=thumb")));
        assert!(!is_preset(Some("width=3&keys=1")));
    }

    #[test]
    fn the_steps_are_bounded_as_directus_bounds_them() {
        let s = settings();
        let five = r#"[["flip"],["flop"],["flip"],["flop"],["grayscale"]]"#;
        assert!(Transform::from_query(Some(&format!("transforms={five}")), &s).is_ok());
        let six = r#"[["flip"],["flop"],["flip"],["flop"],["grayscale"],["flip"]]"#;
        assert_eq!(
            Transform::from_query(Some(&format!("transforms={six}")), &s),
            Err("\"transforms\" Parameter is only allowed 5 transformations".into())
        );
    }

    #[test]
    fn memory_is_estimated_from_the_header_and_bounded() {
        let t = Transform::from_query(Some("width=10"), &settings())
            .unwrap()
            .unwrap();
        // 16 bits a channel: 8 bytes a pixel decoded, 4 at work.
        let deep = {
            let img = DynamicImage::ImageRgba16(image::ImageBuffer::from_pixel(
                300,
                200,
                image::Rgba([1u16, 2, 3, 65535]),
            ));
            let mut out = Cursor::new(Vec::new());
            img.write_to(&mut out, ImageFormat::Png).unwrap();
            out.into_inner()
        };
        let need = t.estimate(&deep, &bounds(6000)).unwrap();
        assert!(need >= 300 * 200 * 12, "{need}");
        assert!(need < 300 * 200 * 16, "{need}");
        assert!(matches!(
            t.estimate(&deep, &Bounds::new(6000, need - 1)),
            Err(TransformError::TooLarge)
        ));
        assert!(matches!(
            t.estimate(&deep, &bounds(299)),
            Err(TransformError::TooLarge)
        ));
        let out = t.apply(&deep, Format::Png, &bounds(6000)).unwrap();
        assert_eq!(size_of(&out), (10, 6));
    }

    #[test]
    fn a_stopped_transformation_ends_at_its_next_check() {
        let t = Transform::from_query(Some("width=10"), &settings())
            .unwrap()
            .unwrap();
        let stopped = bounds(6000);
        stopped
            .cancel
            .store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(matches!(
            t.apply(&png(400, 400), Format::Png, &stopped),
            Err(TransformError::Cancelled)
        ));
    }

    #[test]
    fn images_are_fitted_as_asked() {
        let original = png(40, 20);
        let t = |q: &str| {
            Transform::from_query(Some(q), &settings())
                .unwrap()
                .unwrap()
        };
        let apply = |q: &str| size_of(&t(q).apply(&original, Format::Png, &bounds(6000)).unwrap());
        assert_eq!(apply("width=10"), (10, 5));
        assert_eq!(apply("height=10"), (20, 10));
        assert_eq!(apply("width=10&height=10"), (10, 10));
        assert_eq!(apply("width=10&height=10&fit=inside"), (10, 5));
        assert_eq!(apply("width=10&height=10&fit=outside"), (20, 10));
        assert_eq!(apply("width=10&height=10&fit=contain"), (10, 10));
        assert_eq!(apply("width=400&withoutEnlargement"), (40, 20));
        assert_eq!(apply("width=10&transforms=[[\"rotate\",90]]"), (10, 20));
        let jpeg = t("width=10&quality=50")
            .apply(&original, Format::Jpeg, &bounds(6000))
            .unwrap();
        assert_eq!(infer::get(&jpeg).map(|t| t.mime_type()), Some("image/jpeg"));
        let webp = t("width=10")
            .apply(&original, Format::Webp, &bounds(6000))
            .unwrap();
        assert_eq!(infer::get(&webp).map(|t| t.mime_type()), Some("image/webp"));
    }
}
