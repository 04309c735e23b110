"""What a DDL does to the target, read the same way for every format.

TiCDC names its DDL events with Canal's event types in both Canal-JSON and the Simple protocol
(``getDDLType`` / ``convertDdlEventType``): CREATE TABLE → ``CREATE``; RENAME TABLE(S) → ``RENAME``;
ADD INDEX, FOREIGN KEY, PRIMARY KEY → ``CINDEX``; their drops → ``DINDEX``; DROP TABLE → ``ERASE``;
TRUNCATE TABLE → ``TRUNCATE``; column, default, comment, charset, partition and multi-schema changes →
``ALTER``; everything else (CREATE/DROP DATABASE, views ...) → ``QUERY``, whose SQL says the rest.
DataWorks names its own ops and Open Protocol sends TiDB action codes; where a name is not enough,
the statement's leading words decide (:func:`kind_of_sql`).
"""

from __future__ import annotations

import re

from cdclake.model import DdlKind

KIND_OF_TICDC_TYPE = {
    "CREATE": DdlKind.CREATE_TABLE,
    "ALTER": DdlKind.ALTER_TABLE,
    "ERASE": DdlKind.DROP_TABLE,
    "RENAME": DdlKind.RENAME_TABLE,
    "TRUNCATE": DdlKind.TRUNCATE_TABLE,
    "CINDEX": DdlKind.CREATE_INDEX,
    "DINDEX": DdlKind.DROP_INDEX,
}
TICDC_DDL_TYPES = (*KIND_OF_TICDC_TYPE, "QUERY")
_TICDC_TYPE_OF_KIND = {kind: ddl_type for ddl_type, kind in KIND_OF_TICDC_TYPE.items()}

_LEADING_COMMENTS = re.compile(r"(?:\s|/\*.*?\*/|(?:--|#)[^\n]*(?:\n|$))*", re.DOTALL)
_VIEW = re.compile(r"(?:create|alter|drop)\s+(?:or\s+replace\s+)?(?:[a-z_]+\s*=\s*\S+\s+)*(?:sql\s+security\s+\w+\s+)?"
                   r"view\b", re.IGNORECASE)
_KIND_OF_STATEMENT = tuple(
    (re.compile(pattern, re.IGNORECASE), kind)
    for pattern, kind in (
        (r"create\s+(?:database|schema)\b", DdlKind.CREATE_DATABASE),
        (r"drop\s+(?:database|schema)\b", DdlKind.DROP_DATABASE),
        (r"create\s+(?:(?:global|local|or\s+replace)\s+)*(?:temporary\s+)?table\b", DdlKind.CREATE_TABLE),
        (r"drop\s+(?:temporary\s+)?tables?\b", DdlKind.DROP_TABLE),
        (r"rename\s+tables?\b", DdlKind.RENAME_TABLE),
        (r"truncate\b", DdlKind.TRUNCATE_TABLE),
        (r"alter\s+(?:online\s+|ignore\s+)*table\b", DdlKind.ALTER_TABLE),
        (r"create\s+(?:(?:unique|fulltext|spatial|bitmap)\s+)?index\b", DdlKind.CREATE_INDEX),
        (r"drop\s+index\b", DdlKind.DROP_INDEX),
    )
)


def _statement_start(sql: str) -> int:
    match = _LEADING_COMMENTS.match(sql)
    return match.end() if match else 0


def kind_of_sql(sql: str) -> DdlKind:
    """What a statement does, from its leading keywords after any comments: ``/* c */ CREATE UNIQUE
    INDEX ...`` creates an index; a statement on a view, or any other, is ``OTHER``."""
    start = _statement_start(sql)
    for pattern, kind in _KIND_OF_STATEMENT:
        if pattern.match(sql, start):
            return kind
    return DdlKind.OTHER


def kind_of_ticdc_type(ddl_type: str, sql: str) -> DdlKind:
    """A TiCDC DDL event's kind: its type where that names one, else its SQL (``QUERY``). A view is no
    table, whatever type the producer gave it."""
    if _VIEW.match(sql, _statement_start(sql)):
        return DdlKind.OTHER
    kind = KIND_OF_TICDC_TYPE.get(ddl_type)
    return kind if kind is not None else kind_of_sql(sql)


def ticdc_type(kind: DdlKind, sql: str, decoded_type: object = None) -> str:
    """The TiCDC type to write for a DDL: the one it was decoded with while that still means ``kind``
    (ALTER and CINDEX both cover ALTER TABLE statements), else the one ``kind`` maps to."""
    if isinstance(decoded_type, str) and decoded_type in TICDC_DDL_TYPES and \
            kind_of_ticdc_type(decoded_type, sql) is kind:
        return decoded_type
    return _TICDC_TYPE_OF_KIND.get(kind, "QUERY")
