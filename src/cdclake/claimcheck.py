"""TiCDC's large messages resolved where events are consumed.

With ``large-message-handle-option=claim-check`` TiCDC writes a row's whole message to a file in its
claim-check storage and sends Kafka only the handle key and the file's location; with
``handle-key-only`` it sends the handle key alone. A codec decodes either into a
:class:`~cdclake.model.LargeMessageRef` and does no I/O. :func:`decoder_for` wraps a codec's decoder
so that a claim-check reference comes out as the row it stands for: the file is read by its base name
from the storage the format option ``claim-check-storage-uri`` names (as TiCDC's own consumers do:
the location's directory is the producer's view of the storage) and decoded by the same decoder, which
holds the partition's table schemas (the Simple protocol's). A handle-key-only row stops the consumer
unless ``on-handle-key-only=dead-letter`` lets it go on as a reference, which the pipelines put in
their dead letters.

A stored file is TiCDC's ``ClaimCheckMessage``, JSON ``{"key": base64 or null, "value": base64}``, or
with ``claim-check-raw-value=true`` the value's bytes themselves; either way the value is the message
as it would have been sent (compressed if the changefeed compresses). Specs:
``specs/ticdc-reference-notes.md`` §2 ("claim-check").
"""

from __future__ import annotations

import binascii
import posixpath
from base64 import b64decode, b64encode
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from cdclake.errors import CdclakeError, DecodeError
from cdclake.formats.base import Codec, Decoder
from cdclake.formats.large_messages import CLAIM_CHECK_STORAGE_URI, ON_HANDLE_KEY_ONLY
from cdclake.model import Event, LargeMessageKind, LargeMessageRef, Origin, PendingRow, RawMessage, RowChange

if TYPE_CHECKING:
    from pyarrow.fs import FileSystem

_ENVELOPE_FIELDS = {"key", "value"}


class HandleKeyOnlyError(CdclakeError):
    """A row TiCDC sent as its handle key only, met while ``on-handle-key-only`` is ``fail``."""

    def __init__(self, ref: LargeMessageRef) -> None:
        self.origin = ref.row.origin
        super().__init__(f"{ref.row.origin}: {handle_key_only_reason(ref)}; set the format option "
                         f"{ON_HANDLE_KEY_ONLY}=dead-letter to put such rows in the dead letters and go on")


def describe(ref: LargeMessageRef) -> str:
    """The row a reference stands for: its op, table, key and commit ts."""
    row = ref.row
    image = row.after if row.after is not None else row.before or {}
    key = ", ".join(f"{name}={image.get(name)!r}" for name in row.key_columns) or "none"
    article = "an" if row.op.value[0] in "aeiou" else "a"
    return f"{article} {row.op.value} of {row.database}.{row.table} (key {key}, commit ts {row.commit_ts})"


def handle_key_only_reason(ref: LargeMessageRef) -> str:
    """Why a handle-key-only row cannot be applied."""
    return (f"{describe(ref)} came as its handle key only (large-message-handle-option=handle-key-only): the "
            "whole row is not in the stream")


