//! Reads: a caller's query narrowed to what their grant lets them see.

use super::related_filters::follows_references;
use super::relations::Readers;
use super::*;
use platform_store::query::ListParam;

impl Platform {
    /// Builds the read: the caller's query, narrowed to what they may see;
    /// `path` is where the collection was reached from (`""`: the root).
    fn plan_read(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        def: &CollectionDef,
        wire: &WireQuery,
        default_limit: Option<u64>,
        path: &str,
    ) -> Result<ReadQuery, PlatformError> {
        let grant = self.grant(who, &def.name, Action::Read)?;
        check_named_fields(def, grant.as_ref(), wire, path)?;
        let vars = who.vars();
        let mut q = wire.to_read(def, &vars, default_limit)?;
        let mut used = Vec::new();
        if let Some(f) = &q.filter {
            f.fields(&mut used);
        }
        used.extend(q.sort.iter().map(|(f, _)| f.clone()));
        check_queried_fields(&def.name, grant.as_ref(), &used)?;
        q.fields.retain(|f| {
            !is_secret(&def.name, f) && grant.as_ref().is_none_or(|g| g.allows_field(f))
        });
        if q.fields.is_empty() {
            return Err(PlatformError::forbidden());
        }
        used.extend(q.fields.iter().cloned());
        if let Some(search) = search(def, grant.as_ref(), wire) {
            search.fields(&mut used);
            q.filter = Filter::and(q.filter.take(), Some(search));
        }
        q.masks = self.field_masks(def, grant.as_ref(), &vars, &used)?;
        q.scope = Filter::and(
            self.grant_filter(def, grant.as_ref(), &vars)?,
            self.host_scope(session, who, def)?,
        );
        Ok(q)
    }

    /// The fields of `used` that the caller sees on only some of the rows
    /// their grant admits, each with those rows.
    fn field_masks(
        &self,
        def: &CollectionDef,
        grant: Option<&CollectionGrant>,
        vars: &Vars,
        used: &[String],
    ) -> Result<FieldMasks, PlatformError> {
        let mut masks = FieldMasks::default();
        let Some(grant) = grant else {
            return Ok(masks);
        };
        for field in used {
            if masks.get(field).is_some() {
                continue;
            }
            if let Some(raw) = grant.field_rows(field) {
                let rows = parse_filter(def, &raw, vars).map_err(|e| {
                    PlatformError::Internal(format!("bad permission filter on {}: {e}", def.name))
                })?;
                masks.insert(field, rows);
            }
        }
        Ok(masks)
    }

    /// What the host itself narrows a caller's reads of a collection to,
    /// whatever their grant: comments are read only on the items the
    /// caller may read (`Platform::comment_scope`).
    fn host_scope(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        def: &CollectionDef,
    ) -> Result<Option<Filter>, PlatformError> {
        if def.name != COMMENTS {
            return Ok(None);
        }
        match self.comment_scope(session, who)? {
            None => Ok(None),
            Some(raw) => parse_filter(def, &raw, &who.vars())
                .map(Some)
                .map_err(|e| PlatformError::Internal(format!("bad comment scope: {e}"))),
        }
    }

    /// [`Platform::read_by_query`] as the JSON text of each cell, for
    /// answers assembled from several reads without building records.
    /// `path` is where the collection was reached from.
    pub(super) fn read_by_query_text(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        wire: &WireQuery,
        default_limit: Option<u64>,
        path: &str,
    ) -> Result<TextRows, PlatformError> {
        self.planned_read(
            session,
            who,
            collection,
            wire,
            default_limit,
            path,
            |conn, def, q| Ok(conn.select_text(def, q)?),
        )
    }

