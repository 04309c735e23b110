//! A captured topic's line (docs/captured-topics.md) read without Python objects for its fields.
//!
//! `captured_line` takes only lines of the usual shape: an offset, a timestamp, base64 key, value and
//! header values in RFC 4648's strict form. Anything else (a field of another type or given twice,
//! base64 Python's decoder may still take, JSON it cannot read) it leaves to `cdclake.sources.captured`,
//! which reads and checks the line as it always has, and names what is wrong.

use base64::Engine;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use serde::Deserialize;

use crate::message::{has_surrogate_escape, Text};

/// Kafka's offsets are signed 64-bit.
const MAX_OFFSET: u64 = i64::MAX as u64;
/// Spark keeps a timestamp as microseconds in 64 bits.
const MAX_TIMESTAMP_MS: i64 = i64::MAX / 1000;

/// The fields cdclake's writer writes; a line with others goes to Python, whose JSON reader (orjson)
/// refuses things in them serde's skipping lets through (a number beyond a double, `1e400`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
    offset: u64,
    timestamp: Option<i64>,
    #[serde(borrow)]
    key: Option<Text<'a>>,
    #[serde(borrow)]
    value: Option<Text<'a>>,
    #[serde(borrow)]
    headers: Option<Vec<(Text<'a>, Option<Text<'a>>)>>,
}

/// A message's fields: (timestamp ms, key, value, headers as (name, bytes) pairs).
type Fields<'py> = (
    Option<i64>,
    Option<Bound<'py, PyBytes>>,
    Option<Bound<'py, PyBytes>>,
    Bound<'py, PyTuple>,
);

/// `(offset, None)` for a line outside `start..end`, `(offset, fields)` for one inside, or None where
/// Python must read the line.
#[pyfunction]
pub fn captured_line<'py>(
    py: Python<'py>,
    line: &[u8],
    start: u64,
    end: u64,
) -> Option<(u64, Option<Fields<'py>>)> {
    // Checked whole first: serde skips the fields it does not read without checking their UTF-8 or surrogates.
    if has_surrogate_escape(line) {
        return None;
    }
    let read: Line = serde_json::from_str(std::str::from_utf8(line).ok()?).ok()?;
    if read.offset > MAX_OFFSET {
        return None;
    }
    if read.offset < start || read.offset >= end {
        return Some((read.offset, None));
    }
    if read
        .timestamp
        .is_some_and(|ms| ms.unsigned_abs() > MAX_TIMESTAMP_MS.unsigned_abs())
    {
        return None;
    }
    let key = bytes(py, read.key.as_ref())?;
    let value = bytes(py, read.value.as_ref())?;
    let mut headers = Vec::new();
    for (name, data) in read.headers.iter().flatten() {
        // A header without a value is empty bytes, as the Python reader makes it.
        let data = bytes(py, data.as_ref())?.unwrap_or_else(|| PyBytes::new(py, b""));
        headers.push((name.0.as_ref(), data).into_pyobject(py).ok()?);
    }
    Some((
        read.offset,
        Some((read.timestamp, key, value, PyTuple::new(py, headers).ok()?)),
    ))
}

/// The bytes of base64 `text` (Some(None) for null), or None where strict base64 refuses it.
fn bytes<'py>(py: Python<'py>, text: Option<&Text<'_>>) -> Option<Option<Bound<'py, PyBytes>>> {
    let Some(text) = text else { return Some(None) };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(text.0.as_bytes())
        .ok()?;
    Some(Some(PyBytes::new(py, &decoded)))
}
