//! TiCDC's Open Protocol row events straight into change records.
//!
//! `OpenRows.records` reads a message's batch (its key's and its value's frames) the way
//! `cdclake.formats.open_protocol.decoder` does and writes the records
//! `cdclake.spark.changes.ChangeWriter.add_row` would, or writes none (returns 0) where any event of the
//! message is anything but a plain row event whose every part it can read (a DDL, a resolved event, a large
//! message's reference, a column without flags or of the NULL type code, a field it does not know, a
//! value of another JSON type than TiCDC writes): the Python decoder then reads the whole message, and
//! says what is wrong where something is. Types come from each column's type code and flags: once per
//! table and row shape the reader asks `shape_types(codes, flags)` for the columns' type texts and
//! which are key columns, then the planner, as the other readers do.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyString;
use serde::de::{Deserializer, Error, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::columns::Columns;
use crate::message::{parse, Members, Text};
use crate::rows::{names_json, push_row, Column, MessageParts, Plan, ReadImage};
use crate::texts::Kind;

/// Table shapes whose plans are kept; a full cache is emptied.
const CACHE_SIZE: usize = 4096;
/// The batch framing's version, the key's first eight bytes.
const BATCH_VERSION: u64 = 1;
/// The key's `t` of a row event.
const ROW: u64 = 1;

/// The (key, value) frames of a message; None where the framing is not whole.
fn batch<'a>(key: &'a [u8], value: &'a [u8]) -> Option<Vec<(&'a [u8], &'a [u8])>> {
    let version = u64::from_be_bytes(key.get(..8)?.try_into().ok()?);
    if version != BATCH_VERSION {
        return None;
    }
    let (keys, values) = (frames(key, 8)?, frames(value, 0)?);
    (keys.len() == values.len()).then(|| keys.into_iter().zip(values).collect())
}

/// `data`'s frames (u64be length, bytes) from `at` on.
fn frames(data: &[u8], mut at: usize) -> Option<Vec<&[u8]>> {
    let mut frames = Vec::with_capacity(16);
    while at < data.len() {
        let length = u64::from_be_bytes(data.get(at..at + 8)?.try_into().ok()?);
        let start = at + 8;
        let end = start.checked_add(usize::try_from(length).ok()?)?;
        frames.push(data.get(start..end)?);
        at = end;
    }
    Some(frames)
}

/// Fails a visitor: the decoder reads what the reader does not take.
fn refuse<E: Error>() -> E {
    E::custom("left to the decoder")
}

/// A row event's key, if it is a plain one: `t` 1, `ts`, `scm`, `tbl` and at most a partition's `ptn`
/// and `rid` (whole numbers), each once. Any other field (a large message's `ccl` or `ohk`) fails it.
struct RowKey<'a> {
    commit_ts: u64,
    database: Cow<'a, str>,
    table: Cow<'a, str>,
}

impl<'de: 'a, 'a> Deserialize<'de> for RowKey<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = RowKey<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a row event's key")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RowKey<'de>, A::Error> {
                let (mut kind, mut ts, mut database, mut table) = (None, None, None, None);
                let (mut partition, mut row_id) = (None, None);
                while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
                    let first = match name.as_ref() {
                        "t" => kind.replace(map.next_value::<u64>()?).is_none(),
                        "ts" => ts.replace(map.next_value::<u64>()?).is_none(),
                        "scm" => database.replace(map.next_value::<Text>()?.0).is_none(),
                        "tbl" => table.replace(map.next_value::<Text>()?.0).is_none(),
                        "ptn" => partition.replace(map.next_value::<i64>()?).is_none(),
                        "rid" => row_id.replace(map.next_value::<i64>()?).is_none(),
                        _ => false,
                    };
                    if !first {
                        return Err(refuse());
                    }
                }
                match (kind, ts, database, table) {
                    (Some(ROW), Some(commit_ts), Some(database), Some(table)) => Ok(RowKey {
                        commit_ts,
                        database,
                        table,
                    }),
                    _ => Err(refuse()),
                }
            }
        }
        deserializer.deserialize_map(KeyVisitor)
    }
}

/// A column's `v`: its JSON text, and what it is.
struct Value<'a> {
    raw: &'a str,
    json: Json<'a>,
}

