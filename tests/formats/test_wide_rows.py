"""Rows wider than 16 columns: the compiled readers build such an image from a dict display of the first
16 columns and a store per further column (cdclake.formats.compiled.returned_image); every column must
come back, with its value, in the order its message holds (Simple's, like Go's maps, sorted by name)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from cdclake.formats import get_codec
from cdclake.formats.compiled import compile_old_reader, compile_reader
from cdclake.model import Bootstrap, ColumnSchema, Event, IndexSchema, Op, RowChange, TableSchema
from cdclake.types import MySQLType

WIDTH = 40
TYPES = [MySQLType.parse(text) for text in ("int", "varchar(64)", "decimal(12,2)", "datetime(3)", "date", "double")]


def _schema() -> TableSchema:
    columns = [ColumnSchema("id", MySQLType("bigint"), nullable=False)]
    columns += [ColumnSchema(f"c{i}", TYPES[i % len(TYPES)]) for i in range(WIDTH - 1)]
    return TableSchema(
        "db", "wide", tuple(columns), (IndexSchema("primary", ("id",), unique=True, primary=True),), 9, 1
    )


def _value(mysql_type: MySQLType, seed: int) -> Any:
    family = mysql_type.name
    if seed % 7 == 0:
        return None
    if family == "int":
        return seed * 1000
    if family == "varchar":
        return f"text {seed}"
    if family == "decimal":
        return Decimal(f"{seed}.{seed % 100:02d}")
    if family == "datetime":
        return dt.datetime(2024, 5, 1, 8, seed % 60, 0, (seed % 1000) * 1000)
    if family == "date":
        return dt.date(2000, 1, 1) + dt.timedelta(days=seed)
    return seed / 8


def _image(schema: TableSchema, seed: int) -> dict[str, Any]:
    image = {column.name: _value(column.type, seed + i) for i, column in enumerate(schema.columns)}
    image["id"] = 1
    return image


@pytest.mark.parametrize("format_name", ["canal-json", "simple", "open"])
def test_a_wide_row_comes_back_whole_and_in_order(format_name: str) -> None:
    schema = _schema()
    types = {column.name: column.type for column in schema.columns}
    old, new = _image(schema, 3), _image(schema, 3)
    new.update({"c1": "changed", "c2": None, "c38": Decimal("9.99")})  # an update changes a few columns only
    events: list[Event] = [
        RowChange(Op.INSERT, "db", "wide", None, old, types, ("id",), 5, schema_version=1, table_id=9),
        RowChange(Op.UPDATE, "db", "wide", old, new, types, ("id",), 6, schema_version=1, table_id=9),
    ]
    sent_order = sorted(types) if format_name == "simple" else list(types)
    codec = get_codec(format_name)
    setup: list[Event] = [Bootstrap(schema)] if format_name == "simple" else []
    encoder, decoder = codec.encoder(), codec.decoder()
    decoded = [e for m in encoder.encode([*setup, *events]) for e in decoder.decode(m)]
    rows = [e for e in decoded if isinstance(e, RowChange)]
    for _ in range(2):  # the second pass reads with the readers the first one compiled
        assert [(row.op, row.before, row.after) for row in rows] == [(Op.INSERT, None, old), (Op.UPDATE, old, new)]
        for row in rows:
            for image in (row.before, row.after):
                assert image is None or list(image) == sent_order
        rows = [e for m in encoder.encode(events) for e in decoder.decode(m) if isinstance(e, RowChange)]


def test_the_compiled_readers_return_every_column_of_a_wide_image() -> None:
    names = [f"c{i}" for i in range(WIDTH)]
    image = {name: str(i) for i, name in enumerate(names)}
    reads = [[f"v{i} = int(v{i})"] for i in range(WIDTH)]
    read = compile_reader(names, reads, {})
    assert list(read(image).items()) == [(name, i) for i, name in enumerate(names)]
    read_old = compile_old_reader(names, reads, ["str"] * WIDTH, {})
    old = image | {"c39": "-1"}
    assert list(read_old(old, image, read(image)).items()) == [*((n, i) for i, n in enumerate(names[:-1])), ("c39", -1)]
