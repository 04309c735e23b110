"""How far a batch may go, and what a partition keeps carrying: the rules both jobs order by.

A source **with watermarks** is taken up to its resolved ts (:func:`resolved_ts`). One **without** is
taken up to the lowest newest position (a ts derived from the commit time, or a sequence) read on the
partitions a batch did not read to their end (:func:`lowest_behind`): each partition sends its changes
in that order, so one read up to position p has nothing below p to come, and one read to its end has
nothing at all. Schema messages a partition's decoder needs are carried from batch to batch, the
newest versions of each table only (:func:`newest_schema_versions`).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from typing import TypeVar

Item = TypeVar("Item")
Partition = TypeVar("Partition")
SchemaVersion = tuple[str | None, str | None, int | None]  # database, table, version


def resolved_ts(newest_marks: Iterable[int | None], waiting: Iterable[int | None] = (), unknown: int = 0) -> int:
    """The ts every source partition has announced: the minimum over partitions of the newest watermark
    each announced (``unknown`` while one has announced none), kept below the commit ts of every row still
    waiting for its schema (``unknown`` for a row whose commit ts is not known). A waiting row's
    transaction is not complete until the row is, and what is at or below the resolved ts counts as done."""
    marks = list(newest_marks)
    mark = unknown if not marks or None in marks else min(m for m in marks if m is not None)
    for ts in waiting:
        mark = min(mark, unknown if ts is None else ts - 1)
    return mark


def lowest_behind(newest: Mapping[Partition, int | None], behind: Container[Partition]) -> int | None:
    """The lowest of the newest positions read on the partitions ``behind`` (those not read to their
    end) that have read any; None if there are none."""
    lagging = [position for partition, position in newest.items() if position is not None and partition in behind]
    return min(lagging) if lagging else None


def newest_schema_versions(primes: Iterable[Item], schema_of: Callable[[Item], SchemaVersion],
                           versions_kept: int = 2) -> list[Item]:
    """One schema message per table version (the first of ``primes`` for it), for the newest
    ``versions_kept`` versions of each table (no version counts as the oldest). Rows of an older version
    than those cannot still be on their way: TiCDC sends a DDL only after every row before it."""
    first: dict[SchemaVersion, Item] = {}
    for prime in primes:
        first.setdefault(schema_of(prime), prime)
    versions: dict[tuple[str | None, str | None], list[int]] = {}
    for database, table, version in first:
        versions.setdefault((database, table), []).append(_order(version))
    newest = {table: sorted(found)[-versions_kept:] for table, found in versions.items()}
    return [prime for (database, table, version), prime in first.items()
            if _order(version) in newest[(database, table)]]


def _order(version: int | None) -> int:
    return -1 if version is None else version
