"""SCD type 2 history tables: which upstream tables keep one, what its rows are, and how one key's changes
of a segment become versions.

A history table sits beside its mirror (``<mirror>_history``, in the mirror's namespace) and holds one row
per version of each upstream row: the upstream columns as the version had them, and

=================== ======================= ===============================================================
column              type                    what it holds
=================== ======================= ===============================================================
``__start_ts``      bigint                  the commit ts (TiDB TSO) of the change that made the version
``__start_at``      timestamp               its wall-clock time: the TSO's physical part (ms since the epoch)
``__end_ts``        bigint                  the commit ts of the change that ended it; NULL while current
``__end_at``        timestamp               its wall-clock time
``__end_op``        string                  what ended it: ``update``, ``delete`` (an UPDATE that changed
                                            the row's key ends the old key's version as a delete) or
                                            ``truncate``
``__is_current``    boolean                 whether it is the key's current version (``__end_ts`` NULL)
=================== ======================= ===============================================================

Every UPDATE begins a version. Options, as Spark Auto CDC names them: history tracked only on some
columns (``track-history-columns``) or on all but some (``track-history-except``): an UPDATE that
changes no tracked column (its before and after images compared) changes the current version in place
instead; and whether a version a delete (or TRUNCATE) ended stays, closed (``history-keep-deleted``, the
default), or goes. Spark's Auto CDC sets them per target table: here they are the job's, and a
:class:`HistoryRule` (a job file's ``[tables."<pattern>"]``) sets them for the tables its pattern matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cdclake.errors import OptionError
from cdclake.model import ColumnSchema, IndexSchema, TableSchema
from cdclake.schema.table_rules import TableRule
from cdclake.types import MySQLType

HISTORY_SUFFIX = "_history"
START_TS, START_AT, END_TS, END_AT, END_OP, IS_CURRENT = (
    "__start_ts", "__start_at", "__end_ts", "__end_at", "__end_op", "__is_current")
# The version columns as MySQL types, for the comparisons (verify): the lake holds the flag as a boolean.
VERSION_COLUMNS = (
    ColumnSchema(START_TS, MySQLType.parse("bigint")),
    ColumnSchema(START_AT, MySQLType.parse("timestamp(3)")),
    ColumnSchema(END_TS, MySQLType.parse("bigint")),
    ColumnSchema(END_AT, MySQLType.parse("timestamp(3)")),
    ColumnSchema(END_OP, MySQLType.parse("varchar(8)")),
    ColumnSchema(IS_CURRENT, MySQLType.parse("tinyint(1)")),
)
ALL_TABLES = "*"


def _one_kind_of_tracking(track_columns: tuple[str, ...] | None, track_except: tuple[str, ...] | None) -> None:
    if track_columns is not None and track_except is not None:
        raise OptionError("track-history-columns and track-history-except: give one of them, not both")


@dataclass(frozen=True)
class HistoryRule(TableRule):
    """How the history tables of the upstream tables whose ``database.table`` the regular expression
    ``pattern`` matches whole are kept, where it differs from the job's settings; None: as they say."""

    track_columns: tuple[str, ...] | None = None
    track_except: tuple[str, ...] | None = None
    keep_deleted: bool | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            _one_kind_of_tracking(self.track_columns, self.track_except)
        except OptionError as exc:
            raise self.refused(str(exc)) from None