enum Json<'a> {
    Null,
    Number,
    Text(Cow<'a, str>),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Value<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = <&'de RawValue>::deserialize(deserializer)?.get();
        let json = match raw.as_bytes().first() {
            Some(b'n') => Json::Null,
            Some(b'-' | b'0'..=b'9') => Json::Number,
            Some(b'"') => Json::Text(
                serde_json::from_str::<Text>(raw)
                    .map_err(D::Error::custom)?
                    .0,
            ),
            _ => Json::Other,
        };
        Ok(Value { raw, json })
    }
}

/// A column of a row image: `{"t": type code, "f": flags, "v": value}` and an optional `"h"`, each once.
struct WireColumn<'a> {
    code: u64,
    flags: u64,
    value: Value<'a>,
}

impl<'de: 'a, 'a> Deserialize<'de> for WireColumn<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ColumnVisitor;
        impl<'de> Visitor<'de> for ColumnVisitor {
            type Value = WireColumn<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a column")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WireColumn<'de>, A::Error> {
                let (mut code, mut flags, mut value, mut handle) = (None, None, None, None);
                while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
                    let first = match name.as_ref() {
                        "t" => code.replace(map.next_value::<u64>()?).is_none(),
                        "f" => flags.replace(map.next_value::<u64>()?).is_none(),
                        "v" => value.replace(map.next_value::<Value>()?).is_none(),
                        "h" => handle.replace(map.next_value::<bool>()?).is_none(),
                        _ => false,
                    };
                    if !first {
                        return Err(refuse());
                    }
                }
                match (code, flags, value) {
                    (Some(code), Some(flags), Some(value)) => Ok(WireColumn { code, flags, value }),
                    _ => Err(refuse()),
                }
            }
        }
        deserializer.deserialize_map(ColumnVisitor)
    }
}

type Image<'a> = Members<'a, WireColumn<'a>>;

/// A row event's value: `u` (the new image), `p` (an update's old image) and `d` (a deleted one), each
/// once; a null one is not there, as for the decoder.
struct RowValue<'a> {
    new: Option<Image<'a>>,
    old: Option<Image<'a>>,
    deleted: Option<Image<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for RowValue<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ValueVisitor;
        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = RowValue<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a row event's value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RowValue<'de>, A::Error> {
                let mut images: [(bool, Option<Image<'de>>); 3] = Default::default();
                while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
                    let at = match name.as_ref() {
                        "u" => 0,
                        "p" => 1,
                        "d" => 2,
                        _ => return Err(refuse()),
                    };
                    if std::mem::replace(&mut images[at].0, true) {
                        return Err(refuse());
                    }
                    images[at].1 = map.next_value::<Option<Image>>()?;
                }
                let [(_, new), (_, old), (_, deleted)] = images;
                Ok(RowValue { new, old, deleted })
            }
        }
        deserializer.deserialize_map(ValueVisitor)
    }
}

/// A table's row shape (the image's column names, type codes and flags) and what it says.
struct Planned {
    database: String,
    table: String,
    names: Vec<String>,
    codes: Vec<u64>,
    flags: Vec<u64>,
    plan: Option<Arc<Plan>>,
    key_columns: Vec<String>,
    key_columns_json: String,
}

impl Planned {
    fn fits(&self, key: &RowKey<'_>, image: &Image<'_>) -> bool {
        self.database == key.database
            && self.table == key.table
            && self.names.len() == image.0.len()
            && image.0.iter().enumerate().all(|(at, (name, column))| {
                self.names[at] == *name
                    && self.codes[at] == column.code
                    && self.flags[at] == column.flags
            })
    }
}

/// Reads Open Protocol row events into change records (see the module's documentation).
#[pyclass(module = "cdclake._native")]
pub struct OpenRows {
    /// `planner(names, type_texts)`: None, or (columns JSON, [(kind code, low, high, members, text function)]).
    planner: Py<PyAny>,
    /// `shape_types(codes, flags)`: None, or the columns' (type texts, whether each is a key column).
    shape_types: Py<PyAny>,
    /// Per table (database, NUL, table), its last row shape and plan.
    plans: HashMap<String, Planned>,
}

#[pymethods]
impl OpenRows {
    #[new]
    fn new(planner: Py<PyAny>, shape_types: Py<PyAny>) -> Self {
        OpenRows {
            planner,
            shape_types,
            plans: HashMap::new(),
        }
    }

