//! Throttling, as Directus offers it: points counted per key in fixed
//! windows, behind the [`Counter`] trait with two stores, [`memory`] (in
//! this process) and [`database`] (the `platform_counters` table, shared by
//! every host on the database). Three users (settings in [`settings`]):
//!
//! - the rate limiter (`RATE_LIMITER_*`, off by default): every request
//!   costs its client address one point; past the limit, 429;
//! - the throttle on first transformations (`ASSETS_TRANSFORM_THROTTLE_*`,
//!   on by default): every image transformation that is not kept yet, so
//!   is computed, costs a point to its caller (the user, or the client
//!   address of a caller not signed in); past the limit, 429. A kept one
//!   costs nothing;
//! - the sign-in throttle (`LOGIN_THROTTLE_*`, on by default): every
//!   attempt at `/auth/login` costs a point to the account it names (its
//!   email, trimmed and in lower case, whether or not such an account
//!   exists) and to its client address, before any password is checked;
//!   past either bound, 429 without checking it. Past the account's
//!   bound, an address that has made no attempt on that account in the
//!   window still gets one (counted per account and address): an
//!   attacker's failures elsewhere do not lock the owner out, while the
//!   attacker's own address stays refused. A sign-in that succeeds
//!   clears its account's count and gives its address's point back, as
//!   Directus resets its count of login attempts; an attempt that failed
//!   for another reason than its credentials gives its points back. The
//!   count ends with its window. Requests that mail an account
//!   (`/auth/password/request`, `/users/register`) cost the same points,
//!   never given back, and get no such pass: they are bounded per email
//!   and per address.
//!
//! A window opens with a key's first point and lasts the limiter's
//! duration; a point past the limit is refused until it ends (Directus's
//! `rate-limiter-flexible` counts the same way). Keys are digests of what
//! they count (an email, an address), so neither store keeps an email and
//! every key has one size.

pub mod database;
pub mod memory;
pub mod settings;

use std::net::IpAddr;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use platform_store::storage::{Store, StoreError, Window};
use settings::{Settings, StoreKind};

#[derive(Debug, thiserror::Error)]
pub enum ThrottleError {
    /// The shared store could not count.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where a limiter keeps its counts: one window per key at a time, each
/// as long as the store's window length.
pub trait Counter: Send + Sync {
    /// Adds a point to `key`'s window open at `now_ms` (milliseconds since
    /// the Unix epoch), or opens one with it; the window after. Atomic: of
    /// concurrent calls for one key, each sees a different count.
    fn hit(&self, key: &str, now_ms: i64) -> Result<Window, ThrottleError>;
    /// `key`'s window open at `now_ms`, if any.
    fn peek(&self, key: &str, now_ms: i64) -> Result<Option<Window>, ThrottleError>;
    /// Takes a point back from `key`'s window open at `now_ms`, if it has
    /// one.
    fn give_back(&self, key: &str, now_ms: i64) -> Result<(), ThrottleError>;
    /// Forgets `key`'s window.
    fn clear(&self, key: &str) -> Result<(), ThrottleError>;
    /// Whether a call may wait (on the database): then it is run off the
    /// async workers.
    fn blocks(&self) -> bool;
}

/// A request refused for its count: answered 429 with `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The limit that was reached.
    pub limit: u32,
    /// How long until the window ends (at least 1 ms).
    pub retry_after_ms: i64,
    /// When the window ends (milliseconds since the Unix epoch).
    pub reset_ms: i64,
}

impl Refusal {
    fn of(limit: u32, window: &Window, now_ms: i64) -> Self {
        Self {
            limit,
            retry_after_ms: (window.ends_ms - now_ms).max(1),
            reset_ms: window.ends_ms,
        }
    }

    /// Of two refusals, the one that ends later.
    fn later(self, other: Option<Refusal>) -> Refusal {
        match other {
            Some(o) if o.reset_ms > self.reset_ms => o,
            _ => self,
        }
    }
}

