"""What a transcode keeps in its state directory: the progress a batch leaves for the next
(``progress.json``, :class:`Progress`), which makes the job resumable, and the dead letters of each
batch (``dead-letters/``, :class:`DeadLetter`)."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from cdclake.model import Origin, RawMessage
from cdclake.ordering.resolution import newest_schema_versions
from cdclake.sources.ranges import OffsetRange
from cdclake.transcode.resolution import BatchFacts, _newest
from cdclake.transcode.spec import TranscodeError

PROGRESS_FILE = "progress.json"
DEAD_LETTERS_DIR = "dead-letters"


# --- progress: what a batch leaves for the next ---------------------------------------------------------


@dataclass
class PartitionProgress:
    """A source partition: the next batch reads from ``resume`` (again up to ``read_until``, where the
    last batch stopped, then on); ``newest_mark`` is the newest watermark ts (or DataWorks heartbeat
    millisecond) it announced, ``newest_read`` the newest commit ts (or ts derived) of a change read."""

    resume: int
    read_until: int
    newest_mark: int | None = None
    newest_read: int | None = None


@dataclass(frozen=True)
class Prime:
    """A message that defines a table schema (a Simple BOOTSTRAP or DDL) before a partition's ``resume``:
    the next batch's decoder reads it first."""

    message: RawMessage
    database: str
    table: str
    version: int | None


@dataclass(frozen=True)
class Plan:
    """A batch under way: what it reads, where each source partition ended and where each target
    partition ended before it wrote."""

    batch: int
    ranges: list[OffsetRange]
    target_ends: dict[int, int]
    source_ends: dict[tuple[str, int], int] = field(default_factory=dict)

    def behind(self) -> set[tuple[str, int]]:
        """The source partitions this batch does not read to their end."""
        ends = {(r.topic, r.partition): r.end for r in self.ranges}
        return {tp for tp, high in self.source_ends.items() if ends.get(tp, high) < high}