class ClaimCheckStorage:
    """The claim-check files under one URI: ``file://``, ``s3://``, ``gs://``, ``hdfs://`` (pyarrow's
    filesystems, which take credentials from the URI's query or the environment as each documents), or a
    plain directory path. The filesystem is opened on first use, where the files are read (on a Spark
    executor, in the pipeline)."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._opened: tuple[FileSystem, str] | None = None

    def path_of(self, location: str) -> str:
        """Where the file of ``location`` is in this storage: under its base name, as TiCDC's consumers
        read it."""
        name = posixpath.basename(location.rstrip("/"))
        if name in ("", ".", ".."):
            raise ValueError(f"the location {location!r} names no file")
        return f"{self._filesystem()[1].rstrip('/')}/{name}"

    def read(self, location: str) -> bytes:
        """The bytes of the file ``location`` names; OSError or ValueError (pyarrow's errors are both)
        if it cannot be read."""
        path = self.path_of(location)
        with self._filesystem()[0].open_input_stream(path) as stream:
            return bytes(stream.read())

    def write(self, location: str, data: bytes) -> None:
        """Store ``data`` as the file of ``location`` (the upstream simulator's side of TiCDC)."""
        path = self.path_of(location)
        filesystem = self._filesystem()[0]
        filesystem.create_dir(posixpath.dirname(path), recursive=True)
        with filesystem.open_output_stream(path) as stream:
            stream.write(data)

    def _filesystem(self) -> tuple[FileSystem, str]:
        if self._opened is None:
            from pyarrow.fs import FileSystem

            # A plain path is a local directory; from_uri takes only absolute ones.
            uri = self.uri if "://" in self.uri else str(Path(self.uri).resolve())
            self._opened = FileSystem.from_uri(uri)
        return self._opened


def stored_message(data: bytes) -> tuple[bytes | None, bytes]:
    """The key and value a claim-check file holds: TiCDC's ``{"key": ..., "value": ...}`` JSON, else
    (``claim-check-raw-value``) the file is the value. No message of a format is such an object."""
    envelope: Any = None
    if data[:1] == b"{":
        try:
            envelope = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None, data
    if not (type(envelope) is dict and envelope.keys() == _ENVELOPE_FIELDS):
        return None, data
    key, value = envelope["key"], envelope["value"]
    if type(value) is not str or not (key is None or type(key) is str):
        raise ValueError('"key" must be base64 text or null and "value" base64 text')
    try:
        return (None if key is None else b64decode(key, validate=True)), b64decode(value, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not base64: {exc}") from None


def stored_file(key: bytes | None, value: bytes, raw_value: bool = False) -> bytes:
    """A claim-check file as TiCDC writes it: the envelope, or with ``raw_value`` the value alone."""
    if raw_value:
        return value
    encoded = None if key is None else b64encode(key).decode()
    return orjson.dumps({"key": encoded, "value": b64encode(value).decode()})


class LargeMessageDecoder:
    """A codec's decoder whose claim-check references come out as the rows they stand for, and whose
    handle-key-only rows stop it unless ``dead_letter_handle_key_only``."""

    def __init__(self, decoder: Decoder, format_name: str, storage: ClaimCheckStorage | None,
                 dead_letter_handle_key_only: bool) -> None:
        self._decoder = decoder
        self._format = format_name
        self._storage = storage
        self._dead_letter_handle_key_only = dead_letter_handle_key_only

    @property
    def format_decoder(self) -> Decoder:
        """The codec's own decoder, which this one wraps."""
        return self._decoder

    def decode(self, message: RawMessage) -> list[Event]:
        return self._resolved(self._decoder.decode(message))

    def flush(self) -> list[Event]:
        return self._resolved(self._decoder.flush())

    def _resolved(self, events: list[Event]) -> list[Event]:
        if LargeMessageRef not in map(type, events):  # the common case, checked at C speed
            return events
        resolved: list[Event] = []
        for event in events:
            if not isinstance(event, LargeMessageRef):
                resolved.append(event)
            elif event.kind is LargeMessageKind.CLAIM_CHECK:
                resolved += self._claimed(event)
            elif self._dead_letter_handle_key_only:
                resolved.append(event)
            else:
                raise HandleKeyOnlyError(event)
        return resolved

    def _claimed(self, ref: LargeMessageRef) -> Iterable[Event]:
        """The events of the message ``ref``'s file holds, placed where ``ref`` was."""
        origin = ref.row.origin or Origin()
        location = ref.location or ""
        if self._storage is None:
            raise self._error(ref, f"set the format option {CLAIM_CHECK_STORAGE_URI} to the storage TiCDC writes "
                                   "the claim-check files to")
        try:
            key, value = stored_message(self._storage.read(location))
        except (OSError, ValueError) as exc:
            raise self._error(ref, f"cannot read it from {self._storage.uri}: {exc}") from None
        try:
            events = self._decoder.decode(RawMessage(key, value, origin))
        except DecodeError as exc:
            raise self._error(ref, f"the stored message: {exc.reason}") from None
        return [self._in_place_of(ref, event) for event in events]

    def _in_place_of(self, ref: LargeMessageRef, event: Event) -> Event:
        row = ref.row
        if not isinstance(event, RowChange | PendingRow):
            raise self._error(ref, f"the stored message holds a {type(event).__name__}, not that row")
        if (event.database, event.table) != (row.database, row.table):
            raise self._error(ref, f"the stored message holds a row of {event.database}.{event.table}, not that row")
        # Open Protocol numbers the events of the stored message from 0; the row takes its reference's place.
        return replace(event, origin=row.origin) if event.origin != row.origin else event

    def _error(self, ref: LargeMessageRef, reason: str) -> DecodeError:
        return DecodeError(self._format, f"{describe(ref)}, stored at {ref.location}: {reason}", ref.row.origin)


def decoder_for(codec: Codec, options: Mapping[str, Any] | None = None) -> Decoder:
    """``codec``'s decoder for ``options``, with large messages handled as its options say (for a format
    that has them): what every consumer of a stream decodes with."""
    resolved = codec.resolve(options)
    decoder = codec.make_decoder(resolved)
    if ON_HANDLE_KEY_ONLY not in resolved:
        return decoder
    uri = resolved[CLAIM_CHECK_STORAGE_URI]
    return LargeMessageDecoder(decoder, codec.name, ClaimCheckStorage(uri) if uri else None,
                               resolved[ON_HANDLE_KEY_ONLY] == "dead-letter")
