"""How the simulator makes the identity of new rows: key values, and for the keyless table a value
that keeps its rows distinct.

A new row's key is fresh, or now and then (``REUSE_RATIO``) a key deleted earlier and not in use, so
that the stream has a key deleted and inserted again: a consumer that remembers deleted keys, or
orders a key's changes wrongly, ends with the wrong row.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from typing import Any

from cdclake.model import TableSchema

REUSE_RATIO = 0.1
_REUSABLE = 64  # deleted keys remembered for reuse, per table


class KeyMaker:
    """Makes the values of a table's identity columns (``columns``) for a new row.

    ``style`` is the :class:`~cdclake.workload.tables.TableShape` key style: ``serial`` (one integer
    column counting up with gaps), ``composite`` (an order id and its line numbers), ``code`` (a string
    key), ``account`` (a CHAR(20) unique key) or ``none`` (a keyless table, whose first column, a
    DATETIME(6), gets a distinct instant per row: the table has no key, but its rows are never equal).
    """

    def __init__(self, schema: TableSchema, style: str) -> None:
        self.style = style
        self.columns: tuple[str, ...] = schema.key_columns if style != "none" else (schema.columns[0].name,)
        self._counter = 0
        self._line = 0
        self._deleted: list[tuple[Any, ...]] = []
        self._prefix = _code_prefix(schema) if style == "code" else "ACC-" if style == "account" else ""

    def forget(self, key: tuple[Any, ...]) -> None:
        """``key`` was deleted: it may be used again."""
        if self.style != "none":
            if len(self._deleted) == _REUSABLE:
                self._deleted.pop(0)
            self._deleted.append(key)

    def new_key(self, rng: random.Random, taken: Callable[[tuple[Any, ...]], bool]) -> tuple[Any, ...]:
        """Key values for a new row, for which ``taken`` is false (in use, or changed earlier in the
        same transaction)."""
        if self._deleted and rng.random() < REUSE_RATIO:
            key = self._deleted.pop(rng.randrange(len(self._deleted)))
            if not taken(key):
                return key
        while True:
            key = self._fresh(rng)
            if not taken(key):
                return key

    def _fresh(self, rng: random.Random) -> tuple[Any, ...]:
        if self.style == "composite":
            # Several lines per order, then the next order.
            if self._line == 0 or rng.random() < 0.3:
                self._counter += rng.randint(1, 3)
                self._line = 0
            self._line += 1
            return (self._counter, self._line)
        self._counter += rng.randint(1, 3)
        if self.style == "serial":
            return (self._counter,)
        if self.style == "none":
            return (dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=self._counter),)
        width = 16 if self.style == "account" else 8
        return (f"{self._prefix}{self._counter:0{width}d}",)


def _code_prefix(schema: TableSchema) -> str:
    """String keys of a table: ``SKU-`` and eight digits for a CHAR(12), else text with non-ASCII
    characters in it (the key hash and every format must take them)."""
    key_type = schema.column(schema.key_columns[0]).type
    return "SKU-" if key_type.length == 12 else "código-Zoë-"
