//! Reads: a caller's query narrowed to what their grant lets them see.

use super::*;

impl Platform {
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
        let wire = self.resolve_related_filters(session, who, collection, wire)?;
        let def = self.collection(who, collection)?;
        let q = self.plan_read(who, &def, &wire, default_limit)?;
        self.run_read(session, |conn| Ok(conn.select(&def, &q)?))
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
    ) -> Result<Vec<u8>, ItemsError> {
        if self.follows_relations(who, collection, wire) {
            let records =
                self.read_following_references(session, who, collection, wire, default_limit)?;
            return serde_json::to_vec(&records).map_err(|e| ItemsError::Internal(e.to_string()));
        }
        let wire = self.resolve_related_filters(session, who, collection, wire)?;
        let def = self.collection(who, collection)?;
        let q = self.plan_read(who, &def, &wire, default_limit)?;
        self.run_read(session, |conn| select_json_array(conn, &def, &q))
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
    ) -> Result<Option<Vec<u8>>, ItemsError> {
        if self.follows_relations(who, collection, wire) {
            let mut one = wire.clone();
            let this = json!({"id": {"_eq": key}});
            one.filter = Some(match one.filter.take() {
                Some(f) => json!({"_and": [f, this]}),
                None => this,
            });
            one.limit = Some(1);
            let records = self.read_following_references(session, who, collection, &one, None)?;
            if let Some(record) = records.first() {
                let text =
                    serde_json::to_vec(record).map_err(|e| ItemsError::Internal(e.to_string()))?;
                return Ok(Some(text));
            }
            // Missing, or not the caller's: answered as a plain read does.
            let plain = WireQuery {
                fields: Some(crate::query::ListParam::List(vec!["id".into()])),
                ..Default::default()
            };
            return self
                .read_one_json(session, who, collection, key, &plain)
                .map(|_| None);
        }
        self.read_one_by(session, who, collection, key, wire, |conn, def, q| {
            let mut out = Vec::new();
            Ok((conn.select_json(def, q, &mut out)? > 0).then_some(out))
        })
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
            &mut dyn Reader,
            &CollectionDef,
            &ReadQuery,
        ) -> Result<Option<T>, ItemsError>,
    ) -> Result<Option<T>, ItemsError> {
        let wire = self.resolve_related_filters(session, who, collection, wire)?;
        let def = self.collection(who, collection)?;
        let mut q = self.plan_read(who, &def, &wire, None)?;
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
        let wire = self.resolve_related_filters(session, who, collection, wire)?;
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
}
