//! What a set of policies allows: per collection and action, a row filter,
//! the allowed fields and the presets of created items; and the grants
//! migrations declare ([`MigrationGrants`]).

use std::collections::HashMap;

use host_sdk::schema::Step;
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use platform_store::query::{Filter, ReadQuery};
use platform_store::schema::{CollectionDef, Schema};
use platform_store::storage::{migrate, read_with, StepRules, Store, StoreError, Writer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Create,
    Read,
    Update,
    Delete,
}

/// The combined permission of several policies for one collection and action.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionGrant {
    /// Raw filter (with `$CURRENT_USER`…) the items must match; `None`: all items.
    pub filter: Option<Value>,
    /// Allowed fields; `None`: all.
    pub fields: Option<Vec<String>>,
    /// Values forced onto created items.
    pub presets: Map<String, Value>,
    /// The rules combined, each its row filter and fields: a field that
    /// only some of them allow is seen on their rows alone.
    rules: Vec<(Option<Value>, Option<Vec<String>>)>,
}

impl CollectionGrant {
    /// Every row, only these fields.
    #[cfg(test)]
    pub fn test_fields(fields: &[&str]) -> Self {
        let fields = Some(fields.iter().map(|f| f.to_string()).collect::<Vec<_>>());
        Self {
            filter: None,
            fields: fields.clone(),
            presets: Map::new(),
            rules: vec![(None, fields)],
        }
    }

    pub fn allows_field(&self, field: &str) -> bool {
        self.fields
            .as_ref()
            .is_none_or(|list| list.iter().any(|f| f == field))
    }

    /// The raw filter of the rows on which `field` is seen, when that is
    /// narrower than the grant's own rows: the rules that allow it have
    /// filters, and some rule that does not allow it admits rows they may
    /// not. `None`: seen on every row the grant admits (or nowhere).
    pub fn field_rows(&self, field: &str) -> Option<Value> {
        let allows = |fields: &Option<Vec<String>>| {
            fields
                .as_ref()
                .is_none_or(|list| list.iter().any(|f| f == field))
        };
        if self.rules.iter().all(|(_, fields)| allows(fields)) {
            return None;
        }
        let mut filters = Vec::new();
        for (filter, fields) in &self.rules {
            if allows(fields) {
                // A rule without a filter shows the field on every row.
                filters.push(filter.clone()?);
            }
        }
        match filters.len() {
            0 => None,
            1 => filters.pop(),
            _ => Some(json!({ "_or": filters })),
        }
    }
}

#[derive(Debug, Clone)]
struct Row {
    filter: Option<Value>,
    fields: Option<Vec<String>>,
    presets: Map<String, Value>,
}

/// The permission rows of one set of policies.
#[derive(Debug, Default)]
pub struct PermissionSet {
    rows: HashMap<(String, Action), Vec<Row>>,
}

impl PermissionSet {
    /// The collections the action is permitted on (on some of their
    /// items, at least), sorted.
    pub fn collections(&self, action: Action) -> Vec<String> {
        let mut out: Vec<String> = self
            .rows
            .keys()
            .filter(|(_, a)| *a == action)
            .map(|(c, _)| c.clone())
            .collect();
        out.sort();
        out
    }

    /// `None`: the action is not permitted at all.
    pub fn grant(&self, collection: &str, action: Action) -> Option<CollectionGrant> {
        let rows = self.rows.get(&(collection.to_string(), action))?;
        let mut filter_parts = Vec::new();
        let mut unrestricted = false;
        let mut fields: Option<Vec<String>> = Some(Vec::new());
        let mut presets = Map::new();
        let mut rules = Vec::with_capacity(rows.len());
        for row in rows {
            rules.push((row.filter.clone(), row.fields.clone()));
            match &row.filter {
                None => unrestricted = true,
                Some(f) => filter_parts.push(f.clone()),
            }
            union_fields(&mut fields, &row.fields);
            for (k, v) in &row.presets {
                presets.insert(k.clone(), v.clone());
            }
        }
        let filter = if unrestricted {
            None
        } else if filter_parts.len() == 1 {
            filter_parts.pop()
        } else {
            Some(json!({ "_or": filter_parts }))
        };
        Some(CollectionGrant {
            filter,
            fields,
            presets,
            rules,
        })
    }
}

