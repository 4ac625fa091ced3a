//! Writes: creates, updates and deletes under the caller's grant, with the
//! host's own fields, hashed secrets, checked values and references, and
//! the item events of each write.
//!
//! A payload arrives as JSON text and stays text where it is large: its
//! members are borrowed from it ([`Payload`]), a JSON field's document is
//! checked and stored as text ([`values::json_document`]), and the item
//! event carries the payload and the records as text. Only the small
//! members (strings, numbers) are parsed.
//!
//! The order of a write (docs/extensions.md, "The order of a write"): the
//! writer's grant on the collection (and, for an update or a delete, on the
//! item); the before-write hooks of extensions, which may change the
//! payload or refuse; the payload checked against the collection and the
//! writer's field rules; the reference rules; the write; the
//! in-transaction hooks; the commit; the after-commit hooks.

use std::borrow::Cow;
use std::collections::BTreeMap;

use host_sdk::raw::RawRecord;
use serde_json::value::RawValue;

use super::references::{check_references, ReferenceScopes};
use super::*;
use platform_store::schema::{Field, FieldType};
use platform_store::storage::codec::{self, Scalar};
use platform_store::storage::Columns;

/// A write's payload: the members of a JSON object, each still its text.
struct Payload<'a>(BTreeMap<String, &'a RawValue>);

impl<'a> Payload<'a> {
    /// The members of a JSON object, found as the text is checked (one
    /// scan). Text that is not JSON is refused as such before any other
    /// JSON value is refused for not being an object.
    fn parse(text: &'a str) -> Result<Self, PlatformError> {
        let text = text.trim();
        if !text.starts_with('{') {
            check_json(text)?;
            return Err(PlatformError::InvalidPayload(
                "payload must be an object".into(),
            ));
        }
        serde_json::from_str(text).map(Self).map_err(invalid_json)
    }

    /// The payload a before-write hook changed `reported` to (`changed`, a
    /// JSON object), with this payload's secrets, which the hook did not
    /// see, kept as given.
    fn changed_by_hooks(&self, collection: &str, changed: &str) -> Result<String, PlatformError> {
        let mut members: BTreeMap<String, Box<RawValue>> =
            serde_json::from_str(changed).map_err(|e| {
                PlatformError::Internal(format!(
                    "a before-write hook's payload is not an object: {e}"
                ))
            })?;
        for (name, raw) in &self.0 {
            if is_secret(collection, name) {
                members.insert(name.clone(), (*raw).to_owned());
            }
        }
        serde_json::to_string(&members).map_err(|e| PlatformError::Internal(e.to_string()))
    }

    /// The payload as hooks see it: the members as given, without the
    /// collection's secrets.
    fn reported(&self, collection: &str, fields: &EventFields) -> String {
        let shown: BTreeMap<&str, &RawValue> = self
            .0
            .iter()
            .filter(|(name, _)| !is_secret(collection, name) && fields.keeps(name))
            .map(|(name, raw)| (name.as_str(), *raw))
            .collect();
        serde_json::to_string(&shown).unwrap_or_else(|_| "{}".into())
    }
}

/// Refuses text that is not one JSON value.
fn check_json(text: &str) -> Result<(), PlatformError> {
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map(drop)
        .map_err(invalid_json)
}

fn invalid_json(e: serde_json::Error) -> PlatformError {
    PlatformError::InvalidPayload(format!("invalid payload JSON: {e}"))
}

