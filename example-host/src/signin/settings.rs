//! Sign-in settings, from the environment under Directus's names
//! (docs/decisions.md §3): secret, token lifetimes, cookies, registration,
//! CORS, and the links mailed for email verification and password resets.

use std::time::Duration;

use crate::env_settings::{env_var, parse_bool, parse_duration};

/// How a cookie is sent back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieSettings {
    pub name: String,
    pub secure: bool,
    /// `Lax`, `Strict` or `None`.
    pub same_site: String,
    pub domain: Option<String>,
}

/// Which origins browsers may call from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorsOrigin {
    /// `CORS_ORIGIN=true`: the request's own origin is echoed.
    Reflect,
    /// `*`: any origin, without credentials.
    Any,
    /// A comma-separated list of origins.
    List(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorsSettings {
    pub origin: CorsOrigin,
    pub credentials: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `SECRET`; when unset, a secret made at first start and kept in the
    /// database.
    pub secret: Option<String>,
    pub access_ttl: Duration,
    pub refresh_ttl: Duration,
    pub refresh_cookie: CookieSettings,
    pub session_cookie: CookieSettings,
    pub public_registration: bool,
    /// The role registered users get (by name).
    pub registration_role: String,
    /// `None` when `CORS_ENABLED` is not true.
    pub cors: Option<CorsSettings>,
    /// `PUBLIC_URL`: where the host is reached, for the links it mails
    /// (Directus's default `/`).
    pub public_url: String,
    /// `PUBLIC_REGISTRATION_VERIFY_EMAIL`: registered users verify their
    /// email before they may sign in, also when no `verification_url` is
    /// given (the link then points at the host itself).
    pub registration_verify_email: bool,
    /// `USER_REGISTER_URL_ALLOW_LIST`: the `verification_url`s accepted.
    pub register_url_allow_list: Vec<String>,
    /// `PASSWORD_RESET_URL_ALLOW_LIST`: the `reset_url`s accepted.
    pub reset_url_allow_list: Vec<String>,
    /// `EMAIL_VERIFICATION_TOKEN_TTL`: how long a verification link works.
    pub verification_ttl: Duration,
    /// How long a password-reset link works (Directus: one day).
    pub reset_ttl: Duration,
}

/// A comma-separated list, entries trimmed, empty ones dropped.
fn comma_list(text: Option<String>) -> Vec<String> {
    text.map(|t| {
        t.split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    })
    .unwrap_or_default()
}

fn parse_same_site(name: &str, text: &str) -> Result<String, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "lax" => Ok("Lax".into()),
        "strict" => Ok("Strict".into()),
        "none" => Ok("None".into()),
        other => Err(format!("{name}={other}: use lax, strict or none")),
    }
}

