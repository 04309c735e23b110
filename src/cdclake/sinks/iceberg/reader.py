"""The job's state and its tables' snapshots read without Spark (pyiceberg), for ``cdclake status``.

A Spark session takes a minute to start; reading a few Iceberg metadata files takes a second. pyiceberg
reads three of the catalogs a job may write through, from the same Spark settings the job has:

- ``hadoop`` (cdclake's default, ``--warehouse DIR``): pyiceberg has no Hadoop catalog, but a Hadoop
  table is a directory ``<warehouse>/<namespace>/<table>`` whose ``metadata/version-hint.text`` names its
  current ``vN.metadata.json``, which :meth:`StaticTable.from_metadata` reads. A warehouse URI
  (``s3a://...``) is read with pyarrow's filesystems and their own credentials (the environment's).
- ``jdbc`` on PostgreSQL or SQLite: Iceberg's JDBC catalog keeps its pointers in the table
  ``iceberg_tables``, which pyiceberg's ``SqlCatalog`` reads too (it is made to share it).
- ``rest``: pyiceberg's ``RestCatalog``, with the catalog's properties as Spark has them (``uri``,
  ``warehouse``, ``credential``, ``token``, ``header.*``: the same names).

Any other catalog (Hive, Glue, Nessie, a JDBC catalog on another database) is :class:`NotReadable`
here, and ``cdclake status`` reads it through Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlsplit

from cdclake.errors import CdclakeError
from cdclake.schema.lake import unquote_parts
from cdclake.spark.progress import JobState, state_from_rows

if TYPE_CHECKING:
    from pyiceberg.table import Table

# The catalog classes a Spark catalog may name instead of a type, by the type they are.
_IMPLEMENTATIONS = {
    "org.apache.iceberg.hadoop.HadoopCatalog": "hadoop",
    "org.apache.iceberg.jdbc.JdbcCatalog": "jdbc",
    "org.apache.iceberg.rest.RESTCatalog": "rest",
}
_SQLALCHEMY_DRIVERS = {"postgresql": "postgresql+psycopg", "sqlite": "sqlite"}


class NotReadable(CdclakeError):
    """A catalog pyiceberg does not read: ``cdclake status`` reads it through Spark instead."""


class StatusReadError(CdclakeError):
    """The catalog answered, but not with what the job wrote there."""


def catalog_properties(catalog: str, settings: Mapping[str, str]) -> dict[str, str]:
    """The properties of the Spark catalog ``catalog`` in ``settings`` (``spark.sql.catalog.<catalog>.*``)."""
    prefix = f"spark.sql.catalog.{catalog}."
    return {name[len(prefix):]: value for name, value in settings.items() if name.startswith(prefix)}


def catalog_kind(properties: Mapping[str, str]) -> str:
    implementation = properties.get("catalog-impl")
    if implementation is not None:
        return _IMPLEMENTATIONS.get(implementation, implementation)
    return properties.get("type", "hadoop").lower()


class IcebergReader:
    """The job whose own tables are in ``namespace`` of the Iceberg catalog ``catalog``, read by pyiceberg
    from the catalog's Spark ``settings`` (a :class:`~cdclake.sinks.base.StatusReader`)."""

    read_with = "pyiceberg"

    def __init__(self, catalog: str, namespace: str, settings: Mapping[str, str]) -> None:
        self.catalog, self.namespace = catalog, namespace
        properties = catalog_properties(catalog, settings)
        kind = catalog_kind(properties)
        makers: dict[str, Callable[[str, dict[str, str]], Callable[[tuple[str, ...]], Table]]] = {
            "hadoop": _hadoop_loader, "jdbc": _jdbc_loader, "rest": _rest_loader}
        if kind not in makers:
            raise NotReadable(f"catalog {catalog!r} is a {kind} catalog, which pyiceberg does not read here "
                              "(it reads hadoop, jdbc on PostgreSQL or SQLite, and rest)")
        with self._answering(f"catalog {catalog!r} ({kind})"):
            self._load = makers[kind](catalog, properties)

    def table(self, *name: str) -> Table:
        from pyiceberg.exceptions import NoSuchTableError

        shown = ".".join(name)
        try:
            with self._answering(f"catalog {self.catalog!r}, table {shown}"):
                return self._load(name)
        except (NoSuchTableError, FileNotFoundError):
            raise StatusReadError(f"catalog {self.catalog!r} has no table {shown}") from None

    @staticmethod
    @contextmanager
    def _answering(what: str) -> Iterator[None]:
        """A catalog or store that does not answer (a server down, a refused login, a file unreadable)
        as an error naming ``what``; a table not there passes through."""
        from pyiceberg.exceptions import NoSuchTableError, RESTError
        from sqlalchemy.exc import SQLAlchemyError

        try:
            yield
        except (NoSuchTableError, FileNotFoundError):
            raise
        except (RESTError, SQLAlchemyError, OSError) as error:
            raise StatusReadError(f"{what}: {type(error).__name__}: {error} (--spark reads it through "
                                  "Spark)") from None

    def read_state(self) -> JobState:
        """The job state without its pending changes, as the job's last commit left it."""
        try:
            table = self.table(self.namespace, "state")
        except StatusReadError:
            raise StatusReadError(f"catalog {self.catalog!r} has no job state ({self.namespace}.state): no job "
                                  f"has replicated with the namespace {self.namespace!r} there yet") from None
        return state_from_rows(table.scan(row_filter="state != 'pending'").to_arrow().to_pylist())

    def table_status(self, target: str) -> dict[str, Any]:
        """``rows`` and ``last_commit`` (ISO time in UTC, or None) of the lake table ``target``
        (`catalog`.`namespace`.`table`)."""
        table = self.table(*unquote_parts(target)[1:])
        snapshots = table.snapshots()
        if not snapshots:
            return {"rows": 0, "last_commit": None}
        # One column is enough to count rows; the delete files are applied to it.
        first_column = table.schema().fields[0].name
        newest = max(snapshot.timestamp_ms for snapshot in snapshots)
        return {"rows": table.scan(selected_fields=(first_column,)).count(),
                "last_commit": datetime.fromtimestamp(newest / 1000, UTC).isoformat()}


