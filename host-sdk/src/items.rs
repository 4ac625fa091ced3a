//! The items client: the platform's item services behind ordinary Rust.

use abi_stable::std_types::{RResult, RStr, RString};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::{value::RawValue, Map, Value};

use crate::abi::{FfiAccess, FfiError};
use crate::error::{ApiError, ItemsError};
use crate::raw::JsonOut;

/// Whose rights an items operation runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The caller's permissions (the `Public` policy when anonymous).
    Caller,
    /// Full access, bypassing permissions.
    Admin,
}

impl From<Access> for FfiAccess {
    fn from(a: Access) -> Self {
        match a {
            Access::Caller => FfiAccess::Caller,
            Access::Admin => FfiAccess::Admin,
        }
    }
}

/// A query of the items service (the platform's query language).
///
/// `filter` uses the platform's filter rules (`{"field": {"_eq": value}}`,
/// `_and`, `_or`, `$CURRENT_USER`, `$NOW`); `sort` names fields, `-` for
/// descending. Without `limit` every matching item is returned.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Query {
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Only the items matching this filter (docs/decisions.md §4 operators).
    pub filter: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    /// Sort fields, `-` for descending.
    pub sort: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// At most this many items; `-1` for all.
    pub limit: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Skip this many items.
    pub offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// The page (1-based) of `limit` items.
    pub page: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Only these fields (paths through references and aliases allowed).
    pub fields: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Aggregate functions: `{"count": ["*"]}`.
    pub aggregate: Option<Map<String, Value>>,
    #[serde(rename = "groupBy", skip_serializing_if = "Vec::is_empty")]
    /// Group aggregates by these fields.
    pub group_by: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    /// Fields left out of those `fields` names (SDK 1.17; paths through
    /// relations, 1.18; see [`Query::without`]).
    pub without: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    /// One-to-many aliases written as what their records lead to (SDK
    /// 1.20; see [`Query::flatten`]).
    pub flatten: Vec<String>,
}

impl Query {
    /// Every item, every field, the host's default limit.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the filter.
    pub fn filter(mut self, filter: Value) -> Self {
        self.filter = Some(filter);
        self
    }
    /// Sets the sort fields (`-` for descending).
    pub fn sort<S: AsRef<str>>(mut self, fields: &[S]) -> Self {
        self.sort = fields.iter().map(|s| s.as_ref().to_string()).collect();
        self
    }
    /// Sets the limit (`-1`: all).
    pub fn limit(mut self, limit: i64) -> Self {
        self.limit = Some(limit);
        self
    }
    /// Sets the offset.
    pub fn offset(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }
    /// Sets the page.
    pub fn page(mut self, page: u64) -> Self {
        self.page = Some(page);
        self
    }
    /// Sets the fields read.
    pub fn fields<S: AsRef<str>>(mut self, fields: &[S]) -> Self {
        self.fields = Some(fields.iter().map(|s| s.as_ref().to_string()).collect());
        self
    }
    /// Adds an aggregate function (`count`, `countDistinct`, `sum`, `avg`,
    /// `min`, `max`) over fields (`*` for `count`).
    pub fn aggregate<S: AsRef<str>>(mut self, function: &str, fields: &[S]) -> Self {
        let list = fields
            .iter()
            .map(|s| Value::String(s.as_ref().to_string()))
            .collect();
        self.aggregate
            .get_or_insert_with(Map::new)
            .insert(function.to_string(), Value::Array(list));
        self
    }
    /// Sets the fields aggregates are grouped by.
    pub fn group_by<S: AsRef<str>>(mut self, fields: &[S]) -> Self {
        self.group_by = fields.iter().map(|s| s.as_ref().to_string()).collect();
        self
    }

