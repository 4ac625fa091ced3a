//! The items service: reads and writes of any collection, under a caller's
//! permissions or as admin, with the host's special fields, secrets kept
//! out of every answer, and item events after each committed write.

use std::sync::Arc;

use once_cell::sync::OnceCell;
use serde_json::{json, Map, Value};

use crate::auth::{self, Accountability, Auth};
use crate::permissions::{Action, Grant, Permissions};
use crate::platform_schema::{affects_access, is_secret};
use crate::query::{parse_filter, Filter, Op, QueryError, ReadQuery, Vars, WireQuery};
use crate::schema::CollectionDef;
use crate::storage::{Conn, Record, Store, StoreError};
use crate::values;

/// A failure of the items service, with the platform's error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemsError {
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    InvalidQuery(String),
    #[error("{0}")]
    InvalidPayload(String),
    #[error("{0}")]
    NotUnique(String),
    #[error("The database is busy, try again")]
    Unavailable,
    #[error("{0}")]
    Internal(String),
}

impl ItemsError {
    pub fn code(&self) -> &'static str {
        match self {
            ItemsError::Forbidden(_) => "FORBIDDEN",
            ItemsError::NotFound(_) => "NOT_FOUND",
            ItemsError::InvalidQuery(_) => "INVALID_QUERY",
            ItemsError::InvalidPayload(_) => "INVALID_PAYLOAD",
            ItemsError::NotUnique(_) => "RECORD_NOT_UNIQUE",
            ItemsError::Unavailable => "SERVICE_UNAVAILABLE",
            ItemsError::Internal(_) => "INTERNAL",
        }
    }

    pub fn forbidden() -> Self {
        ItemsError::Forbidden("You don't have permission to access this.".into())
    }
}

impl From<StoreError> for ItemsError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotUnique { collection, fields } => {
                ItemsError::NotUnique(not_unique_message(&collection, &fields))
            }
            StoreError::Busy => ItemsError::Unavailable,
            StoreError::Invalid(m) => ItemsError::InvalidPayload(m),
            StoreError::Backend(m) => ItemsError::Internal(m),
            StoreError::Aborted => ItemsError::Internal("transaction aborted".into()),
        }
    }
}

/// A unique violation worded as Directus words it.
fn not_unique_message(collection: &str, fields: &[String]) -> String {
    match fields {
        [field] => {
            format!("Value for field \"{field}\" in collection \"{collection}\" has to be unique.")
        }
        [] => format!("Value in collection \"{collection}\" has to be unique."),
        several => format!(
            "Values for fields {} in collection \"{collection}\" have to be unique together.",
            several
                .iter()
                .map(|f| format!("\"{f}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl From<QueryError> for ItemsError {
    fn from(e: QueryError) -> Self {
        ItemsError::InvalidQuery(e.0)
    }
}

/// What happened, for hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Create,
    Update,
    Delete,
}

impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Create => "items.create",
            EventKind::Update => "items.update",
            EventKind::Delete => "items.delete",
        }
    }
}

/// One committed write.
#[derive(Debug, Clone)]
pub struct ItemEvent {
    pub kind: EventKind,
    pub collection: String,
    pub keys: Vec<String>,
    pub payload: Value,
    pub before: Option<Vec<Record>>,
    pub after: Option<Vec<Record>>,
    pub accountability: Option<Accountability>,
}

/// Receives item events: inside the writing transaction (in-transaction
/// hooks, which may refuse the write) and after the commit.
pub trait EventSink: Send + Sync {
    /// Whether anyone wants the committed events of this collection.
    fn wants(&self, collection: &str) -> bool;
    fn dispatch(&self, platform: &Platform, events: Vec<ItemEvent>);
    /// Whether an in-transaction hook watches the writes of this collection.
    fn wants_before_commit(&self, collection: &str) -> bool;
    /// Runs the in-transaction hooks on a write just made on `conn`; what
    /// they write goes through `conn` too, and their events join `events`.
    /// An error refuses the write: the caller rolls the transaction back.
    fn before_commit(
        &self,
        platform: &Platform,
        conn: &mut dyn Conn,
        events: &mut Vec<ItemEvent>,
        event: &ItemEvent,
    ) -> Result<(), ItemsError>;
}

