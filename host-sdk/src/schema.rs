//! Schema migrations, declared independently of the database.
//!
//! An extension ships its collections as a list of [`Step`]s; the host
//! translates them for its storage backend (SQLite today). Every collection
//! has an implicit primary key `id`: a UUID v4 string the host assigns.
//! Fields named `date_created`, `user_created` and `date_updated` are filled
//! by the host on create (and update) when a collection has them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The type of a field's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    /// A UUID string (keys and references).
    Uuid,
    /// A short string.
    String,
    /// A long string.
    Text,
    /// A 64-bit integer.
    Integer,
    /// A double-precision number.
    Float,
    /// True or false.
    Boolean,
    /// An RFC 3339 UTC timestamp with milliseconds (`2026-11-22T10:00:00.000Z`).
    Timestamp,
    /// Any JSON value, stored and returned as JSON.
    Json,
}

/// One field of a collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    /// Its name.
    pub field: String,
    #[serde(rename = "type")]
    /// The type of its values.
    pub kind: FieldType,
    /// Whether null is allowed (default true).
    #[serde(default = "yes")]
    pub nullable: bool,
    /// The value stored when a create omits the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// A unique constraint on this field alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unique: bool,
    /// The collection this field refers to (a many-to-one relation). The
    /// platform accepts only keys of existing items in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub references: Option<String>,
    /// What deleting the referred item does to the items referring to it
    /// through this field; undeclared, [`OnDelete::SetNull`] for a nullable
    /// field and [`OnDelete::Refuse`] for another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_delete: Option<OnDelete>,
    /// What a client shows of the field (SDK 1.12); `None`: what its type
    /// suggests. Kept out of the JSON when unset, so hosts and libraries
    /// of earlier versions read the definition alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<FieldMeta>,
}

/// A field's metadata for clients (SDK 1.12), Directus's field `meta`:
/// the host answers it on `/fields`. Each key left `None` keeps the
/// default the field's type gives (or what an earlier step set).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FieldMeta {
    /// The editing interface (`input`, `select-dropdown`, an extension's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// The interface's options, an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
    /// How a value is shown (`formatted-value`, `labels`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// The display's options, an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_options: Option<Value>,
    /// A note shown beside the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Hidden in forms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<bool>,
    /// Shown but not editable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readonly: Option<bool>,
    /// Required in forms (the field's `nullable` is what the platform enforces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// `half`, `full` or `fill`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<String>,
    /// The field's place in forms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<i64>,
    /// A filter values must match in forms, an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<Value>,
    /// Directus's special flags (`cast-json`, `m2o`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub special: Option<Vec<String>>,
    /// The group (an alias of the collection) the field is shown in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// A collection's metadata for clients (SDK 1.12), Directus's collection
/// `meta`: the host answers it on `/collections`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CollectionMeta {
    /// A Material icon name (`movie`, `article`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// A note shown beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Hidden in forms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<bool>,
    /// One item only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub singleton: Option<bool>,
    /// How an item is named in lists (`{{title}}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_template: Option<String>,
    /// A field of the collection items are sorted by by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_field: Option<String>,
    /// A field of the collection whose value marks an item archived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_field: Option<String>,
    /// The archive field's value of an archived item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_value: Option<String>,
    /// The value an item gets when unarchived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unarchive_value: Option<String>,
    /// A CSS colour for the icon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    /// The collection it is listed under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Its place in lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<i64>,
}

/// A name of an interface, display or special flag: lower-case letters,
/// digits and `-`.
fn check_name(what: &str, name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} \"{name}\": lower-case letters, digits and - only"
        ))
    }
}

fn check_object(what: &str, value: &Option<Value>) -> Result<(), String> {
    match value {
        None | Some(Value::Object(_)) => Ok(()),
        Some(_) => Err(format!("{what} must be an object")),
    }
}

impl FieldMeta {
    /// Why this metadata cannot be served, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if let Some(name) = &self.interface {
            check_name("interface", name)?;
        }
        if let Some(name) = &self.display {
            check_name("display", name)?;
        }
        for flag in self.special.iter().flatten() {
            check_name("special", flag)?;
        }
        check_object("options", &self.options)?;
        check_object("display_options", &self.display_options)?;
        check_object("validation", &self.validation)?;
        match self.width.as_deref() {
            None | Some("half" | "full" | "fill") => Ok(()),
            Some(other) => Err(format!("width \"{other}\": half, full or fill")),
        }
    }

    /// `self`, with what `later` sets in its place.
    pub fn merged(mut self, later: &FieldMeta) -> FieldMeta {
        macro_rules! take {
            ($($key:ident),*) => {$(
                if later.$key.is_some() {
                    self.$key = later.$key.clone();
                }
            )*};
        }
        take!(
            interface,
            options,
            display,
            display_options,
            note,
            hidden,
            readonly,
            required,
            width,
            sort,
            validation,
            special,
            group
        );
        self
    }
}

