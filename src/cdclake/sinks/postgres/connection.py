"""A PostgreSQL sink's address: the JDBC URL users know (``jdbc:postgresql://HOST:PORT/DB?user=U&password=P``)
read into libpq's connection string, and shown with its password hidden."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from cdclake.errors import CdclakeError, OptionError

if TYPE_CHECKING:
    import psycopg

PREFIX = "jdbc:postgresql:"
_HIDDEN = re.compile(r"(?i)(password=)[^&]*")


class SinkError(CdclakeError):
    """A batch PostgreSQL cannot take (nothing of it was applied), or a database that cannot be read."""


@dataclass(frozen=True)
class PostgresAddress:
    """``conninfo`` for psycopg (and libpq); ``shown`` the URL with its password hidden, for messages."""

    conninfo: str
    shown: str


def parse(url: str) -> PostgresAddress:
    """The address in ``url``: ``jdbc:postgresql://HOST[:PORT]/DB`` with libpq's keywords as query
    parameters (``user``, ``password``, ``sslmode``, ``connect_timeout``, ...)."""
    from psycopg.conninfo import make_conninfo

    shown = _HIDDEN.sub(r"\1***", url)
    if not url.startswith(PREFIX + "//"):
        raise OptionError(f"sink {shown!r}: a PostgreSQL sink is jdbc:postgresql://HOST:PORT/DATABASE?user=...")
    parts = urlsplit(url[len("jdbc:"):])
    database = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not database:
        raise OptionError(f"sink {shown!r}: the URL names no host or no database "
                          "(jdbc:postgresql://HOST:PORT/DATABASE?user=...)")
    try:
        port = parts.port
    except ValueError:
        raise OptionError(f"sink {shown!r}: the port is not a number") from None
    keywords = dict(parse_qsl(parts.query, keep_blank_values=True))
    conninfo = make_conninfo(host=parts.hostname, port=port or 5432, dbname=database, **keywords)
    return PostgresAddress(conninfo, shown)


def connect(address: PostgresAddress, autocommit: bool = True) -> psycopg.Connection[Any]:
    import psycopg

    try:
        return psycopg.connect(address.conninfo, autocommit=autocommit)
    except psycopg.OperationalError as error:
        raise SinkError(f"sink {address.shown}: cannot connect: {str(error).strip()}") from None
