//! What the compiled row readers share: a table version's plan, row images of lake texts, and the
//! change record of one row (`cdclake.spark.changes.CHANGE_FIELDS`, as `ChangeWriter.add_row` writes it).
//!
//! What a type means stays in Python: a *planner* (`cdclake.spark.native_rows.plan_columns`) tells, per
//! table version, each column's [`Kind`] and its Python text function, which decides every value the
//! kind does not take.

use std::borrow::Cow;
use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

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
    pub columns_json: Py<PyString>,
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
        let (columns_json, specs): (Py<PyString>, Vec<Spec>) = answer.extract(py)?;
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
pub struct MessageParts<'py> {
    pub topic: Bound<'py, PyAny>,
    pub partition: Bound<'py, PyAny>,
    pub offset: Bound<'py, PyAny>,
    pub timestamp_ms: Bound<'py, PyAny>,
    pub op: &'static str,
    pub database: Bound<'py, PyString>,
    pub table: Bound<'py, PyString>,
    pub commit_ts: i64,
    pub key_columns_json: Bound<'py, PyString>,
    pub columns_json: Bound<'py, PyString>,
}

/// The change record of the row at `index` of a message, with its images (at least one).
pub fn row_record<'py>(
    py: Python<'py>,
    parts: &MessageParts<'py>,
    index: usize,
    key_columns: &[impl AsRef<str>],
    (before, after): (Option<&ReadImage<'_>>, Option<&ReadImage<'_>>),
    column_count: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let image = after.or(before).expect("a row has an image");
    let key = key_json(&image.texts, key_columns);
    let old_key = match (before, after) {
        (Some(before), Some(_)) => {
            Some(key_json(&before.texts, key_columns)).filter(|old| *old != key)
        }
        _ => None,
    };
    let partial = after.is_some_and(|after| after.known < column_count);
    let none = py.None().into_bound(py);
    let json = |image: Option<&ReadImage<'_>>| image.map(|image| image_json(&image.texts));
    let fields: [Bound<'py, PyAny>; 21] = [
        PyString::intern(py, "row").into_any(),
        parts.topic.clone(),
        parts.partition.clone(),
        parts.offset.clone(),
        index.into_pyobject(py)?.into_any(),
        PyString::intern(py, parts.op).into_any(),
        parts.database.clone().into_any(),
        parts.table.clone().into_any(),
        parts.commit_ts.into_pyobject(py)?.into_any(),
        none.clone(), // sequence: the commit ts orders
        PyString::new(py, &key).into_any(),
        optional_string(py, old_key.as_deref(), &none),
        parts.key_columns_json.clone().into_any(),
        parts.columns_json.clone().into_any(),
        optional_string(py, json(before).as_deref(), &none),
        optional_string(py, json(after).as_deref(), &none),
        none.clone(), // event
        none.clone(), // raw_key
        none.clone(), // raw_value
        parts.timestamp_ms.clone(),
        if partial {
            PyString::intern(py, "partial").into_any()
        } else {
            none.clone()
        },
    ];
    PyTuple::new(py, fields)
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

fn image_json(image: &Image<'_>) -> String {
    let mut json = Vec::with_capacity(16 * image.len() + 2);
    json.push(b'{');
    for (at, (name, text)) in image.iter().enumerate() {
        if at > 0 {
            json.push(b',');
        }
        serde_json::to_writer(&mut json, name).expect("strings serialize");
        json.push(b':');
        serde_json::to_writer(&mut json, &text.as_deref()).expect("strings serialize");
    }
    json.push(b'}');
    String::from_utf8(json).expect("JSON of strings is UTF-8")
}

/// The JSON array of key column names, as the change record's `key_columns` holds it.
pub fn names_json<'py>(py: Python<'py>, names: &[impl AsRef<str>]) -> Bound<'py, PyString> {
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    PyString::new(
        py,
        &serde_json::to_string(&names).expect("strings serialize"),
    )
}

fn optional_string<'py>(
    py: Python<'py>,
    text: Option<&str>,
    none: &Bound<'py, PyAny>,
) -> Bound<'py, PyAny> {
    match text {
        Some(text) => PyString::new(py, text).into_any(),
        None => none.clone(),
    }
}
