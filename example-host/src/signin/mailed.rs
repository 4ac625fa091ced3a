//! What sign-in does by mail, as Directus does it: the link that verifies
//! a registration's email, and the link that resets a forgotten password.
//! The links carry one-time tokens (`tokens`); the mail leaves through the
//! mailer's queue, off the request's path.

use std::time::Duration;

use serde_json::{json, Value};

use super::tokens::{self, Purpose};
use super::{find_by_email, links, SignIn, SignInError};
use crate::items::{Session, Who};
use crate::mail::Message;
use crate::platform::Platform;
use crate::platform::PlatformError;
use platform_store::query::{Filter, ReadQuery};
use platform_store::schema::{CollectionDef, Schema};
use platform_store::storage::codec::Scalar;
use platform_store::storage::{Columns, Writer};

/// A `verification_url` or `reset_url` outside its allow-list, worded as
/// Directus words it.
fn url_refused(url: &str, action: &str) -> SignInError {
    SignInError::InvalidPayload(format!(
        "Invalid payload. URL \"{url}\" can't be used to {action}."
    ))
}

impl SignIn {
    /// Refuses a `verification_url` that `USER_REGISTER_URL_ALLOW_LIST`
    /// does not name.
    pub(super) fn check_verification_url(&self, url: Option<&str>) -> Result<(), SignInError> {
        match url {
            Some(u) if !links::url_allowed(u, &self.settings.register_url_allow_list) => {
                Err(url_refused(u, "verify registered users"))
            }
            _ => Ok(()),
        }
    }

    /// Mails `user` (unverified, at `email`) a link that verifies their
    /// registration. A failure is logged, not answered: the account exists,
    /// and registering again sends a new link.
    pub(super) fn mail_verification(
        &self,
        platform: &Platform,
        user: &str,
        email: &str,
        url: Option<&str>,
    ) {
        let ttl = self.settings.verification_ttl;
        let issued = self.token_link(
            platform,
            user,
            Purpose::Registration,
            url,
            ttl,
            "/users/register/verify-email",
        );
        let link = match issued {
            Ok(link) => link,
            Err(e) => {
                log::error!("could not make a verification link: {e}");
                return;
            }
        };
        self.mailer.send(Message {
            to: email.to_string(),
            subject: "Verify your email address".into(),
            text: format!(
                "Hello,\n\nplease confirm that {email} is your email address by opening this link:\n\n{link}\n\n\
                 The link works once, for {}. If you did not register, ignore this message.\n",
                lifetime(ttl)
            ),
        });
    }

    /// Makes a one-time token of `purpose` for `user`, valid for `ttl` (in a
    /// transaction of its own), and the link that carries it: to `url`, or
    /// else to `path` on the host's public URL.
    fn token_link(
        &self,
        platform: &Platform,
        user: &str,
        purpose: Purpose,
        url: Option<&str>,
        ttl: Duration,
        path: &str,
    ) -> Result<String, PlatformError> {
        let schema = platform.store.schema();
        let token = platform.transaction(|session| {
            Ok(tokens::issue(
                tx_conn(session)?,
                &schema,
                user,
                purpose,
                url,
                ttl,
            )?)
        })?;
        let base = url
            .map(String::from)
            .unwrap_or_else(|| links::on_public_url(&self.settings.public_url, path));
        Ok(links::with_token(&base, &token))
    }

    /// The id of the unverified user with `email`, if there is one (a
    /// second registration sends them a new link, as Directus does).
    pub(super) fn unverified(
        &self,
        platform: &Platform,
        email: &str,
    ) -> Result<Option<String>, SignInError> {
        Ok(find_by_email(platform, email)?
            .filter(|u| u.status == "unverified")
            .map(|u| u.id))
    }

    /// Uses a verification token: its user becomes active. A token that is
    /// unknown, expired or used (here or on another host) is 400
    /// `INVALID_PAYLOAD`, as Directus answers a link used twice.
    pub fn verify_registration(&self, platform: &Platform, token: &str) -> Result<(), SignInError> {
        let done = use_token(
            platform,
            token,
            Purpose::Registration,
            "unverified",
            |session, _, _, used| {
                // Through the items service: the write's item events, and
                // the auth caches cleared after the commit.
                platform.update_one(
                    session,
                    &Who::system(),
                    "platform_users",
                    &used.user,
                    &json!({"status": "active"}),
                )?;
                Ok(())
            },
        )?;
        done.ok_or_else(|| {
            SignInError::InvalidPayload("Invalid payload. Invalid verification code.".into())
        })
    }

    /// Mails a password-reset link to the active user with `email`, if
    /// there is one; does nothing otherwise. `Ok` either way (the caller
    /// answers 204 alike); only a `reset_url` outside
    /// `PASSWORD_RESET_URL_ALLOW_LIST` is refused, before anything is read.
    pub fn request_password_reset(
        &self,
        platform: &Platform,
        email: &str,
        url: Option<&str>,
    ) -> Result<(), SignInError> {
        if let Some(u) = url {
            if !links::url_allowed(u, &self.settings.reset_url_allow_list) {
                return Err(url_refused(u, "reset passwords"));
            }
        }
        // Past this point a failure is logged, and answered as a success:
        // as Directus, nothing here tells whether the email exists.
        if let Err(e) = self.mail_reset(platform, email, url) {
            log::warn!("password reset request not served: {e}");
        }
        Ok(())
    }

