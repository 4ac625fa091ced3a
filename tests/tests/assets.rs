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
