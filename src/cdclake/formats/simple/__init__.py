"""TiCDC Simple protocol (``protocol = "simple"``), JSON and Avro encodings.

One event per Kafka message, nil key: DML (INSERT/UPDATE/DELETE) with column values but no types,
DDL (CREATE/ALTER/ERASE/RENAME/TRUNCATE/CINDEX/DINDEX/QUERY) and BOOTSTRAP with the table's full
schema, and WATERMARK. Spec: PingCAP's "TiCDC Simple Protocol" page, the Avro schema TiCDC embeds, and
tiflow's ``pkg/sink/codec/simple`` where the page is silent (docs/formats/simple.md says what follows
from which).

``simple_avro_schema.json`` beside this package is a verbatim copy of pingcap/tiflow
``pkg/sink/codec/simple/message.json`` (Apache License 2.0, Copyright PingCAP, Inc.).

The two codecs differ only in their wire: the codec name fixes TiCDC's ``encoding-format``. JSON row
messages also have a compiled reader straight into the pipeline's change records
(``native/src/simple.rs``, declared here as ``native_rows``), which reads by the schemas the partition's
decoder holds and leaves every other message to it.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from cdclake._native import SimpleRows
from cdclake.formats.base import TIDB_TEXT_KINDS, TZ_OPTION, Codec, Decoder, NativeRows, Option, RowPlanner
from cdclake.formats.compression import COMPRESSION_OPTION
from cdclake.formats.large_messages import LARGE_MESSAGE_OPTIONS
from cdclake.formats.simple.decoder import SimpleDecoder
from cdclake.formats.simple.encoder import SimpleEncoder
from cdclake.formats.simple.fast_path import json_fast_reader
from cdclake.formats.simple.values import Zones
from cdclake.formats.simple.wire import AvroWire, JsonWire
from cdclake.types import Family
from cdclake.values import zone

OPTIONS: dict[str, Option] = {
    "large-message-handle-compression": COMPRESSION_OPTION,
    "tz": TZ_OPTION,
    **LARGE_MESSAGE_OPTIONS,
}

_JSON = JsonWire()
_AVRO = AvroWire()

# The texts native/src/texts.rs reads as TiCDC's encodeValue writes them (TIMESTAMP: the value of a
# {"location", "value"} whose location is UTC; ENUM and SET: the index and bitmask of a listed member).
_NATIVE_KINDS = {
    **TIDB_TEXT_KINDS,
    Family.TIMESTAMP: "timestamp",
    Family.BINARY: "base64-binary",
    Family.ENUM: "enum-index",
    Family.SET: "set-bits",
}


def _native_rows(options: Mapping[str, Any]) -> NativeRows | None:
    """TiCDC's JSON row messages, read by ``native/src/simple.rs``; a compressed value the decoder reads."""
    if options["large-message-handle-compression"] != "none":
        return None
    tz = zone(options["tz"])
    local_is_utc = tz.utcoffset(None) == dt.timedelta(0)  # the location "Local" is the tz

    def reader(planner: RowPlanner, decoder: Decoder) -> SimpleRows:
        if not isinstance(decoder, SimpleDecoder):
            raise TypeError(f"the Simple protocol's row reader reads by a SimpleDecoder's schemas, not a {decoder!r}")
        return SimpleRows(planner, decoder, local_is_utc)

    return NativeRows(reader, functools.partial(json_fast_reader, zones=Zones(tz)), _NATIVE_KINDS)


JSON_CODEC = Codec(
    name="simple",
    options=OPTIONS,
    make_decoder=lambda options: SimpleDecoder(_JSON, options),
    make_encoder=lambda options: SimpleEncoder(_JSON, options),
    ddl_to_every_partition=True,
    bootstraps=True,
    native_rows=_native_rows,
)

AVRO_CODEC = replace(
    JSON_CODEC,
    name="simple-avro",
    make_decoder=lambda options: SimpleDecoder(_AVRO, options),
    make_encoder=lambda options: SimpleEncoder(_AVRO, options),
    binary=True,
    native_rows=lambda options: None,
)

__all__ = ["AVRO_CODEC", "JSON_CODEC", "SimpleDecoder", "SimpleEncoder"]
