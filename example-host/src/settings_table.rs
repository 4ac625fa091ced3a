//! The settings table of docs/operations.md, made from every setting's
//! declaration: clap's for flags (`config.rs`), each module's `declare!`
//! for the others; `example-host settings` prints it, and a test checks
//! that the file holds it.

use crate::settings::{DefaultValue, Setting};

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

/// Every declared setting, by module.
pub fn declared() -> Vec<Setting> {
    [
        crate::config::SETTINGS,
        crate::bootstrap::SETTINGS,
        crate::logging::SETTINGS,
        crate::signin::settings::SETTINGS,
        crate::mail::SETTINGS,
        crate::throttle::settings::SETTINGS,
        crate::files::locations::SETTINGS,
        crate::files::SETTINGS,
        crate::files::transform::SETTINGS,
    ]
    .concat()
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
    use crate::settings::Env;

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
                     run `UPDATE_SETTINGS_DOCS=1 cargo test -p example-host settings_table` \
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
        env.looked_up()
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

    /// The host's sources read the environment only in `settings.rs` (and
    /// this file's test, which rewrites the docs when asked).
    #[test]
    fn no_module_reads_the_environment_itself() {
        const OWN: [&str; 2] = [
            concat!(env!("CARGO_MANIFEST_DIR"), "/src/settings.rs"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/src/settings_table.rs"),
        ];
        fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).expect("src") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    walk(&path, found);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && !OWN.iter().any(|own| path == std::path::Path::new(own))
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
