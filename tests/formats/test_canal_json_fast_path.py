"""Canal-JSON rows are read by code compiled per column order (cdclake.formats.compiled): every value must
come out exactly as the column's converter reads it, or be refused as the converter refuses it."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cdclake.errors import DecodeError
from cdclake.formats import get_codec
from cdclake.formats.canal_json.values import _converter
from cdclake.model import Op, RawMessage, RowChange
from cdclake.types import MySQLType
from cdclake.values import zone

CODEC = get_codec("canal-json")

# Per mysqlType: the strings TiDB writes, strings it never writes, and the typed JSON of other producers.
# fmt: off
VALUES: list[tuple[str, list[Any]]] = [
    ("int", ["0", "-2147483648", "2147483647", "2147483648", " 12 ", "1_000", "\u0661\u0662", "+1", "x", "",
             5, -5, 5.0, 5.5, 2.0**60, True, [1], {"a": 1}]),
    ("bigint unsigned", ["18446744073709551615", "18446744073709551616", "-1", 18446744073709551615]),
    ("bit", ["0", "18446744073709551615", "18446744073709551616", "-1", 3]),
    ("year", ["2024", "0", "-1", " 7", 2024, 1.5]),
    ("enum('a','b','{v}')", ["0", "1", "2", "3", "4", "-1", "x", 1, 3.0, True]),
    ("enum", ["0", "7", "-1", 7]),
    ("set('a','b','c')", ["0", "5", "7", "8", "x", 5]),
    ("set", ["0", "5", 5]),
    ("float", ["1.5", "-0.0", "0", "3.4028235e38", "1e39", "nan", "-inf", " 2 ", "x", 1.5, -0.0, 3, True]),
    ("double", ["1.5", "-0.0", "1e308", "1e309", "NaN", "x", 1.5, -0.0, 3, False]),
    ("decimal", ["0", "-0", "1.50", "00.5", "1e5", "1E-7", ".5", "5.", "+5", " 5", "1_0", "NaN", "Infinity",
                 "sNaN", "\u0661\u0662", "", "-", 5, 1.5, 1e300, True]),
    ("decimal(10,4)", ["123456.7890", "-0.0001"]),
    ("varchar", ["x", "", "null", 5, True, [1]]),
    ("text", ["x" * 300]),
    ("json", ['{"a": [1]}', "null", {"a": [1]}, [1, "x"], 5, True]),
    ("binary", ["\x00\x7f\x80\xff", "", "é", "\u0100", "\U0001f600", 5]),
    ("date", ["2024-02-29", "2023-02-29", "0000-00-00", "2024-00-15", "20240101", "2024-W01-1", "2024-1-015",
              "\u0662024-01-01", "2024-01-01 ", 5]),
    ("datetime", ["2024-01-02 03:04:05", "2024-01-02 03:04:05.5", "2024-01-02 03:04:05.123456",
                  "2024-01-02 03:04:05.1234567", "2024-01-02T03:04:05", "0000-00-00 00:00:00", "2024-02-30 00:00:00",
                  "2024-01-02 24:00:00", "2024-01-02 03:04:05+05:00", "2024-01-02 03:04:05.1+05",
                  "2024-01-02 03:04:05.1Z", "2024-01-02 03:04:05,5", "2024-01-02 03:04:05.", 5]),
    ("timestamp", ["2024-01-02 03:04:05", "2024-03-10 02:30:00.25", "2024-11-03 01:30:00", "0000-00-00 00:00:00",
                   "2024-01-02T03:04:05", "2024-01-02 03:04:05Z", "2024-01-02 03:04:05.5+01", "x", 5]),
    ("time", ["00:00:00", "01:02:03.456", "23:59:59.999999", "24:00:00", "838:59:59", "-01:02:03", "00:75:00",
              "01:02:03.", "01:02:03.1234567", "01:02:03.1+01", "01:02:03.5Z", "01:02:03,5", "1:02:03",
              "\u0661\u0662:00:00", "01:02",
              "-00:00:00", "-00:00:00.000000", "-0:00:00.5", "005:07:09.25", "-838:59:59.000001", "999:59:59",
              "1000:00:00", 5]),
]
# fmt: on
ZONES = ["UTC", "+08:00", "-03:30", "Asia/Shanghai", "America/New_York"]


def _message(text: str, op: str, data: Any, old: Any = None) -> RawMessage:
    body = {
        "database": "db",
        "table": "t",
        "pkNames": ["id"],
        "isDdl": False,
        "type": op,
        "mysqlType": {"id": "int", "c": text},
        "data": [{"id": "1", "c": data}],
        "old": [{"id": "1", "c": old}] if op == "UPDATE" else None,
    }
    return RawMessage(None, orjson.dumps(body))


def _read(convert: Any, raw: Any) -> Any:
    """What the column's converter makes of ``raw``: (type, repr) of its value, or "refused"."""
    if raw is None:
        return None
    try:
        value = convert(raw)
    except Exception:
        return "refused"
    return type(value), repr(value)