impl Platform {
    fn create(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        items: Vec<Payload<'_>>,
    ) -> Result<Vec<String>, PlatformError> {
        let def = self.collection(who, collection)?;
        let grant = self.grant(who, collection, Action::Create)?;
        // Checked before the write starts. Each row is dropped once
        // inserted (a large JSON document is not kept through the hooks),
        // and built again if the store runs the write again.
        let mut rows = items
            .iter()
            .map(|item| self.build_create(who, &def, grant.as_ref(), item).map(Some))
            .collect::<Result<Vec<_>, _>>()?;
        let scopes = self.reference_scopes(who, &def, items.iter().flat_map(|i| i.0.keys()))?;
        let filtered = self.wants_before_write(&def.name);
        let wanted = self.wants_events(&def.name);
        let fields = self.event_fields(&def.name);
        self.run_write(session, |conn, events| {
            let target = Created {
                who,
                def: &def,
                schema: self.store.schema(),
                wanted,
                fields: &fields,
            };
            let mut keys = Vec::with_capacity(rows.len());
            for (row, item) in rows.iter_mut().zip(&items) {
                let changed = if filtered {
                    let write = pending(
                        who,
                        EventKind::Create,
                        &def,
                        Vec::new(),
                        item.reported(&def.name, &EventFields::All),
                    );
                    self.before_write(conn, events, write)?
                } else {
                    None
                };
                let key = match changed {
                    None => {
                        let row = match row.take() {
                            Some(row) => row,
                            None => self.build_create(who, &def, grant.as_ref(), item)?,
                        };
                        self.insert_created(conn, events, &target, row, &scopes, item)?
                    }
                    Some(changed) => {
                        let text = item.changed_by_hooks(&def.name, &changed)?;
                        let item = Payload::parse(&text)?;
                        let row = self.build_create(who, &def, grant.as_ref(), &item)?;
                        let scopes = self.reference_scopes(who, &def, item.0.keys())?;
                        self.insert_created(conn, events, &target, row, &scopes, &item)?
                    }
                };
                keys.push(key);
            }
            Ok(keys)
        })
    }

    /// Inserts one checked row of a create (its references checked first)
    /// and records its event; the new key.
    fn insert_created(
        &self,
        conn: &mut dyn Writer,
        events: &mut Vec<WriteEvent>,
        target: &Created<'_>,
        row: Columns,
        scopes: &ReferenceScopes,
        item: &Payload<'_>,
    ) -> Result<String, PlatformError> {
        let Created {
            who,
            def,
            schema,
            wanted,
            fields,
        } = target;
        if def.name == COMMENTS {
            self.ensure_comment_target(
                conn,
                who,
                text_of(&row, "collection"),
                text_of(&row, "item"),
            )?;
        }
        self.check_permission_write(conn, who, def, None, &row)?;
        access_rules::check_user_write(def, &row)?;
        check_references(schema, conn, def, &row, scopes)?;
        conn.insert(def, &row)?;
        let key = match row.get("id") {
            Some(Scalar::Text(key)) => key.clone(),
            _ => String::new(),
        };
        if *wanted {
            let after = format!("[{}]", public_json(def, &row, fields));
            drop(row);
            self.record_event(
                conn,
                events,
                WriteEvent {
                    kind: EventKind::Create,
                    collection: def.name.clone(),
                    keys: vec![key.clone()],
                    payload: item.reported(&def.name, fields).into(),
                    before: None,
                    after: Some(after.into()),
                    accountability: who.accountability.clone(),
                },
            )?;
        }
        Ok(key)
    }

