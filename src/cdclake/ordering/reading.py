"""One source partition's messages decoded in order, after the messages carried into it.

:class:`PartitionReading` is what the replication job's decoder (:class:`cdclake.spark.changes.PartitionDecoder`)
and the transcoder's (:class:`cdclake.transcode.records.PartitionReader`) share: a message that
cannot be decoded is a bad message (dead letter, or a stop: :mod:`~cdclake.ordering.bad_messages`); a
schema message carried from an earlier batch only teaches the decoder (its events went out then); a row
waiting for its schema waits until its schema comes in the range, or to the range's end; a
handle-key-only row is a bad message; transaction marks say nothing the commit ts and the order do not.
What a reading does with each event is its subclass's.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cdclake.claimcheck import LargeMessageDecoder, decoder_for, handle_key_only_reason
from cdclake.errors import DecodeError
from cdclake.model import (
    Bootstrap,
    Ddl,
    Event,
    Heartbeat,
    LargeMessageRef,
    Origin,
    PendingRow,
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)

if TYPE_CHECKING:
    from cdclake.formats.base import Codec

INT64_MAX = 2**63 - 1
# Messages that gave no event, kept to carry the one whose events the decoder still holds at the end of a
# range: a decoder holds at most a few (DataWorks: one update half).
_QUIET_KEPT = 64

Coordinates = tuple[int | None, int | None]  # partition, offset


class PartitionReading(ABC):
    """Decodes one source partition's messages in order with ``codec``'s decoder (claim-check references
    read, :func:`cdclake.claimcheck.decoder_for`) and hands each event to the subclass."""

    def __init__(self, codec: Codec, options: Mapping[str, Any]) -> None:
        self.codec = codec
        decoder = self._decoder = decoder_for(codec, options)
        # The codec's own decoder, under any large-message handling: a compiled row reader reads by its schemas.
        self.format_decoder = decoder.format_decoder if isinstance(decoder, LargeMessageDecoder) else decoder
        self._waiting: dict[Coordinates, tuple[RawMessage, PendingRow]] = {}
        self._quiet: dict[Coordinates, RawMessage] = {}

    def prime(self, message: RawMessage) -> None:
        """Teach the decoder a schema message an earlier batch decoded (its events went out then)."""
        with contextlib.suppress(DecodeError):  # it failed when first read too: a bad message then
            self._decoder.decode(message)

    def read(self, message: RawMessage) -> None:
        try:
            events = self._decoder.decode(message)
        except DecodeError as exc:
            self.bad(message, str(exc))
            return
        if not events:
            self._quiet[coordinates(message.origin)] = message
            if len(self._quiet) > _QUIET_KEPT:
                del self._quiet[next(iter(self._quiet))]
        for event in events:
            self.dispatch(event, message)

    def finish(self) -> None:
        """The range's end: the events the decoder still holds (its ``flush()``, with the message that
        gave no event of its own if it is at hand), then the rows still waiting for their schema."""
        for event in self._decoder.flush():
            self.held(event, self._quiet.get(coordinates(event_origin(event))))
        for message, row in self._waiting.values():
            self.waiting(message, row)

    def dispatch(self, event: Event, message: RawMessage) -> None:
        match event:
            case RowChange():
                self._waiting.pop(coordinates(event.origin), None)  # its schema came in this range
                self._quiet.pop(coordinates(event.origin), None)
                self.row(event, message)
            case PendingRow():
                self._waiting[coordinates(event.origin)] = (message, event)
            case Ddl():
                self.ddl(event, message)
            case Bootstrap():
                self.bootstrap(event.schema, event.origin, message)
            case Watermark():
                self.watermark(event)
            case Heartbeat():
                self.heartbeat(event)
            case LargeMessageRef():  # handle-key-only, with on-handle-key-only=dead-letter
                self.bad(message, handle_key_only_reason(event))
            case _:
                pass  # transaction marks: the commit ts and the order already say what they say

    @abstractmethod
    def row(self, row: RowChange, message: RawMessage) -> None: ...

    @abstractmethod
    def ddl(self, ddl: Ddl, message: RawMessage) -> None: ...

    @abstractmethod
    def bootstrap(self, schema: TableSchema, origin: Origin | None, message: RawMessage) -> None: ...

    @abstractmethod
    def watermark(self, watermark: Watermark) -> None: ...

    @abstractmethod
    def heartbeat(self, heartbeat: Heartbeat) -> None: ...

    @abstractmethod
    def bad(self, message: RawMessage, reason: str) -> None:
        """``message`` cannot be decoded (or its event cannot go on), for ``reason``."""

    @abstractmethod
    def held(self, event: Event, message: RawMessage | None) -> None:
        """An event the decoder still held at the range's end, and its message if that gave no other."""

    @abstractmethod
    def waiting(self, message: RawMessage, row: PendingRow) -> None:
        """A row still waiting for its schema at the range's end, and its message."""


def commit_ts_problem(commit_ts: int | None) -> str | None:
    """Why a commit ts cannot be ordered by (change records and target records hold a 64-bit signed
    integer), or None."""
    if commit_ts is not None and commit_ts > INT64_MAX:
        return f"commit ts {commit_ts} is beyond a 64-bit signed integer"
    return None


def event_origin(event: Event) -> Origin | None:
    return event.row.origin if isinstance(event, LargeMessageRef) else event.origin


def coordinates(origin: Origin | None) -> Coordinates:
    return (None, None) if origin is None else (origin.partition, origin.offset)
