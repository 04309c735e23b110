"""What a partition reading writes: records of one fixed set of columns, collected record by record on an
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


def arrow_batch(records: Sequence[tuple[Any, ...]], fields: Fields) -> pa.RecordBatch:
    """``records`` (tuples of values in the order of ``fields``) as one Arrow record batch."""
    import pyarrow as pa

    schema = arrow_schema(fields)
    columns = list(zip(*records, strict=True)) or [() for _ in schema]
    return pa.RecordBatch.from_arrays([pa.array(column, type=field.type)
                                       for column, field in zip(columns, schema, strict=True)], schema=schema)


class RecordColumns:
    """Collects records with ``fields`` (a ``kind``, the coordinates of the message each came from,
    and others) and hands them out as Arrow record batches.

    A record is kept as one tuple of its values in the order of ``fields`` and the tuples are turned into
    columns when taken: one append per record, where appending to each column cost a Python call per
    field (a third of the decoding tasks' time went to collecting change records so)."""

    def __init__(self, fields: Fields) -> None:
        self._fields = tuple(fields)
        self._names = tuple(name for name, _ in self._fields)
        self._records: list[tuple[Any, ...]] = []

    def __len__(self) -> int:
        return len(self._records)

    def add(self, kind: str, origin: Origin | None, **fields: Any) -> None:
        origin = origin or Origin()
        fields.update(kind=kind, topic=origin.topic, partition=origin.partition, offset=origin.offset,
                      index=origin.index)
        self._records.append(tuple(map(fields.get, self._names)))

    def add_values(self, values: tuple[Any, ...]) -> None:
        """A record as the tuple of its values, every field's in the order of ``fields``."""
        self._records.append(values)

    def add_many(self, records: list[tuple[Any, ...]]) -> None:
        """Records as :meth:`add_values` takes each."""
        self._records.extend(records)

    def take(self) -> pa.RecordBatch:
        records, self._records = self._records, []
        return arrow_batch(records, self._fields)