    /// The values to insert, from a create payload.
    fn build_create(
        &self,
        who: &Who,
        def: &CollectionDef,
        grant: Option<&CollectionGrant>,
        payload: &Payload<'_>,
    ) -> Result<Columns, PlatformError> {
        let admin = who.is_admin();
        let mut row = Columns::new();
        // Hashed last, once everything else is known to be valid: hashing
        // a password is slow on purpose.
        let mut secrets = Vec::new();
        for (name, raw) in &payload.0 {
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
                return Err(PlatformError::forbidden());
            }
            if is_secret(&def.name, name) {
                secrets.push((name, field, *raw));
                continue;
            }
            row.insert(name.clone(), self.column_value(def, field, raw)?);
        }
        if let Some(g) = grant {
            for (name, value) in &g.presets {
                if let Some(field) = def.field(name) {
                    let value = who.vars_resolve(value);
                    let value = values::normalize(field, &value, false)
                        .map_err(PlatformError::InvalidPayload)?;
                    row.insert(name.clone(), codec::to_scalar(field, &value));
                }
            }
        }
        if !matches!(row.get("id"), Some(Scalar::Text(_))) {
            row.insert("id".into(), Scalar::Text(uuid::Uuid::new_v4().to_string()));
        }
        if def.has("date_created") && matches!(row.get("date_created"), None | Some(Scalar::Null)) {
            row.insert("date_created".into(), Scalar::Text(values::now_timestamp()));
        }
        if def.has("user_created") && !row.contains_key("user_created") {
            if let Some(acc) = &who.accountability {
                row.insert("user_created".into(), Scalar::Text(acc.user.clone()));
            }
        }
        for field in &def.fields {
            if !row.contains_key(&field.field) {
                if let Some(default) = &field.default {
                    row.insert(field.field.clone(), codec::to_scalar(field, default));
                }
            }
            let secret = secrets.iter().any(|(name, _, _)| **name == field.field);
            if !field.nullable
                && !secret
                && matches!(row.get(&field.field), None | Some(Scalar::Null))
            {
                return Err(PlatformError::InvalidPayload(format!(
                    "\"{}\" is required",
                    field.field
                )));
            }
        }
        for (name, field, raw) in secrets {
            row.insert(name.clone(), self.column_value(def, field, raw)?);
        }
        Ok(row)
    }

    /// What the column of `field` stores for a member given as `raw`: a
    /// JSON document as its checked text, anything else parsed, checked
    /// against its type, and hashed when it is a secret.
    fn column_value(
        &self,
        def: &CollectionDef,
        field: &Field,
        raw: &RawValue,
    ) -> Result<Scalar, PlatformError> {
        if field.kind == FieldType::Json {
            let stored =
                values::json_document(field, raw.get()).map_err(PlatformError::InvalidPayload)?;
            return Ok(stored.map_or(Scalar::Null, Scalar::Text));
        }
        let value: Value = serde_json::from_str(raw.get()).map_err(invalid_json)?;
        let value =
            values::normalize(field, &value, false).map_err(PlatformError::InvalidPayload)?;
        let value = crate::platform_schema::host_value(&def.name, &field.field, value)
            .map_err(PlatformError::InvalidPayload)?;
        let value = self.store_value(def, &field.field, value)?;
        Ok(codec::to_scalar(field, &value))
    }

    /// Hashes secrets before they are stored.
    fn store_value(
        &self,
        def: &CollectionDef,
        field: &str,
        value: Value,
    ) -> Result<Value, PlatformError> {
        if !is_secret(&def.name, field) {
            return Ok(value);
        }
        match value {
            Value::String(s) if field == "password" => credentials::hash_password(&s)
                .map(Value::String)
                .map_err(PlatformError::Internal),
            Value::String(s) => Ok(Value::String(credentials::hash_token(&s))),
            other => Ok(other),
        }
    }

    /// The columns an update payload changes, checked against the
    /// collection and the writer's field rules.
    fn build_update(
        &self,
        who: &Who,
        def: &CollectionDef,
        grant: Option<&CollectionGrant>,
        key: &str,
        payload: &Payload<'_>,
    ) -> Result<Columns, PlatformError> {
        let admin = who.is_admin();
        let mut changes = Columns::new();
        // Hashed last, as on create.
        let mut secrets = Vec::new();
        for (name, raw) in &payload.0 {
            let field = known_field(def, name)?;
            if name == "id" {
                if serde_json::from_str::<&str>(raw.get()).ok() == Some(key) {
                    continue;
                }
                return Err(PlatformError::InvalidPayload(
                    "the key of an item cannot change".into(),
                ));
            }
            if !admin && matches!(name.as_str(), "date_created" | "user_created") {
                continue;
            }
            if grant.is_some_and(|g| !g.allows_field(name)) {
                return Err(PlatformError::forbidden());
            }
            if is_secret(&def.name, name) {
                secrets.push((name, field, *raw));
                continue;
            }
            let value = self.column_value(def, field, raw)?;
            if !field.nullable && value == Scalar::Null {
                return Err(PlatformError::InvalidPayload(format!(
                    "\"{name}\" is required"
                )));
            }
            changes.insert(name.clone(), value);
        }
        for (name, field, raw) in secrets {
            changes.insert(name.clone(), self.column_value(def, field, raw)?);
        }
        if def.has("date_updated") && !changes.contains_key("date_updated") {
            changes.insert("date_updated".into(), Scalar::Text(values::now_timestamp()));
        }
        Ok(changes)
    }
}