impl CollectionMeta {
    /// `self`, with what `later` sets in its place.
    pub fn merged(mut self, later: &CollectionMeta) -> CollectionMeta {
        macro_rules! take {
            ($($key:ident),*) => {$(
                if later.$key.is_some() {
                    self.$key = later.$key.clone();
                }
            )*};
        }
        take!(
            icon,
            note,
            hidden,
            singleton,
            display_template,
            sort_field,
            archive_field,
            archive_value,
            unarchive_value,
            color,
            group,
            sort
        );
        self
    }
}

/// What deleting an item does to the items that refer to it (SDK 1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnDelete {
    /// The reference is set to null (through the items service, so hooks
    /// see the update).
    SetNull,
    /// The referring items are deleted too (through the items service, so
    /// hooks see each delete, and their own references apply in turn).
    Cascade,
    /// The delete is refused (400 `INVALID_PAYLOAD`) while an item refers
    /// to it.
    Refuse,
}

impl Field {
    /// The rule that applies when the referred item is deleted.
    pub fn delete_rule(&self) -> OnDelete {
        self.on_delete.unwrap_or(if self.nullable {
            OnDelete::SetNull
        } else {
            OnDelete::Refuse
        })
    }
}

fn yes() -> bool {
    true
}

impl Field {
    /// A nullable field of this type, with no default.
    pub fn new(field: &str, kind: FieldType) -> Self {
        Self {
            field: field.to_string(),
            kind,
            nullable: true,
            default: None,
            unique: false,
            references: None,
            on_delete: None,
            meta: None,
        }
    }
    /// A UUID field.
    pub fn uuid(field: &str) -> Self {
        Self::new(field, FieldType::Uuid)
    }
    /// A short string field.
    pub fn string(field: &str) -> Self {
        Self::new(field, FieldType::String)
    }
    /// A long string field.
    pub fn text(field: &str) -> Self {
        Self::new(field, FieldType::Text)
    }
    /// A 64-bit integer field.
    pub fn integer(field: &str) -> Self {
        Self::new(field, FieldType::Integer)
    }
    /// A double-precision number field.
    pub fn float(field: &str) -> Self {
        Self::new(field, FieldType::Float)
    }
    /// A boolean field.
    pub fn boolean(field: &str) -> Self {
        Self::new(field, FieldType::Boolean)
    }
    /// A timestamp field.
    pub fn timestamp(field: &str) -> Self {
        Self::new(field, FieldType::Timestamp)
    }
    /// A JSON field.
    pub fn json(field: &str) -> Self {
        Self::new(field, FieldType::Json)
    }
    /// A UUID field referring to an item of `collection`.
    pub fn reference(field: &str, collection: &str) -> Self {
        let mut f = Self::uuid(field);
        f.references = Some(collection.to_string());
        f
    }
    /// A reference that follows `rule` when the referred item is deleted.
    pub fn reference_with(field: &str, collection: &str, rule: OnDelete) -> Self {
        let mut f = Self::reference(field, collection);
        f.on_delete = Some(rule);
        f
    }
    /// Refuses null.
    pub fn not_null(mut self) -> Self {
        self.nullable = false;
        self
    }
    /// The value stored when a create omits the field.
    pub fn default(mut self, value: Value) -> Self {
        self.default = Some(value);
        self
    }
    /// A unique constraint on this field alone.
    pub fn unique(mut self) -> Self {
        self.unique = true;
        self
    }
    /// What a client shows of the field (SDK 1.12).
    pub fn meta(mut self, meta: FieldMeta) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// A one-to-many alias as the platform keeps it: see [`Step::CreateAlias`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alias {
    /// The alias's name in its collection.
    pub alias: String,
    /// The collection whose items it lists.
    pub related: String,
    /// The reference of `related` that points at the item.
    pub field: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The field of `related` the items are sorted by (default: `id`).
    pub sort: Option<String>,
}

