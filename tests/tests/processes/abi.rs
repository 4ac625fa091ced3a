//! ABI compatibility: what the host accepts and refuses at load time, and
//! that a misbehaving extension cannot take the host down.
//!
//! Refused at load, with one log line while svc keeps serving: a root
//! module of another layout (b, `tests/fixtures/layout-mismatch`), a
//! library without one (c), another SDK major (d), a newer ABI minor (i,
//! `sdk-newer-minor`, from its header before the layout check), a builder
//! that panics (j, the panic's text in the line), a missing requirement.
//! Served: today's svc with its SDK and ABI versions (a); libraries built
//! on the frozen 1.0 and 1.7 contracts (`tests/fixtures/frozen-abi/`),
//! whose missing later fields read as absent (g) and whose whole 1.0–1.7
//! surface works against today's host (h); a 1.7 library relying on the
//! member rules its host seeded (`sdk-1.7-members`). A panicking handler is
//! a 500 and nothing more (e); an extension's log lines reach the host's
//! log under its id (f). svc's library needs no static TLS (k), which a
//! library opened at run time takes from a small shared reserve.

use platform_tests::{fixture_library, id_of, library, str_of, Host, HostOptions, ADMIN_TOKEN};
use serde_json::{json, Value};

/// The host's SDK version (host-sdk's package version): a facade-only
/// release moves it past the ABI version.
const HOST_SDK: &str = "1.20.0";
/// The host's ABI version (`host_sdk::ABI_VERSION`), what the loader
/// compares.
const HOST_ABI: &str = "1.14.0";

fn svc_serves(host: &Host) {
    let r = host.get("/svc/stats", None);
    assert_eq!(r.status, 200, "svc must keep serving: {}", r.body);
}

/// The one log line about this library.
fn line_about(host: &Host, file: &str) -> String {
    host.log()
        .lines()
        .filter(|l| l.contains(file))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_svc_loads_and_reports_its_manifest() {
    let host = Host::start(HostOptions::svc());
    let r = host.get("/server/extensions", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200, "{}", r.body);
    let list = r.json()["data"].clone();
    let svc = list
        .as_array()
        .and_then(|l| l.iter().find(|e| e["id"] == "svc"))
        .cloned()
        .unwrap_or_else(|| panic!("svc not listed: {list}"));
    assert_eq!(svc["mount"], "/svc");
    assert_eq!(svc["sdk_version"], HOST_SDK);
    assert_eq!(svc["abi_version"], HOST_ABI);
    // Its routes, from the routes it declared, under its mount.
    let routes = svc["routes"].as_array().cloned().unwrap_or_default();
    for (method, path) in [("GET", "/svc/videos"), ("POST", "/svc/recordings")] {
        assert!(
            routes.contains(&json!({"method": method, "path": path})),
            "{method} {path} in {routes:?}"
        );
    }
    // The header the loader compares carries the ABI version, not the SDK's.
    let header = abi_stable::library::lib_header_from_path(&library("svc_extension"))
        .expect("svc's library header");
    assert_eq!(header.version_strings().version.as_str(), HOST_ABI);
    assert_eq!(host_sdk::ABI_VERSION, HOST_ABI);
    assert_eq!(host_sdk::SDK_VERSION, HOST_SDK);
    assert!(svc["name"].as_str().is_some_and(|n| !n.is_empty()));
    assert!(line_about(&host, "libsvc_extension.so").contains("loaded extension `svc`"));
    // The manifest listing is for administrators only.
    assert_eq!(host.get("/server/extensions", None).status, 403);
}

#[test]
fn b_a_root_module_with_another_layout_is_refused() {
    let host = Host::start(HostOptions::with(vec![
        library("svc_extension"),
        fixture_library("layout_mismatch"),
    ]));
    let line = line_about(&host, "liblayout_mismatch.so");
    assert!(line.contains("refused extension"), "{line}");
    assert!(line.contains("ABI layout mismatch"), "{line}");
    assert!(
        line.contains("handle"),
        "the reason should name the field: {line}"
    );
    assert_eq!(host.get("/mismatch/anything", None).status, 404);
    svc_serves(&host);
}

#[test]
fn c_a_library_without_root_module_is_refused() {
    let host = Host::start(HostOptions::with(vec![
        library("svc_extension"),
        library("no_root_module"),
    ]));
    let line = line_about(&host, "libno_root_module.so");
    assert!(line.contains("refused extension"), "{line}");
    assert!(line.contains("no extension root module"), "{line}");
    svc_serves(&host);
}

#[test]
fn d_an_extension_of_another_sdk_major_is_refused() {
    let host = Host::start(HostOptions::with(vec![
        library("svc_extension"),
        library("other_major"),
    ]));
    let line = line_about(&host, "libother_major.so");
    assert!(line.contains("refused extension"), "{line}");
    assert!(line.contains("built against host-sdk 2.0.0"), "{line}");
    assert!(line.contains("supports host-sdk 1.x"), "{line}");
    let r = host.get("/othermajor/", None);
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json()["errors"][0]["extensions"]["code"],
        "ROUTE_NOT_FOUND"
    );
    svc_serves(&host);
}

