//! TiCDC's Canal-JSON row messages (with the TiDB extension) straight into change records.
//!
//! `CanalRows.records` reads a message the way `cdclake.formats.canal_json.decoder` does and writes
//! the records `cdclake.spark.changes.ChangeWriter.add_row` would, or writes none (returns 0) where the
//! message is anything but a plain row message whose every part it can read (a DDL, a watermark, a large
//! message, a column without a type, JSON that is not TiCDC's): the Python decoder then reads it, and
//! says what is wrong where something is. What a type means stays in Python: a *planner* tells, per
//! `mysqlType` map, each column's [`Kind`] and its Python text function.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use crate::columns::Columns;
use crate::message::{parse, Message, Raw, Row, Text};
use crate::rows::{names_json, push_row, Image, MessageParts, Plan, ReadImage};
use pyo3::prelude::*;

/// Distinct `mysqlType` maps and key column lists kept; a full cache is emptied (as the decoder's).
const CACHE_SIZE: usize = 4096;

/// The parts of a row message the records are made of.
struct RowMessage<'m, 'a> {
    op: &'static str,
    database: &'m str,
    table: &'m str,
    data: &'m [Row<'a>],
    old: &'m [Option<Row<'a>>],
    mysql_type: &'m [(Cow<'a, str>, Text<'a>)],
    key_columns: Vec<&'m str>,
    commit_ts: i64,
}

impl<'m, 'a> RowMessage<'m, 'a> {
    fn of(message: &'m Message<'a>) -> Option<RowMessage<'m, 'a>> {
        let op = match message.kind.as_ref()?.0.as_ref() {
            "INSERT" => "insert",
            "UPDATE" => "update",
            "DELETE" => "delete",
            _ => return None,
        };
        if message.is_ddl == Some(true) {
            return None;
        }
        let data = message.data.as_deref()?;
        let old = match (op, message.old.as_deref()) {
            ("update", Some(old)) if old.len() > data.len() => return None,
            ("update", Some(old)) => old,
            _ => &[],
        };
        let key_columns = message
            .pk_names
            .iter()
            .flatten()
            .map(|name| name.0.as_ref())
            .collect();
        let commit_ts = i64::try_from(message.tidb.as_ref()?.commit_ts).ok()?;
        Some(RowMessage {
            op,
            database: message.database.as_ref()?.0.as_ref(),
            table: message.table.as_ref()?.0.as_ref(),
            data,
            old,
            mysql_type: &message.mysql_type.as_ref()?.0,
            key_columns,
            commit_ts,
        })
    }
}

/// A `mysqlType` map's (name, type text) entries and what they say (None: Python reads the messages).
type Planned = (Vec<(String, String)>, Option<Arc<Plan>>);

/// Reads Canal-JSON row messages into change records (see the module's documentation).
#[pyclass(module = "cdclake._native")]
pub struct CanalRows {
    /// `planner(names, type_texts)`: None, or (columns JSON, [(kind code, low, high, members, text function)]).
    planner: Py<PyAny>,
    /// Per table name, its last `mysqlType` map and what it says.
    plans: HashMap<String, Planned>,
    /// Per table name, its last key columns and their JSON (the change record's `key_columns`).
    key_columns: HashMap<String, (Vec<String>, String)>,
}

#[pymethods]
impl CanalRows {
    #[new]
    fn new(planner: Py<PyAny>) -> Self {
        CanalRows {
            planner,
            plans: HashMap::new(),
            key_columns: HashMap::new(),
        }
    }

    /// Appends the change records of the message `value` to `columns` (of `CHANGE_FIELDS`): how many,
    /// none where the Python decoder must read it.
    #[allow(clippy::too_many_arguments)]
    fn records(
        &mut self,
        py: Python<'_>,
        columns: &Bound<'_, Columns>,
        _key: Option<&[u8]>,
        value: &[u8],
        topic: Option<&str>,
        partition: Option<i64>,
        offset: Option<i64>,
        timestamp_ms: Option<i64>,
    ) -> PyResult<usize> {
        let Some(message) = parse::<Message>(value) else {
            return Ok(0);
        };
        let Some(rows) = RowMessage::of(&message) else {
            return Ok(0);
        };
        let Some(plan) = self.plan(py, rows.table, rows.mysql_type)? else {
            return Ok(0);
        };
        let Some(images) = images(py, &plan, &rows) else {
            return Ok(0);
        };
        let key_columns_json = self.key_columns_json(rows.table, &rows.key_columns);
        let parts = MessageParts {
            topic,
            partition,
            offset,
            timestamp_ms,
            op: rows.op,
            database: rows.database,
            table: rows.table,
            commit_ts: rows.commit_ts,
            key_columns_json,
            columns_json: &plan.columns_json,
        };
        let (mut columns, count) = (columns.borrow_mut(), plan.columns.len());
        for (index, (before, after)) in images.iter().enumerate() {
            let image = (before.as_ref(), after.as_ref());
            push_row(&mut columns, &parts, index, &rows.key_columns, image, count)?;
        }
        Ok(images.len())
    }
}