/// Who an operation runs as.
#[derive(Debug, Clone, Default)]
pub struct Who {
    /// The caller (also used for `user_created` and `$CURRENT_USER`).
    pub accountability: Option<Accountability>,
    /// Bypass permissions (the extension asked for admin access, or the
    /// host itself is writing).
    pub bypass: bool,
}

impl Who {
    pub fn caller(accountability: Option<Accountability>) -> Self {
        Self {
            accountability,
            bypass: false,
        }
    }
    pub fn admin(accountability: Option<Accountability>) -> Self {
        Self {
            accountability,
            bypass: true,
        }
    }
    pub fn system() -> Self {
        Self::admin(None)
    }
    pub fn is_admin(&self) -> bool {
        self.bypass || self.accountability.as_ref().is_some_and(|a| a.admin)
    }
    fn vars(&self) -> Vars {
        Vars::new(self.accountability.as_ref().map(|a| a.user.clone()))
    }
}

/// Where an operation runs: its own transaction, or one already open.
pub enum Session<'s> {
    Auto,
    Tx {
        conn: &'s mut dyn Conn,
        events: &'s mut Vec<ItemEvent>,
    },
}

/// Counters of what the platform does, for `/server/metrics`.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Items-service operations made by extensions.
    pub items_calls: std::sync::atomic::AtomicU64,
    /// Calls of extension route handlers.
    pub extension_calls: std::sync::atomic::AtomicU64,
    /// Item events delivered to extension hooks.
    pub events_delivered: std::sync::atomic::AtomicU64,
    /// Writes handed to in-transaction hooks.
    pub events_before_commit: std::sync::atomic::AtomicU64,
}

/// The platform core shared by every request.
pub struct Platform {
    pub store: Arc<dyn Store>,
    pub auth: Auth,
    pub permissions: Permissions,
    pub metrics: Metrics,
    events: OnceCell<Arc<dyn EventSink>>,
}

fn key_filter(key: &str) -> Filter {
    Filter::Cond {
        field: "id".into(),
        op: Op::Eq,
        value: Value::String(key.to_string()),
    }
}

