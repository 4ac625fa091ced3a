//! Image transformations of assets, as Directus's query parameters ask
//! them: `width`, `height`, `fit`, `quality`, `format` (`auto`: WebP when
//! the client takes it), `withoutEnlargement`, a preset by `key`
//! (`ASSETS_TRANSFORM_PRESETS`) and `transforms` (a JSON list of steps).
//! Other parameters are ignored. A transformation is computed once, off
//! the async workers, and kept beside the original under a key derived
//! from it (`__transforms/<file id>/<hash>.<ext>`).

use std::io::Cursor;

use image::{DynamicImage, ImageDecoder, ImageFormat};
use serde_json::Value;
use sha2::Digest;

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

/// The transformation settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `ASSETS_TRANSFORM_PRESETS`: named transformations (`key`).
    pub presets: Vec<(String, Transform)>,
    /// `ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION` (6000): larger originals are
    /// not transformed.
    pub max_dimension: u64,
    /// `ASSETS_TRANSFORM_MAX_CONCURRENT` (25): transformations at once;
    /// past it 503.
    pub max_concurrent: usize,
    /// `ASSETS_TRANSFORM_TIMEOUT` (7500 ms): past it 503.
    pub timeout: std::time::Duration,
}

impl Settings {
    pub fn from_vars(var: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let number = |name: &str, default: u64| -> Result<u64, String> {
            match var(name) {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse()
                    .map_err(|_| format!("{name}: \"{v}\" is not a whole number")),
            }
        };
        let presets = match var("ASSETS_TRANSFORM_PRESETS") {
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
                    let transform = Transform::from_params(&get)
                        .map_err(|e| format!("ASSETS_TRANSFORM_PRESETS, preset \"{key}\": {e}"))?;
                    presets.push((key, transform));
                }
                presets
            }
        };
        Ok(Self {
            presets,
            max_dimension: number("ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION", 6000)?,
            max_concurrent: number("ASSETS_TRANSFORM_MAX_CONCURRENT", 25)?.max(1) as usize,
            timeout: match var("ASSETS_TRANSFORM_TIMEOUT") {
                None => std::time::Duration::from_millis(7500),
                Some(v) => crate::env_settings::parse_duration(&v)
                    .map_err(|e| format!("ASSETS_TRANSFORM_TIMEOUT: {e}"))?,
            },
        })
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
        let asked = Self::from_params(&get)?;
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

    fn from_params(get: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
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
            Some(text) => steps(&text)?,
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
    /// `format`.
    pub fn key(&self, id: &str, format: Format) -> String {
        let mut digest = sha2::Sha256::new();
        digest.update(format!("{self:?}/{format:?}").as_bytes());
        format!(
            "{}/{}.{}",
            prefix_of(id),
            &hex::encode(digest.finalize())[..24],
            format.extension()
        )
    }

    /// Transforms the image `bytes` into `format` (blocking, CPU-bound).
    /// Both the decoded original and the output are bounded by `max` pixels
    /// a side whatever the record says. Unless the steps rotate it, the
    /// image is first turned as its EXIF orientation says, as Directus does.
    pub fn apply(&self, bytes: &[u8], format: Format, max: u32) -> Result<Vec<u8>, TransformError> {
        let rotates = self.steps.iter().any(|s| matches!(s, Step::Rotate(_)));
        let mut img = decode(bytes, max, !rotates)?;
        for step in &self.steps {
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
        img = self.resized(img, max)?;
        let mut out = Cursor::new(Vec::new());
        match format {
            Format::Jpeg => {
                let rgb = DynamicImage::ImageRgb8(img.to_rgb8());
                let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(
                    &mut out,
                    self.quality.unwrap_or(80),
                );
                rgb.write_with_encoder(encoder).map_err(failed)?;
            }
            Format::Webp => {
                let rgba = DynamicImage::ImageRgba8(img.to_rgba8());
                rgba.write_with_encoder(image::codecs::webp::WebPEncoder::new_lossless(&mut out))
                    .map_err(failed)?;
            }
            Format::Png => img.write_to(&mut out, ImageFormat::Png).map_err(failed)?,
            Format::Gif | Format::Auto => DynamicImage::ImageRgba8(img.to_rgba8())
                .write_to(&mut out, ImageFormat::Gif)
                .map_err(failed)?,
        }
        Ok(out.into_inner())
    }

    fn resized(&self, img: DynamicImage, max: u32) -> Result<DynamicImage, TransformError> {
        let (w0, h0) = (img.width().max(1), img.height().max(1));
        let (mut w, mut h) = match (self.width, self.height) {
            (None, None) => return Ok(img),
            (Some(w), None) => (w, scaled(h0, w, w0)),
            (None, Some(h)) => (scaled(w0, h, h0), h),
            (Some(w), Some(h)) => (w, h),
        };
        if self.without_enlargement && (w > w0 || h > h0) {
            let scale = (w0 as f64 / w as f64).min(h0 as f64 / h as f64);
            w = ((w as f64 * scale).round() as u32).max(1);
            h = ((h as f64 * scale).round() as u32).max(1);
        }
        // The sizes resized to, and the canvas of `contain`, all bounded
        // before a pixel is allocated.
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
        let resized = resize(&img, rw, rh, fit == Fit::Cover)?;
        if fit != Fit::Contain {
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

/// Why a transformation was not made.
#[derive(Debug, thiserror::Error)]
pub enum TransformError {
    /// The original or the output is past `ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION`.
    #[error("the image is too large to be transformed")]
    TooLarge,
    /// The bytes do not decode, or the output cannot be written.
    #[error("{0}")]
    Failed(String),
}

fn failed(e: impl std::fmt::Display) -> TransformError {
    TransformError::Failed(e.to_string())
}

/// Decodes an image within `max` pixels a side, turned as its EXIF
/// orientation says when `orient`.
fn decode(bytes: &[u8], max: u32, orient: bool) -> Result<DynamicImage, TransformError> {
    let mut reader = image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(failed)?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(max);
    limits.max_image_height = Some(max);
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(|e| match e {
        image::ImageError::Limits(_) => TransformError::TooLarge,
        e => failed(e),
    })?;
    let orientation = decoder
        .orientation()
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    let mut img = DynamicImage::from_decoder(decoder).map_err(failed)?;
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
fn resize(img: &DynamicImage, w: u32, h: u32, fill: bool) -> Result<DynamicImage, TransformError> {
    // Eight bits a channel, with alpha only where the original has it:
    // the pixel types the resizer takes.
    let src = if img.color().has_alpha() {
        DynamicImage::ImageRgba8(img.to_rgba8())
    } else {
        DynamicImage::ImageRgb8(img.to_rgb8())
    };
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
fn steps(text: &str) -> Result<Vec<Step>, String> {
    let bad = || "\"transforms\" must be a JSON array of [name, ...arguments]".to_string();
    let list: Value = serde_json::from_str(text).map_err(|_| bad())?;
    let Value::Array(list) = list else {
        return Err(bad());
    };
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

/// Whether transformations apply to a file of type `mime`.
pub fn transformable(mime: &str) -> bool {
    Format::of_mime(mime).is_some()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings::from_vars(&|name| {
            (name == "ASSETS_TRANSFORM_PRESETS").then(|| {
                r#"[{"key": "thumb", "width": 10, "height": 10, "fit": "contain"}]"#.to_string()
            })
        })
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
        let out = t.apply(&jpeg_turned_quarter(), Format::Png, 6000).unwrap();
        // Shown 20 wide and 40 high, so 10 wide is 20 high.
        assert_eq!(size_of(&out), (10, 20));
    }

    #[test]
    fn outputs_and_originals_past_the_bound_are_refused() {
        let s = settings();
        let t = |q: &str| Transform::from_query(Some(q), &s).unwrap().unwrap();
        let too_large = |q: &str, max: u32| {
            matches!(
                t(q).apply(&png(40, 2), Format::Png, max),
                Err(TransformError::TooLarge)
            )
        };
        assert!(too_large("width=10", 30), "the original");
        assert!(too_large("width=100", 60), "the output");
        assert!(too_large("width=50&height=50&fit=outside", 60), "outside");
        assert!(!too_large("width=100&withoutEnlargement", 60));
        assert!(!too_large("width=50&height=50&fit=inside", 60));
        assert!(matches!(
            t("width=10").apply(&b"not an image"[..], Format::Png, 6000),
            Err(TransformError::Failed(_))
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
        let apply = |q: &str| size_of(&t(q).apply(&original, Format::Png, 6000).unwrap());
        assert_eq!(apply("width=10"), (10, 5));
        assert_eq!(apply("height=10"), (20, 10));
        assert_eq!(apply("width=10&height=10"), (10, 10));
        assert_eq!(apply("width=10&height=10&fit=inside"), (10, 5));
        assert_eq!(apply("width=10&height=10&fit=outside"), (20, 10));
        assert_eq!(apply("width=10&height=10&fit=contain"), (10, 10));
        assert_eq!(apply("width=400&withoutEnlargement"), (40, 20));
        assert_eq!(apply("width=10&transforms=[[\"rotate\",90]]"), (10, 20));
        let jpeg = t("width=10&quality=50")
            .apply(&original, Format::Jpeg, 6000)
            .unwrap();
        assert_eq!(infer::get(&jpeg).map(|t| t.mime_type()), Some("image/jpeg"));
        let webp = t("width=10").apply(&original, Format::Webp, 6000).unwrap();
        assert_eq!(infer::get(&webp).map(|t| t.mime_type()), Some("image/webp"));
    }
}
