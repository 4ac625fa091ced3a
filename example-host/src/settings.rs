//! Every setting of the host, declared once: its variable, its default, a
//! line of documentation and the part of the documentation it belongs to.
//! Flags are declared by clap (`config.rs`), every other setting by the
//! module that reads it, with [`declare!`]; a module reads its settings
//! only through their declarations, from an [`Env`]. The table of
//! docs/operations.md is made from both ([`markdown`]), and a test checks
//! that the file holds it.

use std::cell::RefCell;
use std::collections::BTreeMap;

/// The parts of the settings table, in the order it lists them.
pub const SECTIONS: &[&str] = &[
    "Server",
    "Database",
    "Extensions",
    "First start and log",
    "Sign-in",
    "Mail",
    "Throttling",
    "Files",
    "Assets",
];

/// What a setting is when it is not set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultValue {
    /// Unset.
    None,
    /// This value, read as if it were set.
    Value(&'static str),
    /// Worked out by the module that reads it, as this text says.
    Described(&'static str),
}

/// One setting read from the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The variable; `<NAME>` in it stands for a name chosen by another
    /// setting or by the operator.
    pub env: &'static str,
    pub default: DefaultValue,
    /// Its documentation, one line of markdown per element.
    pub doc: &'static [&'static str],
    /// One of [`SECTIONS`].
    pub section: &'static str,
}