impl Platform {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            auth: Auth::new(),
            permissions: Permissions::default(),
            metrics: Metrics::default(),
            events: OnceCell::new(),
        }
    }

    /// Connects the receiver of item events (once, after extensions load).
    pub fn set_event_sink(&self, sink: Arc<dyn EventSink>) {
        let _ = self.events.set(sink);
    }

    /// Whether writes to `collection` must produce item events: someone
    /// listens (in the transaction or after it), or the write changes who
    /// may do what (the auth caches are cleared when such events are
    /// delivered, after the commit).
    pub fn wants_events(&self, collection: &str) -> bool {
        affects_access(collection)
            || self
                .events
                .get()
                .is_some_and(|sink| sink.wants(collection) || sink.wants_before_commit(collection))
    }

    /// Records the event of a write just made on `conn`: the in-transaction
    /// hooks run on it first (and may refuse it, failing the write), then it
    /// waits in `events`, ahead of what the hooks wrote, for delivery after
    /// the commit.
    fn record_event(
        &self,
        conn: &mut dyn Conn,
        events: &mut Vec<ItemEvent>,
        event: ItemEvent,
    ) -> Result<(), ItemsError> {
        let at = events.len();
        if let Some(sink) = self
            .events
            .get()
            .filter(|sink| sink.wants_before_commit(&event.collection))
        {
            self.metrics
                .events_before_commit
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            sink.before_commit(self, conn, events, &event)?;
        }
        events.insert(at, event);
        Ok(())
    }

    /// Delivers events of a committed write.
    pub fn dispatch(&self, mut events: Vec<ItemEvent>) {
        if events.iter().any(|e| affects_access(&e.collection)) {
            self.auth.invalidate();
        }
        if let Some(sink) = self.events.get() {
            // Some were built only for in-transaction hooks, which saw them.
            events.retain(|e| sink.wants(&e.collection));
            if events.is_empty() {
                return;
            }
            self.metrics
                .events_delivered
                .fetch_add(events.len() as u64, std::sync::atomic::Ordering::Relaxed);
            sink.dispatch(self, events);
        }
    }

    /// Runs `work` in one write transaction; item events are delivered
    /// after the commit.
    pub fn transaction<T>(
        &self,
        mut work: impl FnMut(&mut Session<'_>) -> Result<T, ItemsError>,
    ) -> Result<T, ItemsError> {
        self.run_write(&mut Session::Auto, |conn, events| {
            let mut session = Session::Tx { conn, events };
            work(&mut session)
        })
    }

    /// Runs `work` once in the life of the database, recorded as
    /// `owner`/`id` among the migrations in the same transaction; returns
    /// whether it ran. Its item events are delivered after the commit.
    pub fn once(
        &self,
        owner: &str,
        id: &str,
        mut work: impl FnMut(&mut Session<'_>) -> Result<(), ItemsError>,
    ) -> Result<bool, ItemsError> {
        let mut events = Vec::new();
        let mut failure = None;
        let ran = self.store.run_once(owner, id, &mut |conn| {
            events.clear();
            let mut session = Session::Tx {
                conn,
                events: &mut events,
            };
            work(&mut session).map_err(|e| {
                failure = Some(e);
                StoreError::Aborted
            })
        });
        match (ran, failure) {
            (_, Some(e)) => Err(e),
            (Err(e), None) => Err(e.into()),
            (Ok(ran), None) => {
                self.dispatch(events);
                Ok(ran)
            }
        }
    }

    fn collection(&self, who: &Who, name: &str) -> Result<Arc<CollectionDef>, ItemsError> {
        match self.store.schema().get(name) {
            Some(def) => Ok(def.clone()),
            None if who.is_admin() => Err(ItemsError::NotFound(format!(
                "Collection \"{name}\" does not exist"
            ))),
            // Do not tell callers which collections exist.
            None => Err(ItemsError::forbidden()),
        }
    }

    /// The grant for an action; `None` when permissions are bypassed.
    fn grant(
        &self,
        who: &Who,
        collection: &str,
        action: Action,
    ) -> Result<Option<Grant>, ItemsError> {
        if who.is_admin() {
            return Ok(None);
        }
        let policies = match &who.accountability {
            Some(acc) => acc.policies.clone(),
            None => self.auth.public_policies(self.store.as_ref())?,
        };
        let set = self.permissions.for_policies(
            self.store.as_ref(),
            &policies,
            self.auth.epoch(self.store.as_ref()),
        )?;
        set.grant(collection, action)
            .map(Some)
            .ok_or_else(ItemsError::forbidden)
    }

    fn grant_filter(
        &self,
        def: &CollectionDef,
        grant: Option<&Grant>,
        vars: &Vars,
    ) -> Result<Option<Filter>, ItemsError> {
        match grant.and_then(|g| g.filter.as_ref()) {
            None => Ok(None),
            Some(raw) => parse_filter(def, raw, vars).map(Some).map_err(|e| {
                ItemsError::Internal(format!("bad permission filter on {}: {e}", def.name))
            }),
        }
    }

    fn run_read<T>(
        &self,
        session: &mut Session<'_>,
        mut work: impl FnMut(&mut dyn Conn) -> Result<T, ItemsError>,
    ) -> Result<T, ItemsError> {
        match session {
            Session::Tx { conn, .. } => work(&mut **conn),
            Session::Auto => {
                let mut out = None;
                let result = self.store.read(&mut |conn| {
                    let r = work(conn);
                    let failed = r.is_err();
                    out = Some(r);
                    if failed {
                        Err(StoreError::Aborted)
                    } else {
                        Ok(())
                    }
                });
                match (result, out) {
                    (_, Some(r)) => r,
                    (Err(e), None) => Err(e.into()),
                    (Ok(()), None) => Err(ItemsError::Internal("read did not run".into())),
                }
            }
        }
    }

    fn run_write<T>(
        &self,
        session: &mut Session<'_>,
        mut work: impl FnMut(&mut dyn Conn, &mut Vec<ItemEvent>) -> Result<T, ItemsError>,
    ) -> Result<T, ItemsError> {
        match session {
            Session::Tx { conn, events } => work(&mut **conn, events),
            Session::Auto => {
                let mut out = None;
                let mut events = Vec::new();
                let result = self.store.write(&mut |conn| {
                    events.clear();
                    let r = work(conn, &mut events);
                    let failed = r.is_err();
                    out = Some(r);
                    if failed {
                        Err(StoreError::Aborted)
                    } else {
                        Ok(())
                    }
                });
                match (result, out) {
                    (Ok(()), Some(Ok(v))) => {
                        self.dispatch(events);
                        Ok(v)
                    }
                    (_, Some(Err(e))) => Err(e),
                    (Err(e), _) => Err(e.into()),
                    (Ok(()), None) => Err(ItemsError::Internal("write did not run".into())),
                }
            }
        }
    }

    /// Builds the read: the caller's query, narrowed to what they may see.
    fn plan_read(
        &self,
        who: &Who,
        def: &CollectionDef,
        wire: &WireQuery,
        default_limit: Option<u64>,
    ) -> Result<ReadQuery, ItemsError> {
        let grant = self.grant(who, &def.name, Action::Read)?;
        let vars = who.vars();
        let mut q = wire.to_read(def, &vars, default_limit)?;
        let explicit = wire
            .fields
            .as_ref()
            .map(|f| f.items())
            .is_some_and(|f| !f.is_empty() && !f.iter().any(|x| x == "*"));
        let mut used = Vec::new();
        if let Some(f) = &q.filter {
            f.fields(&mut used);
        }
        used.extend(q.sort.iter().map(|(f, _)| f.clone()));
        check_queried_fields(&def.name, grant.as_ref(), &used)?;
        if explicit {
            if let Some(g) = &grant {
                if q.fields.iter().any(|f| !g.allows_field(f)) {
                    return Err(ItemsError::forbidden());
                }
            }
        }
        q.fields.retain(|f| {
            !is_secret(&def.name, f) && grant.as_ref().is_none_or(|g| g.allows_field(f))
        });
        if q.fields.is_empty() {
            return Err(ItemsError::forbidden());
        }
        q.filter = Filter::and(
            q.filter.take(),
            self.grant_filter(def, grant.as_ref(), &vars)?,
        );
        Ok(q)
    }

    pub fn read_by_query(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        wire: &WireQuery,
        default_limit: Option<u64>,
    ) -> Result<Vec<Record>, ItemsError> {
        let def = self.collection(who, collection)?;
        let q = self.plan_read(who, &def, wire, default_limit)?;
        self.run_read(session, |conn| Ok(conn.select(&def, &q)?))
    }

    /// [`Platform::read_by_query`] as a JSON array, written without
    /// building records (for the extension boundary, where records cross
    /// as text).
    pub fn read_by_query_json(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        wire: &WireQuery,
    ) -> Result<Vec<u8>, ItemsError> {
        let def = self.collection(who, collection)?;
        let q = self.plan_read(who, &def, wire, None)?;
        self.run_read(session, |conn| {
            let mut out = vec![b'['];
            conn.select_json(&def, &q, &mut out)?;
            out.push(b']');
            Ok(out)
        })
    }

    /// The item with this key; `None` when it does not exist. An item that
    /// exists but is outside the caller's permissions is `Forbidden`.
    pub fn read_one(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        key: &str,
        wire: &WireQuery,
    ) -> Result<Option<Record>, ItemsError> {
        self.read_one_by(session, who, collection, key, wire, |conn, def, q| {
            Ok(conn.select(def, q)?.into_iter().next())
        })
    }

    /// [`Platform::read_one`] as JSON text (`null` when there is no such
    /// item), written without building the record.
    pub fn read_one_json(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        key: &str,
        wire: &WireQuery,
    ) -> Result<Vec<u8>, ItemsError> {
        let found = self.read_one_by(session, who, collection, key, wire, |conn, def, q| {
            let mut out = Vec::new();
            Ok((conn.select_json(def, q, &mut out)? > 0).then_some(out))
        })?;
        Ok(found.unwrap_or_else(|| b"null".to_vec()))
    }

    /// The read of one item by key, with `fetch` running the planned query.
    fn read_one_by<T>(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        key: &str,
        wire: &WireQuery,
        mut fetch: impl FnMut(
            &mut dyn Conn,
            &CollectionDef,
            &ReadQuery,
        ) -> Result<Option<T>, ItemsError>,
    ) -> Result<Option<T>, ItemsError> {
        let def = self.collection(who, collection)?;
        let mut q = self.plan_read(who, &def, wire, None)?;
        q.filter = Filter::and(Some(key_filter(key)), q.filter.take());
        q.limit = Some(1);
        q.offset = 0;
        let admin = who.is_admin();
        self.run_read(session, |conn| {
            if let Some(found) = fetch(conn, &def, &q)? {
                return Ok(Some(found));
            }
            if !admin && exists(conn, &def, key)? {
                return Err(ItemsError::forbidden());
            }
            Ok(None)
        })
    }

    pub fn aggregate(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        wire: &WireQuery,
    ) -> Result<Vec<Record>, ItemsError> {
        let def = self.collection(who, collection)?;
        let grant = self.grant(who, collection, Action::Read)?;
        let vars = who.vars();
        let mut q = wire.to_aggregate(&def, &vars)?;
        let mut used: Vec<String> = q.group_by.iter().map(|g| g.field.clone()).collect();
        used.extend(q.functions.iter().filter_map(|(_, f)| f.clone()));
        if let Some(f) = &q.filter {
            f.fields(&mut used);
        }
        check_queried_fields(collection, grant.as_ref(), &used)?;
        q.filter = Filter::and(
            q.filter.take(),
            self.grant_filter(&def, grant.as_ref(), &vars)?,
        );
        self.run_read(session, |conn| Ok(conn.aggregate(&def, &q)?))
    }

    pub fn create_one(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        data: &Value,
    ) -> Result<String, ItemsError> {
        let keys = self.create(session, who, collection, std::slice::from_ref(data))?;
        keys.into_iter()
            .next()
            .ok_or_else(|| ItemsError::Internal("nothing was created".into()))
    }

    /// Creates every item or none.
    pub fn create_many(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        data: &Value,
    ) -> Result<Vec<String>, ItemsError> {
        let Value::Array(items) = data else {
            return Err(ItemsError::InvalidPayload(
                "payload must be an array".into(),
            ));
        };
        self.create(session, who, collection, items)
    }

    fn create(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        items: &[Value],
    ) -> Result<Vec<String>, ItemsError> {
        let def = self.collection(who, collection)?;
        let grant = self.grant(who, collection, Action::Create)?;
        let records = items
            .iter()
            .map(|item| self.build_create(who, &def, grant.as_ref(), item))
            .collect::<Result<Vec<_>, _>>()?;
        self.run_write(session, |conn, events| {
            let mut keys = Vec::with_capacity(records.len());
            let wanted = self.wants_events(&def.name);
            let schema = self.store.schema();
            for (record, payload) in &records {
                check_references(&schema, conn, &def, record)?;
                conn.insert(&def, record)?;
                let key = record
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                if !wanted {
                    keys.push(key);
                    continue;
                }
                self.record_event(
                    conn,
                    events,
                    ItemEvent {
                        kind: EventKind::Create,
                        collection: def.name.clone(),
                        keys: vec![key.clone()],
                        payload: Value::Object(payload.clone()),
                        before: None,
                        after: Some(vec![public_view(&def, record.clone())]),
                        accountability: who.accountability.clone(),
                    },
                )?;
                keys.push(key);
            }
            Ok(keys)
        })
    }

    /// The record to insert and the payload to report, from a create payload.
    fn build_create(
        &self,
        who: &Who,
        def: &CollectionDef,
        grant: Option<&Grant>,
        item: &Value,
    ) -> Result<(Record, Map<String, Value>), ItemsError> {
        let payload = as_object(item)?;
        let admin = who.is_admin();
        let mut record = Map::new();
        for (name, value) in payload {
            let field = known_field(def, name)?;
            // The host owns these unless an admin imports them.
            if !admin
                && matches!(
                    name.as_str(),
                    "id" | "date_created" | "user_created" | "date_updated"
                )
            {
                continue;
            }
            if grant.is_some_and(|g| !g.allows_field(name)) {
                return Err(ItemsError::forbidden());
            }
            let value =
                values::normalize(field, value, false).map_err(ItemsError::InvalidPayload)?;
            record.insert(name.clone(), self.store_value(def, name, value)?);
        }
        if let Some(g) = grant {
            for (name, value) in &g.presets {
                if let Some(field) = def.field(name) {
                    let value = who.vars_resolve(value);
                    let value = values::normalize(field, &value, false)
                        .map_err(ItemsError::InvalidPayload)?;
                    record.insert(name.clone(), value);
                }
            }
        }
        if !record.get("id").is_some_and(Value::is_string) {
            record.insert("id".into(), Value::String(uuid::Uuid::new_v4().to_string()));
        }
        if def.has("date_created") && record.get("date_created").is_none_or(Value::is_null) {
            record.insert(
                "date_created".into(),
                Value::String(values::now_timestamp()),
            );
        }
        if def.has("user_created") && !record.contains_key("user_created") {
            if let Some(acc) = &who.accountability {
                record.insert("user_created".into(), Value::String(acc.user.clone()));
            }
        }
        for field in &def.fields {
            if !record.contains_key(&field.field) {
                if let Some(default) = &field.default {
                    record.insert(field.field.clone(), default.clone());
                }
            }
            if !field.nullable && record.get(&field.field).is_none_or(Value::is_null) {
                return Err(ItemsError::InvalidPayload(format!(
                    "\"{}\" is required",
                    field.field
                )));
            }
        }
        let mut reported = payload.clone();
        for secret in ["password", "token"] {
            if is_secret(&def.name, secret) {
                reported.remove(secret);
            }
        }
        Ok((record, reported))
    }

    /// Hashes secrets before they are stored.
    fn store_value(
        &self,
        def: &CollectionDef,
        field: &str,
        value: Value,
    ) -> Result<Value, ItemsError> {
        if !is_secret(&def.name, field) {
            return Ok(value);
        }
        match value {
            Value::String(s) if field == "password" => auth::hash_password(&s)
                .map(Value::String)
                .map_err(ItemsError::Internal),
            Value::String(s) => Ok(Value::String(auth::hash_token(&s))),
            other => Ok(other),
        }
    }

    pub fn update_one(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        key: &str,
        data: &Value,
    ) -> Result<String, ItemsError> {
        let def = self.collection(who, collection)?;
        let grant = self.grant(who, collection, Action::Update)?;
        let payload = as_object(data)?;
        let admin = who.is_admin();
        let mut changes = Map::new();
        for (name, value) in payload {
            let field = known_field(&def, name)?;
            if name == "id" {
                if value.as_str() == Some(key) {
                    continue;
                }
                return Err(ItemsError::InvalidPayload(
                    "the key of an item cannot change".into(),
                ));
            }
            if !admin && matches!(name.as_str(), "date_created" | "user_created") {
                continue;
            }
            if grant.as_ref().is_some_and(|g| !g.allows_field(name)) {
                return Err(ItemsError::forbidden());
            }
            let value =
                values::normalize(field, value, false).map_err(ItemsError::InvalidPayload)?;
            if !field.nullable && value.is_null() {
                return Err(ItemsError::InvalidPayload(format!(
                    "\"{name}\" is required"
                )));
            }
            changes.insert(name.clone(), self.store_value(&def, name, value)?);
        }
        if def.has("date_updated") && !changes.contains_key("date_updated") {
            changes.insert(
                "date_updated".into(),
                Value::String(values::now_timestamp()),
            );
        }
        let scope = self.grant_filter(&def, grant.as_ref(), &who.vars())?;
        let mut reported = payload.clone();
        reported.remove("password");
        reported.remove("token");
        self.run_write(session, |conn, events| {
            self.ensure_in_scope(conn, &def, key, scope.as_ref(), admin)?;
            check_references(&self.store.schema(), conn, &def, &changes)?;
            // Nobody listening: no before/after reads, no event.
            if !self.wants_events(&def.name) {
                conn.update(&def, key, &changes)?;
                return Ok(key.to_string());
            }
            let before = select_full(conn, &def, key)?;
            conn.update(&def, key, &changes)?;
            let after = select_full(conn, &def, key)?;
            self.record_event(
                conn,
                events,
                ItemEvent {
                    kind: EventKind::Update,
                    collection: def.name.clone(),
                    keys: vec![key.to_string()],
                    payload: Value::Object(reported.clone()),
                    before: Some(before.into_iter().map(|r| public_view(&def, r)).collect()),
                    after: Some(after.into_iter().map(|r| public_view(&def, r)).collect()),
                    accountability: who.accountability.clone(),
                },
            )?;
            Ok(key.to_string())
        })
    }

    pub fn delete_one(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        key: &str,
    ) -> Result<String, ItemsError> {
        let def = self.collection(who, collection)?;
        let grant = self.grant(who, collection, Action::Delete)?;
        let scope = self.grant_filter(&def, grant.as_ref(), &who.vars())?;
        let admin = who.is_admin();
        self.run_write(session, |conn, events| {
            self.ensure_in_scope(conn, &def, key, scope.as_ref(), admin)?;
            self.release_references(conn, events, &def, key)?;
            if !self.wants_events(&def.name) {
                conn.delete(&def, key)?;
                return Ok(key.to_string());
            }
            let before = select_full(conn, &def, key)?;
            conn.delete(&def, key)?;
            self.record_event(
                conn,
                events,
                ItemEvent {
                    kind: EventKind::Delete,
                    collection: def.name.clone(),
                    keys: vec![key.to_string()],
                    payload: json!([key]),
                    before: Some(before.into_iter().map(|r| public_view(&def, r)).collect()),
                    after: None,
                    accountability: who.accountability.clone(),
                },
            )?;
            Ok(key.to_string())
        })
    }

    /// Applies, before an item is deleted, the rule of every reference to
    /// it ([`OnDelete`](host_sdk::schema::OnDelete)): refuse while referred
    /// to, set the references to null, or delete the referring items. The
    /// changes go through this service in the same transaction, as the
    /// platform itself, so hooks see them and their own references apply.
    fn release_references(
        &self,
        conn: &mut dyn Conn,
        events: &mut Vec<ItemEvent>,
        def: &CollectionDef,
        key: &str,
    ) -> Result<(), ItemsError> {
        use host_sdk::schema::OnDelete;
        let referring = self.store.schema().references_to(&def.name);
        if referring.is_empty() {
            return Ok(());
        }
        let depth = CASCADE_DEPTH.with(std::cell::Cell::get);
        if depth >= MAX_CASCADE_DEPTH {
            return Err(ItemsError::InvalidPayload(format!(
                "Deleting \"{key}\" of \"{}\" cascades more than {MAX_CASCADE_DEPTH} levels deep.",
                def.name
            )));
        }
        CASCADE_DEPTH.with(|d| d.set(depth + 1));
        let outcome = (|| {
            let system = Who::system();
            for (other, field) in referring {
                let mut q = ReadQuery::all_fields(&other);
                q.fields = vec!["id".into()];
                q.filter = Some(Filter::Cond {
                    field: field.field.clone(),
                    op: Op::Eq,
                    value: Value::String(key.to_string()),
                });
                q.limit = None;
                let ids: Vec<String> = conn
                    .select(&other, &q)?
                    .into_iter()
                    .filter_map(|r| r.get("id").and_then(Value::as_str).map(String::from))
                    .collect();
                if ids.is_empty() {
                    continue;
                }
                let mut session = Session::Tx {
                    conn: &mut *conn,
                    events: &mut *events,
                };
                match field.delete_rule() {
                    OnDelete::Refuse => {
                        return Err(ItemsError::InvalidPayload(format!(
                            "Item \"{key}\" of \"{}\" cannot be deleted: {} item(s) of \"{}\" refer to it through \"{}\".",
                            def.name,
                            ids.len(),
                            other.name,
                            field.field
                        )))
                    }
                    OnDelete::SetNull => {
                        for id in &ids {
                            let cleared = json!({ field.field.as_str(): null });
                            self.update_one(&mut session, &system, &other.name, id, &cleared)?;
                        }
                    }
                    OnDelete::Cascade => {
                        for id in &ids {
                            self.delete_one(&mut session, &system, &other.name, id)?;
                        }
                    }
                }
            }
            Ok(())
        })();
        CASCADE_DEPTH.with(|d| d.set(depth));
        outcome
    }

    /// The item exists and the permission filter admits it.
    fn ensure_in_scope(
        &self,
        conn: &mut dyn Conn,
        def: &CollectionDef,
        key: &str,
        scope: Option<&Filter>,
        admin: bool,
    ) -> Result<(), ItemsError> {
        let mut q = ReadQuery::all_fields(def);
        q.fields = vec!["id".into()];
        q.filter = Filter::and(Some(key_filter(key)), scope.cloned());
        q.limit = Some(1);
        if !conn.select(def, &q)?.is_empty() {
            return Ok(());
        }
        if admin {
            Err(ItemsError::NotFound(format!("Item \"{key}\" not found")))
        } else {
            // Same answer whether it is missing or not theirs.
            Err(ItemsError::forbidden())
        }
    }
}

impl Who {
    fn vars_resolve(&self, v: &Value) -> Value {
        match v {
            Value::String(s) if s == "$CURRENT_USER" => self
                .accountability
                .as_ref()
                .map(|a| Value::String(a.user.clone()))
                .unwrap_or(Value::Null),
            Value::String(s) if s == "$NOW" => Value::String(values::now_timestamp()),
            other => other.clone(),
        }
    }
}

/// Fields a query filters, sorts, groups or aggregates by: never a secret,
/// and only fields the grant allows.
fn check_queried_fields(
    collection: &str,
    grant: Option<&Grant>,
    used: &[String],
) -> Result<(), ItemsError> {
    for field in used {
        if is_secret(collection, field) {
            return Err(ItemsError::InvalidQuery(format!(
                "cannot query by \"{field}\""
            )));
        }
        if grant.is_some_and(|g| !g.allows_field(field)) {
            return Err(ItemsError::forbidden());
        }
    }
    Ok(())
}

fn as_object(data: &Value) -> Result<&Map<String, Value>, ItemsError> {
    data.as_object()
        .ok_or_else(|| ItemsError::InvalidPayload("payload must be an object".into()))
}

fn known_field<'d>(
    def: &'d CollectionDef,
    name: &str,
) -> Result<&'d crate::schema::Field, ItemsError> {
    def.field(name).ok_or_else(|| {
        ItemsError::InvalidPayload(format!(
            "unknown field \"{name}\" in collection \"{}\"",
            def.name
        ))
    })
}

