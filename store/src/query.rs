//! The platform's query language: parsing, validation against the schema,
//! and resolution of `$CURRENT_USER` / `$CURRENT_ROLE` / `$NOW`.
//!
//! Only fields the schema knows can appear in a filter, sort, field list or
//! group-by, so nothing a caller sends ever reaches the database as SQL text.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::schema::{CollectionDef, FieldType};
use crate::values;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct QueryError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, QueryError> {
    Err(QueryError(msg.into()))
}

/// An operator of the filter language, as written (`_eq`, `_in`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Compare(Comparison),
    In,
    Nin,
    Null,
    NNull,
    /// Substring of a string field; element of a JSON array field.
    Contains,
    NContains,
    IContains,
    StartsWith,
    EndsWith,
}

impl Op {
    fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "_eq" => Op::Compare(Comparison::Eq),
            "_neq" => Op::Compare(Comparison::Neq),
            "_lt" => Op::Compare(Comparison::Lt),
            "_lte" => Op::Compare(Comparison::Lte),
            "_gt" => Op::Compare(Comparison::Gt),
            "_gte" => Op::Compare(Comparison::Gte),
            "_in" => Op::In,
            "_nin" => Op::Nin,
            "_null" => Op::Null,
            "_nnull" => Op::NNull,
            "_contains" => Op::Contains,
            "_ncontains" => Op::NContains,
            "_icontains" => Op::IContains,
            "_starts_with" => Op::StartsWith,
            "_ends_with" => Op::EndsWith,
            _ => return None,
        })
    }
}

/// A comparison of a field with one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Eq,
    Neq,
    Lt,
    Lte,
    Gt,
    Gte,
}

/// A match of a string field against a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextMatch {
    Contains,
    /// Also true for a null field.
    NotContains,
    ContainsIgnoringCase,
    StartsWith,
    EndsWith,
}

/// A validated filter: each condition in the shape its operator needs,
/// with values resolved (variables) and normalised to the field's type, so
/// a backend only translates it.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    And(Vec<Filter>),
    Or(Vec<Filter>),
    /// `field op value`. A comparison with null is [`Filter::IsNull`] for
    /// `Eq`/`Neq`, and matches nothing for the others.
    Compare {
        field: String,
        op: Comparison,
        value: Value,
    },
    /// The field is one of `values` (or, `negated`, none of them).
    In {
        field: String,
        negated: bool,
        values: Vec<Value>,
    },
    /// The field is null (`null`) or is not.
    IsNull {
        field: String,
        null: bool,
    },
    /// A text match on a string field.
    Text {
        field: String,
        op: TextMatch,
        text: String,
    },
    /// A JSON array field has an element equal to `element` (or,
    /// `negated`, has none).
    HasElement {
        field: String,
        negated: bool,
        element: Value,
    },
}

impl Filter {
    /// `field` equals `value` (is null when `value` is null).
    pub fn eq(field: &str, value: Value) -> Filter {
        Filter::compare(field, Comparison::Eq, value)
    }

    /// `field` is greater than `value`.
    pub fn gt(field: &str, value: Value) -> Filter {
        Filter::compare(field, Comparison::Gt, value)
    }

    /// `field` is less than `value`.
    pub fn lt(field: &str, value: Value) -> Filter {
        Filter::compare(field, Comparison::Lt, value)
    }

    /// `field op value`, with the null forms of `Eq` and `Neq`.
    fn compare(field: &str, op: Comparison, value: Value) -> Filter {
        match (op, value.is_null()) {
            (Comparison::Eq, true) => Filter::IsNull {
                field: field.into(),
                null: true,
            },
            (Comparison::Neq, true) => Filter::IsNull {
                field: field.into(),
                null: false,
            },
            _ => Filter::Compare {
                field: field.into(),
                op,
                value,
            },
        }
    }

    /// `field` is one of `values`.
    pub fn is_in(field: &str, values: Vec<Value>) -> Filter {
        Filter::In {
            field: field.into(),
            negated: false,
            values,
        }
    }

