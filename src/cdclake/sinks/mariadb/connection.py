"""A MariaDB or MySQL sink's address: the JDBC URL users know (``jdbc:mariadb://HOST:PORT/DB?user=U&password=P``,
or ``jdbc:mysql://...``) read into PyMySQL's connection arguments, and shown with its password hidden."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from cdclake.errors import OptionError
from cdclake.sinks.jdbc import split_url

PREFIXES = ("jdbc:mariadb:", "jdbc:mysql:")
DEFAULT_PORT = 3306
# URL parameter -> PyMySQL's argument (Connector/J's spelling accepted where it differs).
_PARAMETERS = {"user": "user", "password": "password", "connectTimeout": "connect_timeout",
               "connect_timeout": "connect_timeout"}
# Every session: UTC for TIMESTAMP values (the lake texts are UTC), strict mode (a value a column cannot
# hold stops the batch rather than being cut), and a long wait for locks a merge may queue behind.
SESSION = ("SET time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION,NO_AUTO_VALUE_ON_ZERO'")


@dataclass(frozen=True)
class MariaDBAddress:
    """``arguments`` for :func:`pymysql.connect`; ``shown`` the URL with its password hidden, for messages."""

    arguments: dict[str, Any] = field(hash=False)
    shown: str


def parse(url: str) -> MariaDBAddress:
    """The address in ``url``: ``jdbc:mariadb://HOST[:PORT]/DB`` (or ``jdbc:mysql:``) with ``user``,
    ``password`` and ``connectTimeout`` as query parameters."""
    parts = split_url(url, PREFIXES, "MariaDB or MySQL", "jdbc:mariadb://HOST:PORT/DATABASE?user=... (or jdbc:mysql://...)")
    arguments: dict[str, Any] = {"host": parts.host, "port": parts.port or DEFAULT_PORT, "database": parts.database}
    for name, value in parts.parameters:
        if name not in _PARAMETERS:
            raise OptionError(f"sink {parts.shown!r}: unknown parameter {name!r}; the URL takes "
                              f"{', '.join(sorted(set(_PARAMETERS)))}")
        arguments[_PARAMETERS[name]] = int(value) if name.lower().startswith("connect") else value
    return MariaDBAddress(arguments, parts.shown)


def connect(arguments: dict[str, Any], autocommit: bool = True) -> Any:
    """A PyMySQL connection in the sink's session settings (:data:`SESSION`), LOAD DATA LOCAL allowed;
    over TLS where the server offers it (PyMySQL's default), but not over loopback (:func:`is_loopback`)."""
    import pymysql

    return pymysql.connect(**arguments, charset="utf8mb4", autocommit=autocommit, local_infile=True,
                           init_command=SESSION, ssl_disabled=is_loopback(str(arguments.get("host", ""))))


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine's loopback, where TLS protects nothing (the traffic never leaves
    the machine) and costs much: PyMySQL builds a new TLS context for each connection, loading the
    system's CA certificates, ~0.1 s of CPU, and the sink connects several times a write."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
