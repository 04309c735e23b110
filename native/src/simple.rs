//! TiCDC's Simple protocol row messages (JSON) straight into change records.
//!
//! `SimpleRows.records` reads a message the way `cdclake.formats.simple.decoder` does and writes the
//! records `cdclake.spark.changes.ChangeWriter.add_row` would, or writes none (returns 0) where the
//! message is anything but a plain row message whose every part it can read (a DDL, a BOOTSTRAP, a
//! watermark, a large message, a checksum, a row whose schema the decoder does not hold yet, a value
//! of another JSON type than TiCDC writes): the Python decoder then reads it, and says what is wrong
//! where something is. Rows carry no types: the reader asks the partition's decoder for the columns
//! of the row's table version (`SimpleDecoder.table_columns`), so that both always read by the same
//! schema; its answers are kept for as long as the decoder's `schema_changes` count stays the same.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::columns::Columns;
use crate::message::{parse, Members, Raw, Text};
use crate::rows::{names_json, push_row, MessageParts, Plan, ReadImage};
use crate::texts::Kind;

/// Table versions whose plans are kept; a full cache is emptied.
const CACHE_SIZE: usize = 4096;

/// A column's value: NULL, a string (every type but TIMESTAMP), a TIMESTAMP's `{location, value}`,
/// or anything else (numbers, which pingcap/ticdc writes for integers, go to the decoder).
#[derive(PartialEq)]
enum Value<'a> {
    Null,
    Text(Cow<'a, str>),
    Timestamp {
        location: Cow<'a, str>,
        value: Cow<'a, str>,
    },
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Value<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ValueVisitor;
        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = Value<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a column value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value<'de>, A::Error> {
                // Exactly two strings, each once; anything more the decoder judges.
                let (mut location, mut value, mut other) = (None, None, false);
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    let slot = match key.as_ref() {
                        "location" => &mut location,
                        "value" => &mut value,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            other = true;
                            continue;
                        }
                    };
                    match map.next_value::<Raw<'de>>()? {
                        Raw::Text(text) if slot.is_none() => *slot = Some(text),
                        _ => other = true,
                    }
                }
                Ok(match (location, value, other) {
                    (Some(location), Some(value), false) => Value::Timestamp { location, value },
                    _ => Value::Other,
                })
            }
            fn visit_unit<E>(self) -> Result<Value<'de>, E> {
                Ok(Value::Null)
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Value<'de>, E> {
                Ok(Value::Text(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Value<'de>, E> {
                Ok(Value::Text(Cow::Owned(text.to_owned())))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Value<'de>, E> {
                Ok(Value::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Value<'de>, E> {
                Ok(Value::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Value<'de>, E> {
                Ok(Value::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Value<'de>, E> {
                Ok(Value::Other)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Value<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Value::Other)
            }
        }
        deserializer.deserialize_any(ValueVisitor)
    }
}

type Image<'a> = Members<'a, Value<'a>>;

/// The fields of a message the reader reads; a field the decoder does not read either is skipped.
#[derive(Deserialize)]
struct Message<'a> {
    version: Option<u64>,
    #[serde(rename = "type", borrow)]
    kind: Option<Text<'a>>,
    #[serde(borrow)]
    database: Option<Text<'a>>,
    #[serde(borrow)]
    table: Option<Text<'a>>,
    #[serde(rename = "tableID")]
    _table_id: Option<i64>,
    #[serde(rename = "commitTs")]
    commit_ts: Option<u64>,
    #[serde(rename = "buildTs")]
    build_ts: Option<i64>,
    #[serde(rename = "schemaVersion")]
    schema_version: Option<u64>,
    #[serde(rename = "claimCheckLocation")]
    claim_check_location: Option<IgnoredAny>,
    #[serde(rename = "handleKeyOnly")]
    handle_key_only: Option<IgnoredAny>,
    checksum: Option<IgnoredAny>,
    #[serde(borrow)]
    data: Option<Image<'a>>,
    #[serde(borrow)]
    old: Option<Image<'a>>,
}

/// What a row message of a table version the decoder holds is made of.
struct RowMessage<'m, 'a> {
    op: &'static str,
    database: &'m str,
    table: &'m str,
    version: u64,
    commit_ts: i64,
    data: Option<&'m Image<'a>>,
    old: Option<&'m Image<'a>>,
}

