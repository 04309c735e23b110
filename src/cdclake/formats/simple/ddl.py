"""The DDL ``type`` of a Simple protocol message and the :class:`DdlKind` it stands for.

TiCDC's ``getDDLType`` maps TiDB actions: CREATE TABLE → ``CREATE``; RENAME TABLE(S) → ``RENAME``;
ADD INDEX / FOREIGN KEY / PRIMARY KEY → ``CINDEX``; their drops → ``DINDEX``; DROP TABLE → ``ERASE``;
TRUNCATE TABLE → ``TRUNCATE``; column, default, comment, charset, partition and multi-schema changes →
``ALTER``; everything else (CREATE/DROP DATABASE, views, ...) → ``QUERY``, whose SQL says the rest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cdclake.model import DdlKind

DDL_TYPES = ("CREATE", "ALTER", "ERASE", "RENAME", "TRUNCATE", "CINDEX", "DINDEX", "QUERY")

_KIND_OF_TYPE = {
    "CREATE": DdlKind.CREATE_TABLE,
    "ALTER": DdlKind.ALTER_TABLE,
    "ERASE": DdlKind.DROP_TABLE,
    "RENAME": DdlKind.RENAME_TABLE,
    "TRUNCATE": DdlKind.TRUNCATE_TABLE,
    "CINDEX": DdlKind.CREATE_INDEX,
    "DINDEX": DdlKind.DROP_INDEX,
}
_TYPE_OF_KIND = {kind: ddl_type for ddl_type, kind in _KIND_OF_TYPE.items()}

# CREATE/DROP DATABASE (or SCHEMA), after any leading /* comments */.
_DATABASE_DDL = re.compile(r"\s*(?:/\*.*?\*/\s*)*(CREATE|DROP)\s+(?:DATABASE|SCHEMA)\b", re.IGNORECASE | re.DOTALL)


def ddl_kind(ddl_type: str, sql: str) -> DdlKind:
    kind = _KIND_OF_TYPE.get(ddl_type)
    if kind is not None:
        return kind
    match = _DATABASE_DDL.match(sql)
    if match is None:
        return DdlKind.OTHER
    return DdlKind.CREATE_DATABASE if match[1].upper() == "CREATE" else DdlKind.DROP_DATABASE


def ddl_type(kind: DdlKind, sql: str, meta: Mapping[str, Any]) -> str:
    """The ``type`` to write: the one the event was decoded with if it still means ``kind`` (ALTER and
    CINDEX both cover ALTER TABLE statements), else the one ``kind`` maps to."""
    decoded = meta.get("type")
    if decoded in DDL_TYPES and ddl_kind(decoded, sql) is kind:
        return str(decoded)
    return _TYPE_OF_KIND.get(kind, "QUERY")
