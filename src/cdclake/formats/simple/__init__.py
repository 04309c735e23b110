"""TiCDC Simple protocol (``protocol = "simple"``), JSON and Avro encodings.

One event per Kafka message, nil key: DML (INSERT/UPDATE/DELETE) with column values but no types,
DDL (CREATE/ALTER/ERASE/RENAME/TRUNCATE/CINDEX/DINDEX/QUERY) and BOOTSTRAP with the table's full
schema, and WATERMARK. Spec: PingCAP's "TiCDC Simple Protocol" page, the Avro schema TiCDC embeds, and
tiflow's ``pkg/sink/codec/simple`` where the page is silent (docs/formats/simple.md says what follows
from which).

``simple_avro_schema.json`` beside this package is a verbatim copy of pingcap/tiflow
``pkg/sink/codec/simple/message.json`` (Apache License 2.0, Copyright PingCAP, Inc.).

The two codecs differ only in their wire: the codec name fixes TiCDC's ``encoding-format``.
"""

from __future__ import annotations

from dataclasses import replace

from cdclake.formats.base import TZ_OPTION, Codec, Option
from cdclake.formats.compression import COMPRESSION_OPTION
from cdclake.formats.large_messages import LARGE_MESSAGE_OPTIONS
from cdclake.formats.simple.decoder import SimpleDecoder
from cdclake.formats.simple.encoder import SimpleEncoder
from cdclake.formats.simple.wire import AvroWire, JsonWire

OPTIONS: dict[str, Option] = {
    "large-message-handle-compression": COMPRESSION_OPTION,
    "tz": TZ_OPTION,
    **LARGE_MESSAGE_OPTIONS,
}

_JSON = JsonWire()
_AVRO = AvroWire()

JSON_CODEC = Codec(
    name="simple",
    options=OPTIONS,
    make_decoder=lambda options: SimpleDecoder(_JSON, options),
    make_encoder=lambda options: SimpleEncoder(_JSON, options),
    ddl_to_every_partition=True,
    bootstraps=True,
)

AVRO_CODEC = replace(
    JSON_CODEC,
    name="simple-avro",
    make_decoder=lambda options: SimpleDecoder(_AVRO, options),
    make_encoder=lambda options: SimpleEncoder(_AVRO, options),
    binary=True,
)

__all__ = ["AVRO_CODEC", "JSON_CODEC", "SimpleDecoder", "SimpleEncoder"]