impl<'m, 'a> RowMessage<'m, 'a> {
    /// The message's row, if it is a plain one: version 1, an envelope of the right types, the images
    /// its operation carries (INSERT data, DELETE old, UPDATE both) and no large-message or checksum field.
    fn of(message: &'m Message<'a>) -> Option<RowMessage<'m, 'a>> {
        let op = match message.kind.as_ref()?.0.as_ref() {
            "INSERT" => "insert",
            "UPDATE" => "update",
            "DELETE" => "delete",
            _ => return None,
        };
        let (data, old) = (message.data.as_ref(), message.old.as_ref());
        let carries = match op {
            "insert" => data.is_some() && old.is_none(),
            "delete" => data.is_none() && old.is_some(),
            _ => data.is_some() && old.is_some(),
        };
        let plain = message.claim_check_location.is_none()
            && message.handle_key_only.is_none()
            && message.checksum.is_none();
        if message.version != Some(1) || message.build_ts.is_none() || !carries || !plain {
            return None;
        }
        Some(RowMessage {
            op,
            database: message.database.as_ref()?.0.as_ref(),
            table: message.table.as_ref()?.0.as_ref(),
            version: message.schema_version?,
            commit_ts: i64::try_from(message.commit_ts?).ok()?,
            data,
            old,
        })
    }
}

/// A table version's plan, with the decoder's answer it was made from.
struct Planned {
    /// Held so that its address, the cache's key, is not another object's while the plan is cached.
    _columns: Py<PyAny>,
    plan: Option<Arc<Plan>>,
    key_columns: Vec<String>,
    key_columns_json: String,
}

/// Reads Simple protocol JSON row messages into change records (see the module's documentation).
#[pyclass(module = "cdclake._native")]
pub struct SimpleRows {
    /// `planner(names, type_texts)`: None, or (columns JSON, [(kind code, low, high, members, text function)]).
    planner: Py<PyAny>,
    /// The partition's `SimpleDecoder`: its `table_columns(database, table, version)` is None, or the
    /// same (names, type texts, key columns) object for as long as it holds that version's schema; its
    /// `schema_changes` counts the schemas it learned, so that an answer holds while the count stays.
    decoder: Py<PyAny>,
    /// Whether the location `Local` is UTC (the `tz` option): its TIMESTAMP texts are then UTC too.
    local_is_utc: bool,
    /// Per `table_columns` answer (its address: the answer is kept alive here), its plan.
    plans: HashMap<usize, Planned>,
    /// The `table_columns` answer (its address, if any) per table version, at `schema_changes`: asking
    /// the decoder took a twentieth of a message's time.
    answers: HashMap<(String, String, u64), Option<usize>>,
    schema_changes: u64,
}

#[pymethods]
impl SimpleRows {
    #[new]
    fn new(planner: Py<PyAny>, decoder: Py<PyAny>, local_is_utc: bool) -> Self {
        SimpleRows {
            planner,
            decoder,
            local_is_utc,
            plans: HashMap::new(),
            answers: HashMap::new(),
            schema_changes: 0,
        }
    }

    /// Appends the change record of the message `value` to `columns` (of `CHANGE_FIELDS`): how many
    /// (one), none where the Python decoder must read it.
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
        let Some(row) = RowMessage::of(&message) else {
            return Ok(0);
        };
        let local_is_utc = self.local_is_utc;
        let Some(planned) = self.planned(py, &row)? else {
            return Ok(0);
        };
        let Some(plan) = planned.plan.as_deref() else {
            return Ok(0);
        };
        let reader = ImageReader {
            py,
            plan,
            local_is_utc,
        };
        // Each image the message carries, read; any that needs Python sends the whole message there.
        let after = match row.data.map(|data| reader.read(data, None)).transpose()? {
            Some(None) => return Ok(0),
            after => after.flatten(),
        };
        let data = row.data.zip(after.as_ref());
        let before = match row.old.map(|old| reader.read(old, data)).transpose()? {
            Some(None) => return Ok(0),
            before => before.flatten(),
        };
        let parts = MessageParts {
            topic,
            partition,
            offset,
            timestamp_ms,
            op: row.op,
            database: row.database,
            table: row.table,
            commit_ts: row.commit_ts,
            key_columns_json: &planned.key_columns_json,
            columns_json: &plan.columns_json,
        };
        let images = (before.as_ref(), after.as_ref());
        let mut columns = columns.borrow_mut();
        push_row(
            &mut columns,
            &parts,
            0,
            &planned.key_columns,
            images,
            plan.columns.len(),
        )?;
        Ok(1)
    }
}