    #[allow(clippy::too_many_arguments)]
    /// A read of `collection` planned for `who` (conditions through
    /// references resolved, narrowed to what they may see), run by `run`
    /// on a connection.
    fn planned_read<T>(
        &self,
        session: &mut Session<'_>,
        who: &Who,
        collection: &str,
        wire: &WireQuery,
        default_limit: Option<u64>,
        path: &str,
        mut run: impl FnMut(&mut dyn Reader, &CollectionDef, &ReadQuery) -> Result<T, PlatformError>,
    ) -> Result<T, PlatformError> {
        let wire = self.resolve_related_filters(session, who, collection, wire)?;
        let def = self.collection(who, collection)?;
        let q = self.plan_read(session, who, &def, &wire, default_limit, path)?;
        self.run_read(session, |conn| run(conn, &def, &q))
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
        ) -> Result<Option<T>, PlatformError>,
    ) -> Result<Option<T>, PlatformError> {
        let wire = self.resolve_related_filters(session, who, collection, wire)?;
        let def = self.collection(who, collection)?;
        let mut q = self.plan_read(session, who, &def, &wire, None, ROOT)?;
        q.filter = Filter::and(Some(key_filter(key)), q.filter.take());
        q.limit = Some(1);
        q.offset = 0;
        let admin = who.is_admin();
        self.run_read(session, |conn| {
            if let Some(found) = fetch(conn, &def, &q)? {
                return Ok(Some(found));
            }
            if !admin && exists(conn, &def, key)? {
                return Err(PlatformError::forbidden());
            }
            Ok(None)
        })
    }
}

pub(super) fn comment_scope(
    platform: &Platform,
    session: &mut Session<'_>,
    who: &Who,
) -> Result<Option<Value>, PlatformError> {
    let Some(readable) = platform.readable_collections(who)? else {
        return Ok(None);
    };
    let rules = platform.permissions_of(who)?;
    let schema = platform.store.schema();
    let vars = who.vars();
    let mut whole = Vec::new();
    let mut some = Vec::new();
    for collection in readable {
        let (Some(grant), Some(def)) = (
            rules.grant(&collection, Action::Read),
            schema.get(&collection),
        ) else {
            continue;
        };
        let Some(rule) = platform.grant_filter(def, Some(&grant), &vars)? else {
            whole.push(collection);
            continue;
        };
        let q = ReadQuery::select(&["id"], rule);
        let rows = platform.run_read(session, |conn| Ok(conn.select(def, &q)?))?;
        // Comments name their item by its key as text.
        let keys: Vec<Value> = rows
            .into_iter()
            .filter_map(|mut row| row.remove("id"))
            .map(|key| match key {
                Value::String(_) => key,
                other => Value::String(other.to_string()),
            })
            .collect();
        some.push(json!({"_and": [
            {"collection": {"_eq": collection}},
            {"item": {"_in": keys}},
        ]}));
    }
    let whole = json!({"collection": {"_in": whole}});
    Ok(Some(if some.is_empty() {
        whole
    } else {
        some.insert(0, whole);
        json!({"_or": some})
    }))
}

pub(super) fn read_scoped_json(
    platform: &Platform,
    session: &mut Session<'_>,
    caller: &Who,
    collection: &str,
    wire: &WireQuery,
    scope: Option<Value>,
    default_limit: Option<u64>,
) -> Result<Vec<u8>, PlatformError> {
    let own = Who::admin(caller.accountability.clone());
    let q = scoped(wire, scope);
    let readers = Readers::own(&own, caller);
    platform.read_following_references_json(session, readers, collection, &q, default_limit)
}

pub(super) fn read_scoped_one_json(
    platform: &Platform,
    session: &mut Session<'_>,
    caller: &Who,
    collection: &str,
    key: &str,
    wire: &WireQuery,
    scope: Option<Value>,
) -> Result<Option<Vec<u8>>, PlatformError> {
    let own = Who::admin(caller.accountability.clone());
    let q = one_item(&scoped(wire, scope), key);
    let readers = Readers::own(&own, caller);
    platform.read_first_following_references(session, readers, collection, &q)
}