/// Adds the fields of one rule to those of the rules before it: `None`
/// (every field) once any rule allows every field, else the union.
fn union_fields(fields: &mut Option<Vec<String>>, rule: &Option<Vec<String>>) {
    match (fields.as_mut(), rule) {
        (_, None) => *fields = None,
        (Some(list), Some(more)) => {
            for f in more {
                if !list.contains(f) {
                    list.push(f.clone());
                }
            }
        }
        (None, Some(_)) => {}
    }
}

impl PermissionSet {
    /// What the set allows on each collection it names, in Directus 11's
    /// shape of `GET /permissions/me`: per action, `access` (`none`,
    /// `partial` when every rule of the action has a row filter, `full`),
    /// the fields allowed (`["*"]` for all) and the presets merged. `share`
    /// is always `none`: the platform has no shares.
    pub fn collection_access(&self) -> Map<String, Value> {
        let mut out = Map::new();
        let mut collections: Vec<&String> = self.rows.keys().map(|(c, _)| c).collect();
        collections.sort();
        collections.dedup();
        for collection in collections {
            let mut actions = Map::new();
            for (name, action) in ACTIONS {
                actions.insert(name.into(), self.action_access(collection, action));
            }
            actions.insert("share".into(), json!({"access": "none"}));
            out.insert(collection.clone(), Value::Object(actions));
        }
        out
    }

