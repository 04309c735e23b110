"""The simulator's history of each table: every version of every row, with the commits that began and
ended it, and the history table a job keeps of it under its settings (:mod:`cdclake.schema.history`).

A version begins with the INSERT or UPDATE that wrote it and ends with the next change of its key: an
UPDATE (``update``), a DELETE (``delete``), an UPDATE that changed the key (``delete``: the old key is
gone; the new key's version begins), or a TRUNCATE TABLE (``truncate``). A DDL that changes columns
changes every version as it changes the rows (an added column is NULL in all of them, a dropped one gone
from all of them); a renamed table keeps its history; a dropped one loses it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from cdclake.schema.history import (
    END_AT,
    END_OP,
    END_TS,
    IS_CURRENT,
    START_AT,
    START_TS,
    HistorySettings,
)

Row = Mapping[str, Any]
KeyOf = Callable[[Row], tuple[Any, ...]]


@dataclass(frozen=True)
class Version:
    """A row's version; ``changed``: the columns the UPDATE that ended it changed, named as they were
    then (a history tracked on some columns follows the names of the moment)."""

    row: Row
    start_ts: int
    end_ts: int | None = None
    end_op: str | None = None
    changed: frozenset[str] = frozenset()


class TableHistory:
    """One table's versions, in the order they began; ``key_of`` a row's key (the oracle's)."""

    def __init__(self, key_of: KeyOf) -> None:
        self.key_of = key_of
        self.versions: list[Version] = []
        self._open: dict[tuple[Any, ...], int] = {}

    def opened(self, row: Row, ts: int) -> None:
        self._open[self.key_of(row)] = len(self.versions)
        self.versions.append(Version(row, ts))

    def closed(self, row: Row, ts: int, op: str, changed: frozenset[str] = frozenset()) -> None:
        index = self._open.pop(self.key_of(row))
        self.versions[index] = replace(self.versions[index], end_ts=ts, end_op=op, changed=changed)

    def updated(self, before: Row, after: Row, ts: int) -> None:
        if self.key_of(before) == self.key_of(after):
            self.closed(before, ts, "update", frozenset(c for c, value in after.items() if before.get(c) != value))
        else:
            self.closed(before, ts, "delete")
        self.opened(after, ts)

    def truncated(self, ts: int) -> None:
        for index in self._open.values():
            self.versions[index] = replace(self.versions[index], end_ts=ts, end_op="truncate")
        self._open.clear()

    def rewrite(self, rewrite: Callable[[Row], Row]) -> None:
        """Every version's row as a DDL leaves it (a table without a key is keyed by its whole row, so the
        open versions are found again)."""
        self.versions = [replace(version, row=rewrite(version.row)) for version in self.versions]
        self._open = {self.key_of(version.row): index for index, version in enumerate(self.versions)
                      if version.end_ts is None}

    def snapshot(self) -> tuple[Version, ...]:
        return tuple(self.versions)


def kept_versions(versions: Iterable[Version], key_of: KeyOf, settings: HistorySettings) -> list[Version]:
    """The versions a history table keeps under ``settings``: one that an UPDATE of no tracked column
    ended is one version with the next (which takes its start); those a delete or TRUNCATE ended are
    left out unless deleted versions are kept."""
    kept: list[Version] = []
    last: dict[tuple[Any, ...], int] = {}
    for version in versions:
        key = key_of(version.row)
        previous = kept[last[key]] if key in last else None
        if (previous is not None and previous.end_op == "update" and previous.end_ts == version.start_ts
                and settings.restricted and not any(settings.tracks(column) for column in previous.changed)):
            kept[last[key]] = replace(version, start_ts=previous.start_ts)
            continue
        last[key] = len(kept)
        kept.append(version)
    return [v for v in kept if settings.keep_deleted or v.end_op not in ("delete", "truncate")]


def history_rows(versions: Iterable[Version]) -> list[dict[str, Any]]:
    """Versions as the history table's rows: the upstream columns, then the version columns."""
    return [{**version.row, START_TS: version.start_ts, START_AT: wall_clock(version.start_ts),
             END_TS: version.end_ts, END_AT: wall_clock(version.end_ts), END_OP: version.end_op,
             IS_CURRENT: version.end_ts is None} for version in versions]


def wall_clock(ts: int | None) -> dt.datetime | None:
    """A TiDB TSO's physical part as a time."""
    return None if ts is None else _EPOCH + dt.timedelta(milliseconds=ts >> 18)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
