"""The producer: a workload's commits laid out on a topic's partitions as each format's producer does.

Rules (shared/specs, ticdc-reference-notes.md §1.0, §1.3):

* **Rows** go to a partition by their key (TiCDC's ``index-value`` dispatcher: a hash of the database,
  table, key column names and values), so every change of one key lands in one partition, in commit
  order; a table without a key goes whole to one partition (``table`` dispatcher), as does every table
  with ``dispatcher="table"`` (TiCDC's default). TiCDC's own hash function is not reproduced; the
  partition of a key is a CRC-32 of the same inputs.
* **An UPDATE that changes the key** is split into a DELETE of the old key and an INSERT of the new
  one, each sent to its own key's partition, as TiCDC does for message-queue sinks unless
  ``output-raw-change-event`` is set (``output_raw_change_event=True``, allowed only with the ``table``
  dispatcher, where both keys share a partition).
* **DDL** goes to every partition for Open Protocol and the Simple protocol, and to partition 0 for
  Canal-JSON (TiCDC) and DataWorks (whose documentation says nothing; one partition spares its
  consumers duplicates they could not tell apart without a commit ts).
* **Watermarks** (Open's resolved events, Canal-JSON's ``TIDB_WATERMARK`` with
  ``enable-tidb-extension``, Simple's ``WATERMARK``, DataWorks' ``MHEARTBEAT``) go to every partition
  each ``watermark_interval_ms`` of the upstream's clock (TiCDC: every second), with a ts at or just
  above the last commit sent (never reaching the next), and, unless ``final_watermark=False``, once
  more after the last commit, so that the whole stream resolves. Canal-JSON without the extension has
  none.
* **BOOTSTRAP** (Simple protocol): a table's schema, sent before its first row and again after
  ``send-bootstrap-in-msg-count`` of its rows or ``send-bootstrap-interval-in-sec`` of the clock,
  to every partition (``send-bootstrap-to-all-partition``, default) or to partition 0; both counts 0
  turn BOOTSTRAPs off. TiCDC's pause for tables idle 30 minutes is not simulated. A partition that
  gets a table's rows but neither its BOOTSTRAP nor a DDL carrying its schema holds rows its consumer
  cannot read alone, as with TiCDC.
* **Batching** is the codecs' own: Open Protocol packs up to ``max-batch-size`` row events per message;
  the DataWorks encoder writes an update as a BEFOR/AFTER pair.
* **At-least-once**: each of ``duplicates`` times, the producer restarts from its checkpoint, the last
  watermark every partition has: on each partition, the messages it had sent since then (any number,
  zero for some, never splitting a DataWorks update pair) are sent again, then the stream goes on.

The messages are produced round by round (the commits between two watermarks), so a long workload
streams through :func:`messages` without being held in memory; :func:`produce` collects a
:class:`Stream`.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cdclake.formats import get_codec
from cdclake.formats.base import Decoder, Encoder, Option, parse_bool, parse_int
from cdclake.model import Bootstrap, Ddl, DdlKind, Event, Op, Origin, RawMessage, RowChange, TableSchema, Watermark
from cdclake.workload.generator import Commit, Workload, WorkloadError, physical_ms

DISPATCHERS = ("index-value", "table")
DDL_TO_EVERY_PARTITION = {"open": True, "simple": True, "simple-avro": True, "canal-json": False, "dataworks": False}
BOOTSTRAP_OPTIONS: dict[str, Option] = {
    "send-bootstrap-interval-in-sec": Option(120, "seconds between a table's BOOTSTRAPs (0: no timer)", parse_int),
    "send-bootstrap-in-msg-count": Option(10000, "rows of a table between its BOOTSTRAPs (0: no count)", parse_int),
    "send-bootstrap-to-all-partition": Option(True, "BOOTSTRAPs to every partition, else to partition 0",
                                              parse_bool),
}
_SIMPLE = ("simple", "simple-avro")


@dataclass(frozen=True)
class ProducerSpec:
    """How to lay a workload out on a topic (see the module docstring).

    ``options`` are the format's codec options and, for the Simple protocol, the ``send-bootstrap-*``
    options, under their upstream names."""

    format_name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    partitions: int = 4
    topic: str = "cdclake"
    dispatcher: str = "index-value"
    output_raw_change_event: bool = False
    watermark_interval_ms: int = 1000
    final_watermark: bool = True
    duplicates: int = 0

    def __post_init__(self) -> None:
        get_codec(self.format_name)  # an unknown format is refused with the list of formats
        if self.partitions < 1 or self.watermark_interval_ms < 1 or self.duplicates < 0:
            raise WorkloadError(f"partitions and watermark_interval_ms must be at least 1 and duplicates at least 0, "
                                f"got {self.partitions}, {self.watermark_interval_ms}, {self.duplicates}")
        if self.dispatcher not in DISPATCHERS:
            raise WorkloadError(f"dispatcher {self.dispatcher!r}: one of {', '.join(DISPATCHERS)}")
        if self.output_raw_change_event and self.dispatcher != "table":
            raise WorkloadError("output_raw_change_event needs dispatcher='table': with 'index-value' an UPDATE "
                                "that changes the key would leave the old key's changes on another partition")

    def codec_options(self) -> dict[str, Any]:
        """The codec's options, resolved (defaults filled in)."""
        wanted = {name: value for name, value in self.options.items() if name not in BOOTSTRAP_OPTIONS}
        return get_codec(self.format_name).resolve(wanted)

    def bootstrap_options(self) -> dict[str, Any]:
        given = {name: value for name, value in self.options.items() if name in BOOTSTRAP_OPTIONS}
        if given and self.format_name not in _SIMPLE:
            raise WorkloadError(f"{', '.join(given)}: BOOTSTRAP options of the Simple protocol, not of "
                                f"{self.format_name}")
        try:
            return {name: option.parse(given.get(name, option.default)) for name, option in BOOTSTRAP_OPTIONS.items()}
        except (TypeError, ValueError) as exc:
            raise WorkloadError(f"BOOTSTRAP options {given}: {exc}") from exc

    def carries_watermarks(self) -> bool:
        return self.format_name != "canal-json" or bool(self.codec_options()["enable-tidb-extension"])


