//! The data model as Directus 11 answers it on `/collections`, `/fields`
//! and `/relations`: built from the store's schema (the migrations of the
//! host and of every extension, with the metadata they set) and the host's
//! own collection properties, narrowed to what the caller may read.
//!
//! The model is read-only: the schema changes only through migrations.
//! Internal collections and secret fields are never listed; a collection
//! or field the caller may not read answers forbidden, as an unknown one
//! does, so the answers tell no one what exists beyond what they may read.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::items::Who;
use crate::permissions::CollectionGrant;
use crate::platform::Platform;
use crate::platform::PlatformError;
use crate::platform_schema::{is_internal, is_secret, max_length, platform_collection};
use platform_store::query::WireQuery;
use platform_store::schema::{Alias, CollectionDef, Field, FieldType, Schema};

/// The collection of files: a reference to it is a file field.
const FILES: &str = "platform_files";

/// What the caller may read: every collection with its grant (`None`:
/// every field), or everything for an administrator.
struct Readable {
    all: bool,
    grants: BTreeMap<String, Option<CollectionGrant>>,
}

impl Readable {
    fn of(platform: &Platform, who: &Who) -> Result<Self, PlatformError> {
        let mut grants = BTreeMap::new();
        let all = match platform.readable_collections(who)? {
            None => true,
            Some(names) => {
                for name in names {
                    let grant = platform.read_grant(who, &name)?;
                    grants.insert(name, grant);
                }
                false
            }
        };
        Ok(Self { all, grants })
    }

    fn collection(&self, name: &str) -> bool {
        !is_internal(name) && (self.all || self.grants.contains_key(name))
    }

    fn field(&self, collection: &str, field: &str) -> bool {
        if !self.collection(collection) || is_secret(collection, field) {
            return false;
        }
        match self.grants.get(collection) {
            Some(Some(grant)) => grant.allows_field(field),
            _ => true,
        }
    }

    /// A one-to-many alias is read through its related collection: it is
    /// listed when both the alias and the reference it follows are.
    fn alias(&self, collection: &str, alias: &Alias) -> bool {
        self.field(collection, &alias.alias) && self.field(&alias.related, &alias.field)
    }
}

/// The collections served (internal ones never), sorted by name.
fn served(schema: &Schema) -> Vec<Arc<CollectionDef>> {
    let mut names: Vec<&str> = schema.names().filter(|n| !is_internal(n)).collect();
    names.sort_unstable();
    names
        .into_iter()
        .filter_map(|n| schema.get(n).cloned())
        .collect()
}

/// `GET /collections`.
pub fn collections(
    platform: &Platform,
    who: &Who,
    query: &WireQuery,
) -> Result<Vec<Value>, PlatformError> {
    let readable = Readable::of(platform, who)?;
    let schema = platform.store.schema();
    let all = served(&schema)
        .iter()
        .filter(|def| readable.collection(&def.name))
        .map(|def| collection_object(def))
        .collect();
    shape(all, query, &["collection"])
}

/// `GET /collections/:collection`.
pub fn collection(platform: &Platform, who: &Who, name: &str) -> Result<Value, PlatformError> {
    let readable = Readable::of(platform, who)?;
    let schema = platform.store.schema();
    match schema.get(name) {
        Some(def) if readable.collection(name) => Ok(collection_object(def)),
        _ => Err(PlatformError::forbidden()),
    }
}

/// `GET /fields` (`collection: None`) and `GET /fields/:collection`.
pub fn fields(
    platform: &Platform,
    who: &Who,
    collection: Option<&str>,
    query: &WireQuery,
) -> Result<Vec<Value>, PlatformError> {
    let readable = Readable::of(platform, who)?;
    let schema = platform.store.schema();
    let all = match collection {
        None => field_objects(&schema, &readable, None),
        Some(name) if schema.get(name).is_some() && readable.collection(name) => {
            field_objects(&schema, &readable, Some(name))
        }
        Some(_) => return Err(PlatformError::forbidden()),
    };
    shape(all, query, &["collection", "field", "type"])
}

/// `GET /fields/:collection/:field`.
pub fn field(
    platform: &Platform,
    who: &Who,
    collection: &str,
    name: &str,
) -> Result<Value, PlatformError> {
    let readable = Readable::of(platform, who)?;
    let schema = platform.store.schema();
    field_objects(&schema, &readable, Some(collection))
        .into_iter()
        .find(|f| f["field"] == name)
        .ok_or_else(PlatformError::forbidden)
}

