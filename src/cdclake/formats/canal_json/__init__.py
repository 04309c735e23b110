"""TiCDC Canal-JSON (``protocol=canal-json``), and the Canal-JSON that Canal, Flink, Flink CDC and
other producers write.

A Kafka value holds one JSON message (TiCDC's storage sink writes several, one per line: the decoder
reads both). A message is a DDL (``isDdl``), a ``TIDB_WATERMARK`` (only with the TiDB extension) or a
row change whose ``data`` array holds one row per element; ``old`` holds the before image of an
UPDATE, whole (TiCDC's default) or only the changed columns (Canal, ``content-compatible``,
``only-output-updated-columns``). Column types come from ``mysqlType``; every value is a JSON string
(SQL NULL is JSON null) rendered as TiDB renders it, binary bytes mapped one to one onto the
code points U+0000..U+00FF (ISO-8859-1). The TiDB extension ``_tidb`` adds the commit ts and marks
messages shrunk for size (``onlyHandleKey``, ``claimCheckLocation``).

Spec: ``specs/ticdc-canal-json-protocol.zh.md``, with ``specs/ticdc-reference-notes.md`` §1.2 (fields and
values), §2 (large messages, compression) and §3.4 (how the reference consumer reads it). The encoder
writes what TiCDC writes, field for field; docs/formats/canal-json.md says what the format cannot carry.

Decoded events keep the message's other top-level fields (``id``, ``es``, ``ts``, Canal's ``gtid``,
InLong's ``batchId`` ...) in ``meta`` under their own names, the Canal type of a DDL (and of Alibaba
Cloud DTS's ``INIT`` rows) in ``meta["type"]`` and TiCDC's ``_tidb.rowkey`` in ``meta["rowkey"]``.

The modules: :mod:`.wire` (the message's constants and JSON text, read and written), :mod:`.values`
(one column's value, read and written), :mod:`.fast_path` (what a ``mysqlType`` map says, with its
compiled row readers), :mod:`.rows` (a message's rows as before and after images), :mod:`.decoder`
and :mod:`.encoder`. TiCDC's plain row messages also have a compiled reader straight into the
pipeline's change records (``native/src/canal.rs``, declared here as ``native_rows``), which leaves
every other message to the decoder.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from cdclake._native import CanalRows
from cdclake.formats.base import (
    TIDB_TEXT_KINDS,
    TZ_OPTION,
    Codec,
    NativeRows,
    Option,
    ValueCarrier,
    carries_every_value,
    kinds_in_zone,
    parse_bool,
)
from cdclake.formats.canal_json.decoder import CanalJsonDecoder
from cdclake.formats.canal_json.encoder import CanalJsonEncoder, _meta_int
from cdclake.formats.canal_json.values import _converter
from cdclake.formats.canal_json.wire import FORMAT
from cdclake.formats.carried import carries_member_numbers
from cdclake.formats.compression import COMPRESSION_OPTION
from cdclake.formats.large_messages import LARGE_MESSAGE_OPTIONS
from cdclake.model import Ddl, RowChange
from cdclake.types import Family
from cdclake.values import zone


def _has_watermarks(options: Mapping[str, Any]) -> bool:
    return bool(options["enable-tidb-extension"])


def _sequence_of(change: RowChange | Ddl) -> str | None:
    """Without the TiDB extension a change carries no commit ts; ``es``, the binlog event's commit time
    in milliseconds, is the same in a re-delivered copy (``ts``, the time of sending, is not)."""
    es = _meta_int(change.meta, "es")
    return None if change.commit_ts is not None or es is None else str(es)


def _commit_ms_of(change: RowChange | Ddl) -> int | None:
    """``es``, the commit's physical time in milliseconds, of a change that has no commit ts."""
    return _meta_int(change.meta, "es") if change.commit_ts is None else None


def _value_carrier(options: Mapping[str, Any]) -> ValueCarrier:
    """TiCDC's ``mysqlType`` names only ENUM or SET, its values are the member numbers; with
    ``content-compatible`` the full type names the members and the values are their names."""
    compatible = options["content-compatible"]
    return carries_every_value(options) if compatible else carries_member_numbers(options)


# The texts native/src/texts.rs reads as TiCDC writes them (a TIMESTAMP's only where the tz is UTC).
_NATIVE_KINDS = {**TIDB_TEXT_KINDS, Family.BINARY: "latin1-binary", Family.GEOMETRY: "latin1-binary"}


def _native_rows(options: Mapping[str, Any]) -> NativeRows | None:
    """TiCDC's row messages, read by ``native/src/canal.rs``; a compressed value the decoder reads."""
    if options["large-message-handle-compression"] != "none":
        return None
    tz = zone(options["tz"])
    return NativeRows(lambda planner, decoder: CanalRows(planner), functools.partial(_converter, tz=tz),
                      kinds_in_zone(_NATIVE_KINDS, tz))


# Without the TiDB extension Canal-JSON carries neither commit ts nor watermarks.
_WITH_TIDB_EXTENSION = {"enable-tidb-extension": "true"}

OPTIONS: dict[str, Option] = {
    "enable-tidb-extension": Option(
        False,
        "write _tidb.commitTs and TIDB_WATERMARK messages (the decoder reads _tidb whenever present)",
        parse_bool,
    ),
    "content-compatible": Option(
        False,
        "write Canal's full mysqlType (decimal(10,4), enum('a','b')) and only changed columns in old",
        parse_bool,
    ),
    "only-output-updated-columns": Option(False, "write only the changed columns of an UPDATE in old", parse_bool),
    "large-message-handle-compression": COMPRESSION_OPTION,
    "tz": TZ_OPTION,
    **LARGE_MESSAGE_OPTIONS,
}

CODEC = Codec(
    name=FORMAT,
    options=OPTIONS,
    make_decoder=CanalJsonDecoder,
    make_encoder=CanalJsonEncoder,
    has_watermarks=_has_watermarks,
    sequence_of=_sequence_of,
    commit_ms_of=_commit_ms_of,
    value_carrier=_value_carrier,
    demo_options=_WITH_TIDB_EXTENSION,
    sample_options=_WITH_TIDB_EXTENSION,
    native_rows=_native_rows,
)

__all__ = ["CODEC", "OPTIONS", "CanalJsonDecoder", "CanalJsonEncoder"]
