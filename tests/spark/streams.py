"""Surgery on produced streams for the reliability proofs: what an at-least-once producer delivers, and
malformed messages mixed into good traffic.

Both work on a stream's partitions (partition -> messages in offset order) and say what they did, so
that a test can check it did something and the soak can report how much the job coped with. A
message's offset is its position in its partition's list; :func:`placed` writes that into every origin,
as the captured topic written from the lists (:func:`write`) will give it back.

At-least-once disorder is what TiCDC's producer may deliver, and never more:

* a range of a partition delivered again right after itself (the producer restarted from an older
  checkpoint);
* single messages delivered twice on several partitions, the copy up to a few messages later (a send
  retried);
* a watermark delivered late: moved later in its partition (what it promises still holds there, since
  only changes above it followed it);
* an older watermark delivered again after newer ones.

A watermark never moves earlier and no change is dropped: either would make a lie of the stream, not
an at-least-once delivery of it.

A malformed message is a mutant of a message of the stream, made by the decoders' fuzzers
(:func:`tests.fuzzing.mutate`, one kind at a time; for Open Protocol also one event of a batch mutated
and framed again, as its fuzz test does), and kept only if its decoder refuses it both in sequence
(after every earlier message of its partition) and at the start of a batch (a fresh decoder given the
partition's schema messages, as the job primes one): a mutant that still decodes is a different but
valid change, not bad input.
"""

from __future__ import annotations

import contextlib
import random
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cdclake.errors import DecodeError
from cdclake.formats import get_codec
from cdclake.formats.base import Decoder
from cdclake.formats.open_protocol.wire import split_batch
from cdclake.model import Bootstrap, Ddl, Origin, RawMessage, Watermark
from cdclake.sources.captured import CapturedTopicWriter
from cdclake.workload import Stream
from tests.fuzzing import MUTATIONS, mutate

Partitions = dict[int, list[RawMessage]]
OPEN_EVENT = "open-event"  # one event inside an Open Protocol batch mutated, the batch framed again


def copied(partitions: Mapping[int, list[RawMessage]]) -> Partitions:
    return {partition: list(messages) for partition, messages in partitions.items()}


def placed(topic: str, partitions: Mapping[int, list[RawMessage]]) -> Partitions:
    """The messages with the origins a captured topic written from these lists gives them back."""
    return {partition: [replace(message, origin=Origin(topic=topic, partition=partition, offset=offset))
                        for offset, message in enumerate(messages)]
            for partition, messages in partitions.items()}


def write(root: Path, topic: str, partitions: Mapping[int, list[RawMessage]]) -> None:
    """Append each partition's messages to the captured topic ``topic`` under ``root``."""
    with CapturedTopicWriter(root, topic) as writer:
        for partition, messages in sorted(partitions.items()):
            for message in messages:
                writer.append(partition, message.key, message.value, message.timestamp_ms, message.headers)


def decoded_in_order(format_name: str, options: Mapping[str, Any],
                     partitions: Mapping[int, list[RawMessage]]) -> Iterator[tuple[int, RawMessage, list[Any]]]:
    """(partition, message, its events) for every message, each partition by one decoder in order."""
    for partition in sorted(partitions):
        decoder = get_codec(format_name).decoder(options)
        for message in partitions[partition]:
            yield partition, message, decoder.decode(message)


# --- at-least-once ------------------------------------------------------------------------------------


@dataclass
class Disorder:
    """How much at-least-once disorder was put into a stream."""

    redelivered_ranges: int = 0
    redelivered_messages: int = 0
    duplicated_messages: int = 0
    duplicate_partitions: set[int] = field(default_factory=set)
    delayed_watermarks: int = 0
    repeated_watermarks: int = 0

    def lines(self) -> list[str]:
        return [
            f"{self.redelivered_messages} messages re-delivered in {self.redelivered_ranges} ranges",
            f"{self.duplicated_messages} single messages delivered twice on "
            f"{len(self.duplicate_partitions)} partitions",
            f"{self.delayed_watermarks} watermarks delivered late, {self.repeated_watermarks} delivered again "
            "after newer ones",
        ]


