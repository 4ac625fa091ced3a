//! The platform's operations: every read and write the items service
//! offers (HTTP handlers, the extensions' calls, jobs and the demo all go
//! through these), listed here once with what each does. Their bodies and
//! helpers live by concern in the sibling modules; building a [`Platform`]
//! and connecting it at start are in `crate::platform`.

use serde_json::Value;

use super::{events, many, read, write, Session, Who};
use std::sync::Arc;

use crate::permissions::{CollectionGrant, PermissionSet};
use crate::platform::{Platform, PlatformError, WriteEvent};
use platform_store::query::WireQuery;
use platform_store::storage::Record;

impl Platform {
    /// Runs `work` in one write transaction; item events are delivered
    /// after the commit.
    pub fn transaction<T>(
        &self,
        work: impl FnMut(&mut Session<'_>) -> Result<T, PlatformError>,
    ) -> Result<T, PlatformError> {
        super::transaction(self, work)
    }

    /// Runs `work` once in the life of the database, recorded as
    /// `owner`/`id` among the migrations in the same transaction; returns
    /// whether it ran. Its item events are delivered after the commit.
    pub fn once(
        &self,
        owner: &str,
        id: &str,
        work: impl FnMut(&mut Session<'_>) -> Result<(), PlatformError>,
    ) -> Result<bool, PlatformError> {
        super::once(self, owner, id, work)
    }

    /// The collections the caller may read (some items of, at least) that
    /// exist and are served; `None` when they may read everything.
    pub fn readable_collections(&self, who: &Who) -> Result<Option<Vec<String>>, PlatformError> {
        super::readable_collections(self, who)
    }

    /// What the caller may read of `collection`: `None` when permissions
    /// are bypassed; forbidden when they may read none of it.
    pub fn read_grant(
        &self,
        who: &Who,
        collection: &str,
    ) -> Result<Option<CollectionGrant>, PlatformError> {
        super::read_grant(self, who, collection)
    }

    /// What the caller's policies (the public ones, for an anonymous
    /// caller) permit, for every collection.
    pub fn permission_set(&self, who: &Who) -> Result<Arc<PermissionSet>, PlatformError> {
        self.permissions_of(who)
    }

    /// Whether `collection` exists and is served (to an administrator).
    pub fn has_collection(&self, collection: &str) -> bool {
        super::has_collection(self, collection)
    }

    /// Whether writes to `collection` must produce item events: someone
    /// listens (in the transaction or after it), or the write changes who
    /// may do what (the auth caches are cleared when such events are
    /// delivered, after the commit).
    pub fn wants_events(&self, collection: &str) -> bool {
        events::wants_events(self, collection)
    }

    /// Delivers events of a committed write.
    pub fn dispatch(&self, events: Vec<WriteEvent>) {
        events::dispatch(self, events)
    }

    /// The comments a caller may see: those on the items they may read
    /// (their collection, and that item under the caller's row rule on
    /// it), as a filter of `platform_comments`; `None` for an
    /// administrator, who sees every comment. A collection the caller
    /// reads whole is one condition on `collection`; one under a row rule
    /// is read once for the keys the rule admits, so that a list of
    /// comments stays one query.
    pub fn comment_scope(
        &self,
        session: &mut Session<'_>,
        who: &Who,
    ) -> Result<Option<Value>, PlatformError> {
        read::comment_scope(self, session, who)
    }

    /// Reads `collection` whatever the caller's policies say of it, within
    /// `scope` (the route's own rule, ANDed with the caller's filter),
    /// while every condition and field through a relation is read under
    /// the caller's permissions: for routes that decide themselves what
    /// of a collection a caller sees (`/comments`).
    pub fn read_scoped_json(
        &self,
        session: &mut Session<'_>,
        caller: &Who,
        collection: &str,
        wire: &WireQuery,
        scope: Option<Value>,
        default_limit: Option<u64>,
    ) -> Result<Vec<u8>, PlatformError> {
        read::read_scoped_json(
            self,
            session,
            caller,
            collection,
            wire,
            scope,
            default_limit,
        )
    }

    /// One item of such a read, `None` when it is missing or out of scope.
    pub fn read_scoped_one_json(
        &self,
        session: &mut Session<'_>,
        caller: &Who,
        collection: &str,
        key: &str,
        wire: &WireQuery,
        scope: Option<Value>,
    ) -> Result<Option<Vec<u8>>, PlatformError> {
        read::read_scoped_one_json(self, session, caller, collection, key, wire, scope)
    }

    /// Aggregates `collection` as [`Platform::read_scoped_json`] reads it.
    pub fn aggregate_scoped(
        &self,
        session: &mut Session<'_>,
        caller: &Who,
        collection: &str,
        wire: &WireQuery,
        scope: Option<Value>,
    ) -> Result<Vec<Record>, PlatformError> {
        read::aggregate_scoped(self, session, caller, collection, wire, scope)
    }

    pub fn read_by_query(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        wire: &WireQuery,
        default_limit: Option<u64>,
    ) -> Result<Vec<Record>, PlatformError> {
        read::read_by_query(self, session, who, collection, wire, default_limit)
    }

    /// [`Platform::read_by_query`] as a JSON array, written without
    /// building records (stored JSON documents are copied as stored): for
    /// the extension boundary and the HTTP API, where records leave as
    /// text.
    pub fn read_by_query_json(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        wire: &WireQuery,
        default_limit: Option<u64>,
    ) -> Result<Vec<u8>, PlatformError> {
        read::read_by_query_json(self, session, who, collection, wire, default_limit)
    }

    /// The item with this key as JSON text, written without building the
    /// record; `None` when it does not exist. An item that exists but is
    /// outside the caller's permissions is `Forbidden`.
    pub fn read_one_json(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        key: &str,
        wire: &WireQuery,
    ) -> Result<Option<Vec<u8>>, PlatformError> {
        read::read_one_json(self, session, who, collection, key, wire)
    }

    /// The caller's own record (`/users/me`), as JSON text: the record
    /// itself whatever the policies say of its collection, and everything
    /// its `fields` and `filter` reach under the caller's permissions, so
    /// that one's own record is no way around them (docs/decisions.md §9).
    /// `None` when it does not exist or the filter leaves it out.
    pub fn read_own_json(
        &self,
        session: &mut Session<'_>,
        caller: &Who,
        collection: &str,
        key: &str,
        wire: &WireQuery,
    ) -> Result<Option<Vec<u8>>, PlatformError> {
        read::read_own_json(self, session, caller, collection, key, wire)
    }

    pub fn aggregate(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        wire: &WireQuery,
    ) -> Result<Vec<Record>, PlatformError> {
        read::aggregate(self, session, who, collection, wire)
    }

    /// Creates one item from a payload given as a JSON value.
    pub fn create_one(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        data: &Value,
    ) -> Result<String, PlatformError> {
        write::create_one(self, session, who, collection, data)
    }

    /// Creates one item from a payload given as JSON text (an object).
    pub fn create_one_json(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        data: &str,
    ) -> Result<String, PlatformError> {
        write::create_one_json(self, session, who, collection, data)
    }

    /// Creates every item or none, from a JSON array of payloads.
    pub fn create_many_json(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        data: &str,
    ) -> Result<Vec<String>, PlatformError> {
        write::create_many_json(self, session, who, collection, data)
    }

    /// [`Platform::create_many_json`] of at most `max` items: a longer
    /// array is refused before anything is read or written (one array is
    /// one transaction, which holds the writer while it runs).
    pub fn create_many_json_at_most(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        data: &str,
        max: usize,
    ) -> Result<Vec<String>, PlatformError> {
        write::create_many_json_at_most(self, session, who, collection, data, max)
    }

    /// Updates one item from a payload given as a JSON value.
    pub fn update_one(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        key: &str,
        data: &Value,
    ) -> Result<String, PlatformError> {
        write::update_one(self, session, who, collection, key, data)
    }

    /// Updates one item from a payload given as JSON text (an object).
    pub fn update_one_json(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        key: &str,
        data: &str,
    ) -> Result<String, PlatformError> {
        write::update_one_json(self, session, who, collection, key, data)
    }

    pub fn delete_one(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        key: &str,
    ) -> Result<String, PlatformError> {
        write::delete_one(self, session, who, collection, key)
    }

    /// Updates the items `body` names (see the module's doc) in one
    /// transaction; answers their keys, in order.
    pub fn update_many_json(
        &self,
        who: &Who,
        collection: &str,
        body: &str,
        max: usize,
        default_limit: u64,
    ) -> Result<Vec<String>, PlatformError> {
        many::update_many_json(self, who, collection, body, max, default_limit)
    }

    /// Deletes the items `body` names (a list of keys, `{"keys"}` or
    /// `{"query"}`) in one transaction; answers their keys.
    pub fn delete_many(
        &self,
        who: &Who,
        collection: &str,
        body: &str,
        max: usize,
        default_limit: u64,
    ) -> Result<Vec<String>, PlatformError> {
        many::delete_many(self, who, collection, body, max, default_limit)
    }
}
