//! Sign-in as Directus does it (docs/decisions.md §3): passwords checked with
//! argon2, sessions with rotating refresh tokens, JWT access tokens,
//! self-registration, and what is done by mail: verifying a registration's
//! email, resetting a password (`mailed`, with the one-time tokens of
//! `tokens` and the links of `links`). Plain functions over the platform;
//! the routes are in `http::auth_api` and `http::users_api`.

pub mod links;
pub mod mailed;
pub mod settings;
pub mod tokens;

use crate::accounts::looks_like_email;
use std::sync::Arc;

use argon2::password_hash::{PasswordHash, PasswordVerifier};
use argon2::Argon2;
use serde_json::{json, Value};

use crate::accounts::{lookup_user, CallerAccount};
use crate::credentials::jwt::{Claims, Signer};
use crate::credentials::sessions::{self, Presented};
use crate::credentials::{generate_token, hash_password};
use crate::items::{Session, Who};
use crate::platform::Platform;
use crate::platform::PlatformError;
use crate::platform_schema::{SESSIONS, SIGNING_KEYS};
use platform_store::query::{Filter, ReadQuery};
use platform_store::storage::{read_with, StoreError};
use platform_store::values::format_timestamp;
use settings::Settings;

/// Where the tokens of a sign-in go (docs/decisions.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Both tokens in the body.
    Json,
    /// The refresh token in an HttpOnly cookie, the access token in the body.
    Cookie,
    /// The access token in an HttpOnly cookie.
    Session,
}

