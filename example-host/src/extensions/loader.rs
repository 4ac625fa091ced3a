//! Loading extension libraries: every check happens here, at load time,
//! never at request time.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi_stable::abi_stability::abi_checking::{check_layout_compatibility, AbiInstabilityErrors};
use abi_stable::library::{lib_header_from_path, LibHeader, LibraryError, RootModule};
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RArc;
use abi_stable::StableAbi;
use host_sdk::abi::{ExtensionModuleRef, FfiInit, FfiScheduleSpec, HostLogger_TO};
use serde_json::Value;

use super::logger::ExtLogger;
use super::order::Requirement;
use super::services::ExtServices;
use super::{LoadedExtension, ScheduleDef, When};
use crate::bootstrap;
use crate::permissions::MigrationGrants;
use crate::platform::Platform;

/// Why a library was refused.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot open the library: {0}")]
    Open(String),
    #[error("no extension root module: the library exports no abi_stable root module ({0})")]
    NoRootModule(String),
    #[error("ABI layout mismatch with this host's ABI {host}: {detail}")]
    Layout { host: &'static str, detail: String },
    #[error("built against host-sdk {found}; this host supports host-sdk {supported}")]
    SdkVersion { found: String, supported: String },
    #[error("built against host-sdk ABI {found}, newer than this host's ABI {host}: rebuild the extension against a host-sdk of ABI {host_minor} or earlier, or upgrade the host")]
    NewerSdk {
        found: String,
        host: &'static str,
        host_minor: String,
    },
    #[error("invalid manifest: {0}")]
    Manifest(String),
    #[error("extension id `{0}` is already mounted")]
    Duplicate(String),
    #[error("{0}")]
    Requirement(String),
    #[error("migration {id} failed: {detail}")]
    Migration { id: String, detail: String },
    #[error("init failed: {0}")]
    Init(String),
}

/// Ids reserved beyond the first segments of the host's routes: Directus
/// serves `/extensions`, and its clients may ask it of the platform.
const RESERVED_IDS: &[&str] = &["extensions"];

/// A library's migrations, in order, each its id and steps.
fn read_migrations(
    module: ExtensionModuleRef,
    sdk_version: &str,
) -> Result<Vec<(String, Vec<host_sdk::schema::Step>)>, LoadError> {
    (module.migrations())()
        .into_iter()
        .map(|migration| {
            let mid = migration.id.to_string();
            let steps = serde_json::from_str(&migration.steps).map_err(|e| LoadError::Migration {
                id: mid.clone(),
                detail: if newer_sdk(sdk_version) {
                    format!(
                        "a step this host does not know ({e}): the library is built against host-sdk {sdk_version}, newer than this host's {}: upgrade the host",
                        host_sdk::SDK_VERSION
                    )
                } else {
                    format!("unreadable steps: {e}")
                },
            })?;
            Ok((mid, steps))
        })
        .collect()
}

/// Whether a library's SDK version is a newer minor than the host's (its
/// migrations may use steps the host does not know).
fn newer_sdk(sdk_version: &str) -> bool {
    major(sdk_version) == major(host_sdk::SDK_VERSION)
        && minor(sdk_version) > minor(host_sdk::SDK_VERSION)
}

/// Whether `id` would shadow a host route (one of the host's first path
/// segments) or is otherwise reserved.
pub fn is_reserved(id: &str) -> bool {
    RESERVED_IDS.contains(&id)
        || HOST_SEGMENTS
            .get()
            .is_some_and(|segments| segments.contains(&id))
}

/// The first path segments of the host's own routes. The HTTP layer
/// declares them (`http::routes`), and sits above this module, which may
/// not name it: the process hands them over once, before any library is
/// opened (`app::run`, the test kit).
static HOST_SEGMENTS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();

/// Reserves `segments` (the host's routes' first path segments) from
/// extension ids; the first call wins.
pub fn reserve_host_segments(segments: Vec<&'static str>) {
    let _ = HOST_SEGMENTS.set(segments);
}

/// Whether a file name looks like a dynamic library of this platform.
pub fn is_library(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    matches!(ext, "so" | "dylib" | "dll")
}

