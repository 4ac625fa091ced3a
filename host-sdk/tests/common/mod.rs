//! What the SDK's integration tests share.

use abi_stable::sabi_types::RMut;
use abi_stable::std_types::{RErr, RResult, RStr, RString};
use host_sdk::abi::{FfiAccess, FfiError, TransactionBody_TO};
use host_sdk::direct::Services;

/// Services that refuse everything: the handlers here read no items.
pub struct NoServices;

fn refused() -> RResult<RString, FfiError> {
    RErr(FfiError {
        code: "UNAVAILABLE".into(),
        message: "no services in this test".into(),
    })
}

impl Services for NoServices {
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
    fn transaction(&self, _: TransactionBody_TO<'_, RMut<'_, ()>>) -> RResult<(), FfiError> {
        RErr(FfiError {
            code: "UNAVAILABLE".into(),
            message: "no services in this test".into(),
        })
    }
}
