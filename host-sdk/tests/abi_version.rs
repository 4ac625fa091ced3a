//! The ABI version moves with the boundary and only with it: a library's
//! header carries `ABI_VERSION`, which the host's loader compares, so a
//! release that changes only the facade must not move it, and one that
//! changes `abi/` must.
//!
//! The boundary's source (`src/abi/*.rs`, comments and whitespace left out)
//! is fingerprinted; each ABI version records the fingerprint it was
//! released with.

use abi_stable::library::RootModule;
use host_sdk::abi::ExtensionModuleRef;
use host_sdk::{ABI_VERSION, SDK_VERSION};
use sha2::{Digest, Sha256};

/// The fingerprint of `src/abi/` as each ABI version has it.
const RELEASED: &[(&str, &str)] = &[
    (
        "1.8.0",
        "9e466c54179431b265918fe50e6d754477f4230136800f6d883d29ee0d6c4c34",
    ),
    (
        "1.9.0",
        "09e9ee27a5932994eca7460be8a42ca039c01b35dd36d99809071c1524a3011e",
    ),
    (
        "1.14.0",
        "f83698d6701953732eaa389e624d730c07cd92d4740afe8d4afae8b349f6b2ea",
    ),
];

/// `src/abi/*.rs` without comments and whitespace, hashed.
fn fingerprint() -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/abi");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("src/abi")
        .map(|e| e.expect("src/abi entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    let mut hash = Sha256::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("an abi source file");
        hash.update(file.file_name().expect("a file name").as_encoded_bytes());
        for line in text.lines() {
            let code = line.split_once("//").map_or(line, |(code, _)| code);
            let code: String = code.split_whitespace().collect();
            hash.update(code.as_bytes());
        }
    }
    hex(&hash.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn parts(version: &str) -> (u64, u64) {
    let mut numbers = version
        .split('.')
        .map(|n| n.parse::<u64>().expect("a number"));
    (
        numbers.next().expect("a major"),
        numbers.next().expect("a minor"),
    )
}

#[test]
fn the_abi_version_changes_when_the_boundary_does() {
    let now = fingerprint();
    let recorded = RELEASED.iter().find(|(v, _)| *v == ABI_VERSION);
    match recorded {
        Some((_, fingerprint)) => assert_eq!(
            *fingerprint, now,
            "src/abi/ differs from ABI {ABI_VERSION} as released: a change to the boundary \
             needs a new ABI_VERSION (a minor for fields appended to the root module, a major \
             for a break), recorded here as (\"<version>\", \"{now}\")"
        ),
        None => panic!(
            "ABI {ABI_VERSION} has no recorded fingerprint: add (\"{ABI_VERSION}\", \"{now}\")"
        ),
    }
}

#[test]
fn a_library_header_carries_the_abi_version_not_the_crate_version() {
    assert_eq!(
        ExtensionModuleRef::VERSION_STRINGS.version.as_str(),
        ABI_VERSION
    );
    let (sdk_major, sdk_minor) = parts(SDK_VERSION);
    let (abi_major, abi_minor) = parts(ABI_VERSION);
    assert_eq!(sdk_major, abi_major, "the SDK and its ABI share a major");
    assert!(
        abi_minor <= sdk_minor,
        "ABI {ABI_VERSION} is newer than the SDK {SDK_VERSION} that carries it"
    );
}