    /// Conjunction of two optional filters.
    pub fn and(a: Option<Filter>, b: Option<Filter>) -> Option<Filter> {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(a), Some(b)) => Some(Filter::And(vec![a, b])),
        }
    }

    /// Directus's `search`: the items one of whose `searchable` fields
    /// holds `text`, string fields ignoring case, numbers and ids when
    /// `text` is one; no field to search in finds nothing.
    pub fn search<'f>(
        text: &str,
        searchable: impl IntoIterator<Item = &'f crate::schema::Field>,
    ) -> Filter {
        let text = text.trim();
        let integer = text.parse::<i64>().ok();
        let float = text.parse::<f64>().ok().filter(|f| f.is_finite());
        let id = uuid::Uuid::parse_str(text).ok();
        let mut any = Vec::new();
        for field in searchable {
            let name = field.field.as_str();
            match field.kind {
                FieldType::String | FieldType::Text => any.push(Filter::Text {
                    field: name.into(),
                    op: TextMatch::ContainsIgnoringCase,
                    text: text.to_string(),
                }),
                FieldType::Integer => {
                    if let Some(n) = integer {
                        any.push(Filter::eq(name, Value::from(n)));
                    }
                }
                FieldType::Float => {
                    if let Some(f) = float {
                        any.push(Filter::eq(name, Value::from(f)));
                    }
                }
                FieldType::Uuid => {
                    if let Some(id) = id {
                        any.push(Filter::eq(name, Value::String(id.to_string())));
                    }
                }
                FieldType::Boolean | FieldType::Timestamp | FieldType::Json => {}
            }
        }
        Filter::Or(any)
    }

    /// Every field the filter names.
    pub fn fields(&self, out: &mut Vec<String>) {
        match self {
            Filter::And(v) | Filter::Or(v) => v.iter().for_each(|f| f.fields(out)),
            Filter::Compare { field, .. }
            | Filter::In { field, .. }
            | Filter::IsNull { field, .. }
            | Filter::Text { field, .. }
            | Filter::HasElement { field, .. } => out.push(field.clone()),
        }
    }
}

/// Values of the dynamic variables at the time of a request.
#[derive(Debug, Clone)]
pub struct Vars {
    pub current_user: Option<String>,
    /// The caller's role, for `$CURRENT_ROLE`.
    pub current_role: Option<String>,
    /// The ids of the caller's policies, for `$CURRENT_POLICIES` (a list).
    pub current_policies: Vec<String>,
    pub now: String,
}

impl Vars {
    pub fn new(current_user: Option<String>) -> Self {
        Self {
            current_user,
            current_role: None,
            current_policies: Vec::new(),
            now: values::now_timestamp(),
        }
    }

    /// With the caller's role as `$CURRENT_ROLE`.
    pub fn with_role(mut self, role: Option<String>) -> Self {
        self.current_role = role;
        self
    }

    /// With the caller's policies as `$CURRENT_POLICIES`.
    pub fn with_policies(mut self, policies: Vec<String>) -> Self {
        self.current_policies = policies;
        self
    }

    /// `v` with the variables it names replaced, borrowed when it names
    /// none (a related read's hundreds of keys are not copied for this).
    fn resolve<'v>(&self, v: &'v Value) -> Cow<'v, Value> {
        match v {
            Value::String(s) => self.variable(s).map_or(Cow::Borrowed(v), Cow::Owned),
            Value::Array(items) => {
                let resolved: Vec<Cow<'v, Value>> = items.iter().map(|i| self.resolve(i)).collect();
                if resolved.iter().all(|r| matches!(r, Cow::Borrowed(_))) {
                    Cow::Borrowed(v)
                } else {
                    Cow::Owned(Value::Array(
                        resolved.into_iter().map(Cow::into_owned).collect(),
                    ))
                }
            }
            _ => Cow::Borrowed(v),
        }
    }

    /// The value of the variable `name`, if it is one.
    fn variable(&self, name: &str) -> Option<Value> {
        let text = |t: &Option<String>| t.clone().map(Value::String).unwrap_or(Value::Null);
        match name {
            "$CURRENT_USER" => Some(text(&self.current_user)),
            "$CURRENT_ROLE" => Some(text(&self.current_role)),
            "$CURRENT_POLICIES" => Some(Value::Array(
                self.current_policies
                    .iter()
                    .cloned()
                    .map(Value::String)
                    .collect(),
            )),
            "$NOW" => Some(Value::String(self.now.clone())),
            _ => None,
        }
    }
}

/// How large a query may be; past these it is refused (400 `INVALID_QUERY`)
/// before the database sees it. Far above what any page of the platform
/// asks, far below what makes a database slow or refuse (SQLite caps an
/// expression's depth at 1,000 and a statement's columns at 2,000).
pub mod limits {
    /// Conditions and `_and` / `_or` groups in one filter.
    pub const FILTER_CONDITIONS: usize = 200;
    /// How deep `_and` / `_or` groups nest.
    pub const FILTER_DEPTH: usize = 32;
    /// Terms of `sort`.
    pub const SORT_TERMS: usize = 16;
    /// Fields of `groupBy`.
    pub const GROUP_BY: usize = 8;
    /// Names in `fields` (repeats included).
    pub const FIELDS: usize = 500;
    /// Functions and their fields in `aggregate`.
    pub const AGGREGATES: usize = 32;
}