pub(super) fn create_one(
    platform: &Platform,
    session: &mut Session<'_>,
    who: &Who,
    collection: &str,
    data: &Value,
) -> Result<String, PlatformError> {
    platform.create_one_json(session, who, collection, &data.to_string())
}

pub(super) fn create_one_json(
    platform: &Platform,
    session: &mut Session<'_>,
    who: &Who,
    collection: &str,
    data: &str,
) -> Result<String, PlatformError> {
    let payload = Payload::parse(data)?;
    let keys = platform.create(session, who, collection, vec![payload])?;
    keys.into_iter()
        .next()
        .ok_or_else(|| PlatformError::Internal("nothing was created".into()))
}

pub(super) fn create_many_json(
    platform: &Platform,
    session: &mut Session<'_>,
    who: &Who,
    collection: &str,
    data: &str,
) -> Result<Vec<String>, PlatformError> {
    platform.create_many_json_at_most(session, who, collection, data, usize::MAX)
}

pub(super) fn create_many_json_at_most(
    platform: &Platform,
    session: &mut Session<'_>,
    who: &Who,
    collection: &str,
    data: &str,
    max: usize,
) -> Result<Vec<String>, PlatformError> {
    let data = data.trim();
    if !data.starts_with('[') {
        check_json(data)?;
        return Err(PlatformError::InvalidPayload(
            "payload must be an array".into(),
        ));
    }
    let items: Vec<&RawValue> = serde_json::from_str(data).map_err(invalid_json)?;
    if items.len() > max {
        return Err(PlatformError::InvalidPayload(format!(
            "Invalid payload. Exceeded max batch mutation limit of {max}."
        )));
    }
    let payloads = items
        .into_iter()
        .map(|item| Payload::parse(item.get()))
        .collect::<Result<Vec<_>, _>>()?;
    platform.create(session, who, collection, payloads)
}

pub(super) fn update_one(
    platform: &Platform,
    session: &mut Session<'_>,
    who: &Who,
    collection: &str,
    key: &str,
    data: &Value,
) -> Result<String, PlatformError> {
    platform.update_one_json(session, who, collection, key, &data.to_string())
}