    /// Leaves these fields of the collection out of those read (SDK 1.17):
    /// out of `*` (the default) or out of a list. They are not read, not
    /// written into the answer, not followed through a relation. So a
    /// public answer asks for "every field but the private ones" without
    /// knowing every field an administrator may add, and passes the host's
    /// text through as it is. The key (`id`) cannot be left out, nor a
    /// field the collection does not have (`INVALID_QUERY`); a host older
    /// than 1.17 refuses such a query the same way.
    ///
    /// A path leaves a field out of the records a relation leads to (SDK
    /// 1.18): `fields(&["*", "author.*"]).without(&["author.email"])`. The
    /// relation must be one `fields` follows; a host older than 1.18
    /// refuses the path (`INVALID_QUERY`), so nothing private is read by
    /// mistake there either.
    pub fn without<S: AsRef<str>>(mut self, fields: &[S]) -> Self {
        self.without = fields.iter().map(|s| s.as_ref().to_string()).collect();
        self
    }

    /// Writes one-to-many aliases as what their records lead to (SDK
    /// 1.20): with `fields(&["*", "models.platform_users_id.*"])`,
    /// `flatten(&["models.platform_users_id"])` answers each video's
    /// `models` as the list of the users its links name (a link naming
    /// none, or a user the reader may not see, left out) instead of the
    /// list of the links. A many-to-many relation then reads as its
    /// records, and an answer of that shape passes through as the host
    /// wrote it. Each path is an alias `fields` follows and a field of its
    /// records that `fields` reads (`INVALID_QUERY` otherwise); a host
    /// older than 1.20 refuses the query the same way.
    pub fn flatten<S: AsRef<str>>(mut self, paths: &[S]) -> Self {
        self.flatten = paths.iter().map(|s| s.as_ref().to_string()).collect();
        self
    }

    fn to_json(&self) -> String {
        // A Query holds only JSON-representable values.
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string())
    }
}

/// The host's item services as the facade calls them: object-safe, with the
/// lifetimes of the FFI trait object erased. Every `HostServices`
/// implementation is one, so a host that links an extension into its own
/// process (see [`crate::direct`]) passes its implementation directly.
///
/// Each method is the `HostServices` method of the same name: `a` the
/// access, `c` the collection, `k` a key, `q` a query and `d` a payload as
/// JSON text; the answer is JSON text.
#[allow(missing_docs)] // described above, one for all
pub trait Services {
    fn read_by_query(&self, a: FfiAccess, c: RStr<'_>, q: RStr<'_>) -> RResult<RString, FfiError>;
    fn read_one(
        &self,
        a: FfiAccess,
        c: RStr<'_>,
        k: RStr<'_>,
        q: RStr<'_>,
    ) -> RResult<RString, FfiError>;
    fn create_one(&self, a: FfiAccess, c: RStr<'_>, d: RStr<'_>) -> RResult<RString, FfiError>;
    fn create_many(&self, a: FfiAccess, c: RStr<'_>, d: RStr<'_>) -> RResult<RString, FfiError>;
    fn update_one(
        &self,
        a: FfiAccess,
        c: RStr<'_>,
        k: RStr<'_>,
        d: RStr<'_>,
    ) -> RResult<RString, FfiError>;
    fn delete_one(&self, a: FfiAccess, c: RStr<'_>, k: RStr<'_>) -> RResult<RString, FfiError>;
    fn aggregate(&self, a: FfiAccess, c: RStr<'_>, q: RStr<'_>) -> RResult<RString, FfiError>;
    fn transaction(
        &self,
        body: crate::abi::TransactionBody_TO<'_, abi_stable::sabi_types::RMut<'_, ()>>,
    ) -> RResult<(), FfiError>;
}

