//! Settings read from the environment, each declared once by the module
//! that reads it ([`declare!`]): its variable, its default, a line of
//! documentation and the part of the documentation it belongs to. A
//! module reads its settings only through their declarations, from an
//! [`Env`]. The settings table of docs/operations.md is made from these
//! declarations and clap's (`settings_table`).

use std::cell::RefCell;
use std::collections::BTreeMap;

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
    /// One of the parts of the settings table (`settings_table::SECTIONS`).
    pub section: &'static str,
}

/// Declares settings as constants of the calling module, and `SETTINGS`,
/// all of them (listed in `settings_table::declared`), in one or more
/// sections:
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

    /// The variables looked up so far.
    #[cfg(test)]
    pub fn looked_up(&self) -> Vec<String> {
        self.read.borrow().clone()
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