@dataclass
class Progress:
    """Everything a transcode keeps between batches, in ``progress.json`` of its state directory.

    A batch first saves its :class:`Plan`, then writes its output, then saves the progress after it
    with no plan. A batch found planned was interrupted: it runs again over the same ranges from the
    same progress, so it lays out the same messages, and writes only those past what each target
    partition had received (``target_ends``)."""

    settings: dict[str, Any]
    batch: int = 0
    partitions: dict[tuple[str, int], PartitionProgress] = field(default_factory=dict)
    mark: int = 0
    point_mark: int = 0
    points: list[int] = field(default_factory=list)
    primes: dict[tuple[str, int], list[Prime]] = field(default_factory=dict)
    router: dict[str, Any] | None = None
    derived: dict[str, Any] = field(default_factory=dict)
    plan: Plan | None = None
    written: int = 0

    # ``mark``: the changes at or below it are out (see :func:`~cdclake.transcode.resolution.resolve_batch`);
    # ``point_mark``: the newest watermark ts (heartbeat millisecond) emitted; ``points``: those announced
    # above it, not emitted yet.

    def note(self, facts: BatchFacts) -> None:
        """Remember the newest watermark (heartbeat) and change ts each partition announced in a batch."""
        for tp, known in self.partitions.items():
            known.newest_mark = _newest(known.newest_mark, facts.marks.get(tp))
            known.newest_read = _newest(known.newest_read, facts.reads.get(tp))

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": self.settings,
            "batch": self.batch,
            "partitions": [[topic, partition, p.resume, p.read_until, p.newest_mark, p.newest_read]
                           for (topic, partition), p in sorted(self.partitions.items())],
            "mark": self.mark,
            "point_mark": self.point_mark,
            "points": self.points,
            "primes": [[topic, partition, *_message_to_json(prime.message), prime.database, prime.table, prime.version]
                       for (topic, partition), primes in sorted(self.primes.items()) for prime in primes],
            "router": self.router,
            "derived": self.derived,
            "plan": None if self.plan is None else {
                "batch": self.plan.batch,
                "ranges": [[r.topic, r.partition, r.start, r.end] for r in self.plan.ranges],
                "target_ends": [[partition, end] for partition, end in sorted(self.plan.target_ends.items())],
                "source_ends": [[topic, partition, end] for (topic, partition), end in
                                sorted(self.plan.source_ends.items())],
            },
            "written": self.written,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Progress:
        primes: dict[tuple[str, int], list[Prime]] = {}
        for topic, partition, offset, key, value, timestamp_ms, database, table, version in obj["primes"]:
            message = _message_from_json(topic, partition, offset, key, value, timestamp_ms)
            primes.setdefault((topic, partition), []).append(Prime(message, database, table, version))
        plan = obj["plan"]
        return cls(
            settings=obj["settings"],
            batch=obj["batch"],
            partitions={(topic, partition): PartitionProgress(*positions)
                        for topic, partition, *positions in obj["partitions"]},
            mark=obj["mark"],
            point_mark=obj["point_mark"],
            points=list(obj["points"]),
            primes=primes,
            router=obj["router"],
            derived=obj["derived"],
            plan=None if plan is None else Plan(plan["batch"], [OffsetRange(*r) for r in plan["ranges"]],
                                                dict(plan["target_ends"]),
                                                {(topic, partition): end for topic, partition, end in
                                                 plan["source_ends"]}),
            written=obj["written"],
        )

    @classmethod
    def load(cls, directory: Path, settings: Mapping[str, Any]) -> Progress:
        """The progress kept in ``directory``, or a fresh one; refuses one made with other settings."""
        path = Path(directory) / PROGRESS_FILE
        if not path.exists():
            return cls(dict(settings))
        try:
            progress = cls.from_json(orjson.loads(path.read_bytes()))
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise TranscodeError(f"{path}: not a transcode progress file: {exc}") from exc
        if progress.settings != settings:
            raise TranscodeError(f"{path} was made by a transcode with other settings ({progress.settings}); this one "
                                 f"has {dict(settings)}: give another state directory, or the same settings")
        return progress

    def save(self, directory: Path) -> None:
        """Write the progress durably and atomically: a crash leaves the old file or the new one."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        _write_durably(directory / PROGRESS_FILE, orjson.dumps(self.to_json()))


def _message_to_json(message: RawMessage) -> list[Any]:
    assert message.origin is not None
    return [message.origin.offset, _b64(message.key), _b64(message.value), message.timestamp_ms]


def _message_from_json(topic: str, partition: int, offset: int, key: str | None, value: str | None,
                       timestamp_ms: int | None) -> RawMessage:
    return RawMessage(_unb64(key), _unb64(value), Origin(topic=topic, partition=partition, offset=offset), timestamp_ms)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _write_durably(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    descriptor = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def kept_primes(primes: Iterable[Prime], versions_kept: int = 2) -> list[Prime]:
    """The schema messages a partition keeps carrying (:func:`~cdclake.ordering.resolution.newest_schema_versions`),
    the first read of each version."""
    by_offset = sorted(primes, key=lambda p: p.message.origin.offset or 0 if p.message.origin else 0)
    return newest_schema_versions(by_offset, lambda p: (p.database, p.table, p.version), versions_kept)


def prime_of(record: Mapping[str, Any]) -> Prime:
    """A ``prime`` record as the schema message it keeps."""
    origin = Origin(topic=record["topic"], partition=record["partition"], offset=record["offset"])
    message = RawMessage(record["raw_key"], record["raw_value"], origin, record["timestamp_ms"])
    return Prime(message, record["database"], record["table"], record["version"])


# --- dead letters: what a batch could not transcode -----------------------------------------------------


@dataclass(frozen=True)
class DeadLetter:
    """A source message that could not be transcoded (or one change of it the target cannot carry), where it
    came from, and why; the raw message where it is at hand."""

    origin: Origin | None
    reason: str
    key: bytes | None = None
    value: bytes | None = None
    timestamp_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        origin = self.origin or Origin()
        return {"topic": origin.topic, "partition": origin.partition, "offset": origin.offset, "index": origin.index,
                "timestamp": self.timestamp_ms, "key": _b64(self.key), "value": _b64(self.value),
                "reason": self.reason}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> DeadLetter:
        origin = Origin(topic=obj["topic"], partition=obj["partition"], offset=obj["offset"], index=obj["index"])
        return cls(origin, obj["reason"], _unb64(obj["key"]), _unb64(obj["value"]), obj["timestamp"])


def write_dead_letters(directory: Path, batch: int, letters: Iterable[DeadLetter]) -> Path | None:
    """A batch's dead letters (messages it could not transcode, raw, with the reason), one JSON object a
    line (:meth:`DeadLetter.to_json`) in ``dead-letters/<batch>.jsonl``; written whole again if the batch
    runs again."""
    lines = [orjson.dumps(letter.to_json()) for letter in letters]
    if not lines:
        return None
    folder = Path(directory) / DEAD_LETTERS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{batch:08d}.jsonl"
    _write_durably(path, b"\n".join(lines) + b"\n")
    return path


def dead_letter_of(record: Mapping[str, Any]) -> DeadLetter:
    """An ``error`` record as the dead letter it stands for."""
    origin = Origin(topic=record["topic"], partition=record["partition"], offset=record["offset"])
    return DeadLetter(origin, record["reason"], record["raw_key"], record["raw_value"], record["timestamp_ms"])
