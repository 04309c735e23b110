"""The simulated producer: a workload's commits laid out on a topic by the producer rules
(:mod:`cdclake.producer`), round by round, with the producer's watermarks and restarts.

* **Watermarks**, where the format has them (or heartbeats in their place), each
  ``watermark_interval_ms`` of the upstream's clock (TiCDC: every second), with a ts at or just above
  the last commit sent (never reaching the next), and, unless ``final_watermark=False``, once more
  after the last commit, so that the whole stream resolves. Canal-JSON without the TiDB extension has
  none.
* **At-least-once**: each of ``duplicates`` times, the producer restarts from its checkpoint, the last
  watermark every partition has: on each partition, the messages it had sent since then (any number,
  zero for some, never splitting a DataWorks update pair) are sent again, then the stream goes on.

:class:`Production` drives the :class:`~cdclake.producer.Router` with a workload's commits, round by
round (the commits between two watermarks), so a long workload streams through :func:`messages`
without being held in memory; :func:`produce` collects a :class:`Stream`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from cdclake.claimcheck import decoder_for
from cdclake.formats.base import Decoder, Encoder
from cdclake.model import Origin, RawMessage, Watermark
from cdclake.producer import Placed, ProducerSpec, Router
from cdclake.workload.generator import Commit, Workload, physical_ms


@dataclass(frozen=True, slots=True)
class ResentRange:
    """Messages a restart sent again: offsets ``first_offset`` .. ``first_offset + count - 1`` of the
    partition, repeated right after them, at ``first_offset + count`` onwards."""

    partition: int
    first_offset: int
    count: int


class Production:
    """One run of the producer; :meth:`messages` yields the messages, and once they are all out,
    ``watermarks`` holds the ts of every watermark round and ``resent`` every re-sent range."""

    def __init__(self, workload: Workload, spec: ProducerSpec) -> None:
        self.workload, self.spec = workload, spec
        self.codec_options = spec.codec_options()
        self.watermarks: list[int] = []
        self.resent: list[ResentRange] = []
        self._router = Router(spec, workload.initial_schemas())
        self._watermarks = spec.carries_watermarks()
        # Apart, so that the same stream with and without restarts differs only by the re-sent messages.
        self._watermark_rng = random.Random(f"watermarks-{workload.spec.seed}")
        self._restart_rng = random.Random(f"restarts-{workload.spec.seed}")
        self._encoders: list[Encoder] = [spec.codec.encoder(self.codec_options) for _ in range(spec.partitions)]
        self._offsets = [0] * spec.partitions
        self._restarts_due = 0

    def messages(self) -> Iterator[RawMessage]:
        spec = self.spec
        restart_points = self._restart_points()
        round_events: Placed = [[] for _ in range(spec.partitions)]
        round_start_ms = 0
        last_ts: int | None = None
        for index, commit in enumerate(self.workload.commits()):
            ms = physical_ms(commit.commit_ts)
            if last_ts is None:
                round_start_ms = ms
            elif ms >= round_start_ms + spec.watermark_interval_ms:
                yield from self._close_round(round_events, last_ts, watermark=True)
                round_events = [[] for _ in range(spec.partitions)]
                round_start_ms = ms
            while restart_points and restart_points[-1] == index:
                restart_points.pop()
                self._restarts_due += 1
            self._route(commit, round_events)
            last_ts = commit.commit_ts
        if last_ts is not None:
            yield from self._close_round(round_events, last_ts, watermark=spec.final_watermark)

    def _restart_points(self) -> list[int]:
        """Commit indexes (descending, to pop) whose round restarts; spread over the transactions."""
        commits = max(1, self.workload.spec.transactions)
        count = min(self.spec.duplicates, commits)
        return sorted(self._restart_rng.sample(range(commits), count), reverse=True)

    def _route(self, commit: Commit, events: Placed) -> None:
        if commit.ddl is not None:
            self._router.route_ddl(commit.ddl, events)
            return
        for row in commit.rows:
            self._router.route_row(row, events)

    # --- a round: encode, restart, number ---

    def _close_round(self, events: Placed, last_ts: int, watermark: bool) -> Iterator[RawMessage]:
        sent_ms = physical_ms(last_ts)
        if watermark and self._watermarks:
            # At the last commit's ts or a little above, never reaching the next commit's millisecond.
            ts = last_ts + self._watermark_rng.randrange(3)
            self.watermarks.append(ts)
            self._router.broadcast(Watermark(ts), events)
        encoded = [self._router.encode(self._encoders[partition], partition_events)
                   for partition, partition_events in enumerate(events)]
        cuts = self._restart_cuts(encoded) if self._restarts_due else [0] * len(encoded)
        for partition, ((messages, _), cut) in enumerate(zip(encoded, cuts, strict=True)):
            if cut:
                self.resent.append(ResentRange(partition, self._offsets[partition], cut))
            for message in (*messages[:cut], *messages):
                yield self._placed(partition, message, sent_ms)

    def _restart_cuts(self, encoded: list[tuple[list[RawMessage], list[int]]]) -> list[int]:
        """How many of each partition's round messages had been sent when the producer restarted: any
        allowed cut, and at least one on a partition that has messages."""
        rng = self._restart_rng
        cuts = [rng.choice([0, *allowed]) for _, allowed in encoded]
        busy = [partition for partition, (_, allowed) in enumerate(encoded) if allowed]
        if not busy:
            return cuts
        self._restarts_due -= 1
        if not any(cuts):
            chosen = rng.choice(busy)
            cuts[chosen] = rng.choice(encoded[chosen][1])
        return cuts

    def _placed(self, partition: int, message: RawMessage, sent_ms: int) -> RawMessage:
        offset = self._offsets[partition]
        self._offsets[partition] = offset + 1
        origin = Origin(topic=self.spec.topic, partition=partition, offset=offset)
        return RawMessage(message.key, message.value, origin, sent_ms, message.headers)


@dataclass
class Stream:
    """A produced topic held in memory: every partition's messages in offset order."""

    spec: ProducerSpec
    codec_options: dict[str, Any]
    partitions: dict[int, list[RawMessage]]
    watermarks: list[int]
    resent: list[ResentRange]

    @classmethod
    def collect(cls, workload: Workload, spec: ProducerSpec) -> Stream:
        production = Production(workload, spec)
        partitions: dict[int, list[RawMessage]] = {p: [] for p in range(spec.partitions)}
        for message in production.messages():
            assert message.origin is not None and message.origin.partition is not None
            partitions[message.origin.partition].append(message)
        return cls(spec, production.codec_options, partitions, production.watermarks, production.resent)

    @property
    def topic(self) -> str:
        return self.spec.topic

    def __iter__(self) -> Iterator[RawMessage]:
        for partition in sorted(self.partitions):
            yield from self.partitions[partition]

    def __len__(self) -> int:
        return sum(len(messages) for messages in self.partitions.values())

    def decoder(self) -> Decoder:
        """A decoder of this stream's format and options, for one partition (claim-check references read
        from the storage the options name)."""
        return decoder_for(self.spec.codec, self.codec_options)

    def starting_at(self, offsets: Mapping[int, int]) -> Stream:
        """The stream as a consumer that joins at ``offsets`` (partition -> first offset read) sees it."""
        partitions = {p: messages[offsets.get(p, 0):] for p, messages in self.partitions.items()}
        return replace(self, partitions=partitions)

    def lines(self) -> list[str]:
        sizes = ", ".join(f"{len(self.partitions[p])}" for p in sorted(self.partitions))
        resent = sum(r.count for r in self.resent)
        return [
            f"{self.spec.format_name} on {self.topic}: {len(self)} messages in {len(self.partitions)} partitions "
            f"({sizes})",
            f"{len(self.watermarks)} watermark rounds; {resent} messages re-sent in {len(self.resent)} ranges",
        ]


def produce(workload: Workload, format_name: str, options: Mapping[str, Any] | None = None,
            **producer: Any) -> Stream:
    """The workload's stream in ``format_name``, held in memory. ``producer`` takes the other fields of
    :class:`ProducerSpec`: ``partitions``, ``topic``, ``dispatcher``, ``duplicates``, ``final_watermark`` ..."""
    return Stream.collect(workload, ProducerSpec(format_name, dict(options or {}), **producer))


def messages(workload: Workload, format_name: str, options: Mapping[str, Any] | None = None,
             **producer: Any) -> Iterator[RawMessage]:
    """The same messages as :func:`produce`, yielded round by round rather than held: for workloads too
    large to keep. Each message's origin names its partition and offset."""
    return Production(workload, ProducerSpec(format_name, dict(options or {}), **producer)).messages()