/// `GET /relations` (`collection: None`) and `GET /relations/:collection`
/// (the relations whose many side is that collection, as Directus).
pub fn relations(
    platform: &Platform,
    who: &Who,
    collection: Option<&str>,
    query: &WireQuery,
) -> Result<Vec<Value>, PlatformError> {
    let readable = Readable::of(platform, who)?;
    let schema = platform.store.schema();
    if let Some(name) = collection {
        if schema.get(name).is_none() || !readable.collection(name) {
            return Err(PlatformError::forbidden());
        }
    }
    let all = relation_objects(&schema, &readable)
        .into_iter()
        .filter(|r| collection.is_none_or(|c| r["collection"] == c))
        .collect();
    shape(all, query, &["collection", "field", "related_collection"])
}

/// `GET /relations/:collection/:field`.
pub fn relation(
    platform: &Platform,
    who: &Who,
    collection: &str,
    field: &str,
) -> Result<Value, PlatformError> {
    let readable = Readable::of(platform, who)?;
    let schema = platform.store.schema();
    relation_objects(&schema, &readable)
        .into_iter()
        .find(|r| r["collection"] == collection && r["field"] == field)
        .ok_or_else(PlatformError::forbidden)
}

/// Directus's collection object: the host's own collections are marked
/// `system`, as Directus marks its `directus_*` collections.
/// The JSON Schema of an item of each collection the caller may read, by
/// collection, from the same model as `/fields` (the fields they may read,
/// secrets never): what `/server/specs/oas` publishes of the items.
pub fn item_schemas(platform: &Platform, who: &Who) -> Result<Vec<(String, Value)>, PlatformError> {
    let readable = Readable::of(platform, who)?;
    let schema = platform.store.schema();
    Ok(served(&schema)
        .iter()
        .filter(|def| readable.collection(&def.name))
        .map(|def| {
            let mut properties = Map::new();
            for field in def.fields.iter().filter(|f| readable.field(&def.name, &f.field)) {
                properties.insert(field.field.clone(), value_schema(field));
            }
            for alias in def.aliases.iter().filter(|a| readable.alias(&def.name, a)) {
                // The related ids, or the related items when followed.
                properties.insert(
                    alias.alias.clone(),
                    json!({"type": "array", "items": {"oneOf": [{"type": "string", "format": "uuid"}, {"type": "object"}]}}),
                );
            }
            (
                def.name.clone(),
                json!({"type": "object", "properties": properties}),
            )
        })
        .collect())
}

/// The JSON Schema of a field's values (null allowed where the field is
/// nullable; a reference may also be the referred record, when followed).
fn value_schema(field: &Field) -> Value {
    let mut one = match field.kind {
        FieldType::Uuid => json!({"type": "string", "format": "uuid"}),
        FieldType::String | FieldType::Text => json!({"type": "string"}),
        FieldType::Integer => json!({"type": "integer", "format": "int64"}),
        FieldType::Float => json!({"type": "number"}),
        FieldType::Boolean => json!({"type": "boolean"}),
        FieldType::Timestamp => json!({"type": "string", "format": "date-time"}),
        FieldType::Json => json!({}),
    };
    if field.references.is_some() {
        one = json!({"oneOf": [one, {"type": "object"}]});
    }
    if field.nullable && field.kind != FieldType::Json {
        json!({"oneOf": [one, {"type": "null"}]})
    } else {
        one
    }
}

fn collection_object(def: &CollectionDef) -> Value {
    let mut meta = json!({
        "collection": def.name,
        "icon": null,
        "note": null,
        "display_template": null,
        "hidden": false,
        "singleton": false,
        "translations": null,
        "archive_field": null,
        "archive_app_filter": true,
        "archive_value": null,
        "unarchive_value": null,
        "sort_field": null,
        "accountability": "all",
        "color": null,
        "item_duplication_fields": null,
        "sort": null,
        "group": null,
        "collapse": "open",
        "preview_url": null,
        "versioning": false,
    });
    overlay(&mut meta, def.meta.as_ref());
    if platform_collection(&def.name).is_some() {
        meta["system"] = json!(true);
    }
    json!({
        "collection": def.name,
        "meta": meta,
        "schema": { "name": def.name, "comment": null },
    })
}

