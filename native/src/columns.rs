//! Records of one fixed set of fields collected as Arrow columns: a validity bitmap, and offsets and
//! bytes (strings, binaries) or little-endian values (32- and 64-bit integers) per field.
//!
//! `cdclake.ordering.records.RecordColumns` keeps its records here, the compiled row readers append
//! theirs in place (`rows::push_row`), and `take` hands the buffers to Python, which makes the Arrow
//! record batch of them without a Python object per value: the tuple per record, a Python string per
//! text and their conversion into Arrow took about 30 % of a row message's time in a decoding task.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyString, PyTuple};

/// A field's Arrow layout, by its Spark SQL type (`cdclake.ordering.records.arrow_schema`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    Utf8,
    Binary,
    Int32,
    Int64,
}

impl Layout {
    fn of(sql_type: &str) -> Option<Layout> {
        match sql_type {
            "string" => Some(Layout::Utf8),
            "binary" => Some(Layout::Binary),
            "int" => Some(Layout::Int32),
            "bigint" => Some(Layout::Int64),
            _ => None,
        }
    }

    fn is_text(self) -> bool {
        matches!(self, Layout::Utf8 | Layout::Binary)
    }
}

/// One field's buffers.
struct Column {
    name: String,
    layout: Layout,
    /// Bit `i` set: record `i` has a value (Arrow's validity bitmap, least significant bit first).
    validity: Vec<u8>,
    /// Texts: where each record's bytes start, then where the last ends (Arrow's 32-bit offsets).
    offsets: Vec<i32>,
    /// Texts' bytes, or the integers' little-endian bytes (zeros for a null).
    data: Vec<u8>,
}

impl Column {
    fn new(name: String, layout: Layout) -> Column {
        Column {
            name,
            layout,
            validity: Vec::new(),
            offsets: vec![0],
            data: Vec::new(),
        }
    }

    fn mark(&mut self, row: usize, valid: bool) {
        if row.is_multiple_of(8) {
            self.validity.push(0);
        }
        if valid {
            self.validity[row / 8] |= 1 << (row % 8);
        }
    }

    /// Ends record `row`'s bytes, appended to `data` since the last offset.
    fn end_text(&mut self, row: usize, valid: bool) -> PyResult<()> {
        let Ok(end) = i32::try_from(self.data.len()) else {
            return Err(PyValueError::new_err(format!(
                "field {:?} holds more than 2 GiB of a batch's records: take the records more often",
                self.name
            )));
        };
        self.offsets.push(end);
        self.mark(row, valid);
        Ok(())
    }

    fn truncate(&mut self, rows: usize) {
        self.validity.truncate(rows.div_ceil(8));
        if !rows.is_multiple_of(8) {
            if let Some(last) = self.validity.last_mut() {
                *last &= (1u8 << (rows % 8)) - 1;
            }
        }
        if self.layout.is_text() {
            self.offsets.truncate(rows + 1);
            self.data.truncate(self.offsets[rows] as usize);
        } else {
            self.data.truncate(rows * self.width());
        }
    }

    fn width(&self) -> usize {
        if self.layout == Layout::Int32 {
            4
        } else {
            8
        }
    }
}

/// Writes one record's values, field by field in order, into the columns.
pub struct RowWriter<'c> {
    columns: &'c mut [Column],
    row: usize,
    at: usize,
}

impl RowWriter<'_> {
    fn next(&mut self, text: bool) -> PyResult<&mut Column> {
        let row_len = self.columns.len();
        let Some(column) = self.columns.get_mut(self.at) else {
            return Err(PyValueError::new_err(format!(
                "a record of more than {row_len} values"
            )));
        };
        self.at += 1;
        if column.layout.is_text() != text {
            let wanted = if text { "a text" } else { "an integer" };
            return Err(PyTypeError::new_err(format!(
                "field {:?} does not hold {wanted}",
                column.name
            )));
        }
        Ok(column)
    }

    /// The next field's text or bytes (None: null).
    pub fn bytes(&mut self, value: Option<&[u8]>) -> PyResult<()> {
        let row = self.row;
        let column = self.next(true)?;
        column.data.extend_from_slice(value.unwrap_or_default());
        column.end_text(row, value.is_some())
    }

    pub fn text(&mut self, value: Option<&str>) -> PyResult<()> {
        self.bytes(value.map(str::as_bytes))
    }

    /// The next field's text, written by `write` straight into the column's bytes (UTF-8 for a string).
    pub fn text_with(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> PyResult<()> {
        let row = self.row;
        let column = self.next(true)?;
        write(&mut column.data);
        column.end_text(row, true)
    }

    /// The next field's integer (None: null), which must fit the field.
    pub fn int(&mut self, value: Option<i64>) -> PyResult<()> {
        let row = self.row;
        let column = self.next(false)?;
        let number = value.unwrap_or(0);
        if column.layout == Layout::Int32 {
            let Ok(small) = i32::try_from(number) else {
                return Err(PyValueError::new_err(format!(
                    "field {:?} holds 32-bit integers, not {number}",
                    column.name
                )));
            };
            column.data.extend_from_slice(&small.to_le_bytes());
        } else {
            column.data.extend_from_slice(&number.to_le_bytes());
        }
        column.mark(row, value.is_some());
        Ok(())
    }

    /// The next field's value as Python has it: None, a str or bytes for a text, an int.
    fn python(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let Some(column) = self.columns.get(self.at) else {
            return self.bytes(None); // says the record has too many values
        };
        let layout = column.layout;
        if value.is_none() {
            return if layout.is_text() {
                self.bytes(None)
            } else {
                self.int(None)
            };
        }
        let name = || column.name.clone();
        let wrong = |what: &str| {
            PyTypeError::new_err(format!("field {:?}: {what}, not {value:.60}", name()))
        };
        match layout {
            Layout::Int32 | Layout::Int64 => {
                let number = value.extract().map_err(|_| wrong("a 64-bit integer"))?;
                self.int(Some(number))
            }
            _ => {
                if let Ok(text) = value.cast::<PyString>() {
                    return self.text(Some(text.to_str()?));
                }
                let bytes: PyBackedBytes = value.extract().map_err(|_| wrong("a str or bytes"))?;
                if layout == Layout::Utf8 && std::str::from_utf8(&bytes).is_err() {
                    return Err(PyValueError::new_err(format!(
                        "field {:?} holds strings, and these bytes are not UTF-8",
                        name()
                    )));
                }
                self.bytes(Some(&bytes))
            }
        }
    }
}

