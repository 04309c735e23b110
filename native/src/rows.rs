//! What the compiled row readers share: a table version's plan, row images of lake texts, and the
//! change record of one row (`cdclake.spark.changes.CHANGE_FIELDS`, as `ChangeWriter.add_row` writes it),
//! appended to the batch's columns.
//!
//! What a type means stays in Python: a *planner* (`cdclake.spark.native_rows.plan_columns`) tells, per
//! table version, each column's [`Kind`] and its Python text function, which decides every value the
//! kind does not take.

use std::borrow::Cow;
use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::columns::Columns;
use crate::texts::Kind;

pub struct Column {
    pub kind: Kind,
    /// The column's lake text of a wire value, through the decoder's converter (None for a zero date).
    python_text: Py<PyAny>,
}

impl Column {
    /// The lake text of `raw` (inner None: NULL), or None if Python refused it.
    pub fn text<'a>(&self, py: Python<'_>, raw: &'a str) -> Option<Option<Cow<'a, str>>> {
        match self.kind.text(raw) {
            Some(text) => Some(Some(text)),
            None => self.python(py, PyString::new(py, raw).into_any()),
        }
    }

    /// The lake text Python makes of `value` (inner None: NULL), or None if Python refused it.
    pub fn python<'a>(
        &self,
        py: Python<'_>,
        value: Bound<'_, PyAny>,
    ) -> Option<Option<Cow<'a, str>>> {
        let text = self.python_text.call1(py, (value,)).ok()?;
        if text.is_none(py) {
            return Some(None);
        }
        text.extract::<String>(py)
            .ok()
            .map(|text| Some(Cow::Owned(text)))
    }
}

/// What one table version says: its columns' JSON (the change record's `columns`) and readers.
pub struct Plan {
    pub columns_json: String,
    names: Vec<String>,
    pub columns: Vec<Column>,
    index: HashMap<String, usize>,
}

impl Plan {
    /// The plan the planner makes of the columns `entries` (name, type text), or None where the
    /// decoder must read the table's messages.
    pub fn ask(
        py: Python<'_>,
        planner: &Py<PyAny>,
        entries: &[(String, String)],
    ) -> PyResult<Option<Plan>> {
        let names: Vec<String> = entries.iter().map(|(name, _)| name.clone()).collect();
        let index: HashMap<String, usize> = names
            .iter()
            .enumerate()
            .map(|(at, name)| (name.clone(), at))
            .collect();
        if index.len() < names.len() {
            return Ok(None); // a column named twice: the decoder reads it as Python's dicts do
        }
        let texts: Vec<&str> = entries.iter().map(|(_, text)| text.as_str()).collect();
        let answer = planner.call1(py, (names.clone(), texts))?;
        if answer.is_none(py) {
            return Ok(None);
        }
        type Spec = (String, i128, i128, Vec<String>, Py<PyAny>);
        let (columns_json, specs): (String, Vec<Spec>) = answer.extract(py)?;
        let mut columns = Vec::with_capacity(specs.len());
        for (code, low, high, members, python_text) in specs {
            let Some(kind) = Kind::from_code(&code, low, high, members) else {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "no kind of column is called {code:?}"
                )));
            };
            columns.push(Column { kind, python_text });
        }
        Ok(Some(Plan {
            columns_json,
            names,
            columns,
            index,
        }))
    }

    /// The column called `name`, met at `position` of a row (rows mostly list the columns in order).
    pub fn find(&self, position: usize, name: &str) -> Option<usize> {
        match self.names.get(position) {
            Some(at) if at == name => Some(position),
            _ => self.index.get(name).copied(),
        }
    }

    pub fn has(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }
}

/// A row image: (column, lake text or NULL) in the message's order.
pub type Image<'a> = Vec<(&'a str, Option<Cow<'a, str>>)>;