#[test]
fn e_a_panicking_handler_answers_500_and_the_host_keeps_serving() {
    let host = Host::start(HostOptions::svc_and_fixture());
    let r = host.get("/fixture/panic", None);
    assert_eq!(r.status, 500);
    assert_eq!(r.json(), json!({"error": "Internal extension error"}));
    let r = host.get("/fixture/ok", None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["ok"], true);
    // Again: the library is still usable after the panic.
    assert_eq!(host.get("/fixture/panic", None).status, 500);
    svc_serves(&host);
    assert!(
        host.log().contains("fixture panic"),
        "the panic is reported in the host log"
    );
}

#[test]
fn f_extension_log_lines_reach_the_host_log() {
    let host = Host::start(HostOptions::with(vec![library("fixture_ext")]));
    let marker = format!("m{}", std::process::id());
    let r = host.get(&format!("/fixture/log?marker={marker}"), None);
    assert_eq!(r.status, 200, "{}", r.body);
    let expected = format!("fixture log line {marker}");
    let line = host
        .log()
        .lines()
        .find(|l| l.contains(&expected))
        .map(String::from)
        .unwrap_or_else(|| panic!("no `{expected}` in the host log:\n{}", host.log()));
    assert!(line.contains("INFO"), "{line}");
    assert!(
        line.contains(" fixture]"),
        "the extension id is the target: {line}"
    );
}

/// The fixture is built on the frozen 1.0 contract
/// (tests/fixtures/frozen-abi/v1_0), not on today's host-sdk files.
#[test]
fn g_an_extension_built_against_an_earlier_minor_version_loads_and_serves() {
    let host = Host::start(HostOptions::with(vec![
        library("svc_extension"),
        fixture_library("sdk_1_0_ext"),
    ]));
    let line = line_about(&host, "libsdk_1_0_ext.so");
    assert!(line.contains("loaded extension `legacy`"), "{line}");
    assert!(line.contains("host-sdk 1.0.0"), "{line}");
    let r = host.get("/legacy/hello", None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json(), json!({"hello": "from sdk 1.0"}));
    // The 1.1 field (its OpenAPI part) is absent and reads as nothing.
    let oas = host.get("/server/specs/oas", None).json();
    assert!(oas["paths"].get("/svc/stats").is_some(), "{oas}");
    assert!(
        !oas["paths"]
            .as_object()
            .is_some_and(|p| p.keys().any(|k| k.starts_with("/legacy"))),
        "{oas}"
    );
    svc_serves(&host);
}

