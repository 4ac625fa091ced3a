//! Sign-in settings, from the environment under Directus's names
//! (docs/decisions.md §3): secret, token lifetimes, cookies, registration,
//! CORS, and the links mailed for email verification and password resets.

use std::time::Duration;

use crate::env_settings::{parse_bool, parse_duration};
use crate::settings::{declare, Env, Setting};

declare! {
    section "Sign-in";
    /// Signs access tokens; unset, a secret made at first start is kept in
    /// the database.
    SECRET: "SECRET";
    /// How long an access token works (`500ms`, `30s`, `15m`, `2h`, `7d`,
    /// `1w`, or milliseconds).
    ACCESS_TOKEN_TTL: "ACCESS_TOKEN_TTL" = "15m";
    /// How long a refresh token works.
    REFRESH_TOKEN_TTL: "REFRESH_TOKEN_TTL" = "7d";
    /// The refresh token's cookie.
    REFRESH_TOKEN_COOKIE_NAME: "REFRESH_TOKEN_COOKIE_NAME" = "directus_refresh_token";
    /// Whether the refresh token's cookie is sent over HTTPS only.
    REFRESH_TOKEN_COOKIE_SECURE: "REFRESH_TOKEN_COOKIE_SECURE" = "false";
    /// The refresh token's cookie's `SameSite`: `lax`, `strict` or `none`.
    REFRESH_TOKEN_COOKIE_SAME_SITE: "REFRESH_TOKEN_COOKIE_SAME_SITE" = "lax";
    /// The refresh token's cookie's `Domain`.
    REFRESH_TOKEN_COOKIE_DOMAIN: "REFRESH_TOKEN_COOKIE_DOMAIN";
    /// The session's cookie.
    SESSION_COOKIE_NAME: "SESSION_COOKIE_NAME" = "directus_session_token";
    /// Whether the session's cookie is sent over HTTPS only.
    SESSION_COOKIE_SECURE: "SESSION_COOKIE_SECURE" = "false";
    /// The session's cookie's `SameSite`: `lax`, `strict` or `none`.
    SESSION_COOKIE_SAME_SITE: "SESSION_COOKIE_SAME_SITE" = "lax";
    /// The session's cookie's `Domain`.
    SESSION_COOKIE_DOMAIN: "SESSION_COOKIE_DOMAIN";
    /// Whether anyone may register (`POST /users/register`).
    PUBLIC_REGISTRATION: "PUBLIC_REGISTRATION" = "false";
    /// The role registered users get, by name.
    PUBLIC_REGISTRATION_ROLE: "PUBLIC_REGISTRATION_ROLE" = "Viewer";
    /// `true`: registered accounts verify their email before they sign in,
    /// also without a `verification_url` (see [Signing
    /// in](api.md#signing-in)).
    PUBLIC_REGISTRATION_VERIFY_EMAIL: "PUBLIC_REGISTRATION_VERIFY_EMAIL" = "false";
    /// Where the host is reached, for the links it mails when no
    /// `verification_url` or `reset_url` is given; an absolute URL's origin
    /// is the host's own for writes by cookie (see [Signing
    /// in](api.md#signing-in)).
    PUBLIC_URL: "PUBLIC_URL" = "/";
    /// Comma-separated URLs a registration's `verification_url` may be
    /// (compared by origin and path, as Directus).
    USER_REGISTER_URL_ALLOW_LIST: "USER_REGISTER_URL_ALLOW_LIST";
    /// Comma-separated URLs a password request's `reset_url` may be
    /// (compared by origin and path, as Directus).
    PASSWORD_RESET_URL_ALLOW_LIST: "PASSWORD_RESET_URL_ALLOW_LIST";
    /// How long a verification link works (a reset link works for a day).
    EMAIL_VERIFICATION_TOKEN_TTL: "EMAIL_VERIFICATION_TOKEN_TTL" = "7d";
    /// Whether browsers on other origins may call the host.
    CORS_ENABLED: "CORS_ENABLED" = "false";
    /// With CORS: `true` (the request's own origin), `*` (any, without
    /// credentials) or comma-separated origins.
    CORS_ORIGIN: "CORS_ORIGIN";
    /// With CORS: whether credentials may be sent.
    CORS_CREDENTIALS: "CORS_CREDENTIALS" = "true";
}

/// The settings of one cookie.
struct Cookie {
    name: Setting,
    secure: Setting,
    same_site: Setting,
    domain: Setting,
}

const REFRESH_TOKEN_COOKIE: Cookie = Cookie {
    name: REFRESH_TOKEN_COOKIE_NAME,
    secure: REFRESH_TOKEN_COOKIE_SECURE,
    same_site: REFRESH_TOKEN_COOKIE_SAME_SITE,
    domain: REFRESH_TOKEN_COOKIE_DOMAIN,
};

const SESSION_COOKIE: Cookie = Cookie {
    name: SESSION_COOKIE_NAME,
    secure: SESSION_COOKIE_SECURE,
    same_site: SESSION_COOKIE_SAME_SITE,
    domain: SESSION_COOKIE_DOMAIN,
};

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
    pub fn from_env(env: &Env) -> Result<Self, String> {
        let duration = |s: Setting| {
            parse_duration(&s.get(env).unwrap_or_default()).map_err(|e| format!("{}: {e}", s.env))
        };
        let flag = |s: Setting| parse_bool(s.env, &s.get(env).unwrap_or_default());
        let cookie = |c: Cookie| -> Result<CookieSettings, String> {
            Ok(CookieSettings {
                name: c.name.get(env).unwrap_or_default(),
                secure: flag(c.secure)?,
                same_site: parse_same_site(
                    c.same_site.env,
                    &c.same_site.get(env).unwrap_or_default(),
                )?,
                domain: c.domain.get(env),
            })
        };
        let cors = if flag(CORS_ENABLED)? {
            let origin = match CORS_ORIGIN.get(env).as_deref().map(str::trim) {
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
            let credentials = flag(CORS_CREDENTIALS)?;
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
            secret: SECRET.get(env),
            access_ttl: duration(ACCESS_TOKEN_TTL)?,
            refresh_ttl: duration(REFRESH_TOKEN_TTL)?,
            refresh_cookie: cookie(REFRESH_TOKEN_COOKIE)?,
            session_cookie: cookie(SESSION_COOKIE)?,
            public_registration: flag(PUBLIC_REGISTRATION)?,
            registration_role: PUBLIC_REGISTRATION_ROLE.get(env).unwrap_or_default(),
            cors,
            public_url: PUBLIC_URL.get(env).unwrap_or_default(),
            registration_verify_email: flag(PUBLIC_REGISTRATION_VERIFY_EMAIL)?,
            register_url_allow_list: comma_list(USER_REGISTER_URL_ALLOW_LIST.get(env)),
            reset_url_allow_list: comma_list(PASSWORD_RESET_URL_ALLOW_LIST.get(env)),
            verification_ttl: duration(EMAIL_VERIFICATION_TOKEN_TTL)?,
            reset_ttl: Duration::from_secs(86_400),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> Result<Settings, String> {
        Settings::from_env(&Env::of(vars))
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