/// The libraries of a folder, in name order.
pub fn libraries_in(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file() && is_library(p))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// One line per layout error: where (the path of fields) and what kind.
fn summarize(e: &AbiInstabilityErrors) -> String {
    let mut lines = Vec::new();
    for err in e.errors.iter() {
        let path: Vec<String> = err
            .stack_trace
            .iter()
            .map(|step| {
                step.found
                    .to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            })
            .filter(|s| !s.is_empty())
            .collect();
        let kinds: Vec<String> = err
            .errs
            .iter()
            .map(|k| {
                let debug = format!("{k:?}");
                debug
                    .split(['(', ' ', '{'])
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        if kinds.is_empty() {
            continue;
        }
        lines.push(format!(
            "{} at `{}`",
            kinds.join(", "),
            if path.is_empty() {
                "root module".into()
            } else {
                path.join(" -> ")
            }
        ));
    }
    if lines.is_empty() {
        "incompatible root module layout".into()
    } else {
        lines.join("; ")
    }
}

fn major(version: &str) -> Option<u64> {
    version.split('.').next()?.trim().parse().ok()
}

fn minor(version: &str) -> Option<u64> {
    version.split('.').nth(1)?.trim().parse().ok()
}

/// Checks the SDK version in the library's header (the version of the
/// package that declared its root module) before anything else of the
/// library is read. A newer minor may have entries this host has never
/// heard of; the layout check would refuse it too, but naming only a field
/// count.
fn check_header_version(header: &LibHeader) -> Result<(), LoadError> {
    // A Cargo package version always parses (abi_stable ignores a
    // pre-release suffix); were it not so, the layout check still guards.
    let Ok(host) = <ExtensionModuleRef as RootModule>::VERSION_STRINGS.parsed() else {
        return Ok(());
    };
    let strings = header.version_strings();
    let found = strings.version.as_str().to_string();
    let library = strings.parsed().map_err(|e| LoadError::SdkVersion {
        found: format!("an unreadable version `{found}` ({e})"),
        supported: format!("{}.x", host.major),
    })?;
    if library.major != host.major {
        return Err(LoadError::SdkVersion {
            found,
            supported: format!("{}.x", host.major),
        });
    }
    if library.minor > host.minor {
        return Err(LoadError::NewerSdk {
            found,
            host: host_sdk::ABI_VERSION,
            host_minor: format!("{}.{}", host.major, host.minor),
        });
    }
    Ok(())
}

fn describe(e: LibraryError) -> LoadError {
    match e {
        LibraryError::OpenError { err, .. } => LoadError::Open(err.to_string()),
        LibraryError::GetSymbolError { err, .. } => LoadError::NoRootModule(err.to_string()),
        LibraryError::AbiInstability(detail) => LoadError::Layout {
            host: host_sdk::ABI_VERSION,
            detail: detail
                .to_string()
                .lines()
                .take(12)
                .collect::<Vec<_>>()
                .join(" | "),
        },
        LibraryError::IncompatibleVersionNumber { actual_version, .. } => LoadError::SdkVersion {
            found: actual_version.to_string(),
            supported: format!("{}.x", major(host_sdk::SDK_VERSION).unwrap_or(1)),
        },
        other => LoadError::Open(other.to_string()),
    }
}

/// A library opened and checked (ABI, versions, manifest), not yet
/// migrated nor initialised: what the host orders by requirements.
pub struct Opened {
    path: PathBuf,
    module: ExtensionModuleRef,
    manifest: host_sdk::abi::FfiManifest,
    pub id: String,
    pub version: String,
    sdk_version: String,
    /// The version of the boundary its header carries (`ABI_VERSION`).
    abi_version: String,
    /// The extensions it needs first (1.9; none for earlier libraries).
    pub requires: Vec<Requirement>,
}

impl Opened {
    /// Its migrations, in order, each its id and steps (read, not run).
    pub fn migrations(&self) -> Result<Vec<(String, Vec<host_sdk::schema::Step>)>, LoadError> {
        read_migrations(self.module, &self.sdk_version)
    }

    /// The library's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The same library, named by `path` (it was opened from a copy of
    /// that file).
    pub fn named(self, path: &Path) -> Self {
        Opened {
            path: path.to_path_buf(),
            ..self
        }
    }
}

/// Loads one library: ABI and version checks, manifest, requirements
/// (against what `mounted` holds), migrations, init.
pub fn load(
    path: &Path,
    platform: &Platform,
    mounted: &[Arc<LoadedExtension>],
) -> Result<LoadedExtension, LoadError> {
    mount(open(path)?, platform, mounted)
}

/// Opens a library and runs every check that needs nothing of the
/// platform: header version, layout, manifest.
pub fn open(path: &Path) -> Result<Opened, LoadError> {
    check_whole_elf(path)?;
    let header = lib_header_from_path(path).map_err(describe)?;
    check_header_version(header)?;
    let Some(library_layout) = header.layout() else {
        return Err(LoadError::Layout {
            host: host_sdk::ABI_VERSION,
            detail: "the library exports its root module without a layout to check".into(),
        });
    };
    // The library's root module is the interface and the host's the
    // implementation: a prefix type may then have fewer fields in the
    // library (built against an earlier minor SDK) than in the host.
    // abi_stable's own `init_root_module` checks the other way round and
    // would refuse such libraries.
    check_layout_compatibility(library_layout, <ExtensionModuleRef as StableAbi>::LAYOUT).map_err(
        |e| {
            log::debug!("full layout report for {}:\n{e}", path.display());
            LoadError::Layout {
                host: host_sdk::ABI_VERSION,
                detail: summarize(&e),
            }
        },
    )?;
    // SAFETY: the layout was checked just above; fields appended by later
    // minor versions are only read through accessors that check the
    // library's field count and answer `None` when it lacks them.
    let module = unsafe { header.init_root_module_with_unchecked_layout::<ExtensionModuleRef>() }
        .map_err(describe)?;
    let abi_version = header.version_strings().version.as_str().to_string();

    let manifest = (module.manifest())();
    let id = manifest.id.to_string();
    let sdk_version = manifest.sdk_version.to_string();
    if major(&sdk_version) != major(host_sdk::SDK_VERSION) {
        return Err(LoadError::SdkVersion {
            found: sdk_version,
            supported: format!("{}.x", major(host_sdk::SDK_VERSION).unwrap_or(1)),
        });
    }
    let valid_id = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !valid_id {
        // The name says more when there is no id (an extension that
        // panicked while being built names the panic there).
        return Err(LoadError::Manifest(format!(
            "id `{id}` (name `{}`) must be non-empty lower-case letters, digits, `-` or `_`",
            manifest.name
        )));
    }
    if is_reserved(&id) {
        return Err(LoadError::Manifest(format!(
            "id `{id}` is reserved by the host"
        )));
    }
    // 1.9: what it needs loaded first; earlier libraries need nothing.
    let requires = module.requires().map_or_else(Vec::new, |requires| {
        requires()
            .into_iter()
            .map(|r| Requirement {
                id: r.id.into_string(),
                versions: r.versions.into_string(),
            })
            .collect()
    });
    Ok(Opened {
        path: path.to_path_buf(),
        module,
        version: manifest.version.to_string(),
        manifest,
        id,
        sdk_version,
        abi_version,
        requires,
    })
}

/// Mounts an opened library after those of `mounted`: its requirements
/// checked against them, its migrations applied, its `init` run.
pub fn mount(
    opened: Opened,
    platform: &Platform,
    mounted: &[Arc<LoadedExtension>],
) -> Result<LoadedExtension, LoadError> {
    let Opened {
        path,
        module,
        manifest,
        id,
        sdk_version,
        abi_version,
        requires,
        ..
    } = opened;
    let path = path.as_path();
    if mounted.iter().any(|e| e.id == id) {
        return Err(LoadError::Duplicate(id));
    }
    super::order::check_mounted(&requires, mounted).map_err(LoadError::Requirement)?;

    let migrations = read_migrations(module, &sdk_version)?;
    let declared: Vec<&str> = migrations.iter().map(|(mid, _)| mid.as_str()).collect();
    crate::migration_plan::OwnerPlan::of_extension(
        &id,
        &declared,
        &platform.store.recorded_migrations(),
    )
    .refuse_newer()
    .map_err(|detail| LoadError::Migration {
        id: "(the database's)".into(),
        detail,
    })?;
    for (mid, steps) in migrations {
        // Metadata a client could not use is refused before anything runs.
        if let Err(detail) = steps.iter().try_for_each(|s| s.check_meta()) {
            return Err(LoadError::Migration {
                id: mid,
                detail: format!("invalid metadata of {detail}"),
            });
        }
        match platform.store.migrate(&id, &mid, &steps, &MigrationGrants) {
            Ok(true) => log::info!("[{id}] applied migration {mid}"),
            Ok(false) => {}
            Err(e) => {
                return Err(LoadError::Migration {
                    id: mid,
                    detail: e.to_string(),
                })
            }
        }
    }

    // What hosts of earlier minors did for their libraries, this one keeps
    // doing for those libraries (docs/extensions.md, "Grants").
    if minor(&sdk_version).is_some_and(|m| m <= bootstrap::LAST_MINOR_WITH_SEEDED_MEMBER_RULES) {
        match bootstrap::grant_pre_1_8_member_rules(platform) {
            Ok(0) => {}
            Ok(n) => log::info!(
                "[{id}] built against host-sdk {sdk_version}: granted members the {n} rules on recordings and likes a host of that SDK seeded"
            ),
            Err(e) => {
                return Err(LoadError::Migration {
                    id: "(the members' rules a host of SDK 1.7 seeded)".into(),
                    detail: e.to_string(),
                })
            }
        }
    }

    let services = ExtServices::new(platform, None);
    let init = FfiInit {
        logger: HostLogger_TO::from_ptr(RArc::new(ExtLogger::new(&id)), TD_Opaque),
        max_log_level: log::max_level() as u8,
        services: services.context().services,
    };
    if let Err(e) = (module.init())(&init).into_result() {
        return Err(LoadError::Init(e.into_string()));
    }

    let mut schedules = Vec::new();
    for s in (module.schedules())() {
        let when = match &s.spec {
            FfiScheduleSpec::Every { seconds } => {
                When::Every(std::time::Duration::from_secs((*seconds).max(1)))
            }
            FfiScheduleSpec::Cron { expr } => match expr.as_str().parse::<cron::Schedule>() {
                Ok(schedule) => When::Cron(Box::new(schedule)),
                Err(e) => {
                    log::error!(
                        "[{id}] schedule `{}` ignored: invalid cron `{expr}`: {e}",
                        s.name
                    );
                    continue;
                }
            },
        };
        schedules.push(ScheduleDef {
            name: s.name.to_string(),
            when,
        });
    }

    // Fields of later minor versions are optional: an extension built
    // against an earlier one simply has none.
    let openapi = module
        .openapi()
        .map(|f| f().into_string())
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .unwrap_or(Value::Null);

    // 1.2: what the hooks want; earlier libraries get every event.
    let interest = module
        .event_interest()
        .map_or(super::Interest::All, |f| super::Interest::from_ffi(f()));
    // 1.5: the writes its in-transaction hooks watch; earlier libraries
    // have no such hooks.
    let before_commit = match (module.before_commit_interest(), module.before_commit()) {
        (Some(f), Some(_)) => super::Interest::from_ffi(f()),
        _ => super::Interest::none(),
    };

    // 1.9: the writes its before-write hooks watch; earlier libraries have
    // no such hooks.
    let before_write = match (module.before_write_interest(), module.before_write()) {
        (Some(f), Some(_)) => super::Interest::from_ffi(f()),
        _ => super::Interest::none(),
    };

    // 1.14: the fields its item hooks read; earlier libraries get whole
    // records.
    let hook_fields = module.hook_fields().map_or_else(Default::default, |f| {
        f().into_iter()
            .map(|c| {
                let fields = c.fields.into_iter().map(|f| f.into_string()).collect();
                (c.collection.into_string(), fields)
            })
            .collect()
    });

    Ok(LoadedExtension {
        interest,
        before_commit,
        before_write,
        hook_fields,
        id,
        name: manifest.name.to_string(),
        version: manifest.version.to_string(),
        sdk_version,
        abi_version,
        path: path.to_path_buf(),
        code: super::code::Code::Library(module),
        schedules,
        openapi,
    })
}

/// Refuses a file that is not a whole ELF library: the dynamic loader maps
/// a library's segments as its headers describe them, and touching a page
/// past the end of a truncated file kills the process (SIGBUS) instead of
/// failing the load. Every segment the program headers name, and the
/// section headers, must lie within the file.
#[cfg(target_os = "linux")]
pub fn check_whole_elf(path: &Path) -> Result<(), LoadError> {
    use std::io::{Read, Seek, SeekFrom};
    let refuse = |why: String| LoadError::Open(format!("{}: {why}", path.display()));
    let mut file = std::fs::File::open(path).map_err(|e| refuse(e.to_string()))?;
    let len = file.metadata().map_err(|e| refuse(e.to_string()))?.len();
    let mut head = [0u8; 64];
    file.read_exact(&mut head)
        .map_err(|_| refuse("not an ELF library (too short)".into()))?;
    if head[..4] != *b"\x7fELF" {
        return Err(refuse("not an ELF library".into()));
    }
    let elf = Elf::of(&head).ok_or_else(|| refuse("not an ELF library".into()))?;
    let truncated = |what: &str| {
        refuse(format!(
            "the file ends at {len} bytes, before its {what}: truncated (still being written?)"
        ))
    };
    let table = |offset: u64, count: u64, size: u64| {
        count
            .checked_mul(size)
            .and_then(|n| n.checked_add(offset))
            .filter(|end| *end <= len)
    };
    if elf.shoff != 0 && table(elf.shoff, elf.shnum, elf.shentsize).is_none() {
        return Err(truncated("section headers"));
    }
    table(elf.phoff, elf.phnum, elf.phentsize).ok_or_else(|| truncated("program headers"))?;
    let mut headers = vec![0u8; (elf.phnum * elf.phentsize) as usize];
    file.seek(SeekFrom::Start(elf.phoff))
        .and_then(|_| file.read_exact(&mut headers))
        .map_err(|e| refuse(e.to_string()))?;
    for header in headers.chunks_exact(elf.phentsize as usize) {
        let (offset, size) = elf
            .segment(header)
            .ok_or_else(|| truncated("program headers"))?;
        if offset.checked_add(size).is_none_or(|end| end > len) {
            return Err(truncated("segments"));
        }
    }
    Ok(())
}

/// Elsewhere the loader's own checks are all there is.
#[cfg(not(target_os = "linux"))]
pub fn check_whole_elf(_path: &Path) -> Result<(), LoadError> {
    Ok(())
}

/// Where an ELF file's tables are, from its header.
#[cfg(target_os = "linux")]
struct Elf {
    wide: bool,
    little: bool,
    phoff: u64,
    phentsize: u64,
    phnum: u64,
    shoff: u64,
    shentsize: u64,
    shnum: u64,
}

#[cfg(target_os = "linux")]
impl Elf {
    fn of(head: &[u8; 64]) -> Option<Elf> {
        let wide = match head[4] {
            1 => false,
            2 => true,
            _ => return None,
        };
        let little = match head[5] {
            1 => true,
            2 => false,
            _ => return None,
        };
        let n = |at: usize, size: usize| read_uint(&head[at..at + size], little);
        let (phoff, shoff, rest) = if wide {
            (n(0x20, 8), n(0x28, 8), 0x34)
        } else {
            (n(0x1C, 4), n(0x20, 4), 0x28)
        };
        let elf = Elf {
            wide,
            little,
            phoff,
            phentsize: n(rest + 2, 2),
            phnum: n(rest + 4, 2),
            shoff,
            shentsize: n(rest + 6, 2),
            shnum: n(rest + 8, 2),
        };
        let least = if wide { 0x38 } else { 0x20 };
        (elf.phentsize >= least).then_some(elf)
    }

    /// The file offset and size of the segment a program header names.
    fn segment(&self, header: &[u8]) -> Option<(u64, u64)> {
        let n =
            |at: usize, size: usize| header.get(at..at + size).map(|b| read_uint(b, self.little));
        if self.wide {
            Some((n(0x08, 8)?, n(0x20, 8)?))
        } else {
            Some((n(0x04, 4)?, n(0x10, 4)?))
        }
    }
}

#[cfg(target_os = "linux")]
fn read_uint(bytes: &[u8], little: bool) -> u64 {
    let fold = |n: u64, b: &u8| (n << 8) | u64::from(*b);
    if little {
        bytes.iter().rev().fold(0, fold)
    } else {
        bytes.iter().fold(0, fold)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_library_is_refused_before_it_is_mapped() {
        // This test's own executable is an ELF file.
        let whole = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lib.so");
        std::fs::write(&path, &whole).unwrap();
        assert!(check_whole_elf(&path).is_ok());
        for cut in [whole.len() / 2, whole.len() - 1, 100, 10] {
            std::fs::write(&path, &whole[..cut]).unwrap();
            let e = check_whole_elf(&path).unwrap_err().to_string();
            assert!(e.starts_with("cannot open the library: "), "{e}");
        }
        std::fs::write(&path, b"not a library").unwrap();
        assert!(check_whole_elf(&path).is_err());
    }
}
