"""Rows into MariaDB staging tables, in bulk: ``LOAD DATA LOCAL INFILE`` of a tab-separated file where
the server allows it (MariaDB does by default), else multi-row INSERTs (MySQL 8 turns ``local_infile``
off by default). LOAD DATA took half the time of PyMySQL's multi-row INSERTs for 100,000 rows.

LOAD DATA LOCAL turns a value the column cannot hold into a warning rather than an error: every
warning of a load stops the write, naming the value's column, so that nothing is stored changed.
The executors load a Spark DataFrame's partitions in parallel, each task with its own connection.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from cdclake.errors import CdclakeError
from cdclake.sinks.mariadb.connection import connect
from cdclake.sinks.mariadb.statements import ident
from cdclake.sinks.mariadb.types import loader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_ESCAPES = ((b"\\", b"\\\\"), (b"\t", b"\\t"), (b"\n", b"\\n"), (b"\0", b"\\0"))


class SinkError(CdclakeError):
    """A write MariaDB cannot take: nothing of it was applied."""


def field(value: Any) -> bytes:
    """``value`` as one field of LOAD DATA's default format (``\\N`` for NULL, backslash escapes)."""
    if value is None:
        return b"\\N"
    data = value if isinstance(value, bytes) else str(value).encode("utf-8")
    for raw, escaped in _ESCAPES:
        data = data.replace(raw, escaped)
    return data


def load_rows(cursor: Any, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], local_infile: bool,
              shown: Sequence[str] | None = None) -> int:
    """``rows`` into ``table``'s ``columns``; the count loaded. ``shown`` names the columns in errors."""
    import pymysql

    if local_infile:
        count = _load_file(cursor, table, columns, rows)
        cursor.execute("SHOW WARNINGS")
        warnings = cursor.fetchall()
        if warnings:
            raise SinkError(f"{_named(str(warnings[0][2]), columns, shown)} (and {len(warnings) - 1} more): "
                            "a value the column cannot hold; nothing of the write was applied")
        return count
    try:
        return _insert_rows(cursor, table, columns, rows)
    except pymysql.err.DataError as error:
        raise SinkError(f"{_named(str(error.args[-1]), columns, shown)}: a value the column cannot hold; nothing "
                        "of the write was applied") from None


def _insert_rows(cursor: Any, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    count, statement = 0, f"INSERT INTO {table} ({', '.join(map(ident, columns))}) VALUES " \
                          f"({', '.join(['%s'] * len(columns))})"
    chunk: list[Sequence[Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == 10_000:
            count += cursor.executemany(statement, chunk)
            chunk = []
    return count + (cursor.executemany(statement, chunk) if chunk else 0)


def _load_file(cursor: Any, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    handle, path = tempfile.mkstemp(prefix="cdclake-load-", suffix=".tsv")
    try:
        count = 0
        with os.fdopen(handle, "wb") as out:
            for row in rows:
                out.write(b"\t".join(map(field, row)) + b"\n")
                count += 1
        if count:
            cursor.execute(f"LOAD DATA LOCAL INFILE %s INTO TABLE {table} CHARACTER SET binary "
                           f"({', '.join(map(ident, columns))})", (path,))
        return count
    finally:
        os.unlink(path)


def _named(message: str, columns: Sequence[str], shown: Sequence[str] | None) -> str:
    """A server message with the staging table's column names (``c3``) as the table's own."""
    for column, name in zip(columns, shown or columns, strict=True):
        message = message.replace(f"'{column}'", repr(name))
    return message


def load_frame(frame: DataFrame, arguments: dict[str, Any], table: str, columns: Sequence[str], local_infile: bool,
               rows_of: Callable[[Any], Iterator[Sequence[Any]]] | None = None,
               shown: Sequence[str] | None = None) -> int:
    """``frame``'s rows loaded into ``table``'s ``columns`` by the executors, each task with a load of its
    own; the count of rows loaded. ``rows_of`` turns an Arrow batch into rows (default: its columns as
    they are)."""
    from pyspark.sql import functions as F

    to_rows = rows_of or _tuples

    def load(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        rows = (row for batch in batches for row in to_rows(batch))
        first, loaded = next(rows, None), 0
        if first is not None:  # a task with no rows (most, for a small table's write) connects to nothing
            with connect(arguments) as connection, connection.cursor() as cursor:
                loaded = load_rows(cursor, table, columns, itertools.chain([first], rows), local_infile, shown)
        yield pa.RecordBatch.from_pydict({"loaded": [loaded]})

    total = frame.mapInArrow(load, "loaded long").agg(F.sum("loaded")).collect()[0][0]
    return int(total or 0)


def _tuples(batch: Any) -> Iterator[tuple[Any, ...]]:
    return zip(*(column.to_pylist() for column in batch.columns), strict=True)


def net_rows(names: Sequence[str], column_types: Sequence[str], target: str,
             extra: Sequence[str] = ()) -> Callable[[Any], Iterator[tuple[Any, ...]]]:
    """The function turning an Arrow batch of net changes (``_op``, ``_image``) into staging rows: the op,
    which columns the image has, each column's value as its column takes it; then the batch's ``extra``
    columns as they are."""
    loaders = [loader(column_type, f"{target}.{name}") for name, column_type in zip(names, column_types, strict=True)]

    def rows(batch: Any) -> Iterator[tuple[Any, ...]]:
        import orjson

        columns = [batch.column(name).to_pylist() for name in ("_op", "_image", *extra)]
        for op, image_json, *carried in zip(*columns, strict=True):
            image = orjson.loads(image_json) if image_json else {}
            given = "".join("1" if name in image else "0" for name in names)
            yield (op, given, *(load(image.get(name)) for load, name in zip(loaders, names, strict=True)), *carried)

    return rows