/// Whether a request may go on.
pub type Verdict = Result<(), Refusal>;

/// A bound of `points` per window on one kind of key (`scope`).
pub struct Limiter {
    scope: &'static str,
    points: u32,
    counter: Arc<dyn Counter>,
}

impl Limiter {
    pub fn new(scope: &'static str, points: u32, counter: Arc<dyn Counter>) -> Self {
        Self {
            scope,
            points,
            counter,
        }
    }

    /// The key that counts `subject`: the scope and a digest of the
    /// subject (a fixed size, and no email kept).
    fn key(&self, subject: &str) -> String {
        let digest = Sha256::digest(subject.as_bytes());
        format!("{}:{}", self.scope, hex::encode(&digest[..16]))
    }

    /// Counts a point for `subject`: refused when past the limit.
    pub fn consume(&self, subject: &str, now_ms: i64) -> Result<Verdict, ThrottleError> {
        let window = self.counter.hit(&self.key(subject), now_ms)?;
        Ok(if window.points > i64::from(self.points) {
            Err(Refusal::of(self.points, &window, now_ms))
        } else {
            Ok(())
        })
    }

    /// Whether a point for `subject` would be refused now, without
    /// counting it (a read: a refused request then writes nothing).
    pub fn check(&self, subject: &str, now_ms: i64) -> Result<Verdict, ThrottleError> {
        Ok(match self.counter.peek(&self.key(subject), now_ms)? {
            Some(w) if w.points >= i64::from(self.points) => {
                Err(Refusal::of(self.points, &w, now_ms))
            }
            _ => Ok(()),
        })
    }

    pub fn give_back(&self, subject: &str, now_ms: i64) -> Result<(), ThrottleError> {
        self.counter.give_back(&self.key(subject), now_ms)
    }

    pub fn clear(&self, subject: &str) -> Result<(), ThrottleError> {
        self.counter.clear(&self.key(subject))
    }

    /// Whether its calls may wait on the database.
    pub fn blocks(&self) -> bool {
        self.counter.blocks()
    }
}

/// What an address counts as: an IPv4 address (an IPv4-mapped IPv6 one
/// included) on its own, an IPv6 address by its /64 network, which one
/// client commonly holds whole.
pub fn address_subject(address: IpAddr) -> String {
    match address.to_canonical() {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
    }
}

/// What an email counts as: trimmed and in lower case, as sign-in finds
/// it.
pub fn account_subject(email: &str) -> String {
    email.trim().to_lowercase()
}

/// Who a first transformation counts against: the signed-in `user`, else
/// the client `address` (`None`: neither is known, nothing counts).
pub fn transform_subject(user: Option<&str>, address: Option<IpAddr>) -> Option<String> {
    match (user, address) {
        (Some(user), _) => Some(format!("user:{user}")),
        (None, Some(address)) => Some(format!("address:{}", address_subject(address))),
        (None, None) => None,
    }
}

/// What an account and an address count as together: the attempts on
/// that account from that address.
fn pair_subject(account: &str, address: &str) -> String {
    format!("{account}\n{address}")
}

/// The sign-in throttle: a bound per account and one per client address,
/// and the attempts of each address on each account, which let an address
/// that has not tried an account past that account's bound.
pub struct LoginThrottle {
    account: Limiter,
    address: Limiter,
    /// Attempts per (account, address): one point is its limit, so that a
    /// check tells whether the address has tried the account in the window.
    pair: Limiter,
}

/// Whether an attempt past its account's bound may still be made from an
/// address that has not tried the account (a sign-in), or not (a request
/// that mails the account).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    FreshAddress,
    None,
}

impl LoginThrottle {
    pub fn new(account: Limiter, address: Limiter, pair: Limiter) -> Self {
        Self {
            account,
            address,
            pair,
        }
    }