    fn mail_reset(
        &self,
        platform: &Platform,
        email: &str,
        url: Option<&str>,
    ) -> Result<(), SignInError> {
        let Some(user) = find_by_email(platform, email)?.filter(|u| u.status == "active") else {
            return Ok(());
        };
        let ttl = self.settings.reset_ttl;
        let link = self.token_link(
            platform,
            &user.id,
            Purpose::PasswordReset,
            url,
            ttl,
            "/admin/reset-password",
        )?;
        let to = user.email.unwrap_or_else(|| email.trim().to_lowercase());
        self.mailer.send(Message {
            to,
            subject: "Password Reset Request".into(),
            text: format!(
                "Hello,\n\na new password was asked for the account of this email address. \
                 Choose one by opening this link:\n\n{link}\n\n\
                 The link works once, for {}. If you did not ask for it, ignore this message: \
                 your password stays as it is.\n",
                lifetime(ttl)
            ),
        });
        Ok(())
    }

    /// Sets a new password with a reset token, already hashed as
    /// `password_hash` (within sign-in's bound on hashing): the token is
    /// used up, with every other reset token of its user, and every session
    /// of the user ends in the same transaction. A token that is unknown,
    /// expired or used (here or on another host), or whose user is no
    /// longer active, is 403 `FORBIDDEN`, as Directus answers a used one.
    pub fn reset_password(
        &self,
        platform: &Platform,
        token: &str,
        password_hash: &str,
    ) -> Result<(), SignInError> {
        let done = use_token(
            platform,
            token,
            Purpose::PasswordReset,
            "active",
            |session, schema, users, used| {
                let conn = tx_conn(session)?;
                // Written here, not through the items service, which would
                // hash the password inside this transaction (holding
                // SQLite's write lock meanwhile): it was hashed before,
                // within the bound.
                let mut changes = Columns::new();
                changes.insert("password".into(), Scalar::Text(password_hash.to_string()));
                conn.update(users, &used.user, &changes)?;
                // As a new password through the items service does.
                crate::credentials::sessions::end_all_of(conn, schema, &used.user)?;
                Ok(())
            },
        )?;
        if done.is_none() {
            return Err(SignInError::Forbidden);
        }
        platform.auth.invalidate();
        Ok(())
    }
}

/// The connection of `session`'s transaction.
fn tx_conn<'a>(session: &'a mut Session<'_>) -> Result<&'a mut dyn Writer, PlatformError> {
    match session {
        Session::Tx { conn, .. } => Ok(&mut **conn),
        Session::Auto => Err(PlatformError::Internal("no transaction".into())),
    }
}

/// Uses up `token`, of `purpose`, in one transaction. When its user's
/// status is `status`, every other token of theirs for `purpose` is voided
/// and `then` runs in the same transaction (with the schema, the users'
/// collection and the token's use); `None` when the token is unknown,
/// expired or used (here or on another host), or its user's status is
/// another.
fn use_token<T>(
    platform: &Platform,
    token: &str,
    purpose: Purpose,
    status: &str,
    mut then: impl FnMut(
        &mut Session<'_>,
        &Schema,
        &CollectionDef,
        &tokens::Used,
    ) -> Result<T, PlatformError>,
) -> Result<Option<T>, SignInError> {
    let schema = platform.store.schema();
    let users = schema
        .get("platform_users")
        .cloned()
        .ok_or_else(|| SignInError::Internal("no users collection".into()))?;
    Ok(platform.transaction(|session| {
        let conn = tx_conn(session)?;
        let Some(used) = tokens::consume(conn, &schema, token, purpose)? else {
            return Ok(None);
        };
        let q = ReadQuery::select(&["status"], Filter::eq("id", json!(used.user))).limit(1);
        let found = conn
            .select(&users, &q)?
            .into_iter()
            .next()
            .and_then(|r| r.get("status").and_then(Value::as_str).map(String::from));
        if found.as_deref() != Some(status) {
            return Ok(None);
        }
        tokens::void_all(conn, &schema, &used.user, purpose)?;
        then(session, &schema, &users, &used).map(Some)
    })?)
}

/// A link's lifetime in words: `7 days`, `1 day`, `2 hours`, `30 minutes`.
fn lifetime(d: std::time::Duration) -> String {
    let secs = d.as_secs();
    let (n, unit) = if secs >= 86_400 && secs % 86_400 == 0 {
        (secs / 86_400, "day")
    } else if secs >= 3_600 && secs % 3_600 == 0 {
        (secs / 3_600, "hour")
    } else {
        ((secs / 60).max(1), "minute")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn lifetimes_in_words() {
        assert_eq!(lifetime(Duration::from_secs(7 * 86_400)), "7 days");
        assert_eq!(lifetime(Duration::from_secs(86_400)), "1 day");
        assert_eq!(lifetime(Duration::from_secs(7_200)), "2 hours");
        assert_eq!(lifetime(Duration::from_secs(90)), "1 minute");
    }
}
