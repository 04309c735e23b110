"""How a user asks a mirror to be laid out: its partitioning and its table properties.

A job file says it per table pattern (``[tables."shop.orders"]``, ``[tables."shop.*"]``: regular
expressions matched against the whole ``database.table``, as ``include`` is)::

    [tables."shop.*"]
    properties = { "write.target-file-size-bytes" = 134217728 }

    [tables."shop.orders"]
    partition-by = ["bucket(16, id)", "days(created_at)", "region"]

Every pattern that matches a table applies, in the file's order: the properties of all of them, a later
value of a property winning, and the ``partition-by`` of the last one that has it. A pattern that
matches no table is no error (the table may come later). The sink lays the table out when it creates
it, and again when the job starts (:meth:`cdclake.sinks.base.Sink.apply_layout`).

A partition field is one of Iceberg's transforms of one column: the column itself (identity),
``bucket(N, column)``, ``truncate(W, column)``, ``years(column)``, ``months(column)``, ``days(column)``
or ``hours(column)``; a column whose name is not a plain word is backquoted (```weird col```).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from cdclake.errors import OptionError
from cdclake.model import TableSchema
from cdclake.schema.lake import lake_type, quote
from cdclake.schema.table_rules import TableRule

_TEMPORAL = ("date", "timestamp", "timestamp_ntz")
# The lake types (cdclake.schema.lake.lake_type) each transform takes, as Iceberg's transforms allow;
# None: any. A decimal's type is named by its family only.
TRANSFORMS: dict[str, tuple[str, ...] | None] = {
    "identity": None,
    "bucket": ("int", "long", "decimal", "string", "binary", *_TEMPORAL),
    "truncate": ("int", "long", "decimal", "string", "binary"),
    "years": _TEMPORAL,
    "months": _TEMPORAL,
    "days": _TEMPORAL,
    "hours": ("timestamp", "timestamp_ntz"),
}
_WITH_WIDTH = ("bucket", "truncate")
FORMS = "a column, bucket(N, column), truncate(W, column), years(column), months(column), days(column), hours(column)"

_COLUMN = r"(?:`(?:[^`]|``)+`|[^\s(),`]+)"
_FIELD = re.compile(rf"\s*(?:(?P<transform>\w+)\s*\(\s*(?:(?P<width>\d+)\s*,\s*)?(?P<argument>{_COLUMN})\s*\)"
                    rf"|(?P<column>{_COLUMN}))\s*")

# Properties the job sets itself and relies on: a layout may not change them.
RESERVED_PROPERTIES = ("format-version",)
RESERVED_PREFIX = "cdclake."


class LayoutError(OptionError):
    """A layout that cannot be: a transform or property refused, or a column the table lacks."""


@dataclass(frozen=True)
class PartitionField:
    """One field of a partition spec: ``transform`` (:data:`TRANSFORMS`) of ``column``, with the
    bucket count or truncation width ``width`` of those that take one."""

    transform: str
    column: str
    width: int | None = None

    @classmethod
    def parse(cls, text: str) -> PartitionField:
        """The field ``text`` spells, in the job file's form (Spark SQL's, as ``DESCRIBE TABLE`` prints it)."""
        found = _FIELD.fullmatch(text)
        if found is None:
            raise LayoutError(f"partition field {text!r} is not one of: {FORMS}")
        if found["column"] is not None:
            return cls("identity", _unquoted(found["column"]))
        transform, width = found["transform"].lower(), found["width"]
        if transform not in TRANSFORMS or transform == "identity":
            raise LayoutError(f"partition field {text!r}: no transform {found['transform']!r}; one of: {FORMS}")
        if (width is not None) != (transform in _WITH_WIDTH):
            spelled = f"{transform}(N, column)" if transform in _WITH_WIDTH else f"{transform}(column)"
            raise LayoutError(f"partition field {text!r}: write it {spelled}")
        if width is not None and int(width) < 1:
            raise LayoutError(f"partition field {text!r}: {transform}'s width must be at least 1")
        return cls(transform, _unquoted(found["argument"]), None if width is None else int(width))

    def sql(self) -> str:
        """The field in Spark SQL, for ``PARTITIONED BY`` and ``ADD PARTITION FIELD``."""
        if self.transform == "identity":
            return quote(self.column)
        width = f"{self.width}, " if self.width is not None else ""
        return f"{self.transform}({width}{quote(self.column)})"

    def key(self) -> tuple[str, str, int | None]:
        """What makes two fields the same: column names are case-insensitive, as in MySQL and Spark."""
        return (self.transform, self.column.lower(), self.width)


@dataclass(frozen=True)
class TableLayout:
    """A mirror's partitioning (``partition_by``; None: left as it is, ``()``: unpartitioned) and table
    ``properties``; ``patterns`` the job file's sub-tables it came from, for messages."""

    partition_by: tuple[PartitionField, ...] | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    patterns: tuple[str, ...] = ()

    def check_columns(self, table: str, schema: TableSchema) -> None:
        """Refuse a partition field whose column ``table`` (``schema``'s rows) lacks, or whose type its
        transform does not take."""
        types = {c.name.lower(): (c.name, lake_type(c.type)) for c in schema.columns}
        for partition in self.partition_by or ():
            found = types.get(partition.column.lower())
            if found is None:
                raise LayoutError(f"{table}: partition-by {partition.sql()} of {self.where()} names a column the "
                                  f"table lacks; its columns: {', '.join(c.name for c in schema.columns)}")
            allowed = TRANSFORMS[partition.transform]
            family = found[1].split("(")[0]
            if allowed is not None and family not in allowed:
                raise LayoutError(f"{table}: partition-by {partition.sql()} of {self.where()}: {partition.transform} "
                                  f"takes {', '.join(allowed)}, not column {found[0]}'s {found[1]}")

    def where(self) -> str:
        """The job file's sub-tables it came from."""
        return ", ".join(f'[tables."{pattern}"]' for pattern in self.patterns)