impl<T: crate::abi::HostServices + ?Sized> Services for T {
    fn read_by_query(&self, a: FfiAccess, c: RStr<'_>, q: RStr<'_>) -> RResult<RString, FfiError> {
        crate::abi::HostServices::read_by_query(self, a, c, q)
    }
    fn read_one(
        &self,
        a: FfiAccess,
        c: RStr<'_>,
        k: RStr<'_>,
        q: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        crate::abi::HostServices::read_one(self, a, c, k, q)
    }
    fn create_one(&self, a: FfiAccess, c: RStr<'_>, d: RStr<'_>) -> RResult<RString, FfiError> {
        crate::abi::HostServices::create_one(self, a, c, d)
    }
    fn create_many(&self, a: FfiAccess, c: RStr<'_>, d: RStr<'_>) -> RResult<RString, FfiError> {
        crate::abi::HostServices::create_many(self, a, c, d)
    }
    fn update_one(
        &self,
        a: FfiAccess,
        c: RStr<'_>,
        k: RStr<'_>,
        d: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        crate::abi::HostServices::update_one(self, a, c, k, d)
    }
    fn delete_one(&self, a: FfiAccess, c: RStr<'_>, k: RStr<'_>) -> RResult<RString, FfiError> {
        crate::abi::HostServices::delete_one(self, a, c, k)
    }
    fn aggregate(&self, a: FfiAccess, c: RStr<'_>, q: RStr<'_>) -> RResult<RString, FfiError> {
        crate::abi::HostServices::aggregate(self, a, c, q)
    }
    fn transaction(
        &self,
        body: crate::abi::TransactionBody_TO<'_, abi_stable::sabi_types::RMut<'_, ()>>,
    ) -> RResult<(), FfiError> {
        crate::abi::HostServices::transaction(self, body)
    }
}

/// The item services with one access mode. Get one from
/// [`Context::as_caller`](crate::Context::as_caller) or
/// [`Context::as_admin`](crate::Context::as_admin).
///
/// A method's name is the operation (`read_by_query`, `read_one`,
/// `create_one`, `aggregate`, ...), its answer JSON values; a suffix
/// changes only what comes back or what goes in: `_as::<T>` decodes the
/// answer into a type of yours, `_raw` gives the host's JSON text
/// unparsed (for answers passed on without building trees), `_with` takes
/// one argument more (a [`Query`]), `_or(.., refusal)` answers `refusal`
/// alike for a missing item and one outside the access in use.
#[derive(Clone, Copy)]
pub struct Items<'a> {
    pub(crate) services: &'a dyn Services,
    pub(crate) access: Access,
}

fn decode<T: DeserializeOwned>(what: &str, text: RString) -> Result<T, ItemsError> {
    serde_json::from_str(&text).map_err(|e| ItemsError::decode(what, e))
}

fn encode<T: Serialize + ?Sized>(value: &T) -> Result<String, ItemsError> {
    serde_json::to_string(value).map_err(|e| ItemsError::InvalidPayload(e.to_string()))
}