class AtLeastOnce:
    """A stream's partitions, disordered step by step as an at-least-once producer may deliver them."""

    def __init__(self, stream: Stream, seed: int) -> None:
        self.partitions = copied(stream.partitions)
        self.disorder = Disorder()
        self._rng = random.Random(seed)
        self._codec, self._options = get_codec(stream.spec.format_name), stream.codec_options

    def redeliver_ranges(self, per_partition: int, longest: int) -> None:
        """On every partition, ``per_partition`` times, up to ``longest`` messages delivered again."""
        for messages in self.partitions.values():
            for _ in range(per_partition):
                if not messages:
                    continue
                start = self._rng.randrange(len(messages))
                end = min(len(messages), start + self._rng.randint(1, longest))
                messages[end:end] = messages[start:end]
                self.disorder.redelivered_ranges += 1
                self.disorder.redelivered_messages += end - start

    def duplicate_messages(self, count: int, window: int) -> None:
        """``count`` messages, taken from the partitions in turn, each delivered again up to ``window``
        messages after itself."""
        order = [p for p in sorted(self.partitions) if self.partitions[p]]
        for number in range(count):
            partition = order[number % len(order)]
            messages = self.partitions[partition]
            at = self._rng.randrange(len(messages))
            copy_at = min(len(messages), at + 1 + self._rng.randrange(window))
            messages.insert(copy_at, messages[at])
            self.disorder.duplicated_messages += 1
            self.disorder.duplicate_partitions.add(partition)

    def delay_watermarks(self, count: int, by: int) -> None:
        """``count`` watermarks, each moved up to ``by`` messages later in its partition."""
        for partition, at in self._watermarks(count):
            messages = self.partitions[partition]
            watermark = messages.pop(at)
            messages.insert(min(len(messages), at + self._rng.randint(1, by)), watermark)
            self.disorder.delayed_watermarks += 1

    def repeat_watermarks(self, count: int) -> None:
        """``count`` watermarks, each delivered again anywhere after itself, newer watermarks between."""
        for partition, at in self._watermarks(count):
            messages = self.partitions[partition]
            messages.insert(self._rng.randint(at + 1, len(messages)), messages[at])
            self.disorder.repeated_watermarks += 1

    def _watermarks(self, count: int) -> list[tuple[int, int]]:
        found = [(p, i) for p, messages in sorted(self.partitions.items())
                 for i, message in enumerate(messages) if self._only_watermarks(message)]
        # Highest positions first: moving one does not shift the others still to move.
        return sorted(self._rng.sample(found, min(count, len(found))), reverse=True)

    def _only_watermarks(self, message: RawMessage) -> bool:
        try:
            events = self._codec.decoder(self._options).decode(message)
        except DecodeError:
            return False
        return bool(events) and all(isinstance(e, Watermark) for e in events)


def far_behind(partitions: Mapping[int, list[RawMessage]], partition: int, kept: int) -> tuple[Partitions, Partitions]:
    """The stream cut in two deliveries: first every partition whole but ``partition``, of which only its
    first ``kept`` messages; then the rest of ``partition``."""
    first = copied(partitions)
    first[partition] = first[partition][:kept]
    return first, {partition: list(partitions[partition][kept:])}


# --- malformed messages -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Malformed:
    """A malformed message mixed into a stream: its kind of mutation, the message where it lands, and
    what its decoder says of it in sequence and at a batch's start (one or two texts)."""

    kind: str
    message: RawMessage
    reasons: frozenset[str]

    @property
    def coordinates(self) -> tuple[int | None, int | None]:
        return self.message.origin.partition, self.message.origin.offset


def malformed_kinds(format_name: str) -> tuple[str, ...]:
    return (*MUTATIONS, OPEN_EVENT) if format_name == "open" else MUTATIONS


def random_slots(stream: Stream, per_kind: int, seed: int) -> list[tuple[int, int, str]]:
    """``per_kind`` places for a malformed message of every kind the fuzzers know, each (partition,
    position among the partition's messages, kind), at random."""
    rng = random.Random(seed)
    slots = []
    for kind in malformed_kinds(stream.spec.format_name):
        for _ in range(per_kind):
            partition = rng.choice(sorted(stream.partitions))
            slots.append((partition, rng.randint(0, len(stream.partitions[partition])), kind))
    return slots