@dataclass(frozen=True)
class HistorySettings:
    """Which upstream tables keep a history table (``tables``: regular expressions matched against the
    whole ``database.table``, as ``include`` is, or ``*`` for all), and how (the module's docstring):
    as the job says, unless ``rules`` say otherwise for a table (:meth:`for_table`)."""

    tables: tuple[str, ...] = ()
    track_columns: tuple[str, ...] | None = None
    track_except: tuple[str, ...] | None = None
    keep_deleted: bool = True
    rules: tuple[HistoryRule, ...] = ()
    _patterns: tuple[re.Pattern[str], ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _one_kind_of_tracking(self.track_columns, self.track_except)
        if not self.tables and (self.restricted or not self.keep_deleted or self.rules):
            raise OptionError("track-history-columns, track-history-except and history-keep-deleted say how history "
                              "tables are kept: name the tables that keep one with history")
        patterns = []
        for pattern in self.tables:
            try:
                patterns.append(re.compile(".*" if pattern == ALL_TABLES else pattern))
            except re.error as exc:
                raise OptionError(f"history = {pattern!r}: not a regular expression ({exc}); "
                                  f"{ALL_TABLES!r} names every table") from None
        object.__setattr__(self, "_patterns", tuple(patterns))

    def __bool__(self) -> bool:
        return bool(self.tables)

    def wanted(self, database: str, table: str) -> bool:
        name = f"{database}.{table}"
        return any(pattern.fullmatch(name) for pattern in self._patterns)

    def regex(self) -> str:
        """One regular expression any table with history matches in whole."""
        return "|".join(f"(?:{pattern.pattern})" for pattern in self._patterns)

    @property
    def restricted(self) -> bool:
        """Whether history is tracked on some columns only: else every UPDATE begins a version, even one
        whose images look the same as a format carries them."""
        return self.track_columns is not None or self.track_except is not None

    def for_table(self, database: str, table: str) -> HistorySettings:
        """How ``database.table``'s history table is kept: these settings, then each rule that matches it,
        in order, each setting a rule gives replacing the one before (tracked columns of either kind
        replace tracked columns of both)."""
        settings = self
        for rule in self.rules:
            if not rule.matches(database, table):
                continue
            if rule.track_columns is not None or rule.track_except is not None:
                settings = replace(settings, track_columns=rule.track_columns, track_except=rule.track_except)
            if rule.keep_deleted is not None:
                settings = replace(settings, keep_deleted=rule.keep_deleted)
        return replace(settings, rules=()) if settings.rules else settings

    def tracks(self, column: str) -> bool:
        """Whether a change of ``column`` opens a new version (names compared as MySQL does, ignoring case)."""
        name = column.lower()
        if self.track_columns is not None:
            return name in {c.lower() for c in self.track_columns}
        return self.track_except is None or name not in {c.lower() for c in self.track_except}


def history_schema(schema: TableSchema) -> TableSchema:
    """The history table of ``schema``'s mirror: its columns, then the version columns; keyed by the
    mirror's key (else all its columns) and the version's start."""
    taken = {c.name.lower() for c in schema.columns} & {c.name for c in VERSION_COLUMNS}
    if taken:
        raise OptionError(f"{schema.database}.{schema.table} has a column named {', '.join(sorted(taken))}, which its "
                          "history table needs for its versions: leave the table out of history")
    key = (*(schema.key_columns or (c.name for c in schema.columns)), START_TS)
    primary = IndexSchema("PRIMARY", tuple(key), unique=True, primary=True)
    return TableSchema(schema.database, schema.table, (*schema.columns, *VERSION_COLUMNS), (primary,),
                       schema.table_id, schema.version)


# --- one key's changes of a segment as versions ----------------------------------------------------------

Image = dict[str, Any]


@dataclass(frozen=True)
class KeyChange:
    """One change of a key, in commit order: ``op`` insert, update or delete (an UPDATE that changed the
    key is a delete of the old key and an insert of the new one); ``key`` the key columns' values (for a
    table without a key, the whole row); images as the change records hold them (lake texts)."""

    op: str
    commit_ts: int
    key: Image
    before: Image | None = None
    after: Image | None = None


@dataclass(frozen=True)
class VersionAction:
    """What a segment does to a history table for one key.

    ``insert``: a version the segment made (``image`` its columns, start, and end if the segment ended
    it). ``patch``: the key's open version in the table takes ``image``'s columns (a change of untracked
    columns), staying open. ``close``: the open version ends at ``end_ts`` by ``end_op``, after taking
    ``image``'s columns. ``remove``: the open version goes (a delete, when deleted versions are not kept).
    Every action but ``insert`` finds the open version by the key columns ``image`` holds."""

    action: str
    image: Image
    start_ts: int | None = None
    end_ts: int | None = None
    end_op: str | None = None


def versions_of_key(changes: Sequence[KeyChange], settings: HistorySettings) -> list[VersionAction]:
    """The actions one key's changes of a segment (in commit order) make on its history table."""
    opened: list[dict[str, Any]] = []  # versions of this segment: image, start, end, op
    patch: Image = {}  # what untracked changes did to the table's open version
    closed: tuple[int, str] | None = None  # when and how the table's open version ended
    for change in changes:
        current = opened[-1] if opened and opened[-1]["end"] is None else None
        if change.op == "insert":
            opened.append({"image": dict(change.after or {}), "start": change.commit_ts, "end": None, "op": None})
            continue
        if change.op == "update" and settings.restricted and not _tracked_change(change, current, settings):
            (current["image"] if current is not None else patch).update(change.after or {})
            continue
        end_op = "update" if change.op == "update" else "delete"
        if current is not None:
            current["end"], current["op"] = change.commit_ts, end_op
        elif closed is None:
            closed = (change.commit_ts, end_op)
        if change.op == "update":
            base = current["image"] if current is not None else (change.before or {})
            opened.append({"image": {**base, **(change.after or {})}, "start": change.commit_ts, "end": None,
                           "op": None})
    key = changes[0].key if changes else {}
    actions = []
    if closed is not None:
        if closed[1] == "delete" and not settings.keep_deleted:
            actions.append(VersionAction("remove", dict(key)))
        else:
            actions.append(VersionAction("close", {**patch, **key}, end_ts=closed[0], end_op=closed[1]))
    elif patch:
        actions.append(VersionAction("patch", {**patch, **key}))
    actions += [VersionAction("insert", version["image"], version["start"], version["end"], version["op"])
                for version in opened if settings.keep_deleted or version["op"] != "delete"]
    return actions


def _tracked_change(change: KeyChange, current: Mapping[str, Any] | None, settings: HistorySettings) -> bool:
    """Whether an update changes a tracked column: against its before image, else the version it follows."""
    before = change.before if change.before is not None else (current["image"] if current is not None else None)
    if before is None:
        return True
    changed: Iterable[str] = (c for c, value in (change.after or {}).items() if c not in before or before[c] != value)
    return any(settings.tracks(column) for column in changed)
