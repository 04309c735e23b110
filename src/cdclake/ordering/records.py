"""What a partition reading writes: records of one fixed set of columns, collected column by column on an
executor and handed out as Arrow record batches (the replication job's change records, the transcoder's
records). Each set of columns is a tuple of (name, Spark SQL type)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cdclake.model import Origin

if TYPE_CHECKING:
    import pyarrow as pa

Fields = Sequence[tuple[str, str]]


def spark_ddl(fields: Fields) -> str:
    """The schema of records with ``fields`` as Spark's DDL string (``mapInArrow``, ``createDataFrame``)."""
    return ", ".join(f"`{name}` {sql_type}" for name, sql_type in fields)


def arrow_schema(fields: Fields) -> pa.Schema:
    """The Arrow schema of records with ``fields``."""
    import pyarrow as pa

    arrow = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "binary": pa.binary()}
    return pa.schema([(name, arrow[sql_type]) for name, sql_type in fields])


class RecordColumns:
    """Collects records with ``fields`` (a ``kind``, the coordinates of the message each came from,
    and others) and hands them out as Arrow record batches."""

    def __init__(self, fields: Fields) -> None:
        self._fields = tuple(fields)
        self._columns: dict[str, list[Any]] = {name: [] for name, _ in self._fields}

    def __len__(self) -> int:
        return len(self._columns["kind"])

    def add(self, kind: str, origin: Origin | None, **fields: Any) -> None:
        origin = origin or Origin()
        fields.update(kind=kind, topic=origin.topic, partition=origin.partition, offset=origin.offset,
                      index=origin.index)
        for name, values in self._columns.items():
            values.append(fields.get(name))

    def take(self) -> pa.RecordBatch:
        import pyarrow as pa

        batch = pa.RecordBatch.from_pydict(self._columns, schema=arrow_schema(self._fields))
        self._columns = {name: [] for name, _ in self._fields}
        return batch