/// Every reference a write sets must name an existing item (checked in the
/// write's transaction, so the item cannot vanish in between).
fn check_references(
    schema: &crate::schema::Schema,
    conn: &mut dyn Conn,
    def: &CollectionDef,
    values: &Map<String, Value>,
) -> Result<(), ItemsError> {
    for (name, value) in values {
        let Some(key) = value.as_str() else {
            continue;
        };
        let Some(target) = def.field(name).and_then(|f| f.references.as_deref()) else {
            continue;
        };
        let Some(target_def) = schema.get(target) else {
            continue;
        };
        if !exists(conn, target_def, key)? {
            return Err(ItemsError::InvalidPayload(format!(
                "Invalid foreign key for field \"{name}\" in collection \"{}\": no item of \"{target}\" has the key \"{key}\".",
                def.name
            )));
        }
    }
    Ok(())
}

/// How deep deletes may cascade (a cycle of cascading references ends here).
const MAX_CASCADE_DEPTH: usize = 16;

thread_local! {
    static CASCADE_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn exists(conn: &mut dyn Conn, def: &CollectionDef, key: &str) -> Result<bool, ItemsError> {
    let mut q = ReadQuery::all_fields(def);
    q.fields = vec!["id".into()];
    q.filter = Some(key_filter(key));
    q.limit = Some(1);
    Ok(!conn.select(def, &q)?.is_empty())
}

fn select_full(
    conn: &mut dyn Conn,
    def: &CollectionDef,
    key: &str,
) -> Result<Vec<Record>, ItemsError> {
    let mut q = ReadQuery::all_fields(def);
    q.filter = Some(key_filter(key));
    q.limit = Some(1);
    Ok(conn.select(def, &q)?)
}

/// A record without its secrets.
pub fn public_view(def: &CollectionDef, mut record: Record) -> Record {
    record.retain(|k, _| !is_secret(&def.name, k));
    record
}