/// How far and how wide a read may follow relations (docs/decisions.md §4):
/// past either bound it is refused, 400 `INVALID_QUERY`, the depth before
/// anything is read. Through one-to-many aliases every level multiplies
/// the records read, so one short `fields` list could otherwise ask for
/// more than the host's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelationalLimits {
    /// Levels of one path in `fields` or `filter`, every dot counting
    /// (`MAX_RELATIONAL_DEPTH`, as Directus counts it; at least 2).
    pub max_depth: usize,
    /// Related records one answer may hold, at every depth
    /// (`MAX_RELATED_RECORDS`).
    pub max_records: u64,
    /// Bytes of one answer that follows relations (`MAX_RESPONSE_BYTES`):
    /// a related record is copied into every parent that names it, so a
    /// few large records named many times would otherwise make an answer
    /// far larger than the data.
    pub max_bytes: u64,
}

impl Default for RelationalLimits {
    fn default() -> Self {
        Self {
            max_depth: 10,
            max_records: 50_000,
            max_bytes: 64 * 1024 * 1024,
        }
    }
}

impl RelationalLimits {
    /// Refuses a query whose `fields` or `filter` go deeper than
    /// `max_depth`.
    pub fn check_depth(&self, wire: &WireQuery) -> Result<(), QueryError> {
        let max = self.max_depth.max(2);
        if let Some(fields) = &wire.fields {
            if let Some(f) = fields.items().iter().find(|f| f.split('.').count() > max) {
                return err(format!(
                    "Max relational depth exceeded: \"{f}\" has {} levels, at most {max}",
                    f.split('.').count()
                ));
            }
        }
        if let Some(filter) = &wire.filter {
            let depth = filter_depth(filter);
            if depth > max {
                return err(format!(
                    "Max relational depth exceeded: the filter has a path of {depth} levels, at most {max}"
                ));
            }
        }
        Ok(())
    }

    /// The refusal of an answer that would hold more related records than
    /// `max_records`.
    pub fn too_many_records(&self) -> QueryError {
        QueryError(format!(
            "The answer would hold more than {} related records: ask for fewer items or fewer relational fields",
            self.max_records
        ))
    }

    /// The refusal of an answer that would be larger than `max_bytes`.
    pub fn too_large(&self) -> QueryError {
        QueryError(format!(
            "The answer would be larger than {} bytes: ask for fewer items or fewer relational fields",
            self.max_bytes
        ))
    }

    /// The most bytes one answer may take, as a length.
    pub fn max_len(&self) -> usize {
        usize::try_from(self.max_bytes).unwrap_or(usize::MAX)
    }
}

/// The longest field path of a filter (`{author: {role: {name: {_eq: x}}}}`
/// is 3), `_and` / `_or` groups and operators not counting.
fn filter_depth(filter: &Value) -> usize {
    let Value::Object(map) = filter else {
        return 0;
    };
    map.iter()
        .map(|(key, value)| match (key.as_str(), value) {
            ("_and" | "_or", Value::Array(items)) => {
                items.iter().map(filter_depth).max().unwrap_or(0)
            }
            (k, _) if k.starts_with('_') => 0,
            (_, below) => 1 + filter_depth(below),
        })
        .max()
        .unwrap_or(0)
}

fn at_most(what: &str, count: usize, limit: usize) -> Result<(), QueryError> {
    if count > limit {
        return err(format!("too many {what} ({count}; at most {limit})"));
    }
    Ok(())
}

/// Parses and validates a filter object against a collection.
pub fn parse_filter(c: &CollectionDef, raw: &Value, vars: &Vars) -> Result<Filter, QueryError> {
    let mut conditions = 0;
    parse_filter_at(c, raw, vars, 0, &mut conditions)
}

fn parse_filter_at(
    c: &CollectionDef,
    raw: &Value,
    vars: &Vars,
    depth: usize,
    conditions: &mut usize,
) -> Result<Filter, QueryError> {
    if depth > limits::FILTER_DEPTH {
        return err("filter is nested too deeply");
    }
    let Value::Object(map) = raw else {
        return err("filter must be an object");
    };
    let mut parts = Vec::new();
    for (key, value) in map {
        match key.as_str() {
            "_and" | "_or" => {
                let Value::Array(items) = value else {
                    return err(format!("{key} takes an array"));
                };
                *conditions += 1;
                at_most("filter conditions", *conditions, limits::FILTER_CONDITIONS)?;
                let list = items
                    .iter()
                    .map(|i| parse_filter_at(c, i, vars, depth + 1, conditions))
                    .collect::<Result<Vec<_>, _>>()?;
                parts.push(if key == "_and" {
                    Filter::And(list)
                } else {
                    Filter::Or(list)
                });
            }
            field => {
                let found = parse_conditions(c, field, value, vars)?;
                *conditions += found.len();
                at_most("filter conditions", *conditions, limits::FILTER_CONDITIONS)?;
                parts.extend(found);
            }
        }
    }
    Ok(if parts.len() == 1 {
        parts.remove(0)
    } else {
        Filter::And(parts)
    })
}