pub(super) fn update_one_json(
    platform: &Platform,
    session: &mut Session<'_>,
    who: &Who,
    collection: &str,
    key: &str,
    data: &str,
) -> Result<String, PlatformError> {
    let def = platform.collection(who, collection)?;
    let grant = platform.grant(who, collection, Action::Update)?;
    let payload = Payload::parse(data)?;
    let admin = who.is_admin();
    let changes = platform.build_update(who, &def, grant.as_ref(), key, &payload)?;
    let scope = platform.grant_filter(&def, grant.as_ref(), &who.vars())?;
    let scopes_given = platform.reference_scopes(who, &def, changes.keys())?;
    let wanted = platform.wants_events(&def.name);
    let filtered = platform.wants_before_write(&def.name);
    // Before-write hooks get the whole payload (they may change it); the
    // event, the members its hooks read.
    let fields = platform.event_fields(&def.name);
    let whole: Arc<str> = if filtered {
        payload.reported(&def.name, &EventFields::All).into()
    } else {
        Arc::from("")
    };
    let reported: Arc<str> = match (wanted, &fields) {
        (false, _) => Arc::from(""),
        (true, EventFields::All) if filtered => whole.clone(),
        (true, _) => payload.reported(&def.name, &fields).into(),
    };
    // Only before-write hooks need the payload past this point.
    let payload = filtered.then_some(payload);
    platform.run_write(session, |conn, events| {
        // With an event to build and no before-write hook (the only thing
        // that could write the item before it is read for the event), one
        // read both finds the item in the caller's scope and is the
        // event's `before`.
        let found = if wanted && !filtered {
            found_in_scope(conn, &def, key, scope.as_ref(), &fields)?
        } else {
            None
        };
        if found.is_none() {
            platform.ensure_in_scope(conn, &def, key, scope.as_ref(), admin)?;
        }
        let changed = match &payload {
            Some(payload) => {
                let write = pending(
                    who,
                    EventKind::Update,
                    &def,
                    vec![key.to_string()],
                    whole.to_string(),
                );
                platform
                    .before_write(conn, events, write)?
                    .map(|changed| payload.changed_by_hooks(&def.name, &changed))
                    .transpose()?
            }
            None => None,
        };
        let (changes, scopes, reported) = match changed {
            None => (Cow::Borrowed(&changes), None, reported.clone()),
            Some(text) => {
                let payload = Payload::parse(&text)?;
                let changes = platform.build_update(who, &def, grant.as_ref(), key, &payload)?;
                let scopes = platform.reference_scopes(who, &def, changes.keys())?;
                (
                    Cow::Owned(changes),
                    Some(scopes),
                    payload.reported(&def.name, &fields).into(),
                )
            }
        };
        let scopes = scopes.as_ref().unwrap_or(&scopes_given);
        if def.name == COMMENTS
            && (changes.contains_key("collection") || changes.contains_key("item"))
        {
            platform.ensure_moved_comment_target(conn, who, &def, key, &changes)?;
        }
        check_references(&platform.store.schema(), conn, &def, &changes, scopes)?;
        platform.check_permission_write(conn, who, &def, Some(key), &changes)?;
        access_rules::check_user_write(&def, &changes)?;
        let watched =
            platform.guards_last_admin(conn, who, &def, EventKind::Update, Some(&changes))?;
        // Nobody listening: no before/after reads, no event.
        if !wanted {
            conn.update(&def, key, &changes)?;
            platform.follow_update(conn, &def, key, &changes)?;
            platform.ensure_an_admin_remains(conn, watched)?;
            return Ok(key.to_string());
        }
        let before = match found {
            Some(before) => before,
            None => public_records_json(conn, &def, key, &fields)?,
        };
        conn.update(&def, key, &changes)?;
        platform.follow_update(conn, &def, key, &changes)?;
        platform.ensure_an_admin_remains(conn, watched)?;
        let after = match after_of_update(&def, &before, &changes) {
            Some(after) => after,
            None => public_records_json(conn, &def, key, &fields)?,
        };
        platform.record_event(
            conn,
            events,
            WriteEvent {
                kind: EventKind::Update,
                collection: def.name.clone(),
                keys: vec![key.to_string()],
                payload: reported,
                before: Some(before.into()),
                after: Some(after.into()),
                accountability: who.accountability.clone(),
            },
        )?;
        Ok(key.to_string())
    })
}

pub(super) fn delete_one(
    platform: &Platform,
    session: &mut Session<'_>,
    who: &Who,
    collection: &str,
    key: &str,
) -> Result<String, PlatformError> {
    let def = platform.collection(who, collection)?;
    let grant = platform.grant(who, collection, Action::Delete)?;
    let scope = platform.grant_filter(&def, grant.as_ref(), &who.vars())?;
    let admin = who.is_admin();
    let filtered = platform.wants_before_write(&def.name);
    platform.run_write(session, |conn, events| {
        platform.ensure_in_scope(conn, &def, key, scope.as_ref(), admin)?;
        if filtered {
            // A delete's payload is its key: what a hook makes of it
            // changes nothing.
            let write = pending(
                who,
                EventKind::Delete,
                &def,
                vec![key.to_string()],
                json!([key]).to_string(),
            );
            platform.before_write(conn, events, write)?;
        }
        let watched = platform.guards_last_admin(conn, who, &def, EventKind::Delete, None)?;
        platform.release_references(conn, events, &def, key)?;
        if !platform.wants_events(&def.name) {
            conn.delete(&def, key)?;
            platform.ensure_an_admin_remains(conn, watched)?;
            return Ok(key.to_string());
        }
        let fields = platform.event_fields(&def.name);
        let before = public_records_json(conn, &def, key, &fields)?;
        conn.delete(&def, key)?;
        platform.ensure_an_admin_remains(conn, watched)?;
        platform.record_event(
            conn,
            events,
            WriteEvent {
                kind: EventKind::Delete,
                collection: def.name.clone(),
                keys: vec![key.to_string()],
                payload: json!([key]).to_string().into(),
                before: Some(before.into()),
                after: None,
                accountability: who.accountability.clone(),
            },
        )?;
        Ok(key.to_string())
    })
}

