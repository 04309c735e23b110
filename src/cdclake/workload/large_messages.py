"""TiCDC's ``large-message-handle-option`` on a produced stream.

A message too large for Kafka TiCDC shrinks to the row's handle-key columns: with ``handle-key-only``
that is all a consumer gets; with ``claim-check`` the whole message is stored in the claim-check storage
as a file named by a UUID, and the shrunk message says where (``specs/ticdc-reference-notes.md`` §2).
:func:`shrink_large_messages` does the same to the messages of a :class:`~cdclake.workload.Stream` that
hold one row change larger than a threshold.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from cdclake.claimcheck import ClaimCheckStorage, stored_file
from cdclake.formats import get_codec
from cdclake.formats.base import Decoder, Encoder
from cdclake.formats.large_messages import CLAIM_CHECK_STORAGE_URI
from cdclake.model import Bootstrap, Ddl, LargeMessageKind, LargeMessageRef, RawMessage, RowChange
from cdclake.workload.generator import WorkloadError
from cdclake.workload.production import Stream

# Names the files by the message they stand for, so that the same stream gives the same files.
_FILE_NAMES = uuid.UUID("6f1c52be-7d0c-4c1e-9d4b-3c0d2a6f7e11")


def shrink_large_messages(stream: Stream, kind: LargeMessageKind, larger_than: int = 0,
                          storage_uri: str | None = None, raw_value: bool = False) -> Stream:
    """``stream`` as TiCDC sends it with ``large-message-handle-option`` ``kind``: each message that holds
    one row change of a table with a key, and whose value is larger than ``larger_than`` bytes, is
    replaced by the row's handle key; with ``CLAIM_CHECK`` the message is first written to
    ``storage_uri`` (a directory or a pyarrow filesystem URI), as the key and value in JSON or, with
    ``raw_value`` (TiCDC's ``claim-check-raw-value``), as the value alone. The stream's codec options then
    name the storage, so that its consumers read the files."""
    if (kind is LargeMessageKind.CLAIM_CHECK) is (storage_uri is None):
        raise WorkloadError("a storage URI is for claim-check, and claim-check needs one")
    storage = None if storage_uri is None else ClaimCheckStorage(storage_uri)
    codec = get_codec(stream.spec.format_name)
    partitions: dict[int, list[RawMessage]] = {}
    for partition, messages in stream.partitions.items():
        decoder, encoder = codec.decoder(stream.codec_options), codec.encoder(stream.codec_options)
        partitions[partition] = [_shrunk_if_large(message, decoder, encoder, kind, storage, larger_than, raw_value)
                                 for message in messages]
    options: dict[str, Any] = dict(stream.codec_options)
    if storage_uri is not None:
        options[CLAIM_CHECK_STORAGE_URI] = storage_uri
    return replace(stream, partitions=partitions, codec_options=options)


def _shrunk_if_large(message: RawMessage, decoder: Decoder, encoder: Encoder, kind: LargeMessageKind,
                     storage: ClaimCheckStorage | None, larger_than: int, raw_value: bool) -> RawMessage:
    events = decoder.decode(message)
    # The encoder writes a Simple row only for a table whose schema it has seen.
    encoder.encode([event for event in events if isinstance(event, Bootstrap | Ddl)])
    row = events[0] if len(events) == 1 else None
    if not isinstance(row, RowChange) or not row.key_columns or len(message.value or b"") <= larger_than:
        return message
    location = None
    if storage is not None:
        origin = message.origin
        assert origin is not None
        name = uuid.uuid5(_FILE_NAMES, f"{origin.topic}/{origin.partition}/{origin.offset}")
        location = f"{storage.uri.rstrip('/')}/{name}.json"
        storage.write(location, stored_file(message.key, message.value or b"", raw_value))
    (shrunk,) = encoder.encode([LargeMessageRef(kind, _handle_key_only(row), location)])
    return replace(message, key=shrunk.key, value=shrunk.value)


def _handle_key_only(row: RowChange) -> RowChange:
    def key_of(image: Mapping[str, Any] | None) -> dict[str, Any] | None:
        return None if image is None else {name: image[name] for name in row.key_columns}

    return replace(row, before=key_of(row.before), after=key_of(row.after))
