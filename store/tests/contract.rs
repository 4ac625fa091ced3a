//! The storage contract (`platform_store::storage`, written out in
//! `store/src/storage/mod.rs`), each case written once as a function of
//! the database it runs on, and run on both backends: on SQLite always (a
//! file in a temporary folder), on PostgreSQL when the suite runs on it
//! (`TEST_DB=postgres`: a fresh database on the server of
//! `platform_store::testing` for each case); otherwise the PostgreSQL
//! cases say so and pass.
//!
//! The cases: migrations (applied once, atomically, also when two stores
//! start together; the schema outlives the store), run-once work, items
//! written and read back in every type, updates and deletes, filters (the
//! same items on both backends, and any filter that parses runs), sorting,
//! limits, offsets and aggregates, counters and unique values under
//! concurrent writers, transactions that lose no update, and transactions
//! rolled back on an error.

use std::sync::{Arc, Barrier};

use host_sdk::schema::{Collection, Field, Step};
use platform_store::query::{parse_filter, ListParam, ReadQuery, Vars, WireQuery};
use platform_store::schema::CollectionDef;
use platform_store::storage::{
    self, codec, migrate, Columns, CounterOp, Location, Record, SchemaStepsOnly, Store, StoreError,
    Window, COUNTERS,
};
use platform_store::testing;
use platform_store::values;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

/// The database of one case.
struct Db {
    location: Location,
    /// The SQLite file's folder, removed with it.
    _dir: Option<tempfile::TempDir>,
}

impl Db {
    fn sqlite() -> Db {
        let dir = tempfile::tempdir().expect("temporary folder");
        Db {
            location: Location::File(dir.path().join("store.db")),
            _dir: Some(dir),
        }
    }

    /// A fresh database on the suite's PostgreSQL server when the suite
    /// runs on PostgreSQL; `None` otherwise.
    fn postgres() -> Option<Db> {
        let location = testing::fresh_postgres("PostgreSQL case")?;
        Some(Db {
            location,
            _dir: None,
        })
    }

    /// A store on the database. Each call opens another one, with its own
    /// connections, as another host on the same database would.
    fn open(&self) -> Arc<dyn Store> {
        storage::open(&self.location, Some(8)).expect("open the store")
    }

    fn is_postgres(&self) -> bool {
        matches!(self.location, Location::Postgres(_))
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        testing::discard(&self.location);
    }
}

/// Every case, as a test on SQLite and one on PostgreSQL.
macro_rules! contract {
    ($($case:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[test]
                fn $case() {
                    super::$case(&super::Db::sqlite());
                }
            )*
        }
        mod on_postgres {
            $(
                #[test]
                fn $case() {
                    if let Some(db) = super::Db::postgres() {
                        super::$case(&db);
                    }
                }
            )*
        }
    };
}

contract!(
    migrations_apply_once_and_the_schema_outlives_the_store,
    a_failed_migration_leaves_nothing,
    an_alias_must_list_a_reference_back_and_take_a_free_name,
    migrations_started_together_apply_once,
    run_once_work_runs_once_and_not_after_a_failure,
    items_read_back_as_written,
    updates_and_deletes_say_whether_the_item_existed,
    filters_answer_the_same_items,
    any_parsed_filter_runs,
    metacharacters_are_values_not_sql,
    sorting_limits_and_offsets,
    aggregates_count_and_sum_by_group,
    counters_add_up_under_concurrent_writers,
    counter_windows_end_give_back_and_are_pruned,
    a_unique_value_is_taken_once_under_concurrent_writers,
    read_then_write_transactions_lose_no_update,
    a_transaction_whose_work_fails_is_rolled_back,
    a_write_whose_work_panics_is_rolled_back_and_its_connection_serves_on,
    a_refused_write_changes_nothing_and_the_transaction_goes_on,
    a_nested_write_is_refused,
    versions_move_with_commits,
    a_start_costs_the_same_however_many_collections_there_are,
    a_large_document_reads_back_whole_and_postgresql_compresses_it_with_lz4,
    a_dropped_index_is_gone_and_one_never_made_is_no_error,
);

/// `DropIndex` drops the index `CreateIndex` made of the same fields: a
/// unique one's rule no longer holds. A unique index named as plain is not
/// dropped (the two share a name); dropping one that is gone (by hand, say)
/// is no error; naming a field the collection lacks is.
fn a_dropped_index_is_gone_and_one_never_made_is_no_error(db: &Db) {
    use host_sdk::schema::Index;
    let store = seeded(db);
    let unique = Index {
        fields: vec!["-n".into(), "name".into()],
        unique: true,
    };
    let create = Step::CreateIndex {
        collection: "things".into(),
        index: unique.clone(),
    };
    let drop = Step::DropIndex {
        collection: "things".into(),
        index: unique.clone(),
    };
    assert!(store
        .migrate("test", "0002", &[create], &SchemaStepsOnly)
        .expect("index"));
    let things = def(&*store, "things");
    let twin = |k: u32| json!({"id": id(100 + k), "name": "twin", "n": 7});
    insert(&*store, &things, twin(1)).expect("the first twin");
    assert!(
        insert(&*store, &things, twin(2)).is_err(),
        "the unique index holds"
    );
    let as_plain = Step::DropIndex {
        collection: "things".into(),
        index: Index {
            unique: false,
            ..unique.clone()
        },
    };
    assert!(
        store
            .migrate("test", "0003", &[as_plain], &SchemaStepsOnly)
            .is_err(),
        "a unique index named as plain is refused"
    );
    assert!(
        insert(&*store, &things, twin(2)).is_err(),
        "the unique index still holds"
    );
    assert!(store
        .migrate(
            "test",
            "0003",
            std::slice::from_ref(&drop),
            &SchemaStepsOnly
        )
        .expect("drop"));
    insert(&*store, &things, twin(2)).expect("the rule went with its index");
    assert!(store
        .migrate("test", "0004", &[drop], &SchemaStepsOnly)
        .expect("an index already gone"));
    let typo = Step::DropIndex {
        collection: "things".into(),
        index: Index {
            fields: vec!["nme".into()],
            unique: false,
        },
    };
    assert!(store
        .migrate("test", "0005", &[typo], &SchemaStepsOnly)
        .is_err());
}

// ---- helpers ----

/// The id of item `n` (ids are UUIDs).
fn id(n: u32) -> String {
    format!("00000000-0000-4000-8000-{n:012}")
}

/// The collection `things`, with a field of every type.
fn things() -> Step {
    Collection::new("things")
        .field(Field::string("name"))
        .field(Field::integer("n"))
        .field(Field::float("x"))
        .field(Field::boolean("ok"))
        .field(Field::timestamp("at"))
        .field(Field::json("tags"))
        .field(Field::text("note").default(json!("none")))
        .build()
}

/// The items of [`seeded`], by number.
fn seed_items() -> Vec<Value> {
    vec![
        json!({"id": id(1), "name": "apple", "n": 1, "x": 1.5, "ok": true,
               "at": "2026-01-01T00:00:00Z", "tags": ["red", "fruit"]}),
        json!({"id": id(2), "name": "Banana", "n": 2, "x": -3.0, "ok": false,
               "at": "2026-02-01T10:00:00.250Z", "tags": ["yellow", "fruit"]}),
        json!({"id": id(3), "name": "cherry pie", "n": 3, "x": 0.25, "ok": true,
               "tags": []}),
        json!({"id": id(4)}),
        json!({"id": id(5), "name": "a'b \"c\" 100%_", "n": 10, "x": 1e10, "ok": false,
               "at": "2025-12-31T23:59:59.999Z", "tags": ["it's"]}),
    ]
}