impl Platform {
    /// A comment written by a caller of the API is on an item they may
    /// read: in a collection the API serves, an item that exists and that
    /// their row rule on that collection admits (any that exists, for an
    /// administrator). Checked here, on every path a caller writes a
    /// comment by (`/comments`, `/items/platform_comments`), as reads of
    /// comments are narrowed to the same items; forbidden otherwise, the
    /// same answer for a missing item as for one out of sight. Code that
    /// writes with permissions bypassed (the host, an extension asking for
    /// admin access) writes the notes it means to.
    fn ensure_comment_target(
        &self,
        conn: &mut dyn Writer,
        who: &Who,
        collection: Option<&str>,
        item: Option<&str>,
    ) -> Result<(), PlatformError> {
        if who.bypass {
            return Ok(());
        }
        let Some(item) = item else {
            return Err(PlatformError::InvalidPayload("\"item\" is required".into()));
        };
        let def = match collection.and_then(|c| self.store.schema().get(c).cloned()) {
            Some(def) if !is_internal(&def.name) => def,
            _ => return Err(PlatformError::forbidden()),
        };
        let grant = match self.grant(who, &def.name, Action::Read) {
            Ok(grant) => grant,
            Err(PlatformError::Forbidden(_)) => return Err(PlatformError::forbidden()),
            Err(e) => return Err(e),
        };
        let rule = self.grant_filter(&def, grant.as_ref(), &who.vars())?;
        let mut q = ReadQuery::select(&["id"], key_filter(item)).limit(1);
        q.filter = Filter::and(q.filter.take(), rule);
        if conn.select(&def, &q)?.is_empty() {
            return Err(PlatformError::forbidden());
        }
        Ok(())
    }

    /// [`Platform::ensure_comment_target`] for an update of comment `key`
    /// that changes its collection or item: the item it would then be on.
    fn ensure_moved_comment_target(
        &self,
        conn: &mut dyn Writer,
        who: &Who,
        def: &CollectionDef,
        key: &str,
        changes: &Columns,
    ) -> Result<(), PlatformError> {
        let q = ReadQuery::select(&["collection", "item"], key_filter(key)).limit(1);
        let current = conn.select(def, &q)?.into_iter().next().unwrap_or_default();
        let now = |name: &str| match changes.get(name) {
            Some(Scalar::Text(text)) => Some(text.clone()),
            Some(_) => None,
            None => current
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        let (collection, item) = (now("collection"), now("item"));
        self.ensure_comment_target(conn, who, collection.as_deref(), item.as_deref())
    }
}

/// A text column of a row about to be written.
fn text_of<'r>(row: &'r Columns, name: &str) -> Option<&'r str> {
    match row.get(name) {
        Some(Scalar::Text(text)) => Some(text),
        _ => None,
    }
}

/// What every row of one create shares, worked out once per write.
struct Created<'a> {
    who: &'a Who,
    def: &'a CollectionDef,
    schema: Arc<platform_store::schema::Schema>,
    /// Someone wants the create's events.
    wanted: bool,
    /// The members they carry.
    fields: &'a EventFields,
}

