//! The site in a real browser: Chromium, driven by `playwright-core` from
//! `tests/sdk-js/browser.test.js`. A member signs in in the browser with
//! the session cookie; their private image and movie, which anonymous
//! callers may not read, then load in `<img>` and `<video>` by that cookie
//! alone (the movie played through ranged reads); the page uploads a
//! file by the cookie, as the site's avatar form does; and pages the
//! member uploaded (HTML, SVG, HTML declared as text) run no script on the
//! site's origin, opened or framed.

use std::io::Cursor;
use std::time::Instant;

use platform_tests::multipart::Form;
use platform_tests::node::{assert_passed, chromium, run_sdk_js};
use platform_tests::{id_of, user_email, workspace_root, Host, HostOptions};
use serde_json::json;

const PASSWORD: &str = "browser password 1";
const MEMBER: &str = "browser-1";

/// A 300×200 PNG, a gradient.
fn picture() -> Vec<u8> {
    let img = image::RgbImage::from_fn(300, 200, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 160])
    });
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .expect("a PNG");
    out.into_inner()
}

/// Uploads `bytes` as the member's own file; its record.
fn upload(host: &Host, filename: &str, content_type: &str, bytes: &[u8]) -> serde_json::Value {
    let form = Form::new()
        .field("title", filename)
        .file("file", filename, content_type, bytes);
    let r = host.send_form("POST", "/files", Some(MEMBER), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"].clone()
}

#[test]
fn a_browser_shows_a_members_private_media_by_the_session_cookie() {
    let chromium = chromium();
    let host = Host::start(HostOptions::svc());
    let member = host.user_with(Some("Viewer"), MEMBER, &json!({ "password": PASSWORD }));

    let image = upload(&host, "picture.png", "image/png", &picture());
    assert_eq!(
        (image["width"].clone(), image["height"].clone()),
        (json!(300), json!(200))
    );
    let movie_bytes = std::fs::read(
        workspace_root()
            .join("example-host")
            .join("demo-media")
            .join("movie-1.webm"),
    )
    .expect("the demo movie");
    let movie = upload(&host, "movie-1.webm", "video/webm", &movie_bytes);
    assert_eq!(movie["type"], "video/webm");
    let (image, movie) = (id_of(&image), id_of(&movie));
    // Each would call the marker and write localStorage, as the member.
    let script = "<script>fetch('/xss-marker?uploaded', {credentials: 'include'}); \
                  localStorage.setItem('xss', document.title || 'svg')</script>";
    let page = upload(
        &host,
        "page.html",
        "text/html",
        format!("<!doctype html><title>page</title>{script}").as_bytes(),
    );
    let svg = upload(
        &host,
        "drawing.svg",
        "image/svg+xml",
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\">{script}</svg>"
        )
        .as_bytes(),
    );
    let text = upload(
        &host,
        "notes.txt",
        "text/plain",
        format!("<html><title>text</title>{script}</html>").as_bytes(),
    );
    let (page, svg, text) = (id_of(&page), id_of(&svg), id_of(&text));
    // The files are the member's own: without their cookie, nothing.
    for id in [&image, &movie] {
        let r = host.get(&format!("/assets/{id}"), None);
        assert_eq!(r.status, 403, "anonymous read of {id}: {}", r.body);
    }

    let started = Instant::now();
    let out = run_sdk_js(
        "browser.test.js",
        &[
            ("PLATFORM_URL", host.base.as_str()),
            ("PLATFORM_EMAIL", user_email(MEMBER).as_str()),
            ("PLATFORM_PASSWORD", PASSWORD),
            ("PLATFORM_IMAGE_ID", image.as_str()),
            ("PLATFORM_MOVIE_ID", movie.as_str()),
            ("PLATFORM_CHROMIUM", chromium),
            ("PLATFORM_PAGE_ID", page.as_str()),
            ("PLATFORM_SVG_ID", svg.as_str()),
            ("PLATFORM_TEXT_ID", text.as_str()),
        ],
    );
    println!("the browser's run took {:?}", started.elapsed());
    assert_passed(&out, 4, &host);

    // The page's upload is the member's.
    let uploaded = host.admin_find(
        "platform_files",
        &json!({"title": {"_eq": "Avatar from the browser"}}),
    );
    assert_eq!(uploaded.len(), 1, "{uploaded:?}");
    assert_eq!(uploaded[0]["uploaded_by"], member);
    assert_eq!(uploaded[0]["type"], "image/png");
}

/// The demo as the site's pages read it (docs/decisions.md §9): a page of
/// the host's origin shows the models' avatars and tags, the articles'
/// covers and the videos' movie lengths, with no broken image and no
/// `null` where a list is expected; and `/admin` signs a demo viewer in
/// and out (`tests/sdk-js/demo-page.test.js`).
#[test]
fn the_demo_s_pages_show_tags_avatars_covers_and_movie_lengths() {
    let chromium = chromium();
    let host = Host::start(HostOptions::svc().arg("--demo"));
    let out = run_sdk_js(
        "demo-page.test.js",
        &[
            ("PLATFORM_URL", host.base.as_str()),
            ("PLATFORM_CHROMIUM", chromium),
        ],
    );
    assert_passed(&out, 2, &host);
}