fn key_string(key: Value) -> String {
    match key {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

impl<'a> Items<'a> {
    fn access(&self) -> FfiAccess {
        self.access.into()
    }

    /// Records matching `query`, as JSON objects.
    pub fn read_by_query(&self, collection: &str, query: &Query) -> Result<Vec<Value>, ItemsError> {
        self.read_by_query_as(collection, query)
    }

    /// Records matching `query`, decoded into `T`.
    pub fn read_by_query_as<T: DeserializeOwned>(
        &self,
        collection: &str,
        query: &Query,
    ) -> Result<Vec<T>, ItemsError> {
        decode("records", self.read_rstring(collection, query)?)
    }

    /// Records matching `query` as the host's JSON text (an array of
    /// objects), unparsed: read it with
    /// [`RawRecord::parse_list`](crate::raw::RawRecord::parse_list) to
    /// borrow the members instead of building trees of them (SDK 1.10;
    /// `read_text` before).
    pub fn read_by_query_raw(&self, collection: &str, query: &Query) -> Result<String, ItemsError> {
        Ok(self.read_rstring(collection, query)?.into_string())
    }

    /// [`Items::read_by_query_raw`] under its earlier name.
    #[deprecated(since = "1.10.0", note = "use `read_by_query_raw`")]
    pub fn read_text(&self, collection: &str, query: &Query) -> Result<String, ItemsError> {
        self.read_by_query_raw(collection, query)
    }

    fn read_rstring(&self, collection: &str, query: &Query) -> Result<RString, ItemsError> {
        let q = query.to_json();
        self.services
            .read_by_query(self.access(), collection.into(), q.as_str().into())
            .into_result()
            .map_err(ItemsError::from_ffi)
    }

    /// The item with this key, or `None`.
    pub fn read_one(&self, collection: &str, key: &str) -> Result<Option<Value>, ItemsError> {
        self.read_one_with(collection, key, &Query::new())
    }

    /// The item with this key, or `refusal` when it is missing *or* outside
    /// the access in use (SDK 1.8): one answer for both, so a caller cannot
    /// learn which ids exist (the platform's `/items` answers 403 for
    /// both). `read_one` tells them apart, for code that may.
    pub fn read_one_or(
        &self,
        collection: &str,
        key: &str,
        refusal: ApiError,
    ) -> Result<Value, ApiError> {
        match self.read_one(collection, key) {
            Ok(Some(item)) => Ok(item),
            Ok(None) | Err(ItemsError::Forbidden(_)) | Err(ItemsError::NotFound(_)) => Err(refusal),
            Err(e) => Err(e.into()),
        }
    }

    /// The item with this key (limited to `query.fields`), decoded into `T`.
    pub fn read_one_with<T: DeserializeOwned>(
        &self,
        collection: &str,
        key: &str,
        query: &Query,
    ) -> Result<Option<T>, ItemsError> {
        decode("record", self.read_one_text(collection, key, query)?)
    }

    /// The host's answer to a read by key: a JSON record or `null`.
    fn read_one_text(
        &self,
        collection: &str,
        key: &str,
        query: &Query,
    ) -> Result<RString, ItemsError> {
        let q = query.to_json();
        self.services
            .read_one(
                self.access(),
                collection.into(),
                key.into(),
                q.as_str().into(),
            )
            .into_result()
            .map_err(ItemsError::from_ffi)
    }

    /// The item with this key as the host's JSON text, unparsed, or
    /// `None`: for answers that pass a record on as it is
    /// ([`Response::ok_raw`](crate::Response::ok_raw)), without
    /// building and printing a tree of it. Only checked to be JSON.
    pub fn read_one_raw(
        &self,
        collection: &str,
        key: &str,
    ) -> Result<Option<Box<RawValue>>, ItemsError> {
        let out = self.read_one_text(collection, key, &Query::new())?;
        let raw = RawValue::from_string(out.into_string())
            .map_err(|e| ItemsError::decode("record", e))?;
        Ok((raw.get() != "null").then_some(raw))
    }

    /// The item with this key as the host's JSON text in a [`JsonOut`],
    /// or `None`: [`Items::read_one_raw`] without checking the text again.
    /// The host wrote it as JSON; a record holding a large document (a
    /// recording's 120 KB of events) would cost a whole parse for nothing
    /// when it is only passed on as the answer (SDK 1.14).
    pub fn read_one_as_answer(
        &self,
        collection: &str,
        key: &str,
    ) -> Result<Option<JsonOut>, ItemsError> {
        let text = self.read_one_text(collection, key, &Query::new())?;
        let text = text.as_str().trim();
        Ok((text != "null" && !text.is_empty()).then(|| JsonOut::of_text(text)))
    }

    /// Creates one item; returns its key.
    pub fn create_one<T: Serialize + ?Sized>(
        &self,
        collection: &str,
        data: &T,
    ) -> Result<String, ItemsError> {
        let d = encode(data)?;
        let out = self
            .services
            .create_one(self.access(), collection.into(), d.as_str().into())
            .into_result()
            .map_err(ItemsError::from_ffi)?;
        decode::<Value>("key", out).map(key_string)
    }

    /// Creates several items atomically; returns their keys in order.
    pub fn create_many<T: Serialize>(
        &self,
        collection: &str,
        data: &[T],
    ) -> Result<Vec<String>, ItemsError> {
        let d = encode(data)?;
        let out = self
            .services
            .create_many(self.access(), collection.into(), d.as_str().into())
            .into_result()
            .map_err(ItemsError::from_ffi)?;
        let keys: Vec<Value> = decode("keys", out)?;
        Ok(keys.into_iter().map(key_string).collect())
    }

    /// Applies changes to one item; returns its key.
    pub fn update_one<T: Serialize + ?Sized>(
        &self,
        collection: &str,
        key: &str,
        data: &T,
    ) -> Result<String, ItemsError> {
        let d = encode(data)?;
        let out = self
            .services
            .update_one(
                self.access(),
                collection.into(),
                key.into(),
                d.as_str().into(),
            )
            .into_result()
            .map_err(ItemsError::from_ffi)?;
        decode::<Value>("key", out).map(key_string)
    }

    /// Deletes one item.
    pub fn delete_one(&self, collection: &str, key: &str) -> Result<(), ItemsError> {
        self.services
            .delete_one(self.access(), collection.into(), key.into())
            .into_result()
            .map_err(ItemsError::from_ffi)?;
        Ok(())
    }

    /// Deletes one item, answering `refusal` when it does not exist or
    /// these services may not delete it (SDK 1.9), so that a caller cannot
    /// tell someone else's item from a missing one: with
    /// [`crate::Context::as_caller`] and a grant limited to the caller's
    /// own items, an owner-only delete. Other failures keep their meaning.
    pub fn delete_one_or(
        &self,
        collection: &str,
        key: &str,
        refusal: ApiError,
    ) -> Result<(), ApiError> {
        match self.delete_one(collection, key) {
            Ok(()) => Ok(()),
            Err(ItemsError::Forbidden(_)) | Err(ItemsError::NotFound(_)) => Err(refusal),
            Err(e) => Err(e.into()),
        }
    }

    /// Aggregate rows for a query with [`Query::aggregate`] (and optionally
    /// [`Query::group_by`]).
    pub fn aggregate(&self, collection: &str, query: &Query) -> Result<Vec<Value>, ItemsError> {
        decode("aggregate", self.aggregate_rstring(collection, query)?)
    }

    /// [`Items::aggregate`]'s rows as the host's JSON text, unparsed (see
    /// [`Items::read_by_query_raw`]; SDK 1.10, `aggregate_text` before).
    pub fn aggregate_raw(&self, collection: &str, query: &Query) -> Result<String, ItemsError> {
        Ok(self.aggregate_rstring(collection, query)?.into_string())
    }

    /// [`Items::aggregate_raw`] under its earlier name.
    #[deprecated(since = "1.10.0", note = "use `aggregate_raw`")]
    pub fn aggregate_text(&self, collection: &str, query: &Query) -> Result<String, ItemsError> {
        self.aggregate_raw(collection, query)
    }

    fn aggregate_rstring(&self, collection: &str, query: &Query) -> Result<RString, ItemsError> {
        let q = query.to_json();
        self.services
            .aggregate(self.access(), collection.into(), q.as_str().into())
            .into_result()
            .map_err(ItemsError::from_ffi)
    }

    /// Number of items matching `filter` (`None`: all items).
    pub fn count(&self, collection: &str, filter: Option<Value>) -> Result<u64, ItemsError> {
        let mut query = Query::new().aggregate("count", &["*"]);
        query.filter = filter;
        let rows = self.aggregate(collection, &query)?;
        Ok(rows
            .first()
            .and_then(|row| row.get("count"))
            .and_then(Value::as_u64)
            .unwrap_or(0))
    }
}
