"""Offset ranges: the unit of work a driver plans and an executor reads, for any source."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from cdclake.model import Origin, RawMessage

# One record of a partition as a source reads it: (offset, timestamp ms, key, value, headers as (name,
# bytes) pairs). A tuple, not a RawMessage: decoding reads a million of them a batch, and a RawMessage and
# its Origin took ~2 us of the ~14 us each Simple protocol message cost, where a compiled row reader needs
# only the bytes and the coordinates (:func:`as_messages` makes RawMessages of them where they are wanted).
SourceRecord = tuple[int, int | None, bytes | None, bytes | None, tuple[tuple[str, bytes], ...]]


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

    def records(self, offset_range: OffsetRange) -> Iterator[SourceRecord]: ...


def as_messages(records: Iterable[SourceRecord], topic: str, partition: int) -> Iterator[RawMessage]:
    """``records``, of one partition, as raw messages."""
    for offset, timestamp_ms, key, value, headers in records:
        yield RawMessage(key, value, Origin(topic=topic, partition=partition, offset=offset), timestamp_ms, headers)


@dataclass(frozen=True, slots=True)
class Pace:
    """Where a partition's stream has got in the order its records carry (a watermark's ts, a change
    sequence): ``mark``, and how many records it takes, lately, to move that order on by one unit."""

    mark: int
    records_per_unit: float


class PaceTracker:
    """Each partition's pace, learned from the offsets and marks a job reaches batch after batch, and
    the first mark each batch reads: a partition has a pace once one batch read two of its marks.

    It lives with the job, not in its state: a restarted job plans one batch without it, which costs
    only that batch's alignment, never correctness."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, int], tuple[int, int]] = {}
        self._rates: dict[tuple[str, int], float] = {}

    def observe(self, tp: tuple[str, int], offset: int, mark: int | None) -> None:
        """``tp`` has been read up to ``offset`` (exclusive), its order having reached ``mark``."""
        if mark is None:
            return
        last = self._last.get(tp)
        if last is not None and offset > last[0] and mark > last[1]:
            self._rates[tp] = (offset - last[0]) / (mark - last[1])
        # A batch that read records but moved no mark is counted with the batch that moves it next.
        if last is None or mark > last[1]:
            self._last[tp] = (offset, mark)

    def paces(self) -> dict[tuple[str, int], Pace]:
        return {tp: Pace(self._last[tp][1], rate) for tp, rate in self._rates.items()}


def plan_ranges(
    extents: Mapping[tuple[str, int], PartitionExtent],
    positions: Mapping[tuple[str, int], int],
    max_records: int,
    paces: Mapping[tuple[str, int], Pace] | None = None,
) -> list[OffsetRange]:
    """The next ranges to read: from each partition's position (else its first offset) toward its high
    watermark, at most ``max_records`` in all.

    With the ``paces`` of every partition that has records left, the budget goes where it brings the
    partitions to one common mark (:func:`_aligned_shares`); else it is shared evenly so that no
    partition starves."""
    starts = {tp: max(positions.get(tp, extent.low), extent.low) for tp, extent in sorted(extents.items())}
    backlog = {tp: extents[tp].high - start for tp, start in starts.items() if extents[tp].high > start}
    if paces is not None and backlog and all(tp in paces for tp in backlog):
        taken = _aligned_shares(backlog, paces, max_records)
    else:
        taken = _even_shares(backlog, max_records)
    return [OffsetRange(topic, partition, starts[(topic, partition)], starts[(topic, partition)] + count)
            for (topic, partition), count in taken.items() if count > 0]


def _even_shares(backlog: Mapping[tuple[str, int], int], budget: int) -> dict[tuple[str, int], int]:
    left_over = dict(backlog)
    taken = dict.fromkeys(backlog, 0)
    left = budget
    while left > 0 and left_over:
        share = max(1, left // len(left_over))
        for tp in list(left_over):
            take = min(share, left_over[tp], left)
            taken[tp] += take
            left_over[tp] -= take
            left -= take
            if left_over[tp] == 0:
                del left_over[tp]
            if left == 0:
                break
    return taken


def _aligned_shares(backlog: Mapping[tuple[str, int], int], paces: Mapping[tuple[str, int], Pace],
                    budget: int) -> dict[tuple[str, int], int]:
    """Shares that take every partition to the same mark T, the highest the budget reaches: a
    partition behind T reads ``records_per_unit * (T - mark)`` (at most what it holds), one already
    past T waits.

    A consumer can apply only what every partition has passed (the resolved ts is their minimum), so
    records read beyond that mark must wait in the job's state. Shared evenly, a partition that
    carries twice the traffic of the others falls ever further behind in time, and what waits grows
    with the backlog; aligned, it stays within about one batch."""
    if sum(backlog.values()) <= budget:
        return dict(backlog)
    # Marks relative to the lowest, in exact integers: TiCDC's ts are near 2**59, where a float steps by 64.
    base = min(paces[tp].mark for tp in backlog)
    relative = {tp: paces[tp].mark - base for tp in backlog}

    def records_to(mark: float) -> dict[tuple[str, int], int]:
        return {
            tp: min(held, int(paces[tp].records_per_unit * max(0.0, mark - relative[tp])))
            for tp, held in backlog.items()
        }

    low, high = 0.0, max(relative[tp] + held / paces[tp].records_per_unit for tp, held in backlog.items())
    for _ in range(64):  # bisection on T: 64 halvings settle it to the float's precision
        middle = (low + high) / 2
        low, high = (middle, high) if sum(records_to(middle).values()) <= budget else (low, middle)
    taken = records_to(low)
    # Rounding down leaves a few records of the budget; they go to the partitions furthest behind.
    left = budget - sum(taken.values())
    for tp in sorted(backlog, key=lambda tp: relative[tp] + taken[tp] / paces[tp].records_per_unit):
        extra = min(left, backlog[tp] - taken[tp])
        taken[tp] += extra
        left -= extra
    return taken