    fn action_access(&self, collection: &str, action: Action) -> Value {
        let Some(rows) = self.rows.get(&(collection.to_string(), action)) else {
            return json!({"access": "none"});
        };
        let full = rows.iter().any(|row| row.filter.is_none());
        let mut fields: Option<Vec<String>> = Some(Vec::new());
        let mut presets = Map::new();
        for row in rows {
            union_fields(&mut fields, &row.fields);
            presets.extend(row.presets.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let mut access = json!({
            "access": if full { "full" } else { "partial" },
            "fields": fields.unwrap_or_else(|| vec!["*".into()]),
        });
        if !presets.is_empty() {
            access["presets"] = Value::Object(presets);
        }
        access
    }
}

/// The actions a permission may name, as stored.
pub const ACTIONS: [(&str, Action); 4] = [
    ("create", Action::Create),
    ("read", Action::Read),
    ("update", Action::Update),
    ("delete", Action::Delete),
];

/// Every action allowed in full on every field: what an administrator
/// may do on any collection, in the shape of
/// [`PermissionSet::collection_access`].
pub fn full_access() -> Value {
    let mut actions = Map::new();
    for (name, _) in ACTIONS {
        actions.insert(name.into(), json!({"access": "full", "fields": ["*"]}));
    }
    actions.insert("share".into(), json!({"access": "none"}));
    Value::Object(actions)
}

/// Why a permission row written through the API could not be applied, in
/// the words of an `INVALID_PAYLOAD` answer; `None` when it can. The row
/// is the permission as it would be stored (`collection`, `action`,
/// `fields`, `permissions`, `validation`); `def` is its collection, `None`
/// when no such collection is served.
pub fn permission_problem(def: Option<&CollectionDef>, row: &Map<String, Value>) -> Option<String> {
    let text = |name: &str| row.get(name).and_then(Value::as_str).unwrap_or_default();
    let action = text("action");
    if !ACTIONS.iter().any(|(name, _)| *name == action) {
        let but = if action == "share" {
            " (\"share\" is not supported: the platform has no shares)"
        } else {
            ""
        };
        return Some(format!(
            "\"action\" must be one of \"create\", \"read\", \"update\" or \"delete\"{but}."
        ));
    }
    let Some(def) = def else {
        return Some(format!(
            "Collection \"{}\" doesn't exist.",
            text("collection")
        ));
    };
    match row.get("fields") {
        None | Some(Value::Null) => {}
        Some(Value::Array(fields)) => {
            for field in fields {
                match field.as_str() {
                    Some("*") => {}
                    Some(name) if def.has(name) || def.alias(name).is_some() => {}
                    Some(name) => {
                        return Some(format!(
                            "Field \"{name}\" doesn't exist in collection \"{}\".",
                            def.name
                        ))
                    }
                    None => return Some("\"fields\" must be a list of field names.".into()),
                }
            }
        }
        Some(_) => return Some("\"fields\" must be a list of field names.".into()),
    }
    for name in ["permissions", "validation"] {
        if let Some(filter) = row.get(name).filter(|f| !f.is_null()) {
            let vars = platform_store::query::Vars::new(Some(String::new()));
            if let Err(e) = platform_store::query::parse_filter(def, filter, &vars) {
                return Some(format!("\"{name}\" is not a valid filter: {e}"));
            }
        }
    }
    None
}

fn parse_fields(v: Option<&Value>) -> Option<Vec<String>> {
    let list: Vec<String> = v?
        .as_array()?
        .iter()
        .filter_map(|f| f.as_str().map(String::from))
        .collect();
    if list.iter().any(|f| f == "*") {
        None
    } else {
        Some(list)
    }
}

/// A cached permission set and the auth epoch it was loaded in.
type CachedSet = (u64, std::sync::Arc<PermissionSet>);

/// Loads and caches permission sets by policy list.
#[derive(Default)]
pub struct Permissions {
    cache: Mutex<HashMap<Vec<String>, CachedSet>>,
}

impl Permissions {
    pub fn for_policies(
        &self,
        store: &dyn Store,
        policies: &[String],
        epoch: u64,
    ) -> Result<std::sync::Arc<PermissionSet>, StoreError> {
        if let Some((e, set)) = self.cache.lock().get(policies) {
            if *e == epoch {
                return Ok(set.clone());
            }
        }
        let set = std::sync::Arc::new(load(store, policies)?);
        let mut cache = self.cache.lock();
        if cache.len() > 1000 {
            cache.clear();
        }
        cache.insert(policies.to_vec(), (epoch, set.clone()));
        Ok(set)
    }
}

fn load(store: &dyn Store, policies: &[String]) -> Result<PermissionSet, StoreError> {
    let mut set = PermissionSet::default();
    if policies.is_empty() {
        return Ok(set);
    }
    let schema = store.schema();
    let Some(perms) = schema.get("platform_permissions") else {
        return Ok(set);
    };
    let mut q = ReadQuery::all_fields(perms);
    q.filter = Some(Filter::is_in(
        "policy",
        policies.iter().map(|p| Value::String(p.clone())).collect(),
    ));
    let rows = read_with(store, |conn| conn.select(perms, &q))?;
    for row in rows {
        let collection = row
            .get("collection")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let action = match row.get("action").and_then(Value::as_str) {
            Some("create") => Action::Create,
            Some("read") => Action::Read,
            Some("update") => Action::Update,
            Some("delete") => Action::Delete,
            _ => continue,
        };
        let filter = match row.get("permissions") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) if m.is_empty() => None,
            Some(f) => Some(f.clone()),
        };
        let presets = match row.get("presets") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        set.rows
            .entry((collection.to_string(), action))
            .or_default()
            .push(Row {
                filter,
                fields: parse_fields(row.get("fields")),
                presets,
            });
    }
    Ok(set)
}

/// The grants of migrations (`Step::Grant`, an extension's permissions for
/// a policy named by its name), the one step the store leaves to the
/// platform: a permission row, made in the migration's transaction unless
/// the policy has one for that collection and action already (kept as it
/// is); a grant for a policy that does not exist is not made. A grant the
/// platform could not apply fails its migration.
pub struct MigrationGrants;

/// Where grants go.
const PERMISSIONS: &str = "platform_permissions";
/// The policies grants name.
const POLICIES: &str = "platform_policies";