/// A row's image and how many of the table's columns it holds (the decoders keep a column the table
/// does not know where the format lets it be there, NULL).
#[derive(Clone)]
pub struct ReadImage<'a> {
    pub texts: Image<'a>,
    pub known: usize,
}

/// What every record of one message shares: where it came from, its table and its columns.
pub struct MessageParts<'a> {
    pub topic: Option<&'a str>,
    pub partition: Option<i64>,
    pub offset: Option<i64>,
    pub timestamp_ms: Option<i64>,
    pub op: &'static str,
    pub database: &'a str,
    pub table: &'a str,
    pub commit_ts: i64,
    pub key_columns_json: &'a str,
    pub columns_json: &'a str,
}

/// Appends the change record of the row at `index` of a message, with its images (at least one), to
/// `columns` of `CHANGE_FIELDS`: other fields refuse it (`RowWriter` checks each field's kind and their
/// count), and `tests/formats/both_ways.py` compares every field with the decoder's records.
pub fn push_row(
    columns: &mut Columns,
    parts: &MessageParts<'_>,
    index: usize,
    key_columns: &[impl AsRef<str>],
    (before, after): (Option<&ReadImage<'_>>, Option<&ReadImage<'_>>),
    column_count: usize,
) -> PyResult<()> {
    let image = after.or(before).expect("a row has an image");
    let key = key_json(&image.texts, key_columns);
    let old_key = match (before, after) {
        (Some(before), Some(_)) => {
            Some(key_json(&before.texts, key_columns)).filter(|old| *old != key)
        }
        _ => None,
    };
    let partial = after.is_some_and(|after| after.known < column_count);
    columns.row(|record| {
        record.text(Some("row"))?;
        record.text(parts.topic)?;
        record.int(parts.partition)?;
        record.int(parts.offset)?;
        record.int(Some(index as i64))?;
        record.text(Some(parts.op))?;
        record.text(Some(parts.database))?;
        record.text(Some(parts.table))?;
        record.int(Some(parts.commit_ts))?;
        record.text(None)?; // sequence: the commit ts orders
        record.text(Some(&key))?;
        record.text(old_key.as_deref())?;
        record.text(Some(parts.key_columns_json))?;
        record.text(Some(parts.columns_json))?;
        for image in [before, after] {
            match image {
                Some(image) => record.text_with(|json| image_json(json, &image.texts))?,
                None => record.text(None)?,
            }
        }
        record.text(None)?; // event
        record.bytes(None)?; // raw_key
        record.bytes(None)?; // raw_value
        record.int(parts.timestamp_ms)?;
        record.text(partial.then_some("partial"))
    })
}

/// The key's lake texts as a JSON array: the key columns', or every column's by name for a table without one.
fn key_json(image: &Image<'_>, key_columns: &[impl AsRef<str>]) -> String {
    let value_of = |name: &str| {
        image
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, text)| text.as_deref())
    };
    let values: Vec<Option<&str>> = if key_columns.is_empty() {
        let mut names: Vec<&str> = image.iter().map(|(name, _)| *name).collect();
        names.sort_unstable();
        names.into_iter().map(value_of).collect()
    } else {
        key_columns
            .iter()
            .map(|name| value_of(name.as_ref()))
            .collect()
    };
    serde_json::to_string(&values).expect("strings serialize")
}

/// Writes the image as a JSON object of lake texts (UTF-8, as JSON of strings is).
fn image_json(json: &mut Vec<u8>, image: &Image<'_>) {
    json.push(b'{');
    for (at, (name, text)) in image.iter().enumerate() {
        if at > 0 {
            json.push(b',');
        }
        serde_json::to_writer(&mut *json, name).expect("strings serialize");
        json.push(b':');
        serde_json::to_writer(&mut *json, &text.as_deref()).expect("strings serialize");
    }
    json.push(b'}');
}

/// The JSON array of key column names, as the change record's `key_columns` holds it.
pub fn names_json(names: &[impl AsRef<str>]) -> String {
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    serde_json::to_string(&names).expect("strings serialize")
}