/// A store on `db` with `things` and its five seeded items.
fn seeded(db: &Db) -> Arc<dyn Store> {
    let store = db.open();
    let seed = Step::InsertItems {
        collection: "things".into(),
        items: seed_items(),
    };
    assert!(store
        .migrate("test", "0001", &[things(), seed], &SchemaStepsOnly)
        .expect("migrate"));
    store
}

fn def(store: &dyn Store, collection: &str) -> Arc<CollectionDef> {
    store
        .schema()
        .get(collection)
        .unwrap_or_else(|| panic!("no collection {collection}"))
        .clone()
}

/// `values` as a write sets them: each normalised to its field and encoded.
fn columns(def: &CollectionDef, values: &Value) -> Columns {
    let mut out = Columns::new();
    for (name, value) in values.as_object().expect("an object") {
        let field = def.field(name).unwrap_or_else(|| panic!("no field {name}"));
        let value = values::normalize(field, value, false).expect("a valid value");
        out.insert(name.clone(), codec::to_scalar(field, &value));
    }
    out
}

/// The read of a query as it arrives (JSON), without a default limit.
fn query(def: &CollectionDef, wire: Value) -> ReadQuery {
    let wire: WireQuery = serde_json::from_value(wire).expect("a query");
    wire.to_read(def, &Vars::new(Some(id(1))), None)
        .expect("a valid query")
}

fn select(store: &dyn Store, def: &CollectionDef, q: &ReadQuery) -> Vec<Record> {
    storage::read_with(store, |conn| conn.select(def, q)).expect("select")
}

/// The numbers of the items `wire` reads, in its order.
fn numbers(store: &dyn Store, def: &CollectionDef, mut wire: Value) -> Vec<u32> {
    wire["fields"] = json!(["id"]);
    select(store, def, &query(def, wire))
        .iter()
        .map(|r| {
            let id = r["id"].as_str().expect("an id");
            id[24..].parse().expect("an id of `id`")
        })
        .collect()
}

/// The numbers of the items `filter` admits, in the order of their ids.
fn matching(store: &dyn Store, def: &CollectionDef, filter: Value) -> Vec<u32> {
    numbers(store, def, json!({"filter": filter, "sort": ["id"]}))
}

fn insert(store: &dyn Store, def: &CollectionDef, values: Value) -> Result<(), StoreError> {
    let columns = columns(def, &values);
    store.write(&mut |conn| conn.insert(def, &columns))
}

fn count(store: &dyn Store, def: &CollectionDef) -> usize {
    select(store, def, &ReadQuery::all_fields(def)).len()
}

