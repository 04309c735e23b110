"""What a replication batch tells whoever watches it: :class:`BatchProgress` while it runs, and
:class:`BatchReport` when it has committed.

The pipeline only reports; rendering is the caller's (``cdclake replicate``'s live display). Progress
goes to one callable, called from whichever thread moved the batch on (the driver's, a table's worker
thread, or the watcher of the decoding), so it must be quick and thread-safe.

While the executors decode, the records they have read and the row changes they have decoded arrive
through a Spark accumulator, which a task adds to as it ends; no Spark job is added for it. Spark may
run a task again (a lost executor, a dropped cache), so these live counts may run ahead of the truth:
the records read are capped at the batch's size, and the ``ordering`` phase brings exact counts, taken
in the pass that gathers the batch's facts.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Accumulator
    from pyspark.sql import SparkSession

    from cdclake.spark.changes import DecodeTask

# A batch's phases in order: its records read and decoded on the executors, then ordered and planned on
# the driver, its tables written, its state committed.
PHASES = ("reading", "ordering", "applying", "committing")


@dataclass
class BatchReport:
    """What one batch did, for the live display and the logs."""

    batch: int
    records: int = 0
    changes_applied: int = 0
    dead_letters: int = 0
    resolved_ts: int | None = None
    tables: dict[str, int] = field(default_factory=dict)
    writes: int = 0  # of tables' rows (one MERGE or append each in Iceberg), not counting history tables
    lag: dict[tuple[str, int], int] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass(frozen=True)
class BatchProgress:
    """Where batch ``batch`` is: its ``phase`` (:data:`PHASES`); of its ``records``, how many were read
    and how many row changes they decoded into; of the ``tables`` it writes, how many are done, and the
    last one done."""

    batch: int
    phase: str
    records: int
    records_read: int = 0
    changes_decoded: int = 0
    tables: int = 0
    tables_done: int = 0
    last_table: str | None = None


ProgressListener = Callable[[BatchProgress], None]


class ProgressTracker:
    """The progress of the batch under way, each move handed to ``listener`` (None: nobody listens).
    Moves are handed on one at a time, in the order they were made, whatever thread makes them."""

    def __init__(self, listener: ProgressListener | None) -> None:
        self._listener = listener
        self._lock = threading.Lock()
        self._now: BatchProgress | None = None

    def start(self, batch: int, records: int) -> None:
        with self._lock:
            self._now = BatchProgress(batch, "reading", records)
            self._tell(self._now)

    def read(self, records_read: int, changes_decoded: int) -> None:
        """A live count from the executors, ignored once the batch has moved past reading."""
        with self._lock:
            now = self._now
            if now is not None and now.phase == "reading":
                self._now = dataclasses.replace(now, records_read=min(records_read, now.records),
                                                changes_decoded=changes_decoded)
                self._tell(self._now)

    def ordering(self, changes_decoded: int) -> None:
        self._update(lambda now: dataclasses.replace(now, phase="ordering", records_read=now.records,
                                                     changes_decoded=changes_decoded))

    def applying(self, tables: int) -> None:
        self._update(lambda now: dataclasses.replace(now, phase="applying", tables=tables))

    def table_done(self, name: str) -> None:
        self._update(lambda now: dataclasses.replace(now, tables_done=now.tables_done + 1, last_table=name))

    def committing(self) -> None:
        self._update(lambda now: dataclasses.replace(now, phase="committing"))

    def _update(self, change: Callable[[BatchProgress], BatchProgress]) -> None:
        with self._lock:
            assert self._now is not None, "a batch is under way"
            self._now = change(self._now)
            self._tell(self._now)

    def _tell(self, now: BatchProgress) -> None:
        """Under the lock, so that the listener hears the moves in order."""
        if self._listener is not None:
            self._listener(now)


def read_counter(spark: SparkSession) -> Accumulator[tuple[int, int]]:
    """An accumulator of (records read, row changes decoded), added to by :func:`counting` tasks; the
    driver sets it back to (0, 0) for each batch."""
    from pyspark.accumulators import AccumulatorParam

    class Pairs(AccumulatorParam[tuple[int, int]]):
        def zero(self, value: tuple[int, int]) -> tuple[int, int]:
            return (0, 0)

        def addInPlace(self, one: tuple[int, int], other: tuple[int, int]) -> tuple[int, int]:
            return (one[0] + other[0], one[1] + other[1])

    return spark.sparkContext.accumulator((0, 0), Pairs())


def counting(work: Callable[[list[DecodeTask]], Iterator[pa.RecordBatch]], counter: Accumulator[tuple[int, int]]
             ) -> Callable[[list[DecodeTask]], Iterator[pa.RecordBatch]]:
    """``work`` on the executors, adding to ``counter`` the row changes of each Arrow batch it makes and,
    at the end, the records of its tasks' ranges (Spark hands the sums to the driver as the task ends)."""

    def counted(tasks: list[DecodeTask]) -> Iterator[pa.RecordBatch]:
        import pyarrow.compute as pc

        for batch in work(tasks):
            counter.add((0, int(pc.sum(pc.equal(batch.column("kind"), "row")).as_py() or 0)))
            yield batch
        counter.add((sum(task.offset_range.size for task in tasks), 0))

    return counted


@contextmanager
def watching(counter: Accumulator[tuple[int, int]], tracker: ProgressTracker, every_s: float = 0.5
             ) -> Iterator[None]:
    """While the block runs (the decoding), ``counter``'s sums handed to ``tracker`` as they change."""
    stop = threading.Event()

    def watch() -> None:
        seen = (0, 0)
        while not stop.wait(every_s):
            if counter.value != seen:
                seen = counter.value
                tracker.read(*seen)

    watcher = threading.Thread(target=watch, name="cdclake-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
