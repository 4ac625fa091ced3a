//! The rule that lets hosts upgrade one at a time (docs/operations.md
//! "Upgrading"): a release's migrations only add. While the first host of
//! a new release migrates the database, hosts of the previous release keep
//! serving from it, so nothing they read or write may go away: a release
//! adds collections, fields, indexes, aliases, seed items and rules, and
//! changes a rule only in place; removing or renaming waits a release, until
//! no host of a release that reads it is left. The one removal allowed is a
//! plain index that another serves (`DropIndex`): no read or write of the
//! previous release depends on it.
//!
//! Every kind of [`Step`] is classified below, with no catch-all: a new
//! kind (one that removes, say) does not compile until it is classified
//! here, and a migration using a kind that breaks the previous release
//! fails [`not_additive`] unless it is explicitly allowed.

use host_sdk::schema::Step;

/// Why `step` would break a host of the previous release serving beside
/// this one, or `None` when it only adds (or changes a rule in place).
pub fn breaks_previous_release(step: &Step) -> Option<String> {
    match step {
        Step::CreateCollection { .. }
        | Step::CreateIndex { .. }
        | Step::CreateAlias { .. }
        | Step::InsertItems { .. }
        | Step::Grant { .. } => None,
        // The previous release's creates leave the field out.
        Step::AddField { collection, field } => (!field.nullable && field.default.is_none())
            .then(|| {
                format!(
                    "adds `{}` to `{collection}` as a required field with no default: the previous release's creates omit it",
                    field.field
                )
            }),
        // Both releases read the same permission rows and reference rules:
        // the changed rule holds on either at once, and nothing is removed.
        Step::ChangeGrant { .. } | Step::SetOnDelete { .. } => None,
        // Metadata for clients, changed in place: no host reads it to serve items.
        Step::SetFieldMeta { .. } | Step::SetCollectionMeta { .. } => None,
        // A plain index only speeds reads up, which another index serves
        // (the step's contract); a unique one is a rule the previous
        // release's writes rely on.
        Step::DropIndex { collection, index } => index.unique.then(|| {
            format!(
                "drops the unique index on `{collection}` ({}): the previous release's writes rely on it",
                index.fields.join(", ")
            )
        }),
    }
}

/// Every step of `migrations` (an owner's, as declared) that breaks the
/// previous release, as `owner/migration: why`, except in the migrations
/// `allowed` names (ids of this owner explicitly allowed to remove, once
/// no host of a release that reads what they remove is left).
pub fn not_additive(
    owner: &str,
    migrations: &[(&str, Vec<Step>)],
    allowed: &[&str],
) -> Vec<String> {
    migrations
        .iter()
        .filter(|(id, _)| !allowed.contains(id))
        .flat_map(|(id, steps)| {
            steps
                .iter()
                .filter_map(breaks_previous_release)
                .map(move |why| format!("{owner}/{id}: {why}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use host_sdk::schema::Field;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_platforms_migrations_only_add() {
        let migrations = crate::platform_schema::migrations();
        assert_eq!(
            not_additive(crate::platform_schema::OWNER, &migrations, &[]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_required_field_without_a_default_breaks_the_previous_release_unless_allowed() {
        let add = |field: Field| Step::AddField {
            collection: "notes".into(),
            field,
        };
        let migrations = vec![
            (
                "0001_fine",
                vec![
                    add(Field::string("a")),
                    add(Field::integer("b").not_null().default(json!(0))),
                ],
            ),
            ("0002_required", vec![add(Field::string("c").not_null())]),
        ];
        assert_eq!(
            not_additive("notes", &migrations, &[]),
            ["notes/0002_required: adds `c` to `notes` as a required field with no default: the previous release's creates omit it"]
        );
        assert!(not_additive("notes", &migrations, &["0002_required"]).is_empty());
    }

    #[test]
    fn dropping_a_unique_index_breaks_the_previous_release_a_plain_one_does_not() {
        let drop = |unique: bool| Step::DropIndex {
            collection: "notes".into(),
            index: host_sdk::schema::Index {
                fields: vec!["a".into(), "-b".into()],
                unique,
            },
        };
        let migrations = vec![
            ("0001_plain", vec![drop(false)]),
            ("0002_unique", vec![drop(true)]),
        ];
        assert_eq!(
            not_additive("notes", &migrations, &[]),
            ["notes/0002_unique: drops the unique index on `notes` (a, -b): the previous release's writes rely on it"]
        );
    }
}