/// Runs `each(store, thread)` on `threads` threads per store, all started
/// together, and gathers what they return.
fn together<T: Send>(
    stores: &[Arc<dyn Store>],
    threads: usize,
    each: impl Fn(&dyn Store, usize) -> T + Sync,
) -> Vec<T> {
    let start = Barrier::new(stores.len() * threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..stores.len() * threads)
            .map(|t| {
                let (store, start, each) = (&stores[t % stores.len()], &start, &each);
                scope.spawn(move || {
                    start.wait();
                    each(store.as_ref(), t)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a worker"))
            .collect()
    })
}

// ---- schema creation and migration ----

fn migrations_apply_once_and_the_schema_outlives_the_store(db: &Db) {
    let store = seeded(db);
    // Recorded: the same migration again does nothing.
    assert!(!store
        .migrate("test", "0001", &[things()], &SchemaStepsOnly)
        .expect("recorded"));
    // Another owner's migration of the same id is another migration.
    let notes = Collection::new("notes")
        .field(Field::string("title").not_null())
        .index(&["title"])
        .build();
    assert!(store
        .migrate("other", "0001", &[notes], &SchemaStepsOnly)
        .expect("migrate"));
    let add = Step::AddField {
        collection: "things".into(),
        field: Field::integer("rank").default(json!(7)),
    };
    assert!(store
        .migrate("test", "0002", &[add], &SchemaStepsOnly)
        .expect("add a field"));
    let things = def(store.as_ref(), "things");
    let names: Vec<&str> = things.fields.iter().map(|f| f.field.as_str()).collect();
    assert_eq!(
        names,
        ["id", "name", "n", "x", "ok", "at", "tags", "note", "rank"]
    );
    // A field added later reads its default on items written before it,
    // and a seeded item got the defaults of its fields.
    let rows = select(
        store.as_ref(),
        &things,
        &query(
            &things,
            json!({"filter": {"id": {"_eq": id(4)}}, "fields": ["rank", "note"]}),
        ),
    );
    assert_eq!(
        rows,
        [json!({"rank": 7, "note": "none"})
            .as_object()
            .cloned()
            .unwrap()]
    );
    insert(
        store.as_ref(),
        &def(store.as_ref(), "notes"),
        json!({"id": id(1), "title": "t"}),
    )
    .expect("insert a note");
    drop(store);

    // The schema is the database's: another store reads it back.
    let again = db.open();
    let reread = def(again.as_ref(), "things");
    assert_eq!(reread.fields, things.fields);
    assert!(again.schema().get("notes").is_some());
    assert_eq!(count(again.as_ref(), &reread), 5);
    // A migration recorded before the store opened is skipped without a
    // statement (a start over an up-to-date database costs no transaction
    // per migration); so is work run once.
    let before = again.round_trips();
    assert!(!again
        .migrate("test", "0002", &[], &SchemaStepsOnly)
        .expect("recorded"));
    assert!(!again
        .run_once("test", "0001", &mut |_| panic!("recorded: not run"))
        .expect("recorded"));
    assert_eq!(again.round_trips(), before);
    // One recorded by another store after this one opened is still
    // skipped (found recorded in the database), and its steps not run.
    let other = db.open();
    assert!(other
        .migrate("late", "0001", &[], &SchemaStepsOnly)
        .expect("migrate"));
    assert!(!again
        .migrate(
            "late",
            "0001",
            &[Step::AddField {
                collection: "nowhere".into(),
                field: Field::integer("n"),
            }],
            &SchemaStepsOnly
        )
        .expect("recorded elsewhere"));
}

/// A store's start over an up-to-date database does a fixed amount of
/// work: nothing per collection (PostgreSQL's commit and change-tracking
/// triggers are made only on tables that lack them) and nothing per
/// recorded migration.
fn a_start_costs_the_same_however_many_collections_there_are(db: &Db) {
    let started = || {
        let store = db.open();
        let trips = store.round_trips();
        (store, trips)
    };
    let (store, _) = started();
    store
        .migrate("test", "0001", &[things()], &SchemaStepsOnly)
        .expect("migrate");
    drop(store);
    let (store, with_one) = started();
    for n in 0..8 {
        let step = Collection::new(&format!("more_{n}"))
            .field(Field::string("title").not_null())
            .index(&["title"])
            .build();
        assert!(store
            .migrate("test", &format!("more_{n}"), &[step], &SchemaStepsOnly)
            .expect("migrate"));
    }
    drop(store);
    let (store, with_nine) = started();
    let schema = store.schema();
    let made: Vec<&str> = schema
        .names()
        .filter(|n| *n == "things" || n.starts_with("more_"))
        .collect();
    assert_eq!(made.len(), 9, "{made:?}");
    assert_eq!(
        with_nine, with_one,
        "a start's round trips with 9 collections and 9 migrations, against 1 and 1"
    );
}

fn a_failed_migration_leaves_nothing(db: &Db) {
    let store = seeded(db);
    let things = def(store.as_ref(), "things");
    let version = store.data_version();
    for (i, (bad, error)) in [
        (
            Step::AddField {
                collection: "things".into(),
                field: Field::string("name"),
            },
            "things.name already exists",
        ),
        (
            Step::AddField {
                collection: "nowhere".into(),
                field: Field::string("name"),
            },
            "no collection nowhere",
        ),
        (crate::things(), "collection things already exists"),
        (
            Step::InsertItems {
                collection: "things".into(),
                items: vec![json!({"nope": 1})],
            },
            "unknown field nope",
        ),
        (
            host_sdk::schema::Grant::new("Viewer", "things", "read").build(),
            "not a schema change",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        // A collection, an item and a field, then the step that fails.
        let steps = [
            Collection::new("partial")
                .field(Field::string("label"))
                .build(),
            Step::InsertItems {
                collection: "things".into(),
                items: vec![json!({"name": "half"})],
            },
            Step::AddField {
                collection: "things".into(),
                field: Field::string("extra"),
            },
            bad,
        ];
        let e = store
            .migrate("test", &format!("bad{i}"), &steps, &SchemaStepsOnly)
            .expect_err("refused");
        assert!(
            e.to_string().contains(&format!("migration test/bad{i}")),
            "{e}"
        );
        assert!(e.to_string().contains(error), "{e}");
        assert!(store.schema().get("partial").is_none());
        assert_eq!(def(store.as_ref(), "things").fields, things.fields);
        assert_eq!(count(store.as_ref(), &things), 5, "no item kept");
    }
    // Nothing recorded: the fixed migration applies under the same id.
    let fixed = [Collection::new("partial")
        .field(Field::string("label"))
        .build()];
    assert!(store
        .migrate("test", "bad0", &fixed, &SchemaStepsOnly)
        .expect("applies"));
    assert!(store.data_version() != version);
    let partial = def(store.as_ref(), "partial");
    insert(store.as_ref(), &partial, json!({"id": id(1), "label": "x"})).expect("a table");
}

fn an_alias_must_list_a_reference_back_and_take_a_free_name(db: &Db) {
    let store = seeded(db);
    let steps = vec![Collection::new("parts")
        .field(Field::reference("thing", "things"))
        .field(Field::string("label"))
        .build()];
    store
        .migrate("test", "0002", &steps, &SchemaStepsOnly)
        .expect("migrate");
    let alias = |alias: &str, field: &str, sort: Option<&str>| Step::CreateAlias {
        collection: "things".into(),
        alias: alias.into(),
        related: "parts".into(),
        field: field.into(),
        sort: sort.map(String::from),
    };
    for (i, (step, error)) in [
        (
            alias("parts", "label", None),
            "parts.label does not refer to things",
        ),
        (alias("name", "thing", None), "things.name already exists"),
        (alias("a.b", "thing", None), "letters, digits and _ only"),
        (alias("parts", "thing", Some("nope")), "no field parts.nope"),
    ]
    .into_iter()
    .enumerate()
    {
        let e = store
            .migrate("test", &format!("bad{i}"), &[step], &SchemaStepsOnly)
            .expect_err("refused");
        assert!(e.to_string().contains(error), "{e}");
    }
    let ok = alias("parts", "thing", Some("label"));
    store
        .migrate("test", "0003", std::slice::from_ref(&ok), &SchemaStepsOnly)
        .expect("alias");
    let things = def(store.as_ref(), "things");
    assert_eq!(
        things.alias("parts").map(|a| a.related.as_str()),
        Some("parts")
    );
    // Declared once: the same name again is refused.
    let e = store
        .migrate("test", "0004", &[ok], &SchemaStepsOnly)
        .expect_err("taken");
    assert!(e.to_string().contains("things.parts already exists"), "{e}");
    // The alias is the database's too.
    drop(store);
    let again = db.open();
    assert!(def(again.as_ref(), "things").alias("parts").is_some());
}

fn migrations_started_together_apply_once(db: &Db) {
    let stores = [db.open(), db.open(), db.open()];
    let seed = Step::InsertItems {
        collection: "things".into(),
        items: seed_items(),
    };
    let ran = together(&stores, 2, |store, _| {
        store
            .migrate("test", "0001", &[things(), seed.clone()], &SchemaStepsOnly)
            .expect("migrate")
    });
    assert_eq!(ran.iter().filter(|r| **r).count(), 1, "{ran:?}");
    for store in &stores {
        let things = def(store.as_ref(), "things");
        assert_eq!(count(store.as_ref(), &things), 5, "seeded once");
    }
}

fn run_once_work_runs_once_and_not_after_a_failure(db: &Db) {
    let store = seeded(db);
    let things = def(store.as_ref(), "things");
    let add = |n: u32| columns(&things, &json!({"id": id(n), "name": format!("once {n}")}));
    // Failing work is rolled back and not recorded.
    let e = store
        .run_once("test", "step", &mut |conn| {
            conn.insert(&things, &add(10))?;
            Err(StoreError::Invalid("not now".into()))
        })
        .expect_err("failed");
    assert!(e.to_string().contains("not now"), "{e}");
    assert_eq!(count(store.as_ref(), &things), 5);
    // Then it runs, once, whichever store asks.
    assert!(store
        .run_once("test", "step", &mut |conn| conn.insert(&things, &add(11)))
        .expect("ran"));
    let other = db.open();
    assert!(!other
        .run_once("test", "step", &mut |conn| conn.insert(&things, &add(12)))
        .expect("recorded"));
    assert_eq!(
        matching(
            store.as_ref(),
            &things,
            json!({"name": {"_starts_with": "once"}})
        ),
        [11]
    );
    // Work and migrations share one record: an id is either.
    assert!(!store
        .migrate("test", "step", &[], &SchemaStepsOnly)
        .expect("recorded"));
}

// ---- create, read, update, delete ----

fn items_read_back_as_written(db: &Db) {
    let store = seeded(db);
    let things = def(store.as_ref(), "things");
    let written = json!({
        "id": id(20),
        "name": "Ünïcödé \"quoted\" \\ 😀 \n",
        "n": 9_007_199_254_740_993i64,
        "x": 0.1,
        "ok": true,
        "at": "2026-03-01T12:30:00+02:00",
        "tags": {"nested": [1, 2.5, "x", null, {"a": false}]},
        "note": "",
    });
    insert(store.as_ref(), &things, written).expect("insert");
    let q = query(&things, json!({"filter": {"id": {"_eq": id(20)}}}));
    let rows = select(store.as_ref(), &things, &q);
    let expected = json!({
        "id": id(20),
        "name": "Ünïcödé \"quoted\" \\ 😀 \n",
        "n": 9_007_199_254_740_993i64,
        "x": 0.1,
        "ok": true,
        // Timestamps are stored in UTC with milliseconds.
        "at": "2026-03-01T10:30:00.000Z",
        "tags": {"nested": [1, 2.5, "x", null, {"a": false}]},
        "note": "",
    });
    assert_eq!(Value::Object(rows[0].clone()), expected);

    // The seeded items, with their defaults and nulls; as records and as
    // text, which prints the same.
    let all = query(&things, json!({"sort": ["id"]}));
    let (mut records, mut text) = (Vec::new(), Vec::new());
    let n = storage::read_with(store.as_ref(), |conn| {
        records = conn.select(&things, &all)?;
        conn.select_json(&things, &all, &mut text)
    })
    .expect("select");
    assert_eq!(n, 6);
    assert_eq!(
        Value::Object(records[3].clone()),
        json!({"id": id(4), "name": null, "n": null, "x": null, "ok": null,
               "at": null, "tags": null, "note": "none"})
    );
    assert_eq!(records[1]["at"], json!("2026-02-01T10:00:00.250Z"));
    // A whole float reads as an integer.
    assert_eq!(records[1]["x"], json!(-3));
    let text = String::from_utf8(text).expect("UTF-8");
    let printed: Vec<String> = records
        .iter()
        .map(|r| serde_json::to_string(r).expect("print"))
        .collect();
    assert_eq!(text, printed.join(","));
    // Cell by cell, each the text of the record's value, in the order of
    // the query's fields.
    let cells = storage::read_with(store.as_ref(), |conn| conn.select_text(&things, &all))
        .expect("select text");
    assert_eq!(cells.len(), records.len());
    assert_eq!(cells.fields(), all.fields.as_slice());
    for (row, record) in records.iter().enumerate() {
        for (column, field) in all.fields.iter().enumerate() {
            let cell = std::str::from_utf8(cells.cell(row, column)).expect("UTF-8");
            assert_eq!(
                cell,
                serde_json::to_string(&record[field]).expect("print"),
                "row {row}, {field}"
            );
        }
    }

    // Fields chosen, each once.
    let some = query(
        &things,
        json!({"filter": {"id": {"_eq": id(1)}}, "fields": ["n", "name"]}),
    );
    assert_eq!(
        Value::Object(select(store.as_ref(), &things, &some)[0].clone()),
        json!({"n": 1, "name": "apple"})
    );
}

fn updates_and_deletes_say_whether_the_item_existed(db: &Db) {
    let store = seeded(db);
    let things = def(store.as_ref(), "things");
    let changes = columns(
        &things,
        &json!({"name": "pear", "n": null, "tags": ["green"]}),
    );
    let mut existed = (false, false, false);
    store
        .write(&mut |conn| {
            existed.0 = conn.update(&things, &id(1), &changes)?;
            existed.1 = conn.update(&things, &id(99), &changes)?;
            // No change: whether it exists.
            existed.2 = conn.update(&things, &id(2), &Columns::new())?;
            Ok(())
        })
        .expect("update");
    assert_eq!(existed, (true, false, true));
    let one = query(&things, json!({"filter": {"id": {"_eq": id(1)}}}));
    let row = &select(store.as_ref(), &things, &one)[0];
    assert_eq!(
        (&row["name"], &row["n"], &row["tags"], &row["x"]),
        (&json!("pear"), &Value::Null, &json!(["green"]), &json!(1.5))
    );
    let mut deleted = (false, false);
    store
        .write(&mut |conn| {
            deleted.0 = conn.delete(&things, &id(1))?;
            deleted.1 = conn.delete(&things, &id(1))?;
            Ok(())
        })
        .expect("delete");
    assert_eq!(deleted, (true, false));
    assert_eq!(matching(store.as_ref(), &things, json!({})), [2, 3, 4, 5]);
}

// ---- filters ----

fn filters_answer_the_same_items(db: &Db) {
    let store = seeded(db);
    let things = def(store.as_ref(), "things");
    let cases: Vec<(Value, Vec<u32>)> = vec![
        (json!({"n": {"_eq": 2}}), vec![2]),
        (json!({"n": 2}), vec![2]),
        (json!({"n": {"_eq": null}}), vec![4]),
        (json!({"n": {"_neq": 2}}), vec![1, 3, 5]),
        (json!({"n": {"_lt": 3}}), vec![1, 2]),
        (json!({"n": {"_lte": 3}}), vec![1, 2, 3]),
        (json!({"n": {"_gt": 2}}), vec![3, 5]),
        (json!({"n": {"_gte": "3"}}), vec![3, 5]),
        (json!({"x": {"_gt": 0}}), vec![1, 3, 5]),
        (json!({"x": {"_eq": 1e10}}), vec![5]),
        (json!({"ok": {"_eq": true}}), vec![1, 3]),
        (json!({"ok": {"_neq": true}}), vec![2, 5]),
        (
            json!({"name": {"_in": ["apple", "Banana", "nope"]}}),
            vec![1, 2],
        ),
        (json!({"name": {"_in": []}}), vec![]),
        (json!({"name": {"_nin": ["apple"]}}), vec![2, 3, 5]),
        (json!({"n": {"_in": [1, 10]}}), vec![1, 5]),
        // Each kind's list is bound as its own type.
        (json!({"x": {"_in": [1.5, 1e10]}}), vec![1, 5]),
        (json!({"ok": {"_in": [false]}}), vec![2, 5]),
        // Null is among nothing, and outside nothing.
        (json!({"n": {"_nin": [1, 10]}}), vec![2, 3]),
        (json!({"name": {"_null": true}}), vec![4]),
        (json!({"name": {"_nnull": true}}), vec![1, 2, 3, 5]),
        (json!({"name": {"_contains": "an"}}), vec![2]),
        (json!({"name": {"_contains": "AN"}}), vec![]),
        (json!({"name": {"_icontains": "AN"}}), vec![2]),
        (json!({"name": {"_contains": "%"}}), vec![5]),
        (json!({"name": {"_contains": "_"}}), vec![5]),
        (json!({"name": {"_contains": "'"}}), vec![5]),
        (json!({"name": {"_starts_with": "a"}}), vec![1, 5]),
        (json!({"name": {"_ends_with": "pie"}}), vec![3]),
        // Null contains nothing.
        (json!({"name": {"_ncontains": "a"}}), vec![3, 4]),
        // Text compares byte by byte: upper case before lower case.
        (json!({"name": {"_lt": "apple"}}), vec![2, 5]),
        (json!({"name": {"_eq": "a'b \"c\" 100%_"}}), vec![5]),
        (json!({"tags": {"_contains": "fruit"}}), vec![1, 2]),
        (json!({"tags": {"_contains": "it's"}}), vec![5]),
        (json!({"tags": {"_contains": "fru"}}), vec![]),
        (json!({"at": {"_gt": "2026-01-01T00:00:00Z"}}), vec![2]),
        (json!({"at": {"_lte": "2026-01-01"}}), vec![1, 5]),
        (
            json!({"at": {"_gte": "2026-02-01T12:00:00.250+02:00"}}),
            vec![2],
        ),
        (json!({"id": {"_eq": id(3)}}), vec![3]),
        (
            json!({"_or": [{"n": {"_eq": 1}}, {"name": {"_null": true}}]}),
            vec![1, 4],
        ),
        (
            json!({"_and": [{"ok": {"_eq": false}}, {"n": {"_gt": 5}}]}),
            vec![5],
        ),
        (json!({"ok": false, "n": {"_lt": 5}}), vec![2]),
        (json!({"_and": []}), vec![1, 2, 3, 4, 5]),
        (json!({"_or": []}), vec![]),
        (
            json!({"_or": [{"_and": [{"ok": true}, {"x": {"_lt": 1}}]}, {"name": "Banana"}]}),
            vec![2, 3],
        ),
    ];
    let mut wrong = Vec::new();
    for (filter, expected) in cases {
        let got = matching(store.as_ref(), &things, filter.clone());
        if got != expected {
            wrong.push(format!("{filter}: {got:?}, not {expected:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn operand() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        Just(json!("$CURRENT_USER")),
        Just(json!("$NOW")),
        Just(json!("'; DROP TABLE things; --")),
        prop::collection::vec(".{0,6}".prop_map(Value::String), 0..4).prop_map(Value::Array),
    ]
}

fn condition() -> impl Strategy<Value = Value> {
    let field = prop_oneof![
        Just("name"),
        Just("n"),
        Just("x"),
        Just("ok"),
        Just("at"),
        Just("tags"),
        Just("id"),
        Just("nope"),
        Just("name\"; --"),
    ];
    let op = prop_oneof![
        Just("_eq"),
        Just("_neq"),
        Just("_lt"),
        Just("_lte"),
        Just("_gt"),
        Just("_gte"),
        Just("_in"),
        Just("_nin"),
        Just("_null"),
        Just("_nnull"),
        Just("_contains"),
        Just("_ncontains"),
        Just("_icontains"),
        Just("_starts_with"),
        Just("_ends_with"),
        Just("_regex"),
    ];
    (field, op, operand()).prop_map(|(f, o, v)| json!({ f: { o: v } }))
}

fn filter() -> impl Strategy<Value = Value> {
    condition().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({"_and": v})),
            prop::collection::vec(inner, 0..4).prop_map(|v| json!({"_or": v})),
        ]
    })
}

/// Whatever the filter, parsing never panics, and a filter that parses
/// runs as valid SQL: values are bound, never spliced in (300 filters).
fn any_parsed_filter_runs(db: &Db) {
    let store = seeded(db);
    let def = def(store.as_ref(), "things");
    let vars = Vars::new(Some("user-1".into()));
    let sort = prop::option::of("-?(name|n|x|at|id)");
    let mut runner = TestRunner::new(Config::with_cases(300));
    runner
        .run(&(filter(), sort), |(f, sort)| {
            if let Ok(parsed) = parse_filter(&def, &f, &vars) {
                let mut used = Vec::new();
                parsed.fields(&mut used);
                prop_assert!(used.iter().all(|u| def.has(u)));
                let wire = WireQuery {
                    filter: Some(f.clone()),
                    sort: sort.map(ListParam::Text),
                    ..Default::default()
                };
                let q = wire.to_read(&def, &vars, Some(10)).expect("already parsed");
                let result = store.read(&mut |conn| conn.select(&def, &q).map(|_| ()));
                prop_assert!(result.is_ok(), "{f} failed: {result:?}");
            }
            prop_assert_eq!(count(store.as_ref(), &def), 5, "rows changed");
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

/// The property above checks parsed filters only: it would pass if
/// parsing always failed. A third of the filters it generates must parse.
#[test]
fn most_generated_filters_parse() {
    use proptest::strategy::ValueTree;
    let def = CollectionDef::new(
        "things",
        match things() {
            Step::CreateCollection { fields, .. } => fields,
            _ => unreachable!("a collection"),
        },
    );
    let vars = Vars::new(Some("user-1".into()));
    let mut runner = TestRunner::deterministic();
    let strategy = filter();
    let parsed = (0..300)
        .filter(|_| {
            let f = strategy.new_tree(&mut runner).expect("a filter").current();
            parse_filter(&def, &f, &vars).is_ok()
        })
        .count();
    assert!(
        parsed >= 100,
        "only {parsed} of 300 generated filters parse"
    );
}

fn metacharacters_are_values_not_sql(db: &Db) {
    let store = seeded(db);
    let things = def(store.as_ref(), "things");
    insert(
        store.as_ref(),
        &things,
        json!({"id": id(30), "name": "c\"d;--", "tags": ["x", "y"]}),
    )
    .expect("insert");
    for (value, expected) in [
        ("a'b \"c\" 100%_", vec![5]),
        ("c\"d;--", vec![30]),
        ("'; DROP TABLE things; --", vec![]),
    ] {
        assert_eq!(
            matching(store.as_ref(), &things, json!({"name": {"_eq": value}})),
            expected,
            "{value}"
        );
    }
    assert_eq!(
        matching(store.as_ref(), &things, json!({"tags": {"_contains": "y"}})),
        [30]
    );
    assert_eq!(count(store.as_ref(), &things), 6);
}

// ---- sorting, limits, offsets, aggregates ----

fn sorting_limits_and_offsets(db: &Db) {
    let store = seeded(db);
    let things = def(store.as_ref(), "things");
    let sorted = |sort: Value| numbers(store.as_ref(), &things, json!({"sort": sort}));
    // Nulls first going up, last going down; text byte by byte.
    assert_eq!(sorted(json!(["name"])), [4, 2, 5, 1, 3]);
    assert_eq!(sorted(json!(["-name"])), [3, 1, 5, 2, 4]);
    assert_eq!(sorted(json!(["n"])), [4, 1, 2, 3, 5]);
    assert_eq!(sorted(json!(["-n"])), [5, 3, 2, 1, 4]);
    assert_eq!(sorted(json!(["x"])), [4, 2, 3, 1, 5]);
    assert_eq!(sorted(json!(["at", "id"])), [3, 4, 5, 1, 2]);
    assert_eq!(sorted(json!("ok,-n")), [4, 5, 2, 3, 1]);
    assert_eq!(sorted(json!(["-ok", "name"])), [1, 3, 2, 5, 4]);

    let page = |limit: i64, offset: i64| {
        numbers(
            store.as_ref(),
            &things,
            json!({"sort": ["name"], "limit": limit, "offset": offset}),
        )
    };
    assert_eq!(page(2, 0), [4, 2]);
    assert_eq!(page(2, 1), [2, 5]);
    assert_eq!(page(2, 4), [3]);
    assert_eq!(page(2, 5), Vec::<u32>::new());
    assert_eq!(page(0, 0), Vec::<u32>::new());
    // An offset without a limit, and no limit at all.
    assert_eq!(page(-1, 3), [1, 3]);
    assert_eq!(page(-1, 0), [4, 2, 5, 1, 3]);
    // Pages by `page`, filtered: together, every item once.
    let mut pages = Vec::new();
    for p in 1..=3 {
        pages.extend(numbers(
            store.as_ref(),
            &things,
            json!({"filter": {"n": {"_nnull": true}}, "sort": ["-n"], "limit": 2, "page": p}),
        ));
    }
    assert_eq!(pages, [5, 3, 2, 1]);
}

fn aggregates_count_and_sum_by_group(db: &Db) {
    let store = seeded(db);
    let things = def(store.as_ref(), "things");
    let aggregate = |wire: Value| {
        let wire: WireQuery = serde_json::from_value(wire).expect("a query");
        let q = wire
            .to_aggregate(&things, &Vars::new(None))
            .expect("a valid aggregate");
        let mut rows: Vec<Value> =
            storage::read_with(store.as_ref(), |conn| conn.aggregate(&things, &q))
                .expect("aggregate")
                .into_iter()
                .map(Value::Object)
                .collect();
        rows.sort_by_key(|r| r.to_string());
        rows
    };
    assert_eq!(
        aggregate(json!({"aggregate": {"count": "*"}})),
        [json!({"count": 5})]
    );
    assert_eq!(
        aggregate(
            json!({"aggregate": {"count": ["n"], "sum": ["n"], "countDistinct": ["ok"]},
                         "filter": {"n": {"_lt": 10}}})
        ),
        [json!({"count": {"n": 3}, "sum": {"n": 6}, "countDistinct": {"ok": 2}})]
    );
    assert_eq!(
        aggregate(json!({"aggregate": {"count": "*", "sum": "n"}, "groupBy": ["ok"]})),
        [
            // A sum of nothing is 0.
            json!({"count": 1, "ok": null, "sum": {"n": 0}}),
            json!({"count": 2, "ok": false, "sum": {"n": 12}}),
            json!({"count": 2, "ok": true, "sum": {"n": 4}}),
        ]
    );
    assert_eq!(
        aggregate(json!({"aggregate": {"count": "*"}, "groupBy": ["date(at)"],
                         "filter": {"at": {"_nnull": true}}})),
        [
            json!({"count": 1, "date(at)": "2025-12-31"}),
            json!({"count": 1, "date(at)": "2026-01-01"}),
            json!({"count": 1, "date(at)": "2026-02-01"}),
        ]
    );
}

// ---- concurrent writers ----

/// A store on `db` with the counters' table, as the platform declares it.
fn with_counters(db: &Db) -> Arc<dyn Store> {
    let store = db.open();
    let counters = Collection::new(COUNTERS)
        .field(Field::integer("points").not_null())
        .field(Field::integer("ends").not_null())
        .index(&["ends"])
        .build();
    store
        .migrate("test", "counters", &[counters], &SchemaStepsOnly)
        .expect("migrate");
    store
}

fn counters_add_up_under_concurrent_writers(db: &Db) {
    let first = with_counters(db);
    let stores = [first, db.open()];
    const ADDS: i64 = 25;
    let now = 1_000_000;
    let add = |store: &dyn Store, key| {
        let w = store
            .counter(CounterOp::Add {
                key,
                points: 1,
                now_ms: now,
                length_ms: 60_000,
            })
            .expect("add")
            .expect("a window");
        assert_eq!(w.ends_ms, now + 60_000, "the window opened first");
        w.points
    };
    // Every thread adds to "shared"; the even ones to "even" too.
    let last = together(&stores, 4, |store, t| {
        let mut last = 0;
        for _ in 0..ADDS {
            let points = add(store, "shared");
            assert!(points > last, "{points} after {last}");
            last = points;
            if t % 2 == 0 {
                add(store, "even");
            }
        }
        last
    });
    let read = |key| {
        stores[0]
            .counter(CounterOp::Read { key, now_ms: now })
            .expect("read")
    };
    let shared = 8 * ADDS;
    assert_eq!(
        read("shared"),
        Some(Window {
            points: shared,
            ends_ms: now + 60_000
        })
    );
    assert_eq!(read("even").map(|w| w.points), Some(4 * ADDS));
    assert_eq!(last.iter().max(), Some(&shared));
}

fn counter_windows_end_give_back_and_are_pruned(db: &Db) {
    let store = with_counters(db);
    let add = |key, points, now_ms| {
        store
            .counter(CounterOp::Add {
                key,
                points,
                now_ms,
                length_ms: 100,
            })
            .expect("add")
    };
    let read = |key, now_ms| {
        store
            .counter(CounterOp::Read { key, now_ms })
            .expect("read")
    };
    let take_back = |key, points, now_ms| {
        store
            .counter(CounterOp::TakeBack {
                key,
                points,
                now_ms,
            })
            .expect("take back")
    };
    assert_eq!(
        add("k", 2, 1_000),
        Some(Window {
            points: 2,
            ends_ms: 1_100
        })
    );
    assert_eq!(
        add("k", 3, 1_050),
        Some(Window {
            points: 5,
            ends_ms: 1_100
        })
    );
    assert_eq!(
        read("k", 1_099),
        Some(Window {
            points: 5,
            ends_ms: 1_100
        })
    );
    // Over at its end: as if it did not exist; the next add opens one.
    assert_eq!(read("k", 1_100), None);
    assert_eq!(
        add("k", 1, 1_100),
        Some(Window {
            points: 1,
            ends_ms: 1_200
        })
    );
    // Points are taken back only while held.
    take_back("k", 1, 1_150);
    assert_eq!(
        read("k", 1_150),
        Some(Window {
            points: 0,
            ends_ms: 1_200
        })
    );
    take_back("k", 1, 1_150);
    assert_eq!(read("k", 1_150).map(|w| w.points), Some(0));
    assert_eq!(
        add("other", 1, 1_150),
        Some(Window {
            points: 1,
            ends_ms: 1_250
        })
    );
    store
        .counter(CounterOp::Clear { key: "other" })
        .expect("clear");
    assert_eq!(read("other", 1_150), None);
    assert_eq!(
        add("later", 1, 1_150),
        Some(Window {
            points: 1,
            ends_ms: 1_250
        })
    );
    store
        .counter(CounterOp::Prune { now_ms: 1_200 })
        .expect("prune");
    let counters = def(store.as_ref(), COUNTERS);
    let left: Vec<Value> = select(
        store.as_ref(),
        &counters,
        &query(&counters, json!({"sort": ["id"]})),
    )
    .into_iter()
    .map(|r| r["id"].clone())
    .collect();
    assert_eq!(left, [json!("later")]);
    // Counting is not a commit of data.
    let version = store.data_version();
    add("later", 1, 1_150);
    assert_eq!(store.data_version(), version);
}

fn a_unique_value_is_taken_once_under_concurrent_writers(db: &Db) {
    let first = db.open();
    let members = Collection::new("members")
        .field(Field::string("email").unique())
        .field(Field::string("team"))
        .field(Field::integer("seat"))
        .unique(&["team", "seat"])
        .build();
    first
        .migrate("test", "0001", &[members], &SchemaStepsOnly)
        .expect("migrate");
    let stores = [first, db.open()];
    let def = def(stores[0].as_ref(), "members");
    let outcomes = together(&stores, 4, |store, t| {
        let taken_email = insert(
            store,
            &def,
            json!({"id": id(t as u32), "email": "same@example.com", "team": "t", "seat": t}),
        );
        let taken_seat = insert(
            store,
            &def,
            json!({"id": id(100 + t as u32), "email": format!("{t}@example.com"), "team": "a", "seat": 1}),
        );
        (taken_email, taken_seat)
    });
    for (which, fields) in [(0, vec!["email"]), (1, vec!["team", "seat"])] {
        let results: Vec<&Result<(), StoreError>> = outcomes
            .iter()
            .map(|o| if which == 0 { &o.0 } else { &o.1 })
            .collect();
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "{results:?}"
        );
        for r in results.iter().filter_map(|r| r.as_ref().err()) {
            match r {
                StoreError::NotUnique {
                    collection,
                    fields: named,
                } => {
                    assert_eq!(collection, "members");
                    assert_eq!(named, &fields);
                }
                other => panic!("{other:?}, not a unique violation"),
            }
        }
    }
    assert_eq!(count(stores[1].as_ref(), &def), 2);
    // Null is no value: any number of items may have none.
    for n in 200..203 {
        insert(stores[0].as_ref(), &def, json!({"id": id(n)})).expect("no email");
    }
}

fn read_then_write_transactions_lose_no_update(db: &Db) {
    let first = seeded(db);
    let stores = [first, db.open()];
    let things = def(stores[0].as_ref(), "things");
    const ROUNDS: i64 = 10;
    let one = query(
        &things,
        json!({"filter": {"id": {"_eq": id(1)}}, "fields": ["n"]}),
    );
    let runs = together(&stores, 3, |store, _| {
        let mut runs = 0;
        for _ in 0..ROUNDS {
            store
                .write(&mut |conn| {
                    runs += 1;
                    let n = conn.select(&things, &one)?[0]["n"].as_i64().unwrap_or(0);
                    let changes = columns(&things, &json!({"n": n + 1}));
                    conn.update(&things, &id(1), &changes).map(|_| ())
                })
                .expect("a write");
        }
        runs
    });
    let n = select(stores[1].as_ref(), &things, &one)[0]["n"].as_i64();
    assert_eq!(n, Some(1 + 6 * ROUNDS), "an update was lost");
    if !db.is_postgres() {
        // One writer at a time: never run again.
        assert_eq!(runs.iter().sum::<i64>(), 6 * ROUNDS);
    }
}

// ---- large documents ----

/// A document of thousands of elements (a recording's events) reads back
/// as written; on PostgreSQL the store asks for LZ4, the cheaper of its
/// two compressions of large values.
fn a_large_document_reads_back_whole_and_postgresql_compresses_it_with_lz4(db: &Db) {
    let store = seeded(db);
    let things = def(store.as_ref(), "things");
    let events: Vec<Value> = (0..3000)
        .map(|i| json!({"timestamp": i * 100, "device": "Lush", "value": i % 101}))
        .collect();
    insert(
        store.as_ref(),
        &things,
        json!({"id": id(50), "name": "large", "tags": events}),
    )
    .expect("insert");
    let mut q = query(&things, json!({"filter": {"name": {"_eq": "large"}}}));
    q.fields = vec!["tags".into()];
    assert_eq!(
        select(store.as_ref(), &things, &q)[0]["tags"],
        json!(events)
    );
    if let Location::Postgres(url) = &db.location {
        let method = testing::postgres::query(
            url,
            "SELECT pg_column_compression(tags) FROM things WHERE name = 'large'",
        );
        assert_eq!(method, vec![vec![Some("lz4".to_string())]]);
    }
}

// ---- transactions ----

fn a_transaction_whose_work_fails_is_rolled_back(db: &Db) {
    let store = seeded(db);
    let things = def(store.as_ref(), "things");
    let version = store.data_version();
    let mut seen_inside = 0;
    let e = store
        .write(&mut |conn| {
            conn.insert(
                &things,
                &columns(&things, &json!({"id": id(40), "name": "gone"})),
            )?;
            conn.update(
                &things,
                &id(1),
                &columns(&things, &json!({"name": "changed"})),
            )?;
            conn.delete(&things, &id(2))?;
            // Its reads see its own writes.
            seen_inside = conn.select(&things, &ReadQuery::all_fields(&things))?.len();
            Err(StoreError::Invalid("changed my mind".into()))
        })
        .expect_err("failed");
    assert!(
        matches!(&e, StoreError::Invalid(m) if m == "changed my mind"),
        "{e:?}"
    );
    assert_eq!(seen_inside, 5);
    assert_eq!(
        matching(store.as_ref(), &things, json!({})),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(
        matching(store.as_ref(), &things, json!({"name": "apple"})),
        [1]
    );
    assert_eq!(store.data_version(), version, "nothing committed");
}

fn a_write_whose_work_panics_is_rolled_back_and_its_connection_serves_on(db: &Db) {
    drop(seeded(db));
    // One connection, so that what follows runs on the one that panicked.
    let store = storage::open(&db.location, Some(1)).expect("open the store");
    let things = def(store.as_ref(), "things");
    let version = store.data_version();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = store.write(&mut |conn| {
            conn.insert(
                &things,
                &columns(&things, &json!({"id": id(41), "name": "half"})),
            )?;
            panic!("a bug in the work");
        });
    }));
    assert!(panicked.is_err());
    assert_eq!(
        matching(store.as_ref(), &things, json!({})),
        [1, 2, 3, 4, 5],
        "nothing of the write that panicked is seen"
    );
    assert_eq!(store.data_version(), version, "nothing committed");
    insert(
        store.as_ref(),
        &things,
        json!({"id": id(42), "name": "after"}),
    )
    .expect("a write after the panic");
    assert_eq!(
        matching(store.as_ref(), &things, json!({})),
        [1, 2, 3, 4, 5, 42]
    );
    // Another store (another host) sees the same and can write too.
    let other = db.open();
    assert_eq!(
        matching(other.as_ref(), &things, json!({})),
        [1, 2, 3, 4, 5, 42]
    );
    insert(
        other.as_ref(),
        &things,
        json!({"id": id(43), "name": "other"}),
    )
    .expect("another store writes");
}

fn a_refused_write_changes_nothing_and_the_transaction_goes_on(db: &Db) {
    let store = db.open();
    let members = Collection::new("members")
        .field(Field::string("email").unique())
        .build();
    store
        .migrate("test", "0001", &[members], &SchemaStepsOnly)
        .expect("migrate");
    let def = def(store.as_ref(), "members");
    insert(store.as_ref(), &def, json!({"id": id(1), "email": "a@x"})).expect("first");
    // Refused as the transaction's first write, and after another write.
    let (mut refused_first, mut refused) = (None, None);
    store
        .write(&mut |conn| {
            refused_first =
                Some(conn.insert(&def, &columns(&def, &json!({"id": id(4), "email": "a@x"}))));
            conn.insert(&def, &columns(&def, &json!({"id": id(5), "email": "d@x"})))?;
            Ok(())
        })
        .expect("committed");
    store
        .write(&mut |conn| {
            conn.insert(&def, &columns(&def, &json!({"id": id(2), "email": "b@x"})))?;
            refused =
                Some(conn.insert(&def, &columns(&def, &json!({"id": id(3), "email": "a@x"}))));
            conn.update(&def, &id(1), &columns(&def, &json!({"email": "c@x"})))?;
            Ok(())
        })
        .expect("committed");
    for outcome in [&refused_first, &refused] {
        assert!(
            matches!(outcome, Some(Err(StoreError::NotUnique { .. }))),
            "{outcome:?}"
        );
    }
    let emails: Vec<Value> = select(store.as_ref(), &def, &query(&def, json!({"sort": ["id"]})))
        .into_iter()
        .map(|r| r["email"].clone())
        .collect();
    assert_eq!(emails, [json!("c@x"), json!("b@x"), json!("d@x")]);
}

fn a_nested_write_is_refused(db: &Db) {
    let store = seeded(db);
    let things = def(store.as_ref(), "things");
    let mut nested = None;
    let mut nested_once = None;
    store
        .write(&mut |conn| {
            conn.insert(&things, &columns(&things, &json!({"id": id(50)})))?;
            nested = Some(store.write(&mut |inner| {
                inner.insert(&things, &columns(&things, &json!({"id": id(51)})))
            }));
            nested_once = Some(store.run_once("test", "nested", &mut |_| Ok(())));
            Ok(())
        })
        .expect("the outer write");
    assert!(matches!(nested, Some(Err(_))), "{nested:?}");
    assert!(matches!(nested_once, Some(Err(_))), "{nested_once:?}");
    assert_eq!(
        matching(
            store.as_ref(),
            &things,
            json!({"id": {"_in": [id(50), id(51)]}})
        ),
        [50]
    );
    // Reads are not writes: one may run inside a write.
    let mut read = 0;
    store
        .write(&mut |_| {
            read = count(store.as_ref(), &things);
            Ok(())
        })
        .expect("a read inside");
    assert_eq!(read, 6);
}

fn versions_move_with_commits(db: &Db) {
    let store = seeded(db);
    let audit = Collection::new("audit")
        .field(Field::string("what"))
        .build();
    store
        .migrate("test", "0002", &[audit], &SchemaStepsOnly)
        .expect("migrate");
    store.track_changes(&["audit"]).expect("track");
    store.track_changes(&["audit"]).expect("idempotent");
    let other = db.open();
    let things = def(store.as_ref(), "things");
    let audit = def(store.as_ref(), "audit");

    let (data, tracked) = (
        store.data_version(),
        store.tracked_version().expect("tracked"),
    );
    // Reads commit nothing.
    count(store.as_ref(), &things);
    assert_eq!(store.data_version(), data);
    // Two stores of one process never hand out the same number, even on
    // one database (a value kept per version in a `static` is the
    // process's).
    let theirs = other.data_version();
    assert!(
        theirs >> 40 != data >> 40,
        "two stores of the process count from {data} and {theirs}"
    );
    // A commit of untracked data, by another store on the database.
    insert(other.as_ref(), &things, json!({"id": id(60)})).expect("insert");
    let after_data = store.data_version();
    assert!(after_data > data, "{after_data} after {data}");
    assert_eq!(store.tracked_version().expect("tracked"), tracked);
    // A commit to a tracked collection, by either store.
    insert(other.as_ref(), &audit, json!({"id": id(1), "what": "x"})).expect("insert");
    let tracked_after = store.tracked_version().expect("tracked");
    assert!(tracked_after != tracked);
    assert!(store.data_version() > after_data);
    store
        .write(&mut |conn| {
            conn.delete(&audit, &id(1))?;
            Ok(())
        })
        .expect("delete");
    assert!(store.tracked_version().expect("tracked") != tracked_after);
    // A write that fails moves nothing.
    let (data, tracked) = (
        store.data_version(),
        store.tracked_version().expect("tracked"),
    );
    let _ = store.write(&mut |conn| {
        conn.insert(&audit, &columns(&audit, &json!({"id": id(2)})))?;
        Err(StoreError::Invalid("no".into()))
    });
    assert_eq!(store.data_version(), data);
    assert_eq!(store.tracked_version().expect("tracked"), tracked);
}

/// Seeding through a migration fills in what a seeded item leaves out,
/// the same on both backends (checked once: it involves no database).
#[test]
fn seeded_items_get_an_id_a_creation_date_and_defaults() {
    let def = CollectionDef::new(
        "notes",
        vec![
            Field::string("title"),
            Field::timestamp("date_created"),
            Field::integer("rank").default(json!(3)),
        ],
    );
    let record = migrate::seed_record(&def, &json!({"title": "t"}), "2026-01-01T00:00:00.000Z")
        .expect("a record");
    let names: Vec<&str> = record.keys().map(String::as_str).collect();
    assert_eq!(names, ["date_created", "id", "rank", "title"]);
    assert!(migrate::seed_record(&def, &json!({"nope": 1}), "now").is_err());
    assert!(migrate::seed_record(&def, &json!({"rank": "x"}), "now").is_err());
}

/// PostgreSQL only: an index made before the platform made its indexes
/// with nulls first (so that the contract's `DESC NULLS LAST` is an index
/// walk) is made again when a store opens, unique or not, and nothing
/// else changes: an index with a descending field (`-n`, rightly nulls
/// last) is kept as it is, and serves the contract's mixed order.
#[test]
fn postgres_indexes_made_with_nulls_last_are_made_again_at_open() {
    let Some(db) = Db::postgres() else { return };
    let Location::Postgres(url) = &db.location else {
        unreachable!("a PostgreSQL database")
    };
    let step = Collection::new("things")
        .field(Field::integer("n"))
        .field(Field::string("name"))
        .index(&["n"])
        .unique(&["name", "n"])
        .index(&["-n", "name"])
        .build();
    let store = db.open();
    store
        .migrate("test", "0001", &[step], &SchemaStepsOnly)
        .expect("migrate");
    drop(store);
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    let definitions = |client: &mut postgres::Client| -> Vec<String> {
        client
            .query(
                "SELECT indexdef FROM pg_indexes WHERE tablename = 'things' \
                 AND indexname LIKE 'idx\\_%' ORDER BY indexname",
                &[],
            )
            .expect("pg_indexes")
            .iter()
            .map(|row| row.get(0))
            .collect()
    };
    let made = definitions(&mut client);
    assert_eq!(made.len(), 3, "{made:?}");
    assert!(made.iter().all(|d| d.contains("NULLS FIRST")), "{made:?}");
    assert!(
        made.iter()
            .any(|d| d.contains("idx_things_desc_n_name") && d.contains("n DESC NULLS LAST")),
        "{made:?}"
    );
    let oid = |client: &mut postgres::Client| -> u32 {
        client
            .query_one("SELECT 'idx_things_desc_n_name'::regclass::oid", &[])
            .expect("the descending index")
            .get(0)
    };
    let descending = oid(&mut client);
    // As an older version made them.
    client
        .batch_execute(
            "DROP INDEX idx_things_n; CREATE INDEX idx_things_n ON things (n);
             DROP INDEX idx_things_name_n; CREATE UNIQUE INDEX idx_things_name_n ON things (name, n);
             CREATE INDEX someone_elses ON things (n);",
        )
        .expect("old indexes");
    assert!(definitions(&mut client)
        .iter()
        .filter(|d| !d.contains("idx_things_desc_n_name"))
        .all(|d| !d.contains("NULLS FIRST")));
    let store = db.open();
    assert_eq!(definitions(&mut client), made);
    assert_eq!(
        oid(&mut client),
        descending,
        "the descending index was made again"
    );
    // The contract's order of `-n, name` is a walk of that index.
    let plan: Vec<String> = client
        .simple_query(
            "SET enable_sort = off; EXPLAIN SELECT id FROM things \
             ORDER BY n DESC NULLS LAST, name ASC NULLS FIRST LIMIT 10",
        )
        .expect("a plan")
        .into_iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(row) => row.get(0).map(String::from),
            _ => None,
        })
        .collect();
    assert!(
        plan.iter()
            .any(|l| l.contains("Index Scan using idx_things_desc_n_name"))
            && !plan.iter().any(|l| l.contains("Sort")),
        "{plan:?}"
    );
    let others: Vec<String> = client
        .query(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'someone_elses'",
            &[],
        )
        .expect("pg_indexes")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert!(
        others.len() == 1 && !others[0].contains("NULLS FIRST"),
        "an index the platform did not make is left as it is: {others:?}"
    );
    // Still unique.
    let things = def(store.as_ref(), "things");
    let row = columns(&things, &json!({"id": id(1), "n": 1, "name": "a"}));
    let twin = columns(&things, &json!({"id": id(2), "n": 1, "name": "a"}));
    let mut second = None;
    store
        .write(&mut |conn| {
            conn.insert(&things, &row)?;
            second = Some(conn.insert(&things, &twin));
            Ok(())
        })
        .expect("write");
    assert!(
        matches!(second, Some(Err(StoreError::NotUnique { .. }))),
        "{second:?}"
    );
}