impl StepRules for MigrationGrants {
    fn apply(
        &self,
        conn: &mut dyn Writer,
        schema: &Schema,
        step: &Step,
        label: &str,
    ) -> Result<(), StoreError> {
        if let Step::ChangeGrant {
            policy,
            collection,
            action,
            from,
            to,
        } = step
        {
            return change_grant(conn, schema, label, (policy, collection, action), from, to);
        }
        let Step::Grant {
            policy,
            collection,
            action,
            permissions,
            fields,
            presets,
        } = step
        else {
            return Err(StoreError::Invalid(format!(
                "a step the platform does not know: {}",
                serde_json::to_string(step).unwrap_or_default()
            )));
        };
        let target = schema
            .get(collection)
            .ok_or_else(|| no_collection(collection))?;
        check_grant(target, action, permissions.as_ref(), fields.as_deref())?;
        let Some(policy_id) = policy_named(conn, schema, policy)? else {
            log::warn!(
                "{label}: no policy named `{policy}`: its {action} grant on {collection} was not made"
            );
            return Ok(());
        };
        let def = schema
            .get(PERMISSIONS)
            .ok_or_else(|| no_collection(PERMISSIONS))?;
        let existing = ReadQuery::select(
            &["id"],
            Filter::And(vec![
                Filter::eq("policy", json!(policy_id)),
                Filter::eq("collection", json!(collection)),
                Filter::eq("action", json!(action)),
            ]),
        )
        .limit(1);
        if !conn.select(def, &existing)?.is_empty() {
            log::info!(
                "{label}: `{policy}` has a {action} permission on {collection} already: kept as it is"
            );
            return Ok(());
        }
        let row = json!({
            "policy": policy_id,
            "collection": collection,
            "action": action,
            "permissions": permissions,
            "fields": fields.clone().unwrap_or_else(|| vec!["*".into()]),
            "presets": presets,
        });
        let record = migrate::seed_record(def, &row, &platform_store::values::now_timestamp())?;
        conn.insert(def, &record)
    }
}

/// The id of the policy named `name` (the first made, when several are).
fn policy_named(
    conn: &mut dyn Writer,
    schema: &Schema,
    name: &str,
) -> Result<Option<String>, StoreError> {
    let policies = schema
        .get(POLICIES)
        .ok_or_else(|| no_collection(POLICIES))?;
    let named = ReadQuery {
        sort: vec![("id".into(), false)],
        ..ReadQuery::select(&["id"], Filter::eq("name", json!(name)))
    }
    .limit(1);
    Ok(conn
        .select(policies, &named)?
        .first()
        .and_then(|row| row.get("id"))
        .and_then(Value::as_str)
        .map(String::from))
}

/// A rule's row filter as compared: an empty filter is none.
fn rule_filter(value: Option<&Value>) -> Option<Value> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) if m.is_empty() => None,
        Some(f) => Some(f.clone()),
    }
}

/// A rule's fields as compared: a set, `None` for all.
fn rule_fields(value: Option<&Value>) -> Option<std::collections::BTreeSet<String>> {
    parse_fields(value).map(|list| list.into_iter().collect())
}

