"""TiCDC Open Protocol: batched binary key/value framing around one JSON key and value per event.

A Kafka message carries N events::

    key   = u64be(version=1) || N x ( u64be(len) || key JSON )
    value =                     N x ( u64be(len) || value JSON, compressed if configured )

The key JSON says what the event is (``t``: 1 row, 2 DDL, 3 resolved) and when (``ts``); a row value
has ``u`` (new image), ``p`` (old image of an update) or ``d`` (deleted image), each column as
``{"t": type code, "h": handle, "f": flags, "v": value}``; a DDL value is ``{"q": query, "t": action}``;
a resolved event has an empty value. Field meanings, value encodings and producer rules follow
``specs/ticdc-open-protocol.zh.md`` and ``specs/ticdc-reference-notes.md`` §1.1 and §2; the encoder
writes what TiCDC (pingcap/ticdc ``pkg/sink/codec/open``) writes, byte for byte.

Decoded rows keep each column's type code and flags in ``meta["type_codes"]`` and ``meta["flags"]``
so that the encoder can write them back unchanged; see docs/formats/open.md for what the format
cannot carry.

The modules: :mod:`.wire` (constants, type codes, DDL action types, the batch framing), :mod:`.text`
(Go's string quoting and TiCDC's JSON text), :mod:`.values` (one column's value, read and written),
:mod:`.fast_path` (the compiled per-shape image readers), :mod:`.decoder` and :mod:`.encoder`. The Spark
pipeline reads plain row messages with a compiled reader (``native/src/open.rs``, declared here as
``native_rows``), which leaves every other message to the decoder.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from cdclake._native import OpenRows
from cdclake.errors import OptionError
from cdclake.formats.base import (
    TIDB_TEXT_KINDS,
    TZ_OPTION,
    Codec,
    NativeRows,
    Option,
    kinds_in_zone,
    parse_bool,
    parse_int,
)
from cdclake.formats.carried import carries_member_numbers
from cdclake.formats.compression import COMPRESSION_OPTION
from cdclake.formats.large_messages import LARGE_MESSAGE_OPTIONS
from cdclake.formats.open_protocol.decoder import OpenDecoder
from cdclake.formats.open_protocol.encoder import OpenEncoder
from cdclake.formats.open_protocol.values import _converter, _type_of
from cdclake.formats.open_protocol.wire import (
    _BASE64_CODES,
    _CODE_OF,
    _KEY_FLAGS,
    _TYPE_NAMES,
    _U64_MAX,
    FORMAT,
    _Invalid,
)
from cdclake.types import Family, MySQLType
from cdclake.values import zone


def _positive_int(value: Any) -> int:
    number = parse_int(value)
    if number < 1:
        raise ValueError(f"expected a whole number of at least 1, got {value!r}")
    return number


def _zone_name(value: Any) -> str:
    try:
        zone(str(value))
    except OptionError as exc:
        raise ValueError(str(exc)) from None
    return str(value)


OPTIONS: dict[str, Option] = {
    "tz": Option(TZ_OPTION.default, TZ_OPTION.doc, _zone_name),
    "large-message-handle-compression": COMPRESSION_OPTION,
    "max-batch-size": Option(16, "most events in one Kafka message (encoder)", _positive_int),
    "max-message-bytes": Option(10485760, "largest Kafka message, as TiCDC counts it (encoder)", _positive_int),
    "output-old-value": Option(
        True, 'write an update\'s old image as "p" (sink.open.output-old-value; encoder)', parse_bool
    ),
    "only-output-updated-columns": Option(False, 'write only the changed columns in "p" (encoder)', parse_bool),
    **LARGE_MESSAGE_OPTIONS,
}


def _shape_types(codes: list[int], flags: list[int]) -> tuple[list[str], list[bool]] | None:
    """A row image's columns as the decoder types them by their type codes and flags: their type texts
    and whether each is a key column; None where one has no type (the NULL code) or an unknown code."""
    try:
        types = [_type_of(code, flag) for code, flag in zip(codes, flags, strict=True)]
    except _Invalid:
        return None
    if any(mtype is None for mtype in types):
        return None
    return [str(mtype) for mtype in types], [bool(flag & _KEY_FLAGS) for flag in flags]


def _json_converter(mtype: MySQLType, tz: dt.tzinfo) -> Callable[[str], Any]:
    """The decoder's converter of a column of ``mtype``, for its value's JSON text. The code it is given
    is the first its type's name has: the name alone tells a base64 TEXT or BLOB from the rest."""
    convert = _converter(mtype, _CODE_OF[mtype.name], tz)
    return lambda raw: convert(orjson.loads(raw))


# JSON strings of TiDB's texts and of Go's quoted bytes; JSON numbers (whole numbers are always read).
_NATIVE_KINDS = {**TIDB_TEXT_KINDS, Family.BINARY: "go-quoted-binary"}
# TEXT and BLOB (tinytext ... longblob) come in base64.
_BASE64_KINDS = {
    name: kind
    for code in _BASE64_CODES
    for name, kind in zip(_TYPE_NAMES[code], ("base64-text", "base64-binary"), strict=True)
}


def _native_rows(options: Mapping[str, Any]) -> NativeRows | None:
    """TiCDC's row events, read by ``native/src/open.rs``; a compressed value the decoder reads."""
    if options["large-message-handle-compression"] != "none":
        return None
    tz = zone(options["tz"])
    return NativeRows(
        lambda planner, decoder: OpenRows(planner, _shape_types),
        functools.partial(_json_converter, tz=tz),
        kinds_in_zone(_NATIVE_KINDS, tz),
        kinds_by_name=_BASE64_KINDS,
        member_numbers=(0, _U64_MAX),
    )


CODEC = Codec(
    name=FORMAT,
    options=OPTIONS,
    make_decoder=OpenDecoder,
    make_encoder=OpenEncoder,
    ddl_to_every_partition=True,
    batches=True,
    binary=True,
    # An ENUM's index and a SET's bitmask: the column's type code says no more than ENUM or SET.
    value_carrier=carries_member_numbers,
    native_rows=_native_rows,
)

__all__ = ["CODEC", "OPTIONS", "OpenDecoder", "OpenEncoder"]
