"""cdclake's compiled fast paths (native/src, built by maturin with the package)."""

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from cdclake.formats.base import ColumnSpec

class Columns:
    """Records of fixed fields in Arrow's buffers (native/src/columns.rs): ``fields`` are (name, Spark SQL
    type: string, binary, int or bigint)."""

    def __init__(self, fields: list[tuple[str, str]]) -> None: ...
    def __len__(self) -> int: ...
    def append(self, values: tuple[Any, ...]) -> None:
        """One record, its values in the order of the fields (None: null); a record that does not fit
        the fields is refused whole."""
    def extend(self, records: Iterable[tuple[Any, ...]]) -> None: ...
    def take(self) -> tuple[int, list[tuple[bytes | None, int, list[bytes]]]]:
        """(the number of records, per field (validity bitmap or None, null count, [offsets,] data)),
        for ``pyarrow.Array.from_buffers``; the columns are empty after it."""

class CanalRows:
    """Canal-JSON row messages into change records (native/src/canal.rs)."""

    def __init__(
        self,
        planner: Callable[[list[str], list[str]], tuple[str, list[ColumnSpec]] | None],
    ) -> None: ...
    def records(
        self,
        columns: Columns,
        key: bytes | None,
        value: bytes,
        topic: str | None,
        partition: int | None,
        offset: int | None,
        timestamp_ms: int | None,
    ) -> int: ...

class SchemaHolder(Protocol):
    """What SimpleRows asks of a Simple protocol decoder (``SimpleDecoder``)."""

    schema_changes: int

    def table_columns(self, database: str, table: str, version: int
                      ) -> tuple[list[str], list[str], tuple[str, ...]] | None: ...

class SimpleRows:
    """Simple protocol JSON row messages into change records (native/src/simple.rs), by the schemas
    the ``decoder`` holds."""

    def __init__(
        self,
        planner: Callable[[list[str], list[str]], tuple[str, list[ColumnSpec]] | None],
        decoder: SchemaHolder,
        local_is_utc: bool,
    ) -> None: ...
    def records(
        self,
        columns: Columns,
        key: bytes | None,
        value: bytes,
        topic: str | None,
        partition: int | None,
        offset: int | None,
        timestamp_ms: int | None,
    ) -> int: ...

class OpenRows:
    """Open Protocol row events into change records (native/src/open.rs), typed by
    ``shape_types(codes, flags)``: the columns' type texts and which are key columns."""

    def __init__(
        self,
        planner: Callable[[list[str], list[str]], tuple[str, list[ColumnSpec]] | None],
        shape_types: Callable[[list[int], list[int]], tuple[list[str], list[bool]] | None],
    ) -> None: ...
    def records(
        self,
        columns: Columns,
        key: bytes | None,
        value: bytes,
        topic: str | None,
        partition: int | None,
        offset: int | None,
        timestamp_ms: int | None,
    ) -> int: ...

def captured_line(
    line: bytes, start: int, end: int
) -> tuple[int, tuple[int | None, bytes | None, bytes | None, tuple[tuple[str, bytes], ...]] | None] | None:
    """A captured topic's line (native/src/captured.rs): (offset, None) outside start..end, (offset,
    (timestamp ms, key, value, headers)) inside, or None where Python must read it."""