    /// Whether calls may wait on the database.
    pub fn blocks(&self) -> bool {
        self.account.blocks() || self.address.blocks() || self.pair.blocks()
    }

    /// Counts an attempt to sign in as `email` from `address`, before its
    /// password is checked: refused, without counting, when either bound is
    /// already reached, except that an address that has not tried this
    /// account in the window passes the account's bound (once: its attempt
    /// counts); refused too when a concurrent attempt reached a bound
    /// first (the count is what decides, never the check alone). The
    /// refusal is the one that ends later.
    pub fn attempt(
        &self,
        email: &str,
        address: Option<IpAddr>,
        now_ms: i64,
    ) -> Result<Verdict, ThrottleError> {
        self.count(email, address, now_ms, Pass::FreshAddress)
    }

    /// Counts a request that mails the account of `email` (a password
    /// reset, a registration): bounded per email and per address as a
    /// sign-in is, with no pass past the account's bound.
    pub fn mail_request(
        &self,
        email: &str,
        address: Option<IpAddr>,
        now_ms: i64,
    ) -> Result<Verdict, ThrottleError> {
        self.count(email, address, now_ms, Pass::None)
    }

    fn count(
        &self,
        email: &str,
        address: Option<IpAddr>,
        now_ms: i64,
        pass: Pass,
    ) -> Result<Verdict, ThrottleError> {
        let account = account_subject(email);
        let address = address.map(address_subject);
        let pair = match (&address, pass) {
            (Some(a), Pass::FreshAddress) => Some(pair_subject(&account, a)),
            _ => None,
        };
        let mut by_account = self.account.check(&account, now_ms)?.err();
        // Past the account's bound, an address with no attempt on it.
        let fresh = match (&by_account, &pair) {
            (Some(_), Some(p)) => self.pair.check(p, now_ms)?.is_ok(),
            _ => false,
        };
        if fresh {
            by_account = None;
        }
        let checked = [
            by_account,
            match &address {
                Some(a) => self.address.check(a, now_ms)?.err(),
                None => None,
            },
        ];
        if let Some(refused) = later_of(checked) {
            return Ok(Err(refused));
        }
        let by_account = self.account.consume(&account, now_ms)?.err();
        let by_pair = match &pair {
            Some(p) => self.pair.consume(p, now_ms)?.err(),
            None => None,
        };
        let counted = [
            // A fresh address's pass holds for one attempt at a time.
            if fresh { by_pair } else { by_account },
            match &address {
                Some(a) => self.address.consume(a, now_ms)?.err(),
                None => None,
            },
        ];
        Ok(later_of(counted).map_or(Ok(()), Err))
    }

    /// The attempt succeeded: its account starts afresh, and its address
    /// gets its point back (its count is of failures) and no longer counts
    /// as having tried the account.
    pub fn succeeded(
        &self,
        email: &str,
        address: Option<IpAddr>,
        now_ms: i64,
    ) -> Result<(), ThrottleError> {
        let account = account_subject(email);
        self.account.clear(&account)?;
        if let Some(a) = address.map(address_subject) {
            self.address.give_back(&a, now_ms)?;
            self.pair.clear(&pair_subject(&account, &a))?;
        }
        Ok(())
    }

    /// The attempt ended before its credentials were judged (a failure of
    /// the host): its points are given back.
    pub fn not_judged(
        &self,
        email: &str,
        address: Option<IpAddr>,
        now_ms: i64,
    ) -> Result<(), ThrottleError> {
        let account = account_subject(email);
        self.account.give_back(&account, now_ms)?;
        if let Some(a) = address.map(address_subject) {
            self.address.give_back(&a, now_ms)?;
            self.pair.give_back(&pair_subject(&account, &a), now_ms)?;
        }
        Ok(())
    }
}

fn later_of(refusals: [Option<Refusal>; 2]) -> Option<Refusal> {
    let [a, b] = refusals;
    match (a, b) {
        (Some(a), b) => Some(a.later(b)),
        (None, b) => b,
    }
}

