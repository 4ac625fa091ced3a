//! `/assets/:id`: a file's bytes to whoever may read its record, with
//! validators, caching, ranges and downloads; through a second host on
//! the same database when the bytes are in a shared S3 bucket.

use platform_tests::multipart::Form;
use platform_tests::s3::S3;
use platform_tests::{id_of, image_dimensions, Host, HostOptions, ADMIN_TOKEN};

fn upload(host: &Host, token: &str, filename: &str, bytes: &[u8]) -> String {
    let form = Form::new().file("file", filename, "text/plain", bytes);
    let r = host.send_form("POST", "/files", Some(token), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    id_of(&r.json()["data"])
}

#[test]
fn an_asset_is_served_to_those_who_may_read_its_record() {
    let host = Host::start(HostOptions::svc());
    host.user(Some("Viewer"), "owner-a");
    host.user(Some("Viewer"), "other-a");
    let id = upload(&host, "owner-a", "notes.txt", b"0123456789abcdef");

    let bearer = [("Authorization", "Bearer owner-a")];
    let got = host.get_bytes(&format!("/assets/{id}"), &bearer);
    assert_eq!(got.status, 200);
    assert_eq!(got.body, b"0123456789abcdef");
    assert_eq!(got.header("content-type"), Some("text/plain"));
    assert_eq!(got.header("accept-ranges"), Some("bytes"));
    assert_eq!(
        got.header("cache-control"),
        Some("private, max-age=2592000")
    );
    assert_eq!(got.header("content-disposition"), None);
    let etag = got.header("etag").expect("an ETag").to_string();
    let modified = got.header("last-modified").expect("a date").to_string();

    // The token in the query, and a file name in the path.
    let got = host.get_bytes(&format!("/assets/{id}/notes.txt?access_token=owner-a"), &[]);
    assert_eq!(got.body, b"0123456789abcdef");

    // Others, and anonymous callers, get 403, as for a file that is not.
    let other = [("Authorization", "Bearer other-a")];
    assert_eq!(host.get_bytes(&format!("/assets/{id}"), &other).status, 403);
    assert_eq!(host.get_bytes(&format!("/assets/{id}"), &[]).status, 403);
    let nothing = "00000000-0000-4000-8000-000000000000";
    let admin = format!("Bearer {ADMIN_TOKEN}");
    let as_admin = [("Authorization", admin.as_str())];
    assert_eq!(
        host.get_bytes(&format!("/assets/{nothing}"), &as_admin)
            .status,
        403
    );
    assert_eq!(
        host.get_bytes(&format!("/assets/{id}"), &as_admin).status,
        200
    );

    // Validators.
    let got = host.get_bytes(
        &format!("/assets/{id}"),
        &[bearer[0], ("If-None-Match", &etag)],
    );
    assert_eq!(got.status, 304);
    assert!(got.body.is_empty());
    assert_eq!(got.header("etag"), Some(etag.as_str()));
    let got = host.get_bytes(
        &format!("/assets/{id}"),
        &[bearer[0], ("If-Modified-Since", &modified)],
    );
    assert_eq!(got.status, 304);
    let got = host.get_bytes(
        &format!("/assets/{id}"),
        &[bearer[0], ("If-None-Match", "\"another\"")],
    );
    assert_eq!(got.status, 200);

    // Ranges.
    let got = host.get_bytes(
        &format!("/assets/{id}"),
        &[bearer[0], ("Range", "bytes=2-5")],
    );
    assert_eq!(got.status, 206);
    assert_eq!(got.body, b"2345");
    assert_eq!(got.header("content-range"), Some("bytes 2-5/16"));
    assert_eq!(got.header("content-length"), Some("4"));
    let got = host.get_bytes(
        &format!("/assets/{id}"),
        &[bearer[0], ("Range", "bytes=-3")],
    );
    assert_eq!(got.body, b"def");
    let got = host.get_bytes(
        &format!("/assets/{id}"),
        &[bearer[0], ("Range", "bytes=14-")],
    );
    assert_eq!(got.body, b"ef");
    let got = host.get_bytes(
        &format!("/assets/{id}"),
        &[bearer[0], ("Range", "bytes=16-")],
    );
    assert_eq!(got.status, 416);
    assert_eq!(got.header("content-range"), Some("bytes */16"));
    let error: serde_json::Value = serde_json::from_slice(&got.body).expect("JSON");
    assert_eq!(
        error["errors"][0]["extensions"]["code"],
        "RANGE_NOT_SATISFIABLE"
    );

    // Downloads.
    let got = host.get_bytes(&format!("/assets/{id}?download"), &bearer);
    assert_eq!(
        got.header("content-disposition"),
        Some("attachment; filename=\"notes.txt\"; filename*=UTF-8''notes.txt")
    );

    // Bytes replaced: a new tag.
    let form = Form::new().file("file", "notes.txt", "text/plain", b"new");
    let r = host.send_form("PATCH", &format!("/files/{id}"), Some("owner-a"), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    let got = host.get_bytes(
        &format!("/assets/{id}"),
        &[bearer[0], ("If-None-Match", &etag)],
    );
    assert_eq!(got.status, 200);
    assert_eq!(got.body, b"new");

    // Deleted: gone.
    assert_eq!(
        host.delete(&format!("/files/{id}"), Some("owner-a")).status,
        204
    );
    assert_eq!(
        host.get_bytes(&format!("/assets/{id}"), &bearer).status,
        403
    );
}

#[test]
fn public_assets_follow_public_grants_and_the_cache_setting() {
    let host = Host::start(HostOptions::svc().env_var("ASSETS_CACHE_TTL", "1h"));
    let id = upload(&host, ADMIN_TOKEN, "public.txt", b"for everyone");
    assert_eq!(host.get_bytes(&format!("/assets/{id}"), &[]).status, 403);
    host.grant(
        "Public",
        "platform_files",
        serde_json::json!({"action": "read"}),
    );
    let got = host.get_bytes(&format!("/assets/{id}"), &[]);
    assert_eq!(got.status, 200);
    assert_eq!(got.body, b"for everyone");
    assert_eq!(got.header("cache-control"), Some("public, max-age=3600"));
}

/// Access to the bytes is the right to read the record, whatever fields
/// the grant covers (as Directus): a grant of some fields only still
/// serves the asset, and a row rule still decides which files.
#[test]
fn an_asset_follows_the_records_rule_whatever_fields_the_grant_covers() {
    let host = Host::start(HostOptions::svc());
    let shown = upload(&host, ADMIN_TOKEN, "shown.txt", b"shown");
    let hidden = upload(&host, ADMIN_TOKEN, "hidden.txt", b"hidden");
    host.grant(
        "Public",
        "platform_files",
        serde_json::json!({"action": "read", "fields": ["id", "title"],
                           "permissions": {"id": {"_eq": shown}}}),
    );
    // The grant's fields are what a read of the record gets.
    let r = host.get(&format!("/files/{shown}?fields=filename_disk"), None);
    assert_eq!(r.status, 403, "{}", r.body);
    let got = host.get_bytes(&format!("/assets/{shown}"), &[]);
    assert_eq!((got.status, got.body.as_slice()), (200, &b"shown"[..]));
    assert_eq!(got.header("content-type"), Some("text/plain"));
    let got = host.get_bytes(&format!("/assets/{shown}?download"), &[]);
    assert_eq!(
        got.header("content-disposition"),
        Some("attachment; filename=\"shown.txt\"; filename*=UTF-8''shown.txt")
    );
    assert_eq!(
        host.get_bytes(&format!("/assets/{hidden}"), &[]).status,
        403
    );
    assert_eq!(
        host.get_bytes("/assets/00000000-0000-4000-8000-000000000000", &[])
            .status,
        403
    );
}

#[test]
fn bytes_uploaded_through_one_host_are_read_through_another() {
    let s3 = S3::start();
    let mut opts = HostOptions::svc();
    opts.env = s3.host_env();
    let first = Host::start(opts);
    let mut opts = HostOptions::svc();
    opts.env = s3.host_env();
    let second = first.start_beside(opts);

    let bytes: Vec<u8> = (0..12_000_000u32).map(|i| (i % 251) as u8).collect();
    let form = Form::new().file("file", "big.bin", "application/octet-stream", &bytes);
    let r = first.send_form("POST", "/files", Some(ADMIN_TOKEN), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    let id = id_of(&r.json()["data"]);

    let admin = format!("Bearer {ADMIN_TOKEN}");
    let got = second.get_bytes(&format!("/assets/{id}"), &[("Authorization", &admin)]);
    assert_eq!(got.status, 200);
    assert_eq!(got.body.len(), bytes.len());
    assert!(got.body == bytes, "the bytes read back differ");
    let got = second.get_bytes(
        &format!("/assets/{id}"),
        &[
            ("Authorization", &admin),
            ("Range", "bytes=6000000-6000009"),
        ],
    );
    assert_eq!(got.status, 206);
    assert_eq!(got.body, &bytes[6_000_000..6_000_010]);

    assert_eq!(
        second
            .delete(&format!("/files/{id}"), Some(ADMIN_TOKEN))
            .status,
        204
    );
    let got = first.get_bytes(&format!("/assets/{id}"), &[("Authorization", &admin)]);
    assert_eq!(got.status, 403);
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let img = image::DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
        width,
        height,
        image::Rgba([10, 120, 200, 255]),
    ));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .expect("png");
    out.into_inner()
}

fn transforms_in(host: &Host, id: &str) -> usize {
    std::fs::read_dir(host.uploads_dir().join("__transforms").join(id))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn images_are_transformed_once_and_kept() {
    let host = Host::start(
        HostOptions::svc()
            .env_var(
                "ASSETS_TRANSFORM_PRESETS",
                r#"[{"key": "thumb", "width": 8, "height": 8, "fit": "contain"}]"#,
            )
            .env_var("ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION", "100"),
    );
    let form = Form::new().file("file", "pic.png", "image/png", &png(40, 20));
    let r = host.send_form("POST", "/files", Some(ADMIN_TOKEN), &form);
    let id = id_of(&r.json()["data"]);
    let admin = format!("Bearer {ADMIN_TOKEN}");
    let auth = ("Authorization", admin.as_str());

    let got = host.get_bytes(&format!("/assets/{id}?width=10&unknown=1"), &[auth]);
    assert_eq!(got.status, 200);
    assert_eq!(got.header("content-type"), Some("image/png"));
    assert_eq!(image_dimensions(&got.body), (10, 5));
    assert_eq!(transforms_in(&host, &id), 1);
    let again = host.get_bytes(&format!("/assets/{id}?width=10"), &[auth]);
    assert_eq!(again.body, got.body);
    assert_eq!(transforms_in(&host, &id), 1, "computed once");

    let got = host.get_bytes(
        &format!("/assets/{id}?width=10&height=10&fit=inside"),
        &[auth],
    );
    assert_eq!(image_dimensions(&got.body), (10, 5));
    let got = host.get_bytes(&format!("/assets/{id}?key=thumb"), &[auth]);
    assert_eq!(image_dimensions(&got.body), (8, 8));
    let got = host.get_bytes(
        &format!("/assets/{id}?width=10&format=auto"),
        &[auth, ("Accept", "image/avif,image/webp,*/*")],
    );
    assert_eq!(got.header("content-type"), Some("image/webp"));
    assert_eq!(image_dimensions(&got.body), (10, 5));
    let got = host.get_bytes(
        &format!("/assets/{id}?width=10&format=jpg&quality=40"),
        &[auth],
    );
    assert_eq!(got.header("content-type"), Some("image/jpeg"));
    let got = host.get_bytes(
        &format!("/assets/{id}?width=400&withoutEnlargement=true"),
        &[auth],
    );
    assert_eq!(image_dimensions(&got.body), (40, 20));
    let got = host.get_bytes(
        &format!("/assets/{id}?transforms=%5B%5B%22rotate%22%2C90%5D%5D"),
        &[auth],
    );
    assert_eq!(image_dimensions(&got.body), (20, 40));

    // Refused: a preset with other parameters, an unknown preset, a
    // parameter out of range, an image past the size bound.
    for query in ["key=thumb&width=3", "key=none", "width=abc", "fit=sideways"] {
        let got = host.get_bytes(&format!("/assets/{id}?{query}"), &[auth]);
        assert_eq!(got.status, 400, "{query}");
    }
    // An output past the bound is refused as an original past it is.
    let kept = transforms_in(&host, &id);
    let got = host.get_bytes(&format!("/assets/{id}?width=101"), &[auth]);
    assert_eq!(got.status, 400);
    assert_eq!(
        transforms_in(&host, &id),
        kept,
        "nothing kept for a refusal"
    );
    let form = Form::new().file("file", "wide.png", "image/png", &png(200, 4));
    let wide = id_of(
        &host
            .send_form("POST", "/files", Some(ADMIN_TOKEN), &form)
            .json()["data"],
    );
    let got = host.get_bytes(&format!("/assets/{wide}?width=10"), &[auth]);
    assert_eq!(got.status, 400);
    let error: serde_json::Value = serde_json::from_slice(&got.body).expect("JSON");
    assert_eq!(
        error["errors"][0]["extensions"]["code"],
        "ILLEGAL_ASSET_TRANSFORMATION"
    );
    assert_eq!(
        image_dimensions(&host.get_bytes(&format!("/assets/{wide}"), &[auth]).body),
        (200, 4)
    );

    // Not an image: the parameters are ignored.
    let text = upload(&host, ADMIN_TOKEN, "a.txt", b"plain");
    let got = host.get_bytes(&format!("/assets/{text}?width=10&format=webp"), &[auth]);
    assert_eq!(got.body, b"plain");

    // New bytes and a deleted file take their transformations along.
    let form = Form::new().file("file", "pic.png", "image/png", &png(30, 30));
    let r = host.send_form("PATCH", &format!("/files/{id}"), Some(ADMIN_TOKEN), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(transforms_in(&host, &id), 0);
    let got = host.get_bytes(&format!("/assets/{id}?width=10"), &[auth]);
    assert_eq!(image_dimensions(&got.body), (10, 10));
    assert_eq!(
        host.delete(&format!("/files/{id}"), Some(ADMIN_TOKEN))
            .status,
        204
    );
    assert_eq!(transforms_in(&host, &id), 0);
}

#[test]
fn corrupt_and_huge_images_are_refused_cleanly() {
    let host = Host::start(HostOptions::svc());
    let admin = format!("Bearer {ADMIN_TOKEN}");
    let auth = ("Authorization", admin.as_str());

    // A whole header and a cut body: the record is made from the header,
    // the transformation fails as a bad request, the bytes stay served.
    let cut: Vec<u8> = png(50, 50).into_iter().take(60).collect();
    let form = Form::new().file("file", "cut.png", "image/png", &cut);
    let r = host.send_form("POST", "/files", Some(ADMIN_TOKEN), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    let id = id_of(&r.json()["data"]);
    let got = host.get_bytes(&format!("/assets/{id}?width=10"), &[auth]);
    assert_eq!(got.status, 400);
    assert_eq!(transforms_in(&host, &id), 0);
    assert_eq!(host.get_bytes(&format!("/assets/{id}"), &[auth]).body, cut);

    // A few bytes that say 60000 x 60000: refused before any decoding.
    let mut bomb = png(1, 1);
    bomb[16..24].copy_from_slice(&[0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60]);
    let form = Form::new().file("file", "bomb.png", "image/png", &bomb);
    let r = host.send_form("POST", "/files", Some(ADMIN_TOKEN), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["width"], 60000);
    let bomb_id = id_of(&r.json()["data"]);
    let got = host.get_bytes(&format!("/assets/{bomb_id}?width=10"), &[auth]);
    assert_eq!(got.status, 400);
    let error: serde_json::Value = serde_json::from_slice(&got.body).expect("JSON");
    assert_eq!(
        error["errors"][0]["extensions"]["code"],
        "ILLEGAL_ASSET_TRANSFORMATION"
    );
    assert_eq!(host.get("/server/ping", None).status, 200);
}

#[test]
fn a_transformation_past_its_time_is_503_and_keeps_nothing() {
    let host = Host::start(HostOptions::svc().env_var("ASSETS_TRANSFORM_TIMEOUT", "1ms"));
    let form = Form::new().file("file", "big.png", "image/png", &png(1500, 1500));
    let id = id_of(
        &host
            .send_form("POST", "/files", Some(ADMIN_TOKEN), &form)
            .json()["data"],
    );
    let admin = format!("Bearer {ADMIN_TOKEN}");
    let got = host.get_bytes(
        &format!("/assets/{id}?width=1499"),
        &[("Authorization", &admin)],
    );
    assert_eq!(got.status, 503);
    let error: serde_json::Value = serde_json::from_slice(&got.body).expect("JSON");
    assert_eq!(
        error["errors"][0]["extensions"]["code"],
        "SERVICE_UNAVAILABLE"
    );
    assert_eq!(transforms_in(&host, &id), 0);
    host.assert_serving();
}

/// Uploads `bytes` as `filename` declared `content_type`; the record.
fn upload_as(host: &Host, filename: &str, content_type: &str, bytes: &[u8]) -> serde_json::Value {
    let form = Form::new().file("file", filename, content_type, bytes);
    let r = host.send_form("POST", "/files", Some(ADMIN_TOKEN), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"].clone()
}

const PAGE: &[u8] = b"<!doctype html><html><body><script>fetch('/users/me')</script></body></html>";
const SVG: &[u8] = b"<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><script>fetch('/users/me')</script></svg>";

/// What a browser would run is never a page of the platform's origin:
/// every asset carries the assets' policy and `nosniff`; HTML, SVG and
/// other types not known to be inert are attachments; bytes that look
/// like a page keep the type they were declared with.
#[test]
fn uploads_a_browser_would_run_are_attachments_under_a_policy_that_runs_nothing() {
    let host =
        Host::start(HostOptions::svc().env_var("FILES_MIME_TYPE_ALLOW_LIST", "image/*,text/*"));
    let admin = format!("Bearer {ADMIN_TOKEN}");
    let auth = ("Authorization", admin.as_str());
    let page = upload_as(&host, "page.html", "text/html", PAGE);
    let svg = upload_as(&host, "drawing.svg", "image/svg+xml", SVG);
    assert_eq!(svg["type"], "image/svg+xml", "image/* lets SVG in");
    let disguised = upload_as(&host, "notes.txt", "text/plain", PAGE);
    assert_eq!(disguised["type"], "text/plain", "never sniffed into a page");
    let picture = upload_as(&host, "pic.png", "image/png", &png(4, 4));
    let text = upload_as(&host, "a.txt", "text/plain", b"plain");

    let attachment = |filename: &str| {
        format!("attachment; filename=\"{filename}\"; filename*=UTF-8''{filename}")
    };
    for (record, content_type, disposition) in [
        (&page, "text/html", Some(attachment("page.html"))),
        (&svg, "image/svg+xml", Some(attachment("drawing.svg"))),
        (&disguised, "text/plain", None),
        (&picture, "image/png", None),
        (&text, "text/plain", None),
    ] {
        let id = id_of(record);
        let got = host.get_bytes(&format!("/assets/{id}"), &[auth]);
        assert_eq!(got.status, 200, "{record}");
        assert_eq!(got.header("content-type"), Some(content_type));
        assert_eq!(
            got.header("content-security-policy"),
            Some("default-src 'none'"),
            "{content_type}"
        );
        assert_eq!(got.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(
            got.header("content-disposition"),
            disposition.as_deref(),
            "{content_type}"
        );
        // A part of it, and a transformation, alike.
        let part = host.get_bytes(&format!("/assets/{id}"), &[auth, ("Range", "bytes=0-3")]);
        assert_eq!(part.status, 206);
        assert_eq!(part.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(part.header("content-disposition"), disposition.as_deref());
    }
    let got = host.get_bytes(&format!("/assets/{}?width=2", id_of(&picture)), &[auth]);
    assert_eq!(
        got.header("content-security-policy"),
        Some("default-src 'none'")
    );
    assert_eq!(got.header("content-disposition"), None);

    // A record whose type was set to something that is no type is served
    // as bytes, never untyped (which a browser would sniff).
    let id = id_of(&text);
    host.patch(
        &format!("/files/{id}"),
        Some(ADMIN_TOKEN),
        &serde_json::json!({"type": "html"}),
    );
    let got = host.get_bytes(&format!("/assets/{id}"), &[auth]);
    assert_eq!(got.header("content-type"), Some("application/octet-stream"));
    assert!(got.header("content-disposition").is_some());

    // The policy as the settings make it.
    let host = Host::start(HostOptions::svc().env_var(
        "ASSETS_CONTENT_SECURITY_POLICY_DIRECTIVES__MEDIA_SRC",
        "array:'self', https://cdn.example.com",
    ));
    let id = id_of(&upload_as(&host, "a.txt", "text/plain", b"plain"));
    let got = host.get_bytes(&format!("/assets/{id}"), &[auth]);
    assert_eq!(
        got.header("content-security-policy"),
        Some("default-src 'none'; media-src 'self' https://cdn.example.com")
    );
}

/// A PNG of `side` × `side` at 16 bits a channel with alpha: 8 bytes a
/// pixel decoded, a few KB on disk.
fn deep_png(side: u32) -> Vec<u8> {
    let img = image::DynamicImage::ImageRgba16(image::ImageBuffer::from_fn(side, side, |x, _| {
        image::Rgba([(x % 7) as u16 * 9000, 30_000, 50_000, 65_535])
    }));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .expect("png");
    out.into_inner()
}

/// Transformations reserve what they will take from one budget before
/// they decode: many at once of a deep image leave the host within the
/// budget, the ones that do not fit answered 503 with `Retry-After`; an
/// image past the bound of one transformation is refused before it is
/// decoded.
#[test]
fn transformations_at_once_stay_within_the_memory_budget() {
    // The time limit far away: this is about memory, and a slow machine
    // decoding several deep images at once must not answer 503 for time.
    let host = Host::start(
        HostOptions::svc()
            .env_var("ASSETS_TRANSFORM_MEMORY_BUDGET", "240mib")
            .env_var("ASSETS_TRANSFORM_TIMEOUT", "120s"),
    );
    // 3000 × 3000: 72 MB decoded, 36 MB at work.
    let record = upload_as(&host, "deep.png", "image/png", &deep_png(3000));
    assert_eq!(record["width"], 3000);
    let id = id_of(&record);
    let before = host.rss_kib().expect("the host's memory");
    let answers: Vec<(u16, Option<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let (host, id) = (&host, &id);
                s.spawn(move || {
                    let admin = format!("Bearer {ADMIN_TOKEN}");
                    let got = host.get_bytes(
                        &format!("/assets/{id}?width={}", 100 + i),
                        &[("Authorization", &admin)],
                    );
                    (got.status, got.header("retry-after").map(String::from))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a request"))
            .collect()
    });
    let peak = host.peak_rss_kib().expect("the host's peak memory");
    println!("answers {answers:?}; RSS before {before} KiB, peak {peak} KiB");
    assert!(
        answers
            .iter()
            .all(|(status, _)| [200, 503].contains(status)),
        "{answers:?}"
    );
    assert!(
        answers.iter().any(|(status, _)| *status == 200),
        "{answers:?}"
    );
    assert!(
        answers
            .iter()
            .any(|(status, retry)| *status == 503 && retry.is_some()),
        "some did not fit: {answers:?}"
    );
    // The budget, the host's own memory, and the allocator's slack.
    assert!(
        peak < before + 400 * 1024,
        "peak {peak} KiB, {before} KiB before"
    );
    assert_eq!(host.get("/server/health", None).status, 200);
    host.assert_serving();

    // One transformation past its own bound: refused, nothing decoded.
    let host =
        Host::start(HostOptions::svc().env_var("ASSETS_TRANSFORM_MAX_IMAGE_MEMORY", "64mib"));
    let id = id_of(&upload_as(&host, "deep.png", "image/png", &deep_png(3000)));
    let admin = format!("Bearer {ADMIN_TOKEN}");
    let got = host.get_bytes(
        &format!("/assets/{id}?width=100"),
        &[("Authorization", &admin)],
    );
    assert_eq!(got.status, 400);
    let error: serde_json::Value = serde_json::from_slice(&got.body).expect("JSON");
    assert_eq!(
        error["errors"][0]["extensions"]["code"],
        "ILLEGAL_ASSET_TRANSFORMATION"
    );
    assert!(host.peak_rss_kib().expect("peak") < host.rss_kib().expect("rss") + 60 * 1024);
    let small = id_of(&upload_as(&host, "small.png", "image/png", &png(40, 20)));
    let got = host.get_bytes(
        &format!("/assets/{small}?width=10"),
        &[("Authorization", &admin)],
    );
    assert_eq!(got.status, 200);
}

/// A transformation past its time gives its slot back at once (the work
/// is told to stop), so it does not keep others out; `transforms` takes
/// at most `ASSETS_TRANSFORM_MAX_OPERATIONS` steps, as Directus.
#[test]
fn a_timed_out_transformation_gives_its_slot_back_and_steps_are_bounded() {
    let host = Host::start(
        HostOptions::svc()
            .env_var("ASSETS_TRANSFORM_MAX_CONCURRENT", "1")
            .env_var("ASSETS_TRANSFORM_TIMEOUT", "300ms"),
    );
    let admin = format!("Bearer {ADMIN_TOKEN}");
    let auth = ("Authorization", admin.as_str());
    let big = id_of(&upload_as(&host, "big.png", "image/png", &png(3000, 3000)));
    let small = id_of(&upload_as(&host, "small.png", "image/png", &png(40, 20)));
    let blurs = "%5B%5B%22blur%22%2C50%5D%2C%5B%22blur%22%2C50%5D%2C%5B%22blur%22%2C50%5D%2C%5B%22blur%22%2C50%5D%2C%5B%22blur%22%2C50%5D%5D";
    let started = std::time::Instant::now();
    let got = host.get_bytes(
        &format!("/assets/{big}?width=2999&transforms={blurs}"),
        &[auth],
    );
    assert_eq!(got.status, 503);
    let got = host.get_bytes(&format!("/assets/{small}?width=10"), &[auth]);
    assert_eq!(got.status, 200, "{}", String::from_utf8_lossy(&got.body));
    println!("both answered in {:?}", started.elapsed());
    assert_eq!(transforms_in(&host, &big), 0);

    // Five steps are taken, six are not (Directus's answer).
    let steps = |n: usize| {
        let list = vec!["%5B%22flip%22%5D"; n].join("%2C");
        format!("/assets/{small}?transforms=%5B{list}%5D")
    };
    assert_eq!(host.get_bytes(&steps(5), &[auth]).status, 200);
    let got = host.get_bytes(&steps(6), &[auth]);
    assert_eq!(got.status, 400);
    let error: serde_json::Value = serde_json::from_slice(&got.body).expect("JSON");
    assert_eq!(error["errors"][0]["extensions"]["code"], "INVALID_QUERY");
    assert_eq!(
        error["errors"][0]["message"],
        "\"transforms\" Parameter is only allowed 5 transformations"
    );
    host.assert_serving();
}

/// Callers who are not signed in can be locked to presets
/// (`ASSETS_TRANSFORM_PUBLIC_ALLOWED=presets`); which ones are made is a
/// setting (Directus's `storage_asset_transform`).
#[test]
fn anonymous_callers_can_be_locked_to_presets() {
    let host = Host::start(
        HostOptions::svc()
            .env_var(
                "ASSETS_TRANSFORM_PRESETS",
                r#"[{"key": "thumb", "width": 8, "height": 8}]"#,
            )
            .env_var("ASSETS_TRANSFORM_PUBLIC_ALLOWED", "presets"),
    );
    let id = public_image(&host);
    let got = host.get_bytes(&format!("/assets/{id}?width=11"), &[]);
    assert_eq!(got.status, 400);
    let error: serde_json::Value = serde_json::from_slice(&got.body).expect("JSON");
    assert_eq!(
        error["errors"][0]["message"],
        "Only configured presets can be used in asset generation."
    );
    assert_eq!(transforms_in(&host, &id), 0, "nothing kept");
    let got = host.get_bytes(&format!("/assets/{id}?key=thumb"), &[]);
    assert_eq!((got.status, image_dimensions(&got.body)), (200, (8, 8)));
    // Untransformed, as before.
    assert_eq!(host.get_bytes(&format!("/assets/{id}"), &[]).status, 200);
    let admin = format!("Bearer {ADMIN_TOKEN}");
    let got = host.get_bytes(
        &format!("/assets/{id}?width=11"),
        &[("Authorization", &admin)],
    );
    assert_eq!((got.status, image_dimensions(&got.body).0), (200, 11));

    let host = Host::start(HostOptions::svc().env_var("ASSETS_TRANSFORM_ALLOWED", "none"));
    let id = id_of(&upload_as(&host, "pic.png", "image/png", &png(40, 20)));
    let got = host.get_bytes(
        &format!("/assets/{id}?width=11"),
        &[("Authorization", &admin)],
    );
    assert_eq!(got.status, 400);
    let error: serde_json::Value = serde_json::from_slice(&got.body).expect("JSON");
    assert_eq!(
        error["errors"][0]["message"],
        "Dynamic asset generation has been disabled for this project."
    );
}

/// An image anyone may read, uploaded by the administrator: its id.
fn public_image(host: &Host) -> String {
    host.grant(
        "Public",
        "platform_files",
        serde_json::json!({"action": "read"}),
    );
    id_of(&upload_as(host, "pic.png", "image/png", &png(40, 20)))
}

/// A public site's thumbnails are asked for anonymously, as Directus
/// serves them by default.
#[test]
fn anonymous_thumbnails_are_made_by_default() {
    let host = Host::start(HostOptions::svc());
    let id = public_image(&host);
    let got = host.get_bytes(&format!("/assets/{id}?width=20&format=webp"), &[]);
    assert_eq!(got.status, 200, "{}", String::from_utf8_lossy(&got.body));
    assert_eq!(got.header("content-type"), Some("image/webp"));
    assert_eq!(image_dimensions(&got.body), (20, 10));
    assert_eq!(transforms_in(&host, &id), 1);
}

/// No caller grows the storage without bound: past
/// `ASSETS_TRANSFORM_MAX_KEPT_PER_FILE` variants of a file, a new one is
/// made and served, with its validators and caching, but not kept;
/// presets are kept whatever the count.
#[test]
fn the_variants_kept_of_a_file_are_bounded() {
    let host = Host::start(
        HostOptions::svc()
            .env_var("ASSETS_TRANSFORM_MAX_KEPT_PER_FILE", "3")
            .env_var(
                "ASSETS_TRANSFORM_PRESETS",
                r#"[{"key": "thumb", "width": 8, "height": 8}]"#,
            ),
    );
    let id = public_image(&host);
    for width in 1..=8 {
        let got = host.get_bytes(&format!("/assets/{id}?width={width}"), &[]);
        assert_eq!(got.status, 200, "{width}");
        assert_eq!(image_dimensions(&got.body).0, width);
        assert_eq!(
            got.header("cache-control"),
            Some("public, max-age=2592000"),
            "{width}"
        );
        assert!(got.header("etag").is_some(), "{width}");
    }
    assert_eq!(transforms_in(&host, &id), 3, "kept up to the bound");
    // One not kept is made again, the same, with the same validators.
    let first = host.get_bytes(&format!("/assets/{id}?width=8"), &[]);
    let etag = first.header("etag").expect("etag").to_string();
    let again = host.get_bytes(
        &format!("/assets/{id}?width=8"),
        &[("If-None-Match", &etag)],
    );
    assert_eq!(again.status, 304);
    // A preset is kept beside them.
    let got = host.get_bytes(&format!("/assets/{id}?key=thumb"), &[]);
    assert_eq!((got.status, image_dimensions(&got.body)), (200, (8, 8)));
    assert_eq!(transforms_in(&host, &id), 4);
}

/// A transformation not kept yet costs its caller a point
/// (`ASSETS_TRANSFORM_THROTTLE_*`, here counted in the database): past
/// the bound 429 with `Retry-After`, while kept ones are still served and
/// other callers count on their own.
#[test]
fn first_transformations_are_throttled_per_caller() {
    let host = Host::start(
        HostOptions::svc()
            .env_var("ASSETS_TRANSFORM_THROTTLE_POINTS", "3")
            .env_var("ASSETS_TRANSFORM_THROTTLE_STORE", "database"),
    );
    let id = public_image(&host);
    for width in 1..=3 {
        let got = host.get_bytes(&format!("/assets/{id}?width={width}"), &[]);
        assert_eq!(got.status, 200, "{width}");
    }
    let got = host.get_bytes(&format!("/assets/{id}?width=4"), &[]);
    assert_eq!(got.status, 429);
    let retry: u64 = got
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!((1..=60).contains(&retry), "{retry}");
    let error: serde_json::Value = serde_json::from_slice(&got.body).expect("JSON");
    assert_eq!(
        error["errors"][0]["extensions"]["code"],
        "REQUESTS_EXCEEDED"
    );
    assert_eq!(transforms_in(&host, &id), 3, "nothing made past the bound");
    // Kept ones cost nothing; the original is no transformation.
    for width in [1, 2, 3, 1] {
        let got = host.get_bytes(&format!("/assets/{id}?width={width}"), &[]);
        assert_eq!(
            (got.status, image_dimensions(&got.body).0),
            (200, width),
            "{width}"
        );
    }
    assert_eq!(host.get_bytes(&format!("/assets/{id}"), &[]).status, 200);
    // A signed-in caller counts apart from the address.
    let admin = format!("Bearer {ADMIN_TOKEN}");
    let got = host.get_bytes(
        &format!("/assets/{id}?width=4"),
        &[("Authorization", &admin)],
    );
    assert_eq!(got.status, 200);
}