def _decoded(decoder: Any, message: RawMessage) -> Any:
    """(before, after) of the row's column c as (type, repr) pairs, or "refused"."""
    try:
        (row,) = decoder.decode(message)
    except DecodeError:
        return "refused"
    assert isinstance(row, RowChange)

    def column(image: Any) -> Any:
        value = None if image is None else image["c"]
        return None if value is None else (type(value), repr(value))

    return column(row.before), column(row.after)


def _expected(convert: Any, before: Any, after: Any) -> Any:
    read = [_read(convert, raw) for raw in (before, after)]
    return "refused" if "refused" in read else tuple(read)


@pytest.mark.parametrize("tz", ZONES)
@pytest.mark.parametrize(("text", "values"), VALUES, ids=[text for text, _ in VALUES])
def test_every_value_reads_as_its_converter_reads_it(text: str, values: list[Any], tz: str) -> None:
    """Inserts, and updates whose old value is the new one, another one or NULL (an update takes the
    new image's value for a column of the same string in both)."""
    convert = _converter(MySQLType.parse(text), zone(tz))
    decoder = CODEC.decoder(tz=tz)
    for raw in values:
        assert _decoded(decoder, _message(text, "INSERT", raw)) == _expected(convert, None, raw), raw
        assert _decoded(decoder, _message(text, "DELETE", raw)) == _expected(convert, raw, None), raw
        for other in (raw, values[0], None):
            for new, old in ((other, raw), (raw, other)):
                update = _message(text, "UPDATE", new, old)
                assert _decoded(decoder, update) == _expected(convert, old, new), (new, old)


def test_an_update_shares_only_values_of_the_same_text() -> None:
    decoder = CODEC.decoder()
    for _ in range(2):
        (row,) = decoder.decode(_message("decimal(4,2)", "UPDATE", "1.50", "1.5"))
        assert row.op is Op.UPDATE and row.before is not None and row.after is not None
        assert str(row.after["c"]) == "1.50" and str(row.before["c"]) == "1.5"
        (row,) = decoder.decode(_message("decimal(4,2)", "UPDATE", "1.50", "1.50"))
        assert row.before is not None and row.after is not None and row.before["c"] is row.after["c"]


def test_rows_in_many_column_orders_and_rows_without_columns() -> None:
    """More column orders than are compiled, an empty row, and a column without a type all read alike."""
    types = {f"c{i}": "int" for i in range(12)}
    decoder = CODEC.decoder()
    for shift in range(12):
        names = list(types)[shift:] + list(types)[:shift]
        row = {name: str(i) for i, name in enumerate(names)}
        body = {"type": "INSERT", "table": "t", "mysqlType": types, "data": [row, {}]}
        first, empty = decoder.decode(RawMessage(None, orjson.dumps(body)))
        assert isinstance(first, RowChange) and isinstance(empty, RowChange)
        assert first.after == {name: i for i, name in enumerate(names)} and list(first.after) == names
        assert empty.after == {}
    untyped = {"type": "INSERT", "table": "t", "mysqlType": {"a": "int"}, "data": [{"a": "1", "b": 2.5}]}
    (row,) = decoder.decode(RawMessage(None, orjson.dumps(untyped)))
    assert isinstance(row, RowChange) and row.after == {"a": 1, "b": 2.5}


def test_column_names_are_only_ever_string_literals_in_the_compiled_code() -> None:
    names = ["a'b", 'c"d', "{v}", "x\ny", "}) or ({", "\\", "v0", "é\u2028"]
    types = dict.fromkeys(names, "int")
    row = {name: str(i) for i, name in enumerate(names)}
    body = {"type": "INSERT", "table": "t", "mysqlType": types, "data": [row]}
    for _ in range(2):
        (row,) = CODEC.decoder().decode(RawMessage(None, orjson.dumps(body)))
        assert isinstance(row, RowChange) and row.after == {name: i for i, name in enumerate(names)}
