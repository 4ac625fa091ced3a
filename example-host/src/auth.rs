//! Who is calling: the accountability a token resolves to (a static token,
//! stored hashed, or an access token of an open session), with the
//! policies that apply, cached until access changes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use once_cell::sync::OnceCell;
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::accounts::{lookup_user, CallerAccount};
use crate::credentials::hash_token;
use crate::credentials::jwt::{looks_like_jwt, Signer};
use platform_store::query::{Filter, ReadQuery};
use platform_store::storage::{read_with, Reader, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("Invalid token")]
    InvalidToken,
    #[error(transparent)]
    Store(#[from] StoreError),
}

const CACHE_LIMIT: usize = 10_000;

/// Resolves tokens and policies, caching both until the next write to a
/// collection that changes access made through this process, or the next
/// commit to the database by any other connection or process (another
/// host, `schedule run`, an operator's SQL): a user suspended or a token
/// changed anywhere is refused from the next request on.
pub struct Auth {
    epoch: AtomicU64,
    /// The store's data version the caches were last checked against.
    seen_data_version: AtomicU64,
    /// The count of changes to the access collections seen then
    /// ([`Store::tracked_version`]).
    seen_access_version: AtomicU64,
    tokens: Mutex<HashMap<String, (u64, CallerAccount)>>,
    public: Mutex<Option<(u64, Vec<String>)>>,
    /// Checks access tokens, once sign-in is set up.
    signer: OnceCell<Arc<Signer>>,
    /// The name of the cookie that carries a session's access token.
    session_cookie: OnceCell<String>,
}

impl Default for Auth {
    fn default() -> Self {
        Self::new()
    }
}

fn eq(field: &str, value: Value) -> Filter {
    Filter::eq(field, value)
}

impl Auth {
    pub fn new() -> Self {
        Self {
            epoch: AtomicU64::new(1),
            seen_data_version: AtomicU64::new(0),
            seen_access_version: AtomicU64::new(u64::MAX),
            tokens: Mutex::new(HashMap::new()),
            public: Mutex::new(None),
            signer: OnceCell::new(),
            session_cookie: OnceCell::new(),
        }
    }

    /// Accepts access tokens signed by `signer` from now on, also from
    /// the cookie called `session_cookie`.
    pub fn set_signer(&self, signer: Arc<Signer>, session_cookie: &str) {
        let _ = self.signer.set(signer);
        let _ = self.session_cookie.set(session_cookie.to_string());
    }

    /// The session cookie's name, once sign-in is set up.
    pub fn session_cookie(&self) -> Option<&str> {
        self.session_cookie.get().map(String::as_str)
    }

    /// Forgets every cached decision (after a write to users, roles,
    /// policies, access or permissions).
    pub fn invalidate(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// The generation of cached decisions: a new one after any local
    /// invalidation, and after any commit that changed the access
    /// collections, whoever made it. The store's data version (which moves
    /// with every commit of every connection and process) says cheaply
    /// that nothing was committed; when something was, the database's
    /// count of access changes says whether it matters. Read before the
    /// data a decision is made from, so a decision made from data older
    /// than a commit is never served after it.
    pub fn epoch(&self, store: &dyn Store) -> u64 {
        let version = store.data_version();
        if self.seen_data_version.load(Ordering::SeqCst) != version {
            match store.tracked_version() {
                Ok(access) => {
                    if self.seen_access_version.swap(access, Ordering::SeqCst) != access {
                        self.invalidate();
                    }
                }
                // Unknown: forget everything rather than serve it.
                Err(_) => self.invalidate(),
            }
            self.seen_data_version.store(version, Ordering::SeqCst);
        }
        self.current_epoch()
    }

    /// The generation as last brought up to date by [`Auth::epoch`]: every
    /// request does that once, when its credentials are resolved
    /// ([`Auth::authenticate`], [`Auth::public_policies`]), so the decisions
    /// made while serving it need not read the database's versions again.
    pub fn current_epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// The accountability of a token (a user's static token, or an access
    /// token of an open session); `InvalidToken` when it matches no active
    /// user.
    pub fn authenticate(&self, store: &dyn Store, token: &str) -> Result<CallerAccount, AuthError> {
        if let Some(signer) = self.signer.get().filter(|_| looks_like_jwt(token)) {
            let claims = signer
                .verify(token, false)
                .map_err(|_| AuthError::InvalidToken)?;
            // Keyed by session: every token of a session resolves alike.
            let key = format!("session {} {}", claims.session, claims.id);
            return self.resolve(store, key, |conn| {
                lookup_session(store, conn, &claims.session, &claims.id)
            });
        }
        let hashed = hash_token(token);
        self.resolve(store, hashed.clone(), |conn| {
            lookup_token(store, conn, &hashed)
        })
    }

    /// The accountability cached under `key` in this generation, or read
    /// by `lookup` and cached.
    fn resolve(
        &self,
        store: &dyn Store,
        key: String,
        mut lookup: impl FnMut(&mut dyn Reader) -> Result<Option<CallerAccount>, StoreError>,
    ) -> Result<CallerAccount, AuthError> {
        let epoch = self.epoch(store);
        if let Some((e, acc)) = self.tokens.lock().get(&key) {
            if *e == epoch {
                return Ok(acc.clone());
            }
        }
        let found = read_with(store, |conn| lookup(conn))?;
        let acc = found.ok_or(AuthError::InvalidToken)?;
        let mut cache = self.tokens.lock();
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(key, (epoch, acc.clone()));
        Ok(acc)
    }

    /// The policies of anonymous callers: access rows with neither role nor user.
    pub fn public_policies(&self, store: &dyn Store) -> Result<Vec<String>, StoreError> {
        let epoch = self.epoch(store);
        if let Some((e, p)) = &*self.public.lock() {
            if *e == epoch {
                return Ok(p.clone());
            }
        }
        let schema = store.schema();
        let Some(access) = schema.get("platform_access") else {
            return Ok(Vec::new());
        };
        let q = ReadQuery::select(
            &["policy"],
            Filter::And(vec![eq("role", Value::Null), eq("user", Value::Null)]),
        );
        let rows = read_with(store, |conn| conn.select(access, &q))?;
        let policies: Vec<String> = rows
            .iter()
            .filter_map(|r| r.get("policy").and_then(Value::as_str).map(String::from))
            .collect();
        *self.public.lock() = Some((epoch, policies.clone()));
        Ok(policies)
    }
}

/// Finds the active user with this token hash and their policies.
fn lookup_token(
    store: &dyn Store,
    conn: &mut dyn Reader,
    hashed: &str,
) -> Result<Option<CallerAccount>, StoreError> {
    lookup_user(store, conn, eq("token", json!(hashed)))
}

/// The user of an open session, active, and their policies.
fn lookup_session(
    store: &dyn Store,
    conn: &mut dyn Reader,
    session: &str,
    user: &str,
) -> Result<Option<CallerAccount>, StoreError> {
    let schema = store.schema();
    let Some(sessions) = schema.get(crate::platform_schema::SESSIONS) else {
        return Ok(None);
    };
    if !crate::credentials::sessions::is_open(conn, sessions, session, user)? {
        return Ok(None);
    }
    lookup_user(store, conn, eq("id", json!(user)))
}
