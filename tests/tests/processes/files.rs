//! `/files`: uploads as Directus takes them (multipart/form-data, fields
//! before the file), streamed to storage; the records under the caller's
//! permissions; nothing left behind by a refused or failed upload; the
//! bytes gone with their record; one S3 bucket shared by two hosts; an
//! upload's memory; and uploads by the session cookie, taken from the
//! site's own pages only.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use platform_tests::multipart::Form;
use platform_tests::s3::S3;
use platform_tests::{id_of, user_email, Host, HostOptions, ADMIN_TOKEN};
use serde_json::json;

/// A 3×2 PNG header (enough for its type and size).
const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x03\0\0\0\x02\x08\x06\0\0\0\x7a\x1e\x9b\x9e";

fn files_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn file_count(host: &Host) -> u64 {
    host.admin_count("platform_files", None)
}

#[test]
fn a_member_uploads_a_file_and_the_record_tells_what_it_is() {
    let host = Host::start(HostOptions::svc());
    let member = host.user(Some("Viewer"), "uploader-1");
    let form = Form::new()
        .field("title", "Holiday")
        .field("description", "At the sea")
        .file("file", "sea-view.png", "application/octet-stream", PNG);
    let r = host.send_form("POST", "/files", Some("uploader-1"), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    let record = r.json()["data"].clone();
    let id = id_of(&record);
    assert_eq!(record["title"], "Holiday");
    assert_eq!(record["description"], "At the sea");
    assert_eq!(record["type"], "image/png", "sniffed from the bytes");
    assert_eq!(record["filesize"], PNG.len() as u64);
    assert_eq!(record["width"], 3);
    assert_eq!(record["height"], 2);
    assert_eq!(record["filename_download"], "sea-view.png");
    assert_eq!(record["filename_disk"], format!("{id}.png"));
    assert_eq!(record["storage"], "local");
    assert_eq!(record["uploaded_by"], member);
    assert!(record["uploaded_on"].is_string(), "{record}");
    assert_eq!(
        std::fs::read(host.uploads_dir().join(format!("{id}.png"))).expect("stored"),
        PNG
    );

    // Without a title, one is made from the name; a declared type stands
    // when the bytes say nothing.
    let form = Form::new().file("file", "my_notes-2024.txt", "text/plain", b"hello");
    let r = host.send_form("POST", "/files", Some("uploader-1"), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["title"], "My Notes 2024");
    assert_eq!(r.json()["data"]["type"], "text/plain");
    assert_eq!(r.json()["data"]["width"], json!(null));

    // Reads follow grants: the uploader reads their own, others nothing.
    let r = host.get(&format!("/files/{id}"), Some("uploader-1"));
    assert_eq!(r.status, 200, "{}", r.body);
    host.user(Some("Viewer"), "other-1");
    assert_eq!(
        host.get(&format!("/files/{id}"), Some("other-1")).status,
        403
    );
    let r = host.get("/files", Some("other-1"));
    assert_eq!(r.json()["data"], json!([]), "{}", r.body);
    let r = host.get("/files?sort=title&fields=title", Some("uploader-1"));
    assert_eq!(
        r.json()["data"],
        json!([{"title": "Holiday"}, {"title": "My Notes 2024"}])
    );
    assert_eq!(host.get(&format!("/files/{id}"), None).status, 403);
}

#[test]
fn metadata_changes_and_replacements_keep_the_record() {
    let host = Host::start(HostOptions::svc());
    host.user(Some("Model"), "owner-2");
    host.user(Some("Model"), "stranger-2");
    let form = Form::new().file("file", "a.txt", "text/plain", b"first");
    let id = id_of(
        &host
            .send_form("POST", "/files", Some("owner-2"), &form)
            .json()["data"],
    );

    let r = host.patch(
        &format!("/files/{id}"),
        Some("owner-2"),
        &json!({"title": "Renamed", "tags": ["a"]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["title"], "Renamed");
    assert_eq!(r.json()["data"]["tags"], json!(["a"]));
    assert!(r.json()["data"]["modified_on"].is_string(), "{}", r.body);
    let r = host.patch(
        &format!("/files/{id}"),
        Some("stranger-2"),
        &json!({"title": "Mine"}),
    );
    assert_eq!(r.status, 403, "{}", r.body);

    // Where the bytes are, what they are and who uploaded them are the
    // host's: an owner pointing their record at other bytes is refused.
    for field in [
        "filename_disk",
        "storage",
        "filesize",
        "type",
        "uploaded_by",
    ] {
        let r = host.patch(
            &format!("/files/{id}"),
            Some("owner-2"),
            &json!({ field: "x" }),
        );
        assert_eq!(r.status, 403, "{field}: {}", r.body);
    }
    let form = Form::new()
        .field("filename_disk", "elsewhere.txt")
        .field("uploaded_by", "someone")
        .file("file", "d.txt", "text/plain", b"d");
    let r = host.send_form("POST", "/files", Some("owner-2"), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    let other = r.json()["data"].clone();
    assert_eq!(other["filename_disk"], format!("{}.txt", id_of(&other)));
    assert_ne!(other["uploaded_by"], "someone");
    assert_eq!(
        host.delete(&format!("/files/{}", id_of(&other)), Some("owner-2"))
            .status,
        204
    );

    // New bytes through multipart: same record, new size, old bytes gone.
    let form = Form::new().file("file", "b.txt", "text/plain", b"second version");
    let r = host.send_form("PATCH", &format!("/files/{id}"), Some("owner-2"), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    let record = r.json()["data"].clone();
    assert_eq!(id_of(&record), id);
    assert_eq!(record["filesize"], 14);
    assert_eq!(record["title"], "Renamed", "kept");
    let disk = record["filename_disk"].as_str().expect("a key").to_string();
    assert_eq!(files_in(&host.uploads_dir()), vec![disk.clone()]);
    assert_eq!(
        std::fs::read(host.uploads_dir().join(&disk)).expect("bytes"),
        b"second version"
    );
    let form = Form::new().file("file", "c.txt", "text/plain", b"not yours");
    let r = host.send_form("PATCH", &format!("/files/{id}"), Some("stranger-2"), &form);
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(files_in(&host.uploads_dir()), vec![disk]);

    // Deleting: the stranger may not; the owner deletes record and bytes.
    assert_eq!(
        host.delete(&format!("/files/{id}"), Some("stranger-2"))
            .status,
        403
    );
    let r = host.delete(&format!("/files/{id}"), Some("owner-2"));
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(file_count(&host), 0);
    assert!(files_in(&host.uploads_dir()).is_empty());
}

#[test]
fn refused_uploads_leave_nothing_behind() {
    let host = Host::start(
        HostOptions::svc()
            .env_var("FILES_MAX_UPLOAD_SIZE", "1000")
            .env_var("FILES_MIME_TYPE_ALLOW_LIST", "image/*,text/plain"),
    );
    host.user(Some("Viewer"), "refused-3");
    let big = vec![b'x'; 5000];
    let form = Form::new().file("file", "big.txt", "text/plain", &big);
    let r = host.send_form("POST", "/files", Some("refused-3"), &form);
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"errors": [{"message": "Uploaded content is too large.", "extensions": {"code": "CONTENT_TOO_LARGE"}}]})
    );
    let form = Form::new().file("file", "doc.pdf", "application/pdf", b"%PDF-1.4 x");
    let r = host.send_form("POST", "/files", Some("refused-3"), &form);
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json()["errors"][0]["extensions"]["code"],
        "INVALID_PAYLOAD"
    );
    let r = host.send_form(
        "POST",
        "/files",
        Some("refused-3"),
        &Form::new().field("title", "x"),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    // Anonymous callers may not upload.
    let form = Form::new().file("file", "a.txt", "text/plain", b"hi");
    assert_eq!(host.send_form("POST", "/files", None, &form).status, 403);
    // An upload cut off half-way.
    cut_off_upload(&host, "refused-3");
    // An unknown storage location.
    let form = Form::new()
        .field("storage", "elsewhere")
        .file("file", "a.txt", "text/plain", b"hi");
    let r = host.send_form("POST", "/files", Some("refused-3"), &form);
    assert_eq!(r.status, 400, "{}", r.body);

    assert_eq!(file_count(&host), 0);
    assert!(
        files_in(&host.uploads_dir()).is_empty(),
        "{:?}",
        files_in(&host.uploads_dir())
    );
    host.assert_serving();
}

/// A form's fields are held until its file: their count and their bytes
/// in all are bounded (`FILES_MAX_FORM_FIELDS`,
/// `FILES_MAX_FORM_FIELDS_SIZE`), 400 past either, and nothing kept.
#[test]
fn a_forms_fields_are_bounded_in_count_and_bytes() {
    let host = Host::start(HostOptions::svc());
    host.user(Some("Viewer"), "fields-6");
    let form_of = |fields: usize, value: &str| {
        (0..fields)
            .fold(Form::new(), |form, _| form.field("title", value))
            .file("file", "a.txt", "text/plain", b"hi")
    };
    let r = host.send_form("POST", "/files", Some("fields-6"), &form_of(200, "t"));
    assert_eq!(r.status, 200, "{}", r.body);
    let r = host.send_form("POST", "/files", Some("fields-6"), &form_of(201, "t"));
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"errors": [{"message": "Invalid payload. A form may have at most 200 fields.",
                           "extensions": {"code": "INVALID_PAYLOAD"}}]})
    );
    // Each field within its own bound, together past theirs (1 MB).
    let long = "x".repeat(60 * 1024);
    let r = host.send_form("POST", "/files", Some("fields-6"), &form_of(17, &long));
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json()["errors"][0]["message"],
        "Invalid payload. A form's fields may hold at most 1000000 bytes in all."
    );
    assert_eq!(file_count(&host), 1);
    host.assert_serving();

    let host = Host::start(
        HostOptions::svc()
            .env_var("FILES_MAX_FORM_FIELDS", "3")
            .env_var("FILES_MAX_FORM_FIELDS_SIZE", "100"),
    );
    let r = host.send_form("POST", "/files", Some(ADMIN_TOKEN), &form_of(4, "t"));
    assert_eq!(r.status, 400, "{}", r.body);
    let r = host.send_form(
        "POST",
        "/files",
        Some(ADMIN_TOKEN),
        &form_of(2, &"y".repeat(60)),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let r = host.send_form("POST", "/files", Some(ADMIN_TOKEN), &form_of(3, "t"));
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Sends the start of an upload, then closes the connection.
fn cut_off_upload(host: &Host, token: &str) {
    let form = Form::new();
    let (head, _) = form.head_and_tail("file", "cut.txt");
    let addr = host.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connect");
    let request = format!(
        "POST /files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: {}\r\nContent-Length: 900\r\n\r\n",
        form.content_type()
    );
    stream.write_all(request.as_bytes()).expect("head");
    stream.write_all(&head).expect("form head");
    stream.write_all(&[b'y'; 300]).expect("some bytes");
    std::thread::sleep(Duration::from_millis(300));
    drop(stream);
    std::thread::sleep(Duration::from_millis(500));
}

#[test]
fn an_upload_is_streamed_not_held() {
    let host = Host::start(HostOptions::svc());
    host.user(Some("Viewer"), "big-4");
    const SIZE: usize = 100 * 1000 * 1000 - 1000;
    let form = Form::new().field("title", "big");
    let (head, tail) = form.head_and_tail("file", "big.bin");
    std::fs::write(format!("/proc/{}/clear_refs", host.pid()), "5").expect("clear_refs");
    let before = host.peak_rss_kib().expect("VmHWM");
    let addr = host.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    let request = format!(
        "POST /files HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer big-4\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n",
        form.content_type(),
        head.len() + SIZE + tail.len()
    );
    stream.write_all(request.as_bytes()).expect("request");
    stream.write_all(&head).expect("form head");
    let chunk = vec![0x5au8; 1 << 20];
    let mut sent = 0;
    while sent < SIZE {
        let n = chunk.len().min(SIZE - sent);
        stream.write_all(&chunk[..n]).expect("bytes");
        sent += n;
    }
    stream.write_all(&tail).expect("tail");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(&format!("\"filesize\":{SIZE}")), "{answer}");
    let peak = host.peak_rss_kib().expect("VmHWM");
    let grown_mib = peak.saturating_sub(before) / 1024;
    assert!(
        grown_mib < 40,
        "a {} MB upload raised the peak RSS by {grown_mib} MiB",
        SIZE / 1_000_000
    );
    let stored: Vec<String> = files_in(&host.uploads_dir());
    assert_eq!(stored.len(), 1, "{stored:?}");
    let size = std::fs::metadata(host.uploads_dir().join(&stored[0]))
        .expect("stored")
        .len();
    assert_eq!(size as usize, SIZE);
}