/// The fixture is built on the frozen 1.7 contract
/// (tests/fixtures/frozen-abi/v1_7); see its lib.rs for what each route does.
#[test]
fn h_an_extension_built_against_sdk_1_7_loads_and_its_surface_works() {
    let host = Host::start(HostOptions::with(vec![
        library("svc_extension"),
        fixture_library("sdk_1_7_ext"),
    ]));
    let line = line_about(&host, "libsdk_1_7_ext.so");
    assert!(line.contains("loaded extension `sdk17`"), "{line}");
    assert!(line.contains("host-sdk 1.7.0"), "{line}");
    // init: the host's logger, under the extension's id.
    assert!(
        host.log()
            .lines()
            .any(|l| l.contains(" sdk17]") && l.contains("sdk17 initialised")),
        "{}",
        host.log()
    );

    // 1.4: the host calls `handle_shared`; the caller crosses in the context.
    let r = host.get("/sdk17/hello", None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"hello": "from sdk 1.7", "via": "handle_shared", "caller": null})
    );
    let caller = host.get("/sdk17/hello", Some(ADMIN_TOKEN)).json()["caller"].clone();
    assert!(caller.as_str().is_some_and(|c| !c.is_empty()), "{caller}");

    // 1.1: its OpenAPI paths, under its mount.
    let oas = host.get("/server/specs/oas", None).json();
    for path in [
        "/sdk17/hello",
        "/sdk17/notes",
        "/sdk17/notes/batch",
        "/sdk17/small",
    ] {
        assert!(oas["paths"].get(path).is_some(), "{path} missing: {oas}");
    }

    // The migration: its collections and seed, read through the services.
    let r = host.get("/sdk17/notes", None);
    assert_eq!(r.status, 200, "{}", r.body);
    let titles: Vec<String> = r.json()["data"]
        .as_array()
        .map(|notes| notes.iter().map(|n| str_of(&n["title"])).collect())
        .unwrap_or_default();
    assert_eq!(titles, ["seeded"], "{}", r.body);

    // 1.3: the runtime's data version moves with a write.
    let version = || host.get("/sdk17/runtime", None).json()["data_version"].clone();
    let before = version();
    assert!(before.is_u64(), "{before}");

    // The item services: create and read back, from a route.
    let r = host.post("/sdk17/notes", None, &json!({"title": "first"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let first = r.json()["data"].clone();
    assert_eq!(first["title"], "first", "{first}");
    let first_id = id_of(&first);
    assert_eq!(host.admin_item("sdk17_notes", &first_id)["title"], "first");
    assert_ne!(
        version(),
        before,
        "a committed write changes the data version"
    );

    // 1.2: its hook gets the notes' events, through any write path, and
    // nothing else (its own writes to sdk17_log are not delivered to it).
    let second_id = id_of(&host.admin_create("sdk17_notes", &json!({"title": "second"})));
    host.admin_patch("sdk17_notes", &second_id, &json!({"title": "renamed"}));
    let logged = |note: &str| -> Vec<(String, String)> {
        host.admin_find("sdk17_log", &json!({"note": {"_eq": note}}))
            .iter()
            .map(|e| (str_of(&e["event"]), str_of(&e["title"])))
            .collect()
    };
    assert_eq!(logged(&first_id), [("items.create".into(), "first".into())]);
    let mut second = logged(&second_id);
    second.sort();
    assert_eq!(
        second,
        [
            ("items.create".to_string(), "second".to_string()),
            ("items.update".to_string(), "renamed".to_string()),
        ]
    );
    let others = json!({"source": {"_neq": "sdk17_notes"}});
    assert_eq!(host.admin_count("sdk17_log", Some(&others)), 0);

    // 1.5: the in-transaction hook refuses a note titled `forbidden`,
    // on create and on update, and nothing of the write stays.
    let r = host.post(
        "/items/sdk17_notes",
        Some(ADMIN_TOKEN),
        &json!({"title": "forbidden"}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("sdk17 refuses notes titled"), "{}", r.body);
    let r = host.patch(
        &format!("/items/sdk17_notes/{second_id}"),
        Some(ADMIN_TOKEN),
        &json!({"title": "forbidden"}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        host.admin_item("sdk17_notes", &second_id)["title"],
        "renamed"
    );
    let forbidden = json!({"title": {"_eq": "forbidden"}});
    assert_eq!(host.admin_count("sdk17_notes", Some(&forbidden)), 0);
    assert_eq!(host.admin_count("sdk17_log", Some(&forbidden)), 0);

    // 1.7: a transaction through `HostServices::transaction`: all of it
    // commits, or (a note refused) none of it, and no event is delivered.
    let r = host.post(
        "/sdk17/notes/batch",
        None,
        &json!({"titles": ["third", "fourth"]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let keys = r.json()["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(keys.len(), 2, "{}", r.body);
    for (key, title) in keys.iter().zip(["third", "fourth"]) {
        assert_eq!(host.admin_item("sdk17_notes", &str_of(key))["title"], title);
    }
    let r = host.post(
        "/sdk17/notes/batch",
        None,
        &json!({"titles": ["fifth", "forbidden"]}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["code"], "INVALID_PAYLOAD", "{}", r.body);
    let fifth = json!({"title": {"_eq": "fifth"}});
    assert_eq!(host.admin_count("sdk17_notes", Some(&fifth)), 0);
    assert_eq!(host.admin_count("sdk17_log", Some(&fifth)), 0);

    // 1.6: a body past the route's 16 bytes is refused by the host (413)
    // without calling the handler.
    let r = host.request("POST", "/sdk17/small", None, Some(br#"{"n":1}"#));
    assert_eq!(r.status, 200, "{}", r.body);
    let large = Value::String("x".repeat(64)).to_string();
    let r = host.request("POST", "/sdk17/small", None, Some(large.as_bytes()));
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(host.get("/sdk17/small/calls", None).json()["calls"], 1);

    svc_serves(&host);
}

#[test]
fn i_a_library_built_against_a_newer_minor_is_refused() {
    let host = Host::start(HostOptions::with(vec![
        library("svc_extension"),
        fixture_library("sdk_newer_minor"),
    ]));
    let line = line_about(&host, "libsdk_newer_minor.so");
    assert!(line.contains("refused extension"), "{line}");
    let minor = HOST_ABI.rsplit_once('.').map_or(HOST_ABI, |(m, _)| m);
    let reason = format!(
        "built against host-sdk ABI 1.99.0, newer than this host's ABI {HOST_ABI}: \
         rebuild the extension against a host-sdk of ABI {minor} or earlier, or upgrade the host"
    );
    assert!(line.contains(&reason), "{line}");
    // Refused from the header's version, before the layout check.
    assert!(!line.contains("layout"), "{line}");
    assert_eq!(host.get("/future/hello", None).status, 404);
    let listed = host.get("/server/extensions", Some(ADMIN_TOKEN)).json();
    assert!(
        !listed["data"]
            .as_array()
            .is_some_and(|l| l.iter().any(|e| e["id"] == "future")),
        "{listed}"
    );
    svc_serves(&host);
}

#[test]
fn several_extensions_load_at_once() {
    let host = Host::start(HostOptions::with(vec![
        library("svc_extension"),
        library("fixture_ext"),
        fixture_library("sdk_1_0_ext"),
        fixture_library("sdk_1_7_ext"),
    ]));
    svc_serves(&host);
    assert_eq!(host.get("/fixture/ok", None).status, 200);
    assert_eq!(host.get("/legacy/hello", None).status, 200);
    assert_eq!(host.get("/sdk17/hello", None).status, 200);
}

#[test]
fn j_an_extension_that_panics_while_built_is_refused_with_the_reason() {
    let host = Host::start(HostOptions::with(vec![
        library("svc_extension"),
        library("panicking_build"),
    ]));
    let line = line_about(&host, "libpanicking_build.so");
    assert!(line.contains("refused extension"), "{line}");
    assert!(
        line.contains("panicked while building the extension: the notes schema could not be read"),
        "{line}"
    );
    svc_serves(&host);
}

/// A library of SDK 1.7 relied on its host to seed the members' rules on
/// `recordings` and `video_likes` (SDK 1.8 moved them into svc's own
/// migrations): today's host gives them, once, on a fresh database, and an
/// administrator's later change of them stands across restarts.
#[test]
fn a_library_of_sdk_1_7_keeps_the_member_rules_its_host_seeded() {
    let host = Host::start(HostOptions::with(vec![fixture_library("sdk_1_7_members")]));
    assert!(
        host.log()
            .contains("granted members the 14 rules on recordings and likes"),
        "{}",
        host.log()
    );
    host.user(Some("Viewer"), "v");
    host.user(Some("Model"), "m");
    let data = |r: &platform_tests::Resp, what: &str| {
        assert_eq!(r.status, 200, "{what}: {}", r.body);
        r.json()["data"].clone()
    };

    data(
        &host.post(
            "/members17/recordings",
            Some("v"),
            &json!({"title": "Mine"}),
        ),
        "a viewer's recording",
    );
    data(
        &host.post("/members17/likes", Some("m"), &json!({"video_id": "x"})),
        "a model's like",
    );
    let mine = data(
        &host.get("/members17/recordings", Some("v")),
        "own recordings",
    );
    assert_eq!(mine.as_array().map(Vec::len), Some(1), "{mine}");
    assert_eq!(mine[0]["title"], "Mine");
    let theirs = data(
        &host.get("/members17/recordings", Some("m")),
        "others' recordings",
    );
    assert_eq!(
        theirs,
        json!([]),
        "a draft of another member is not readable"
    );
    let likes = data(&host.get("/members17/likes", Some("m")), "own likes");
    assert_eq!(likes.as_array().map(Vec::len), Some(1), "{likes}");
    assert_eq!(
        data(&host.get("/members17/likes", Some("v")), "others' likes"),
        json!([])
    );

    // An administrator takes the viewers' right to create recordings away;
    // a restart does not give it back.
    let viewer_policy = host.id_by_name("platform_policies", "Viewer");
    let rule = host.admin_find(
        "platform_permissions",
        &json!({"policy": {"_eq": viewer_policy}, "collection": {"_eq": "recordings"}, "action": {"_eq": "create"}}),
    );
    assert_eq!(rule.len(), 1, "{rule:?}");
    host.admin_delete("platform_permissions", &id_of(&rule[0]));
    let dir = host.stop();
    let host = Host::start(HostOptions {
        data_dir: Some(dir),
        ..HostOptions::with(vec![fixture_library("sdk_1_7_members")])
    });
    assert!(!host.log().contains("granted members"), "{}", host.log());
    let r = host.post(
        "/members17/recordings",
        Some("v"),
        &json!({"title": "Again"}),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    data(
        &host.post(
            "/members17/recordings",
            Some("m"),
            &json!({"title": "Model's"}),
        ),
        "a model keeps the right",
    );
}

/// Requirements (SDK 1.9): bookmarks requires svc 0.x. In a folder with
/// both, svc is loaded first although file-name order would put bookmarks
/// first; alone, bookmarks is refused with a line naming what it lacks,
/// and the host serves on.
#[test]
fn an_extension_loads_after_the_one_it_requires_or_is_refused_without_it() {
    let host = Host::start(HostOptions::with(vec![
        library("bookmarks"),
        library("svc_extension"),
    ]));
    let log = host.log();
    let svc_at = log
        .find("loaded extension `svc`")
        .unwrap_or_else(|| panic!("{log}"));
    let bookmarks_at = log
        .find("loaded extension `bookmarks`")
        .unwrap_or_else(|| panic!("{log}"));
    assert!(svc_at < bookmarks_at, "svc must load first:\n{log}");
    svc_serves(&host);
    assert_eq!(host.get("/bookmarks/bookmarks/mine", None).status, 401);
    // Over HTTP: a typed route's 201, and a 204 without a body or a type.
    let video = id_of(&host.admin_create("videos", &json!({"slug": "v", "title": "V"})));
    host.user(Some("Viewer"), "reader");
    let made = host.post(
        "/bookmarks/bookmarks",
        Some("reader"),
        &json!({ "video": video }),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    let gone = host.delete(
        &format!("/bookmarks/bookmarks/{}", str_of(&made.json()["id"])),
        Some("reader"),
    );
    assert_eq!((gone.status, gone.body.as_str()), (204, ""));
    assert!(
        gone.header_all("content-type").is_empty(),
        "{:?}",
        gone.headers
    );

    let alone = Host::start(HostOptions::with(vec![library("bookmarks")]));
    let line = line_about(&alone, "libbookmarks.so");
    assert!(line.contains("refused extension"), "{line}");
    assert!(
        line.contains("requires `svc` >=0.1, <1, which is not installed"),
        "{line}"
    );
    assert_eq!(alone.get("/bookmarks/bookmarks/mine", None).status, 404);
    assert_eq!(alone.get("/server/ping", None).status, 200);
}

/// The flags of a 64-bit little-endian ELF file's dynamic section
/// (`DT_FLAGS`), or `None` when it has none.
fn elf_dynamic_flags(bytes: &[u8]) -> Option<u64> {
    let u16_at = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    assert_eq!(&bytes[..5], b"\x7fELF\x02", "a 64-bit ELF file");
    let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
    let dynamic = (0..phnum)
        .map(|i| phoff + i * phentsize)
        .find(|&ph| u32::from_le_bytes(bytes[ph..ph + 4].try_into().unwrap()) == 2)?; // PT_DYNAMIC
    let (offset, size) = (u64_at(dynamic + 8) as usize, u64_at(dynamic + 32) as usize);
    (offset..offset + size)
        .step_by(16)
        .map(|entry| (u64_at(entry), u64_at(entry + 8)))
        .take_while(|&(tag, _)| tag != 0)
        .find(|&(tag, _)| tag == 30) // DT_FLAGS
        .map(|(_, value)| value)
}

/// A library the host opens at run time should not need static TLS: glibc
/// gives such libraries a small reserve, shared by all of them, and a load
/// that finds it spent fails. svc's allocator (mimalloc) is built with the
/// local-dynamic TLS model for that reason.
#[test]
fn k_the_svc_library_needs_no_static_tls() {
    const DF_STATIC_TLS: u64 = 0x10;
    let bytes = std::fs::read(library("svc_extension")).expect("svc's library");
    let flags = elf_dynamic_flags(&bytes).unwrap_or(0);
    assert_eq!(
        flags & DF_STATIC_TLS,
        0,
        "libsvc_extension.so is marked STATIC_TLS (DT_FLAGS {flags:#x})"
    );
}
