"""The bounds every decoder keeps, whatever a stream sends (issue 23): how many columns a message may
hold, and how many compiled row readers a decoder keeps.

A decoder's work and memory grow with the columns of a message (each new column order is compiled into
a reader) and with the column orders it has seen; neither may grow without end on input alone. MySQL
and TiDB both refuse a table of more than 4096 columns, so a message that holds more describes no table
and is refused (a DecodeError: the pipeline dead-letters it). The caches forget the row readers used
least recently once full.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

# MySQL's hard limit of columns per table, which TiDB keeps too: 4096.
# More in one image or schema describes no table.
MAX_COLUMNS = 4096

# The widest column order compiled into a reader. CPython compiles a long straight-line function, and a
# long chain of "or", in time that grows faster than its length (Open Protocol's check of 1,000 columns:
# 0.6 s of CPU), so wider images are read column by column, on each format's careful path, in linear
# time. 512 columns compile in about a tenth of a second.
MAX_COMPILED_COLUMNS = 512

# Row shapes (column orders with their compiled readers) an Open Protocol decoder keeps. A stream with
# only-output-updated-columns sends one old-image shape per set of changed columns; a few hundred keep
# the common ones. A shape of 512 columns, compiled, holds 0.8 MB: the cache stays near 200 MB at worst.
SHAPE_CACHE_SIZE = 256

# Column decodings (type code and flags) an Open Protocol decoder keeps: a table has a few dozen.
COLUMN_CACHE_SIZE = 4096

# Tables whose schema a decoder keeps where every message carries the schema again (DataWorks): one
# forgotten is read again from its next message.
TABLE_CACHE_SIZE = 1024

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def too_many_columns(count: int, what: str) -> str | None:
    """Why ``what``, which holds ``count`` columns, is refused; None where the count is allowed."""
    if count <= MAX_COLUMNS:
        return None
    return f"{what} has {count} columns; a MySQL table has at most {MAX_COLUMNS}"


class Lru(Generic[K, V]):
    """A mapping of at most ``size`` entries that forgets the least recently used one when full.

    A dict keeps insertion order, so moving an entry to the end on each hit (pop, then store again)
    makes its first entry the least recently used: two dict operations per hit, no linked list.
    """

    __slots__ = ("_items", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        items = self._items
        value = items.pop(key, None)
        if value is not None:
            items[key] = value
        return value

    def put(self, key: K, value: V) -> None:
        items = self._items
        items.pop(key, None)
        items[key] = value
        if len(items) > self.size:
            del items[next(iter(items))]

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()