#[test]
fn hosts_on_one_database_share_an_s3_bucket() {
    let s3 = S3::start();
    let mut opts = HostOptions::svc();
    opts.env = s3.host_env();
    let first = Host::start(opts);
    let mut opts = HostOptions::svc();
    opts.env = s3.host_env();
    let second = first.start_beside(opts);
    second.user(Some("Viewer"), "shared-5");

    let bytes: Vec<u8> = (0..6_000_000u32).map(|i| (i % 251) as u8).collect();
    let form = Form::new().field("title", "Shared").file(
        "file",
        "shared.bin",
        "application/octet-stream",
        &bytes,
    );
    let r = first.send_form("POST", "/files", Some(ADMIN_TOKEN), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    let record = r.json()["data"].clone();
    let id = id_of(&record);
    assert_eq!(record["storage"], "s3");
    assert_eq!(record["filesize"], bytes.len() as u64);
    assert!(files_in(&first.uploads_dir()).is_empty(), "nothing local");

    let r = second.get(&format!("/files/{id}"), Some(ADMIN_TOKEN));
    assert_eq!(r.json()["data"]["filename_disk"], record["filename_disk"]);

    // A refused upload leaves nothing in the bucket either: the next one
    // is the only record, and deleting through the second host empties it.
    let r = second.send_form(
        "POST",
        "/files",
        Some("shared-5"),
        &Form::new()
            .field("storage", "local")
            .file("file", "a.txt", "text/plain", b"x"),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let r = second.delete(&format!("/files/{id}"), Some(ADMIN_TOKEN));
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(file_count(&first), 0);
}

#[test]
fn folders_hold_files_and_members_read_them() {
    let host = Host::start(HostOptions::svc());
    host.user(Some("Viewer"), "folders-6");
    let r = host.post("/folders", Some(ADMIN_TOKEN), &json!({"name": "Photos"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let photos = id_of(&r.json()["data"]);
    let r = host.post(
        "/folders",
        Some(ADMIN_TOKEN),
        &json!({"name": "Beach", "parent": photos}),
    );
    let beach = id_of(&r.json()["data"]);
    assert_eq!(r.json()["data"]["parent"], photos.as_str());

    let r = host.get(
        "/folders?filter[parent][_null]=true&fields=name",
        Some("folders-6"),
    );
    assert_eq!(r.json()["data"], json!([{"name": "Photos"}]), "{}", r.body);
    let r = host.get(
        &format!("/folders/{beach}?fields=name,parent.name"),
        Some("folders-6"),
    );
    assert_eq!(
        r.json()["data"],
        json!({"name": "Beach", "parent": {"name": "Photos"}}),
        "{}",
        r.body
    );
    let r = host.post("/folders", Some("folders-6"), &json!({"name": "Mine"}));
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(host.get("/folders", None).status, 403);

    let form =
        Form::new()
            .field("folder", &beach)
            .file("file", "a.txt", "text/plain", b"in the folder");
    let r = host.send_form("POST", "/files", Some("folders-6"), &form);
    assert_eq!(r.status, 200, "{}", r.body);
    let file = id_of(&r.json()["data"]);
    assert_eq!(r.json()["data"]["folder"], beach.as_str());
    let r = host.get(
        &format!("/files?filter[folder][_eq]={beach}&fields=id"),
        Some("folders-6"),
    );
    assert_eq!(r.json()["data"], json!([{"id": file}]), "{}", r.body);

    let r = host.patch(
        &format!("/folders/{beach}"),
        Some(ADMIN_TOKEN),
        &json!({"name": "Sea"}),
    );
    assert_eq!(r.json()["data"]["name"], "Sea", "{}", r.body);
    assert_eq!(
        host.delete(&format!("/folders/{beach}"), Some(ADMIN_TOKEN))
            .status,
        204
    );
    let r = host.get(&format!("/files/{file}"), Some("folders-6"));
    assert_eq!(r.json()["data"]["folder"], json!(null), "{}", r.body);
}

#[test]
fn a_cookie_upload_is_taken_from_the_sites_own_pages_only() {
    const PASSWORD: &str = "avatar password 7";
    let host = Host::start(HostOptions::svc());
    let member = host.user_with(Some("Viewer"), "cookie-7", &json!({ "password": PASSWORD }));
    let cookie = host.session_cookie(&user_email("cookie-7"), PASSWORD);
    let own = host.base.clone();
    let form = Form::new()
        .field("title", "Avatar")
        .file("file", "avatar.png", "image/png", PNG);
    let upload = |extra: &[(&str, &str)]| {
        let mut headers = vec![("Cookie", cookie.as_str())];
        headers.extend_from_slice(extra);
        host.send_form_with("POST", "/files", &headers, &form)
    };

    // From the host's own origin (as the site's avatar form sends it).
    let r = upload(&[("Origin", &own)]);
    assert_eq!(r.status, 200, "{}", r.body);
    let record = r.json()["data"].clone();
    assert_eq!(record["title"], "Avatar");
    assert_eq!(record["type"], "image/png");
    assert_eq!(record["uploaded_by"], member);
    assert_eq!(
        host.get(&format!("/files/{}", id_of(&record)), Some("cookie-7"))
            .json()["data"]["title"],
        "Avatar"
    );
    // Without an Origin, the Referer's origin counts.
    let r = upload(&[("Referer", &format!("{own}/profile/edit"))]);
    assert_eq!(r.status, 200, "{}", r.body);

    // Another site's page, a null origin, and no origin at all: refused.
    let referer = format!("https://evil.example/{own}");
    for extra in [
        vec![("Origin", "https://evil.example")],
        vec![("Origin", "null")],
        vec![("Referer", referer.as_str())],
        vec![],
    ] {
        let r = upload(&extra);
        assert_eq!(r.status, 403, "{extra:?}: {}", r.body);
        assert_eq!(r.json()["errors"][0]["extensions"]["code"], "FORBIDDEN");
        assert!(
            r.json()["errors"][0]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Origin")),
            "{}",
            r.body
        );
    }
    assert_eq!(file_count(&host), 2);
    assert_eq!(files_in(&host.uploads_dir()).len(), 2);
}