/// An index over one or more fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    /// The fields, in order. A field written `-name` is indexed
    /// descending (SDK 1.13), so that a sort such as `["-score", "id"]`,
    /// whose directions differ, is a walk of the index rather than a sort
    /// of the table.
    pub fields: Vec<String>,
    #[serde(default)]
    /// Whether the combination is unique.
    pub unique: bool,
}

/// One step of a migration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Step {
    /// Creates a collection (with its `id` key) and its indexes.
    CreateCollection {
        /// Its name.
        collection: String,
        /// Its fields besides `id`.
        fields: Vec<Field>,
        /// Its indexes.
        #[serde(default)]
        indexes: Vec<Index>,
    },
    /// Adds a field to an existing collection.
    AddField {
        /// The collection.
        collection: String,
        /// The new field.
        field: Field,
    },
    /// Adds an index to an existing collection.
    CreateIndex {
        /// The collection.
        collection: String,
        /// The new index.
        index: Index,
    },
    /// Drops an index an earlier step created (SDK 1.19), named by the
    /// same collection and [`Index`]: one a later index serves every read
    /// of (it leads with the same fields), so that each write moves one
    /// entry fewer. Nothing happens when there is no such index. A unique
    /// index is a rule that writes keep, not a speed: the test kit's
    /// only-add check (`not_additive`) refuses a migration that drops one,
    /// and a step that names a unique index as plain (the two share a
    /// name) fails.
    DropIndex {
        /// The collection.
        collection: String,
        /// The index, as it was created.
        index: Index,
    },
    /// Declares what deleting the referred item does to a reference field
    /// that exists already (SDK 1.5).
    SetOnDelete {
        /// The collection of the reference field.
        collection: String,
        /// The reference field.
        field: String,
        /// What deleting the referred item does.
        on_delete: OnDelete,
    },
    /// Inserts seed items (ids are generated where missing). No item events
    /// are emitted for seed data.
    InsertItems {
        /// The collection.
        collection: String,
        /// The items, as JSON objects.
        items: Vec<Value>,
    },
    /// Grants a policy, by name, an action on a collection (SDK 1.8): what
    /// the seeded roles (`Model`, `Viewer`, whose policies have their
    /// names) or an administrator's named policies may do with the
    /// extension's data. Applied once, like every step: a later edit or
    /// delete of the permission by an administrator stands. Skipped, with
    /// a log line, when no policy has the name or when the policy has a
    /// permission for that collection and action already.
    Grant {
        /// The policy's name.
        policy: String,
        /// The collection.
        collection: String,
        /// `create`, `read`, `update` or `delete`.
        action: String,
        /// The row filter (`{"user_created": {"_eq": "$CURRENT_USER"}}`);
        /// `None`: every row.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        permissions: Option<Value>,
        /// The fields; `None`: all (`["*"]`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fields: Option<Vec<String>>,
        /// Values set on create or update whatever the payload says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        presets: Option<Value>,
    },
    /// Changes a rule a policy was granted (SDK 1.11): each permission of
    /// the policy (by name) for `action` on `collection` that is still
    /// exactly `from` (the rule as an earlier migration granted it)
    /// becomes `to`; a rule an administrator changed since is kept as it
    /// is, with a log line. So an extension widens its members' fields
    /// (a new writable field) or narrows a row filter in one migration, on
    /// databases made by earlier releases too.
    ChangeGrant {
        /// The policy's name.
        policy: String,
        /// The collection.
        collection: String,
        /// `create`, `read`, `update` or `delete`.
        action: String,
        /// The rule as it was granted.
        from: GrantRule,
        /// The rule it becomes.
        to: GrantRule,
    },
    /// Declares a one-to-many alias (SDK 1.8): `alias` of an item of
    /// `collection` reads as the items of `related` whose `field` refers to
    /// it, ordered by `sort` (default: their `id`). An alias stores nothing;
    /// `fields=alias` gives the related ids and `fields=alias.*` (or any
    /// deeper path) the related items, read under the caller's permissions
    /// on `related`. `*` covers stored fields only.
    CreateAlias {
        /// The collection that gets the alias.
        collection: String,
        /// The alias's name.
        alias: String,
        /// The collection whose items it lists.
        related: String,
        /// The field of `related` that refers to `collection`.
        field: String,
        /// The field of `related` the items are ordered by.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sort: Option<String>,
    },
    /// Sets what a client shows of a stored field that exists already
    /// (SDK 1.12): each key given replaces the one set before.
    SetFieldMeta {
        /// The collection.
        collection: String,
        /// The field.
        field: String,
        /// The keys to set.
        meta: FieldMeta,
    },
    /// Sets what a client shows of a collection (SDK 1.12): each key given
    /// replaces the one set before.
    SetCollectionMeta {
        /// The collection.
        collection: String,
        /// The keys to set.
        meta: CollectionMeta,
    },
}