/// Directus's type name of a stored field. Integers are 64-bit but read
/// and written as JSON numbers, as Directus's `integer` (its `bigInteger`
/// answers strings), so they are `integer` with a `bigint` data type.
fn type_name(kind: FieldType) -> &'static str {
    match kind {
        FieldType::Uuid => "uuid",
        FieldType::String => "string",
        FieldType::Text => "text",
        FieldType::Integer => "integer",
        FieldType::Float => "float",
        FieldType::Boolean => "boolean",
        FieldType::Timestamp => "timestamp",
        FieldType::Json => "json",
    }
}

/// The column type, the same whichever database stores it.
fn data_type(kind: FieldType) -> &'static str {
    match kind {
        FieldType::Uuid => "uuid",
        FieldType::String => "varchar",
        FieldType::Text => "text",
        FieldType::Integer => "bigint",
        FieldType::Float => "double precision",
        FieldType::Boolean => "boolean",
        FieldType::Timestamp => "timestamp",
        FieldType::Json => "json",
    }
}

/// The meta a field has when its migrations set none: Directus's
/// interface, display and special flags for its type and role.
fn default_meta(field: &Field) -> Map<String, Value> {
    let name = field.field.as_str();
    let mut special: Vec<&str> = Vec::new();
    let mut interface = match field.kind {
        FieldType::Uuid | FieldType::String | FieldType::Integer | FieldType::Float => "input",
        FieldType::Text => "input-multiline",
        FieldType::Boolean => "boolean",
        FieldType::Timestamp => "datetime",
        FieldType::Json => "input-code",
    };
    let mut display: Value = Value::Null;
    let mut options: Value = Value::Null;
    let (mut readonly, mut hidden) = (false, false);
    match field.kind {
        FieldType::Boolean => special.push("cast-boolean"),
        FieldType::Json => {
            special.push("cast-json");
            options = json!({ "language": "JSON" });
        }
        _ => {}
    }
    if name == "id" {
        special.push("uuid");
        (readonly, hidden) = (true, true);
    }
    match name {
        "user_created" => special.push("user-created"),
        "date_created" => special.push("date-created"),
        "date_updated" => special.push("date-updated"),
        _ => {}
    }
    if matches!(name, "user_created" | "date_created" | "date_updated") {
        (readonly, hidden) = (true, true);
    }
    match field.references.as_deref() {
        Some(FILES) => {
            special.push("file");
            interface = "file";
            display = json!("file");
        }
        Some(target) => {
            if special.is_empty() {
                special.push("m2o");
            }
            interface = "select-dropdown-m2o";
            display = json!(if target == "platform_users" {
                "user"
            } else {
                "related-values"
            });
        }
        None => {}
    }
    let mut meta = Map::new();
    meta.insert("special".into(), special_value(&special));
    meta.insert("interface".into(), json!(interface));
    meta.insert("options".into(), options);
    meta.insert("display".into(), display);
    meta.insert("display_options".into(), Value::Null);
    meta.insert("readonly".into(), json!(readonly));
    meta.insert("hidden".into(), json!(hidden));
    meta.insert("width".into(), json!("full"));
    meta.insert("note".into(), Value::Null);
    meta.insert(
        "required".into(),
        json!(!field.nullable && field.default.is_none() && name != "id"),
    );
    meta.insert("validation".into(), Value::Null);
    meta
}

/// Puts the keys a migration set (the metadata's set keys, as JSON)
/// over the defaults in `meta`.
fn overlay<T: serde::Serialize>(meta: &mut Value, set: Option<&T>) {
    let Some(Value::Object(keys)) = set.and_then(|m| serde_json::to_value(m).ok()) else {
        return;
    };
    if let Value::Object(target) = meta {
        target.extend(keys);
    }
}

fn special_value(special: &[&str]) -> Value {
    if special.is_empty() {
        Value::Null
    } else {
        json!(special)
    }
}