impl Mode {
    pub fn parse(text: Option<&str>) -> Result<Self, SignInError> {
        match text.unwrap_or("json") {
            "json" => Ok(Mode::Json),
            "cookie" => Ok(Mode::Cookie),
            "session" => Ok(Mode::Session),
            other => Err(SignInError::InvalidPayload(format!(
                "\"mode\" must be json, cookie or session, not \"{other}\""
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Json => "json",
            Mode::Cookie => "cookie",
            Mode::Session => "session",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// A wrong email or password, a user who may not sign in, a refresh
    /// token that is unknown, used or expired: one answer for all.
    #[error("Invalid user credentials.")]
    InvalidCredentials,
    #[error("{0}")]
    InvalidPayload(String),
    /// Registration is off.
    #[error("You don't have permission to access this.")]
    Forbidden,
    #[error(transparent)]
    Items(#[from] PlatformError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Internal(String),
}

/// What a sign-in or a refresh hands out.
#[derive(Debug, Clone)]
pub struct Issued {
    pub access_token: String,
    /// The access token's lifetime, in milliseconds.
    pub expires_ms: u64,
    pub refresh_token: String,
}

/// Who is signing in, as the request tells.
#[derive(Debug, Clone, Default)]
pub struct Client {
    pub user_agent: Option<String>,
}

/// The sign-in service of one host.
pub struct SignIn {
    pub settings: Settings,
    signer: Arc<Signer>,
    /// A hash of no one's password, checked when the email is unknown, so
    /// that it answers in the time a wrong password takes. Made on a
    /// thread of its own at start (a tenth of a debug start's time, a
    /// third of a release one's), or by the first sign-in that needs it.
    decoy_hash: Arc<std::sync::OnceLock<String>>,
    /// Password hashing is slow on purpose: at most this many at once, so
    /// that a flood of sign-ins leaves cores for every other route.
    pub hashing: tokio::sync::Semaphore,
    /// Where verification and password-reset links are mailed from.
    mailer: crate::mail::Mailer,
}

/// A hash of a random password nobody has.
fn make_decoy_hash() -> String {
    hash_password(&generate_token()).unwrap_or_else(|e| {
        // Hashing a fresh token does not fail; were it to, an unknown
        // email would answer faster than a wrong password, nothing worse.
        log::error!("cannot hash the sign-in decoy: {e}");
        String::new()
    })
}

/// Password hashes at once: half the cores, at least one.
fn hashing_slots() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get() / 2)
        .unwrap_or(1)
        .max(1)
}

impl SignIn {
    /// Sets sign-in up: the signing secret (`SECRET`, or the one made at
    /// first start and kept in the database, made now if missing), and the
    /// platform's acceptance of access tokens.
    pub fn start(
        platform: &Platform,
        settings: Settings,
        mailer: crate::mail::Mailer,
    ) -> Result<Self, String> {
        let secret = match &settings.secret {
            Some(s) => s.clone(),
            None => stored_secret(platform).map_err(|e| format!("signing secret: {e}"))?,
        };
        let signer = Arc::new(Signer::new(secret.as_bytes()));
        platform
            .auth
            .set_signer(signer.clone(), &settings.session_cookie.name);
        let decoy_hash = Arc::new(std::sync::OnceLock::new());
        let early = decoy_hash.clone();
        // Without the thread, the first unknown email makes it.
        let _ = std::thread::Builder::new()
            .name("signin-decoy".into())
            .spawn(move || {
                early.get_or_init(make_decoy_hash);
            });
        Ok(Self {
            settings,
            signer,
            decoy_hash,
            hashing: tokio::sync::Semaphore::new(hashing_slots()),
            mailer,
        })
    }

    /// Checks an email and password and opens a session.
    pub fn login(
        &self,
        platform: &Platform,
        email: &str,
        password: &str,
        mode: Mode,
        client: &Client,
    ) -> Result<Issued, SignInError> {
        let found = find_by_email(platform, email)?;
        let stored = found.as_ref().and_then(|u| u.password.clone());
        // Always one verification, whatever is missing.
        let matches = match stored.as_deref() {
            Some(hash) => verify_password(password, hash),
            None => verify_password(password, self.decoy_hash.get_or_init(make_decoy_hash)),
        };
        let user = match found {
            Some(u) if matches && stored.is_some() && u.status == "active" => u,
            _ => return Err(SignInError::InvalidCredentials),
        };
        let refresh_token = generate_token();
        let session = open_session(
            platform,
            &Opening {
                user: &user.id,
                refresh_token: &refresh_token,
                lifetime: self.settings.refresh_ttl,
                mode: mode.name(),
                ip: None,
                user_agent: client.user_agent.as_deref(),
            },
        )?;
        self.issue(platform, &user.id, &session, refresh_token)
    }

    /// A new access token and refresh token for the session `presented`
    /// names, which a new session replaces: the refresh token presented is
    /// used up, and the access tokens of the old session are refused.
    pub fn refresh(
        &self,
        platform: &Platform,
        presented: &Presented,
    ) -> Result<Issued, SignInError> {
        let sessions_def = platform
            .store
            .schema()
            .get(SESSIONS)
            .cloned()
            .ok_or(SignInError::InvalidCredentials)?;
        let refresh_token = generate_token();
        let replaced = platform.transaction(|session| {
            let Session::Tx { conn, .. } = session else {
                return Err(PlatformError::Internal(
                    "refresh outside a transaction".into(),
                ));
            };
            let Some(found) = sessions::find(&mut **conn, &sessions_def, presented)? else {
                return Ok(None);
            };
            let id = replace_session(
                platform,
                session,
                &found,
                &refresh_token,
                self.settings.refresh_ttl,
            )?;
            Ok(Some((found.user, id)))
        })?;
        let (user, id) = replaced.ok_or(SignInError::InvalidCredentials)?;
        self.issue(platform, &user, &id, refresh_token)
    }

    /// Ends the session `presented` names, if it is open.
    pub fn logout(&self, platform: &Platform, presented: &Presented) -> Result<(), SignInError> {
        let Some(sessions_def) = platform.store.schema().get(SESSIONS).cloned() else {
            return Ok(());
        };
        platform.transaction(|session| {
            let Session::Tx { conn, .. } = session else {
                return Err(PlatformError::Internal(
                    "logout outside a transaction".into(),
                ));
            };
            if let Some(found) = sessions::find(&mut **conn, &sessions_def, presented)? {
                end_session(platform, session, &found.id)?;
            }
            Ok(())
        })?;
        Ok(())
    }

    /// The session id of a session cookie's access token, expired or not
    /// (a refresh or logout in `session` mode).
    pub fn session_of(&self, access_token: &str) -> Option<String> {
        self.signer
            .verify(access_token, true)
            .ok()
            .map(|claims| claims.session)
    }

    /// Creates an account (docs/decisions.md §3): `Ok` whether or not the email
    /// was taken, so that registration tells nobody which emails exist. With
    /// verification (a `verification_url`, or
    /// `PUBLIC_REGISTRATION_VERIFY_EMAIL`), the account is `unverified` and a
    /// link that activates it is mailed; registering again with the email of an
    /// unverified account mails a new link (as Directus does), and with the
    /// email of any other account mails nothing.
    pub fn register(&self, platform: &Platform, payload: &Value) -> Result<(), SignInError> {
        let verification_url = match payload.get("verification_url") {
            None | Some(Value::Null) => None,
            Some(Value::String(u)) => Some(u.as_str()),
            Some(_) => {
                return Err(SignInError::InvalidPayload(
                    "\"verification_url\" must be a string".into(),
                ))
            }
        };
        self.check_verification_url(verification_url)?;
        if !self.settings.public_registration {
            return Err(SignInError::Forbidden);
        }
        let text = |k: &str| payload.get(k).and_then(Value::as_str).map(str::trim);
        let email = text("email")
            .filter(|e| looks_like_email(e))
            .ok_or_else(|| {
                SignInError::InvalidPayload("\"email\" must be an email address".into())
            })?
            .to_lowercase();
        let password = payload
            .get("password")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| SignInError::InvalidPayload("\"password\" is required".into()))?;
        if let Some(obj) = payload.as_object() {
            if let Some(other) = obj.keys().find(|k| {
                !matches!(
                    k.as_str(),
                    "email" | "password" | "first_name" | "last_name" | "verification_url"
                )
            }) {
                return Err(SignInError::InvalidPayload(format!(
                    "\"{other}\" cannot be set at registration"
                )));
            }
        }
        let role = role_named(platform, &self.settings.registration_role)?;
        let verify = verification_url.is_some() || self.settings.registration_verify_email;
        let created = platform.create_one(
            &mut Session::Auto,
            &Who::system(),
            "platform_users",
            &json!({
                "email": email,
                "password": password,
                "first_name": text("first_name"),
                "last_name": text("last_name"),
                "role": role,
                "status": if verify { "unverified" } else { "active" },
            }),
        );
        let pending = match created {
            Ok(id) => verify.then_some(id),
            Err(PlatformError::NotUnique(..)) if verify => self.unverified(platform, &email)?,
            Err(PlatformError::NotUnique(..)) => None,
            Err(e) => return Err(e.into()),
        };
        if let Some(user) = pending {
            self.mail_verification(platform, &user, &email, verification_url);
        }
        Ok(())
    }

    fn issue(
        &self,
        platform: &Platform,
        user: &str,
        session: &str,
        refresh_token: String,
    ) -> Result<Issued, SignInError> {
        let acc = user_accountability(platform, user)?.ok_or(SignInError::InvalidCredentials)?;
        let now = chrono::Utc::now().timestamp().max(0) as u64;
        let ttl = self.settings.access_ttl;
        let access_token = self
            .signer
            .issue(Claims {
                id: acc.user.clone(),
                role: acc.role.clone(),
                app_access: true,
                admin_access: acc.admin,
                session: session.to_string(),
                iat: now,
                exp: now + ttl.as_secs().max(1),
                iss: String::new(),
            })
            .map_err(SignInError::Internal)?;
        Ok(Issued {
            access_token,
            expires_ms: ttl.as_millis() as u64,
            refresh_token,
        })
    }
}

/// A user as sign-in reads them.
struct Account {
    id: String,
    status: String,
    password: Option<String>,
    email: Option<String>,
}

/// The user with this email: as given, or else in lower case (registration
/// stores emails in lower case).
fn find_by_email(platform: &Platform, email: &str) -> Result<Option<Account>, StoreError> {
    let schema = platform.store.schema();
    let Some(users) = schema.get("platform_users") else {
        return Ok(None);
    };
    let email = email.trim();
    if email.is_empty() {
        return Ok(None);
    }
    let mut candidates = vec![email.to_string()];
    if email.to_lowercase() != email {
        candidates.push(email.to_lowercase());
    }
    read_with(platform.store.as_ref(), |conn| {
        for candidate in &candidates {
            let q = ReadQuery::select(
                &["id", "status", "password", "email"],
                Filter::eq("email", json!(candidate)),
            )
            .limit(1);
            if let Some(row) = conn.select(users, &q)?.into_iter().next() {
                let text = |k: &str| row.get(k).and_then(Value::as_str).map(String::from);
                return Ok(Some(Account {
                    id: text("id").unwrap_or_default(),
                    status: text("status").unwrap_or_default(),
                    password: text("password"),
                    email: text("email"),
                }));
            }
        }
        Ok(None)
    })
}

fn verify_password(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored)
        .map(|hash| {
            Argon2::default()
                .verify_password(password.as_bytes(), &hash)
                .is_ok()
        })
        .unwrap_or(false)
}

fn user_accountability(
    platform: &Platform,
    user: &str,
) -> Result<Option<CallerAccount>, StoreError> {
    read_with(platform.store.as_ref(), |conn| {
        lookup_user(platform.store.as_ref(), conn, Filter::eq("id", json!(user)))
    })
}

/// The id of the role called `name`.
fn role_named(platform: &Platform, name: &str) -> Result<String, SignInError> {
    let schema = platform.store.schema();
    let roles = schema
        .get("platform_roles")
        .ok_or_else(|| SignInError::Internal("no roles collection".into()))?;
    let q = ReadQuery::select(&["id"], Filter::eq("name", json!(name))).limit(1);
    let rows = read_with(platform.store.as_ref(), |conn| conn.select(roles, &q))?;
    rows.first()
        .and_then(|r| r.get("id").and_then(Value::as_str).map(String::from))
        .ok_or_else(|| {
            SignInError::Internal(format!(
                "PUBLIC_REGISTRATION_ROLE names no role: \"{name}\""
            ))
        })
}

/// The signing secret kept in the database, made by the first host to
/// start without `SECRET` (once, under the migration lock, so that hosts
/// starting together agree).
fn stored_secret(platform: &Platform) -> Result<String, String> {
    let schema = platform.store.schema();
    let def = schema
        .get(SIGNING_KEYS)
        .cloned()
        .ok_or("the signing key collection is missing")?;
    platform
        .once(crate::platform_schema::OWNER, "signing_secret", |session| {
            let Session::Tx { conn, .. } = session else {
                return Err(PlatformError::Internal("no transaction".into()));
            };
            let mut row = platform_store::storage::Columns::new();
            row.insert(
                "id".into(),
                platform_store::storage::codec::Scalar::Text(uuid::Uuid::new_v4().to_string()),
            );
            row.insert(
                "secret".into(),
                platform_store::storage::codec::Scalar::Text(format!(
                    "{}{}",
                    generate_token(),
                    generate_token()
                )),
            );
            conn.insert(&def, &row)?;
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    let mut q = ReadQuery::select(&["secret"], Filter::eq("secret", Value::Null)).limit(1);
    q.filter = None;
    let rows = read_with(platform.store.as_ref(), |conn| conn.select(&def, &q))
        .map_err(|e| e.to_string())?;
    rows.first()
        .and_then(|r| r.get("secret").and_then(Value::as_str).map(String::from))
        .ok_or_else(|| "no signing secret stored".into())
}

/// Sign-in's rules on the platform's writes, registered at start, before
/// any write: a user suspended, archived or given a new password loses
/// every session in the same write.
pub fn register_rules(platform: &mut Platform) {
    platform.add_update_rule(sessions::end_on_new_credentials);
}

// ---- sessions opened, replaced and ended through the items service ----

/// What a new session records.
struct Opening<'a> {
    user: &'a str,
    refresh_token: &'a str,
    lifetime: std::time::Duration,
    mode: &'a str,
    ip: Option<&'a str>,
    user_agent: Option<&'a str>,
}

fn session_expiry(lifetime: std::time::Duration) -> String {
    let lifetime = chrono::Duration::from_std(lifetime).unwrap_or(chrono::Duration::days(7));
    format_timestamp(chrono::Utc::now() + lifetime)
}

fn session_row(opening: &Opening<'_>) -> Value {
    json!({
        // Hashed by the items service: the collection marks it secret.
        "token": opening.refresh_token,
        "user": opening.user,
        "expires": session_expiry(opening.lifetime),
        "mode": opening.mode,
        "ip": opening.ip,
        "user_agent": opening.user_agent,
    })
}

/// Opens a session; its id.
fn open_session(platform: &Platform, opening: &Opening<'_>) -> Result<String, PlatformError> {
    platform.create_one(
        &mut Session::Auto,
        &Who::system(),
        SESSIONS,
        &session_row(opening),
    )
}

/// Replaces session `found` by a new one with `refresh_token` (in the
/// caller's transaction); the new session's id. The old id is gone, so
/// every access token naming it (a `session` mode cookie included, expired
/// or not) is refused from now on: a copy of an old cookie cannot keep a
/// session alive.
fn replace_session(
    platform: &Platform,
    session: &mut Session<'_>,
    found: &sessions::Found,
    refresh_token: &str,
    lifetime: std::time::Duration,
) -> Result<String, PlatformError> {
    let opening = Opening {
        user: &found.user,
        refresh_token,
        lifetime,
        mode: found.mode.as_deref().unwrap_or("json"),
        ip: found.ip.as_deref(),
        user_agent: found.user_agent.as_deref(),
    };
    let id = platform.create_one(session, &Who::system(), SESSIONS, &session_row(&opening))?;
    end_session(platform, session, &found.id)?;
    Ok(id)
}

/// Ends session `id` (in the caller's transaction).
fn end_session(
    platform: &Platform,
    session: &mut Session<'_>,
    id: &str,
) -> Result<(), PlatformError> {
    platform.delete_one(session, &Who::system(), SESSIONS, id)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_default_to_json() {
        assert_eq!(Mode::parse(None).unwrap(), Mode::Json);
        assert_eq!(Mode::parse(Some("session")).unwrap(), Mode::Session);
        assert!(Mode::parse(Some("jwt")).is_err());
    }

    #[test]
    fn emails_are_checked_for_shape_only() {
        assert!(looks_like_email("a@b.example"));
        assert!(!looks_like_email("a@b"));
        assert!(!looks_like_email("@b.example"));
        assert!(!looks_like_email("a b@c.example"));
    }

    #[test]
    fn a_password_verifies_against_its_hash_only() {
        let hash = hash_password("right").unwrap();
        assert!(verify_password("right", &hash));
        assert!(!verify_password("wrong", &hash));
        assert!(!verify_password("right", "not a hash"));
    }
}