impl SimpleRows {
    /// The plan of the row's table version, or None while the decoder does not hold its schema.
    fn planned(&mut self, py: Python<'_>, row: &RowMessage<'_, '_>) -> PyResult<Option<&Planned>> {
        let decoder = self.decoder.bind(py);
        let changes: u64 = decoder.getattr(intern!(py, "schema_changes"))?.extract()?;
        if changes != self.schema_changes {
            self.answers.clear();
            self.schema_changes = changes;
        }
        let version = (row.database.to_owned(), row.table.to_owned(), row.version);
        if let Some(&address) = self.answers.get(&version) {
            return Ok(address.and_then(|address| self.plans.get(&address)));
        }
        if self.answers.len() >= CACHE_SIZE {
            self.answers.clear(); // rows of versions the decoder does not hold, say, without end
        }
        let columns = decoder
            .call_method1(
                intern!(py, "table_columns"),
                (row.database, row.table, row.version),
            )?
            .unbind();
        if columns.is_none(py) {
            self.answers.insert(version, None);
            return Ok(None);
        }
        let address = columns.as_ptr() as usize;
        if self.plans.len() >= CACHE_SIZE && !self.plans.contains_key(&address) {
            self.plans.clear();
            self.answers.clear();
        }
        self.answers.insert(version, Some(address));
        Ok(Some(match self.plans.entry(address) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(new) => new.insert(plan(py, &self.planner, columns)?),
        }))
    }
}

/// The plan of the table version whose `table_columns` answer is `columns`.
fn plan(py: Python<'_>, planner: &Py<PyAny>, columns: Py<PyAny>) -> PyResult<Planned> {
    let (names, texts, key_columns): (Vec<String>, Vec<String>, Vec<String>) =
        columns.extract(py)?;
    let entries: Vec<(String, String)> = names.into_iter().zip(texts).collect();
    let plan = Plan::ask(py, planner, &entries)?.map(Arc::new);
    let key_columns_json = names_json(&key_columns);
    Ok(Planned {
        _columns: columns,
        plan,
        key_columns,
        key_columns_json,
    })
}

struct ImageReader<'p, 'py> {
    py: Python<'py>,
    plan: &'p Plan,
    local_is_utc: bool,
}

impl ImageReader<'_, '_> {
    /// The lake texts of `image` (inner None: Python must read the message: a column the schema does
    /// not have or named twice, a value Python refuses or of another shape than the column's). With
    /// `data` (an UPDATE's new image, read), a value the same as there takes its lake text from there.
    #[allow(clippy::type_complexity)]
    fn read<'a>(
        &self,
        image: &'a Image<'a>,
        data: Option<(&'a Image<'a>, &ReadImage<'a>)>,
    ) -> PyResult<Option<ReadImage<'a>>> {
        if image.0.is_empty() {
            return Ok(None);
        }
        let mut seen = vec![false; self.plan.columns.len()];
        let mut texts = Vec::with_capacity(image.0.len());
        for (position, (name, raw)) in image.0.iter().enumerate() {
            let Some(at) = self.plan.find(position, name) else {
                return Ok(None);
            };
            if std::mem::replace(&mut seen[at], true) {
                return Ok(None);
            }
            let same = data.and_then(|(data, read)| same_in_data(data, read, position, name, raw));
            let text = match same {
                Some(text) => text,
                None => match self.text(at, raw)? {
                    Some(text) => text,
                    None => return Ok(None),
                },
            };
            texts.push((name.as_ref(), text));
        }
        let known = texts.len();
        Ok(Some(ReadImage { texts, known }))
    }

    /// The lake text of column `at`'s `raw` (inner None: NULL), or None where Python must read the message.
    #[allow(clippy::type_complexity)]
    fn text<'a>(&self, at: usize, raw: &'a Value<'a>) -> PyResult<Option<Option<Cow<'a, str>>>> {
        let column = &self.plan.columns[at];
        let timestamp = matches!(&column.kind, Kind::Timestamp);
        Ok(match raw {
            Value::Null => Some(None),
            Value::Text(text) if !timestamp => column.text(self.py, text),
            Value::Timestamp { location, value } if timestamp => {
                let utc = location == "UTC" || (location == "Local" && self.local_is_utc);
                match utc.then(|| column.kind.text(value)).flatten() {
                    Some(text) => Some(Some(text)),
                    None => {
                        let object = PyDict::new(self.py);
                        object.set_item("location", location.as_ref())?;
                        object.set_item("value", value.as_ref())?;
                        column.python(self.py, object.into_any())
                    }
                }
            }
            _ => None,
        })
    }
}

/// The data image's lake text of column `name` if its value there is `raw` (looked for at `position` first).
fn same_in_data<'a>(
    data: &Image<'a>,
    read: &ReadImage<'a>,
    position: usize,
    name: &str,
    raw: &Value<'a>,
) -> Option<Option<Cow<'a, str>>> {
    let at = match data.0.get(position) {
        Some((n, _)) if n == name => position,
        _ => data.0.iter().position(|(n, _)| n == name)?,
    };
    let shared = matches!(raw, Value::Text(_) | Value::Timestamp { .. }) && data.0[at].1 == *raw;
    shared.then(|| read.texts[at].1.clone())
}