/// The fields of `only` (or of every collection), stored fields in their
/// order then aliases, as the caller may read them; `meta.id` counts
/// every served field, so it does not depend on who asks.
fn field_objects(schema: &Schema, readable: &Readable, only: Option<&str>) -> Vec<Value> {
    let mut out = Vec::new();
    let mut id = 0u64;
    for def in served(schema) {
        let system = platform_collection(&def.name).is_some();
        for (i, field) in def.fields.iter().enumerate() {
            id += 1;
            if only.is_some_and(|c| c != def.name) || !readable.field(&def.name, &field.field) {
                continue;
            }
            out.push(stored_field(&def, field, i, id, system));
        }
        for (j, alias) in def.aliases.iter().enumerate() {
            id += 1;
            if only.is_some_and(|c| c != def.name) || !readable.alias(&def.name, alias) {
                continue;
            }
            out.push(alias_field(
                schema,
                &def,
                alias,
                def.fields.len() + j,
                id,
                system,
            ));
        }
    }
    out
}

fn field_meta(
    collection: &str,
    name: &str,
    id: u64,
    sort: usize,
    system: bool,
    mut meta: Map<String, Value>,
) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), json!(id));
    out.insert("collection".into(), json!(collection));
    out.insert("field".into(), json!(name));
    out.insert("translations".into(), Value::Null);
    out.insert("conditions".into(), Value::Null);
    out.insert("group".into(), Value::Null);
    out.insert("validation_message".into(), Value::Null);
    out.insert("searchable".into(), json!(true));
    out.insert("sort".into(), json!(sort + 1));
    out.append(&mut meta);
    if system {
        out.insert("system".into(), json!(true));
    }
    Value::Object(out)
}

fn stored_field(def: &CollectionDef, field: &Field, i: usize, id: u64, system: bool) -> Value {
    let key = field.field == "id";
    let length = match field.kind {
        FieldType::String | FieldType::Text => max_length(&def.name, &field.field),
        FieldType::Uuid => Some(36),
        _ => None,
    };
    json!({
        "collection": def.name,
        "field": field.field,
        "type": type_name(field.kind),
        "schema": {
            "name": field.field,
            "table": def.name,
            "data_type": data_type(field.kind),
            "default_value": field.default,
            "max_length": length,
            "numeric_precision": null,
            "numeric_scale": null,
            "is_generated": false,
            "generation_expression": null,
            "is_nullable": field.nullable && !key,
            "is_unique": field.unique || key,
            "is_indexed": key,
            "is_primary_key": key,
            "has_auto_increment": false,
            "foreign_key_table": field.references,
            "foreign_key_column": field.references.as_ref().map(|_| "id"),
            "comment": null,
        },
        "meta": field_meta(&def.name, &field.field, id, i, system, {
            let mut meta = Value::Object(default_meta(field));
            overlay(&mut meta, field.meta.as_ref());
            match meta {
                Value::Object(map) => map,
                _ => Map::new(),
            }
        }),
    })
}

/// A reference of a junction other than `field`, when `related` is one:
/// a collection with exactly two references (Directus's many-to-many).
fn junction_other(schema: &Schema, alias: &Alias) -> Option<Field> {
    let related = schema.get(&alias.related)?;
    let references: Vec<&Field> = related
        .fields
        .iter()
        .filter(|f| f.references.is_some())
        .collect();
    match references.as_slice() {
        [a, b] if a.field == alias.field => Some((*b).clone()),
        [a, b] if b.field == alias.field => Some((*a).clone()),
        _ => None,
    }
}

fn alias_field(
    schema: &Schema,
    def: &CollectionDef,
    alias: &Alias,
    sort: usize,
    id: u64,
    system: bool,
) -> Value {
    let (special, interface) = match junction_other(schema, alias) {
        Some(other) if other.references.as_deref() == Some(FILES) => ("files", "files"),
        Some(_) => ("m2m", "list-m2m"),
        None => ("o2m", "list-o2m"),
    };
    let mut meta = Map::new();
    meta.insert("special".into(), json!([special]));
    meta.insert("interface".into(), json!(interface));
    meta.insert("options".into(), Value::Null);
    meta.insert("display".into(), json!("related-values"));
    meta.insert("display_options".into(), Value::Null);
    meta.insert("readonly".into(), json!(true));
    meta.insert("hidden".into(), json!(false));
    meta.insert("width".into(), json!("full"));
    meta.insert("note".into(), Value::Null);
    meta.insert("required".into(), json!(false));
    meta.insert("validation".into(), Value::Null);
    json!({
        "collection": def.name,
        "field": alias.alias,
        "type": "alias",
        "schema": null,
        "meta": field_meta(&def.name, &alias.alias, id, sort, system, meta),
    })
}