/// Records of fixed fields as Arrow columns (see the module's documentation).
#[pyclass(module = "cdclake._native")]
pub struct Columns {
    columns: Vec<Column>,
    rows: usize,
}

impl Columns {
    /// One record written by `write`; none if it fails (the columns are as they were).
    pub fn row(&mut self, write: impl FnOnce(&mut RowWriter<'_>) -> PyResult<()>) -> PyResult<()> {
        let mut writer = RowWriter {
            columns: &mut self.columns,
            row: self.rows,
            at: 0,
        };
        let mut result = write(&mut writer);
        if result.is_ok() && writer.at != writer.columns.len() {
            result = Err(PyValueError::new_err(format!(
                "a record of {} values for {} fields",
                writer.at,
                writer.columns.len()
            )));
        }
        match result {
            Ok(()) => self.rows += 1,
            Err(_) => self.columns.iter_mut().for_each(|c| c.truncate(self.rows)),
        }
        result
    }

    /// How many records the columns hold.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Only the first `rows` records kept.
    pub fn truncate_rows(&mut self, rows: usize) {
        if rows < self.rows {
            self.columns.iter_mut().for_each(|c| c.truncate(rows));
            self.rows = rows;
        }
    }
}

/// A column's buffers as `take` hands them over: its validity bitmap (None: no nulls), its null
/// count, and its offsets and bytes, or its values.
type TakenColumn<'py> = (Option<Bound<'py, PyBytes>>, usize, Vec<Bound<'py, PyBytes>>);

#[pymethods]
impl Columns {
    /// Columns of `fields`: (name, Spark SQL type: string, binary, int or bigint) in order.
    #[new]
    fn new(fields: Vec<(String, String)>) -> PyResult<Self> {
        let mut columns = Vec::with_capacity(fields.len());
        for (name, sql_type) in fields {
            let Some(layout) = Layout::of(&sql_type) else {
                return Err(PyValueError::new_err(format!(
                    "field {name:?}: no column of Spark SQL type {sql_type:?} (string, binary, int, bigint)"
                )));
            };
            columns.push(Column::new(name, layout));
        }
        Ok(Columns { columns, rows: 0 })
    }

    fn __len__(&self) -> usize {
        self.rows
    }

    /// One record: a tuple of its values in the order of the fields (None: null).
    fn append(&mut self, values: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.row(|writer| values.iter().try_for_each(|value| writer.python(&value)))
    }

    /// Records as `append` takes each.
    fn extend(&mut self, records: &Bound<'_, PyAny>) -> PyResult<()> {
        for record in records.try_iter()? {
            self.append(record?.cast::<PyTuple>()?)?;
        }
        Ok(())
    }

    /// The records so far as each field's Arrow buffers (see `TakenColumn`), and their number; the
    /// columns are empty after it.
    fn take<'py>(&mut self, py: Python<'py>) -> (usize, Vec<TakenColumn<'py>>) {
        let rows = std::mem::take(&mut self.rows);
        let taken = self
            .columns
            .iter_mut()
            .map(|column| {
                let valid: usize = column
                    .validity
                    .iter()
                    .map(|b| b.count_ones() as usize)
                    .sum();
                let nulls = rows - valid;
                let validity = (nulls > 0).then(|| PyBytes::new(py, &column.validity));
                let mut buffers = Vec::with_capacity(2);
                if column.layout.is_text() {
                    let offsets: Vec<u8> = column
                        .offsets
                        .iter()
                        .flat_map(|o| o.to_le_bytes())
                        .collect();
                    buffers.push(PyBytes::new(py, &offsets));
                }
                buffers.push(PyBytes::new(py, &column.data));
                column.truncate(0);
                (validity, nulls, buffers)
            })
            .collect();
        (rows, taken)
    }
}