pub(super) fn aggregate_scoped(
    platform: &Platform,
    session: &mut Session<'_>,
    caller: &Who,
    collection: &str,
    wire: &WireQuery,
    scope: Option<Value>,
) -> Result<Vec<Record>, PlatformError> {
    let q = scoped(wire, scope);
    // Conditions through references, as the caller.
    let q = platform.resolve_related_filters(session, caller, collection, &q)?;
    let own = Who::admin(caller.accountability.clone());
    platform.aggregate(session, &own, collection, &q)
}

pub(super) fn read_by_query(
    platform: &Platform,
    session: &mut Session<'_>,
    who: &Who,
    collection: &str,
    wire: &WireQuery,
    default_limit: Option<u64>,
) -> Result<Vec<Record>, PlatformError> {
    platform.planned_read(
        session,
        who,
        collection,
        wire,
        default_limit,
        ROOT,
        |conn, def, q| Ok(conn.select(def, q)?),
    )
}

pub(super) fn read_by_query_json(
    platform: &Platform,
    session: &mut Session<'_>,
    who: &Who,
    collection: &str,
    wire: &WireQuery,
    default_limit: Option<u64>,
) -> Result<Vec<u8>, PlatformError> {
    if platform.follows_relations(who, collection, wire) {
        return platform.read_following_references_json(
            session,
            Readers::caller(who),
            collection,
            wire,
            default_limit,
        );
    }
    platform.planned_read(
        session,
        who,
        collection,
        wire,
        default_limit,
        ROOT,
        select_json_array,
    )
}

pub(super) fn read_one_json(
    platform: &Platform,
    session: &mut Session<'_>,
    who: &Who,
    collection: &str,
    key: &str,
    wire: &WireQuery,
) -> Result<Option<Vec<u8>>, PlatformError> {
    if platform.follows_relations(who, collection, wire) {
        let one = one_item(wire, key);
        let found = platform.read_first_following_references(
            session,
            Readers::caller(who),
            collection,
            &one,
        )?;
        if found.is_some() {
            return Ok(found);
        }
        // Missing, or not the caller's: answered as a plain read does.
        let plain = WireQuery {
            fields: Some(platform_store::query::ListParam::List(vec!["id".into()])),
            ..Default::default()
        };
        return platform
            .read_one_json(session, who, collection, key, &plain)
            .map(|_| None);
    }
    platform.read_one_by(session, who, collection, key, wire, |conn, def, q| {
        let mut out = Vec::new();
        Ok((conn.select_json(def, q, &mut out)? > 0).then_some(out))
    })
}

pub(super) fn read_own_json(
    platform: &Platform,
    session: &mut Session<'_>,
    caller: &Who,
    collection: &str,
    key: &str,
    wire: &WireQuery,
) -> Result<Option<Vec<u8>>, PlatformError> {
    let own = Who::admin(caller.accountability.clone());
    let q = WireQuery {
        fields: wire.fields.clone(),
        filter: wire.filter.clone(),
        ..Default::default()
    };
    let related_filter = q.filter.as_ref().is_some_and(follows_references);
    if !related_filter && !platform.follows_relations(&own, collection, &q) {
        return platform.read_one_json(session, &own, collection, key, &q);
    }
    let readers = Readers::own(&own, caller);
    platform.read_first_following_references(session, readers, collection, &one_item(&q, key))
}

pub(super) fn aggregate(
    platform: &Platform,
    session: &mut Session<'_>,
    who: &Who,
    collection: &str,
    wire: &WireQuery,
) -> Result<Vec<Record>, PlatformError> {
    let wire = platform.resolve_related_filters(session, who, collection, wire)?;
    let def = platform.collection(who, collection)?;
    let grant = platform.grant(who, collection, Action::Read)?;
    let vars = who.vars();
    let mut q = wire.to_aggregate(&def, &vars)?;
    let mut used: Vec<String> = q.group_by.iter().map(|g| g.field.clone()).collect();
    used.extend(q.functions.iter().filter_map(|(_, f)| f.clone()));
    if let Some(f) = &q.filter {
        f.fields(&mut used);
    }
    check_queried_fields(collection, grant.as_ref(), &used)?;
    if let Some(search) = search(&def, grant.as_ref(), &wire) {
        search.fields(&mut used);
        q.filter = Filter::and(q.filter.take(), Some(search));
    }
    q.masks = platform.field_masks(&def, grant.as_ref(), &vars, &used)?;
    q.scope = Filter::and(
        platform.grant_filter(&def, grant.as_ref(), &vars)?,
        platform.host_scope(session, who, &def)?,
    );
    platform.run_read(session, |conn| Ok(conn.aggregate(&def, &q)?))
}

