"""A table's changes in a batch cut into *segments* by its DDLs, one write (a MERGE) each, and the DDLs
that need no cut.

The DDL barrier: every change before a DDL is applied, then the DDL, then the changes after it. Cut at
every DDL, a batch pays a write per table and DDL. But most DDLs of a live stream change no value of the
rows already in the table: a column added that those rows hold NULL in, a column dropped, an integer
column widened, an index made. The images of the changes before such a DDL, written *after* it, leave
the table as they would have before it, so the changes on both sides of it are one segment, written
once after the DDL, as the net change per key across it. That is exact because

- an image from before an ADD COLUMN lacks the column, and the write holds it NULL, as the rows the DDL
  met hold it (the segment's column sets say so: :func:`join_segments` adds the column to them);
- an image from before a DROP COLUMN holds the column, and a write ignores columns its table lacks;
- an integer's text reads the same in a wider integer type, and an unchanged type reads the same.

Every other DDL cuts (:func:`rows_pass`): one that fills an added column with a default, changes or
drops a key, renames a column, rewrites values, or any DDL of a table without a key (its key is the
whole row). So does a column added under a name the segment's earlier images carry (dropped and
added again). And a table's DDLs all cut where its rows in the batch bring columns or types its schema
lacks (the pipeline evolves such a table from its rows between its DDLs) or key columns of their own:
then the schemas the batch's planning follows are the ones the writes meet, step by step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from cdclake.model import TableSchema
from cdclake.schema.ddl.changes import AddColumn, DropColumn, ModifyColumn, SchemaChange, schema_after
from cdclake.types import Family, MySQLType

# A sink's changes_in_rows: what a table known as a schema needs for rows of some column types.
RowsChange = Callable[[TableSchema, Mapping[str, MySQLType]], Sequence[SchemaChange]]


@dataclass
class Segment:
    """A table's changes between two of its DDLs that cut; ``columns`` the column sets its rows carry
    (with their key columns; in a segment across DDLs, an older image's set holds the columns added
    after it too, NULL in it), ``partial`` whether an after image lacks a column its row's set names,
    ``spans_ddls`` whether DDLs the rows pass lie inside it."""

    index: int
    changes: int = 0
    columns: list[tuple[dict[str, str], list[str]]] = field(default_factory=list)
    partial: bool = False
    spans_ddls: bool = False

    def whole_images(self, schema: TableSchema) -> bool:
        """Whether every image of an insert or update holds every column of ``schema``, the table's
        schema these rows meet (it may have columns rows of an older schema lack)."""
        names = {c.name for c in schema.columns}
        return not self.partial and all(names <= columns.keys() for columns, _ in self.columns)


@dataclass(frozen=True)
class DdlSeen:
    """One of a table's DDLs as the batch's planning followed it: its ``changes`` to the table, whose
    schema was ``before`` (None: a table the job does not know yet)."""

    changes: tuple[SchemaChange, ...]
    before: TableSchema | None

    @property
    def after(self) -> TableSchema | None:
        return schema_after(self.before, self.changes)


def rows_pass(changes: Sequence[SchemaChange], schema: TableSchema) -> bool:
    """Whether images written after ``changes`` (made to ``schema``) leave the table as they would have
    written before them (see the module's documentation)."""
    keys = _folded(schema.key_columns)
    if not keys:
        return False
    now: TableSchema | None = schema
    for change in changes:
        assert now is not None
        if isinstance(change, AddColumn):
            passes = change.fill is None
        elif isinstance(change, DropColumn):
            passes = change.name.lower() not in set(keys)
        elif isinstance(change, ModifyColumn):
            old = now.find_column(change.column.name)
            passes = old is not None and _reads_the_same(old.type, change.column.type)
        else:
            passes = False
        now = schema_after(now, [change])
        if not passes or now is None or _folded(now.key_columns) != keys:
            return False
    return True


def join_segments(parts: Mapping[int, Segment], ddls: Sequence[DdlSeen], rows_change: RowsChange
                  ) -> tuple[set[int], dict[int, Segment]]:
    """``parts``, a table's changes cut at each of its ``ddls`` (part ``i`` after ``i`` of them), joined
    across the DDLs its rows pass: the indexes of those DDLs, and the segments by their index (how many
    DDLs that cut come before them)."""
    if not ddls or not _rows_fit_schemas(parts, ddls, rows_change):
        return set(), dict(parts)
    passed: set[int] = set()
    carried: set[str] = set()  # the column names the current segment's images carry
    for i, ddl in enumerate(ddls):
        if i in parts:
            carried |= {name.lower() for columns, _ in parts[i].columns for name in columns}
        added = {c.column.name.lower() for c in ddl.changes if isinstance(c, AddColumn)}
        if ddl.before is not None and rows_pass(ddl.changes, ddl.before) and not added & carried:
            passed.add(i)
        else:
            carried = set()
    return passed, _joined(parts, ddls, passed)


def _joined(parts: Mapping[int, Segment], ddls: Sequence[DdlSeen], passed: set[int]) -> dict[int, Segment]:
    segments: dict[int, Segment] = {}
    cuts = 0
    for i in range(len(ddls) + 1):
        if i > 0 and i - 1 not in passed:
            cuts += 1
        segment = segments.setdefault(cuts, Segment(cuts))
        segment.spans_ddls = segment.spans_ddls or (i > 0 and i - 1 in passed)
        part = parts.get(i)
        if part is None:
            continue
        segment.changes += part.changes
        segment.partial = segment.partial or part.partial
        later = _added_in_segment_after(ddls, passed, i)
        segment.columns += [({**later, **columns}, keys) for columns, keys in part.columns]
    return {index: segment for index, segment in segments.items() if segment.changes or segment.columns}


def _added_in_segment_after(ddls: Sequence[DdlSeen], passed: set[int], part: int) -> dict[str, str]:
    """The columns (name to type text) that DDLs passed after ``part``, in its segment, add: its images
    lack them, and hold them NULL."""
    added: dict[str, str] = {}
    for i in range(part, len(ddls)):
        if i not in passed:
            break
        added |= {c.column.name: str(c.column.type) for c in ddls[i].changes if isinstance(c, AddColumn)}
    return added


def _rows_fit_schemas(parts: Mapping[int, Segment], ddls: Sequence[DdlSeen], rows_change: RowsChange) -> bool:
    """Whether every part's rows fit the schema the planning followed to their place: no column or type
    the table lacks, the table's key columns."""
    schemas = [ddl.before for ddl in ddls] + [ddls[-1].after]
    for i, part in parts.items():
        schema = schemas[i]
        for columns, keys in part.columns:
            if schema is None or _folded(keys) != _folded(schema.key_columns):
                return False
            if rows_change(schema, {name: MySQLType.parse(text) for name, text in columns.items()}):
                return False
    return True


def _reads_the_same(old: MySQLType, new: MySQLType) -> bool:
    """Whether a value's text of type ``old`` is the same value in ``new``: an unchanged type, or an
    integer type widened (int to bigint: the lake's integer column widens in place)."""
    if old == new:
        return True
    if old.family is not Family.INTEGER or new.family is not Family.INTEGER:
        return False
    low, high = old.integer_range()
    new_low, new_high = new.integer_range()
    return new_low <= low and high <= new_high


def _folded(names: Sequence[str]) -> tuple[str, ...]:
    """Column names as MySQL compares them (ignoring case), in order: a change's key is its key columns'
    values in their order."""
    return tuple(name.lower() for name in names)