fn parse_conditions(
    c: &CollectionDef,
    field: &str,
    ops: &Value,
    vars: &Vars,
) -> Result<Vec<Filter>, QueryError> {
    let Some(def) = c.field(field) else {
        return err(format!(
            "unknown field \"{field}\" in collection \"{}\"",
            c.name
        ));
    };
    // A bare value under a field is shorthand for `_eq` (as in Directus):
    // `{collection: "videos"}` is `{collection: {_eq: "videos"}}`.
    let shorthand;
    let ops = match ops {
        Value::Object(ops) => ops,
        Value::Array(_) => {
            return err(format!(
                "filter of \"{field}\" must be a value or an object of operators"
            ))
        }
        bare => {
            shorthand = Map::from_iter([("_eq".to_string(), bare.clone())]);
            &shorthand
        }
    };
    let mut out = Vec::new();
    for (op_name, raw) in ops {
        let Some(op) = Op::parse(op_name) else {
            if op_name.starts_with('_') {
                return err(format!("unknown filter operator \"{op_name}\""));
            }
            return err(format!(
                "relational filter \"{field}.{op_name}\" is not supported"
            ));
        };
        let resolved = vars.resolve(raw);
        let condition = match op {
            Op::Null | Op::NNull => {
                let asked = match &*resolved {
                    Value::Bool(b) => *b,
                    Value::String(s) => s != "false" && s != "0",
                    Value::Null => false,
                    _ => true,
                };
                Filter::IsNull {
                    field: field.to_string(),
                    null: (op == Op::Null) == asked,
                }
            }
            Op::In | Op::Nin => {
                let split: Vec<Value>;
                let items: &[Value] = match &*resolved {
                    Value::Array(items) => items,
                    Value::String(s) => {
                        split = s.split(',').map(|p| Value::String(p.to_string())).collect();
                        &split
                    }
                    other => std::slice::from_ref(other),
                };
                Filter::In {
                    field: field.to_string(),
                    negated: op == Op::Nin,
                    values: items
                        .iter()
                        .map(|i| values::normalize(def, i, true).map_err(QueryError))
                        .collect::<Result<Vec<_>, _>>()?,
                }
            }
            Op::Contains | Op::NContains if def.kind == FieldType::Json => {
                // Element of a JSON array: compared as JSON.
                Filter::HasElement {
                    field: field.to_string(),
                    negated: op == Op::NContains,
                    element: resolved.into_owned(),
                }
            }
            Op::Contains | Op::NContains | Op::IContains | Op::StartsWith | Op::EndsWith => {
                let text = match (&*resolved, def.kind) {
                    (Value::String(s), _) => s.clone(),
                    (Value::Number(n), _) => n.to_string(),
                    // A JSON field's text, matched as stored.
                    (other, FieldType::Json) => other.to_string(),
                    _ => return err(format!("{op_name} on \"{field}\" takes a string")),
                };
                let op = match op {
                    Op::Contains => TextMatch::Contains,
                    Op::NContains => TextMatch::NotContains,
                    Op::IContains => TextMatch::ContainsIgnoringCase,
                    Op::StartsWith => TextMatch::StartsWith,
                    _ => TextMatch::EndsWith,
                };
                Filter::Text {
                    field: field.to_string(),
                    op,
                    text,
                }
            }
            Op::Compare(comparison) => {
                if def.kind == FieldType::Json {
                    return err(format!(
                        "{op_name} is not supported on JSON field \"{field}\""
                    ));
                }
                let value = values::normalize(def, &resolved, true).map_err(QueryError)?;
                Filter::compare(field, comparison, value)
            }
        };
        out.push(condition);
    }
    Ok(out)
}

/// A validated read.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadQuery {
    pub filter: Option<Filter>,
    /// (field, descending)
    pub sort: Vec<(String, bool)>,
    pub limit: Option<u64>,
    pub offset: u64,
    /// Fields to return; never empty.
    pub fields: Vec<String>,
    /// Fields that read as null on some rows, wherever `filter`, `sort`
    /// and `fields` use them.
    pub masks: FieldMasks,
    /// Conditions every row must also meet, read on the stored values
    /// whatever `masks` says (the caller's permissions).
    pub scope: Option<Filter>,
}