/// A write about to be made, as before-write hooks are given it.
fn pending(
    who: &Who,
    kind: EventKind,
    def: &CollectionDef,
    keys: Vec<String>,
    payload: String,
) -> WriteEvent {
    WriteEvent {
        kind,
        collection: def.name.clone(),
        keys,
        payload: payload.into(),
        before: None,
        after: None,
        accountability: who.accountability.clone(),
    }
}

/// The record a create writes, as a read prints it (members in name
/// order, stored JSON documents as stored), without its secrets.
fn public_json(def: &CollectionDef, row: &Columns, fields: &EventFields) -> String {
    let size = row.values().map(|v| match v {
        Scalar::Text(t) => t.len() + 2,
        _ => 8,
    });
    let mut out = Vec::with_capacity(size.sum::<usize>() + 64);
    out.push(b'{');
    let shown = row
        .iter()
        .filter(|(name, _)| !is_secret(&def.name, name) && fields.keeps(name));
    for (i, (name, value)) in shown.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        codec::push_str(&mut out, name);
        out.push(b':');
        codec::push_written(&mut out, def.field(name).map(|f| f.kind), value);
    }
    out.push(b'}');
    // Written from strings and JSON printing only.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The `after` of an update's event without reading the item again: its
/// `before` (one record, as [`public_records_json`] reads it) with the
/// written values laid over, each rendered as a read renders its column.
/// Exact because nothing else writes the item in between: before-write
/// hooks ran before `before` was read, the update rules write other rows,
/// in-transaction hooks run after. `None` (read it then) for anything
/// else: no single record, or a value no column holds as written (a list).
fn after_of_update(def: &CollectionDef, before: &str, changes: &Columns) -> Option<String> {
    let [record]: [RawRecord; 1] = RawRecord::parse_list(before).ok()?.try_into().ok()?;
    let mut out = Vec::with_capacity(before.len() + 64);
    out.extend_from_slice(b"[{");
    for (i, (name, value)) in record.members().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        codec::push_str(&mut out, name);
        out.push(b':');
        match changes.get(name) {
            Some(Scalar::List(_)) => return None,
            Some(written) => {
                codec::push_written(&mut out, def.field(name).map(|f| f.kind), written)
            }
            None => out.extend_from_slice(value.get().as_bytes()),
        }
    }
    out.extend_from_slice(b"}]");
    String::from_utf8(out).ok()
}

/// The item's record as an event carries it (see [`public_records_json`]),
/// when it exists within `scope`; `None` when it does not, or when the
/// event reads no field of it (the caller then checks apart).
fn found_in_scope(
    conn: &mut dyn Writer,
    def: &CollectionDef,
    key: &str,
    scope: Option<&Filter>,
    fields: &EventFields,
) -> Result<Option<String>, PlatformError> {
    let mut q = public_query(def, key, fields);
    if q.fields.is_empty() {
        return Ok(None);
    }
    q.filter = Filter::and(q.filter.take(), scope.cloned());
    let out = select_json_array(conn, def, &q)?;
    if out == b"[]" {
        return Ok(None);
    }
    String::from_utf8(out)
        .map(Some)
        .map_err(|e| PlatformError::Internal(e.to_string()))
}

/// The read of one item's record as events carry it: its fields but the
/// secrets, those the hooks read.
fn public_query(def: &CollectionDef, key: &str, fields: &EventFields) -> ReadQuery {
    let mut q = ReadQuery::all_fields(def);
    q.fields
        .retain(|f| !is_secret(&def.name, f) && fields.keeps(f));
    q.filter = Some(key_filter(key));
    q.limit = Some(1);
    q
}

/// The item with `key` as a JSON array of its public record with the
/// members an event carries (empty when it does not exist), read on the
/// writing connection.
fn public_records_json(
    conn: &mut dyn Writer,
    def: &CollectionDef,
    key: &str,
    fields: &EventFields,
) -> Result<String, PlatformError> {
    let out = select_json_array(conn, def, &public_query(def, key, fields))?;
    String::from_utf8(out).map_err(|e| PlatformError::Internal(e.to_string()))
}
