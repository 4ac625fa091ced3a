//! The context of one call into the extension: who is calling, and the
//! host's services.

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use std::cell::Cell;
use std::time::SystemTime;

use abi_stable::sabi_trait::TD_Opaque;

use crate::router::DataVersion;
use abi_stable::sabi_types::{RMut, RRef};
use abi_stable::std_types::{RErr, ROk, RResult};

use crate::abi::{
    FfiAccountability, FfiError, HostServices_TO, TransactionBody, TransactionBody_TO,
};
use crate::error::ItemsError;
use crate::items::{Access, Items, Services};

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accountability {
    /// The user's id.
    pub user: String,
    /// The user's role id.
    pub role: Option<String>,
    /// Whether the user has admin access.
    pub admin: bool,
}

impl Accountability {
    pub(crate) fn from_ffi(a: &FfiAccountability) -> Self {
        Self {
            user: a.user.to_string(),
            role: a.role.as_ref().map(|r| r.to_string()).into_option(),
            admin: a.admin,
        }
    }
}

/// What a handler, hook or schedule receives besides its arguments.
pub struct Context<'a> {
    accountability: Option<Accountability>,
    services: &'a dyn Services,
    fresh_until: Cell<Option<SystemTime>>,
    /// Set by the router when the answer being built goes to its cache.
    answer_kept: Cell<bool>,
    data_version: Option<&'a DataVersion>,
}

impl<'a> Context<'a> {
    pub(crate) fn new(accountability: Option<Accountability>, services: &'a dyn Services) -> Self {
        Self {
            accountability,
            services,
            fresh_until: Cell::new(None),
            answer_kept: Cell::new(false),
            data_version: None,
        }
    }

    /// Lets the handler see the host's data version (see [`Context::data_version`]).
    pub(crate) fn with_data_version(mut self, source: Option<&'a DataVersion>) -> Self {
        self.data_version = source;
        self
    }

    /// A number that changes whenever anything commits a change to the
    /// stored data, from any process; `None` when the host does not report
    /// one (SDK < 1.3, or its cache is switched off). See [`crate::Memo`].
    pub fn data_version(&self) -> Option<u64> {
        self.data_version.map(|source| source())
    }

    /// Says that the answer being built holds only until `until` even if no
    /// data changes (it depends on the clock: things scheduled to appear).
    /// Matters for [`Route::cached`](crate::Route::cached) routes; the
    /// earliest of several calls wins.
    pub fn fresh_until(&self, until: SystemTime) {
        let earliest = match self.fresh_until.get() {
            Some(t) if t <= until => t,
            _ => until,
        };
        self.fresh_until.set(Some(earliest));
    }

    /// Whether the answer being built will be kept by the answer cache
    /// (a `.cached()` route, an anonymous `GET`, a host reporting its data
    /// version): only then does [`Context::fresh_until`] matter, so work
    /// done only to find that time can be skipped otherwise.
    pub fn answer_is_kept(&self) -> bool {
        self.answer_kept.get()
    }

    pub(crate) fn keep_answer(&self) {
        self.answer_kept.set(true);
    }

    /// What [`Context::fresh_until`] said, if anything.
    pub(crate) fn freshness(&self) -> Option<SystemTime> {
        self.fresh_until.get()
    }

    /// The authenticated caller, or `None` when anonymous.
    pub fn accountability(&self) -> Option<&Accountability> {
        self.accountability.as_ref()
    }

    /// The caller's user id, or `None` when anonymous.
    pub fn user_id(&self) -> Option<&str> {
        self.accountability.as_ref().map(|a| a.user.as_str())
    }

