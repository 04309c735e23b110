"""Laying out one target partition: a batch's events for it routed and encoded by the target's producer
rules (:func:`lay_out`), with what the target format cannot carry set apart as dead letters."""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdclake.errors import EncodeError
from cdclake.formats import get_codec
from cdclake.formats.base import Encoder
from cdclake.model import (
    Ddl,
    Heartbeat,
    Origin,
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.producer import Router
from cdclake.transcode.derived import SchemaDeriver
from cdclake.transcode.spec import _LOGICAL_BITS, TranscodeSpec
from cdclake.transcode.state import DeadLetter

# --- laying out: one target partition ------------------------------------------------------------------


class _Discard(list[Any]):
    """The events of a partition this task does not write: routed, then forgotten."""

    def append(self, item: Any) -> None:
        pass


@dataclass
class Layout:
    """One target partition's messages for a batch, what the producer rules remember after it, the row
    changes laid out on it and the re-delivered copies of them left out, and the changes the target
    format could not carry."""

    partition: int
    messages: list[RawMessage]
    router: dict[str, Any]
    derived: dict[str, Any]
    changes: int = 0
    duplicates: int = 0
    rejected: list[DeadLetter] = field(default_factory=list)


LayoutRecord = tuple[int, int, str, int, bytes | None, bytes]


def lay_out(spec: TranscodeSpec, partition: int, router_state: Mapping[str, Any] | None,
            derived_state: Mapping[str, Any] | None, records: Iterable[LayoutRecord]) -> Layout:
    """Lay out and encode target ``partition``'s events of a batch.

    ``records`` are ``(ts, rank, sequence, target, identity, payload)`` in
    :data:`~cdclake.transcode.records.ORDER`: the schemas a Simple source sent, then this partition's
    changes and the stubs of other partitions' rows (for a layout that sees every row), DDLs and points.
    Copies of one change (same ts, sequence and identity) go out once. A change the target format cannot
    carry is left out and returned in ``rejected``; the messages carry the physical time of the batch's
    newest ts as their timestamp."""
    target = spec.target
    router = Router.restore(target, router_state) if router_state is not None else Router(target)
    deriver = SchemaDeriver(router, derived_state) if target.sends_bootstraps() else None
    encoder = get_codec(target.format_name).encoder(target.codec_options())
    router.prime(encoder, partition)
    events: list[list[Any]] = [[] if p == partition else _Discard() for p in range(target.partitions)]
    group: tuple[int, int, str] | None = None
    identities: set[bytes] = set()
    changes = duplicates = newest = 0
    for ts, rank, sequence, row_partition, change_identity, payload in records:
        if (ts, rank, sequence) != group:
            group, identities, newest = (ts, rank, sequence), set(), max(newest, ts)
        if change_identity is not None:
            if change_identity in identities:
                duplicates += row_partition == partition
                continue
            identities.add(change_identity)
        item = pickle.loads(payload)
        match item:
            case TableSchema():
                router.learn(item)
            case RowChange():
                if deriver is not None:
                    item = deriver.versioned(item)
                router.place_row(item, row_partition, events)
                changes += row_partition == partition
            case Ddl():
                router.route_ddl(item if deriver is None else deriver.with_schemas(item), events)
            case Watermark() | Heartbeat():
                router.broadcast(item, events)
    try:
        messages, _ = router.encode(encoder, events[partition])
        rejected: list[DeadLetter] = []
    except EncodeError:
        messages, rejected = _encoded_apart(spec, router_state, partition, events[partition])
    sent_ms = newest >> _LOGICAL_BITS
    messages = [RawMessage(m.key, m.value, Origin(target.topic, partition), sent_ms, m.headers) for m in messages]
    return Layout(partition, messages, router.state(), deriver.state() if deriver is not None else {},
                  changes, duplicates, rejected)


def _encoded_apart(spec: TranscodeSpec, router_state: Mapping[str, Any] | None, partition: int, events: list[Any]
                   ) -> tuple[list[RawMessage], list[DeadLetter]]:
    """The partition's messages without the events its encoder refuses, found one by one with an encoder
    brought to where the batch began."""
    target = spec.target
    start = Router.restore(target, router_state) if router_state is not None else Router(target)

    def encoder() -> Encoder:
        fresh = get_codec(target.format_name).encoder(target.codec_options())
        start.prime(fresh, partition)
        return fresh

    probe, kept, rejected = encoder(), [], []
    for event in events:
        try:
            start.encode(probe, [event])
        except EncodeError as exc:
            rejected.append(DeadLetter(getattr(event, "origin", None), f"{exc} (not sent to {target.topic}"
                                                                       f"[{partition}])"))
            continue
        kept.append(event)
    messages, _ = start.encode(encoder(), kept)
    return messages, rejected
