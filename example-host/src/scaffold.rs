//! `example-host new-extension NAME`: writes a new extension crate that
//! builds and passes its test as it is: a collection, a grant, two routes
//! (one typed), an in-transaction hook and a test-kit test. Its
//! dependencies point at this checkout's `host-sdk` and `example-host`,
//! and it builds into this checkout's target folder with the same
//! dependency versions (`Cargo.lock` copied), so a first build compiles
//! little more than the new crate.

use std::path::{Path, PathBuf};

/// Why a crate could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error("`{0}` is not a valid extension name: use lower-case letters, digits and `-`, starting with a letter")]
    InvalidName(String),
    #[error("`{0}` is reserved by the host: pick another name")]
    Reserved(String),
    #[error("{0} exists already: pick another name or folder")]
    Exists(PathBuf),
    #[error("this host was built from {0}, which has no host-sdk any more: run it from a checkout of the platform")]
    NoCheckout(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The checkout this host was built from.
pub fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Writes the crate `name` in `parent/name`; its folder.
pub fn new_extension(name: &str, parent: &Path, repo: &Path) -> Result<PathBuf, ScaffoldError> {
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(ScaffoldError::InvalidName(name.to_string()));
    }
    if crate::extensions::loader::is_reserved(name) {
        return Err(ScaffoldError::Reserved(name.to_string()));
    }
    if !repo.join("host-sdk").join("Cargo.toml").is_file() {
        return Err(ScaffoldError::NoCheckout(repo.to_path_buf()));
    }
    let dir = parent.join(name);
    if dir.exists() {
        return Err(ScaffoldError::Exists(dir));
    }
    let crate_name = name.replace('-', "_");
    let profiles = std::fs::read_to_string(repo.join("Cargo.toml"))
        .ok()
        .and_then(|text| text.find("[profile.").map(|at| text[at..].to_string()))
        .unwrap_or_default();
    let files = [
        ("Cargo.toml", cargo_toml(name, &crate_name, repo, &profiles)),
        (".cargo/config.toml", cargo_config(repo)),
        ("src/lib.rs", lib_rs(name)),
        (
            &format!("tests/{crate_name}.rs"),
            test_rs(name, &crate_name),
        ),
        ("README.md", readme(name, &crate_name, repo)),
    ];
    for (file, text) in &files {
        write(&dir.join(file), text)?;
    }
    // The checkout's versions of every dependency: its compiled ones serve.
    if let Ok(lock) = std::fs::read_to_string(repo.join("Cargo.lock")) {
        write(&dir.join("Cargo.lock"), &lock)?;
    }
    Ok(dir)
}

fn write(path: &Path, text: &str) -> Result<(), ScaffoldError> {
    let failed = |source| ScaffoldError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    std::fs::write(path, text).map_err(failed)
}

fn cargo_toml(name: &str, crate_name: &str, repo: &Path, profiles: &str) -> String {
    let repo = repo.display();
    let mut out = format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2021"
publish = false

[lib]
name = "{crate_name}"
# cdylib: the library a host loads; rlib: for its own tests.
crate-type = ["cdylib", "rlib"]

[dependencies]
host-sdk = {{ path = "{repo}/host-sdk" }}
abi_stable = "0.11.3"
serde = {{ version = "1", features = ["derive"] }}
serde_json = {{ version = "1", features = ["float_roundtrip", "raw_value"] }}
schemars = "1"
log = {{ version = "0.4", features = ["std"] }}

[dev-dependencies]
# The test kit: the host itself, in the test's process.
example-host = {{ path = "{repo}/example-host" }}

# A workspace of its own, wherever it is.
[workspace]

"#
    );
    out.push_str("# The platform's build settings, so that its compiled dependencies serve.\n");
    out.push_str(profiles);
    out
}

fn cargo_config(repo: &Path) -> String {
    format!(
        "# Builds into the platform checkout's target folder: what it compiled\n\
         # already is not compiled again.\n[build]\ntarget-dir = \"{}/target\"\n",
        repo.display()
    )
}