    /// Appends the change records of the message to `columns` (of `CHANGE_FIELDS`): how many, none
    /// where the Python decoder must read it.
    #[allow(clippy::too_many_arguments)]
    fn records(
        &mut self,
        py: Python<'_>,
        columns: &Bound<'_, Columns>,
        key: Option<&[u8]>,
        value: &[u8],
        topic: Option<&str>,
        partition: Option<i64>,
        offset: Option<i64>,
        timestamp_ms: Option<i64>,
    ) -> PyResult<usize> {
        let Some(events) = key.and_then(|key| batch(key, value)) else {
            return Ok(0);
        };
        if events.is_empty() {
            return Ok(0);
        }
        // An event the reader cannot read sends the whole message to Python: its records so far go.
        let start = columns.borrow().rows();
        let count = events.len();
        let read = self.events(
            py,
            columns,
            events,
            (topic, partition, offset, timestamp_ms),
        );
        if !matches!(read, Ok(true)) {
            columns.borrow_mut().truncate_rows(start);
        }
        Ok(if read? { count } else { 0 })
    }
}

impl OpenRows {
    /// Appends the records of a message's `events`; false where one needs Python.
    fn events(
        &mut self,
        py: Python<'_>,
        columns: &Bound<'_, Columns>,
        events: Vec<(&[u8], &[u8])>,
        (topic, partition, offset, timestamp_ms): (
            Option<&str>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
        ),
    ) -> PyResult<bool> {
        for (index, (key, value)) in events.into_iter().enumerate() {
            let (Some(key), Some(row)) = (parse::<RowKey>(key), parse::<RowValue>(value)) else {
                return Ok(false);
            };
            let Some(event) = RowEvent::of(&row) else {
                return Ok(false);
            };
            let Ok(commit_ts) = i64::try_from(key.commit_ts) else {
                return Ok(false);
            };
            let planned = self.planned(py, &key, event.typed)?;
            let Some(plan) = planned.plan.as_deref() else {
                return Ok(false);
            };
            let Some(images) = event.images(py, plan, planned) else {
                return Ok(false);
            };
            let parts = MessageParts {
                topic,
                partition,
                offset,
                timestamp_ms,
                op: event.op,
                database: &planned.database,
                table: &planned.table,
                commit_ts,
                key_columns_json: &planned.key_columns_json,
                columns_json: &plan.columns_json,
            };
            let images = (images.0.as_ref(), images.1.as_ref());
            let count = plan.columns.len();
            let mut columns = columns.borrow_mut();
            push_row(
                &mut columns,
                &parts,
                index,
                &planned.key_columns,
                images,
                count,
            )?;
        }
        Ok(true)
    }
}

impl OpenRows {
    /// What the image `typed` (the one whose columns type the row) of a row of `key`'s table says.
    fn planned(
        &mut self,
        py: Python<'_>,
        key: &RowKey<'_>,
        typed: &Image<'_>,
    ) -> PyResult<&Planned> {
        let at = format!("{}\0{}", key.database, key.table);
        if !self
            .plans
            .get(&at)
            .is_some_and(|known| known.fits(key, typed))
        {
            let planned = self.plan(py, key, typed)?;
            if self.plans.len() >= CACHE_SIZE {
                self.plans.clear();
            }
            self.plans.insert(at.clone(), planned);
        }
        Ok(&self.plans[&at])
    }

    fn plan(&self, py: Python<'_>, key: &RowKey<'_>, typed: &Image<'_>) -> PyResult<Planned> {
        let names: Vec<String> = typed.0.iter().map(|(name, _)| name.to_string()).collect();
        let codes: Vec<u64> = typed.0.iter().map(|(_, column)| column.code).collect();
        let flags: Vec<u64> = typed.0.iter().map(|(_, column)| column.flags).collect();
        let answer = self.shape_types.call1(py, (codes.clone(), flags.clone()))?;
        let (mut plan, mut key_columns) = (None, Vec::new());
        if !answer.is_none(py) {
            let (texts, keys): (Vec<String>, Vec<bool>) = answer.extract(py)?;
            let entries: Vec<(String, String)> = names.iter().cloned().zip(texts).collect();
            plan = Plan::ask(py, &self.planner, &entries)?.map(Arc::new);
            key_columns = names
                .iter()
                .zip(keys)
                .filter(|(_, key)| *key)
                .map(|(name, _)| name.clone())
                .collect();
        }
        Ok(Planned {
            database: key.database.to_string(),
            table: key.table.to_string(),
            key_columns_json: names_json(&key_columns),
            names,
            codes,
            flags,
            plan,
            key_columns,
        })
    }
}