/// The host's throttles, as configured.
pub struct Throttle {
    /// Directus's rate limiter: a point per request and client address.
    pub requests: Option<Arc<Limiter>>,
    /// The sign-in throttle.
    pub login: Option<Arc<LoginThrottle>>,
    /// First transformations per caller (see [`transform_subject`]).
    pub transforms: Option<Arc<Limiter>>,
    /// Whether the client address is the one a proxy in front names in
    /// `X-Forwarded-For` (`IP_TRUST_PROXY`).
    pub trust_proxy: bool,
}

impl Throttle {
    /// The throttles `settings` ask for, the shared ones counting in
    /// `store`.
    pub fn new(settings: &Settings, store: &Arc<dyn Store>) -> Self {
        let counter = |kind: StoreKind, length: std::time::Duration| -> Arc<dyn Counter> {
            match kind {
                StoreKind::Memory => Arc::new(memory::MemoryCounter::new(length)),
                StoreKind::Database => {
                    Arc::new(database::DatabaseCounter::new(store.clone(), length))
                }
            }
        };
        let requests = settings.requests.as_ref().map(|r| {
            Arc::new(Limiter::new(
                "requests",
                r.points,
                counter(r.store, r.duration),
            ))
        });
        let login = settings.login.as_ref().map(|l| {
            let shared = counter(l.store, l.duration);
            Arc::new(LoginThrottle::new(
                Limiter::new("login-account", l.account_attempts, shared.clone()),
                Limiter::new("login-address", l.address_attempts, shared.clone()),
                Limiter::new("login-pair", 1, shared),
            ))
        });
        let transforms = settings.transforms.as_ref().map(|t| {
            Arc::new(Limiter::new(
                "transforms",
                t.points,
                counter(t.store, t.duration),
            ))
        });
        Self {
            requests,
            login,
            transforms,
            trust_proxy: settings.trust_proxy,
        }
    }
}

