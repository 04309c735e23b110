"""What a DataWorks message is made of: its six column types and the MySQL type each decodes to, its
ops and what each means (``ddl_kind`` for a DDL), the fields the spec names at each level, and how a
value is shown in an error message.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from cdclake.formats.ddl import kind_of_sql
from cdclake.model import DdlKind, Op, TransactionMark
from cdclake.types import MySQLType

FORMAT = "dataworks"

BOOLEAN, DOUBLE, DATE, BYTES, LONG, STRING = "BOOLEAN", "DOUBLE", "DATE", "BYTES", "LONG", "STRING"

MYSQL_TYPE_OF: Mapping[str, MySQLType] = MappingProxyType(
    {
        BOOLEAN: MySQLType("tinyint", length=1),  # MySQL's own boolean; values False and True
        DOUBLE: MySQLType("double"),
        DATE: MySQLType("timestamp", decimals=3),  # an instant to the millisecond, decoded in UTC
        BYTES: MySQLType("longblob"),
        LONG: MySQLType("bigint"),
        STRING: MySQLType("longtext"),
    }
)
"""The MySQL type each DataWorks column type decodes to."""

BEFORE_OPS = ("UPDATE_BEFOR", "UPDATE_BEFORE")  # DataWorks' spelling, and the one Apache Paimon reads
_ROW_OPS = {"INSERT": Op.INSERT, "DELETE": Op.DELETE, "UPDATE_AFTER": Op.UPDATE} | dict.fromkeys(
    BEFORE_OPS, Op.UPDATE
)
_TRANSACTION_MARKS = {"TRANSACTION_BEGIN": TransactionMark.BEGIN, "TRANSACTION_END": TransactionMark.END}
# The DDL ops and what each does; ERASE is in the spec's op list of the message layout, not in its table.
_DDL_KIND_OF_OP = {
    "CREATE": DdlKind.CREATE_TABLE,
    "ALTER": DdlKind.ALTER_TABLE,
    "ERASE": DdlKind.DROP_TABLE,
    "TRUNCATE": DdlKind.TRUNCATE_TABLE,
    "RENAME": DdlKind.RENAME_TABLE,
    "CINDEX": DdlKind.CREATE_INDEX,
    "DINDEX": DdlKind.DROP_INDEX,
    "QUERY": DdlKind.OTHER,
}
_OPS = (*_ROW_OPS, *_TRANSACTION_MARKS, *_DDL_KIND_OF_OP, "MHEARTBEAT")

# The fields the spec names at each level of a message; anything else is kept in meta["unknownFields"].
_KNOWN_FIELDS = {
    "message": frozenset({"schema", "payload", "version"}),
    "schema": frozenset({"dataColumn", "primaryKey", "source"}),
    "payload": frozenset({"before", "after", "sequenceId", "scn", "op", "timestamp", "ddl"}),
    "payload.before": frozenset({"dataColumn"}),
    "payload.after": frozenset({"dataColumn"}),
    "payload.ddl": frozenset({"text", "ddlMeta"}),
}


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 60


def _show(value: Any) -> str:
    """A value in an error message: its repr, shortened (a message may hold megabytes)."""
    return _SHOWN.repr(value)


_DATABASE_LEVEL = ((DdlKind.CREATE_TABLE, DdlKind.CREATE_DATABASE), (DdlKind.DROP_TABLE, DdlKind.DROP_DATABASE))


def ddl_kind(op: str, sql: str) -> DdlKind:
    """A DDL message's kind: its op says it (``ddl.text`` may be a fragment such as ``ADD COLUMN ...``),
    except that QUERY is any statement and only the SQL tells CREATE/DROP DATABASE from TABLE."""
    by_sql = kind_of_sql(sql)
    if op == "QUERY":
        return by_sql
    by_op = _DDL_KIND_OF_OP[op]
    if (by_op, by_sql) in _DATABASE_LEVEL:
        return by_sql
    return by_op