impl Settings {
    /// From the process environment; an error names the variable.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(env_var)
    }

    /// From any source of variables (tests pass a map).
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let duration = |name: &str, default: &str| {
            parse_duration(&var(name).unwrap_or_else(|| default.into()))
                .map_err(|e| format!("{name}: {e}"))
        };
        let flag =
            |name: &str, default: bool| var(name).map_or(Ok(default), |v| parse_bool(name, &v));
        let cookie = |prefix: &str, default_name: &str| -> Result<CookieSettings, String> {
            let same_site_var = format!("{prefix}_COOKIE_SAME_SITE");
            Ok(CookieSettings {
                name: var(&format!("{prefix}_COOKIE_NAME")).unwrap_or_else(|| default_name.into()),
                secure: flag(&format!("{prefix}_COOKIE_SECURE"), false)?,
                same_site: parse_same_site(
                    &same_site_var,
                    &var(&same_site_var).unwrap_or_else(|| "lax".into()),
                )?,
                domain: var(&format!("{prefix}_COOKIE_DOMAIN")),
            })
        };
        let cors = if flag("CORS_ENABLED", false)? {
            let origin = match var("CORS_ORIGIN").as_deref().map(str::trim) {
                None | Some("false") => CorsOrigin::List(Vec::new()),
                Some("true") => CorsOrigin::Reflect,
                Some("*") => CorsOrigin::Any,
                Some(list) => CorsOrigin::List(
                    list.split(',')
                        .map(|o| o.trim().trim_end_matches('/').to_string())
                        .filter(|o| !o.is_empty())
                        .collect(),
                ),
            };
            let credentials = flag("CORS_CREDENTIALS", true)?;
            if credentials && origin == CorsOrigin::Any {
                return Err(
                    "CORS_ORIGIN=* cannot go with CORS_CREDENTIALS=true (browsers refuse it): name the origins or use CORS_ORIGIN=true".into(),
                );
            }
            Some(CorsSettings {
                origin,
                credentials,
            })
        } else {
            None
        };
        Ok(Self {
            secret: var("SECRET"),
            access_ttl: duration("ACCESS_TOKEN_TTL", "15m")?,
            refresh_ttl: duration("REFRESH_TOKEN_TTL", "7d")?,
            refresh_cookie: cookie("REFRESH_TOKEN", "directus_refresh_token")?,
            session_cookie: cookie("SESSION", "directus_session_token")?,
            public_registration: flag("PUBLIC_REGISTRATION", false)?,
            registration_role: var("PUBLIC_REGISTRATION_ROLE").unwrap_or_else(|| "Viewer".into()),
            cors,
            public_url: var("PUBLIC_URL").unwrap_or_else(|| "/".into()),
            registration_verify_email: flag("PUBLIC_REGISTRATION_VERIFY_EMAIL", false)?,
            register_url_allow_list: comma_list(var("USER_REGISTER_URL_ALLOW_LIST")),
            reset_url_allow_list: comma_list(var("PASSWORD_RESET_URL_ALLOW_LIST")),
            verification_ttl: duration("EMAIL_VERIFICATION_TOKEN_TTL", "7d")?,
            reset_ttl: Duration::from_secs(86_400),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env_settings::lookup;

    fn with(vars: &[(&str, &str)]) -> Result<Settings, String> {
        Settings::from_lookup(lookup(vars))
    }

    #[test]
    fn defaults_are_directus_defaults() {
        let s = with(&[]).unwrap();
        assert_eq!(s.access_ttl, Duration::from_secs(900));
        assert_eq!(s.refresh_ttl, Duration::from_secs(7 * 86_400));
        assert_eq!(s.refresh_cookie.name, "directus_refresh_token");
        assert_eq!(s.session_cookie.name, "directus_session_token");
        assert_eq!(s.session_cookie.same_site, "Lax");
        assert!(!s.session_cookie.secure);
        assert!(!s.public_registration);
        assert_eq!(s.registration_role, "Viewer");
        assert_eq!(s.cors, None);
        assert_eq!(s.public_url, "/");
        assert!(!s.registration_verify_email);
        assert!(s.register_url_allow_list.is_empty());
        assert_eq!(s.verification_ttl, Duration::from_secs(7 * 86_400));
        assert_eq!(s.reset_ttl, Duration::from_secs(86_400));
    }

    #[test]
    fn allow_lists_are_comma_lists() {
        let s = with(&[
            (
                "USER_REGISTER_URL_ALLOW_LIST",
                " https://a.example/v , ,https://b.example/v",
            ),
            ("PASSWORD_RESET_URL_ALLOW_LIST", "https://a.example/reset"),
        ])
        .unwrap();
        assert_eq!(
            s.register_url_allow_list,
            vec![
                "https://a.example/v".to_string(),
                "https://b.example/v".to_string()
            ]
        );
        assert_eq!(
            s.reset_url_allow_list,
            vec!["https://a.example/reset".to_string()]
        );
    }

    #[test]
    fn bad_values_name_their_variable() {
        let e = with(&[("ACCESS_TOKEN_TTL", "forever")]).unwrap_err();
        assert!(e.starts_with("ACCESS_TOKEN_TTL"), "{e}");
        let e = with(&[("SESSION_COOKIE_SAME_SITE", "sometimes")]).unwrap_err();
        assert!(e.starts_with("SESSION_COOKIE_SAME_SITE"), "{e}");
        let e = with(&[("CORS_ENABLED", "true"), ("CORS_ORIGIN", "*")]).unwrap_err();
        assert!(e.contains("CORS_CREDENTIALS"), "{e}");
    }

    #[test]
    fn cors_origins() {
        let s = with(&[
            ("CORS_ENABLED", "true"),
            ("CORS_ORIGIN", "https://a.example, https://b.example/"),
        ])
        .unwrap();
        assert_eq!(
            s.cors,
            Some(CorsSettings {
                origin: CorsOrigin::List(vec![
                    "https://a.example".into(),
                    "https://b.example".into()
                ]),
                credentials: true
            })
        );
        let s = with(&[("CORS_ENABLED", "true"), ("CORS_ORIGIN", "true")]).unwrap();
        assert_eq!(s.cors.map(|c| c.origin), Some(CorsOrigin::Reflect));
    }
}
