//! Writes: creates, updates and deletes under the caller's grant, with the
//! host's own fields, hashed secrets, checked values and references, and
//! the item events of each write.

use super::references::check_references;
use super::*;

impl Platform {
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
}
