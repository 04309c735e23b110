"""Which of a table's DDLs cut its batch's changes into segments (cdclake.spark.segments): the ones whose
changes images written after them would undo, or that the planning cannot follow as the writes will."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from cdclake.model import ColumnSchema, Ddl, DdlKind, IndexSchema, TableSchema
from cdclake.schema.ddl import interpret
from cdclake.schema.ddl.changes import SchemaChange, schema_after
from cdclake.spark.segments import DdlSeen, Segment, join_segments, rows_pass
from cdclake.types import MySQLType

TABLE = TableSchema("db", "t", (ColumnSchema("id", MySQLType("int"), nullable=False),
                                ColumnSchema("a", MySQLType("int")), ColumnSchema("b", MySQLType.parse("varchar(20)"))),
                    (IndexSchema("PRIMARY", ("id",), unique=True, primary=True),))
KEYLESS = TableSchema("db", "t", TABLE.columns)


def _changes(clause: str, schema: TableSchema = TABLE) -> list[SchemaChange]:
    return interpret(Ddl(DdlKind.ALTER_TABLE, "db", "t", f"ALTER TABLE db.t {clause}"), schema)


@pytest.mark.parametrize("clause", [
    "ADD COLUMN c INT",
    "ADD COLUMN c VARCHAR(5) NULL",
    "DROP COLUMN a",
    "MODIFY COLUMN a BIGINT",
    "MODIFY COLUMN a INT NOT NULL",  # the type unchanged
    "ADD INDEX ia (a)",
    "ADD COLUMN c INT, DROP COLUMN b",
])
def test_ddls_that_change_no_value_of_the_rows_there_pass(clause: str) -> None:
    assert rows_pass(_changes(clause), TABLE)


@pytest.mark.parametrize("clause", [
    "ADD COLUMN c INT NOT NULL DEFAULT 5",  # the rows there take 5: their older images lack it
    "ADD COLUMN c INT NOT NULL",  # the implicit default, 0
    "DROP COLUMN id",  # the key
    "MODIFY COLUMN a VARCHAR(20)",
    "MODIFY COLUMN a SMALLINT",  # narrowed
    "MODIFY COLUMN a INT UNSIGNED",  # negative values do not fit
    "RENAME COLUMN a TO z",
    "DROP PRIMARY KEY",
    "ADD COLUMN c INT, RENAME COLUMN a TO z",  # one clause that cuts is enough
])
def test_ddls_that_change_values_or_keys_cut(clause: str) -> None:
    assert not rows_pass(_changes(clause), TABLE)


def test_every_ddl_of_a_table_without_a_key_cuts() -> None:
    # Its key is the whole row: a column added or dropped changes every row's key.
    assert not rows_pass(_changes("ADD COLUMN c INT", KEYLESS), KEYLESS)


def _types(schema: TableSchema) -> dict[str, str]:
    return {c.name: str(c.type) for c in schema.columns}


def _seen(*clauses: str) -> list[DdlSeen]:
    seen, schema = [], TABLE
    for clause in clauses:
        changes = _changes(clause, schema)
        seen.append(DdlSeen(tuple(changes), schema))
        after = schema_after(schema, changes)
        assert after is not None
        schema = after
    return seen


def _part(index: int, columns: dict[str, str], changes: int = 1, keys: Sequence[str] = ("id",),
          partial: bool = False) -> Segment:
    return Segment(index, changes, [(columns, list(keys))], partial)


def _nothing_needed(schema: TableSchema, types: Mapping[str, MySQLType]) -> list[SchemaChange]:
    return []


def _lacking_columns(schema: TableSchema, types: Mapping[str, MySQLType]) -> list[SchemaChange]:
    """A sink's changes_in_rows as far as these tests need it: a column the table lacks is added."""
    held = {c.name.lower() for c in schema.columns}
    return [c for name, mtype in types.items() if name.lower() not in held
            for c in _changes(f"ADD COLUMN {name} {mtype}", schema)]


def test_segments_join_across_the_ddls_their_rows_pass_and_are_cut_by_the_others() -> None:
    seen = _seen("ADD COLUMN c INT", "DROP COLUMN a", "RENAME COLUMN b TO z")
    added = {**_types(TABLE), "c": "int"}
    parts = {0: _part(0, _types(TABLE)), 1: _part(1, added, 2), 2: _part(2, {"id": "int", "b": "varchar(20)",
                                                                          "c": "int"}, 3),
             3: _part(3, {"id": "int", "z": "varchar(20)", "c": "int"}, 4)}
    passed, segments = join_segments(parts, seen, _lacking_columns)
    assert passed == {0, 1}
    assert sorted(segments) == [0, 1]
    joined = segments[0]
    assert (joined.changes, joined.spans_ddls) == (6, True)
    # The oldest images lack c, added after them: they hold it NULL, so they are whole.
    assert joined.columns[0][0] == {**_types(TABLE), "c": "int"}
    after_drop = schema_after(seen[1].before, seen[1].changes)
    assert after_drop is not None and joined.whole_images(after_drop)
    assert (segments[1].index, segments[1].changes, segments[1].spans_ddls) == (1, 4, False)


def test_an_image_that_lacks_a_column_it_met_is_still_partial_across_ddls() -> None:
    seen = _seen("ADD COLUMN c INT")
    parts = {0: _part(0, _types(TABLE)), 1: _part(1, {"id": "int", "a": "int", "c": "int"})}  # b left out
    passed, segments = join_segments(parts, seen, _nothing_needed)
    after = seen[0].after
    assert passed == {0} and after is not None and not segments[0].whole_images(after)


def test_a_column_added_again_under_a_name_older_images_carry_cuts() -> None:
    # b's old values must not land in the new b.
    seen = _seen("DROP COLUMN b", "ADD COLUMN b INT")
    parts = {0: _part(0, _types(TABLE)), 2: _part(2, {"id": "int", "a": "int", "b": "int"})}
    passed, segments = join_segments(parts, seen, _nothing_needed)
    assert passed == {0}
    assert sorted(segments) == [0, 1]


def test_nothing_passes_where_rows_bring_what_the_schema_lacks_or_keys_of_their_own() -> None:
    seen = _seen("ADD COLUMN c INT")
    extra = {0: _part(0, {**_types(TABLE), "x": "int"}), 1: _part(1, {**_types(TABLE), "c": "int"})}
    assert join_segments(extra, seen, _lacking_columns) == (set(), extra)
    other_key = {0: _part(0, _types(TABLE), keys=("a",))}
    assert join_segments(other_key, seen, _nothing_needed)[0] == set()
    unknown = [DdlSeen(seen[0].changes, None)]  # a table the job did not know when the DDL came
    assert join_segments({0: _part(0, _types(TABLE))}, unknown, _nothing_needed)[0] == set()


def test_a_table_without_ddls_keeps_its_one_segment() -> None:
    parts = {0: _part(0, _types(TABLE), 5)}
    assert join_segments(parts, [], _nothing_needed) == (set(), parts)