@dataclass(frozen=True)
class LayoutRule(TableRule):
    """The layout the job file's ``[tables."<pattern>"]`` asks of the tables whose ``database.table``
    the regular expression ``pattern`` matches whole."""

    layout: TableLayout
    error: ClassVar[type[OptionError]] = LayoutError


def layout_for(rules: Iterable[LayoutRule], database: str, table: str) -> TableLayout | None:
    """What every rule matching ``database.table`` asks, in order (module docstring); None if none matches."""
    chosen = [rule for rule in rules if rule.matches(database, table)]
    if not chosen:
        return None
    partition_by = None
    properties: dict[str, str] = {}
    for rule in chosen:
        if rule.layout.partition_by is not None:
            partition_by = rule.layout.partition_by
        properties.update(rule.layout.properties)
    return TableLayout(partition_by, properties, tuple(rule.pattern for rule in chosen))


def layout_rule(pattern: str, partition_by: Iterable[str] | None, properties: Mapping[str, Any]) -> LayoutRule:
    """The rule of ``[tables."<pattern>"]``: its ``partition-by`` fields parsed, its property values
    (strings, numbers, booleans) as Iceberg's strings; a reserved property refused."""
    where = f'[tables."{pattern}"]'
    try:
        fields = None if partition_by is None else tuple(PartitionField.parse(text) for text in partition_by)
    except LayoutError as exc:
        raise LayoutError(f"{where}: {exc}") from None
    texts = {}
    for name, value in properties.items():
        if name in RESERVED_PROPERTIES or name.startswith(RESERVED_PREFIX):
            raise LayoutError(f"{where}: property {name!r} is the job's own and cannot be set")
        if isinstance(value, bool):
            texts[name] = str(value).lower()
        elif isinstance(value, str | int | float):
            texts[name] = str(value)
        else:
            raise LayoutError(f"{where}: property {name!r} = {value!r} is not a string, number or boolean")
    return LayoutRule(pattern, TableLayout(fields, texts, (pattern,)))


def _unquoted(column: str) -> str:
    if column.startswith("`"):
        return column[1:-1].replace("``", "`")
    return column