def mix_malformed(stream: Stream, slots: list[tuple[int, int, str]], seed: int, attempts: int = 2000
                  ) -> tuple[Partitions, list[Malformed]]:
    """The stream with a malformed message of the kind each slot names before the message at its
    position (after the last, at the partition's length); the partitions placed (origins set), and the
    malformed messages."""
    rng = random.Random(seed)
    format_name, options, topic = stream.spec.format_name, stream.codec_options, stream.topic
    codec = get_codec(format_name)
    seeds = list(stream)
    primes = _schema_messages(format_name, options, stream.partitions)
    layout: Partitions = {}
    malformed: list[Malformed] = []
    for partition, good in sorted(stream.partitions.items()):
        inserts = sorted((at, kind) for p, at, kind in slots if p == partition)
        messages: list[RawMessage] = []
        for index in range(len(good) + 1):
            while inserts and inserts[0][0] == index:
                kind = inserts.pop(0)[1]
                origin = Origin(topic=topic, partition=partition, offset=len(messages))
                contexts = (primes[partition], messages)  # at a batch's start; in sequence
                found = _refused_mutant(kind, seeds, origin, lambda: codec.decoder(options), contexts, rng, attempts)
                malformed.append(found)
                messages.append(found.message)
            if index < len(good):
                messages.append(good[index])
        layout[partition] = messages
    return placed(topic, layout), malformed


def _schema_messages(format_name: str, options: Mapping[str, Any],
                     partitions: Mapping[int, list[RawMessage]]) -> dict[int, list[RawMessage]]:
    """Per partition, the messages that define a schema (BOOTSTRAPs, DDLs): those the job carries from
    batch to batch to prime its decoders."""
    found: dict[int, list[RawMessage]] = {p: [] for p in partitions}
    for partition, message, events in decoded_in_order(format_name, options, partitions):
        if any(isinstance(e, (Bootstrap, Ddl)) for e in events):
            found[partition].append(message)
    return found


def _decode_quietly(decoder: Decoder, message: RawMessage) -> None:
    with contextlib.suppress(DecodeError):
        decoder.decode(message)


def _refused_mutant(kind: str, seeds: list[RawMessage], origin: Origin, decoder: Callable[[], Decoder],
                    contexts: tuple[list[RawMessage], ...], rng: random.Random, attempts: int) -> Malformed:
    """A mutant of one of ``seeds`` at ``origin`` that a decoder refuses after each of ``contexts``."""
    for _ in range(attempts):
        seed = rng.choice(seeds)
        candidate = RawMessage(seed.key, seed.value, origin, seed.timestamp_ms, seed.headers)
        candidate = _open_event_mutant(candidate, rng) if kind == OPEN_EVENT else replace(
            candidate, value=mutate(seed.value or b"", rng, kind))
        reasons = set()
        for context in contexts:
            reason = _refusal(decoder(), context, candidate)
            if reason is None:
                break
            reasons.add(reason)
        else:
            return Malformed(kind, candidate, frozenset(reasons))
    raise AssertionError(f"no {kind} mutant of {len(seeds)} messages was refused in {attempts} attempts")


def _refusal(decoder: Decoder, context: list[RawMessage], candidate: RawMessage) -> str | None:
    """What ``decoder`` says of ``candidate`` after ``context``; None if it decodes it."""
    for message in context:
        _decode_quietly(decoder, message)
    try:
        decoder.decode(candidate)
    except DecodeError as exc:
        return str(exc)
    return None


def _open_event_mutant(message: RawMessage, rng: random.Random) -> RawMessage:
    """One event's key or value JSON mutated inside the batch, the batch framed again: a mutation that
    gets past the framing to the JSON."""
    events = [list(pair) for pair in split_batch(message.key, message.value)]
    event = rng.choice(events)
    side = rng.randrange(2)
    event[side] = mutate(event[side], rng)
    assert message.key is not None
    key = message.key[:8] + b"".join(_framed(k) for k, _ in events)
    return replace(message, key=key, value=b"".join(_framed(v) for _, v in events))


def _framed(data: bytes) -> bytes:
    return struct.pack(">Q", len(data)) + data
