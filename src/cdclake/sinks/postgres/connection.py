"""A PostgreSQL sink's address: the JDBC URL users know (``jdbc:postgresql://HOST:PORT/DB?user=U&password=P``)
read into libpq's connection string, and shown with its password hidden."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdclake.errors import CdclakeError
from cdclake.sinks.jdbc import split_url

if TYPE_CHECKING:
    import psycopg

PREFIX = "jdbc:postgresql:"
# hash_record_extended, which matches the rows of a table without a key (statements.row_match), is new in 14.
OLDEST_SERVER = 140000


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

    parts = split_url(url, (PREFIX,), "PostgreSQL", "jdbc:postgresql://HOST:PORT/DATABASE?user=...")
    conninfo = make_conninfo(host=parts.host, port=parts.port or 5432, dbname=parts.database, **dict(parts.parameters))
    return PostgresAddress(conninfo, parts.shown)


def connect(address: PostgresAddress, autocommit: bool = True) -> psycopg.Connection[Any]:
    import psycopg

    try:
        return psycopg.connect(address.conninfo, autocommit=autocommit)
    except psycopg.OperationalError as error:
        raise SinkError(f"sink {address.shown}: cannot connect: {str(error).strip()}") from None


def check_server(version: int, address: PostgresAddress) -> None:
    """Refuse a server older than the statements need (``version`` as libpq reports it: 150004 for 15.4)."""
    if version < OLDEST_SERVER:
        raise SinkError(f"sink {address.shown}: PostgreSQL {version // 10000} is too old for the sink, which needs "
                        f"{OLDEST_SERVER // 10000} or newer (it matches the rows of a table without a key with "
                        "hash_record_extended)")
