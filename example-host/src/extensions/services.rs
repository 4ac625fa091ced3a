//! The host's side of `HostServices`: the items service, handed to an
//! extension for the duration of one call.

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::sabi_types::{RMut, RRef};
use abi_stable::std_types::{RErr, ROk, ROption, RResult, RStr, RString};
use host_sdk::abi::{
    FfiAccess, FfiAccountability, FfiContext, FfiError, HostServices, HostServices_TO,
    TransactionBody_TO,
};
use parking_lot::Mutex;

use crate::accounts::CallerAccount;
use crate::items::{Session, Who};
use crate::platform::Platform;
use crate::platform::{PlatformError, WriteEvent};
use platform_store::query::WireQuery;
use platform_store::storage::{StoreError, Writer};

struct TxState<'a> {
    conn: &'a mut dyn Writer,
    events: &'a mut Vec<WriteEvent>,
}

/// Services for one extension call; bound to an open transaction when
/// handed to a transaction body.
pub struct ExtServices<'a> {
    platform: &'a Platform,
    accountability: Option<CallerAccount>,
    tx: Option<Mutex<TxState<'a>>>,
}

pub fn ffi_accountability(a: &CallerAccount) -> FfiAccountability {
    FfiAccountability {
        user: a.user.as_str().into(),
        role: a.role.as_deref().map(RString::from).into(),
        admin: a.admin,
    }
}

fn ffi_error(e: &PlatformError) -> FfiError {
    FfiError {
        code: e.code().into(),
        message: e.to_string().into(),
    }
}

fn to_text<T: serde::Serialize>(value: &T) -> Result<RString, PlatformError> {
    serde_json::to_string(value)
        .map(RString::from)
        .map_err(|e| PlatformError::Internal(e.to_string()))
}

impl<'a> ExtServices<'a> {
    pub fn new(platform: &'a Platform, accountability: Option<CallerAccount>) -> Self {
        Self {
            platform,
            accountability,
            tx: None,
        }
    }

    /// Services bound to an open transaction (for in-transaction hooks):
    /// what they read sees the transaction's writes, what they write joins it.
    pub fn bound(
        platform: &'a Platform,
        accountability: Option<CallerAccount>,
        conn: &'a mut dyn Writer,
        events: &'a mut Vec<WriteEvent>,
    ) -> Self {
        Self {
            platform,
            accountability,
            tx: Some(Mutex::new(TxState { conn, events })),
        }
    }

    /// The caller these services act for.
    pub fn accountability(&self) -> Option<&CallerAccount> {
        self.accountability.as_ref()
    }