fn on_delete_name(field: &Field) -> &'static str {
    match field.delete_rule() {
        host_sdk::schema::OnDelete::SetNull => "SET NULL",
        host_sdk::schema::OnDelete::Cascade => "CASCADE",
        host_sdk::schema::OnDelete::Refuse => "NO ACTION",
    }
}

/// A many-to-one relation per reference field the caller may read whose
/// target they may read, with the one-to-many alias over it (when there is
/// one they may read) as its `one_field`; `meta.id` counts every relation.
fn relation_objects(schema: &Schema, readable: &Readable) -> Vec<Value> {
    let defs = served(schema);
    let mut out = Vec::new();
    let mut id = 0u64;
    for def in &defs {
        for field in &def.fields {
            let Some(target) = field.references.as_deref() else {
                continue;
            };
            id += 1;
            if !readable.field(&def.name, &field.field) || !readable.collection(target) {
                continue;
            }
            let one = schema.get(target).and_then(|t| {
                t.aliases
                    .iter()
                    .find(|a| a.related == def.name && a.field == field.field)
                    .filter(|a| readable.alias(target, a))
                    .cloned()
            });
            let junction = one
                .as_ref()
                .and_then(|a| junction_other(schema, a))
                .or_else(|| {
                    // The junction's other side names this field too.
                    let probe = Alias {
                        alias: String::new(),
                        related: def.name.clone(),
                        field: field.field.clone(),
                        sort: None,
                    };
                    junction_other(schema, &probe).filter(|_| {
                        defs.iter().any(|d| {
                            d.aliases
                                .iter()
                                .any(|a| a.related == def.name && a.field != field.field)
                        })
                    })
                });
            let deselect = if field.delete_rule() == host_sdk::schema::OnDelete::Cascade {
                "delete"
            } else {
                "nullify"
            };
            out.push(json!({
                "collection": def.name,
                "field": field.field,
                "related_collection": target,
                "schema": {
                    "table": def.name,
                    "column": field.field,
                    "foreign_key_table": target,
                    "foreign_key_column": "id",
                    "foreign_key_schema": null,
                    "constraint_name": null,
                    "on_update": "NO ACTION",
                    "on_delete": on_delete_name(field),
                },
                "meta": {
                    "id": id,
                    "many_collection": def.name,
                    "many_field": field.field,
                    "one_collection": target,
                    "one_field": one.as_ref().map(|a| a.alias.clone()),
                    "one_collection_field": null,
                    "one_allowed_collections": null,
                    "junction_field": junction.map(|f| f.field),
                    "sort_field": one.as_ref().and_then(|a| a.sort.clone()),
                    "one_deselect_action": deselect,
                },
            }));
        }
    }
    out
}

/// The query parameters these routes take: `filter` (`_eq`, `_neq`,
/// `_in`, `_nin` on the listed top-level keys, and `_and`), `sort` (one
/// or more of those keys, `-` for descending), `limit` (`-1`: all) and
/// `offset`/`page`, `fields` (top-level keys; `*`, `meta.*` and
/// `schema.*` keep the whole). Anything else is refused, never ignored.
fn shape(
    mut all: Vec<Value>,
    query: &WireQuery,
    keys: &[&str],
) -> Result<Vec<Value>, PlatformError> {
    if query.search.is_some() || query.aggregate.is_some() || query.group_by.is_some() {
        return Err(PlatformError::InvalidQuery(
            "search, aggregate and groupBy are not supported here".into(),
        ));
    }
    if let Some(filter) = &query.filter {
        let mut kept = Vec::with_capacity(all.len());
        for value in all {
            if matches(filter, &value, keys)? {
                kept.push(value);
            }
        }
        all = kept;
    }
    if let Some(sort) = &query.sort {
        let mut order = Vec::new();
        for item in sort.items() {
            let (desc, key) = match item.strip_prefix('-') {
                Some(key) => (true, key.to_string()),
                None => (false, item.clone()),
            };
            if !keys.contains(&key.as_str()) {
                return Err(unsupported("sort", &key, keys));
            }
            order.push((desc, key));
        }
        all.sort_by(|a, b| {
            for (desc, key) in &order {
                let ord = a[key]
                    .as_str()
                    .unwrap_or("")
                    .cmp(b[key].as_str().unwrap_or(""));
                let ord = if *desc { ord.reverse() } else { ord };
                if ord.is_ne() {
                    return ord;
                }
            }
            std::cmp::Ordering::Equal
        });
    }
    let limit = match query.limit {
        None | Some(-1) => None,
        Some(n) if n >= 0 => Some(n as usize),
        Some(_) => {
            return Err(PlatformError::InvalidQuery(
                "\"limit\" must be -1 or more".into(),
            ))
        }
    };
    let offset = match (query.offset, query.page, limit) {
        (Some(o), _, _) if o >= 0 => o as usize,
        (Some(_), _, _) => {
            return Err(PlatformError::InvalidQuery(
                "\"offset\" must be 0 or more".into(),
            ))
        }
        (None, Some(p), Some(l)) if p >= 1 => (p as usize - 1) * l,
        (None, Some(p), _) if p < 1 => {
            return Err(PlatformError::InvalidQuery(
                "\"page\" must be 1 or more".into(),
            ))
        }
        _ => 0,
    };
    let all = all
        .into_iter()
        .skip(offset)
        .take(limit.unwrap_or(usize::MAX));
    let Some(fields) = &query.fields else {
        return Ok(all.collect());
    };
    let mut wanted = Vec::new();
    for f in fields.items() {
        let top = f.split('.').next().unwrap_or("").to_string();
        if f == "*" {
            return Ok(all.collect());
        }
        wanted.push(top);
    }
    Ok(all
        .map(|value| match value {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .filter(|(k, _)| wanted.iter().any(|w| w == k))
                    .collect(),
            ),
            other => other,
        })
        .collect())
}