    /// Item services with the given access.
    pub fn items(&self, access: Access) -> Items<'a> {
        Items {
            services: self.services,
            access,
        }
    }

    /// Item services under the caller's permissions.
    pub fn as_caller(&self) -> Items<'a> {
        self.items(Access::Caller)
    }

    /// Item services with full access. The caller is still recorded: an
    /// item created this way has the signed-in caller as `user_created`
    /// (none when the request is anonymous, or in a hook or schedule
    /// without one), and `$CURRENT_USER` in a filter is the caller.
    pub fn as_admin(&self) -> Items<'a> {
        self.items(Access::Admin)
    }

    /// Runs `work` in one database transaction: every write it makes through
    /// the context it receives is committed together when it returns `Ok`,
    /// and none is when it returns `Err` or panics. Item events of the writes
    /// are delivered after the commit.
    ///
    /// When the database asks for the transaction to be run again (it
    /// conflicted with a concurrent one of another host: a serialization
    /// failure, a deadlock), the host rolls it back and runs `work` again
    /// from the start, a few times with random pauses, before it gives up
    /// with `SERVICE_UNAVAILABLE`. The value of the run that committed is
    /// returned.
    ///
    /// `work` must act only through the context it receives (or reset what
    /// it collects at its start): a run that was rolled back left nothing
    /// in the database, and must leave nothing behind in memory either.
    /// Work that must not run twice (it sends a mail, it consumes a value)
    /// uses [`Context::transaction_once`].
    ///
    /// ```no_run
    /// # use host_sdk::{Context, ItemsError};
    /// # use serde_json::json;
    /// # fn f(ctx: &Context<'_>, video: &str) -> Result<(), ItemsError> {
    /// ctx.transaction(|tx| {
    ///     let items = tx.as_admin();
    ///     items.create_one("video_plays", &json!({ "video_id": video }))?;
    ///     Ok::<_, ItemsError>(())
    /// })
    /// # }
    /// ```
    ///
    /// SDK 1.10; it was `retryable_transaction` (SDK 1.7), and
    /// `transaction` was [`Context::transaction_once`]. Hosts before SDK
    /// 1.7 run a transaction's work once, whichever method started it.
    pub fn transaction<T, E, F>(&self, mut work: F) -> Result<T, E>
    where
        F: FnMut(&Context<'_>) -> Result<T, E>,
        E: From<ItemsError>,
    {
        self.run_transaction(&mut |ctx| Some(work(ctx)))
    }

    /// [`Context::transaction`] for work that may run only once (SDK 1.10;
    /// the `transaction` of SDK 1.0 to 1.9). When the database refuses the
    /// transaction because it conflicted with one of another host
    /// (PostgreSQL with several hosts on one database), the caller gets an
    /// error with the code `SERVICE_UNAVAILABLE` instead of a second run.
    pub fn transaction_once<T, E, F>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&Context<'_>) -> Result<T, E>,
        E: From<ItemsError>,
    {
        let mut work = Some(work);
        self.run_transaction(&mut |ctx| work.take().map(|work| work(ctx)))
    }

    /// The name [`Context::transaction`] had from SDK 1.7 to 1.9; the
    /// same method.
    #[deprecated(since = "1.10.0", note = "use `Context::transaction` (it retries)")]
    pub fn retryable_transaction<T, E, F>(&self, work: F) -> Result<T, E>
    where
        F: FnMut(&Context<'_>) -> Result<T, E>,
        E: From<ItemsError>,
    {
        self.transaction(work)
    }

    /// Hands `work` to the host's transaction; `work` answers `None` when
    /// it may not run again.
    fn run_transaction<T, E>(
        &self,
        work: &mut dyn FnMut(&Context<'_>) -> Option<Result<T, E>>,
    ) -> Result<T, E>
    where
        E: From<ItemsError>,
    {
        let mut body = Body {
            work,
            accountability: self.accountability.clone(),
            outcome: None,
            panic: None,
        };
        let host_result = self.services.transaction(TransactionBody_TO::from_ptr(
            RMut::new(&mut body),
            TD_Opaque,
        ));
        if let Some(payload) = body.panic.take() {
            resume_unwind(payload);
        }
        match (host_result, body.outcome) {
            (_, Some(Err(e))) => Err(e),
            (ROk(()), Some(Ok(value))) => Ok(value),
            // The work succeeded but the commit failed, or the transaction
            // never started.
            (RErr(e), _) => Err(ItemsError::from_ffi(e).into()),
            (ROk(()), None) => Err(ItemsError::Other {
                code: "INTERNAL".into(),
                message: "the host committed a transaction without running it".into(),
            }
            .into()),
        }
    }
}

struct Body<'w, T, E> {
    work: &'w mut dyn FnMut(&Context<'_>) -> Option<Result<T, E>>,
    accountability: Option<Accountability>,
    /// The outcome of the last run.
    outcome: Option<Result<T, E>>,
    panic: Option<Box<dyn Any + Send>>,
}

impl<T, E> TransactionBody for Body<'_, T, E> {
    fn run(&mut self, tx: HostServices_TO<'_, RRef<'_, ()>>) -> RResult<(), FfiError> {
        // No data version inside: what the work reads may never commit.
        let ctx = Context::new(self.accountability.clone(), &tx);
        let work = &mut self.work;
        match catch_unwind(AssertUnwindSafe(|| work(&ctx))) {
            Ok(None) => RErr(FfiError::run_once_refusal()),
            Ok(Some(Ok(value))) => {
                self.outcome = Some(Ok(value));
                ROk(())
            }
            Ok(Some(Err(e))) => {
                self.outcome = Some(Err(e));
                RErr(FfiError {
                    code: "ROLLBACK".into(),
                    message: "the transaction's work failed".into(),
                })
            }
            Err(payload) => {
                self.panic = Some(payload);
                RErr(FfiError {
                    code: "ROLLBACK".into(),
                    message: "the transaction's work panicked".into(),
                })
            }
        }
    }
}