/// [`Step::ChangeGrant`]: every permission of the policy for the action on
/// the collection that is still `from` becomes `to`; one changed since is
/// kept as it is. Idempotent: run again, nothing is still `from` (unless
/// `from` equals `to`, which changes nothing).
fn change_grant(
    conn: &mut dyn Writer,
    schema: &Schema,
    label: &str,
    (policy, collection, action): (&str, &str, &str),
    from: &host_sdk::schema::GrantRule,
    to: &host_sdk::schema::GrantRule,
) -> Result<(), StoreError> {
    let target = schema
        .get(collection)
        .ok_or_else(|| no_collection(collection))?;
    check_grant(
        target,
        action,
        to.permissions.as_ref(),
        to.fields.as_deref(),
    )?;
    let Some(policy_id) = policy_named(conn, schema, policy)? else {
        log::warn!("{label}: no policy named `{policy}`: its {action} rule on {collection} was not changed");
        return Ok(());
    };
    let def = schema
        .get(PERMISSIONS)
        .ok_or_else(|| no_collection(PERMISSIONS))?;
    let rules = ReadQuery::select(
        &["id", "permissions", "fields"],
        Filter::And(vec![
            Filter::eq("policy", json!(policy_id)),
            Filter::eq("collection", json!(collection)),
            Filter::eq("action", json!(action)),
        ]),
    );
    let as_granted = |row: &Map<String, Value>| {
        rule_filter(row.get("permissions")) == rule_filter(from.permissions.as_ref())
            && rule_fields(row.get("fields"))
                == rule_fields(from.fields.as_ref().map(|f| json!(f)).as_ref())
    };
    let (mut changed, mut kept) = (0, 0);
    for row in conn.select(def, &rules)? {
        let Some(id) = row.get("id").and_then(Value::as_str) else {
            continue;
        };
        if !as_granted(&row) {
            let as_wanted = rule_filter(row.get("permissions"))
                == rule_filter(to.permissions.as_ref())
                && rule_fields(row.get("fields"))
                    == rule_fields(to.fields.as_ref().map(|f| json!(f)).as_ref());
            if !as_wanted {
                kept += 1;
            }
            continue;
        }
        let mut columns = platform_store::storage::Columns::new();
        for (name, value) in [
            ("permissions", to.permissions.clone().unwrap_or(Value::Null)),
            (
                "fields",
                json!(to.fields.clone().unwrap_or_else(|| vec!["*".into()])),
            ),
        ] {
            let field = def
                .field(name)
                .ok_or_else(|| StoreError::Invalid(format!("no field {name} in {PERMISSIONS}")))?;
            columns.insert(
                name.into(),
                platform_store::storage::codec::to_scalar(field, &value),
            );
        }
        conn.update(def, id, &columns)?;
        changed += 1;
    }
    if changed > 0 {
        log::info!("{label}: changed {changed} {action} rule(s) of `{policy}` on {collection}");
    }
    if kept > 0 {
        log::info!(
            "{label}: kept {kept} {action} rule(s) of `{policy}` on {collection} as an administrator changed them"
        );
    }
    Ok(())
}

fn no_collection(collection: &str) -> StoreError {
    StoreError::Invalid(format!("no collection {collection}"))
}