/// A row event's operation and images, as the decoder tells them apart.
struct RowEvent<'a> {
    op: &'static str,
    /// The image whose columns are the row's (`u`, or `d`).
    typed: &'a Image<'a>,
    old: Option<&'a Image<'a>>,
}

impl<'a> RowEvent<'a> {
    /// `d` alone deletes; `u` inserts, and with `p` updates; `u` and `d` must hold a column.
    fn of(row: &'a RowValue<'a>) -> Option<RowEvent<'a>> {
        let (op, typed, old) = match (&row.new, &row.old, &row.deleted) {
            (None, None, Some(deleted)) => ("delete", deleted, None),
            (Some(new), None, None) => ("insert", new, None),
            (Some(new), Some(old), None) => ("update", new, Some(old)),
            _ => return None,
        };
        (!typed.0.is_empty()).then_some(RowEvent { op, typed, old })
    }

    /// (before, after); None where a value needs the decoder.
    #[allow(clippy::type_complexity)]
    fn images(
        &self,
        py: Python<'_>,
        plan: &Plan,
        planned: &Planned,
    ) -> Option<(Option<ReadImage<'a>>, Option<ReadImage<'a>>)> {
        let mut texts = Vec::with_capacity(self.typed.0.len());
        for (at, (name, column)) in self.typed.0.iter().enumerate() {
            texts.push((
                name.as_ref(),
                lake_text(py, &plan.columns[at], &column.value)?,
            ));
        }
        let known = texts.len();
        let image = ReadImage { texts, known };
        Some(match (self.op, self.old) {
            ("delete", _) => (Some(image), None),
            (_, None) => (None, Some(image)),
            (_, Some(old)) => (
                Some(self.before(py, plan, planned, old, &image)?),
                Some(image),
            ),
        })
    }

    /// An update's before image: the new one's columns, each with its value in `old` where `old` has it
    /// (all of them, or the changed ones), in the new image's order as the decoder makes it.
    fn before(
        &self,
        py: Python<'_>,
        plan: &Plan,
        planned: &Planned,
        old: &'a Image<'a>,
        new: &ReadImage<'a>,
    ) -> Option<ReadImage<'a>> {
        let mut before = new.clone();
        let mut seen = vec![false; planned.names.len()];
        for (position, (name, column)) in old.0.iter().enumerate() {
            let at = plan.find(position, name)?;
            let same_type = column.code == planned.codes[at] && column.flags == planned.flags[at];
            if !same_type || std::mem::replace(&mut seen[at], true) {
                return None;
            }
            // The same JSON text of the same type is the same value: its lake text is already made.
            if column.value.raw != self.typed.0[at].1.value.raw {
                before.texts[at].1 = lake_text(py, &plan.columns[at], &column.value)?;
            }
        }
        Some(before)
    }
}

/// The lake text of a column's value (inner None: NULL), or None where Python refused it. The kinds of
/// whole and real numbers read JSON numbers, the others JSON strings; any other value, and any the
/// kind does not take, goes to the column's Python function as its JSON text.
fn lake_text<'a>(
    py: Python<'_>,
    column: &Column,
    value: &'a Value<'a>,
) -> Option<Option<Cow<'a, str>>> {
    let numbers = matches!(
        column.kind,
        Kind::Integer { .. } | Kind::Real { .. } | Kind::EnumIndex { .. } | Kind::SetBits { .. }
    );
    let native = match &value.json {
        Json::Null => return Some(None),
        // The decoder's JSON reader makes an int of `-0`, whose float is 0.0, not -0.0.
        Json::Number if numbers && value.raw != "-0" => column.kind.text(value.raw),
        Json::Text(text) if !numbers => column.kind.text(text.as_ref()),
        _ => None,
    };
    match native {
        Some(text) => Some(Some(text)),
        None => column.python(py, PyString::new(py, value.raw).into_any()),
    }
}