/// The wall clock, in milliseconds since the Unix epoch (hosts sharing a
/// database share windows by it).
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// What every counter does with windows 100 ms long (each store's tests
    /// run it on theirs): a window counts from its first point to its last
    /// millisecond and ends after its length; the next point opens the next.
    pub(super) fn a_window_counts_and_ends(c: &dyn Counter) {
        assert_eq!(
            c.hit("k", 1_000).unwrap(),
            Window {
                points: 1,
                ends_ms: 1_100
            }
        );
        assert_eq!(
            c.hit("k", 1_050).unwrap(),
            Window {
                points: 2,
                ends_ms: 1_100
            }
        );
        assert_eq!(
            c.hit("k", 1_099).unwrap(),
            Window {
                points: 3,
                ends_ms: 1_100
            }
        );
        assert_eq!(c.peek("k", 1_050).unwrap().map(|w| w.points), Some(3));
        assert_eq!(c.peek("k", 1_099).unwrap().map(|w| w.points), Some(3));
        assert_eq!(c.peek("k", 1_100).unwrap(), None);
        assert_eq!(
            c.hit("k", 1_100).unwrap(),
            Window {
                points: 1,
                ends_ms: 1_200
            }
        );
    }

    fn limiter(points: u32) -> Limiter {
        Limiter::new(
            "t",
            points,
            Arc::new(memory::MemoryCounter::new(Duration::from_secs(10))),
        )
    }

    #[test]
    fn a_limiter_refuses_past_its_points_until_the_window_ends() {
        let l = limiter(3);
        for _ in 0..3 {
            assert_eq!(l.consume("a", 1_000).unwrap(), Ok(()));
        }
        let refused = l.consume("a", 4_000).unwrap().unwrap_err();
        assert_eq!(
            refused,
            Refusal {
                limit: 3,
                retry_after_ms: 7_000,
                reset_ms: 11_000
            }
        );
        assert_eq!(l.check("a", 4_000).unwrap(), Err(Refusal { ..refused }));
        // Another key has its own count.
        assert_eq!(l.consume("b", 4_000).unwrap(), Ok(()));
        // The window ends: counting starts again.
        assert_eq!(l.check("a", 11_000).unwrap(), Ok(()));
        assert_eq!(l.consume("a", 11_000).unwrap(), Ok(()));
    }

    #[test]
    fn a_check_counts_nothing() {
        let l = limiter(1);
        for _ in 0..5 {
            assert_eq!(l.check("a", 0).unwrap(), Ok(()));
        }
        assert_eq!(l.consume("a", 0).unwrap(), Ok(()));
        assert!(l.check("a", 0).unwrap().is_err());
    }

    #[test]
    fn keys_are_digests_of_their_subject_within_a_scope() {
        let l = limiter(1);
        let key = l.key("someone@example.com");
        assert!(key.starts_with("t:"), "{key}");
        assert_eq!(key.len(), 2 + 32);
        assert!(!key.contains("example"));
        assert_ne!(key, l.key("someone@example.org"));
    }

    #[test]
    fn addresses_count_by_host_or_ipv6_network() {
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(address_subject(v4), "192.0.2.7");
        assert_eq!(address_subject(mapped), "192.0.2.7");
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_subject(a), address_subject(b));
        assert_ne!(address_subject(a), address_subject(c));
    }

    #[test]
    fn first_transformations_count_per_user_or_else_per_address() {
        let address: Option<IpAddr> = Some("192.0.2.1".parse().unwrap());
        assert_eq!(
            transform_subject(Some("u1"), address),
            Some("user:u1".into())
        );
        assert_eq!(
            transform_subject(None, address),
            Some("address:192.0.2.1".into())
        );
        assert_eq!(transform_subject(None, None), None);
    }

    fn login(account: u32, address: u32) -> LoginThrottle {
        let counter: Arc<dyn Counter> =
            Arc::new(memory::MemoryCounter::new(Duration::from_secs(60)));
        LoginThrottle::new(
            Limiter::new("acc", account, counter.clone()),
            Limiter::new("addr", address, counter.clone()),
            Limiter::new("pair", 1, counter),
        )
    }

    #[test]
    fn sign_ins_are_bounded_per_account_whatever_the_case_of_the_email() {
        let t = login(2, 100);
        let from: Option<IpAddr> = Some("192.0.2.1".parse().unwrap());
        assert_eq!(t.attempt("Ann@Example.com", from, 0).unwrap(), Ok(()));
        assert_eq!(t.attempt(" ann@example.com ", from, 0).unwrap(), Ok(()));
        let refused = t.attempt("ann@example.com", from, 10).unwrap().unwrap_err();
        assert_eq!(refused.limit, 2);
        assert_eq!(refused.retry_after_ms, 59_990);
        // Another account from the same address is not refused.
        assert_eq!(t.attempt("bob@example.com", from, 10).unwrap(), Ok(()));
        // After the window, the account may try again.
        assert_eq!(t.attempt("ann@example.com", from, 60_000).unwrap(), Ok(()));
    }

    #[test]
    fn sign_ins_are_bounded_per_address_across_accounts() {
        let t = login(100, 3);
        let from: Option<IpAddr> = Some("2001:db8::1".parse().unwrap());
        let neighbour: Option<IpAddr> = Some("2001:db8::2".parse().unwrap());
        for i in 0..3 {
            assert_eq!(
                t.attempt(&format!("u{i}@x.example"), from, 0).unwrap(),
                Ok(())
            );
        }
        assert!(t.attempt("u9@x.example", neighbour, 0).unwrap().is_err());
        // Without a known address, only the account counts.
        assert_eq!(t.attempt("u9@x.example", None, 0).unwrap(), Ok(()));
    }

    #[test]
    fn a_success_clears_the_account_and_gives_the_address_its_point_back() {
        let t = login(2, 2);
        let from: Option<IpAddr> = Some("192.0.2.1".parse().unwrap());
        assert_eq!(t.attempt("ann@x.example", from, 0).unwrap(), Ok(()));
        assert_eq!(t.attempt("ann@x.example", from, 0).unwrap(), Ok(()));
        t.succeeded("ann@x.example", from, 0).unwrap();
        // The account starts afresh; the address has one failure left.
        assert_eq!(t.attempt("ann@x.example", from, 0).unwrap(), Ok(()));
        assert!(t.attempt("ann@x.example", from, 0).unwrap().is_err());
    }

    #[test]
    fn past_the_account_bound_an_address_that_has_not_tried_it_gets_one_attempt() {
        let t = login(2, 100);
        let attacker: Option<IpAddr> = Some("192.0.2.1".parse().unwrap());
        let owner: Option<IpAddr> = Some("198.51.100.7".parse().unwrap());
        for _ in 0..2 {
            assert_eq!(t.attempt("ann@x.example", attacker, 0).unwrap(), Ok(()));
        }
        assert!(t.attempt("ann@x.example", attacker, 0).unwrap().is_err());
        // The owner's address has not tried: it passes, once.
        assert_eq!(t.attempt("ann@x.example", owner, 0).unwrap(), Ok(()));
        assert!(t.attempt("ann@x.example", owner, 0).unwrap().is_err());
        // Without a known address there is no pass.
        assert!(t.attempt("ann@x.example", None, 0).unwrap().is_err());
        // A success clears the account and the owner's address.
        let elsewhere: Option<IpAddr> = Some("198.51.100.8".parse().unwrap());
        assert_eq!(t.attempt("ann@x.example", elsewhere, 0).unwrap(), Ok(()));
        t.succeeded("ann@x.example", elsewhere, 0).unwrap();
        assert_eq!(t.attempt("ann@x.example", elsewhere, 0).unwrap(), Ok(()));
    }

    #[test]
    fn mail_requests_are_bounded_per_email_with_no_pass() {
        let t = login(2, 3);
        let from: Option<IpAddr> = Some("192.0.2.1".parse().unwrap());
        let other: Option<IpAddr> = Some("198.51.100.7".parse().unwrap());
        for _ in 0..2 {
            assert_eq!(t.mail_request("Ann@x.example", from, 0).unwrap(), Ok(()));
        }
        assert!(t.mail_request("ann@x.example", from, 0).unwrap().is_err());
        assert!(t.mail_request("ann@x.example", other, 0).unwrap().is_err());
        // And per address, across emails.
        assert_eq!(t.mail_request("bob@x.example", from, 0).unwrap(), Ok(()));
        assert!(t.mail_request("cid@x.example", from, 0).unwrap().is_err());
    }

    #[test]
    fn an_attempt_not_judged_costs_nothing() {
        let t = login(1, 1);
        let from: Option<IpAddr> = Some("192.0.2.1".parse().unwrap());
        for _ in 0..3 {
            assert_eq!(t.attempt("ann@x.example", from, 0).unwrap(), Ok(()));
            t.not_judged("ann@x.example", from, 0).unwrap();
        }
    }

    #[test]
    fn a_refused_attempt_counts_nothing_more() {
        let t = login(1, 5);
        let from: Option<IpAddr> = Some("192.0.2.1".parse().unwrap());
        assert_eq!(t.attempt("ann@x.example", from, 0).unwrap(), Ok(()));
        for _ in 0..10 {
            assert!(t.attempt("ann@x.example", from, 0).unwrap().is_err());
        }
        // The address spent one point only: four other accounts pass.
        for i in 0..4 {
            assert_eq!(
                t.attempt(&format!("u{i}@x.example"), from, 0).unwrap(),
                Ok(())
            );
        }
    }
}