/// Fields that read as null on the rows a condition does not admit,
/// wherever the query uses them (returned, filtered, sorted, grouped,
/// aggregated): a field that only some of a caller's permission rules
/// grant is seen on the rows of those rules alone, as Directus 11 applies
/// row rules per field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldMasks(Vec<(String, Filter)>);

impl FieldMasks {
    /// `field` reads as null on the rows `visible` does not admit.
    pub fn insert(&mut self, field: &str, visible: Filter) {
        self.0.retain(|(f, _)| f != field);
        self.0.push((field.to_string(), visible));
    }

    /// The rows on which `field` is seen; `None`: on every row.
    pub fn get(&self, field: &str) -> Option<&Filter> {
        self.0.iter().find(|(f, _)| f == field).map(|(_, v)| v)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl ReadQuery {
    pub fn all_fields(c: &CollectionDef) -> Self {
        Self {
            filter: None,
            sort: Vec::new(),
            limit: None,
            offset: 0,
            fields: c.fields.iter().map(|f| f.field.clone()).collect(),
            masks: FieldMasks::default(),
            scope: None,
        }
    }

    /// `fields` of every item `filter` admits, in no particular order.
    pub fn select(fields: &[&str], filter: Filter) -> Self {
        Self {
            filter: Some(filter),
            sort: Vec::new(),
            limit: None,
            offset: 0,
            fields: fields.iter().map(|f| f.to_string()).collect(),
            masks: FieldMasks::default(),
            scope: None,
        }
    }

    /// At most `n` items.
    pub fn limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }
}

/// An aggregate function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFn {
    Count,
    CountDistinct,
    Sum,
    Avg,
    Min,
    Max,
}

impl AggFn {
    fn parse(s: &str) -> Option<AggFn> {
        Some(match s {
            "count" => AggFn::Count,
            "countDistinct" => AggFn::CountDistinct,
            "sum" => AggFn::Sum,
            "avg" => AggFn::Avg,
            "min" => AggFn::Min,
            "max" => AggFn::Max,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            AggFn::Count => "count",
            AggFn::CountDistinct => "countDistinct",
            AggFn::Sum => "sum",
            AggFn::Avg => "avg",
            AggFn::Min => "min",
            AggFn::Max => "max",
        }
    }
}

/// One group-by key: a field, or the UTC date (`YYYY-MM-DD`) of a
/// timestamp field, written `date(field)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupKey {
    /// The key's name in result rows, as the caller wrote it.
    pub name: String,
    pub field: String,
    pub date: bool,
}

impl GroupKey {
    fn parse(c: &CollectionDef, raw: &str) -> Result<GroupKey, QueryError> {
        let (field, date) = match raw.strip_prefix("date(").and_then(|r| r.strip_suffix(')')) {
            Some(inner) => (inner.trim(), true),
            None => (raw, false),
        };
        let Some(def) = c.field(field) else {
            return err(format!("cannot group by unknown field \"{field}\""));
        };
        if date && def.kind != FieldType::Timestamp {
            return err(format!(
                "date() needs a timestamp field; \"{field}\" is not one"
            ));
        }
        Ok(GroupKey {
            name: raw.to_string(),
            field: field.to_string(),
            date,
        })
    }
}

/// A validated aggregation.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateQuery {
    pub filter: Option<Filter>,
    /// (function, field or `None` for `*`)
    pub functions: Vec<(AggFn, Option<String>)>,
    pub group_by: Vec<GroupKey>,
    pub limit: Option<u64>,
    /// As [`ReadQuery::masks`].
    pub masks: FieldMasks,
    /// As [`ReadQuery::scope`].
    pub scope: Option<Filter>,
}

/// A query as it arrives (JSON from an extension, or query-string
/// parameters of the REST API).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireQuery {
    #[serde(default)]
    pub filter: Option<Value>,
    /// Directus's `search`: text looked for in every field the caller may
    /// read (see [`Filter::search`]).
    #[serde(default)]
    pub search: Option<String>,
    #[serde(default)]
    pub sort: Option<ListParam>,
    #[serde(default)]
    pub limit: Option<i64>,
    #[serde(default)]
    pub offset: Option<i64>,
    #[serde(default)]
    pub page: Option<i64>,
    #[serde(default)]
    pub fields: Option<ListParam>,
    #[serde(default)]
    pub aggregate: Option<Map<String, Value>>,
    #[serde(default, rename = "groupBy")]
    pub group_by: Option<ListParam>,
    /// Fields of the collection left out of what `fields` names (its `*`
    /// above all): not read, not written, not followed. Extensions' JSON
    /// queries only (SDK 1.17), so that a record's private fields are never
    /// read for a public answer; the key cannot be left out. A path
    /// (`author.email`, SDK 1.18) leaves a field out of the records a
    /// relation `fields` follows leads to: the relational reader hands it
    /// down, so a dotted name reaching this level is one nothing follows.
    #[serde(default)]
    pub without: Option<Vec<String>>,
    /// One-to-many aliases written as what their records lead to
    /// (`models.platform_users_id`: each video's `models` as the list of
    /// the users its links name, a link naming none left out). Extensions'
    /// JSON queries only (SDK 1.20); the relational reader takes it, so one
    /// reaching a collection's own read names nothing `fields` follows.
    #[serde(default)]
    pub flatten: Option<Vec<String>>,
}

