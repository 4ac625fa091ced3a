//! What the SDK's integration tests share.

use std::sync::Mutex;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::sabi_types::{RMut, RRef};
use abi_stable::std_types::{RErr, RResult, RStr, RString};
use host_sdk::abi::{FfiAccess, FfiError, HostServices, HostServices_TO, TransactionBody_TO};

/// Services that refuse every items call: the handlers here read no items.
/// Transactions are refused too, unless [`NoServices::rerunning`].
#[derive(Default)]
pub struct NoServices {
    /// Set by [`NoServices::rerunning`]: what each run of a transaction's
    /// body answered.
    reruns: Option<Mutex<Vec<Result<(), FfiError>>>>,
}

// Not every test file runs transactions.
#[allow(dead_code)]
impl NoServices {
    /// Services whose every transaction is rolled back once and run again,
    /// as after a serialization failure.
    pub fn rerunning() -> Self {
        Self {
            reruns: Some(Mutex::new(Vec::new())),
        }
    }

    /// What each run of a transaction's body answered, in order.
    pub fn runs(&self) -> Vec<Result<(), FfiError>> {
        self.reruns
            .as_ref()
            .map(|r| r.lock().expect("runs").clone())
            .unwrap_or_default()
    }
}

fn refused() -> RResult<RString, FfiError> {
    RErr(FfiError {
        code: "UNAVAILABLE".into(),
        message: "no services in this test".into(),
    })
}

impl HostServices for NoServices {
    fn read_by_query(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        refused()
    }
    fn read_one(
        &self,
        _: FfiAccess,
        _: RStr<'_>,
        _: RStr<'_>,
        _: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        refused()
    }
    fn create_one(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        refused()
    }
    fn create_many(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        refused()
    }
    fn update_one(
        &self,
        _: FfiAccess,
        _: RStr<'_>,
        _: RStr<'_>,
        _: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        refused()
    }
    fn delete_one(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        refused()
    }
    fn aggregate(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        refused()
    }
    fn transaction(&self, mut body: TransactionBody_TO<'_, RMut<'_, ()>>) -> RResult<(), FfiError> {
        let Some(reruns) = &self.reruns else {
            return refused().map(drop);
        };
        let mut last = RResult::ROk(());
        for _ in 0..2 {
            last = body.run(HostServices_TO::from_ptr(RRef::new(self), TD_Opaque));
            reruns
                .lock()
                .expect("runs")
                .push(last.clone().into_result());
        }
        match last {
            // What the host answers when a one-shot body meets a conflict.
            RErr(e) if e.is_run_once_refusal() => RErr(FfiError {
                code: "SERVICE_UNAVAILABLE".into(),
                message: "The database is busy, try again".into(),
            }),
            other => other,
        }
    }
}
