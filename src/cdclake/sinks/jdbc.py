"""The JDBC URLs that name database sinks (``jdbc:<kind>://HOST[:PORT]/DATABASE?key=value&...``): their
parts, and the URL shown with its password hidden."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

from cdclake.errors import OptionError

_PASSWORD = re.compile(r"(?i)(password=)[^&]*")


@dataclass(frozen=True)
class JdbcUrl:
    """``shown``: the URL with its password hidden, for messages; ``parameters`` its query, in order."""

    host: str
    port: int | None
    database: str
    parameters: list[tuple[str, str]]
    shown: str


def split_url(url: str, prefixes: Sequence[str], kind: str, form: str) -> JdbcUrl:
    """The parts of ``url``, which starts with one of ``prefixes`` (``jdbc:postgresql:``); ``kind`` names
    the database (``PostgreSQL``) and ``form`` is the URL's shape (``jdbc:postgresql://HOST:PORT/DATABASE?user=...``)
    for the messages."""
    shown = _PASSWORD.sub(r"\1***", url)
    if not any(url.startswith(prefix + "//") for prefix in prefixes):
        raise OptionError(f"sink {shown!r}: a {kind} sink is {form}")
    parts = urlsplit(url[len("jdbc:"):])
    database = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not database:
        raise OptionError(f"sink {shown!r}: the URL names no host or no database ({form})")
    try:
        port = parts.port
    except ValueError:
        raise OptionError(f"sink {shown!r}: the port is not a number") from None
    return JdbcUrl(parts.hostname, port, database, parse_qsl(parts.query, keep_blank_values=True), shown)