fn lib_rs(name: &str) -> String {
    let collection = format!("{}_notes", name.replace('-', "_"));
    format!(
        r#"//! The `{name}` extension, mounted at `/{name}`.

use host_sdk::prelude::*;
use host_sdk::schema::{{Collection, Field, Grant}};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// What `POST /{name}/notes` takes.
#[derive(Deserialize, JsonSchema)]
struct NewNote {{
    /// The note's text.
    title: String,
}}

pub fn extension() -> Extension {{
    Extension::new("{name}", "{name}", env!("CARGO_PKG_VERSION"))
        // A collection, made once in the database's life.
        .migration(
            "0001_notes",
            vec![Collection::new("{collection}")
                .field(Field::string("title").not_null())
                .field(Field::uuid("user_created"))
                .field(Field::timestamp("date_created"))
                .build()],
        )
        // Viewers read their own notes and write new ones (the platform
        // fills `user_created` with the caller).
        .migration(
            "0002_grants",
            vec![
                Grant::new("Viewer", "{collection}", "read")
                    .filter(json!({{"user_created": {{"_eq": "$CURRENT_USER"}}}}))
                    .build(),
                Grant::new("Viewer", "{collection}", "create")
                    .fields(&["title"])
                    .build(),
            ],
        )
        .routes(|r| {{
            // GET /{name}/notes: the caller's notes (permissions apply).
            r.get("/notes", |_req, ctx| {{
                let notes = ctx
                    .as_caller()
                    .read_by_query("{collection}", &Query::new().sort(&["-date_created"]))?;
                Ok(Response::ok(&notes))
            }})
            .authenticated();
            // POST /{name}/notes: the body is a `NewNote` (400 otherwise).
            r.post_json("/notes", |note: NewNote, _req, ctx| {{
                let id = ctx
                    .as_caller()
                    .create_one("{collection}", &json!({{"title": note.title}}))?;
                log::info!("note {{id}} created");
                Ok(Response::created(&json!({{"id": id}})))
            }})
            .authenticated();
        }})
        // Inside the writing transaction: refuse a note without text.
        .before_commit_in(&["{collection}"], |event, _tx| {{
            if event.after.iter().any(|n| n["title"] == json!("")) {{
                return Err(ApiError::bad_request("A note needs a title").into());
            }}
            Ok(())
        }})
}}

host_sdk::export_extension!(extension);
"#
    )
}

fn test_rs(name: &str, crate_name: &str) -> String {
    format!(
        r#"//! `{name}` on the test kit: a real host in the test's process, on SQLite
//! (or PostgreSQL with TEST_DB=postgres).

use example_host::testkit::TestHost;
use serde_json::json;

#[test]
fn a_viewer_writes_and_reads_their_own_notes() {{
    let host = TestHost::start({crate_name}::extension()).expect("the test host starts");
    let ann = host.create_user("ann@example.com", "Viewer").expect("a viewer");
    let bob = host.create_user("bob@example.com", "Viewer").expect("another viewer");

    let created = host.as_user(&ann).post("/notes", &json!({{"title": "mine"}}));
    assert_eq!(created.status, 201, "{{}}", created.text());
    assert_eq!(host.as_user(&ann).get("/notes").json()[0]["title"], "mine");
    assert_eq!(host.as_user(&bob).get("/notes").json(), json!([]));

    let empty = host.as_user(&ann).post("/notes", &json!({{"title": ""}}));
    assert_eq!(empty.status, 400, "{{}}", empty.text());
    assert_eq!(host.anonymous().get("/notes").status, 401);
}}
"#
    )
}

fn readme(name: &str, crate_name: &str, repo: &Path) -> String {
    let repo = repo.display();
    format!(
        r#"# {name}

An extension of the platform at {repo}, mounted at `/{name}`.

```sh
cargo test                      # its tests, on the test kit
cargo build                     # target/debug/lib{crate_name}.so (a debug build is enough to try)
```

Serve it: copy `{repo}/target/debug/lib{crate_name}.so` into a host's
extensions folder (`--extensions`) and start the host; its routes are
`GET` and `POST /{name}/notes`. The guide is `{repo}/docs/extensions.md`;
the SDK's reference, `cargo doc -p host-sdk --open`.
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_before_anything_is_written() {
        let dir = tempfile::tempdir().expect("a folder");
        let repo = checkout();
        for bad in ["", "Notes", "9lives", "my_ext", "a b"] {
            assert!(matches!(
                new_extension(bad, dir.path(), &repo),
                Err(ScaffoldError::InvalidName(_))
            ));
        }
        assert!(matches!(
            new_extension("items", dir.path(), &repo),
            Err(ScaffoldError::Reserved(_))
        ));
        assert!(matches!(
            new_extension("fine", dir.path(), dir.path()),
            Err(ScaffoldError::NoCheckout(_))
        ));
        assert_eq!(
            std::fs::read_dir(dir.path()).map(|d| d.count()).ok(),
            Some(0)
        );
    }

    #[test]
    fn a_crate_is_written_once() {
        let dir = tempfile::tempdir().expect("a folder");
        let made = new_extension("my-notes", dir.path(), &checkout()).expect("written");
        for file in [
            "Cargo.toml",
            "Cargo.lock",
            ".cargo/config.toml",
            "src/lib.rs",
            "tests/my_notes.rs",
            "README.md",
        ] {
            assert!(made.join(file).is_file(), "{file} missing");
        }
        let lib = std::fs::read_to_string(made.join("src/lib.rs")).expect("lib.rs");
        assert!(lib.contains("Extension::new(\"my-notes\""));
        assert!(lib.contains("\"my_notes_notes\""));
        assert!(matches!(
            new_extension("my-notes", dir.path(), &checkout()),
            Err(ScaffoldError::Exists(_))
        ));
    }
}