/// A list given either as a JSON array or a comma-separated string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ListParam {
    List(Vec<String>),
    Text(String),
}

impl ListParam {
    pub fn items(&self) -> Vec<String> {
        match self {
            ListParam::List(v) => v.clone(),
            ListParam::Text(s) => s
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
        }
    }
}

impl WireQuery {
    pub fn from_json(text: &str) -> Result<Self, QueryError> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        serde_json::from_str(text).map_err(|e| QueryError(format!("invalid query: {e}")))
    }

    /// `limit` absent: `default_limit`; `-1`: no limit.
    pub fn to_read(
        &self,
        c: &CollectionDef,
        vars: &Vars,
        default_limit: Option<u64>,
    ) -> Result<ReadQuery, QueryError> {
        let filter = match &self.filter {
            None | Some(Value::Null) => None,
            Some(f) if f.as_object().is_some_and(Map::is_empty) => None,
            Some(f) => Some(parse_filter(c, f, vars)?),
        };
        let mut sort = Vec::new();
        let terms = self.sort.as_ref().map(ListParam::items).unwrap_or_default();
        at_most("sort terms", terms.len(), limits::SORT_TERMS)?;
        for item in terms {
            let (name, desc) = match item.strip_prefix('-') {
                Some(n) => (n.to_string(), true),
                None => (item.clone(), false),
            };
            if !c.has(&name) {
                return err(format!("cannot sort by unknown field \"{name}\""));
            }
            sort.push((name, desc));
        }
        let limit = match self.limit {
            None => default_limit,
            Some(-1) => None,
            Some(n) if n >= 0 => Some(n as u64),
            Some(n) => return err(format!("invalid limit {n}")),
        };
        let offset = match (self.offset, self.page) {
            (Some(o), _) if o < 0 => return err(format!("invalid offset {o}")),
            (Some(o), _) => o as u64,
            (None, Some(p)) if p < 1 => return err(format!("invalid page {p}")),
            (None, Some(p)) => (p as u64 - 1).saturating_mul(limit.unwrap_or(0)),
            (None, None) => 0,
        };
        if let Some(path) = self.flatten.iter().flatten().next() {
            return err(format!(
                "\"{path}\" cannot be flattened: \"fields\" follows no one-to-many alias of \"{}\"",
                c.name
            ));
        }
        let mut fields = resolve_fields(c, self.fields.as_ref())?;
        if let Some(without) = &self.without {
            leave_out(c, &mut fields, without)?;
        }
        Ok(ReadQuery {
            filter,
            sort,
            limit,
            offset,
            fields,
            masks: FieldMasks::default(),
            scope: None,
        })
    }

    pub fn to_aggregate(
        &self,
        c: &CollectionDef,
        vars: &Vars,
    ) -> Result<AggregateQuery, QueryError> {
        let read = self.to_read(c, vars, None)?;
        let Some(aggregate) = &self.aggregate else {
            return err("aggregate query without \"aggregate\"");
        };
        let mut functions = Vec::new();
        at_most("aggregate functions", aggregate.len(), limits::AGGREGATES)?;
        for (name, fields) in aggregate {
            let Some(function) = AggFn::parse(name) else {
                return err(format!("unknown aggregate function \"{name}\""));
            };
            let fields = match fields {
                Value::Array(items) => items
                    .iter()
                    .map(|i| i.as_str().map(String::from))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| QueryError(format!("{name} takes field names")))?,
                Value::String(s) => s.split(',').map(|p| p.trim().to_string()).collect(),
                _ => return err(format!("{name} takes field names")),
            };
            at_most(
                "aggregated fields",
                functions.len() + fields.len(),
                limits::AGGREGATES,
            )?;
            for field in fields {
                if field == "*" {
                    if !matches!(function, AggFn::Count) {
                        return err(format!("{name}(*) is not supported"));
                    }
                    functions.push((function, None));
                } else if let Some(def) = c.field(&field) {
                    // Sums and averages are of numbers (booleans count 0/1).
                    let numeric = matches!(
                        def.kind,
                        FieldType::Integer | FieldType::Float | FieldType::Boolean
                    );
                    if matches!(function, AggFn::Sum | AggFn::Avg) && !numeric {
                        return err(format!(
                            "{name} of \"{field}\" is not supported: not a number"
                        ));
                    }
                    functions.push((function, Some(field)));
                } else {
                    return err(format!("unknown field \"{field}\" in {name}"));
                }
            }
        }
        let group_by = self
            .group_by
            .as_ref()
            .map(ListParam::items)
            .unwrap_or_default();
        at_most("groupBy fields", group_by.len(), limits::GROUP_BY)?;
        let group_by = group_by
            .iter()
            .map(|g| GroupKey::parse(c, g))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AggregateQuery {
            filter: read.filter,
            functions,
            group_by,
            limit: read.limit,
            masks: FieldMasks::default(),
            scope: None,
        })
    }
}

