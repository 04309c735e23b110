"""A stream held in memory, transcoded in this process as one batch (:func:`transcode_messages`): the
reference the Spark job (:mod:`cdclake.spark.transcode`) is tested against."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from cdclake.model import Origin, RawMessage
from cdclake.producer import Router
from cdclake.sources.ranges import OffsetRange, PartitionExtent, SourceRecord
from cdclake.transcode.layout import lay_out
from cdclake.transcode.records import (
    CHANGE,
    ERROR,
    HEARTBEAT,
    ORDER,
    PENDING,
    POINT_RANK,
    SCHEMA,
    WATERMARK,
    ReadTask,
    read_records,
)
from cdclake.transcode.resolution import BatchFacts, emitted, point_records, resolve_batch
from cdclake.transcode.spec import TranscodeSpec
from cdclake.transcode.state import DeadLetter, PartitionProgress, Progress, dead_letter_of


class MessageSource:
    """Messages held in memory as a :class:`~cdclake.sources.ranges.Source`: ``{(topic, partition):
    [messages in offset order]}``, each message's origin naming its offset."""

    def __init__(self, partitions: Mapping[tuple[str, int], Sequence[RawMessage]]) -> None:
        self.partitions = partitions

    def extents(self) -> dict[tuple[str, int], PartitionExtent]:
        extents = {}
        for tp, messages in self.partitions.items():
            offsets = [m.origin.offset for m in messages if m.origin is not None and m.origin.offset is not None]
            extents[tp] = PartitionExtent(min(offsets, default=0), max(offsets, default=-1) + 1)
        return extents

    def records(self, offset_range: OffsetRange) -> Iterator[SourceRecord]:
        for message in self.partitions[(offset_range.topic, offset_range.partition)]:
            offset = message.origin.offset if message.origin is not None else None
            if offset is not None and offset_range.start <= offset < offset_range.end:
                yield offset, message.timestamp_ms, message.key, message.value, message.headers


@dataclass
class Transcoded:
    """A transcoded topic held in memory: each target partition's messages (origins name the target
    topic, partition and offset), and what could not be transcoded."""

    partitions: dict[int, list[RawMessage]]
    dead_letters: list[DeadLetter]


def transcode_messages(spec: TranscodeSpec, partitions: Mapping[tuple[str, int], Sequence[RawMessage]]) -> Transcoded:
    """A whole stream held in memory, transcoded in this process as one batch: the reference the Spark
    job is held to, which writes the same events whatever its batches (and the same bytes from a source
    with watermarks, whose batches end at a watermark). Changes above the last resolved ts are left out."""
    source = MessageSource(partitions)
    extents = source.extents()
    tasks = [ReadTask(OffsetRange(topic, partition, extent.low, extent.high))
             for (topic, partition), extent in sorted(extents.items())]
    records = [row for batch in read_records(spec, source, tasks) for row in batch.to_pylist()]
    progress = Progress(spec.settings(), partitions={tp: PartitionProgress(e.low, e.low) for tp, e in extents.items()})
    facts = BatchFacts()
    mark_kind = WATERMARK if spec.resolves else HEARTBEAT
    for record in records:
        tp = (record["topic"], record["partition"])
        if record["kind"] == mark_kind:
            facts.marks[tp] = max(facts.marks.get(tp, record["ts"]), record["ts"])
            facts.announced.append(record["ts"])
        elif record["kind"] == CHANGE:
            facts.reads[tp] = max(facts.reads.get(tp, record["ts"]), record["ts"])
        elif record["kind"] == PENDING:
            facts.waiting.append(record["ts"])
    resolution = resolve_batch(spec, progress, facts, behind=set())
    emitted_records = [r for r in records if r["kind"] == SCHEMA or (
        r["kind"] == CHANGE and emitted(spec, 0, resolution.mark, r["ts"], read_before=False))]
    points = [{"ts": ts, "rank": POINT_RANK, "sequence": "", "topic": "", "partition": -1, "offset": -1, "index": 0,
               "piece": 0, "target": -1, "identity": None, "payload": payload}
              for ts, payload in point_records(spec, resolution.emit)]
    every_row = Router(spec.target).sees_every_row
    output = Transcoded({}, [dead_letter_of(r) for r in records if r["kind"] == ERROR])
    for partition in range(spec.target.partitions):
        mine = []
        for record in [*emitted_records, *points]:
            if record["target"] in (partition, -1):
                mine.append(record)
            elif every_row and record["stub"] is not None:
                mine.append({**record, "payload": record["stub"]})
        mine.sort(key=lambda r: tuple(r[name] for name in ORDER))
        layout = lay_out(spec, partition, None, None, [
            (r["ts"], r["rank"], r["sequence"], r["target"], r["identity"], r["payload"]) for r in mine])
        output.partitions[partition] = [
            RawMessage(m.key, m.value, Origin(spec.target.topic, partition, offset), m.timestamp_ms, m.headers)
            for offset, m in enumerate(layout.messages)]
        output.dead_letters += layout.rejected
    return output