@dataclass(frozen=True, slots=True)
class ResentRange:
    """Messages a restart sent again: offsets ``first_offset`` .. ``first_offset + count - 1`` of the
    partition, repeated right after them, at ``first_offset + count`` onwards."""

    partition: int
    first_offset: int
    count: int


@dataclass(frozen=True, slots=True)
class _Silent:
    """A BOOTSTRAP the encoder must see (the Simple encoder writes only rows of schemas it has encoded)
    but the partition must not get: a table whose BOOTSTRAPs go elsewhere or nowhere."""

    schema: TableSchema


class Production:
    """One run of the producer; :meth:`messages` yields the messages, and once they are all out,
    ``watermarks`` holds the ts of every watermark round and ``resent`` every re-sent range."""

    def __init__(self, workload: Workload, spec: ProducerSpec) -> None:
        self.workload, self.spec = workload, spec
        self.codec_options = spec.codec_options()
        self.watermarks: list[int] = []
        self.resent: list[ResentRange] = []
        self._bootstrap = spec.bootstrap_options() if spec.format_name in _SIMPLE else None
        self._watermarks = spec.carries_watermarks()
        # Apart, so that the same stream with and without restarts differs only by the re-sent messages.
        self._watermark_rng = random.Random(f"watermarks-{workload.spec.seed}")
        self._restart_rng = random.Random(f"restarts-{workload.spec.seed}")
        codec = get_codec(spec.format_name)
        self._encoders: list[Encoder] = [codec.encoder(self.codec_options) for _ in range(spec.partitions)]
        self._offsets = [0] * spec.partitions
        self._schemas = {(s.database, s.table): s for s in workload.initial_schemas()}
        self._known: list[set[tuple[str, str, int | None]]] = [set() for _ in range(spec.partitions)]
        self._bootstrapped: dict[int | None, list[int]] = {}  # table id -> [ms sent, rows since]
        self._restarts_due = 0

    def messages(self) -> Iterator[RawMessage]:
        spec = self.spec
        restart_points = self._restart_points()
        round_events: list[list[Event | _Silent]] = [[] for _ in range(spec.partitions)]
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

    # --- routing ---

    def _route(self, commit: Commit, events: list[list[Event | _Silent]]) -> None:
        if commit.ddl is not None:
            self._route_ddl(commit.ddl, events)
            return
        for row in commit.rows:
            for piece in self._split(row):
                partition = self._partition_of(piece)
                if self._bootstrap is not None:
                    self._bootstrap_before(piece, partition, events)
                events[partition].append(piece)

    def _route_ddl(self, ddl: Ddl, events: list[list[Event | _Silent]]) -> None:
        every = DDL_TO_EVERY_PARTITION[self.spec.format_name]
        for partition in range(self.spec.partitions) if every else (0,):
            events[partition].append(ddl)
            for schema in (ddl.schema_before, ddl.schema_after):
                if schema is not None:
                    self._known[partition].add((schema.database, schema.table, schema.version))
        if ddl.schema_before is not None:
            self._schemas.pop((ddl.schema_before.database, ddl.schema_before.table), None)
        if ddl.schema_after is not None and ddl.kind is not DdlKind.DROP_TABLE:
            self._schemas[(ddl.schema_after.database, ddl.schema_after.table)] = ddl.schema_after

    def _split(self, row: RowChange) -> tuple[RowChange, ...]:
        """A key-changing UPDATE as TiCDC sends it: a DELETE of the old key, then an INSERT of the new."""
        if row.op is not Op.UPDATE or self.spec.output_raw_change_event or not row.key_columns:
            return (row,)
        assert row.before is not None and row.after is not None
        if all(row.before[c] == row.after[c] for c in row.key_columns):
            return (row,)
        return replace(row, op=Op.DELETE, after=None), replace(row, op=Op.INSERT, before=None)

    def _partition_of(self, row: RowChange) -> int:
        hashed = zlib.crc32(f"{row.database}\x00{row.table}".encode())
        if self.spec.dispatcher == "index-value" and row.key_columns:
            image = row.after if row.after is not None else row.before
            assert image is not None
            for column in row.key_columns:
                value = image[column]
                text = value.hex() if isinstance(value, bytes) else str(value)
                hashed = zlib.crc32(f"\x00{column}\x00{text}".encode(), hashed)
        return hashed % self.spec.partitions

    def _bootstrap_before(self, row: RowChange, partition: int, events: list[list[Event | _Silent]]) -> None:
        """The BOOTSTRAPs due before ``row`` (TiCDC's bootstrap worker), and a silent one where the
        row's partition has never been given its schema."""
        assert self._bootstrap is not None
        count = self._bootstrap["send-bootstrap-in-msg-count"]
        interval_ms = self._bootstrap["send-bootstrap-interval-in-sec"] * 1000
        schema = self._schemas[(row.database, row.table)]
        now = physical_ms(row.commit_ts or 0)
        sent = self._bootstrapped.get(row.table_id)
        due = sent is None or (0 < count <= sent[1]) or (0 < interval_ms <= now - sent[0])
        if (count or interval_ms) and due:
            every = self._bootstrap["send-bootstrap-to-all-partition"]
            for target in range(self.spec.partitions) if every else (0,):
                events[target].append(Bootstrap(schema))
                self._known[target].add((schema.database, schema.table, schema.version))
            sent = self._bootstrapped[row.table_id] = [now, 0]
        if sent is not None:
            sent[1] += 1
        if (row.database, row.table, row.schema_version) not in self._known[partition]:
            events[partition].append(_Silent(schema))
            self._known[partition].add((schema.database, schema.table, schema.version))

    # --- a round: encode, restart, number ---

    def _close_round(self, events: list[list[Event | _Silent]], last_ts: int, watermark: bool) -> Iterator[RawMessage]:
        sent_ms = physical_ms(last_ts)
        if watermark and self._watermarks:
            # At the last commit's ts or a little above, never reaching the next commit's millisecond.
            ts = last_ts + self._watermark_rng.randrange(3)
            self.watermarks.append(ts)
            for partition_events in events:
                partition_events.append(Watermark(ts))
        encoded = [self._encode(partition, partition_events) for partition, partition_events in enumerate(events)]
        cuts = self._restart_cuts(encoded) if self._restarts_due else [0] * len(encoded)
        for partition, ((messages, _), cut) in enumerate(zip(encoded, cuts, strict=True)):
            if cut:
                self.resent.append(ResentRange(partition, self._offsets[partition], cut))
            for message in (*messages[:cut], *messages):
                yield self._placed(partition, message, sent_ms)

    def _encode(self, partition: int, events: list[Event | _Silent]) -> tuple[list[RawMessage], list[int]]:
        """The partition's messages for a round, and the positions a restart may cut at (0 excluded)."""
        encoder = self._encoders[partition]
        if self.spec.format_name == "open":  # batches rows; every message ends with a whole event
            messages = encoder.encode(e for e in events if not isinstance(e, _Silent))
            return messages, list(range(1, len(messages) + 1))
        messages, cuts = [], []
        for event in events:
            if isinstance(event, _Silent):
                encoder.encode([Bootstrap(event.schema)])
                continue
            messages += encoder.encode([event])
            cuts.append(len(messages))
        return messages, cuts

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
        """A decoder of this stream's format and options, for one partition."""
        return get_codec(self.spec.format_name).decoder(self.codec_options)

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