impl CanalRows {
    fn plan(
        &mut self,
        py: Python<'_>,
        table: &str,
        types: &[(Cow<'_, str>, Text<'_>)],
    ) -> PyResult<Option<Arc<Plan>>> {
        if let Some((entries, plan)) = self.plans.get(table) {
            let same = entries.len() == types.len()
                && entries
                    .iter()
                    .zip(types)
                    .all(|((name, text), (n, t))| name == n && *text == t.0);
            if same {
                return Ok(plan.clone());
            }
        }
        let entries: Vec<(String, String)> = types
            .iter()
            .map(|(name, text)| (name.to_string(), text.0.to_string()))
            .collect();
        let plan = Plan::ask(py, &self.planner, &entries)?.map(Arc::new);
        if self.plans.len() >= CACHE_SIZE {
            self.plans.clear();
        }
        self.plans.insert(table.to_owned(), (entries, plan.clone()));
        Ok(plan)
    }

    fn key_columns_json(&mut self, table: &str, names: &[&str]) -> &str {
        let known = self.key_columns.get(table).is_some_and(|(last, _)| {
            last.len() == names.len() && last.iter().zip(names).all(|(a, b)| a == b)
        });
        if !known {
            if self.key_columns.len() >= CACHE_SIZE {
                self.key_columns.clear();
            }
            let owned = names.iter().map(|name| (*name).to_owned()).collect();
            self.key_columns
                .insert(table.to_owned(), (owned, names_json(names)));
        }
        &self.key_columns[table].1
    }
}

/// (before, after) of every row of the message; None if any part of them needs Python.
#[allow(clippy::type_complexity)]
fn images<'a>(
    py: Python<'_>,
    plan: &Plan,
    rows: &RowMessage<'a, 'a>,
) -> Option<Vec<(Option<ReadImage<'a>>, Option<ReadImage<'a>>)>> {
    let mut images = Vec::with_capacity(rows.data.len());
    for (index, row) in rows.data.iter().enumerate() {
        if row.0.is_empty() {
            return None;
        }
        let image = read_image(py, plan, row, None)?;
        images.push(match rows.op {
            "insert" => (None, Some(image)),
            "delete" => (Some(image), None),
            _ => (
                Some(before_image(py, plan, rows.old.get(index), row, &image)?),
                Some(image),
            ),
        });
    }
    Some(images)
}

/// The lake texts of `row`; with `data` (an UPDATE's old row), a text the same as the data row's takes
/// its lake text from `data_image`, as the decoder does. None where Python must read it: a column named
/// twice, a value that is not a string, a column without a type that is not NULL.
fn read_image<'a>(
    py: Python<'_>,
    plan: &Plan,
    row: &'a Row<'a>,
    data: Option<(&'a Row<'a>, &ReadImage<'a>)>,
) -> Option<ReadImage<'a>> {
    let mut seen = vec![false; plan.columns.len()];
    let mut texts: Image<'a> = Vec::with_capacity(row.0.len());
    let mut known = 0;
    for (position, (name, raw)) in row.0.iter().enumerate() {
        let column = plan.find(position, name);
        match column {
            Some(at) if std::mem::replace(&mut seen[at], true) => return None,
            Some(_) => known += 1,
            None if texts.iter().any(|(n, _)| *n == name.as_ref()) => return None,
            None => {}
        }
        let text = match raw {
            Raw::Null => None,
            Raw::Text(raw) => match data
                .and_then(|(data, image)| same_in_data(data, image, position, name, raw))
            {
                Some(same) => same,
                None => plan.columns[column?].text(py, raw)?,
            },
            Raw::Other => return None,
        };
        texts.push((name.as_ref(), text));
    }
    Some(ReadImage { texts, known })
}

/// The data row's lake text of column `name` if its text there is `raw` (looked for at `position` first).
fn same_in_data<'a>(
    data: &Row<'a>,
    image: &ReadImage<'a>,
    position: usize,
    name: &str,
    raw: &str,
) -> Option<Option<Cow<'a, str>>> {
    let at = match data.0.get(position) {
        Some((n, _)) if n == name => position,
        _ => data.0.iter().position(|(n, _)| n == name)?,
    };
    match &data.0[at].1 {
        Raw::Text(text) if text == raw => Some(image.texts[at].1.clone()),
        _ => None,
    }
}

/// An UPDATE's before image: the data row's, overlaid with its `old` (the columns that changed, or all
/// of them), as the decoder makes it.
fn before_image<'a>(
    py: Python<'_>,
    plan: &Plan,
    old: Option<&'a Option<Row<'a>>>,
    row: &'a Row<'a>,
    image: &ReadImage<'a>,
) -> Option<ReadImage<'a>> {
    let Some(Some(old)) = old else {
        return Some(image.clone());
    };
    let before = read_image(py, plan, old, Some((row, image)))?;
    let same_columns = before.texts.len() == image.texts.len()
        && before
            .texts
            .iter()
            .all(|(n, _)| image.texts.iter().any(|(m, _)| m == n));
    if same_columns {
        return Some(before);
    }
    let mut overlaid = image.clone();
    for (name, text) in before.texts {
        match overlaid.texts.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = text,
            None => {
                overlaid.known += usize::from(plan.has(name));
                overlaid.texts.push((name, text));
            }
        }
    }
    Some(overlaid)
}