    /// The FFI context of a call made with these services.
    pub fn context(&self) -> FfiContext<'_> {
        FfiContext {
            accountability: self.accountability.as_ref().map(ffi_accountability).into(),
            services: HostServices_TO::from_ptr(RRef::new(self), TD_Opaque),
        }
    }

    fn who(&self, access: FfiAccess) -> Who {
        match access {
            FfiAccess::Caller => Who::caller(self.accountability.clone()),
            FfiAccess::Admin => Who::admin(self.accountability.clone()),
        }
    }

    fn run<T: serde::Serialize>(
        &self,
        access: FfiAccess,
        op: impl FnOnce(&Platform, &mut Session<'_>, &Who) -> Result<T, PlatformError>,
    ) -> RResult<RString, FfiError> {
        self.run_then(access, op, |v| to_text(&v))
    }

    /// `run` for operations that write their JSON text themselves.
    fn run_json(
        &self,
        access: FfiAccess,
        op: impl FnOnce(&Platform, &mut Session<'_>, &Who) -> Result<Vec<u8>, PlatformError>,
    ) -> RResult<RString, FfiError> {
        self.run_then(access, op, |bytes| {
            String::from_utf8(bytes)
                .map(RString::from)
                .map_err(|e| PlatformError::Internal(e.to_string()))
        })
    }

    fn run_then<T>(
        &self,
        access: FfiAccess,
        op: impl FnOnce(&Platform, &mut Session<'_>, &Who) -> Result<T, PlatformError>,
        to_text: impl FnOnce(T) -> Result<RString, PlatformError>,
    ) -> RResult<RString, FfiError> {
        self.platform
            .metrics
            .items_calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let who = self.who(access);
        let result = match &self.tx {
            Some(tx) => {
                let mut state = tx.lock();
                let state = &mut *state;
                let mut session = Session::Tx {
                    conn: &mut *state.conn,
                    events: &mut *state.events,
                };
                op(self.platform, &mut session, &who)
            }
            None => op(self.platform, &mut Session::Auto, &who),
        };
        match result.and_then(to_text) {
            Ok(text) => ROk(text),
            Err(e) => RErr(ffi_error(&e)),
        }
    }
}

impl HostServices for ExtServices<'_> {
    fn read_by_query(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        query: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        self.run_json(access, |p, s, who| {
            let q = WireQuery::from_json(query.as_str())?;
            p.read_by_query_json(s, who, collection.as_str(), &q, None)
        })
    }

    fn read_one(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        key: RStr<'_>,
        query: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        self.run_json(access, |p, s, who| {
            let q = WireQuery::from_json(query.as_str())?;
            p.read_one_json(s, who, collection.as_str(), key.as_str(), &q)
                .map(|found| found.unwrap_or_else(|| b"null".to_vec()))
        })
    }

    fn create_one(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        data: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        self.run(access, |p, s, who| {
            p.create_one_json(s, who, collection.as_str(), data.as_str())
        })
    }

    fn create_many(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        data: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        self.run(access, |p, s, who| {
            p.create_many_json(s, who, collection.as_str(), data.as_str())
        })
    }

    fn update_one(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        key: RStr<'_>,
        data: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        self.run(access, |p, s, who| {
            p.update_one_json(s, who, collection.as_str(), key.as_str(), data.as_str())
        })
    }

    fn delete_one(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        key: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        self.run(access, |p, s, who| {
            p.delete_one(s, who, collection.as_str(), key.as_str())
        })
    }

    fn aggregate(
        &self,
        access: FfiAccess,
        collection: RStr<'_>,
        query: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        self.run(access, |p, s, who| {
            let q = WireQuery::from_json(query.as_str())?;
            p.aggregate(s, who, collection.as_str(), &q)
        })
    }

    fn transaction(&self, mut body: TransactionBody_TO<'_, RMut<'_, ()>>) -> RResult<(), FfiError> {
        if self.tx.is_some() {
            // Nested: join the open transaction.
            return body.run(HostServices_TO::from_ptr(RRef::new(self), TD_Opaque));
        }
        let mut events = Vec::new();
        let mut failure: Option<FfiError> = None;
        let result = self.platform.store.write(&mut |conn| {
            // The store runs this again from the start after a conflict
            // with another process's transaction (see the storage
            // contract): the body runs again, unless it may run only once
            // (`Context::transaction_once`; `Context::transaction` of SDK
            // 1.0 to 1.9), and then the caller is told the database is busy.
            events.clear();
            failure = None;
            let bound = ExtServices::bound(
                self.platform,
                self.accountability.clone(),
                conn,
                &mut events,
            );
            match body.run(HostServices_TO::from_ptr(RRef::new(&bound), TD_Opaque)) {
                ROk(()) => Ok(()),
                RErr(e) if e.is_run_once_refusal() => Err(StoreError::Busy),
                RErr(e) => {
                    failure = Some(e);
                    Err(StoreError::Aborted)
                }
            }
        });
        match (result, failure) {
            (_, Some(e)) => RErr(e),
            (Ok(()), None) => {
                self.platform.dispatch(events);
                ROk(())
            }
            (Err(e), None) => RErr(ffi_error(&PlatformError::from(e))),
        }
    }
}

/// `ROption` of an accountability, for FFI structs.
pub fn ffi_accountability_opt(a: Option<&CallerAccount>) -> ROption<FfiAccountability> {
    a.map(ffi_accountability).into()
}