fn unsupported(what: &str, key: &str, keys: &[&str]) -> PlatformError {
    PlatformError::InvalidQuery(format!(
        "cannot {what} by \"{key}\" here (only {})",
        keys.join(", ")
    ))
}

/// Whether `value` passes `filter`.
fn matches(filter: &Value, value: &Value, keys: &[&str]) -> Result<bool, PlatformError> {
    let Value::Object(map) = filter else {
        return Err(PlatformError::InvalidQuery(
            "\"filter\" must be a JSON object".into(),
        ));
    };
    for (key, condition) in map {
        let ok = if key == "_and" {
            let Value::Array(parts) = condition else {
                return Err(PlatformError::InvalidQuery("\"_and\" takes a list".into()));
            };
            let mut all = true;
            for part in parts {
                all &= matches(part, value, keys)?;
            }
            all
        } else if keys.contains(&key.as_str()) {
            compare(&value[key], condition)?
        } else {
            return Err(unsupported("filter", key, keys));
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

fn compare(actual: &Value, condition: &Value) -> Result<bool, PlatformError> {
    let Value::Object(ops) = condition else {
        return Err(PlatformError::InvalidQuery(
            "a filter's condition is an object such as {\"_eq\": …}".into(),
        ));
    };
    let listed = |v: &Value| -> Result<bool, PlatformError> {
        match v {
            Value::Array(items) => Ok(items.contains(actual)),
            // `qs` writes a list as a comma-separated string.
            Value::String(s) => Ok(s.split(',').any(|p| Some(p) == actual.as_str())),
            _ => Err(PlatformError::InvalidQuery(
                "_in and _nin take a list".into(),
            )),
        }
    };
    for (op, operand) in ops {
        let ok = match op.as_str() {
            "_eq" => actual == operand,
            "_neq" => actual != operand,
            "_in" => listed(operand)?,
            "_nin" => !listed(operand)?,
            other => {
                return Err(PlatformError::InvalidQuery(format!(
                    "filter operator \"{other}\" is not supported here (_eq, _neq, _in, _nin)"
                )))
            }
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use host_sdk::schema::{Alias, Field};
    use platform_store::query::ListParam;

    fn schema() -> Schema {
        let mut s = Schema::default();
        s.insert(CollectionDef::new(
            "platform_users",
            vec![Field::string("email")],
        ));
        s.insert(CollectionDef::new("platform_files", vec![]));
        s.insert(CollectionDef::new(
            "videos",
            vec![
                Field::string("title").not_null(),
                Field::reference("poster", "platform_files"),
                Field::json("tags"),
            ],
        ));
        s.insert(CollectionDef::new(
            "videos_models",
            vec![
                Field::reference("videos_id", "videos"),
                Field::reference("platform_users_id", "platform_users"),
            ],
        ));
        s.insert(CollectionDef::new("platform_signing_keys", vec![]));
        s.add_alias(
            "videos",
            Alias {
                alias: "models".into(),
                related: "videos_models".into(),
                field: "videos_id".into(),
                sort: None,
            },
        );
        s
    }

    fn everything() -> Readable {
        Readable {
            all: true,
            grants: BTreeMap::new(),
        }
    }

    #[test]
    fn internal_collections_and_secrets_are_never_listed() {
        let s = schema();
        let names: Vec<String> = served(&s).iter().map(|d| d.name.clone()).collect();
        assert!(!names.contains(&"platform_signing_keys".to_string()));
        let r = everything();
        assert!(!r.field("platform_users", "password"));
        assert!(r.field("platform_users", "email"));
    }

    #[test]
    fn fields_have_directus_types_and_specials() {
        let s = schema();
        let all = field_objects(&s, &everything(), Some("videos"));
        let by = |name: &str| all.iter().find(|f| f["field"] == name).cloned().unwrap();
        assert_eq!(by("id")["meta"]["special"], json!(["uuid"]));
        assert_eq!(by("id")["schema"]["is_primary_key"], json!(true));
        assert_eq!(by("title")["type"], "string");
        assert_eq!(by("title")["schema"]["is_nullable"], json!(false));
        assert_eq!(by("poster")["meta"]["interface"], "file");
        assert_eq!(
            by("poster")["schema"]["foreign_key_table"],
            "platform_files"
        );
        assert_eq!(by("tags")["meta"]["special"], json!(["cast-json"]));
        assert_eq!(by("models")["type"], "alias");
        assert_eq!(by("models")["schema"], Value::Null);
        assert_eq!(by("models")["meta"]["special"], json!(["m2m"]));
        assert!(by("title")["meta"].get("system").is_none());
        let users = field_objects(&s, &everything(), Some("platform_users"));
        assert_eq!(users[0]["meta"]["system"], json!(true));
    }

    #[test]
    fn a_junction_relation_names_its_alias_and_other_side() {
        let s = schema();
        let all = relation_objects(&s, &everything());
        let rel = all
            .iter()
            .find(|r| r["collection"] == "videos_models" && r["field"] == "videos_id")
            .unwrap();
        assert_eq!(rel["related_collection"], "videos");
        assert_eq!(rel["meta"]["one_field"], "models");
        assert_eq!(rel["meta"]["junction_field"], "platform_users_id");
        let other = all
            .iter()
            .find(|r| r["field"] == "platform_users_id")
            .unwrap();
        assert_eq!(other["meta"]["one_field"], Value::Null);
        assert_eq!(other["meta"]["junction_field"], "videos_id");
        let poster = all.iter().find(|r| r["field"] == "poster").unwrap();
        assert_eq!(poster["schema"]["on_delete"], "SET NULL");
    }

    #[test]
    fn a_grant_narrows_fields_and_relations() {
        let s = schema();
        let mut grants = BTreeMap::new();
        grants.insert(
            "videos".to_string(),
            Some(CollectionGrant::test_fields(&["id", "title", "poster"])),
        );
        let r = Readable { all: false, grants };
        let fields: Vec<Value> = field_objects(&s, &r, None)
            .into_iter()
            .map(|f| f["field"].clone())
            .collect();
        assert_eq!(fields, vec![json!("id"), json!("title"), json!("poster")]);
        // The files collection is not readable: the poster's relation is not listed.
        assert!(relation_objects(&s, &r).is_empty());
    }

    #[test]
    fn queries_filter_sort_limit_and_pick_fields() {
        let s = schema();
        let all = field_objects(&s, &everything(), None);
        let q = WireQuery {
            filter: Some(json!({"type": {"_eq": "uuid"}, "collection": {"_in": ["videos"]}})),
            sort: Some(ListParam::Text("-field".into())),
            limit: Some(1),
            fields: Some(ListParam::Text("field,meta.interface".into())),
            ..WireQuery::default()
        };
        let out = shape(all.clone(), &q, &["collection", "field", "type"]).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["field"], "poster");
        assert!(out[0].get("schema").is_none());
        assert!(out[0]["meta"].is_object());
        let bad = WireQuery {
            filter: Some(json!({"meta": {"_eq": 1}})),
            ..WireQuery::default()
        };
        assert!(matches!(
            shape(all, &bad, &["collection"]),
            Err(PlatformError::InvalidQuery(_))
        ));
    }
}