fn resolve_fields(
    c: &CollectionDef,
    fields: Option<&ListParam>,
) -> Result<Vec<String>, QueryError> {
    let requested = fields.map(ListParam::items).unwrap_or_default();
    at_most("fields", requested.len(), limits::FIELDS)?;
    if requested.is_empty() || requested.iter().any(|f| f == "*") {
        let mut all: Vec<String> = c.fields.iter().map(|f| f.field.clone()).collect();
        // `*` plus explicit names is still everything.
        all.dedup();
        return Ok(all);
    }
    let mut out = Vec::new();
    for f in requested {
        if f.contains('.') {
            return err(format!("relational field \"{f}\" is not supported"));
        }
        if !c.has(&f) {
            return err(format!(
                "unknown field \"{f}\" in collection \"{}\"",
                c.name
            ));
        }
        if !out.contains(&f) {
            out.push(f);
        }
    }
    Ok(out)
}

/// Removes `without` from `fields`: fields of `c` all, and never its key.
fn leave_out(
    c: &CollectionDef,
    fields: &mut Vec<String>,
    without: &[String],
) -> Result<(), QueryError> {
    at_most("fields left out", without.len(), limits::FIELDS)?;
    for name in without {
        if name == "id" {
            return err("the key \"id\" cannot be left out");
        }
        if let Some((head, _)) = name.split_once('.') {
            return err(format!(
                "\"{head}\" is not followed by \"fields\": nothing below it can be left out"
            ));
        }
        if !c.has(name) {
            return err(format!(
                "unknown field \"{name}\" in collection \"{}\"",
                c.name
            ));
        }
    }
    fields.retain(|f| !without.contains(f));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Field;
    use serde_json::json;

    fn recordings() -> CollectionDef {
        CollectionDef::new(
            "recordings",
            vec![
                Field::string("title"),
                Field::boolean("public"),
                Field::json("tags"),
                Field::uuid("user_created"),
                Field::timestamp("date_created"),
            ],
        )
    }

    /// `without` takes fields out of `*` and out of a list, refuses the
    /// key and names the collection does not have.
    #[test]
    fn fields_are_left_out() {
        let c = recordings();
        let vars = Vars::new(None);
        let read = |q: serde_json::Value| {
            WireQuery::from_json(&q.to_string())
                .and_then(|w| w.to_read(&c, &vars, None))
                .map(|r| r.fields)
        };
        let all: Vec<String> = c.fields.iter().map(|f| f.field.clone()).collect();
        assert!(all.contains(&"tags".to_string()) && all.contains(&"public".to_string()));
        let expected: Vec<String> = all
            .iter()
            .filter(|f| *f != "tags" && *f != "public")
            .cloned()
            .collect();
        assert_eq!(
            read(json!({"without": ["tags", "public"]})).unwrap(),
            expected
        );
        assert_eq!(
            read(json!({"fields": ["*"], "without": ["tags", "public"]})).unwrap(),
            expected
        );
        assert_eq!(
            read(json!({"fields": ["title", "tags"], "without": ["tags"]})).unwrap(),
            ["title"]
        );
        assert_eq!(read(json!({"without": []})).unwrap(), all);
        let refused = |q| read(q).unwrap_err().0;
        assert!(refused(json!({"without": ["id"]})).contains("cannot be left out"));
        assert!(refused(json!({"without": ["nope"]})).contains("unknown field \"nope\""));
        // A path is the relational reader's to hand down; here nothing
        // follows it.
        assert!(refused(json!({"without": ["tags.x"]})).contains("\"tags\" is not followed"));
    }

    #[test]
    fn variables_resolve() {
        let vars = Vars::new(Some("u1".into()));
        let f = parse_filter(
            &recordings(),
            &json!({"user_created": {"_eq": "$CURRENT_USER"}}),
            &vars,
        )
        .unwrap();
        assert_eq!(
            f,
            Filter::Compare {
                field: "user_created".into(),
                op: Comparison::Eq,
                value: json!("u1")
            }
        );
        let anon = Vars::new(None);
        let f = parse_filter(
            &recordings(),
            &json!({"user_created": {"_eq": "$CURRENT_USER"}}),
            &anon,
        )
        .unwrap();
        assert_eq!(
            f,
            Filter::IsNull {
                field: "user_created".into(),
                null: true
            }
        );
        // Inside a list, a variable is replaced and the rest kept.
        let f = parse_filter(
            &recordings(),
            &json!({"user_created": {"_in": ["x", "$CURRENT_USER"]}}),
            &vars,
        )
        .unwrap();
        assert_eq!(
            f,
            Filter::In {
                field: "user_created".into(),
                negated: false,
                values: vec![json!("x"), json!("u1")]
            }
        );
    }

    #[test]
    fn unknown_fields_and_operators_are_refused() {
        let vars = Vars::new(None);
        let c = recordings();
        assert!(parse_filter(&c, &json!({"title; DROP TABLE x": {"_eq": 1}}), &vars).is_err());
        assert!(parse_filter(&c, &json!({"title": {"_regex": "x"}}), &vars).is_err());
        assert!(parse_filter(&c, &json!({"title": {"author": {"_eq": 1}}}), &vars).is_err());
        let q = WireQuery {
            sort: Some(ListParam::Text("-nope".into())),
            ..Default::default()
        };
        assert!(q.to_read(&c, &vars, None).is_err());
        let q = WireQuery {
            fields: Some(ListParam::Text("title,\"x\"".into())),
            ..Default::default()
        };
        assert!(q.to_read(&c, &vars, None).is_err());
    }

    #[test]
    fn current_policies_is_the_list_of_the_callers_policies() {
        let c = CollectionDef::new("platform_policies", vec![Field::string("name")]);
        let vars = Vars::new(Some("u1".into())).with_policies(vec!["p1".into(), "p2".into()]);
        let f = parse_filter(&c, &json!({"id": {"_in": "$CURRENT_POLICIES"}}), &vars).unwrap();
        assert_eq!(f, Filter::is_in("id", vec![json!("p1"), json!("p2")]));
        let none = parse_filter(
            &c,
            &json!({"id": {"_in": "$CURRENT_POLICIES"}}),
            &Vars::new(None),
        )
        .unwrap();
        assert_eq!(none, Filter::is_in("id", vec![]));
    }

    #[test]
    fn a_bare_value_under_a_field_means_eq() {
        let vars = Vars::new(Some("u1".into()));
        let c = recordings();
        let parse = |raw: Value| parse_filter(&c, &raw, &vars).unwrap();
        assert_eq!(
            parse(json!({"title": "x"})),
            parse(json!({"title": {"_eq": "x"}}))
        );
        assert_eq!(
            parse(json!({"user_created": "$CURRENT_USER", "public": true})),
            parse(json!({"user_created": {"_eq": "u1"}, "public": {"_eq": true}}))
        );
        assert_eq!(
            parse(json!({"title": null})),
            Filter::IsNull {
                field: "title".into(),
                null: true
            }
        );
        assert_eq!(
            parse(json!({"_or": [{"title": "a"}, {"_and": [{"title": "b"}]}]})),
            parse(json!({"_or": [{"title": {"_eq": "a"}}, {"_and": [{"title": {"_eq": "b"}}]}]}))
        );
        // Still checked against the field's type, and never a list.
        assert!(parse_filter(&c, &json!({"public": "not a boolean"}), &vars).is_err());
        assert!(parse_filter(&c, &json!({"title": ["a"]}), &vars).is_err());
        assert!(parse_filter(&c, &json!({"nope": "x"}), &vars).is_err());
    }

    #[test]
    fn paging_and_limits() {
        let vars = Vars::new(None);
        let c = recordings();
        let q = WireQuery {
            limit: Some(10),
            page: Some(3),
            ..Default::default()
        };
        let r = q.to_read(&c, &vars, Some(100)).unwrap();
        assert_eq!((r.limit, r.offset), (Some(10), 20));
        let q = WireQuery {
            limit: Some(-1),
            ..Default::default()
        };
        assert_eq!(q.to_read(&c, &vars, Some(100)).unwrap().limit, None);
        let q = WireQuery::default();
        assert_eq!(q.to_read(&c, &vars, Some(100)).unwrap().limit, Some(100));
        let q = WireQuery {
            offset: Some(-5),
            ..Default::default()
        };
        assert!(q.to_read(&c, &vars, None).is_err());
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let mut f = json!({"title": {"_eq": "x"}});
        for _ in 0..100 {
            f = json!({"_and": [f]});
        }
        assert!(parse_filter(&recordings(), &f, &Vars::new(None)).is_err());
    }
}
