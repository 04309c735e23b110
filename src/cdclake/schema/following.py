"""Which of a batch's DDLs a job follows, under its ``unsupported-ddl`` policy, with ``CREATE TABLE ...
LIKE`` given the schema it copies.

:class:`DdlFollower` reads a batch's DDLs in the order they apply, before anything of the batch is
written, keeping each table's MySQL schema as the DDLs leave it: the schemas the job knows when the
batch starts, and what the batch's DDLs before each one made of them. So it can

* give ``CREATE TABLE new LIKE old`` the schema the job knows of ``old`` at that point (its columns,
  primary key and unique indexes, as MySQL copies them), as the ``Ddl``'s schema after, which
  :func:`~cdclake.schema.ddl.interpret` then takes as the table's. A table no schema or DDL has shown
  yet, only its rows in this batch, is copied as the pipeline creates such a table: from its first
  row's column types and key (``rows_schema``, asked only then). A ``LIKE`` of a table the job has no
  schema of at all (one it does not replicate, or has not seen) cannot be followed;
* decide, before the batch writes anything, what becomes of a DDL the job cannot follow (see
  :class:`~cdclake.schema.policy.EvolutionPolicy`): ``stop`` raises, ``skip`` leaves it out and gives
  the reason it goes to the dead letters with, ``apply-supported`` keeps what it can follow
  (:func:`changes_to_apply` is what the pipeline then applies of it) and gives the reason for the rest.

A DDL without a table (CREATE DATABASE, CREATE USER ...) changes no table and is passed on unread, as
the pipeline has always done.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from cdclake.model import Ddl, DdlKind, TableSchema
from cdclake.schema.ddl import DdlInterpretError, interpret, interpret_in_part, like_source, table_before
from cdclake.schema.ddl.changes import DropTable, RenameTable, SchemaChange, schema_after
from cdclake.schema.policy import UnsupportedDdl


class UnsupportedDdlError(DdlInterpretError):
    """A DDL the job cannot follow, under ``unsupported-ddl = stop``."""


@dataclasses.dataclass(frozen=True)
class Followed:
    """What the job does with one DDL: ``ddl`` to apply (a ``LIKE`` with its schema after), or None;
    ``refusal`` the dead letter's reason when some or all of it is not followed, else None; ``changes``
    what is made of it to its table, whose schema was ``schema`` (None: a table the job does not know)."""

    ddl: Ddl | None
    refusal: str | None = None
    changes: tuple[SchemaChange, ...] = ()
    schema: TableSchema | None = None


class DdlFollower:
    """A batch's DDLs, in the order they apply, judged under ``policy``; ``schemas`` the MySQL schema
    of each table the job knows when the batch starts, by upstream (database, table); ``rows_schema``
    the schema the batch's rows show of a table (None if they show none)."""

    def __init__(self, schemas: Mapping[tuple[str, str], TableSchema], policy: UnsupportedDdl,
                 rows_schema: Callable[[tuple[str, str]], TableSchema | None] = lambda key: None) -> None:
        # TiDB compares names case-insensitively (lower-case-table-names = 2): so do the lookups.
        self._schemas = {_folded(key): schema for key, schema in schemas.items()}
        self._gone: set[tuple[str, str]] = set()  # dropped or renamed away in this batch
        self._dropped_databases: set[str] = set()
        self.policy = policy
        self.rows_schema = rows_schema

    def follow(self, ddl: Ddl) -> Followed:
        """What the job does with ``ddl``, the next DDL of the batch; the tables' schemas move past it.
        Raises :class:`UnsupportedDdlError` for a DDL it cannot follow whole under ``stop``."""
        if ddl.kind is DdlKind.DROP_DATABASE:
            self._schemas = {key: s for key, s in self._schemas.items() if key[0] != ddl.database.lower()}
            self._dropped_databases.add(ddl.database.lower())
            return Followed(ddl)
        if not ddl.table:
            return Followed(ddl)
        before = _folded(table_before(ddl))
        current = self._schemas.get(before)
        ddl, missing = self._with_like_schema(ddl)
        changes, refused = ([], [missing]) if missing is not None else interpret_in_part(ddl, current)
        if not refused:
            self._moved(before, current, changes)
            return Followed(ddl, changes=tuple(changes), schema=current)
        reasons = "; ".join(refused)
        if self.policy == "stop":
            raise UnsupportedDdlError(ddl, f"{reasons} (unsupported-ddl = stop: nothing of this batch was "
                                      "applied; unsupported-ddl = skip or apply-supported puts the DDL in the "
                                      "dead letters and goes on)")
        refusal = str(DdlInterpretError(ddl, reasons if self.policy == "skip" else f"{reasons} (the rest applied)"))
        if self.policy == "skip" or not changes:
            return Followed(None, refusal)
        self._moved(before, current, changes)
        return Followed(ddl, refusal, tuple(changes), current)

    def _with_like_schema(self, ddl: Ddl) -> tuple[Ddl, str | None]:
        """``ddl``, a ``CREATE TABLE ... LIKE`` given the schema it copies; or the reason it cannot be."""
        source = like_source(ddl) if ddl.schema_after is None else None
        if source is None:
            return ddl, None
        copied = self._schemas.get(_folded(source))
        if copied is None and _folded(source) not in self._gone and source[0].lower() not in self._dropped_databases:
            copied = self.rows_schema(source)
        if copied is None:
            return ddl, (f"CREATE TABLE ... LIKE {source[0]}.{source[1]}: the job knows no schema of "
                         f"{source[0]}.{source[1]} (a table it does not replicate, has not seen, or that "
                         "this batch dropped before)")
        schema = TableSchema(ddl.database, ddl.table, copied.columns, copied.indexes)
        return dataclasses.replace(ddl, schema_after=schema), None

    def _moved(self, before: tuple[str, str], current: TableSchema | None, changes: list[SchemaChange]) -> None:
        """The schemas once ``changes`` are made to the table known as ``before``: under its new name
        after a rename, gone after a drop."""
        after = schema_after(current, changes)
        self._schemas.pop(before, None)
        if any(isinstance(change, DropTable | RenameTable) for change in changes):
            self._gone.add(before)
        if after is not None:
            key = _folded((after.database, after.table))
            self._schemas[key] = after
            self._gone.discard(key)


def changes_to_apply(ddl: Ddl, current: TableSchema | None, policy: UnsupportedDdl) -> list[SchemaChange]:
    """The changes the pipeline makes for ``ddl`` (one :class:`DdlFollower` let through) to a table whose
    schema is ``current``: what can be followed of it under ``apply-supported``, else all of it."""
    if policy == "apply-supported":
        return interpret_in_part(ddl, current)[0]
    return interpret(ddl, current)


def _folded(key: tuple[str, str]) -> tuple[str, str]:
    return key[0].lower(), key[1].lower()