/// Refuses a grant the platform could not apply: an unknown action or
/// field, or a row filter that does not parse on the collection.
fn check_grant(
    def: &CollectionDef,
    action: &str,
    filter: Option<&Value>,
    fields: Option<&[String]>,
) -> Result<(), StoreError> {
    if !matches!(action, "create" | "read" | "update" | "delete") {
        return Err(StoreError::Invalid(format!(
            "grant on {}: unknown action `{action}` (create, read, update or delete)",
            def.name
        )));
    }
    if let Some(field) = fields
        .unwrap_or_default()
        .iter()
        .find(|f| *f != "*" && !def.has(f))
    {
        return Err(StoreError::Invalid(format!(
            "grant on {}: unknown field {field}",
            def.name
        )));
    }
    if let Some(filter) = filter.filter(|f| !f.is_null()) {
        let vars = platform_store::query::Vars::new(Some(String::new()));
        platform_store::query::parse_filter(def, filter, &vars)
            .map_err(|e| StoreError::Invalid(format!("grant on {}: {e}", def.name)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestRow<'a> = (&'a str, Action, Option<Value>, Option<Vec<&'a str>>);

    fn set(rows: Vec<TestRow<'_>>) -> PermissionSet {
        let mut s = PermissionSet::default();
        for (c, a, filter, fields) in rows {
            s.rows.entry((c.into(), a)).or_default().push(Row {
                filter,
                fields: fields.map(|f| f.into_iter().map(String::from).collect()),
                presets: Map::new(),
            });
        }
        s
    }

    #[test]
    fn no_row_means_forbidden() {
        let s = set(vec![("recordings", Action::Read, None, None)]);
        assert!(s.grant("recordings", Action::Update).is_none());
        assert!(s.grant("videos", Action::Read).is_none());
        assert_eq!(s.grant("recordings", Action::Read).unwrap().filter, None);
    }

    #[test]
    fn filters_of_several_policies_are_ored_and_fields_unioned() {
        let own = json!({"user_created": {"_eq": "$CURRENT_USER"}});
        let public = json!({"public": {"_eq": true}});
        let s = set(vec![
            (
                "recordings",
                Action::Read,
                Some(own.clone()),
                Some(vec!["id", "title"]),
            ),
            (
                "recordings",
                Action::Read,
                Some(public.clone()),
                Some(vec!["id", "public"]),
            ),
        ]);
        let g = s.grant("recordings", Action::Read).unwrap();
        assert_eq!(g.filter, Some(json!({"_or": [own, public]})));
        assert!(g.allows_field("title") && g.allows_field("public"));
        assert!(!g.allows_field("events"));
    }

    #[test]
    fn the_collections_of_an_action_are_listed_once_each() {
        let own = json!({"user_created": {"_eq": "$CURRENT_USER"}});
        let s = set(vec![
            ("recordings", Action::Read, Some(own.clone()), None),
            ("recordings", Action::Read, None, Some(vec!["id"])),
            ("articles", Action::Read, None, None),
            ("video_likes", Action::Create, Some(own), None),
        ]);
        assert_eq!(s.collections(Action::Read), vec!["articles", "recordings"]);
        assert_eq!(s.collections(Action::Create), vec!["video_likes"]);
        assert!(s.collections(Action::Delete).is_empty());
    }

    #[test]
    fn an_unrestricted_row_wins() {
        let s = set(vec![
            (
                "recordings",
                Action::Read,
                Some(json!({"public": {"_eq": true}})),
                None,
            ),
            ("recordings", Action::Read, None, Some(vec!["*"])),
        ]);
        assert_eq!(s.grant("recordings", Action::Read).unwrap().filter, None);
    }

    #[test]
    fn collection_access_is_directus_shaped() {
        let own = json!({"user_created": {"_eq": "$CURRENT_USER"}});
        let mut s = set(vec![
            (
                "recordings",
                Action::Read,
                Some(own.clone()),
                Some(vec!["id"]),
            ),
            ("recordings", Action::Read, None, Some(vec!["title"])),
            ("recordings", Action::Update, Some(own), None),
        ]);
        if let Some(rows) = s.rows.get_mut(&("recordings".into(), Action::Read)) {
            rows[0].presets.insert("public".into(), json!(false));
        }
        let access = s.collection_access();
        assert_eq!(
            access["recordings"],
            json!({
                "read": {"access": "full", "fields": ["id", "title"], "presets": {"public": false}},
                "update": {"access": "partial", "fields": ["*"]},
                "create": {"access": "none"},
                "delete": {"access": "none"},
                "share": {"access": "none"},
            })
        );
        assert_eq!(access.len(), 1);
    }

    #[test]
    fn a_permission_the_platform_cannot_apply_is_explained() {
        use platform_store::schema::Field;
        let things = CollectionDef::new("things", vec![Field::string("name")]);
        let def = Some(&things);
        let row = |v: Value| v.as_object().cloned().unwrap_or_default();
        let ok = row(
            json!({"collection": "things", "action": "read", "fields": ["*", "name"],
            "permissions": {"name": {"_eq": "x"}}, "validation": null}),
        );
        assert_eq!(permission_problem(def, &ok), None);
        for (bad, words) in [
            (
                json!({"collection": "things", "action": "share"}),
                "\"share\" is not supported",
            ),
            (
                json!({"collection": "things", "action": "peek"}),
                "\"action\" must be one of",
            ),
            (
                json!({"collection": "things", "action": "read", "fields": ["nope"]}),
                "Field \"nope\" doesn't exist",
            ),
            (
                json!({"collection": "things", "action": "read", "permissions": {"nope": {"_eq": 1}}}),
                "\"permissions\" is not a valid filter",
            ),
            (
                json!({"collection": "things", "action": "read", "validation": {"name": {"_bogus": 1}}}),
                "\"validation\" is not a valid filter",
            ),
        ] {
            let problem = permission_problem(def, &row(bad.clone())).unwrap_or_default();
            assert!(problem.contains(words), "{bad}: {problem}");
        }
        let nowhere = row(json!({"collection": "nowhere", "action": "read"}));
        assert_eq!(
            permission_problem(None, &nowhere).as_deref(),
            Some("Collection \"nowhere\" doesn't exist.")
        );
    }

    /// A store on a throwaway SQLite file with the platform's collections,
    /// a collection `things` and the policy `Viewer`.
    fn granting_store() -> (tempfile::TempDir, std::sync::Arc<dyn Store>) {
        use host_sdk::schema::{Collection, Field};
        let dir = tempfile::tempdir().expect("temp dir");
        let store: std::sync::Arc<dyn Store> = std::sync::Arc::new(
            platform_store::storage::sqlite::SqliteStore::open(&dir.path().join("t.db"), Some(4))
                .expect("open"),
        );
        for (id, steps) in crate::platform_schema::migrations() {
            store
                .migrate(crate::platform_schema::OWNER, id, &steps, &MigrationGrants)
                .expect("migrate");
        }
        let things = Collection::new("things")
            .field(Field::string("name"))
            .build();
        let viewer = Step::InsertItems {
            collection: POLICIES.into(),
            items: vec![json!({"name": "Viewer"})],
        };
        store
            .migrate("test", "0001", &[things, viewer], &MigrationGrants)
            .expect("migrate");
        (dir, store)
    }

    /// The permission rows of `things`: (action, fields).
    fn rows_on_things(store: &dyn Store) -> Vec<(String, Value)> {
        let schema = store.schema();
        let def = schema.get(PERMISSIONS).expect("permissions");
        let q = ReadQuery::select(
            &["action", "fields"],
            Filter::eq("collection", json!("things")),
        );
        let mut rows: Vec<(String, Value)> = read_with(store, |conn| conn.select(def, &q))
            .expect("read")
            .into_iter()
            .map(|r| {
                (
                    r["action"].as_str().unwrap_or_default().into(),
                    r["fields"].clone(),
                )
            })
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows
    }

    #[test]
    fn a_grant_the_platform_could_not_apply_fails_its_migration() {
        use host_sdk::schema::Grant;
        let (_dir, store) = granting_store();
        for (i, (grant, error)) in [
            (
                Grant::new("Viewer", "nowhere", "read"),
                "no collection nowhere",
            ),
            (
                Grant::new("Viewer", "things", "peek"),
                "unknown action `peek`",
            ),
            (
                Grant::new("Viewer", "things", "read").fields(&["name", "nope"]),
                "unknown field nope",
            ),
            (
                Grant::new("Viewer", "things", "read").filter(json!({"nope": {"_eq": 1}})),
                "unknown field \"nope\"",
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let e = store
                .migrate(
                    "test",
                    &format!("grant{i}"),
                    &[grant.build()],
                    &MigrationGrants,
                )
                .expect_err("refused");
            assert!(e.to_string().contains(error), "{e}");
        }
        assert!(rows_on_things(store.as_ref()).is_empty());
    }

    #[test]
    fn a_grant_is_made_once_for_a_policy_that_exists() {
        use host_sdk::schema::Grant;
        let (_dir, store) = granting_store();
        let read = Grant::new("Viewer", "things", "read").fields(&["name"]);
        assert!(store
            .migrate("test", "grant", &[read.build()], &MigrationGrants)
            .expect("granted"));
        assert_eq!(
            rows_on_things(store.as_ref()),
            [("read".to_string(), json!(["name"]))]
        );
        // The policy's permission is kept as it is; no policy, no grant.
        let again = Grant::new("Viewer", "things", "read");
        let nobody = Grant::new("Nobody", "things", "create");
        store
            .migrate(
                "test",
                "again",
                &[again.build(), nobody.build()],
                &MigrationGrants,
            )
            .expect("applied");
        assert_eq!(
            rows_on_things(store.as_ref()),
            [("read".to_string(), json!(["name"]))]
        );
        let create = Grant::new("Viewer", "things", "create");
        store
            .migrate("test", "create", &[create.build()], &MigrationGrants)
            .expect("granted");
        assert_eq!(
            rows_on_things(store.as_ref()),
            [
                ("create".to_string(), json!(["*"])),
                ("read".to_string(), json!(["name"]))
            ]
        );
    }
}
