//! The facade's names of SDK 1.10 beside the ones they replace: the
//! `_raw` reads and answers, and the old names answering exactly as the
//! new ones.

use abi_stable::sabi_types::RMut;
use abi_stable::std_types::{RErr, ROk, RResult, RStr, RString};
use host_sdk::abi::{FfiAccess, FfiError, HostServices, TransactionBody_TO};
use host_sdk::direct::with_context;
use host_sdk::raw::{JsonOut, RawRecord};
use host_sdk::{ItemsError, Query, Response};
use serde_json::json;
use serde_json::value::RawValue;

/// Services answering every read with the same records and every
/// aggregate with the same rows, as the host's JSON text.
struct Fixed;

const RECORDS: &str = r#"[{"id":"a","title":"T"},{"id":"b","title":"U"}]"#;
const ROWS: &str = r#"[{"count":2}]"#;

fn unused() -> RResult<RString, FfiError> {
    RErr(FfiError {
        code: "UNAVAILABLE".into(),
        message: "not in this test".into(),
    })
}

impl HostServices for Fixed {
    fn read_by_query(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        ROk(RECORDS.into())
    }
    fn read_one(
        &self,
        _: FfiAccess,
        _: RStr<'_>,
        k: RStr<'_>,
        _: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        match k.as_str() {
            "a" => ROk(r#"{"id":"a","title":"T"}"#.into()),
            _ => ROk("null".into()),
        }
    }
    fn create_one(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        unused()
    }
    fn create_many(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        unused()
    }
    fn update_one(
        &self,
        _: FfiAccess,
        _: RStr<'_>,
        _: RStr<'_>,
        _: RStr<'_>,
    ) -> RResult<RString, FfiError> {
        unused()
    }
    fn delete_one(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        unused()
    }
    fn aggregate(&self, _: FfiAccess, _: RStr<'_>, _: RStr<'_>) -> RResult<RString, FfiError> {
        ROk(ROWS.into())
    }
    fn transaction(&self, _: TransactionBody_TO<'_, RMut<'_, ()>>) -> RResult<(), FfiError> {
        unused().map(drop)
    }
}

#[test]
fn raw_reads_give_the_hosts_text_and_the_old_names_the_same() -> Result<(), ItemsError> {
    with_context(None, &Fixed, |ctx| {
        let items = ctx.as_admin();
        let query = Query::new().limit(2);
        assert_eq!(items.read_by_query_raw("articles", &query)?, RECORDS);
        let counted = Query::new().aggregate("count", &["*"]);
        assert_eq!(items.aggregate_raw("articles", &counted)?, ROWS);
        #[allow(deprecated)]
        let (text, rows) = (
            items.read_text("articles", &query)?,
            items.aggregate_text("articles", &counted)?,
        );
        assert_eq!(text, RECORDS);
        assert_eq!(rows, ROWS);
        // The one-record read is `_raw` too, and an answer carries it as it is.
        let one = items.read_one_raw("articles", "a")?.expect("a record");
        assert_eq!(
            Response::ok_raw(one).body,
            br#"{"id":"a","title":"T"}"#.to_vec()
        );
        assert!(items.read_one_raw("articles", "zz")?.is_none());
        Ok(())
    })
}

#[test]
fn an_answer_carries_json_text_as_it_is_whoever_made_it() {
    let written = || {
        let mut out = JsonOut::default();
        let list = RawRecord::parse_list(RECORDS).expect("records");
        out.array(&list, |out, record| {
            out.raw(record.get("id").expect("id").get())
        });
        out
    };
    let ok = Response::ok_raw(written());
    assert_eq!(
        (ok.status, ok.content_type.as_str(), ok.json_body()),
        (200, "application/json", Some(json!(["a", "b"])))
    );
    #[allow(deprecated)]
    let old = Response::ok_written(written());
    assert_eq!(old, ok);

    let raw = RawValue::from_string(r#"{"id":"n"}"#.into()).expect("JSON");
    let created = Response::created_raw(raw);
    assert_eq!(
        (created.status, created.json_body()),
        (201, Some(json!({"id": "n"})))
    );
    assert_eq!(Response::created_raw(written()).status, 201);
}
