"""How far a batch goes: the resolved ts of a source with watermarks (:func:`resolve`), the bound of
one without (:func:`unwatermarked_bound`), which changes a batch emits (:func:`emitted`) and the
watermarks or heartbeats it sends (:func:`point_records`); see "Order" in :mod:`cdclake.transcode`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cdclake.model import Heartbeat, Watermark
from cdclake.ordering.resolution import lowest_behind, resolved_ts
from cdclake.transcode.records import _pickled
from cdclake.transcode.spec import _LOGICAL_BITS, TranscodeSpec

if TYPE_CHECKING:
    from cdclake.transcode.state import Progress


# --- how far a batch goes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Resolution:
    """How far a batch goes: its changes at or below ``mark`` go out (those read again, only above the
    previous mark), and the watermarks (heartbeats) ``emit``; ``later`` are announced, not emitted yet."""

    mark: int
    emit: list[int]
    later: list[int]


@dataclass
class BatchFacts:
    """What a batch read beside its changes: per source partition the newest watermark (heartbeat)
    and the newest change ts, every watermark (heartbeat) announced, the ts of rows waiting for their
    schema."""

    marks: dict[tuple[str, int], int] = field(default_factory=dict)
    reads: dict[tuple[str, int], int] = field(default_factory=dict)
    announced: list[int] = field(default_factory=list)
    waiting: list[int | None] = field(default_factory=list)


def resolve(previous: int, newest: Mapping[tuple[str, int], int | None], announced: Iterable[int],
            waiting: Iterable[int | None] = ()) -> Resolution:
    """The resolved ts (:func:`cdclake.ordering.resolution.resolved_ts`) over the source partitions'
    ``newest`` marks (no partition may be without one) and the rows ``waiting`` for their schema (a row
    whose ts the source did not say holds everything), never below ``previous``. ``announced`` are the
    marks the partitions announced so far and not yet emitted; those the new mark passes are emitted."""
    mark = max(resolved_ts(newest.values(), waiting, unknown=previous), previous)
    points = sorted({point for point in announced if point > previous})
    return Resolution(mark, [p for p in points if p <= mark], [p for p in points if p > mark])


def unwatermarked_bound(previous: int, reads: Mapping[tuple[str, int], int | None],
                        behind: set[tuple[str, int]]) -> int:
    """For a source without watermarks, the ts below which every partition has been read: just below
    the lowest newest ts read of the partitions not read to their end
    (:func:`~cdclake.ordering.resolution.lowest_behind`; strictly: changes of one millisecond share a
    derived ts), or, when every partition is read to its end, the newest ts read; never below
    ``previous``. A change read later below the bound (a partition out of order) goes out late, not lost."""
    lagging = lowest_behind(reads, behind)
    bound = lagging - 1 if lagging is not None else max((ts for ts in reads.values() if ts is not None),
                                                         default=previous)
    return max(previous, bound)


def resolve_batch(spec: TranscodeSpec, progress: Progress, facts: BatchFacts, behind: set[tuple[str, int]]
                  ) -> Resolution:
    """Where a batch goes up to: with watermarks, the resolved ts (:func:`resolve`); without, the bound of
    :func:`unwatermarked_bound`, and the heartbeats every partition passed that it covers."""
    marks: dict[tuple[str, int], int | None] = {}
    reads: dict[tuple[str, int], int | None] = {}
    for tp, known in progress.partitions.items():
        marks[tp] = _newest(known.newest_mark, facts.marks.get(tp))
        reads[tp] = _newest(known.newest_read, facts.reads.get(tp))
    announced = [*progress.points, *facts.announced]
    if spec.resolves:
        return resolve(progress.mark, marks, announced, facts.waiting)
    bound = unwatermarked_bound(progress.mark, reads, behind)
    heartbeats = resolve(progress.point_mark, marks, announced)
    covered = [ms for ms in heartbeats.emit if (ms << _LOGICAL_BITS) - 1 <= bound]
    return Resolution(bound, covered, sorted({*heartbeats.later, *(ms for ms in heartbeats.emit if ms not in covered)}))


def _newest(*values: int | None) -> int | None:
    present = [value for value in values if value is not None]
    return max(present) if present else None


def point_records(spec: TranscodeSpec, points: Iterable[int]) -> list[tuple[int, bytes]]:
    """The target events for the points a batch emits, as ``(ts, payload)``: a watermark at each
    resolved ts for a target that carries watermarks; for a source without watermarks, a heartbeat at
    each millisecond every partition passed, for a target that carries heartbeats; else nothing."""
    if spec.resolves:
        if not spec.target.carries_watermarks():
            return []
        return [(ts, _pickled(Watermark(ts))) for ts in points]
    if not spec.target_carries_heartbeats:
        return []
    return [(ms << _LOGICAL_BITS, _pickled(Heartbeat(ms))) for ms in points]


def emitted(spec: TranscodeSpec, previous: int, mark: int, ts: int, read_before: bool) -> bool:
    """Whether a batch emits a change (see :class:`Resolution`): at or below the mark; of those read in
    an earlier batch, only the ones above the previous mark, the rest went out then. A change read for
    the first time below the previous mark is, with watermarks, a copy a producer restart re-sent; without
    them, a late change, which goes out late."""
    return ts <= mark and (ts > previous or not (spec.resolves or read_before))
