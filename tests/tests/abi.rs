//! ABI compatibility: what the host accepts and refuses at load time, and
//! that a misbehaving extension cannot take the host down.

use platform_tests::{fixture_library, library, Host, HostOptions, ADMIN_TOKEN};
use serde_json::json;

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
    assert_eq!(svc["sdk_version"], "1.8.0");
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

#[test]
fn several_extensions_load_at_once() {
    let host = Host::start(HostOptions::with(vec![
        library("svc_extension"),
        library("fixture_ext"),
        fixture_library("sdk_1_0_ext"),
    ]));
    svc_serves(&host);
    assert_eq!(host.get("/fixture/ok", None).status, 200);
    assert_eq!(host.get("/legacy/hello", None).status, 200);
}