impl Step {
    /// Why the metadata this step sets cannot be served, naming the
    /// field; `Ok` for a step that sets none.
    pub fn check_meta(&self) -> Result<(), String> {
        let field_meta = |collection: &str, field: &Field| match &field.meta {
            Some(meta) => meta
                .check()
                .map_err(|e| format!("{collection}.{}: {e}", field.field)),
            None => Ok(()),
        };
        match self {
            Step::CreateCollection {
                collection, fields, ..
            } => fields.iter().try_for_each(|f| field_meta(collection, f)),
            Step::AddField { collection, field } => field_meta(collection, field),
            Step::SetFieldMeta {
                collection,
                field,
                meta,
            } => meta
                .check()
                .map_err(|e| format!("{collection}.{field}: {e}")),
            Step::SetCollectionMeta { collection, meta } => {
                [&meta.sort_field, &meta.archive_field, &meta.group]
                    .into_iter()
                    .flatten()
                    .try_for_each(|name| {
                        if name.is_empty() {
                            Err(format!("{collection}: an empty field name in its meta"))
                        } else {
                            Ok(())
                        }
                    })
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod meta_tests {
    use super::*;

    #[test]
    fn invalid_metadata_is_refused_naming_the_field() {
        let bad = field_meta(
            "recordings",
            "events",
            FieldMeta {
                width: Some("wide".into()),
                ..FieldMeta::default()
            },
        );
        let err = bad.check_meta().unwrap_err();
        assert!(
            err.contains("recordings.events") && err.contains("wide"),
            "{err}"
        );
        let bad = Step::AddField {
            collection: "videos".into(),
            field: Field::json("tags").meta(FieldMeta {
                interface: Some("Not A Name".into()),
                ..FieldMeta::default()
            }),
        };
        assert!(bad.check_meta().unwrap_err().contains("videos.tags"));
        let options = FieldMeta {
            options: Some(serde_json::json!([1])),
            ..FieldMeta::default()
        };
        assert!(options.check().is_err());
        assert!(FieldMeta::default().check().is_ok());
    }

    #[test]
    fn a_field_without_meta_reads_as_before() {
        let text = serde_json::to_string(&Field::string("title")).unwrap();
        assert!(!text.contains("meta"), "{text}");
        let old: Field = serde_json::from_str(r#"{"field":"x","type":"string"}"#).unwrap();
        assert_eq!(old.meta, None);
        let merged = FieldMeta {
            note: Some("a".into()),
            ..FieldMeta::default()
        }
        .merged(&FieldMeta {
            interface: Some("input".into()),
            ..FieldMeta::default()
        });
        assert_eq!(merged.note.as_deref(), Some("a"));
        assert_eq!(merged.interface.as_deref(), Some("input"));
    }
}

/// [`Step::SetFieldMeta`].
pub fn field_meta(collection: &str, field: &str, meta: FieldMeta) -> Step {
    Step::SetFieldMeta {
        collection: collection.into(),
        field: field.into(),
        meta,
    }
}

/// [`Step::SetCollectionMeta`].
pub fn collection_meta(collection: &str, meta: CollectionMeta) -> Step {
    Step::SetCollectionMeta {
        collection: collection.into(),
        meta,
    }
}

/// A permission's rule, as [`Step::ChangeGrant`] compares and writes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GrantRule {
    /// The row filter; `None`: every row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Value>,
    /// The fields; `None`: all (`["*"]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<String>>,
}

impl GrantRule {
    /// Every row and field.
    pub fn all() -> Self {
        Self::default()
    }
    /// Only the rows matching `filter`.
    pub fn filter(mut self, filter: Value) -> Self {
        self.permissions = Some(filter);
        self
    }
    /// Only these fields.
    pub fn fields(mut self, names: &[&str]) -> Self {
        self.fields = Some(names.iter().map(|f| f.to_string()).collect());
        self
    }
}

/// [`Step::ChangeGrant`]: `policy`'s rule for `action` on `collection`,
/// still `from`, becomes `to`.
pub fn change_grant(
    policy: &str,
    collection: &str,
    action: &str,
    from: GrantRule,
    to: GrantRule,
) -> Step {
    Step::ChangeGrant {
        policy: policy.into(),
        collection: collection.into(),
        action: action.into(),
        from,
        to,
    }
}

/// Builder of a [`Step::Grant`]:
/// `Grant::new("Viewer", "notes", "read").filter(json!({"user_created": {"_eq": "$CURRENT_USER"}}))`.
#[derive(Debug, Clone)]
pub struct Grant {
    step: Step,
}

impl Grant {
    /// `policy` (by name) may do `action` (`create`, `read`, `update`,
    /// `delete`) on every row and field of `collection`.
    pub fn new(policy: &str, collection: &str, action: &str) -> Self {
        Self {
            step: Step::Grant {
                policy: policy.into(),
                collection: collection.into(),
                action: action.into(),
                permissions: None,
                fields: None,
                presets: None,
            },
        }
    }
    /// Only the rows matching `filter` (`$CURRENT_USER` and `$NOW` allowed).
    pub fn filter(mut self, filter: Value) -> Self {
        if let Step::Grant { permissions, .. } = &mut self.step {
            *permissions = Some(filter);
        }
        self
    }
    /// Only these fields.
    pub fn fields(mut self, names: &[&str]) -> Self {
        if let Step::Grant { fields, .. } = &mut self.step {
            *fields = Some(names.iter().map(|f| f.to_string()).collect());
        }
        self
    }
    /// Values forced on create or update (`{"user_created": "$CURRENT_USER"}`).
    pub fn presets(mut self, values: Value) -> Self {
        if let Step::Grant { presets, .. } = &mut self.step {
            *presets = Some(values);
        }
        self
    }
    /// The step.
    pub fn build(self) -> Step {
        self.step
    }
}

impl From<Grant> for Step {
    fn from(g: Grant) -> Self {
        g.build()
    }
}

/// [`Step::CreateAlias`]: `collection.alias` lists the items of `related`
/// whose reference `field` points at the item, by id. For a many-to-many
/// through a junction, alias the junction and follow its other reference:
/// `one_to_many("videos", "models", "videos_models", "videos_id")`, then
/// read `fields=models.platform_users_id.*`.
pub fn one_to_many(collection: &str, alias: &str, related: &str, field: &str) -> Step {
    Step::CreateAlias {
        collection: collection.into(),
        alias: alias.into(),
        related: related.into(),
        field: field.into(),
        sort: None,
    }
}

/// [`Step::SetOnDelete`] with one rule for several `(collection, field)`
/// references.
pub fn on_delete(rule: OnDelete, references: &[(&str, &str)]) -> Vec<Step> {
    references
        .iter()
        .map(|(collection, field)| Step::SetOnDelete {
            collection: collection.to_string(),
            field: field.to_string(),
            on_delete: rule,
        })
        .collect()
}

/// Builder of a [`Step::CreateCollection`].
#[derive(Debug, Clone)]
pub struct Collection {
    name: String,
    fields: Vec<Field>,
    indexes: Vec<Index>,
}

impl Collection {
    /// A collection of this name (its `id` is implicit).
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            fields: Vec::new(),
            indexes: Vec::new(),
        }
    }
    /// Adds a field.
    pub fn field(mut self, field: Field) -> Self {
        self.fields.push(field);
        self
    }
    /// Adds an index over these fields.
    pub fn index<S: AsRef<str>>(mut self, fields: &[S]) -> Self {
        self.indexes.push(Index {
            fields: fields.iter().map(|s| s.as_ref().to_string()).collect(),
            unique: false,
        });
        self
    }
    /// Adds a unique index over these fields.
    pub fn unique<S: AsRef<str>>(mut self, fields: &[S]) -> Self {
        self.indexes.push(Index {
            fields: fields.iter().map(|s| s.as_ref().to_string()).collect(),
            unique: true,
        });
        self
    }
    /// The step.
    pub fn build(self) -> Step {
        Step::CreateCollection {
            collection: self.name,
            fields: self.fields,
            indexes: self.indexes,
        }
    }
}

impl From<Collection> for Step {
    fn from(c: Collection) -> Self {
        c.build()
    }
}