/// Declares settings as constants of the calling module, and `SETTINGS`,
/// all of them (listed in [`declared`]), in one or more sections:
///
/// ```ignore
/// declare! {
///     section "Mail";
///     /// The sender of every message.
///     EMAIL_FROM: "EMAIL_FROM" = "no-reply@example.com";
///     /// The port; `~` gives a default the reading module works out.
///     EMAIL_SMTP_PORT: "EMAIL_SMTP_PORT" ~ "`587`, or `465` when secure";
///     /// No default.
///     EMAIL_SMTP_USER: "EMAIL_SMTP_USER";
/// }
/// ```
macro_rules! declare {
    (@default) => { $crate::settings::DefaultValue::None };
    (@default = $value:literal) => { $crate::settings::DefaultValue::Value($value) };
    (@default ~ $text:literal) => { $crate::settings::DefaultValue::Described($text) };
    ($(
        section $section:literal;
        $( $(#[doc = $doc:literal])+ $name:ident : $env:literal $(= $value:literal)? $(~ $text:literal)? ; )+
    )+) => {
        $($(
            $(#[doc = $doc])+
            pub const $name: $crate::settings::Setting = $crate::settings::Setting {
                env: $env,
                default: $crate::settings::declare!(@default $(= $value)? $(~ $text)?),
                doc: &[$($doc),+],
                section: $section,
            };
        )+)+
        /// Every setting this module reads.
        pub const SETTINGS: &[$crate::settings::Setting] = &[$($($name),+),+];
    };
}
pub(crate) use declare;

/// Every declared setting, by module.
pub fn declared() -> Vec<Setting> {
    [
        crate::config::SETTINGS,
        crate::bootstrap::SETTINGS,
        crate::logging::SETTINGS,
        crate::signin::settings::SETTINGS,
        crate::mail::SETTINGS,
        crate::throttle::settings::SETTINGS,
        crate::files::storage::SETTINGS,
        crate::files::SETTINGS,
        crate::files::transform::SETTINGS,
    ]
    .concat()
}

/// The variables settings are read from: the process's, or given (tests).
/// A variable that is empty counts as unset.
#[derive(Debug, Default)]
pub struct Env {
    vars: BTreeMap<String, String>,
    /// The variables looked up, declared or not (checked by the tests).
    read: RefCell<Vec<String>>,
}

impl Env {
    /// The environment of this process (variables that are not UTF-8 count
    /// as unset).
    pub fn process() -> Self {
        Self::from_iter(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        )
    }

    /// These variables only.
    pub fn of(pairs: &[(&str, &str)]) -> Self {
        Self::from_iter(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    fn from_iter(pairs: impl Iterator<Item = (String, String)>) -> Self {
        Self {
            vars: pairs.filter(|(_, v)| !v.is_empty()).collect(),
            read: RefCell::default(),
        }
    }

    fn var(&self, name: &str) -> Option<String> {
        self.read.borrow_mut().push(name.to_string());
        self.vars.get(name).cloned()
    }
}

impl Setting {
    /// Its value: the variable's, else the default's ([`DefaultValue::Value`]).
    pub fn get(&self, env: &Env) -> Option<String> {
        self.get_named(env, self.env)
    }

    /// Whether the variable is set (its default aside).
    pub fn is_set(&self, env: &Env) -> bool {
        env.var(self.env).is_some()
    }

    /// The variable of a pattern for `name`: `STORAGE_<NAME>_ROOT` for
    /// `media-2` is `STORAGE_MEDIA_2_ROOT` (upper case, `-` as `_`, as
    /// Directus names them).
    pub fn name_for(&self, name: &str) -> String {
        self.env
            .replace("<NAME>", &name.to_uppercase().replace('-', "_"))
    }

    /// The value of a pattern for `name` (see [`Setting::name_for`]).
    pub fn get_for(&self, env: &Env, name: &str) -> Option<String> {
        self.get_named(env, &self.name_for(name))
    }

    /// Every variable of a pattern that is set, and its value, by name.
    pub fn each(&self, env: &Env) -> Vec<(String, String)> {
        env.vars
            .keys()
            .filter(|k| self.names(k))
            .filter_map(|k| Some((k.clone(), env.var(k)?)))
            .collect()
    }

    /// Its value, a blank one counting as unset.
    pub fn get_unless_blank(&self, env: &Env) -> Option<String> {
        match env.var(self.env) {
            Some(v) if !v.trim().is_empty() => Some(v),
            _ => self.fallback(),
        }
    }

    fn fallback(&self) -> Option<String> {
        match self.default {
            DefaultValue::Value(v) => Some(v.to_string()),
            DefaultValue::None | DefaultValue::Described(_) => None,
        }
    }

    fn get_named(&self, env: &Env, name: &str) -> Option<String> {
        env.var(name).or_else(|| self.fallback())
    }

    /// Whether `name` is this setting's variable (or one of its pattern's).
    pub fn names(&self, name: &str) -> bool {
        match self.env.split_once("<NAME>") {
            None => self.env == name,
            Some((before, after)) => {
                name.len() > before.len() + after.len()
                    && name.starts_with(before)
                    && name.ends_with(after)
            }
        }
    }
}

/// A row of the settings table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub section: String,
    pub flag: Option<String>,
    pub env: String,
    /// Markdown.
    pub default: String,
    /// Markdown.
    pub doc: String,
}

/// A help text without its `[default: …]`, which clap shows for an option
/// without a value of its own (the host works the default out), and that
/// default.
fn described_default(help: &str) -> (String, Option<String>) {
    let Some((before, rest)) = help.split_once("[default: ") else {
        return (help.to_string(), None);
    };
    let Some((default, after)) = rest.split_once(']') else {
        return (help.to_string(), None);
    };
    (
        format!("{}{after}", before.trim_end()),
        Some(default.to_string()),
    )
}

/// Words joined by single spaces, ending as a sentence does.
fn sentence(text: &str) -> String {
    let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if !text.is_empty() && !text.ends_with(['.', ')', '!', '?']) {
        text.push('.');
    }
    text
}

/// The rows of flags that have a variable, from clap's declarations: the
/// section is the flag's help heading.
fn flag_rows() -> Vec<Row> {
    use clap::CommandFactory;
    crate::config::Cli::command()
        .get_arguments()
        .filter_map(|arg| {
            let env = arg.get_env()?.to_str()?.to_string();
            let help = arg
                .get_long_help()
                .or(arg.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            let (doc, described) = described_default(&help);
            let values: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|v| format!("`{}`", v.to_string_lossy()))
                .collect();
            let default = if values.is_empty() {
                described.unwrap_or_else(|| "none".into())
            } else {
                values.join(", ")
            };
            Some(Row {
                section: arg.get_help_heading().unwrap_or("").to_string(),
                flag: arg.get_long().map(|l| format!("`--{l}`")),
                env,
                default,
                doc: sentence(&doc),
            })
        })
        .collect()
}

/// Every setting, flags first within their section.
pub fn rows() -> Vec<Row> {
    let mut rows = flag_rows();
    rows.extend(declared().iter().map(|s| Row {
        section: s.section.to_string(),
        flag: None,
        env: s.env.to_string(),
        default: match s.default {
            DefaultValue::None => "none".into(),
            DefaultValue::Value(v) => format!("`{v}`"),
            DefaultValue::Described(text) => text.into(),
        },
        doc: sentence(&s.doc.join(" ")),
    }));
    rows.sort_by_key(|r| SECTIONS.iter().position(|s| *s == r.section));
    rows
}

/// The settings table of docs/operations.md: a table per section.
pub fn markdown() -> String {
    let rows = rows();
    let mut out = String::new();
    for section in SECTIONS {
        out.push_str(&format!(
            "\n**{section}**\n\n| flag | env | default | |\n|---|---|---|---|\n"
        ));
        for r in rows.iter().filter(|r| r.section == *section) {
            out.push_str(&format!(
                "| {} | `{}` | {} | {} |\n",
                r.flag.as_deref().unwrap_or(""),
                r.env,
                r.default.replace('|', "\\|"),
                r.doc.replace('|', "\\|"),
            ));
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the table goes in docs/operations.md.
    const BEGIN: &str = "<!-- settings:begin (made by `example-host settings`) -->";
    const END: &str = "<!-- settings:end -->";

    /// `text` with the table between [`BEGIN`] and [`END`] made anew; `None`
    /// when the markers are missing.
    fn with_table(text: &str) -> Option<String> {
        let (before, rest) = text.split_once(BEGIN)?;
        let (_, after) = rest.split_once(END)?;
        Some(format!("{before}{BEGIN}\n{}{END}{after}", markdown()))
    }

    const DOCS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/operations.md");

    #[test]
    fn every_setting_is_in_the_docs_table() {
        let text = std::fs::read_to_string(DOCS).expect("docs/operations.md");
        let made = with_table(&text)
            .unwrap_or_else(|| panic!("docs/operations.md lacks the lines {BEGIN} and {END}"));
        if made != text {
            if std::env::var_os("UPDATE_SETTINGS_DOCS").is_some() {
                std::fs::write(DOCS, &made).expect("docs/operations.md written");
            } else {
                panic!(
                    "docs/operations.md's settings table is not the declared settings': \
                     run `UPDATE_SETTINGS_DOCS=1 cargo test -p example-host settings::` \
                     (or `example-host settings` for the table)"
                );
            }
        }
    }

    #[test]
    fn every_setting_is_declared_once_in_a_section_with_a_doc() {
        let rows = rows();
        for r in &rows {
            assert!(SECTIONS.contains(&r.section.as_str()), "{r:?}: section");
            assert!(!r.doc.is_empty(), "{}: no documentation", r.env);
            let same = rows.iter().filter(|o| o.env == r.env).count();
            assert_eq!(same, 1, "{} declared {same} times", r.env);
        }
        for s in declared() {
            assert!(
                s.env
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                    || s.env.contains("<NAME>"),
                "{}",
                s.env
            );
        }
    }

    /// What the host reads at start with `vars` set: every variable looked
    /// up is a declared one.
    fn read_at_start(vars: &[(&str, &str)]) -> Vec<String> {
        let env = Env::of(vars);
        let _ = crate::config::DbEnv::from_env(&env);
        let _ = crate::bootstrap::AdminSeed::from_env(&env);
        let _ = crate::logging::filter(&env);
        let _ = crate::signin::settings::Settings::from_env(&env);
        let _ = crate::mail::Settings::from_env(&env);
        let _ = crate::throttle::settings::Settings::from_env(&env);
        let _ = crate::files::Files::from_env(&env, std::path::Path::new("/nonexistent/uploads"));
        env.read.take()
    }

    #[test]
    fn every_setting_read_is_declared() {
        let declared = declared();
        let on = [
            ("DB_CLIENT", "pg"),
            ("CORS_ENABLED", "true"),
            ("EMAIL_TRANSPORT", "smtp"),
            ("EMAIL_SMTP_HOST", "mail.example"),
            ("RATE_LIMITER_ENABLED", "true"),
            ("STORAGE_LOCATIONS", "s3,disk"),
            ("STORAGE_S3_DRIVER", "s3"),
            ("STORAGE_S3_BUCKET", "b"),
            (
                "ASSETS_CONTENT_SECURITY_POLICY_DIRECTIVES__IMG_SRC",
                "'self'",
            ),
        ];
        let read: Vec<String> = [read_at_start(&[]), read_at_start(&on)].concat();
        for name in &read {
            assert!(
                declared.iter().any(|s| s.names(name)),
                "{name} is read but not declared"
            );
        }
        for s in &declared {
            assert!(
                read.iter().any(|name| s.names(name)),
                "{} is declared but never read",
                s.env
            );
        }
    }

    /// The host's sources read the environment only here.
    #[test]
    fn no_module_reads_the_environment_itself() {
        fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).expect("src") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    walk(&path, found);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && !path.ends_with("settings.rs")
                {
                    let text = std::fs::read_to_string(&path).expect("source");
                    for word in ["env::var(", "env::vars(", "env::var_os(", "env::vars_os("] {
                        if text.contains(word) {
                            found.push(format!("{}: {word}", path.display()));
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
            &mut found,
        );
        assert!(
            found.is_empty(),
            "read settings through `settings::Env`: {found:?}"
        );
    }

    #[test]
    fn patterns_name_their_variables() {
        let s = Setting {
            env: "STORAGE_<NAME>_ROOT",
            default: DefaultValue::None,
            doc: &["x"],
            section: "Files",
        };
        assert_eq!(s.name_for("media-2"), "STORAGE_MEDIA_2_ROOT");
        assert!(s.names("STORAGE_MEDIA_2_ROOT"));
        assert!(!s.names("STORAGE__ROOT"));
        let env = Env::of(&[("STORAGE_LOCAL_ROOT", "/x"), ("STORAGE_OTHER_ROOT", "")]);
        assert_eq!(s.get_for(&env, "local"), Some("/x".into()));
        assert_eq!(s.get_for(&env, "other"), None);
    }

    #[test]
    fn bad_values_still_name_their_variable() {
        for (name, value) in [
            ("EMAIL_SMTP_PORT", "none"),
            ("ACCESS_TOKEN_TTL", "forever"),
            ("RATE_LIMITER_POINTS", "0"),
            ("FILES_MAX_UPLOAD_SIZE", "big"),
            ("ASSETS_TRANSFORM_TIMEOUT", "soon"),
            ("STORAGE_LOCAL_DRIVER", "ftp"),
        ] {
            let env = Env::of(&[
                ("EMAIL_TRANSPORT", "smtp"),
                ("EMAIL_SMTP_HOST", "mail.example"),
                ("RATE_LIMITER_ENABLED", "true"),
                (name, value),
            ]);
            let errors = [
                crate::mail::Settings::from_env(&env)
                    .err()
                    .map(|e| e.to_string()),
                crate::signin::settings::Settings::from_env(&env).err(),
                crate::throttle::settings::Settings::from_env(&env).err(),
                crate::files::Files::from_env(&env, std::path::Path::new("/nonexistent/u")).err(),
            ];
            assert!(
                errors.iter().flatten().any(|e| e.contains(name)),
                "{name}={value}: {errors:?}"
            );
        }
    }
}
