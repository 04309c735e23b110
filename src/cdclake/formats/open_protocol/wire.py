"""What the Open Protocol's wire says: event kinds, column flags, type codes, DDL action types, the
batch framing (``split_batch``), and the exceptions the decoder and encoder turn into their errors.
"""

from __future__ import annotations

import struct

from cdclake.model import DdlKind
from cdclake.types import Family

FORMAT = "open"
BATCH_VERSION = 1

# Event kinds, the key's "t".
ROW, DDL, RESOLVED = 1, 2, 3

# Column flags, the column's "f" (spec: 列标志位).
BINARY_FLAG = 0x01
HANDLE_KEY_FLAG = 0x02
GENERATED_FLAG = 0x04
PRIMARY_KEY_FLAG = 0x08
UNIQUE_KEY_FLAG = 0x10
MULTIPLE_KEY_FLAG = 0x20
NULLABLE_FLAG = 0x40
UNSIGNED_FLAG = 0x80
_KEY_FLAGS = HANDLE_KEY_FLAG | PRIMARY_KEY_FLAG

# The size Kafka's record framing adds to a message, as TiCDC counts it (sarama's MaxRecordOverhead).
_RECORD_OVERHEAD = 36

_U64 = struct.Struct(">Q")
_FLOAT32 = struct.Struct("<f")
_U64_MAX = 2**64 - 1
_YEAR_MAX = 2155

# --- column types -------------------------------------------------------------------------------------

# Type code -> MySQL type name, and the name when BinaryFlag is set (spec: Column 的类型码).
# 6 (NULL) carries no type; its value is always null.
_NULL_TYPE_CODE = 6
_TYPE_NAMES: dict[int, tuple[str, str]] = {
    1: ("tinyint", "tinyint"),
    2: ("smallint", "smallint"),
    3: ("int", "int"),
    4: ("float", "float"),
    5: ("double", "double"),
    7: ("timestamp", "timestamp"),
    8: ("bigint", "bigint"),
    9: ("mediumint", "mediumint"),
    10: ("date", "date"),
    11: ("time", "time"),
    12: ("datetime", "datetime"),
    13: ("year", "year"),
    14: ("date", "date"),  # NEWDATE
    15: ("varchar", "varbinary"),
    16: ("bit", "bit"),
    225: ("vector", "vector"),  # TiDBVectorFloat32
    245: ("json", "json"),
    246: ("decimal", "decimal"),
    247: ("enum", "enum"),
    248: ("set", "set"),
    249: ("tinytext", "tinyblob"),
    250: ("mediumtext", "mediumblob"),
    251: ("longtext", "longblob"),
    252: ("text", "blob"),
    253: ("varchar", "varbinary"),  # VAR_STRING
    254: ("char", "binary"),
    255: ("geometry", "geometry"),
}
_BASE64_CODES = frozenset((249, 250, 251, 252))
_QUOTED_CODES = frozenset((15, 253, 254))
# Families whose UnsignedFlag is part of the type (YEAR and BIT always have it, and are never signed).
_SIGNED_FAMILIES = frozenset((Family.INTEGER, Family.DECIMAL, Family.FLOAT, Family.DOUBLE))

# MySQL type name -> the code TiCDC writes for it, and codes that mean the same type.
_CODE_OF: dict[str, int] = {}
for _code, _names in _TYPE_NAMES.items():
    for _name in _names:
        _CODE_OF.setdefault(_name, _code)
_CODE_ALIASES = {10: frozenset((10, 14)), 15: frozenset((15, 253))}

# --- DDL action types ---------------------------------------------------------------------------------

# TiDB ActionType -> DdlKind. Codes 1-36 are the spec's table (DDL 的类型码); the rest are TiDB's later
# codes (pingcap/tidb meta/model ActionType) grouped as TiCDC's Simple protocol groups them.
_DDL_KINDS: dict[int, DdlKind] = {
    1: DdlKind.CREATE_DATABASE,
    2: DdlKind.DROP_DATABASE,
    3: DdlKind.CREATE_TABLE,
    60: DdlKind.CREATE_TABLE,  # create tables
    4: DdlKind.DROP_TABLE,
    11: DdlKind.TRUNCATE_TABLE,
    14: DdlKind.RENAME_TABLE,
    47: DdlKind.RENAME_TABLE,  # rename tables
    **dict.fromkeys((7, 9, 32), DdlKind.CREATE_INDEX),  # add index, foreign key, primary key
    **dict.fromkeys((8, 10, 33), DdlKind.DROP_INDEX),
    # add/drop/modify column, rebase auto id, set default, table comment, rename index, add/drop/truncate
    # partition, table charset, add/drop columns, index visibility, multi-schema change, reorganize,
    # partition by, remove partitioning
    **dict.fromkeys((5, 6, 12, 13, 15, 17, 18, 19, 20, 22, 23, 37, 38, 41, 61, 64, 71, 72), DdlKind.ALTER_TABLE),
}
# The action type the encoder writes for a DDL whose meta does not say: 61 is TiDB's generic
# "alter table multi-schema change", 0 is ActionNone.
_DDL_CODES: dict[DdlKind, int] = {
    DdlKind.CREATE_DATABASE: 1,
    DdlKind.DROP_DATABASE: 2,
    DdlKind.CREATE_TABLE: 3,
    DdlKind.DROP_TABLE: 4,
    DdlKind.TRUNCATE_TABLE: 11,
    DdlKind.RENAME_TABLE: 14,
    DdlKind.CREATE_INDEX: 7,
    DdlKind.DROP_INDEX: 8,
    DdlKind.ALTER_TABLE: 61,
    DdlKind.OTHER: 0,
}


class _Invalid(Exception):
    """Why one part of a message cannot be decoded; the decoder adds the format and the origin."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Unencodable(Exception):
    """Why a value cannot be written; the encoder adds the column."""


# --- framing ------------------------------------------------------------------------------------------


def split_batch(key: bytes | None, value: bytes | None) -> list[tuple[bytes, bytes]]:
    """The (key JSON, value) pairs of one message, checking the version and every length.

    Raises ValueError naming the frame (event index) and offset where the framing breaks.
    """
    try:
        return _split_batch(key or b"", value or b"")
    except _Invalid as exc:
        raise ValueError(exc.reason) from None


def _split_batch(key: bytes, value: bytes) -> list[tuple[bytes, bytes]]:
    if len(key) < 8:
        raise _Invalid(f"the key must start with the 8-byte protocol version, got {len(key)} bytes")
    (version,) = _U64.unpack_from(key)
    if version != BATCH_VERSION:
        raise _Invalid(f"protocol version must be {BATCH_VERSION}, got {version}")
    keys = _frames(key, 8, "key")
    values = _frames(value, 0, "value")
    if len(keys) != len(values):
        raise _Invalid(f"the key holds {len(keys)} events but the value {len(values)}")
    return list(zip(keys, values, strict=True))


def _frames(data: bytes, offset: int, part: str) -> list[bytes]:
    frames: list[bytes] = []
    append, unpack = frames.append, _U64.unpack_from
    end = len(data)
    while offset < end:
        if end - offset < 8:
            raise _Invalid(
                f"{part} frame {len(frames)}: length prefix at byte {offset} cut short ({end - offset} of 8 bytes)"
            )
        (length,) = unpack(data, offset)
        start = offset + 8
        offset = start + length
        if offset > end:
            raise _Invalid(
                f"{part} frame {len(frames)}: length {length} at byte {start - 8} runs past the end "
                f"({end - start} bytes left)"
            )
        append(data[start:offset])
    return frames


def _frame(data: bytes) -> bytes:
    return _U64.pack(len(data)) + data
