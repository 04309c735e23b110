"""Offset ranges: the unit of work a driver plans and an executor reads, for any source."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from cdclake.model import RawMessage


@dataclass(frozen=True, slots=True, order=True)
class OffsetRange:
    """Records ``start <= offset < end`` of one partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class PartitionExtent:
    """The offsets a partition holds: ``low`` is the first, ``high`` one past the last (Kafka's high
    watermark)."""

    low: int
    high: int


class Source(Protocol):
    """A partitioned log: what it holds now, and the records of one range."""

    def extents(self) -> dict[tuple[str, int], PartitionExtent]: ...

    def read(self, offset_range: OffsetRange) -> Iterator[RawMessage]: ...


def plan_ranges(
    extents: Mapping[tuple[str, int], PartitionExtent],
    positions: Mapping[tuple[str, int], int],
    max_records: int,
) -> list[OffsetRange]:
    """The next ranges to read: from each partition's position (else its first offset) toward its high
    watermark, at most ``max_records`` in all, shared evenly so that no partition starves."""
    starts = {tp: max(positions.get(tp, extent.low), extent.low) for tp, extent in sorted(extents.items())}
    backlog = {tp: extents[tp].high - start for tp, start in starts.items() if extents[tp].high > start}
    taken = dict.fromkeys(backlog, 0)
    left = max_records
    while left > 0 and backlog:
        share = max(1, left // len(backlog))
        for tp in list(backlog):
            take = min(share, backlog[tp], left)
            taken[tp] += take
            backlog[tp] -= take
            left -= take
            if backlog[tp] == 0:
                del backlog[tp]
            if left == 0:
                break
    return [OffsetRange(topic, partition, starts[(topic, partition)], starts[(topic, partition)] + count)
            for (topic, partition), count in taken.items() if count > 0]
