//! The SQL both backends run, written once: queries, writes and schema
//! statements are built here from the typed query tree, and a backend
//! supplies only its [`Dialect`] (placeholders, column types, the few
//! functions that differ) and a [`SqlConn`] that binds [`Scalar`]s and
//! reads [`Cell`]s. Every value is bound as a parameter (but for a row
//! limit, which a dialect may write as a number: see
//! [`Dialect::limit_clause`]); identifiers come from the schema only and are
//! quoted.

use host_sdk::schema::{Field, FieldType, Index};
use serde_json::{Map, Value};

use super::codec::{self, to_scalar, Cell, Scalar};
use super::{Columns, Reader, Record, StoreError, TextRows, Writer};
use crate::query::{AggFn, AggregateQuery, Comparison, FieldMasks, Filter, ReadQuery, TextMatch};
use crate::schema::CollectionDef;
use crate::values;

/// What differs between the SQL of two databases.
pub trait Dialect: Sync {
    /// The placeholder of the `n`th parameter (1-based).
    fn placeholder(&self, n: usize) -> String;
    /// The column type of a field kind.
    fn column_type(&self, kind: FieldType) -> &'static str;
    /// A boolean literal (column defaults).
    fn bool_literal(&self, b: bool) -> &'static str;
    /// `col`, a column of kind `kind`, is (`negated`: is not) among the
    /// list bound to `list`.
    fn in_list(&self, col: &str, kind: FieldType, negated: bool, list: &str) -> String;
    /// The JSON array in `col` has an element equal to `element`.
    fn has_element(&self, col: &str, element: &Value, p: &mut Params<'_>) -> String;
    /// A text match on `col` (a column of any type, matched as text).
    fn text_match(&self, col: &str, op: TextMatch, text: &str, p: &mut Params<'_>) -> String;
    /// One ORDER BY term; nulls sort first ascending and last descending
    /// on every backend.
    fn order_term(&self, col: &str, desc: bool) -> String;
    /// One column of an index, in the null order of [`Dialect::order_term`]
    /// so that the index serves both directions of a sort.
    fn index_column(&self, col: &str, descending: bool) -> String;
    /// A query of one row when the index `name` of `table` exists (in the
    /// connection's schema), whose one column says whether it is unique.
    fn index_uniqueness(&self, table: &str, name: &str, p: &mut Params<'_>) -> String;
    /// The LIMIT and OFFSET clause (with its leading space) of at most
    /// `limit` rows (`None`: all) after the first `offset`; empty when
    /// neither limits anything.
    fn limit_clause(&self, limit: Option<u64>, offset: u64, p: &mut Params<'_>) -> String;
    /// An aggregate function over a column of kind `kind` (`None`: `*`).
    /// Sums and averages are doubles; a sum of nothing is 0.
    fn aggregate(&self, f: AggFn, col: Option<(&str, FieldType)>) -> String;
}

/// A row count or offset as the database's integer (past `i64::MAX`:
/// as good as all).
pub fn clamp_to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The parameters of a statement being built.
pub struct Params<'d> {
    dialect: &'d dyn Dialect,
    pub values: Vec<Scalar>,
}

impl<'d> Params<'d> {
    pub fn new(dialect: &'d dyn Dialect) -> Self {
        Self {
            dialect,
            values: Vec::new(),
        }
    }

    /// Binds `value`; returns its placeholder.
    pub fn push(&mut self, value: Scalar) -> String {
        self.values.push(value);
        self.dialect.placeholder(self.values.len())
    }
}

/// One row of a result, read column by column.
pub trait Row {
    fn cell(&self, i: usize) -> Result<Cell<'_>, StoreError>;
}

/// A backend's connection, as the shared SQL drives it.
pub trait SqlConn: Send {
    fn dialect(&self) -> &'static dyn Dialect;
    /// Runs a query and hands every row to `each`.
    fn query(
        &mut self,
        sql: &str,
        params: &[Scalar],
        each: &mut dyn FnMut(&dyn Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
    /// Runs one statement; returns how many rows it changed.
    fn execute(&mut self, sql: &str, params: &[Scalar]) -> Result<u64, StoreError>;
    /// Runs statements without parameters (schema changes).
    fn execute_batch(&mut self, sql: &str) -> Result<(), StoreError>;
}

pub fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

fn unknown_field(field: &str) -> StoreError {
    StoreError::Invalid(format!("unknown field {field}"))
}

/// How a statement names `field`: its column, or for a masked field the
/// column on the rows its mask admits and null elsewhere.
fn column(
    c: &CollectionDef,
    masks: &FieldMasks,
    field: &str,
    p: &mut Params<'_>,
) -> Result<String, StoreError> {
    let Some(visible) = masks.get(field) else {
        return Ok(quote(field));
    };
    // The mask's own condition reads the stored columns.
    let mut when = String::new();
    condition(c, &FieldMasks::default(), visible, &mut when, p)?;
    Ok(format!("(CASE WHEN {when} THEN {} END)", quote(field)))
}

/// Appends the WHERE condition of `f` to `sql`, each field named as
/// [`column`] names it.
fn condition(
    c: &CollectionDef,
    masks: &FieldMasks,
    f: &Filter,
    sql: &mut String,
    p: &mut Params<'_>,
) -> Result<(), StoreError> {
    let d = p.dialect;
    let def = |field: &str| c.field(field).ok_or_else(|| unknown_field(field));
    match f {
        Filter::And(parts) | Filter::Or(parts) => {
            let and = matches!(f, Filter::And(_));
            if parts.is_empty() {
                sql.push_str(if and { "(1 = 1)" } else { "(1 = 0)" });
                return Ok(());
            }
            sql.push('(');
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    sql.push_str(if and { " AND " } else { " OR " });
                }
                condition(c, masks, part, sql, p)?;
            }
            sql.push(')');
        }
        Filter::Compare { field, op, value } => {
            let field_def = def(field)?;
            let col = column(c, masks, field, p)?;
            let mut scalar = to_scalar(field_def, value);
            if let Scalar::Text(text) = &mut scalar {
                // No stored text holds a NUL (writes refuse it, and
                // PostgreSQL cannot bind one): decided here, the same on
                // every backend. Against text without NUL, `p\0…` sorts
                // just after its prefix `p`.
                if let Some(nul) = text.find('\0') {
                    text.truncate(nul);
                    let bound = match op {
                        Comparison::Eq => None,
                        Comparison::Neq => Some(format!("{col} IS NOT NULL")),
                        Comparison::Lt | Comparison::Lte => {
                            Some(format!("{col} <= {}", p.push(scalar)))
                        }
                        Comparison::Gt | Comparison::Gte => {
                            Some(format!("{col} > {}", p.push(scalar)))
                        }
                    };
                    sql.push_str(bound.as_deref().unwrap_or("(1 = 0)"));
                    return Ok(());
                }
            }
            let sym = match op {
                Comparison::Eq => "=",
                Comparison::Neq => "<>",
                Comparison::Lt => "<",
                Comparison::Lte => "<=",
                Comparison::Gt => ">",
                Comparison::Gte => ">=",
            };
            let mark = p.push(scalar);
            sql.push_str(&format!("{col} {sym} {mark}"));
        }
        Filter::In {
            field,
            negated,
            values,
        } => {
            let field_def = def(field)?;
            let col = column(c, masks, field, p)?;
            // One parameter whatever the list's length: the statement is
            // cached, and no backend's parameter limit is ever reached.
            // A text holding a NUL equals nothing stored (see `Compare`).
            let list = values
                .iter()
                .map(|v| to_scalar(field_def, v))
                .filter(|s| !matches!(s, Scalar::Text(t) if t.contains('\0')))
                .collect();
            let mark = p.push(Scalar::List(list));
            sql.push_str(&d.in_list(&col, field_def.kind, *negated, &mark));
        }
        Filter::IsNull { field, null } => {
            def(field)?;
            sql.push_str(&column(c, masks, field, p)?);
            sql.push_str(if *null { " IS NULL" } else { " IS NOT NULL" });
        }
        Filter::HasElement {
            field,
            negated,
            element,
        } => {
            def(field)?;
            if values::holds_nul(element) {
                // No stored document holds a NUL (see `Compare`).
                sql.push_str(if *negated { "(1 = 1)" } else { "(1 = 0)" });
                return Ok(());
            }
            let col = column(c, masks, field, p)?;
            if *negated {
                sql.push_str("NOT ");
            }
            sql.push_str(&d.has_element(&col, element, p));
        }
        Filter::Text { field, op, text } => {
            def(field)?;
            if text.contains('\0') {
                // No stored text holds a NUL (see `Compare`).
                sql.push_str(if *op == TextMatch::NotContains {
                    "(1 = 1)"
                } else {
                    "(1 = 0)"
                });
                return Ok(());
            }
            let col = column(c, masks, field, p)?;
            sql.push_str(&d.text_match(&col, *op, text, p));
        }
    }
    Ok(())
}

/// Appends the WHERE clause of `filter`, its fields masked by `masks`,
/// and of `scope`, on the stored values.
fn where_clause(
    c: &CollectionDef,
    masks: &FieldMasks,
    filter: Option<&Filter>,
    scope: Option<&Filter>,
    sql: &mut String,
    p: &mut Params<'_>,
) -> Result<(), StoreError> {
    match (filter, scope) {
        (None, None) => {}
        (Some(filter), None) => {
            sql.push_str(" WHERE ");
            condition(c, masks, filter, sql, p)?;
        }
        (None, Some(scope)) => {
            sql.push_str(" WHERE ");
            condition(c, &FieldMasks::default(), scope, sql, p)?;
        }
        (Some(filter), Some(scope)) => {
            sql.push_str(" WHERE ");
            condition(c, masks, filter, sql, p)?;
            sql.push_str(" AND ");
            condition(c, &FieldMasks::default(), scope, sql, p)?;
        }
    }
    Ok(())
}

/// What receives each row of a select, with the kinds of its columns.
type EachRow<'a> = dyn FnMut(&dyn Row, &[Option<FieldType>]) -> Result<(), StoreError> + 'a;

/// Runs the SELECT of `q` and hands every row to `each`, with the kind of
/// each selected field.
fn select_rows(
    conn: &mut dyn SqlConn,
    c: &CollectionDef,
    q: &ReadQuery,
    each: &mut EachRow<'_>,
) -> Result<(), StoreError> {
    let d = conn.dialect();
    let mut p = Params::new(d);
    let cols = q
        .fields
        .iter()
        .map(|f| column(c, &q.masks, f, &mut p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut sql = format!("SELECT {} FROM {}", cols.join(", "), quote(&c.name));
    where_clause(
        c,
        &q.masks,
        q.filter.as_ref(),
        q.scope.as_ref(),
        &mut sql,
        &mut p,
    )?;
    if !q.sort.is_empty() {
        let order = q
            .sort
            .iter()
            .map(|(f, desc)| Ok(d.order_term(&column(c, &q.masks, f, &mut p)?, *desc)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        sql.push_str(" ORDER BY ");
        sql.push_str(&order.join(", "));
    }
    sql.push_str(&d.limit_clause(q.limit, q.offset, &mut p));
    let kinds: Vec<Option<FieldType>> = q
        .fields
        .iter()
        .map(|f| c.field(f).map(|d| d.kind))
        .collect();
    conn.query(&sql, &p.values, &mut |row| each(row, &kinds))
}

pub fn select(
    conn: &mut dyn SqlConn,
    c: &CollectionDef,
    q: &ReadQuery,
) -> Result<Vec<Record>, StoreError> {
    let mut out = Vec::new();
    select_rows(conn, c, q, &mut |row, kinds| {
        let mut record = Map::with_capacity(q.fields.len());
        for (i, name) in q.fields.iter().enumerate() {
            record.insert(name.clone(), codec::from_cell(kinds[i], row.cell(i)?));
        }
        out.push(record);
        Ok(())
    })?;
    Ok(out)
}

pub fn select_json(
    conn: &mut dyn SqlConn,
    c: &CollectionDef,
    q: &ReadQuery,
    out: &mut Vec<u8>,
) -> Result<usize, StoreError> {
    // Keys in the order a record map prints them, each once.
    let mut order: Vec<usize> = (0..q.fields.len()).collect();
    order.sort_by(|a, b| q.fields[*a].cmp(&q.fields[*b]));
    order.dedup_by(|a, b| q.fields[*a] == q.fields[*b]);
    let mut count = 0;
    select_rows(conn, c, q, &mut |row, kinds| {
        if count > 0 {
            out.push(b',');
        }
        out.push(b'{');
        for (n, &i) in order.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            codec::push_str(out, &q.fields[i]);
            out.push(b':');
            codec::push_cell(out, kinds[i], row.cell(i)?);
        }
        out.push(b'}');
        count += 1;
        Ok(())
    })?;
    Ok(count)
}

pub fn select_text(
    conn: &mut dyn SqlConn,
    c: &CollectionDef,
    q: &ReadQuery,
) -> Result<TextRows, StoreError> {
    let mut rows = TextRows::new(q.fields.clone());
    select_rows(conn, c, q, &mut |row, kinds| {
        for (i, kind) in kinds.iter().enumerate() {
            let cell = row.cell(i)?;
            rows.push_cell(|out| codec::push_cell(out, *kind, cell));
        }
        Ok(())
    })?;
    Ok(rows)
}

pub fn aggregate(
    conn: &mut dyn SqlConn,
    c: &CollectionDef,
    q: &AggregateQuery,
) -> Result<Vec<Record>, StoreError> {
    let d = conn.dialect();
    let mut p = Params::new(d);
    // Timestamps are stored as RFC 3339 UTC text: their first ten
    // characters are the UTC date.
    // A masked group's expression holds placeholders: GROUP BY repeats
    // the same text, which binds the same parameters.
    let group_exprs = q
        .group_by
        .iter()
        .map(|g| {
            let col = column(c, &q.masks, &g.field, &mut p)?;
            Ok(if g.date {
                format!("substr({col}, 1, 10)")
            } else {
                col
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let mut cols = group_exprs.clone();
    for (function, field) in &q.functions {
        let operand = match field {
            Some(f) => {
                let kind = c.field(f).ok_or_else(|| unknown_field(f))?.kind;
                Some((column(c, &q.masks, f, &mut p)?, kind))
            }
            None if *function == AggFn::Count => None,
            None => return Err(StoreError::Invalid("only count takes *".into())),
        };
        cols.push(d.aggregate(*function, operand.as_ref().map(|(q, k)| (q.as_str(), *k))));
    }
    let mut sql = format!("SELECT {} FROM {}", cols.join(", "), quote(&c.name));
    where_clause(
        c,
        &q.masks,
        q.filter.as_ref(),
        q.scope.as_ref(),
        &mut sql,
        &mut p,
    )?;
    if !q.group_by.is_empty() {
        sql.push_str(" GROUP BY ");
        sql.push_str(&group_exprs.join(", "));
    }
    sql.push_str(&d.limit_clause(q.limit, 0, &mut p));
    let mut out = Vec::new();
    conn.query(&sql, &p.values, &mut |row| {
        let mut record = Map::new();
        for (i, g) in q.group_by.iter().enumerate() {
            let kind = if g.date {
                None
            } else {
                c.field(&g.field).map(|d| d.kind)
            };
            record.insert(g.name.clone(), codec::from_cell(kind, row.cell(i)?));
        }
        for (j, (function, field)) in q.functions.iter().enumerate() {
            let cell = row.cell(q.group_by.len() + j)?;
            let kind = field.as_ref().and_then(|f| c.field(f)).map(|d| d.kind);
            let value = match function {
                AggFn::Count | AggFn::CountDistinct => codec::from_cell(None, cell),
                AggFn::Sum if kind == Some(FieldType::Integer) => match cell {
                    Cell::Real(f) => Value::from(f as i64),
                    other => codec::from_cell(None, other),
                },
                AggFn::Sum | AggFn::Avg => codec::from_cell(Some(FieldType::Float), cell),
                AggFn::Min | AggFn::Max => codec::from_cell(kind, cell),
            };
            match field {
                None => {
                    record.insert(function.name().into(), value);
                }
                Some(f) => {
                    let slot = record
                        .entry(function.name().to_string())
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Value::Object(m) = slot {
                        m.insert(f.clone(), value);
                    }
                }
            }
        }
        out.push(record);
        Ok(())
    })?;
    Ok(out)
}

fn field_of<'c>(c: &'c CollectionDef, name: &str) -> Result<&'c Field, StoreError> {
    c.field(name).ok_or_else(|| unknown_field(name))
}

pub fn insert(
    conn: &mut dyn SqlConn,
    c: &CollectionDef,
    values: &Columns,
) -> Result<(), StoreError> {
    let mut p = Params::new(conn.dialect());
    let mut cols = Vec::with_capacity(values.len());
    let mut marks = Vec::with_capacity(values.len());
    for (name, value) in values {
        field_of(c, name)?;
        cols.push(quote(name));
        marks.push(p.push(value.clone()));
    }
    let sql = format!(
        "INSERT INTO {} ({}) VALUES ({})",
        quote(&c.name),
        cols.join(", "),
        marks.join(", ")
    );
    conn.execute(&sql, &p.values)?;
    Ok(())
}

pub fn update(
    conn: &mut dyn SqlConn,
    c: &CollectionDef,
    key: &str,
    changes: &Columns,
) -> Result<bool, StoreError> {
    if key.contains('\0') {
        return Ok(false);
    }
    let mut p = Params::new(conn.dialect());
    if changes.is_empty() {
        let mark = p.push(Scalar::Text(key.to_string()));
        let sql = format!("SELECT 1 FROM {} WHERE \"id\" = {mark}", quote(&c.name));
        let mut found = false;
        conn.query(&sql, &p.values, &mut |_| {
            found = true;
            Ok(())
        })?;
        return Ok(found);
    }
    let mut sets = Vec::with_capacity(changes.len());
    for (name, value) in changes {
        field_of(c, name)?;
        let mark = p.push(value.clone());
        sets.push(format!("{} = {mark}", quote(name)));
    }
    let key = p.push(Scalar::Text(key.to_string()));
    let sql = format!(
        "UPDATE {} SET {} WHERE \"id\" = {key}",
        quote(&c.name),
        sets.join(", ")
    );
    Ok(conn.execute(&sql, &p.values)? > 0)
}

pub fn delete(conn: &mut dyn SqlConn, c: &CollectionDef, key: &str) -> Result<bool, StoreError> {
    if key.contains('\0') {
        return Ok(false);
    }
    let mut p = Params::new(conn.dialect());
    let key = p.push(Scalar::Text(key.to_string()));
    let sql = format!("DELETE FROM {} WHERE \"id\" = {key}", quote(&c.name));
    Ok(conn.execute(&sql, &p.values)? > 0)
}

/// Runs one operation on the counters (see [`super::Store::counter`]) as
/// one statement: adding is an upsert that adds to the stored points in
/// the database itself, so concurrent additions never lose one.
pub fn counter(
    conn: &mut dyn SqlConn,
    op: super::CounterOp<'_>,
) -> Result<Option<super::Window>, StoreError> {
    use super::CounterOp;
    let table = quote(super::COUNTERS);
    let mut p = Params::new(conn.dialect());
    let (sql, answers) = match op {
        CounterOp::Add {
            key,
            points,
            now_ms,
            length_ms,
        } => {
            let key = p.push(Scalar::Text(key.to_string()));
            let points = p.push(Scalar::Int(points));
            let ends = p.push(Scalar::Int(now_ms.saturating_add(length_ms)));
            // A window that is over starts again with the points added.
            // (Each placeholder is bound once, in the order of the text.)
            let mut over = || format!("{table}.\"ends\" <= {}", p.push(Scalar::Int(now_ms)));
            let (over_points, over_ends) = (over(), over());
            (
                format!(
                    "INSERT INTO {table} (\"id\", \"points\", \"ends\") VALUES ({key}, {points}, {ends}) \
                     ON CONFLICT (\"id\") DO UPDATE SET \
                     \"points\" = CASE WHEN {over_points} THEN excluded.\"points\" \
                         ELSE {table}.\"points\" + excluded.\"points\" END, \
                     \"ends\" = CASE WHEN {over_ends} THEN excluded.\"ends\" ELSE {table}.\"ends\" END \
                     RETURNING \"points\", \"ends\""
                ),
                true,
            )
        }
        CounterOp::TakeBack {
            key,
            points,
            now_ms,
        } => {
            let taken = p.push(Scalar::Int(points));
            let key = p.push(Scalar::Text(key.to_string()));
            let now = p.push(Scalar::Int(now_ms));
            let held = p.push(Scalar::Int(points));
            (
                format!(
                    "UPDATE {table} SET \"points\" = \"points\" - {taken} \
                     WHERE \"id\" = {key} AND \"ends\" > {now} AND \"points\" >= {held}"
                ),
                false,
            )
        }
        CounterOp::Read { key, now_ms } => {
            let key = p.push(Scalar::Text(key.to_string()));
            let now = p.push(Scalar::Int(now_ms));
            (
                format!(
                    "SELECT \"points\", \"ends\" FROM {table} WHERE \"id\" = {key} AND \"ends\" > {now}"
                ),
                true,
            )
        }
        CounterOp::Clear { key } => {
            let key = p.push(Scalar::Text(key.to_string()));
            (format!("DELETE FROM {table} WHERE \"id\" = {key}"), false)
        }
        CounterOp::Prune { now_ms } => {
            let now = p.push(Scalar::Int(now_ms));
            (
                format!("DELETE FROM {table} WHERE \"ends\" <= {now}"),
                false,
            )
        }
    };
    if !answers {
        conn.execute(&sql, &p.values)?;
        return Ok(None);
    }
    let mut window = None;
    conn.query(&sql, &p.values, &mut |row| {
        let int = |i: usize| match row.cell(i)? {
            Cell::Int(n) => Ok(n),
            other => Err(StoreError::Backend(format!(
                "a counter's column {i} reads {other:?}"
            ))),
        };
        window = Some(super::Window {
            points: int(0)?,
            ends_ms: int(1)?,
        });
        Ok(())
    })?;
    Ok(window)
}

/// A connection outside any transaction: reads only.
pub struct ReadConn<'a>(pub &'a mut dyn SqlConn);

/// A connection inside a write transaction.
pub struct WriteConn<'a>(pub &'a mut dyn SqlConn);

/// Both connections read with the shared SQL.
macro_rules! shared_reads {
    ($conn:ident) => {
        impl Reader for $conn<'_> {
            fn select(
                &mut self,
                c: &CollectionDef,
                q: &ReadQuery,
            ) -> Result<Vec<Record>, StoreError> {
                select(self.0, c, q)
            }
            fn select_json(
                &mut self,
                c: &CollectionDef,
                q: &ReadQuery,
                out: &mut Vec<u8>,
            ) -> Result<usize, StoreError> {
                select_json(self.0, c, q, out)
            }
            fn select_text(
                &mut self,
                c: &CollectionDef,
                q: &ReadQuery,
            ) -> Result<TextRows, StoreError> {
                select_text(self.0, c, q)
            }
            fn aggregate(
                &mut self,
                c: &CollectionDef,
                q: &AggregateQuery,
            ) -> Result<Vec<Record>, StoreError> {
                aggregate(self.0, c, q)
            }
        }
    };
}

shared_reads!(ReadConn);
shared_reads!(WriteConn);

impl Writer for WriteConn<'_> {
    fn insert(&mut self, c: &CollectionDef, values: &Columns) -> Result<(), StoreError> {
        insert(self.0, c, values)
    }
    fn update(
        &mut self,
        c: &CollectionDef,
        key: &str,
        changes: &Columns,
    ) -> Result<bool, StoreError> {
        update(self.0, c, key, changes)
    }
    fn delete(&mut self, c: &CollectionDef, key: &str) -> Result<bool, StoreError> {
        delete(self.0, c, key)
    }
}

// ---- schema statements ----

fn literal(d: &dyn Dialect, field: &Field, v: &Value) -> Result<String, StoreError> {
    Ok(match to_scalar(field, v) {
        Scalar::Null => "NULL".into(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Real(f) => format!("{f:?}"),
        Scalar::Bool(b) => d.bool_literal(b).into(),
        Scalar::Text(s) => format!("'{}'", s.replace('\'', "''")),
        Scalar::List(_) => return Err(StoreError::Invalid("a list is not a default".into())),
    })
}

pub fn column_def(d: &dyn Dialect, field: &Field) -> Result<String, StoreError> {
    let mut def = format!("{} {}", quote(&field.field), d.column_type(field.kind));
    if field.field == "id" {
        def.push_str(" PRIMARY KEY NOT NULL");
        return Ok(def);
    }
    if !field.nullable {
        def.push_str(" NOT NULL");
    }
    if let Some(default) = &field.default {
        def.push_str(" DEFAULT ");
        def.push_str(&literal(d, field, default)?);
    }
    if field.unique {
        def.push_str(" UNIQUE");
    }
    Ok(def)
}

pub fn create_table(d: &dyn Dialect, def: &CollectionDef) -> Result<String, StoreError> {
    let cols = def
        .fields
        .iter()
        .map(|f| column_def(d, f))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(format!(
        "CREATE TABLE {} ({})",
        quote(&def.name),
        cols.join(", ")
    ))
}

/// The longest identifier every backend keeps whole (PostgreSQL: 63 bytes).
const MAX_IDENTIFIER: usize = 63;

/// An index's name: its collection and fields, shortened with a digest of
/// the whole when longer than [`MAX_IDENTIFIER`].
pub(crate) fn index_name(collection: &str, index: &Index) -> String {
    use sha2::{Digest, Sha256};
    let fields: Vec<String> = index
        .fields
        .iter()
        .map(|f| match index_field(f) {
            (name, true) => format!("desc_{name}"),
            (name, false) => name.to_string(),
        })
        .collect();
    let name = format!("idx_{}_{}", collection, fields.join("_"));
    if name.len() <= MAX_IDENTIFIER {
        return name;
    }
    let digest = hex::encode(&Sha256::digest(name.as_bytes())[..6]);
    let mut cut = MAX_IDENTIFIER - digest.len() - 1;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}_{digest}", &name[..cut])
}

/// The statement that drops the index called `name` ([`index_name`]), if
/// it is there.
pub fn drop_index(name: &str) -> String {
    format!("DROP INDEX IF EXISTS {}", quote(name))
}

/// An index entry's field and whether it is descending (`-name`).
pub(crate) fn index_field(entry: &str) -> (&str, bool) {
    match entry.strip_prefix('-') {
        Some(name) => (name, true),
        None => (entry, false),
    }
}

pub fn index(d: &dyn Dialect, collection: &str, index: &Index) -> String {
    let name = index_name(collection, index);
    let cols: Vec<String> = index
        .fields
        .iter()
        .map(|f| {
            let (field, descending) = index_field(f);
            d.index_column(&quote(field), descending)
        })
        .collect();
    format!(
        "CREATE {}INDEX IF NOT EXISTS {} ON {} ({})",
        if index.unique { "UNIQUE " } else { "" },
        quote(&name),
        quote(collection),
        cols.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_index_names_are_shortened_and_stay_distinct() {
        let short = Index {
            fields: vec!["a".into()],
            unique: false,
        };
        assert_eq!(index_name("t", &short), "idx_t_a");
        let long = |last: &str| Index {
            fields: vec![
                "video_id".into(),
                "date_created".into(),
                "completed".into(),
                last.into(),
            ],
            unique: false,
        };
        let (a, b) = (
            index_name("video_plays", &long("duration_watched")),
            index_name("video_plays", &long("duration_watched_2")),
        );
        assert!(a.len() <= MAX_IDENTIFIER && b.len() <= MAX_IDENTIFIER);
        assert_ne!(a, b);
        assert!(a.starts_with("idx_video_plays_video_id"));
    }
}
