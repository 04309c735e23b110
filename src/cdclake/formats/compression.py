"""TiCDC's ``large-message-handle-compression``: each message value (each event value inside an Open
Protocol batch) compressed before it is sent. The message does not say which codec was used, so the
consumer is told by the same option.

``snappy`` is the Snappy *block* format (Go ``snappy.Encode``, no framing); ``lz4`` is an LZ4 *frame*.
"""

from __future__ import annotations

from collections.abc import Callable

import cramjam
import lz4.frame

from cdclake.formats.base import Option

COMPRESSIONS = ("none", "snappy", "lz4")

COMPRESSION_OPTION = Option(
    "none",
    "codec TiCDC compressed each message value with (large-message-handle-compression)",
    choices=COMPRESSIONS,
)


def _identity(data: bytes) -> bytes:
    return data


def _snappy_compress(data: bytes) -> bytes:
    return bytes(cramjam.snappy.compress_raw(data))


def _snappy_decompress(data: bytes) -> bytes:
    return bytes(cramjam.snappy.decompress_raw(data))


def _lz4_compress(data: bytes) -> bytes:
    return bytes(lz4.frame.compress(data))


def _lz4_decompress(data: bytes) -> bytes:
    return bytes(lz4.frame.decompress(data))


_COMPRESSORS: dict[str, tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]] = {
    "none": (_identity, _identity),
    "snappy": (_snappy_compress, _snappy_decompress),
    "lz4": (_lz4_compress, _lz4_decompress),
}


def compressor(name: str) -> Callable[[bytes], bytes]:
    return _COMPRESSORS[name][0]


def decompressor(name: str) -> Callable[[bytes], bytes]:
    """Raises whatever the codec raises on corrupt input; decoders turn that into a DecodeError."""
    return _COMPRESSORS[name][1]