def _hadoop_loader(catalog: str, properties: dict[str, str]) -> Callable[[tuple[str, ...]], Table]:
    from pyiceberg.table import StaticTable

    warehouse = properties.get("warehouse")
    if not warehouse:
        raise NotReadable(f"catalog {catalog!r}: a Hadoop catalog without a warehouse setting")
    base = warehouse.rstrip("/")
    return lambda name: StaticTable.from_metadata("/".join((base, *name)))


def _jdbc_loader(catalog: str, properties: dict[str, str]) -> Callable[[tuple[str, ...]], Table]:
    from pyiceberg.catalog.sql import SqlCatalog

    # init_catalog_tables: a reader makes nothing, not even the catalog's own tables.
    sql = SqlCatalog(catalog, uri=sqlalchemy_url(catalog, properties), init_catalog_tables="false")
    return sql.load_table


def sqlalchemy_url(catalog: str, properties: Mapping[str, str]) -> str:
    """The SQLAlchemy URL of the database a JDBC catalog's ``uri`` (``jdbc:postgresql://HOST:PORT/DB``,
    ``jdbc:sqlite:FILE``) names, with the user and password of its ``jdbc.user``/``jdbc.password``
    properties or of the URL's query."""
    uri = properties.get("uri", "")
    subprotocol = uri.removeprefix("jdbc:").split(":", 1)[0]
    if not uri.startswith("jdbc:") or subprotocol not in _SQLALCHEMY_DRIVERS:
        raise NotReadable(f"catalog {catalog!r}: a JDBC catalog at {uri.split('?', 1)[0]!r}; pyiceberg reads "
                          "one on PostgreSQL or SQLite")
    if subprotocol == "sqlite":
        return "sqlite:///" + uri.removeprefix("jdbc:sqlite:").removeprefix("file:")
    parts = urlsplit(uri.removeprefix("jdbc:"))
    query = dict(parse_qsl(parts.query))
    user = properties.get("jdbc.user", query.pop("user", ""))
    password = properties.get("jdbc.password", query.pop("password", ""))
    credentials = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
    rest = "&".join(f"{quote(name)}={quote(value)}" for name, value in query.items())
    return (f"{_SQLALCHEMY_DRIVERS[subprotocol]}://{credentials}{'@' if credentials else ''}{parts.netloc}"
            f"{parts.path}{'?' + rest if rest else ''}")


def _rest_loader(catalog: str, properties: dict[str, str]) -> Callable[[tuple[str, ...]], Table]:
    from pyiceberg.catalog.rest import RestCatalog

    load: Callable[[tuple[str, ...]], Table] = RestCatalog(catalog, **properties).load_table  # typed: @retry hides it
    return load
