"""The Simple protocol decoder reads an UPDATE's old image with code compiled for its column order that
takes the new image's value for a column of the same text: every old value must still come out as the
column's careful reader reads it, or the message be refused as that reader refuses it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson
import pytest

from cdclake.errors import DecodeError
from cdclake.formats import get_codec
from cdclake.formats.simple.values import READ_ERRORS, Zones, json_reader
from cdclake.model import Bootstrap, ColumnSchema, IndexSchema, RawMessage, RowChange, TableSchema
from cdclake.types import MySQLType
from tests.formats.simple.test_values import FAST_PATH_INPUTS, FAST_PATH_TYPES

JSON = get_codec("simple")
TZ = dt.timezone(dt.timedelta(hours=2))


def _decoder(mtype: MySQLType) -> Any:
    """A decoder that knows table db.t (id bigint primary key, c ``mtype``), version 1."""
    columns = (ColumnSchema("id", MySQLType("bigint"), nullable=False), ColumnSchema("c", mtype))
    schema = TableSchema("db", "t", columns, (IndexSchema("primary", ("id",), unique=True, primary=True),), 7, 1)
    decoder = JSON.decoder(tz="+02:00")
    (bootstrap,) = JSON.encoder().encode([Bootstrap(schema)])
    decoder.decode(bootstrap)
    return decoder


def _update(new: Any, old: Any) -> RawMessage:
    message = {
        "version": 1, "database": "db", "table": "t", "tableID": 7, "type": "UPDATE", "commitTs": 5, "buildTs": 1,
        "schemaVersion": 1, "data": {"id": "1", "c": new}, "old": {"id": "1", "c": old},
    }  # fmt: skip
    return RawMessage(None, orjson.dumps(message))


def _is_json(raw: Any) -> bool:
    """Whether ``raw`` can be in a message at all (orjson reads no NaN and no integer past 64 bits)."""
    try:
        return bool(orjson.loads(orjson.dumps(raw)) == raw)
    except orjson.JSONEncodeError:
        return False


def _read(read: Any, raw: Any) -> Any:
    if raw is None:
        return None
    try:
        value = read(raw)
    except READ_ERRORS:
        return "refused"
    return type(value), repr(value)


def _decoded(decoder: Any, message: RawMessage) -> Any:
    try:
        (row,) = decoder.decode(message)
    except DecodeError:
        return "refused"
    assert isinstance(row, RowChange) and row.before is not None and row.after is not None

    def column(value: Any) -> Any:
        return None if value is None else (type(value), repr(value))

    return column(row.before["c"]), column(row.after["c"])


@pytest.mark.parametrize("type_text", FAST_PATH_TYPES)
def test_old_images_read_as_the_careful_readers_read_them(type_text: str) -> None:
    mtype = MySQLType.parse(type_text)
    careful = json_reader(mtype, Zones(TZ))
    decoder = _decoder(mtype)
    inputs = [raw for raw in FAST_PATH_INPUTS if raw is not None and _is_json(raw)]
    for raw in inputs:
        for other in (raw, inputs[0], None, "1", {"location": "UTC", "value": "2024-01-15 08:00:00"}):
            for new, old in ((other, raw), (raw, other)):
                read = (_read(careful, old), _read(careful, new))
                expected = "refused" if "refused" in read else read
                assert _decoded(decoder, _update(new, old)) == expected, (new, old)


def test_an_update_shares_only_values_of_the_same_text() -> None:
    decoder = _decoder(MySQLType.parse("decimal(4,2)"))
    for _ in range(2):
        (row,) = decoder.decode(_update("1.50", "1.5"))
        assert str(row.after["c"]) == "1.50" and str(row.before["c"]) == "1.5"
        (row,) = decoder.decode(_update("1.50", "1.50"))
        assert row.before["c"] is row.after["c"]


def test_old_images_in_another_column_order_read_alike() -> None:
    """Only an old image in its new image's column order takes values from it."""
    decoder = _decoder(MySQLType.parse("date"))
    message = orjson.loads(_update("2024-01-01", "2023-12-31").value or b"")
    message["old"] = {"c": "2023-12-31", "id": "1"}
    for _ in range(2):
        (row,) = decoder.decode(RawMessage(None, orjson.dumps(message)))
        assert row.before == {"c": dt.date(2023, 12, 31), "id": 1} and list(row.before) == ["c", "id"]
        assert row.after == {"id": 1, "c": dt.date(2024, 1, 1)}