/// The platform's comments.
pub const COMMENTS: &str = "platform_comments";

/// The `path` of a read of the collection the query names (Directus's
/// "root").
pub(super) const ROOT: &str = "";

/// The refusal of fields a caller may not read or that do not exist, told
/// apart by neither, in Directus's words; `path` is where the collection
/// was reached from.
pub(super) fn fields_forbidden(path: &str, collection: &str, fields: &[String]) -> PlatformError {
    let queried_in = if path.is_empty() {
        "root".to_string()
    } else {
        format!("\"{path}\"")
    };
    let named: Vec<String> = fields.iter().map(|f| format!("\"{f}\"")).collect();
    let named = named.join(", ");
    PlatformError::Forbidden(match fields {
        [_] => format!(
            "You don't have permission to access field {named} in collection \"{collection}\" or it does not exist. Queried in {queried_in}."
        ),
        _ => format!(
            "You don't have permission to access fields {named} in collection \"{collection}\" or they do not exist. Queried in {queried_in}."
        ),
    })
}

/// Refuses a query whose `fields` name one the collection does not have
/// or the caller's grant does not give (paths through relations are
/// checked on the collections they reach).
fn check_named_fields(
    def: &CollectionDef,
    grant: Option<&CollectionGrant>,
    wire: &WireQuery,
    path: &str,
) -> Result<(), PlatformError> {
    let Some(fields) = wire.fields.as_ref().map(ListParam::items) else {
        return Ok(());
    };
    let mut refused: Vec<String> = Vec::new();
    for field in fields {
        if field == "*" || field.contains('.') || refused.contains(&field) {
            continue;
        }
        let known = def.has(&field) || def.alias(&field).is_some();
        if !known || grant.is_some_and(|g| !g.allows_field(&field)) {
            refused.push(field);
        }
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(fields_forbidden(path, &def.name, &refused))
    }
}

/// The condition of the query's `search`, over the fields the caller may
/// read (none of a secret); `None` when it has none.
fn search(
    def: &CollectionDef,
    grant: Option<&CollectionGrant>,
    wire: &WireQuery,
) -> Option<Filter> {
    let text = wire.search.as_deref().filter(|t| !t.trim().is_empty())?;
    let readable = def.fields.iter().filter(|f| {
        !is_secret(&def.name, &f.field) && grant.is_none_or(|g| g.allows_field(&f.field))
    });
    Some(Filter::search(text, readable))
}

/// `wire` with `scope` ANDed to its filter, every field when it names
/// none.
fn scoped(wire: &WireQuery, scope: Option<Value>) -> WireQuery {
    let mut q = wire.clone();
    if q.fields.as_ref().is_none_or(|f| f.items().is_empty()) {
        q.fields = Some(platform_store::query::ListParam::List(vec!["*".into()]));
    }
    if let Some(scope) = scope {
        q.filter = Some(match q.filter.take() {
            Some(f) => json!({"_and": [f, scope]}),
            None => scope,
        });
    }
    q
}

/// `wire` narrowed to the item `key`.
fn one_item(wire: &WireQuery, key: &str) -> WireQuery {
    let mut one = wire.clone();
    let this = json!({"id": {"_eq": key}});
    one.filter = Some(match one.filter.take() {
        Some(f) => json!({"_and": [f, this]}),
        None => this,
    });
    one.limit = Some(1);
    one
}
